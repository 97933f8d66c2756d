package io.tsm.kafka;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanOperationInfo;

/**
 * JMX view of the engine's {@code MetricsSnapshot}: one read-only attribute per counter and gauge
 * ({@code Long}) and, per latency summary {@code <op>}, the attributes {@code <op>.latency.count}
 * (Long), {@code <op>.latency.sumMs}, {@code .p50Ms}, {@code .p99Ms}, {@code .maxMs} (Double,
 * milliseconds). Registered as {@code io.tsm.kafka:type=RemoteStorageManager[,broker=<id>]} by
 * {@link TsmRemoteStorageManager#configure}: the same name across restarts; a second live
 * instance in the same JVM adds {@code ,instance=2} (then 3, ...).
 */
final class TsmMetrics implements DynamicMBean {
    private final TsmRemoteStorageManager rsm;

    TsmMetrics(TsmRemoteStorageManager rsm) {
        this.rsm = rsm;
    }

    /** Current values by attribute name (empty once closed). */
    static Map<String, Object> parse(String text) {
        return parse(text, false);
    }

    /**
     * As {@link #parse(String)}; {@code window}: also {@code <op>.latency.windowMaxMs}, the
     * maximum since the previous {@code metricsWindow} call (for {@link NativeMetricsFeed}).
     */
    static Map<String, Object> parse(String text, boolean window) {
        Map<String, Object> out = new LinkedHashMap<>();
        if (text == null) {
            return out;
        }
        for (String line : text.split("\n")) {
            String[] f = line.trim().split(" ");
            try {
                if (f.length == 3 && (f[0].equals("counter") || f[0].equals("gauge"))) {
                    out.put(f[1], Long.parseLong(f[2]));
                } else if (f.length >= 7 && f[0].equals("latency")) {
                    String p = f[1] + ".latency.";
                    out.put(p + "count", Long.parseLong(f[2]));
                    out.put(p + "sumMs", Double.parseDouble(f[3]));
                    out.put(p + "p50Ms", Double.parseDouble(f[4]));
                    out.put(p + "p99Ms", Double.parseDouble(f[5]));
                    out.put(p + "maxMs", Double.parseDouble(f[6]));
                    if (window && f.length >= 8) {
                        // Only meaningful from metricsWindow (the metrics poller).
                        out.put(p + "windowMaxMs", Double.parseDouble(f[7]));
                    }
                }
            } catch (NumberFormatException e) {
                // skip a malformed line
            }
        }
        return out;
    }

    private Map<String, Object> snapshot() {
        return parse(rsm.metricsText());
    }

    @Override
    public Object getAttribute(String attribute) throws AttributeNotFoundException {
        Object v = snapshot().get(attribute);
        if (v == null) {
            throw new AttributeNotFoundException(attribute);
        }
        return v;
    }

    @Override
    public void setAttribute(Attribute attribute) {
        throw new UnsupportedOperationException("tsm metrics are read-only");
    }

    @Override
    public AttributeList getAttributes(String[] attributes) {
        Map<String, Object> s = snapshot();
        AttributeList list = new AttributeList();
        for (String a : attributes) {
            if (s.containsKey(a)) {
                list.add(new Attribute(a, s.get(a)));
            }
        }
        return list;
    }

    @Override
    public AttributeList setAttributes(AttributeList attributes) {
        return new AttributeList();
    }

    @Override
    public Object invoke(String actionName, Object[] params, String[] signature) {
        throw new UnsupportedOperationException(actionName);
    }

    @Override
    public MBeanInfo getMBeanInfo() {
        List<MBeanAttributeInfo> attrs = new ArrayList<>();
        for (Map.Entry<String, Object> e : snapshot().entrySet()) {
            attrs.add(new MBeanAttributeInfo(e.getKey(), e.getValue().getClass().getName(),
                    "tsm engine metric " + e.getKey(), true, false, false));
        }
        return new MBeanInfo(TsmMetrics.class.getName(), "tsm remote storage manager metrics",
                attrs.toArray(new MBeanAttributeInfo[0]), null, new MBeanOperationInfo[0], null);
    }
}
