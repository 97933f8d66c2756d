package io.tsm.brokertest;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code cluster verify}: reads the whole topic from offset 0 with a fresh consumer group and
 * compares it with what {@link ClusterTraffic} logged as acknowledged ({@code acked-*.tsv}):
 * per partition the record count and a content checksum (the sum of CRC32C over key and value,
 * order-independent, computed from the regenerated records on the producer side and from the
 * bytes read on this side), every record at the offset its ack named, its key and value equal
 * to the regenerated record, no id twice (a duplicate is named by id and offsets), no acked id
 * missing. Ids whose send failed ({@code failed-*.tsv}) may be present once or absent, and are
 * counted. Then ListOffsets by timestamp inside the tiered range (offsets below earliest-local):
 * the broker's answer must be the first offset whose timestamp is at least the one asked, as
 * computed from the records read.
 */
@Command(
    name = "verify",
    mixinStandardHelpOptions = true,
    description = "Read everything from offset 0 with a fresh group and compare with the producers' acks.")
final class ClusterVerify implements Callable<Integer> {
  @Option(names = "--bootstrap", required = true)
  String bootstrap;

  @Option(names = "--topic", defaultValue = "payments-events")
  String topic;

  @Option(names = "--state", required = true, description = "the traffic's state directory")
  Path state;

  @Option(names = "--keys", defaultValue = "500")
  int keys;

  @Option(names = "--seed", defaultValue = "67")
  long seed;

  @Option(names = "--timeout", defaultValue = "300", description = "seconds for the read")
  int timeoutSec;

  /** What one partition holds, by offset: id and timestamp. */
  private static final class Part {
    final Map<Long, Long> idAt = new HashMap<>();
    final Map<Long, Long> tsAt = new HashMap<>();
    final Map<Long, Long> offsetOf = new HashMap<>();
    long count;
    long crcSum;
  }

  @Override
  public Integer call() throws Exception {
    Checks checks = new Checks(new Console(System.out, false));
    RecordGen gen = ClusterTraffic.gen(seed, keys);

    // The producers' side: acked records, expected checksum per partition.
    Map<Integer, Part> want = new HashMap<>();
    java.util.Set<Long> failedIds = new java.util.HashSet<>();
    try (var files = Files.list(state)) {
      for (Path f : files.sorted().toList()) {
        String n = f.getFileName().toString();
        if (n.startsWith("acked-")) {
          for (String l : Files.readAllLines(f)) {
            String[] x = l.split("\t");
            Part p = want.computeIfAbsent(Integer.parseInt(x[0]), k -> new Part());
            long off = Long.parseLong(x[1]);
            long id = Long.parseLong(x[2]);
            p.idAt.put(off, id);
            p.tsAt.put(off, Long.parseLong(x[3]));
            p.count++;
            p.crcSum += RecordGen.crc(gen.key(id), gen.value(id));
          }
        } else if (n.startsWith("failed-")) {
          for (String l : Files.readAllLines(f)) {
            failedIds.add(Long.parseLong(l.split("\t")[0]));
          }
        }
      }
    }

    Map<Integer, Part> got = new HashMap<>();
    List<String> dups = new ArrayList<>();
    List<String> bad = new ArrayList<>();
    long earliest;
    Map<TopicPartition, Long> end;
    Map<TopicPartition, Long> earliestLocal;
    try (Admin admin = ClusterAdmin.admin(bootstrap)) {
      List<TopicPartition> tps = ClusterAdmin.partitions(admin, topic);
      end = ClusterAdmin.offsets(admin, tps, OffsetSpec.latest());
      earliestLocal = ClusterAdmin.offsets(admin, tps, OffsetSpec.earliestLocal());
      earliest = ClusterAdmin.offsets(admin, tps, OffsetSpec.earliest()).values().stream().mapToLong(Long::longValue).max().orElse(-1);
      checks.check("log start offset is 0 on every partition (nothing expired)", earliest == 0, "max earliest " + earliest);

      String group = "payments-verify-" + UUID.randomUUID();
      Properties c = new Properties();
      c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
      c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
      c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
      c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
      c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
      c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
      long deadline = System.currentTimeMillis() + timeoutSec * 1000L;
      try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
        consumer.subscribe(List.of(topic));
        boolean done = false;
        while (!done && System.currentTimeMillis() < deadline) {
          for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
            Part p = got.computeIfAbsent(r.partition(), k -> new Part());
            long id = RecordGen.idOf(r.value());
            p.count++;
            p.crcSum += RecordGen.crc(r.key(), r.value());
            p.idAt.put(r.offset(), id);
            p.tsAt.put(r.offset(), r.timestamp());
            Long prev = p.offsetOf.put(id, r.offset());
            if (prev != null) {
              dups.add("id " + id + " at p" + r.partition() + " offsets " + prev + " and " + r.offset());
            }
            if (!Arrays.equals(r.key(), gen.key(id)) || !Arrays.equals(r.value(), gen.value(id))) {
              bad.add("p" + r.partition() + "@" + r.offset() + " id " + id);
            }
          }
          done = consumer.assignment().containsAll(end.keySet());
          for (var e : end.entrySet()) {
            done &= consumer.assignment().contains(e.getKey()) && consumer.position(e.getKey()) >= e.getValue();
          }
        }
        checks.check("fresh group " + group + " read every partition to its end offset", done, "end offsets " + end);
      }

