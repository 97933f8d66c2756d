package io.tsm.brokertest;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code cluster traffic}: the live load of the 3-broker scenario (scripts/test.d/67-cluster.sh)
 * until the file {@code <state>/stop} appears. One idempotent {@code acks=all} producer per
 * compression type, each writing keyed {@link RecordGen} records (producer {@code p} uses ids
 * {@code p * 10^12 + n}: the id is the record's sequence number, in the value's first 8 bytes)
 * at a fixed total byte rate, with the wall clock as CreateTime; and one consumer in group
 * {@code --group} reading throughout (auto commit).
 *
 * <p>Writes to {@code --state}: {@code acked-<p>.tsv} (one line per acknowledged record:
 * partition, offset, id, timestamp), {@code failed-<p>.tsv} (ids whose send failed: they may or
 * may not be in the log), {@code progress} (acked / failed / consumed counts, rewritten each
 * second; the step checks it grows across every broker restart) and, at the end,
 * {@code traffic.json}. On stop the producers flush and close, then the group consumer reads
 * up to the end offsets; exit 1 if it missed an acknowledged id.
 */
@Command(
    name = "traffic",
    mixinStandardHelpOptions = true,
    description = "Produce (acks=all, idempotent) and consume in a group until <state>/stop exists.")
final class ClusterTraffic implements Callable<Integer> {
  static final long ID_STRIDE = 1_000_000_000_000L;

  @Option(names = "--bootstrap", required = true)
  String bootstrap;

  @Option(names = "--topic", required = true)
  String topic;

  @Option(names = "--state", required = true, description = "directory for the record logs")
  Path state;

  @Option(names = "--group", defaultValue = "payments-readers")
  String group;

  @Option(names = "--compressions", defaultValue = "zstd,none", split = ",")
  String[] compressions;

  @Option(names = "--rate", defaultValue = "160KiB", description = "value bytes per second, all producers")
  String rate;

  @Option(names = "--keys", defaultValue = "500")
  int keys;

  @Option(names = "--seed", defaultValue = "67")
  long seed;

  @Option(names = "--catch-up-timeout", defaultValue = "180", description = "seconds")
  int catchUpTimeoutSec;

  private final AtomicLong acked = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong consumed = new AtomicLong();
  private final AtomicLong redelivered = new AtomicLong();
  private final Set<Long> seen = new HashSet<>();
  private volatile boolean consumerDone;

  static RecordGen gen(long seed, int keys) {
    return new RecordGen(seed, keys, Long.MAX_VALUE, 200, 2000, 0, 0);
  }

