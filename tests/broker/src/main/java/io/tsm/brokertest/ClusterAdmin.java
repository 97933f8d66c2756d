package io.tsm.brokertest;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The Admin-API steps of the 3-broker scenario (scripts/test.d/67-cluster.sh): create the topic,
 * wait for full ISRs, wait for tiering, print a partition's leader, print offsets. Each prints
 * what it saw and exits 0, or 1 when its bounded wait ran out. Source of the offsets:
 * ListOffsets (KIP-405 / KIP-1005: {@link OffsetSpec#earliestLocal()}, {@link
 * OffsetSpec#latestTiered()}, answered by the partition leader).
 */
final class ClusterAdmin {
  private ClusterAdmin() {}

  static Admin admin(String bootstrap) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("request.timeout.ms", "15000");
    p.put("default.api.timeout.ms", "30000");
    return Admin.create(p);
  }

  static List<TopicPartition> partitions(Admin admin, String topic) throws Exception {
    TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
    List<TopicPartition> out = new ArrayList<>();
    for (TopicPartitionInfo i : d.partitions()) {
      out.add(new TopicPartition(topic, i.partition()));
    }
    return out;
  }

  static Map<TopicPartition, Long> offsets(Admin admin, List<TopicPartition> tps, OffsetSpec spec)
      throws Exception {
    Map<TopicPartition, OffsetSpec> q = new HashMap<>();
    for (TopicPartition tp : tps) {
      q.put(tp, spec);
    }
    Map<TopicPartition, Long> out = new TreeMap<>((a, b) -> Integer.compare(a.partition(), b.partition()));
    for (Map.Entry<TopicPartition, ListOffsetsResultInfo> e : admin.listOffsets(q).all().get().entrySet()) {
      out.put(e.getKey(), e.getValue().offset());
    }
    return out;
  }

  abstract static class Base {
    @Option(names = "--bootstrap", required = true)
    String bootstrap;

    @Option(names = "--topic", defaultValue = "payments-events")
    String topic;

    @Option(names = "--timeout", defaultValue = "240", description = "seconds")
    int timeoutSec;
  }

  /** {@code cluster create-topic}: the payments-events shape (RF 3 unless told). */
  @Command(name = "create-topic", mixinStandardHelpOptions = true)
  static final class CreateTopic extends Base implements Callable<Integer> {
    @Option(names = "--partitions", defaultValue = "3")
    int partitions;

    @Option(names = "--config", description = "K=V topic configs", split = ",")
    Map<String, String> configs = new HashMap<>();

    @Option(names = "--replication-factor", defaultValue = "3")
    short replicationFactor;

    @Override
    public Integer call() throws Exception {
      try (Admin a = admin(bootstrap)) {
        a.createTopics(List.of(new NewTopic(topic, partitions, replicationFactor).configs(configs))).all().get();
        System.out.printf("topic %s created: %d partitions, RF %d, %s%n", topic, partitions, replicationFactor,
            new TreeMap<>(configs));
      }
      return 0;
    }
  }

  /** {@code cluster await-isr}: every partition of every topic has all its replicas in sync. */
  @Command(name = "await-isr", mixinStandardHelpOptions = true)
  static final class AwaitIsr extends Base implements Callable<Integer> {
    @Override
    public Integer call() throws Exception {
      long deadline = System.currentTimeMillis() + timeoutSec * 1000L;
      String last = "";
      try (Admin a = admin(bootstrap)) {
        while (System.currentTimeMillis() < deadline) {
          try {
            List<String> short_ = new ArrayList<>();
            var names = a.listTopics(new org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(true)).names().get();
            for (TopicDescription d : a.describeTopics(names).allTopicNames().get().values()) {
              for (TopicPartitionInfo i : d.partitions()) {
                if (i.isr().size() < i.replicas().size() || i.leader() == null) {
                  short_.add(d.name() + "-" + i.partition() + " isr=" + i.isr().size() + "/" + i.replicas().size());
                }
              }
            }
            if (short_.isEmpty()) {
              System.out.printf("every partition of %d topics has its full ISR%n", names.size());
              return 0;
            }
            last = String.join(", ", short_);
          } catch (Exception e) {
            last = e.toString();
          }
          Thread.sleep(1000);
        }
      }
      System.out.printf("FAIL: ISRs not full within %d s: %s%n", timeoutSec, last);
      return 1;
    }
  }

  /**
   * {@code cluster await-tiered}: every partition has latest-tiered above the offsets saved in
   * {@code --after} (or at least {@code --min-tiered}) and earliest-local above 0 (local copies
   * deleted); saves the latest-tiered offsets to {@code --save}.
   */
  @Command(name = "await-tiered", mixinStandardHelpOptions = true)
  static final class AwaitTiered extends Base implements Callable<Integer> {
    @Option(names = "--after", description = "file of 'partition offset' lines: tiered must pass these")
    Path after;

    @Option(names = "--min-tiered", defaultValue = "0")
    long minTiered;

    @Option(names = "--save", description = "write 'partition latest-tiered' lines here")
    Path save;

    @Override
    public Integer call() throws Exception {
      Map<Integer, Long> floor = new HashMap<>();
      if (after != null) {
        for (String l : Files.readAllLines(after)) {
          String[] f = l.trim().split("\\s+");
          floor.put(Integer.parseInt(f[0]), Long.parseLong(f[1]));
        }
      }
      long deadline = System.currentTimeMillis() + timeoutSec * 1000L;
      String last = "";
      try (Admin a = admin(bootstrap)) {
        List<TopicPartition> tps = partitions(a, topic);
        while (System.currentTimeMillis() < deadline) {
          try {
            Map<TopicPartition, Long> tiered = offsets(a, tps, OffsetSpec.latestTiered());
            Map<TopicPartition, Long> local = offsets(a, tps, OffsetSpec.earliestLocal());
            boolean ok = true;
            StringBuilder sb = new StringBuilder();
            for (TopicPartition tp : tps) {
              long t = tiered.get(tp);
              long want = Math.max(minTiered, floor.getOrDefault(tp.partition(), -1L) + 1);
              ok &= t >= want && local.get(tp) > 0;
              sb.append(String.format(" p%d: tiered<=%d (want >=%d) earliest-local=%d;", tp.partition(), t, want, local.get(tp)));
            }
            last = sb.toString();
            if (ok) {
              System.out.println("tiered and deleted locally:" + last);
              if (save != null) {
                StringBuilder s = new StringBuilder();
                tiered.forEach((tp, o) -> s.append(tp.partition()).append(' ').append(o).append('\n'));
                Files.writeString(save, s.toString());
              }
              return 0;
            }
          } catch (Exception e) {
            last = e.toString();
          }
          Thread.sleep(1000);
        }
      }
      System.out.printf("FAIL: not tiered within %d s:%s%n", timeoutSec, last);
      return 1;
    }
  }

  /** {@code cluster leader P}: prints the node id leading partition P. */
  @Command(name = "leader", mixinStandardHelpOptions = true)
  static final class Leader extends Base implements Callable<Integer> {
    @Parameters(index = "0")
    int partition;

    @Override
    public Integer call() throws Exception {
      try (Admin a = admin(bootstrap)) {
        TopicDescription d = a.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        TopicPartitionInfo i = d.partitions().get(partition);
        System.out.println(i.leader() == null ? -1 : i.leader().id());
      }
      return 0;
    }
  }

  /** {@code cluster offsets}: earliest, earliest-local, latest-tiered and latest per partition. */
  @Command(name = "offsets", mixinStandardHelpOptions = true)
  static final class Offsets extends Base implements Callable<Integer> {
    @Override
    public Integer call() throws Exception {
      try (Admin a = admin(bootstrap)) {
        List<TopicPartition> tps = partitions(a, topic);
        var e = offsets(a, tps, OffsetSpec.earliest());
        var el = offsets(a, tps, OffsetSpec.earliestLocal());
        var lt = offsets(a, tps, OffsetSpec.latestTiered());
        var l = offsets(a, tps, OffsetSpec.latest());
        TopicDescription d = a.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        for (TopicPartition tp : tps) {
          TopicPartitionInfo i = d.partitions().get(tp.partition());
          System.out.printf(
              "%s: earliest %d, earliest-local %d, latest-tiered %d, latest %d; leader %s, isr %s%n",
              tp, e.get(tp), el.get(tp), lt.get(tp), l.get(tp),
              i.leader() == null ? "none" : i.leader().id(), i.isr().stream().map(n -> n.id()).toList());
        }
      }
      return 0;
    }
  }
}