      long totalWant = 0;
      long totalGot = 0;
      long failedPresent = 0;
      for (TopicPartition tp : tps) {
        Part w = want.getOrDefault(tp.partition(), new Part());
        Part g = got.getOrDefault(tp.partition(), new Part());
        totalWant += w.count;
        totalGot += g.count;
        List<String> missing = new ArrayList<>();
        List<String> moved = new ArrayList<>();
        for (var e : w.idAt.entrySet()) {
          Long at = g.offsetOf.get(e.getValue());
          if (at == null) {
            missing.add("id " + e.getValue() + " (acked at offset " + e.getKey() + ")");
          } else if (!at.equals(e.getKey())) {
            moved.add("id " + e.getValue() + " acked at " + e.getKey() + ", read at " + at);
          }
        }
        List<String> unexpected = new ArrayList<>();
        for (var e : g.idAt.entrySet()) {
          if (!w.idAt.containsKey(e.getKey()) || !w.idAt.get(e.getKey()).equals(e.getValue())) {
            if (failedIds.contains(e.getValue())) {
              failedPresent++;
            } else {
              unexpected.add("id " + e.getValue() + " at offset " + e.getKey());
            }
          }
        }
        String p = "p" + tp.partition();
        checks.check(p + ": no acked record missing", missing.isEmpty(), missing.size() + " missing " + head(missing));
        checks.check(p + ": every record at the offset its ack named", moved.isEmpty(), head(moved));
        checks.check(p + ": no record that was not acked (failed sends excepted)", unexpected.isEmpty(), unexpected.size() + " " + head(unexpected));
        checks.check(
            p + ": count and content checksum equal to the produced ones",
            w.count == g.count && w.crcSum == g.crcSum,
            String.format("produced %d records, crc32c-sum %016x; read %d, %016x", w.count, w.crcSum, g.count, g.crcSum));
      }
      checks.check("no id read twice", dups.isEmpty(), dups.size() + " " + head(dups));
      checks.check("every record's key and value equal the regenerated record", bad.isEmpty(), bad.size() + " " + head(bad));
      System.out.printf(
          "counted: %d acked records, %d read from offset 0 (%d partitions), %d duplicates, %d failed sends (%d of them present)%n",
          totalWant, totalGot, tps.size(), dups.size(), failedIds.size(), failedPresent);

      // ListOffsets by timestamp inside the tiered range.
      for (TopicPartition tp : tps) {
        Part g = got.getOrDefault(tp.partition(), new Part());
        long el = earliestLocal.get(tp);
        for (long probe : new long[] {el / 4, el / 2, Math.max(0, el - 2)}) {
          Long ts = g.tsAt.get(probe);
          if (ts == null) {
            checks.fail(tp + " timestamp probe", "no record at offset " + probe + " (earliest-local " + el + ")");
            continue;
          }
          long expect = -1;
          for (long o = 0; o < end.get(tp); o++) {
            Long t = g.tsAt.get(o);
            if (t != null && t >= ts) {
              expect = o;
              break;
            }
          }
          long answer = admin.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(ts))).partitionResult(tp).get().offset();
          checks.check(
              tp + " ListOffsets(timestamp of offset " + probe + ") in the tiered range",
              answer == expect && expect < el,
              "timestamp " + ts + " -> " + answer + ", expected " + expect + ", earliest-local " + el);
        }
      }
    }
    checks.summary();
    return checks.allPassed() ? 0 : 1;
  }

  private static String head(List<String> l) {
    return l.isEmpty() ? "" : l.subList(0, Math.min(5, l.size())).toString();
  }
}
