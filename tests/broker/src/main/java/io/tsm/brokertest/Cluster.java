package io.tsm.brokertest;

import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code cluster ...}: the client side of the 3-broker migration scenario
 * (scripts/test.d/67-cluster.sh): {@link ClusterTraffic live traffic}, {@link ClusterAdmin
 * Admin-API waits and probes}, {@link ClusterVerify the final read} and {@link Meters the
 * brokers' remote-storage meters}.
 */
@Command(
    name = "cluster",
    mixinStandardHelpOptions = true,
    subcommands = {
      ClusterTraffic.class,
      ClusterVerify.class,
      ClusterAdmin.CreateTopic.class,
      ClusterAdmin.AwaitIsr.class,
      ClusterAdmin.AwaitTiered.class,
      ClusterAdmin.Leader.class,
      ClusterAdmin.Offsets.class,
      Cluster.Meters.class,
    },
    description = "The client side of the 3-broker migration scenario.")
final class Cluster implements Callable<Integer> {
  @Override
  public Integer call() {
    new CommandLine(this).usage(System.err);
    return 2;
  }

  /**
   * {@code cluster meters --jmx-url URL}: one line {@code Name=Count ...} of the broker's
   * BrokerTopicMetrics remote-storage meters (counts since that broker started; -1: no such
   * MBean).
   */
  @Command(name = "meters", mixinStandardHelpOptions = true)
  static final class Meters implements Callable<Integer> {
    /** A follower rebuilding its state from remote storage (the replica fetcher's fetchIndex). */
    static final String[] AUX = {
      "BuildRemoteLogAuxStateRequestsPerSec", "BuildRemoteLogAuxStateErrorsPerSec"
    };

    @Option(names = "--jmx-url", required = true)
    String jmxUrl;

    @Override
    public Integer call() throws Exception {
      try (BrokerJmx jmx = new BrokerJmx(jmxUrl)) {
        StringBuilder sb = new StringBuilder();
        Map<String, Long> m = jmx.snapshot();
        for (String n : AUX) {
          m.put(n, jmx.count(n));
        }
        for (Map.Entry<String, Long> e : m.entrySet()) {
          sb.append(sb.length() == 0 ? "" : " ").append(e.getKey()).append('=').append(e.getValue());
        }
        System.out.println(sb);
      }
      return 0;
    }
  }
}
