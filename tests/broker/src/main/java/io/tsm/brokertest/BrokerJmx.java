package io.tsm.brokertest;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.management.InstanceNotFoundException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Reads the broker's remote-storage meters, and the plugin's MBeans ({@link #attribute}), over
 * JMX (the broker is started by
 * scripts/services/kafka.sh with an unauthenticated JMX port on 127.0.0.1). Source: Kafka's
 * BrokerTopicMetrics, MBeans {@code kafka.server:type=BrokerTopicMetrics,name=<Name>}, attribute
 * {@code Count} (a cumulative count since broker start).
 */
final class BrokerJmx implements AutoCloseable {
  static final String COPY_BYTES = "RemoteCopyBytesPerSec";
  static final String COPY_ERRORS = "RemoteCopyErrorsPerSec";
  static final String FETCH_BYTES = "RemoteFetchBytesPerSec";
  static final String FETCH_ERRORS = "RemoteFetchErrorsPerSec";
  static final String DELETE_ERRORS = "RemoteDeleteErrorsPerSec";
  static final String[] ALL = {COPY_BYTES, COPY_ERRORS, FETCH_BYTES, FETCH_ERRORS, DELETE_ERRORS};

  private final JMXConnector connector;
  private final MBeanServerConnection conn;

  BrokerJmx(String url) throws IOException {
    this.connector = JMXConnectorFactory.connect(new JMXServiceURL(url));
    this.conn = connector.getMBeanServerConnection();
  }

  /** The all-topics {@code Count} of meter {@code name}, or -1 when the MBean does not exist. */
  long count(String name) throws Exception {
    ObjectName on = new ObjectName("kafka.server:type=BrokerTopicMetrics,name=" + name);
    try {
      Object v = conn.getAttribute(on, "Count");
      return ((Number) v).longValue();
    } catch (InstanceNotFoundException e) {
      return -1;
    }
  }

  /**
   * Attribute {@code attribute} of MBean {@code name} as a number, NaN when the MBean or the
   * attribute does not exist (the plugin's Kafka metrics: doubles).
   */
  double attribute(String name, String attribute) throws Exception {
    try {
      Object v = conn.getAttribute(new ObjectName(name), attribute);
      return v instanceof Number ? ((Number) v).doubleValue() : Double.NaN;
    } catch (InstanceNotFoundException | javax.management.AttributeNotFoundException e) {
      return Double.NaN;
    }
  }

  /** The MBeans whose names match {@code pattern} (an ObjectName pattern). */
  java.util.Set<ObjectName> names(String pattern) throws Exception {
    return conn.queryNames(new ObjectName(pattern), null);
  }

  Map<String, Long> snapshot() throws Exception {
    Map<String, Long> m = new LinkedHashMap<>();
    for (String n : ALL) {
      m.put(n, count(n));
    }
    return m;
  }

  @Override
  public void close() throws IOException {
    connector.close();
  }
}
