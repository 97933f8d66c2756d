// Prints the numeric attributes of a broker's MBeans, one "ObjectName<TAB>attribute<TAB>value"
// line each, for bench/broker/run.sh's per-read counters (the broker's remote fetch metrics
// and both plugins' store request counts). Run as a single-file program:
//
//   java bench/broker/JmxDump.java JMX_URL PATTERN...
//
// PATTERN: an ObjectName pattern (e.g. "kafka.server:type=BrokerTopicMetrics,*"). Exit 1 when
// the broker's JMX does not answer (the caller reports it; the read's figures stay valid).
import java.util.Set;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public class JmxDump {
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: JmxDump JMX_URL PATTERN...");
            System.exit(2);
        }
        try (JMXConnector c = JMXConnectorFactory.connect(new JMXServiceURL(args[0]))) {
            MBeanServerConnection s = c.getMBeanServerConnection();
            for (int i = 1; i < args.length; i++) {
                Set<ObjectName> names = s.queryNames(new ObjectName(args[i]), null);
                for (ObjectName n : names) {
                    for (MBeanAttributeInfo a : s.getMBeanInfo(n).getAttributes()) {
                        Object v;
                        try {
                            v = s.getAttribute(n, a.getName());
                        } catch (Exception e) {
                            continue;
                        }
                        if (v instanceof Number) {
                            System.out.println(n + "\t" + a.getName() + "\t" + v);
                        }
                    }
                }
            }
        }
    }
}
