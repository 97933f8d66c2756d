package io.tsm.brokertest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The KIP-405 end-to-end scenario against a real broker (issue 4, test 2; the demo):
 *
 * <ol>
 *   <li>create a topic with {@code remote.storage.enable=true}, small segments and a short
 *       {@code local.retention.ms};
 *   <li>produce keyed records ({@link RecordGen}) with several producers at once, each with its
 *       own {@code compression.type}, so segments mix compressed and uncompressed batches; then
 *       padding records that roll the segment holding the end of the main data;
 *   <li>wait (bounded) until {@code latestTiered} covers the main data and {@code earliestLocal}
 *       has moved past it: from then on the main data exists only in the bucket;
 *   <li>consume from offset 0 and check every record (count, content, checksum), then again
 *       with {@code fetch.max.bytes=1}; ListOffsets by timestamp inside the tiered range;
 *   <li>check the remote objects (layout, manifests, no plaintext when encrypted) and the
 *       broker's RemoteCopyErrorsPerSec / RemoteFetchErrorsPerSec meters;
 *   <li>delete the topic and wait until its remote objects are gone.
 * </ol>
 *
 * Every wait is bounded and fails with the state it was waiting on. Memory: the driver keeps
 * one offset and one timestamp per record (16 bytes/record) and a bit per record id.
 */
final class TieringScenario {
  private static final int BLOCK = 64;
  private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(60);

  private final Main.Tiering o;
  private final Console console;
  private final Checks checks;
  private final RemoteStore store;
  private final Map<String, String> summary = new LinkedHashMap<>();
  private final ObjectMapper json = new ObjectMapper();

  private Admin admin;
  private BrokerJmx jmx;
  private String topic;
  private Uuid topicId;
  private RecordGen gen;
  private long totalIds;
  private List<TopicPartition> tps;
  private AtomicLongArray lastMainOffset;
  private long[] endOffset;
  private long[] earliestLocal;
  private final AtomicLong producedCrc = new AtomicLong();
  private final AtomicLong producedBytes = new AtomicLong();
  private LongList[] logOffsets;
  private LongList[] logTimestamps;
  private double readSeconds;
  private long readBytes;

  /** A check failed in a way that makes the following steps meaningless. */
  private static final class AbortRun extends Exception {
    private static final long serialVersionUID = 1L;

    AbortRun(String msg) {
      super(msg);
    }
  }

  TieringScenario(Main.Tiering options) {
    this.o = options;
    this.console = new Console(System.out, options.fancy);
    this.checks = new Checks(console);
    this.store = RemoteStore.parse(options.remoteStore);
  }