  @Override
  public Integer call() throws Exception {
    Files.createDirectories(state);
    Path stop = state.resolve("stop");
    Files.deleteIfExists(stop);
    RecordGen gen = gen(seed, keys);
    long bytesPerSec = Main.parseSize(rate);

    Thread consumerThread = new Thread(this::consumeLoop, "group-consumer");
    consumerThread.start();

    List<KafkaProducer<byte[], byte[]>> producers = new ArrayList<>();
    List<BufferedWriter> ackedOut = new ArrayList<>();
    List<BufferedWriter> failedOut = new ArrayList<>();
    for (int p = 0; p < compressions.length; p++) {
      producers.add(new KafkaProducer<>(producerProps(compressions[p])));
      ackedOut.add(Files.newBufferedWriter(state.resolve("acked-" + p + ".tsv")));
      failedOut.add(Files.newBufferedWriter(state.resolve("failed-" + p + ".tsv")));
    }
    long[] next = new long[compressions.length];
    long start = System.nanoTime();
    long sentBytes = 0;
    long lastProgress = 0;
    int turn = 0;
    while (!Files.exists(stop)) {
      long elapsedMs = (System.nanoTime() - start) / 1_000_000;
      if (sentBytes > bytesPerSec * elapsedMs / 1000) {
        Thread.sleep(5);
      } else {
        int p = turn++ % compressions.length;
        long id = p * ID_STRIDE + next[p]++;
        byte[] value = gen.value(id);
        sentBytes += value.length;
        BufferedWriter a = ackedOut.get(p);
        BufferedWriter f = failedOut.get(p);
        long ts = System.currentTimeMillis();
        producers
            .get(p)
            .send(
                new ProducerRecord<>(topic, null, ts, gen.key(id), value),
                (md, e) -> {
                  try {
                    if (e == null) {
                      synchronized (a) {
                        a.write(md.partition() + "\t" + md.offset() + "\t" + id + "\t" + ts + "\n");
                      }
                      acked.incrementAndGet();
                    } else {
                      synchronized (f) {
                        f.write(id + "\t" + e + "\n");
                      }
                      failed.incrementAndGet();
                    }
                  } catch (IOException io) {
                    throw new java.io.UncheckedIOException(io);
                  }
                });
      }
      if (elapsedMs - lastProgress >= 1000) {
        lastProgress = elapsedMs;
        writeProgress();
      }
    }
    for (KafkaProducer<byte[], byte[]> p : producers) {
      p.flush();
      p.close(Duration.ofMinutes(2));
    }
    for (BufferedWriter w : ackedOut) {
      synchronized (w) {
        w.close();
      }
    }
    for (BufferedWriter w : failedOut) {
      synchronized (w) {
        w.close();
      }
    }
    writeProgress();
    consumerDone = true;
    consumerThread.join(Duration.ofSeconds(catchUpTimeoutSec + 30).toMillis());

    // Every acknowledged id must have reached the group consumer.
    long missing = 0;
    String firstMissing = null;
    for (int p = 0; p < compressions.length; p++) {
      for (String line : Files.readAllLines(state.resolve("acked-" + p + ".tsv"))) {
        long id = Long.parseLong(line.split("\t")[2]);
        synchronized (seen) {
          if (!seen.contains(id)) {
            missing++;
            if (firstMissing == null) {
              firstMissing = line;
            }
          }
        }
      }
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("producers", List.of(compressions));
    out.put("produced_ids", next);
    out.put("acked", acked.get());
    out.put("failed_sends", failed.get());
    out.put("group", group);
    out.put("group_consumed", consumed.get());
    out.put("group_unique_ids", seen.size());
    out.put("group_redelivered", redelivered.get());
    out.put("group_missing_acked", missing);
    new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(state.resolve("traffic.json").toFile(), out);
    System.out.printf(
        "traffic: acked %d, failed sends %d; group %s consumed %d (unique %d, redelivered %d), missing %d%s%n",
        acked.get(), failed.get(), group, consumed.get(), seen.size(), redelivered.get(), missing,
        firstMissing == null ? "" : " (first: partition/offset/id/ts " + firstMissing + ")");
    return missing == 0 ? 0 : 1;
  }

  private void writeProgress() throws IOException {
    Path tmp = state.resolve("progress.tmp");
    Files.writeString(
        tmp,
        "acked=" + acked.get() + "\nfailed=" + failed.get() + "\nconsumed=" + consumed.get() + "\n",
        StandardCharsets.UTF_8);
    Files.move(tmp, state.resolve("progress"), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  private Properties producerProps(String compression) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.CLIENT_ID_CONFIG, "payments-producer-" + compression);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
    p.put(ProducerConfig.RETRIES_CONFIG, Integer.toString(Integer.MAX_VALUE));
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "600000");
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "600000");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, "65536");
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    return p;
  }

  private void consumeLoop() {
    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    c.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + UUID.randomUUID());
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
    c.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, "1000");
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c);
        Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      consumer.subscribe(List.of(topic));
      Map<TopicPartition, Long> end = null;
      long deadline = Long.MAX_VALUE;
      while (true) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          consumed.incrementAndGet();
          long id = RecordGen.idOf(r.value());
          synchronized (seen) {
            if (!seen.add(id)) {
              redelivered.incrementAndGet();
            }
          }
        }
        if (consumerDone && end == null) {
          Map<TopicPartition, OffsetSpec> q = new HashMap<>();
          int n = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
          for (int i = 0; i < n; i++) {
            q.put(new TopicPartition(topic, i), OffsetSpec.latest());
          }
          end = new HashMap<>();
          for (var e : admin.listOffsets(q).all().get().entrySet()) {
            end.put(e.getKey(), e.getValue().offset());
          }
          deadline = System.currentTimeMillis() + catchUpTimeoutSec * 1000L;
        }
        if (end != null) {
          boolean caughtUp = consumer.assignment().containsAll(end.keySet());
          for (var e : end.entrySet()) {
            caughtUp &= consumer.assignment().contains(e.getKey()) && consumer.position(e.getKey()) >= e.getValue();
          }
          if (caughtUp) {
            consumer.commitSync();
            return;
          }
          if (System.currentTimeMillis() > deadline) {
            System.err.println("group consumer: not caught up with " + end + " within " + catchUpTimeoutSec + " s");
            return;
          }
        }
      }
    } catch (Exception e) {
      System.err.println("group consumer failed: " + e);
      e.printStackTrace();
    }
  }
}