  boolean run() {
    topic = o.topic != null ? o.topic : "tsm-e2e-" + UUID.randomUUID().toString().substring(0, 8);
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap);
    ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000);
    boolean topicCreated = false;
    try (Admin a = Admin.create(ap)) {
      admin = a;
      if (o.jmxUrl != null) {
        jmx = new BrokerJmx(o.jmxUrl);
      }
      createTopic();
      topicCreated = true;
      try (RemoteWatcher watcher = new RemoteWatcher()) {
        watcher.start();
        produce();
        waitForTiering();
      }
      consumeAll();
      consumeTinyFetch();
      listOffsetsByTimestamp();
      checkRemoteObjects();
      checkBrokerMeters("after reads");
      if ("tsm".equals(o.objectFormat)) {
        checkPluginMetrics();
      }
      printSummary();
      if (!o.keepTopic) {
        deleteTopicAndCheckRemote();
        topicCreated = false;
        checkDeleteMeter();
      }
    } catch (AbortRun e) {
      checks.fail("scenario", e.getMessage());
    } catch (Exception e) {
      checks.fail("scenario", "unexpected " + e);
      e.printStackTrace(System.out);
    } finally {
      if (jmx != null) {
        try {
          jmx.close();
        } catch (IOException e) {
          // closing a JMX connection to a broker that may be gone: nothing to do
        }
      }
    }
    if (topicCreated && !o.keepTopic) {
      console.line("(topic %s left in place after the failure, for inspection)", topic);
    }
    writeSummaryFile();
    checks.summary();
    return checks.allPassed();
  }

  // ------------------------------------------------------------------ topic

  private void createTopic() throws Exception {
    console.heading("topic " + topic);
    Map<String, String> cfg = new LinkedHashMap<>();
    cfg.put("remote.storage.enable", "true");
    cfg.put("segment.bytes", Integer.toString(o.segmentBytes));
    cfg.put("local.retention.ms", Long.toString(o.localRetentionMs));
    cfg.put("retention.ms", "-1");
    cfg.put("message.timestamp.type", "CreateTime");
    NewTopic nt = new NewTopic(topic, o.partitions, (short) 1).configs(cfg);
    CreateTopicsResult r = admin.createTopics(List.of(nt));
    r.all().get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    topicId = r.topicId(topic).get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    console.line("created %s (id %s): %d partitions, %s", topic, topicId, o.partitions, cfg);
    summary.put("topic", topic);
    summary.put("topic_id", topicId.toString());
    tps = new ArrayList<>();
    for (int p = 0; p < o.partitions; p++) {
      tps.add(new TopicPartition(topic, p));
    }
  }

  /** The key fragment of this topic's objects: {@code <topic>-<topicId>/} in the v1 layout. */
  private String objectFragment() {
    return "tsm".equals(o.objectFormat) ? topic + "-" + topicId + "/" : topic;
  }

  private boolean isSegmentObject(String key) {
    return key.endsWith(".log") || ("opaque".equals(o.objectFormat) && key.contains("segment"));
  }

  // ------------------------------------------------------------------ produce

  private Properties producerProps(String compression) {
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap);
    pp.put(ProducerConfig.ACKS_CONFIG, "all");
    pp.put(ProducerConfig.LINGER_MS_CONFIG, 10);
    pp.put(ProducerConfig.BATCH_SIZE_CONFIG, 128 * 1024);
    pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
    return pp;
  }

  private void produce() throws Exception {
    long target = Main.parseSize(o.size);
    long mainCount = RecordGen.countForBytes(o.seed, o.minRecord, o.maxRecord, target);
    int padPerPartition = (int) Math.ceil(o.segmentBytes * 1.25 / RecordGen.PAD_SIZE);
    totalIds = mainCount + (long) padPerPartition * o.partitions;
    long base = System.currentTimeMillis() - totalIds - 1000;
    gen = new RecordGen(o.seed, o.keys, mainCount, o.minRecord, o.maxRecord, base, 1);
    lastMainOffset = new AtomicLongArray(o.partitions);
    for (int p = 0; p < o.partitions; p++) {
      lastMainOffset.set(p, -1);
    }
    console.heading(
        String.format(
            Locale.ROOT,
            "produce %s in %d keyed records, producers with compression.type %s",
            Console.bytes(target),
            mainCount,
            String.join("/", o.producers)));

    AtomicReference<Exception> failure = new AtomicReference<>();
    AtomicLong acked = new AtomicLong();
    long t0 = System.nanoTime();
    List<Thread> threads = new ArrayList<>();
    List<KafkaProducer<byte[], byte[]>> producers = new ArrayList<>();
    try {
      for (int k = 0; k < o.producers.length; k++) {
        KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(producerProps(o.producers[k]));
        producers.add(prod);
        final int slot = k;
        Thread t =
            new Thread(
                () -> {
                  for (long b = slot; b * BLOCK < mainCount && failure.get() == null; b += o.producers.length) {
                    for (long id = b * BLOCK; id < Math.min(mainCount, (b + 1) * BLOCK); id++) {
                      send(prod, id, null, failure, acked);
                    }
                  }
                  prod.flush();
                },
                "producer-" + o.producers[k]);
        threads.add(t);
        t.start();
      }
      while (threads.stream().anyMatch(Thread::isAlive)) {
        double secs = (System.nanoTime() - t0) / 1e9;
        console.progress("produce", acked.get(), target, acked.get() / Math.max(secs, 1e-3));
        Thread.sleep(200);
      }
      for (Thread t : threads) {
        t.join();
      }
      double secs = (System.nanoTime() - t0) / 1e9;
      console.progress("produce", acked.get(), target, acked.get() / Math.max(secs, 1e-3));
      console.endProgress();
      if (failure.get() != null) {
        throw new AbortRun("producing failed: " + failure.get());
      }
      // Padding: incompressible records, plain, to each partition, so that the segment with
      // the last main record rolls and can be tiered.
      try (KafkaProducer<byte[], byte[]> pad = new KafkaProducer<>(producerProps("none"))) {
        long id = mainCount;
        for (int p = 0; p < o.partitions; p++) {
          for (int i = 0; i < padPerPartition; i++, id++) {
            send(pad, id, p, failure, acked);
          }
        }
        pad.flush();
      }
      if (failure.get() != null) {
        throw new AbortRun("producing padding records failed: " + failure.get());
      }
    } finally {
      for (KafkaProducer<byte[], byte[]> prod : producers) {
        prod.close(Duration.ofSeconds(30));
      }
    }
    endOffset = new long[o.partitions];
    Map<TopicPartition, ListOffsetsResultInfo> latest = listOffsets(OffsetSpec.latest());
    for (int p = 0; p < o.partitions; p++) {
      endOffset[p] = latest.get(tps.get(p)).offset();
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    long sum = Arrays.stream(endOffset).sum();
    checks.check(
        "produce",
        sum == totalIds,
        String.format(
            Locale.ROOT,
            "%d records (%d main + %d padding), %s of keys+values in %.1f s; log end offsets %s",
            sum,
            mainCount,
            totalIds - mainCount,
            Console.bytes(producedBytes.get()),
            secs,
            Arrays.toString(endOffset)));
    if (sum != totalIds) {
      throw new AbortRun("the log end offsets add up to " + sum + ", expected " + totalIds);
    }
    summary.put("records", Long.toString(totalIds));
    summary.put("main_records", Long.toString(mainCount));
    summary.put("bytes_produced", Long.toString(producedBytes.get()));
    summary.put("produce_seconds", String.format(Locale.ROOT, "%.1f", secs));
  }

  private void send(
      KafkaProducer<byte[], byte[]> prod,
      long id,
      Integer partition,
      AtomicReference<Exception> failure,
      AtomicLong acked) {
    byte[] k = gen.key(id);
    byte[] v = gen.value(id);
    long crc = RecordGen.crc(k, v);
    int n = k.length + v.length;
    prod.send(
        new ProducerRecord<>(topic, partition, gen.timestamp(id), k, v),
        (md, e) -> {
          if (e != null) {
            failure.compareAndSet(null, new RuntimeException("record id " + id + ": " + e, e));
            return;
          }
          if (!gen.isPadding(id)) {
            lastMainOffset.accumulateAndGet(md.partition(), md.offset(), Math::max);
            acked.addAndGet(v.length);
          }
          producedCrc.addAndGet(crc);
          producedBytes.addAndGet(n);
        });
  }

  // ------------------------------------------------------------------ tiering

  private Map<TopicPartition, ListOffsetsResultInfo> listOffsets(OffsetSpec spec)
      throws Exception {
    Map<TopicPartition, OffsetSpec> req = new HashMap<>();
    for (TopicPartition tp : tps) {
      req.put(tp, spec);
    }
    return admin.listOffsets(req).all().get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
  }

  private void waitForTiering() throws Exception {
    console.heading("wait until the main data is tiered and deleted locally");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(o.tierTimeoutSec);
    long t0 = System.nanoTime();
    long tieredAtNs = -1;
    String lastState = "";
    long[] lt = new long[o.partitions];
    long[] el = new long[o.partitions];
    while (true) {
      Map<TopicPartition, ListOffsetsResultInfo> tiered = listOffsets(OffsetSpec.latestTiered());
      Map<TopicPartition, ListOffsetsResultInfo> local = listOffsets(OffsetSpec.earliestLocal());
      boolean tieredOk = true;
      boolean localOk = true;
      StringBuilder state = new StringBuilder();
      for (int p = 0; p < o.partitions; p++) {
        lt[p] = tiered.get(tps.get(p)).offset();
        el[p] = local.get(tps.get(p)).offset();
        long want = lastMainOffset.get(p);
        tieredOk &= lt[p] >= want;
        localOk &= el[p] > want;
        state.append(
            String.format(
                Locale.ROOT,
                "p%d: latest-tiered %d, earliest-local %d, last main offset %d, log end %d; ",
                p,
                lt[p],
                el[p],
                want,
                endOffset[p]));
      }
      double secs = (System.nanoTime() - t0) / 1e9;
      if (!state.toString().equals(lastState)) {
        console.line("  [%5.1fs] %s", secs, state.toString().replaceAll("; $", ""));
        lastState = state.toString();
      }
      if (tieredOk && tieredAtNs < 0) {
        tieredAtNs = System.nanoTime();
        checks.check(
            "latest-tiered offset covers every produced main record",
            true,
            String.format(Locale.ROOT, "after %.1f s: %s", secs, Arrays.toString(lt)));
      }
      if (tieredOk && localOk) {
        checks.check(
            "earliest-local offset moved past the main data (local segments deleted)",
            true,
            String.format(Locale.ROOT, "after %.1f s: %s", secs, Arrays.toString(el)));
        break;
      }
      if (System.nanoTime() > deadline) {
        String what =
            tieredOk
                ? "the earliest-local offset to move past the last main offset"
                : "the latest-tiered offset to reach the last main offset";
        throw new AbortRun(
            "timed out after "
                + o.tierTimeoutSec
                + " s waiting for "
                + what
                + " ("
                + state
                + "); see the broker log (RemoteLogManager, the plugin's errors)");
      }
      Thread.sleep(1000);
    }
    earliestLocal = el.clone();
    summary.put("tier_seconds", String.format(Locale.ROOT, "%.1f", (tieredAtNs - t0) / 1e9));
  }

  /** Prints remote objects as they appear (the demo's "segments arriving in the bucket"). */
  private final class RemoteWatcher implements AutoCloseable {
    private final Thread thread;
    private volatile boolean stop;

    RemoteWatcher() {
      thread = new Thread(this::loop, "remote-watcher");
      thread.setDaemon(true);
    }

    void start() {
      thread.start();
    }

    private void loop() {
      Set<String> seen = new TreeSet<>();
      long bytes = 0;
      while (!stop) {
        try {
          for (RemoteStore.RemoteObject ob : store.list(objectFragment())) {
            if (isSegmentObject(ob.key()) && seen.add(ob.key())) {
              bytes += ob.size();
              console.line(
                  "  + segment object %-80s %9s  (%d segments, %s in the bucket)",
                  ob.key(),
                  Console.bytes(ob.size()),
                  seen.size(),
                  Console.bytes(bytes));
            }
          }
          Thread.sleep(500);
        } catch (InterruptedException e) {
          return;
        } catch (IOException | RuntimeException e) {
          console.line("  (listing %s failed: %s)", store.describe(), e);
          try {
            Thread.sleep(2000);
          } catch (InterruptedException ie) {
            return;
          }
        }
      }
    }

    @Override
    public void close() {
      stop = true;
      thread.interrupt();
      try {
        thread.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  // ------------------------------------------------------------------ consume

  private Properties consumerProps(String clientId) {
    Properties cp = new Properties();
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap);
    cp.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
    cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
    cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return cp;
  }

  /** Why {@code r} is not the record it claims to be, or null when it is. */
  private String verify(ConsumerRecord<byte[], byte[]> r) {
    long id = RecordGen.idOf(r.value());
    String where = r.topic() + "-" + r.partition() + "@" + r.offset();
    if (id < 0 || id >= totalIds) {
      return where + ": not a record of this run (id " + id + ")";
    }
    byte[] k = gen.key(id);
    byte[] v = gen.value(id);
    if (!Arrays.equals(k, r.key())) {
      return where + ": record id " + id + " has the wrong key";
    }
    if (!Arrays.equals(v, r.value())) {
      int n = r.value().length;
      int at = Arrays.mismatch(v, r.value());
      return String.format(
          Locale.ROOT,
          "%s: record id %d value differs from byte %d (%d bytes read, %d expected)",
          where,
          id,
          at,
          n,
          v.length);
    }
    if (r.timestamp() != gen.timestamp(id)) {
      return where + ": record id " + id + " timestamp " + r.timestamp() + " != " + gen.timestamp(id);
    }
    return null;
  }

  private void consumeAll() throws Exception {
    console.heading("consume everything from offset 0 (main data now only in remote storage)");
    BitSet seen = new BitSet((int) Math.min(Integer.MAX_VALUE, totalIds));
    List<String> errors = new ArrayList<>();
    long errorCount = 0;
    long duplicates = 0;
    long count = 0;
    long crc = 0;
    long bytes = 0;
    Map<String, Integer> keyPartition = new HashMap<>();
    logOffsets = new LongList[o.partitions];
    logTimestamps = new LongList[o.partitions];
    for (int p = 0; p < o.partitions; p++) {
      logOffsets[p] = new LongList();
      logTimestamps[p] = new LongList();
    }
    long totalBytes = producedBytes.get();
    long t0 = System.nanoTime();
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps("tsm-verify-all"))) {
      c.assign(tps);
      for (TopicPartition tp : tps) {
        c.seek(tp, 0);
      }
      long lastProgress = System.nanoTime();
      while (!allConsumed(c)) {
        ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(500));
        if (recs.isEmpty()) {
          if (System.nanoTime() - lastProgress > TimeUnit.SECONDS.toNanos(o.stallTimeoutSec)) {
            throw new AbortRun(
                "reading from offset 0 made no progress for "
                    + o.stallTimeoutSec
                    + " s at positions "
                    + positions(c)
                    + " (log end offsets "
                    + Arrays.toString(endOffset)
                    + "); see the broker log for remote fetch errors");
          }
          continue;
        }
        lastProgress = System.nanoTime();
        for (ConsumerRecord<byte[], byte[]> r : recs) {
          count++;
          bytes += (r.key() == null ? 0 : r.key().length) + (r.value() == null ? 0 : r.value().length);
          crc += RecordGen.crc(r.key(), r.value());
          logOffsets[r.partition()].add(r.offset());
          logTimestamps[r.partition()].add(r.timestamp());
          String err = verify(r);
          long id = RecordGen.idOf(r.value());
          if (err == null) {
            if (seen.get((int) id)) {
              duplicates++;
              err = r.partition() + "@" + r.offset() + ": record id " + id + " read twice";
            } else {
              seen.set((int) id);
            }
            if (!gen.isPadding(id)) {
              String key = new String(r.key(), StandardCharsets.US_ASCII);
              Integer prev = keyPartition.putIfAbsent(key, r.partition());
              if (prev != null && prev != r.partition()) {
                err = "key " + key + " found in partitions " + prev + " and " + r.partition();
              }
            }
          }
          if (err != null) {
            errorCount++;
            if (errors.size() < 10) {
              errors.add(err);
            }
          }
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        console.progress("consume", bytes, totalBytes, bytes / Math.max(secs, 1e-3));
      }
    }
    console.endProgress();
    readSeconds = (System.nanoTime() - t0) / 1e9;
    readBytes = bytes;
    double mibs = bytes / 1048576.0 / Math.max(readSeconds, 1e-3);
    checks.check(
        "every record read back once",
        count == totalIds && seen.cardinality() == totalIds && duplicates == 0,
        String.format(
            Locale.ROOT,
            "%d records read, %d distinct of %d produced, %d duplicates",
            count,
            seen.cardinality(),
            totalIds,
            duplicates));
    checks.check(
        "every record's key, value and timestamp as produced",
        errorCount == 0,
        errorCount == 0 ? "" : errorCount + " bad records, first: " + String.join(" | ", errors));
    checks.check(
        "content checksum (sum of CRC32C of key+value) matches",
        crc == producedCrc.get(),
        String.format(Locale.ROOT, "read %016x, produced %016x", crc, producedCrc.get()));
    console.line(
        "  read %s in %.1f s: %.1f MiB/s", Console.bytes(bytes), readSeconds, mibs);
    summary.put("bytes_read", Long.toString(bytes));
    summary.put("read_seconds", String.format(Locale.ROOT, "%.2f", readSeconds));
    summary.put("read_mib_per_s", String.format(Locale.ROOT, "%.1f", mibs));
  }

  private boolean allConsumed(KafkaConsumer<byte[], byte[]> c) {
    for (int p = 0; p < o.partitions; p++) {
      if (c.position(tps.get(p)) < endOffset[p]) {
        return false;
      }
    }
    return true;
  }

  private String positions(KafkaConsumer<byte[], byte[]> c) {
    StringBuilder sb = new StringBuilder("[");
    for (TopicPartition tp : tps) {
      sb.append(tp.partition()).append(':').append(c.position(tp)).append(' ');
    }
    return sb.toString().trim() + "]";
  }

  private void consumeTinyFetch() throws Exception {
    console.heading("consume from offset 0 with fetch.max.bytes=1 and max.partition.fetch.bytes=1");
    Properties cp = consumerProps("tsm-verify-tiny");
    cp.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 1);
    cp.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 1);
    long[] want = new long[o.partitions];
    long[] got = new long[o.partitions];
    long errors = 0;
    List<String> firstErrors = new ArrayList<>();
    long polls = 0;
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
      c.assign(tps);
      for (int p = 0; p < o.partitions; p++) {
        want[p] = Math.min(o.tinyFetchRecords, Math.max(0, lastMainOffset.get(p) + 1));
        c.seek(tps.get(p), 0);
      }
      long lastProgress = System.nanoTime();
      while (true) {
        boolean done = true;
        for (int p = 0; p < o.partitions; p++) {
          done &= got[p] >= want[p];
          if (got[p] >= want[p]) {
            c.pause(List.of(tps.get(p)));
          }
        }
        if (done) {
          break;
        }
        ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(500));
        polls++;
        if (recs.isEmpty()) {
          if (System.nanoTime() - lastProgress > TimeUnit.SECONDS.toNanos(o.stallTimeoutSec)) {
            throw new AbortRun(
                "tiny-fetch consumer made no progress for "
                    + o.stallTimeoutSec
                    + " s at positions "
                    + positions(c));
          }
          continue;
        }
        lastProgress = System.nanoTime();
        for (ConsumerRecord<byte[], byte[]> r : recs) {
          int p = r.partition();
          if (got[p] >= want[p]) {
            continue;
          }
          String err = verify(r);
          long expectedOffset = logOffsets[p].get((int) got[p]);
          if (err == null && r.offset() != expectedOffset) {
            err = "partition " + p + ": read offset " + r.offset() + ", expected " + expectedOffset;
          }
          if (err != null) {
            errors++;
            if (firstErrors.size() < 5) {
              firstErrors.add(err);
            }
          }
          got[p]++;
        }
      }
    }
    checks.check(
        "tiny fetch.max.bytes consumer reads the tiered records in order",
        errors == 0,
        errors == 0
            ? String.format(Locale.ROOT, "%s records in %d polls", Arrays.toString(got), polls)
            : errors + " bad records, first: " + String.join(" | ", firstErrors));
  }

  // ------------------------------------------------------------------ timestamps

  private void listOffsetsByTimestamp() throws Exception {
    console.heading("ListOffsets by timestamp inside the tiered range");
    double[] fractions = {0.0, 0.13, 0.5, 0.77, 0.999};
    int asked = 0;
    List<String> errors = new ArrayList<>();
    Properties cp = consumerProps("tsm-offsets-for-times");
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
      for (double f : fractions) {
        for (int delta = 0; delta <= 1; delta++) {
          Map<TopicPartition, OffsetSpec> req = new HashMap<>();
          Map<TopicPartition, Long> reqTs = new HashMap<>();
          Map<TopicPartition, Long> expected = new HashMap<>();
          Map<TopicPartition, Long> expectedTs = new HashMap<>();
          for (int p = 0; p < o.partitions; p++) {
            long lastMain = lastMainOffset.get(p);
            if (lastMain < 0) {
              continue;
            }
            LongList offs = logOffsets[p];
            LongList tss = logTimestamps[p];
            int lastIdx = offs.indexOf(lastMain);
            int idx = (int) Math.floor(f * lastIdx);
            long ts = tss.get(idx) + delta;
            int first = -1;
            for (int i = 0; i < tss.size(); i++) {
              if (tss.get(i) >= ts) {
                first = i;
                break;
              }
            }
            if (first < 0 || offs.get(first) >= earliestLocal[p]) {
              continue; // not inside the tiered range: not what this check is about
            }
            TopicPartition tp = tps.get(p);
            req.put(tp, OffsetSpec.forTimestamp(ts));
            reqTs.put(tp, ts);
            expected.put(tp, offs.get(first));
            expectedTs.put(tp, tss.get(first));
          }
          if (req.isEmpty()) {
            continue;
          }
          Map<TopicPartition, ListOffsetsResultInfo> res =
              admin.listOffsets(req).all().get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
          Map<TopicPartition, OffsetAndTimestamp> cres =
              c.offsetsForTimes(reqTs, Duration.ofSeconds(60));
          for (TopicPartition tp : req.keySet()) {
            asked++;
            long got = res.get(tp).offset();
            long gotTs = res.get(tp).timestamp();
            OffsetAndTimestamp ct = cres.get(tp);
            if (got != expected.get(tp) || gotTs != expectedTs.get(tp)) {
              errors.add(
                  String.format(
                      Locale.ROOT,
                      "%s ts %d: Admin got offset %d (ts %d), expected %d (ts %d)",
                      tp,
                      reqTs.get(tp),
                      got,
                      gotTs,
                      expected.get(tp),
                      expectedTs.get(tp)));
            }
            if (ct == null || ct.offset() != expected.get(tp)) {
              errors.add(
                  String.format(
                      Locale.ROOT,
                      "%s ts %d: consumer offsetsForTimes got %s, expected %d",
                      tp,
                      reqTs.get(tp),
                      ct,
                      expected.get(tp)));
            }
          }
        }
      }
    }
    checks.check(
        "ListOffsets by timestamp in the tiered range (Admin and consumer)",
        asked > 0 && errors.isEmpty(),
        asked == 0
            ? "no timestamp fell inside the tiered range"
            : errors.isEmpty()
                ? asked + " lookups, all exact"
                : errors.size() + " wrong: " + String.join(" | ", errors.subList(0, Math.min(5, errors.size()))));
  }

  // ------------------------------------------------------------------ remote objects

  private void checkRemoteObjects() throws Exception {
    console.heading("remote objects in " + store.describe());
    String frag = objectFragment();
    if (!"tsm".equals(o.objectFormat)) {
      List<RemoteStore.RemoteObject> all = store.list(frag);
      long b = all.stream().mapToLong(RemoteStore.RemoteObject::size).sum();
      checks.check("remote objects exist", !all.isEmpty(), all.size() + " objects, " + Console.bytes(b));
      summary.put("objects", Integer.toString(all.size()));
      summary.put("bytes_stored", Long.toString(b));
      return;
    }
    // The copier may still be writing the last (padding) segments: wait, bounded, until
    // every .log has its .indexes and, written last, its .rsm-manifest.
    List<RemoteStore.RemoteObject> all;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    Map<String, Map<String, Long>> bySegment;
    while (true) {
      all = store.list(frag);
      bySegment = new LinkedHashMap<>();
      for (RemoteStore.RemoteObject ob : all) {
        int dot = ob.key().lastIndexOf('.');
        String stem = dot < 0 ? ob.key() : ob.key().substring(0, dot);
        String suffix = dot < 0 ? "" : ob.key().substring(dot + 1);
        bySegment.computeIfAbsent(stem, s -> new HashMap<>()).put(suffix, ob.size());
      }
      boolean complete =
          bySegment.values().stream()
              .allMatch(m -> m.keySet().equals(Set.of("log", "indexes", "rsm-manifest")));
      if (complete || System.nanoTime() > deadline) {
        checks.check(
            "every segment is exactly .log + .indexes + .rsm-manifest",
            complete && !bySegment.isEmpty(),
            bySegment.size() + " segments, " + all.size() + " objects under " + frag);
        break;
      }
      Thread.sleep(1000);
    }
    long logBytes = 0;
    long originalBytes = 0;
    long allBytes = 0;
    int manifests = 0;
    List<String> bad = new ArrayList<>();
    int plainLogs = 0;
    int logsScanned = 0;
    for (RemoteStore.RemoteObject ob : all) {
      allBytes += ob.size();
      if (ob.key().endsWith(".log")) {
        logBytes += ob.size();
        logsScanned++;
        try (InputStream in = store.open(ob.key())) {
          if (contains(in, RecordGen.MARKER)) {
            plainLogs++;
          }
        }
      } else if (ob.key().endsWith(".rsm-manifest")) {
        manifests++;
        JsonNode m;
        try (InputStream in = store.open(ob.key())) {
          m = json.readTree(in);
        }
        String err = checkManifest(ob.key(), m);
        if (err != null && bad.size() < 5) {
          bad.add(err);
        }
        originalBytes += m.path("chunkIndex").path("originalFileSize").asLong(0);
      }
    }
    checks.check(
        "manifests are v1 with the configured compression/encryption",
        manifests > 0 && bad.isEmpty(),
        manifests + " manifests" + (bad.isEmpty() ? "" : ", bad: " + String.join(" | ", bad)));
    if (o.expectEncryption) {
      checks.check(
          "no plaintext in encrypted .log objects",
          plainLogs == 0,
          plainLogs + " of " + logsScanned + " .log objects contain a record's plaintext marker");
    } else if (!o.expectCompression) {
      checks.check(
          "untransformed .log objects are plain Kafka segments",
          plainLogs > 0,
          plainLogs + " of " + logsScanned + " .log objects contain the plaintext marker");
    }
    summary.put("segments", Integer.toString(bySegment.size()));
    summary.put("objects", Integer.toString(all.size()));
    summary.put("bytes_tiered", Long.toString(originalBytes));
    summary.put("bytes_stored_log", Long.toString(logBytes));
    summary.put("bytes_stored", Long.toString(allBytes));
    if (logBytes > 0) {
      summary.put("compression_ratio", String.format(Locale.ROOT, "%.2f", (double) originalBytes / logBytes));
    }
  }

  private String checkManifest(String key, JsonNode m) {
    if (!"1".equals(m.path("version").asText(null))) {
      return key + ": version " + m.get("version");
    }
    JsonNode comp = m.get("compression");
    if (comp == null || !comp.isBoolean() || comp.asBoolean() != o.expectCompression) {
      return key + ": compression " + comp + ", expected " + o.expectCompression;
    }
    String type = m.path("chunkIndex").path("type").asText("");
    String wantType = o.expectCompression ? "variable" : "fixed";
    if (!wantType.equals(type)) {
      return key + ": chunkIndex.type " + type + ", expected " + wantType;
    }
    JsonNode enc = m.get("encryption");
    if ((enc != null) != o.expectEncryption) {
      return key + ": encryption " + (enc == null ? "absent" : "present") + ", expected " + (o.expectEncryption ? "present" : "absent");
    }
    if (enc != null) {
      String dk = enc.path("dataKey").asText("");
      int colon = dk.indexOf(':');
      if (colon <= 0 || dk.indexOf(':', colon + 1) >= 0) {
        return key + ": dataKey is not <keyPairId>:<base64>";
      }
      if (o.expectKeyId != null && !o.expectKeyId.equals(dk.substring(0, colon))) {
        return key + ": dataKey key-pair id " + dk.substring(0, colon) + ", expected " + o.expectKeyId;
      }
    }
    return null;
  }

  /** True when the stream contains {@code pattern} (streamed; memory bounded by 64 KiB). */
  static boolean contains(InputStream in, byte[] pattern) throws IOException {
    byte[] buf = new byte[64 * 1024 + pattern.length];
    int keep = 0;
    int n;
    while ((n = in.read(buf, keep, buf.length - keep)) > 0) {
      int len = keep + n;
      for (int i = 0; i + pattern.length <= len; i++) {
        if (buf[i] == pattern[0] && Arrays.equals(buf, i, i + pattern.length, pattern, 0, pattern.length)) {
          return true;
        }
      }
      keep = Math.min(pattern.length - 1, len);
      System.arraycopy(buf, len - keep, buf, 0, keep);
    }
    return false;
  }

  // ------------------------------------------------------------------ broker meters

  private void checkBrokerMeters(String when) throws Exception {
    if (jmx == null) {
      checks.fail("broker remote-storage meters", "no --jmx-url given: cannot read the broker's meters");
      return;
    }
    Map<String, Long> m = jmx.snapshot();
    // The broker's *PerSec meters are Yammer meters; their Count attribute is cumulative
    // since the broker started (bytes or errors), which is what is printed here.
    console.line("  broker meter counts (cumulative) %s: %s", when, m);
    checks.check(
        "broker RemoteCopyErrorsPerSec stayed 0",
        m.get(BrokerJmx.COPY_ERRORS) == 0,
        "Count=" + m.get(BrokerJmx.COPY_ERRORS));
    checks.check(
        "broker RemoteFetchErrorsPerSec stayed 0",
        m.get(BrokerJmx.FETCH_ERRORS) == 0,
        "Count=" + m.get(BrokerJmx.FETCH_ERRORS));
    checks.check(
        "broker copied and fetched remote bytes",
        m.get(BrokerJmx.COPY_BYTES) > 0 && m.get(BrokerJmx.FETCH_BYTES) > 0,
        "RemoteCopyBytes=" + m.get(BrokerJmx.COPY_BYTES) + ", RemoteFetchBytes=" + m.get(BrokerJmx.FETCH_BYTES));
    summary.put("broker_remote_copy_bytes", Long.toString(m.get(BrokerJmx.COPY_BYTES)));
    summary.put("broker_remote_fetch_bytes", Long.toString(m.get(BrokerJmx.FETCH_BYTES)));
  }

  // ------------------------------------------------------------------ the plugin's MBeans

  /**
   * The Java plugin's JMX names, published by tsm in the broker (docs/metrics.md), move with the
   * traffic this run produced: uploads of {@code .log} objects at least the segments seen in the
   * bucket, per-topic and per-partition MBeans of this topic, requested fetch bytes and tsm's
   * downloaded / served bytes after the consumers read from remote, the storage client's request
   * counts for the backend of the run, the caches' counters, tsm's own MBean under its stable
   * name. The plugin feeds native counters to JMX once a second: each check waits for its
   * condition (bounded), it does not time anything.
   */
  private void checkPluginMetrics() throws Exception {
    if (jmx == null) {
      checks.fail("plugin JMX metrics", "no --jmx-url given: cannot read the plugin's MBeans");
      return;
    }
    console.heading("the plugin's JMX metrics (the Java plugin's names)");
    String rsm = "aiven.kafka.server.tieredstorage:type=remote-storage-manager-metrics";
    // Topic names are [a-zA-Z0-9._-]: Kafka's JmxReporter does not quote them.
    String byTopic = rsm + ",topic=" + topic;
    int segments = Integer.parseInt(summary.getOrDefault("segments", "0"));
    double logUploads = waitFor(byTopic + ",object-type=log", "object-upload-total", v -> v >= segments);
    checks.check(
        "object-upload-total{topic,object-type=log} >= segments tiered",
        segments > 0 && logUploads >= segments,
        String.format(Locale.ROOT, "%.0f log uploads, %d segments in the bucket", logUploads, segments));
    double partitionMBeans = jmx.names(rsm + ",topic=" + topic + ",partition=*").size();
    checks.check(
        "per-topic and per-partition MBeans of the topic exist",
        !Double.isNaN(jmx.attribute(byTopic, "segment-copy-time-max")) && partitionMBeans >= o.partitions,
        String.format(Locale.ROOT, "%.0f partition MBeans for %d partitions", partitionMBeans, o.partitions));
    double requested = waitFor(byTopic, "segment-fetch-requested-bytes-total", v -> v > 0);
    String tsm = "io.tsm.kafka:type=tsm-storage-metrics";
    double downloaded = waitFor(tsm, "storage-downloaded-bytes-total", v -> v > 0);
    double served = waitFor(tsm, "segment-fetch-served-bytes-total", v -> v > 0);
    checks.check(
        "fetch requested bytes and tsm's downloaded/served bytes > 0 after remote reads",
        requested > 0 && downloaded > 0 && served > 0,
        String.format(Locale.ROOT, "requested %.0f, downloaded %.0f, served %.0f bytes", requested, downloaded, served));
    summary.put("plugin_fetch_requested_bytes", String.format(Locale.ROOT, "%.0f", requested));
    summary.put("plugin_downloaded_bytes", String.format(Locale.ROOT, "%.0f", downloaded));
    summary.put("plugin_served_bytes", String.format(Locale.ROOT, "%.0f", served));
    String[] client = clientCounters();
    if (client != null) {
      double gets = waitFor(client[0], client[1], v -> v > 0);
      double puts = waitFor(client[0], client[2], v -> v > 0);
      checks.check(
          "storage client request counts > 0 (" + client[0] + ")",
          gets > 0 && puts > 0,
          String.format(Locale.ROOT, "%s=%.0f, %s=%.0f", client[1], gets, client[2], puts));
    }
    String cache = "aiven.kafka.server.tieredstorage.cache:type=segment-manifest-cache-metrics";
    double misses = waitFor(cache, "cache-misses-total", v -> v > 0);
    double pool = jmx.attribute(
        "aiven.kafka.server.tieredstorage.thread-pool:type=segment-manifest-cache-thread-pool-metrics",
        "pool-size-total");
    checks.check(
        "manifest cache and thread-pool MBeans count",
        misses > 0 && pool >= 1,
        String.format(Locale.ROOT, "cache-misses-total %.0f, pool-size-total %.0f", misses, pool));
    java.util.Set<javax.management.ObjectName> own = jmx.names("io.tsm.kafka:type=RemoteStorageManager,*");
    checks.check(
        "tsm's own MBean has one stable name (no per-start instance id)",
        own.size() == 1 && own.iterator().next().getKeyProperty("instance") == null,
        own.toString());
  }

  /** {MBean, GET-like attribute, PUT-like attribute} of the run's storage client, null for filesystem. */
  private String[] clientCounters() {
    String rs = o.remoteStore;
    if (rs.startsWith("s3:")) {
      return new String[] {
        "aiven.kafka.server.tieredstorage.s3:type=s3-client-metrics",
        "get-object-requests-total",
        "put-object-requests-total"
      };
    }
    if (rs.startsWith("gcs:")) {
      return new String[] {
        "aiven.kafka.server.tieredstorage.gcs:type=gcs-client-metrics",
        "object-get-total",
        "resumable-upload-initiate-total"
      };
    }
    if (rs.startsWith("azure:")) {
      return new String[] {
        "aiven.kafka.server.tieredstorage.azure:type=azure-blob-storage-client-metrics",
        "blob-get-total",
        "block-upload-total"
      };
    }
    return null;
  }

  /** Reads {@code attribute} until {@code ok} holds (at most 15 reads, a second apart); the last value. */
  private double waitFor(String mbean, String attribute, java.util.function.DoublePredicate ok) throws Exception {
    double v = Double.NaN;
    for (int i = 0; i < 15; i++) {
      v = jmx.attribute(mbean, attribute);
      if (!Double.isNaN(v) && ok.test(v)) {
        return v;
      }
      Thread.sleep(1000);
    }
    console.line("  %s %s: %s", mbean, attribute, v);
    return v;
  }

  private void checkDeleteMeter() throws Exception {
    if (jmx == null) {
      return;
    }
    long n = jmx.count(BrokerJmx.DELETE_ERRORS);
    if (n >= 0) {
      checks.check("broker RemoteDeleteErrorsPerSec stayed 0", n == 0, "Count=" + n);
    }
    long ce = jmx.count(BrokerJmx.COPY_ERRORS);
    long fe = jmx.count(BrokerJmx.FETCH_ERRORS);
    checks.check(
        "broker remote copy/fetch errors still 0 after the topic deletion",
        ce == 0 && fe == 0,
        "RemoteCopyErrors=" + ce + ", RemoteFetchErrors=" + fe);
  }

  // ------------------------------------------------------------------ delete

  private void deleteTopicAndCheckRemote() throws Exception {
    console.heading("delete topic " + topic + " and wait for its remote objects to go");
    int before = store.list(objectFragment()).size();
    admin.deleteTopics(List.of(topic)).all().get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    long t0 = System.nanoTime();
    long deadline = t0 + TimeUnit.SECONDS.toNanos(o.deleteTimeoutSec);
    List<RemoteStore.RemoteObject> left;
    while (true) {
      left = store.list(objectFragment());
      if (left.isEmpty() || System.nanoTime() > deadline) {
        break;
      }
      Thread.sleep(1000);
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    checks.check(
        "remote objects deleted with the topic",
        before > 0 && left.isEmpty(),
        left.isEmpty()
            ? String.format(Locale.ROOT, "%d objects gone in %.1f s", before, secs)
            : String.format(
                Locale.ROOT,
                "%d of %d objects still there after %d s, e.g. %s",
                left.size(),
                before,
                o.deleteTimeoutSec,
                left.get(0).key()));
  }

  // ------------------------------------------------------------------ summary

  private void printSummary() {
    console.heading("summary");
    long tiered = Long.parseLong(summary.getOrDefault("bytes_tiered", "0"));
    if (tiered == 0) {
      tiered = Long.parseLong(summary.getOrDefault("broker_remote_copy_bytes", "0"));
    }
    long storedLog = Long.parseLong(summary.getOrDefault("bytes_stored_log", summary.getOrDefault("bytes_stored", "0")));
    long stored = Long.parseLong(summary.getOrDefault("bytes_stored", "0"));
    long records = Long.parseLong(summary.getOrDefault("records", "0"));
    long main = Long.parseLong(summary.getOrDefault("main_records", "0"));
    console.line(
        "  records produced and verified : %d (%d data + %d padding records that roll the last data segment so it tiers)",
        records,
        main,
        records - main);
    console.line("  key+value bytes produced      : %s", Console.bytes(producedBytes.get()));
    console.line("  segments in the bucket        : %s", summary.getOrDefault("segments", "?"));
    console.line("  segment bytes tiered          : %s", Console.bytes(tiered));
    console.line("  bytes stored (.log objects)   : %s", Console.bytes(storedLog));
    console.line("  bytes stored (all objects)    : %s", Console.bytes(stored));
    console.line(
        "  compression ratio             : %s (segment bytes tiered / stored .log bytes; the generated records are deliberately compressible)",
        summary.getOrDefault("compression_ratio", "n/a"));
    console.line(
        "  tiering wait after producing  : %s s (paced by the broker's remote log manager task interval, not by the plugin; plugin throughput: bench/run.sh)",
        summary.getOrDefault("tier_seconds", "?"));
    console.line(
        "  read back from offset 0       : %s in %.1f s = %s MiB/s",
        Console.bytes(readBytes),
        readSeconds,
        summary.get("read_mib_per_s"));
    console.line("  remote objects                : %s, under %s", store.describe(), objectFragment());
  }

  private void writeSummaryFile() {
    if (o.summaryFile == null) {
      return;
    }
    StringBuilder sb = new StringBuilder();
    summary.forEach((k, v) -> sb.append(k).append('=').append(v).append('\n'));
    sb.append("checks_failed=").append(checks.failures().size()).append('\n');
    try {
      Files.writeString(Path.of(o.summaryFile), sb.toString());
    } catch (IOException e) {
      throw new UncheckedIOException("writing " + o.summaryFile, e);
    }
  }

  /** A growable array of longs (offsets, timestamps): 8 bytes per element. */
  static final class LongList {
    private long[] a = new long[1024];
    private int n;

    void add(long v) {
      if (n == a.length) {
        a = Arrays.copyOf(a, n * 2);
      }
      a[n++] = v;
    }

    long get(int i) {
      if (i >= n) {
        throw new IndexOutOfBoundsException(i + " >= " + n);
      }
      return a[i];
    }

    int size() {
      return n;
    }

    /** Index of {@code v} in this sorted list, or -1. */
    int indexOf(long v) {
      int i = Arrays.binarySearch(a, 0, n, v);
      return i < 0 ? -1 : i;
    }
  }
}
