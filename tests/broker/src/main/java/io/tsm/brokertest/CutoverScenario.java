package io.tsm.brokertest;

import java.io.FileWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The cutover scenario of issue 10, against a real broker with the plugin: a payments topic
 * shaped like the users' (24 partitions, {@code cleanup.policy=delete}, {@code retention.ms=-1}
 * during the backfill, {@code retention.bytes} per partition, 1 MiB segments, CreateTime,
 * short {@code local.retention.ms}) receives
 *
 * <ul>
 *   <li>a backfill: keyed records (key {@code acct-<n>}, so one account is always in one
 *       partition), stamped with CreateTime timestamps spread over the last 9 days, in
 *       timestamp order per key (one idempotent producer, ids in timestamp order). The first
 *       {@code --old-fraction} of the ids cover [now-9d, now-7d-2h], the rest
 *       [now-7d+2h, now-10min]: the 4 h gap around the 7-day mark makes "older than 7 days"
 *       unambiguous however long the run takes;
 *   <li>a live producer writing "now" records for the same accounts at the same time.
 * </ul>
 *
 * Then one marker record per partition is written with {@code segment.ms} briefly at 1 s, so
 * every partition rolls and all backfill/live data can be tiered; the scenario waits (bounded)
 * until latest-tiered reaches the marker and earliest-local is the marker. While
 * {@code retention.ms=-1}, a watcher lists the bucket every second: no object may disappear.
 * Reads through the broker check every offset from 0, every record's key/value/timestamp,
 * per-key order, record counts in timestamp windows [start, end) against what was produced,
 * and offsetsForTimes inside the tiered range against the first offset with a timestamp at
 * or after the target (from the data read). Then {@code retention.ms} becomes 7 days
 * (incrementalAlterConfigs): each partition's leading segments whose records are all older
 * than 7 days must leave the bucket (there must be some), every segment with a newer record
 * must stay, the log start offsets must move to the first kept segment, the rest must read
 * back unchanged, and the broker's RemoteCopy/Fetch/DeleteErrorsPerSec must be 0.
 *
 * <p>Memory: per record read, an offset, a timestamp and an id (3 longs); the produced data is
 * regenerated from ids ({@link RecordGen}), live records' timestamps kept by id.
 */
final class CutoverScenario {
  private static final long DAY_MS = 24L * 3600 * 1000;
  private static final long HOUR_MS = 3600L * 1000;
  private static final long SEVEN_DAYS_MS = 7 * DAY_MS;
  /** Ids of live records start here; marker ids at {@link #MARKER_BASE} + partition. */
  private static final long LIVE_BASE = 1L << 40;

  private static final long MARKER_BASE = 1L << 50;
  private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(60);

  private final Cutover o;
  private final Console console;
  private final Checks checks;
  private final RemoteStore store;
  private final Map<String, String> summary = new LinkedHashMap<>();

  private Admin admin;
  private BrokerJmx jmx;
  private String topic;
  private Uuid topicId;
  private List<TopicPartition> tps;
  private RecordGen gen;
  private long backfillCount;
  private long oldCount;
  private long now0;
  private final Map<Long, Long> liveTs = new ConcurrentHashMap<>();
  private long[] markerOffset;
  /** Per partition, indexed by offset: the record's timestamp and id (as read from 0). */
  private long[][] tsAt;

  private long[][] idAt;

  private static final class AbortRun extends Exception {
    private static final long serialVersionUID = 1L;

    AbortRun(String msg) {
      super(msg);
    }
  }

  /** One remote segment: partition, start offset, end offset (exclusive), object stem. */
  private record Seg(int partition, long start, long end, String stem, long maxTs) {}

  CutoverScenario(Cutover options) {
    this.o = options;
    this.console = new Console(System.out, options.fancy);
    this.checks = new Checks(console);
    this.store = RemoteStore.parse(options.remoteStore);
  }

  boolean run() {
    topic = o.topic != null ? o.topic : "payments-" + UUID.randomUUID().toString().substring(0, 8);
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap);
    ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000);
    long t0 = System.nanoTime();
    try (Admin a = Admin.create(ap);
        BrokerJmx j = new BrokerJmx(o.jmxUrl)) {
      admin = a;
      jmx = j;
      createTopic();
      List<Seg> segs;
      try (HoldWatcher watcher = new HoldWatcher()) {
        watcher.start();
        produce();
        rollAll();
        waitForTiering();
        readAllFromZero();
        checkWindows("", Long.MIN_VALUE, new long[o.partitions]);
        checkOffsetsForTimes();
        segs = remoteSegments();
        watcher.finish();
      }
      restoreRetention(segs);
      checkMeters();
    } catch (AbortRun e) {
      checks.fail("scenario", e.getMessage());
    } catch (Exception e) {
      checks.fail("scenario", "unexpected " + e);
      e.printStackTrace(System.out);
    }
    summary.put("seconds", String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9));
    console.line("topic %s left in place (retention.ms=7d) for inspection", topic);
    writeSummary();
    checks.summary();
    return checks.allPassed();
  }

  // ------------------------------------------------------------------ topic

  private void createTopic() throws Exception {
    console.heading("topic " + topic);
    Map<String, String> cfg = new LinkedHashMap<>();
    cfg.put("cleanup.policy", "delete");
    cfg.put("retention.ms", "-1");
    cfg.put("retention.bytes", Long.toString(o.retentionBytes));
    cfg.put("remote.storage.enable", "true");
    cfg.put("local.retention.ms", Long.toString(o.localRetentionMs));
    cfg.put("segment.bytes", Integer.toString(o.segmentBytes));
    cfg.put("message.timestamp.type", "CreateTime");
    // Kafka's default already (Long.MAX_VALUE); set explicitly: 9-day-old CreateTime is fine.
    cfg.put("message.timestamp.before.max.ms", Long.toString(Long.MAX_VALUE));
    NewTopic nt = new NewTopic(topic, o.partitions, (short) 1).configs(cfg);
    CreateTopicsResult r = admin.createTopics(List.of(nt));
    r.all().get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    topicId = r.topicId(topic).get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    console.line("created %s (id %s): %d partitions, %s", topic, topicId, o.partitions, cfg);
    summary.put("topic", topic);
    tps = new ArrayList<>();
    for (int p = 0; p < o.partitions; p++) {
      tps.add(new TopicPartition(topic, p));
    }
    awaitLeaders();
  }

  /**
   * Waits (bounded, 60 s) until every partition has a leader that answers ListOffsets:
   * producing into a just-created topic otherwise meets NOT_LEADER_OR_FOLLOWER, after which
   * an idempotent producer with several batches in flight was seen to loop on
   * OUT_OF_ORDER_SEQUENCE_NUMBER.
   */
  private void awaitLeaders() throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    String last = "";
    while (true) {
      try {
        TopicDescription d =
            admin.describeTopics(List.of(topic)).allTopicNames().get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS).get(topic);
        long led = d.partitions().stream().filter(pi -> pi.leader() != null && !pi.leader().isEmpty()).count();
        if (led == o.partitions) {
          offsets(OffsetSpec.latest());
          return;
        }
        last = led + " of " + o.partitions + " partitions have a leader";
      } catch (java.util.concurrent.ExecutionException e) {
        last = e.getCause().toString();
      }
      if (System.nanoTime() > deadline) {
        throw new AbortRun("partitions of " + topic + " not ready after 60 s: " + last);
      }
      Thread.sleep(200);
    }
  }

  private void alterTopic(String key, String value) throws Exception {
    ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    AlterConfigOp op =
        value == null
            ? new AlterConfigOp(new ConfigEntry(key, ""), AlterConfigOp.OpType.DELETE)
            : new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET);
    Map<ConfigResource, Collection<AlterConfigOp>> m = Map.of(res, List.of(op));
    admin.incrementalAlterConfigs(m).all().get(ADMIN_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
  }

  private String objectFragment() {
    return topic + "-" + topicId + "/";
  }

  // ------------------------------------------------------------------ produce

  /** Timestamp (ms) of backfill record {@code id}: see the class doc. */
  private long backfillTs(long id) {
    long oldStart = now0 - 9 * DAY_MS;
    long oldEnd = now0 - SEVEN_DAYS_MS - 2 * HOUR_MS;
    long newStart = now0 - SEVEN_DAYS_MS + 2 * HOUR_MS;
    long newEnd = now0 - 10 * 60 * 1000L;
    if (id < oldCount) {
      return oldStart + (long) ((double) (oldEnd - oldStart) * id / Math.max(1, oldCount - 1));
    }
    long n = backfillCount - oldCount;
    return newStart + (long) ((double) (newEnd - newStart) * (id - oldCount) / Math.max(1, n - 1));
  }

  /** The timestamp a record with this id was produced with, or null (unknown id). */
  private Long expectedTs(long id) {
    if (id >= 0 && id < backfillCount) {
      return backfillTs(id);
    }
    return liveTs.get(id);
  }

  private byte[] key(long id) {
    if (id >= MARKER_BASE) {
      return ("cutover-marker-" + (id - MARKER_BASE)).getBytes(StandardCharsets.US_ASCII);
    }
    return gen.key(id >= LIVE_BASE ? id - LIVE_BASE : id);
  }

  private Properties producerProps(String clientId, String compression) {
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap);
    pp.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
    pp.put(ProducerConfig.ACKS_CONFIG, "all");
    pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    // One request in flight per connection: per-partition order without relying on the
    // idempotent producer's sequence recovery (see awaitLeaders).
    pp.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
    pp.put(ProducerConfig.LINGER_MS_CONFIG, 20);
    pp.put(ProducerConfig.BATCH_SIZE_CONFIG, 64 * 1024);
    pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
    return pp;
  }

  private void produce() throws Exception {
    long target = Main.parseSize(o.size);
    backfillCount = RecordGen.countForBytes(o.seed, o.minRecord, o.maxRecord, target);
    oldCount = (long) (backfillCount * o.oldFraction);
    now0 = System.currentTimeMillis();
    gen = new RecordGen(o.seed, o.accounts, Long.MAX_VALUE, o.minRecord, o.maxRecord, 0, 0);
    console.heading(
        String.format(
            Locale.ROOT,
            "backfill %s in %d records (%d stamped 9..7 days ago, %d in the last 7 days)"
                + " + live records at %d/s",
            Console.bytes(target),
            backfillCount,
            oldCount,
            backfillCount - oldCount,
            o.liveRate));
    summary.put("backfill_records", Long.toString(backfillCount));
    summary.put("backfill_old_records", Long.toString(oldCount));
    AtomicReference<Exception> failure = new AtomicReference<>();
    AtomicLong acked = new AtomicLong();
    AtomicLong liveSent = new AtomicLong();
    long t0 = System.nanoTime();
    try (KafkaProducer<byte[], byte[]> backfill =
            new KafkaProducer<>(producerProps("backfill", o.backfillCompression));
        KafkaProducer<byte[], byte[]> live = new KafkaProducer<>(producerProps("live", "lz4"))) {
      Thread bt =
          new Thread(
              () -> {
                for (long id = 0; id < backfillCount && failure.get() == null; id++) {
                  byte[] v = gen.value(id);
                  backfill.send(
                      new ProducerRecord<>(topic, null, backfillTs(id), key(id), v),
                      (md, e) -> {
                        if (e != null) {
                          failure.compareAndSet(null, new RuntimeException("backfill: " + e, e));
                        } else {
                          acked.addAndGet(v.length);
                        }
                      });
                }
                backfill.flush();
              },
              "backfill");
      bt.start();
      Thread lt =
          new Thread(
              () -> {
                long period = Math.max(1, 1000L / Math.max(1, o.liveRate));
                long j = 0;
                long liveUntil = Long.MAX_VALUE;
                if (o.backfillFirst) {
                  try {
                    bt.join();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                  }
                  liveUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
                }
                while ((o.backfillFirst ? System.nanoTime() < liveUntil : bt.isAlive())
                    && failure.get() == null) {
                  final long id = LIVE_BASE + j * 7919 % o.accounts + j * (long) o.accounts;
                  long ts = System.currentTimeMillis();
                  byte[] v = gen.value(id);
                  live.send(
                      new ProducerRecord<>(topic, null, ts, key(id), v),
                      (md, e) -> {
                        if (e != null) {
                          failure.compareAndSet(null, new RuntimeException("live: " + e, e));
                        } else {
                          liveTs.put(id, ts);
                        }
                      });
                  liveSent.incrementAndGet();
                  j++;
                  try {
                    Thread.sleep(period);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                  }
                }
                live.flush();
              },
              "live");
      lt.start();
      while (bt.isAlive() || lt.isAlive()) {
        double secs = (System.nanoTime() - t0) / 1e9;
        console.progress("backfill", acked.get(), target, acked.get() / Math.max(secs, 1e-3));
        Thread.sleep(250);
      }
      bt.join();
      lt.join();
      console.endProgress();
    }
    if (failure.get() != null) {
      throw new AbortRun("producing failed: " + failure.get());
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    boolean ok = liveTs.size() == liveSent.get() && liveTs.size() > 0;
    checks.check(
        "backfill and live producers acknowledged every record",
        ok,
        String.format(
            Locale.ROOT,
            "%d backfill + %d of %d live records in %.1f s",
            backfillCount,
            liveTs.size(),
            liveSent.get(),
            secs));
    if (!ok) {
      throw new AbortRun("not every live record was acknowledged (or none was written)");
    }
    summary.put("live_records", Integer.toString(liveTs.size()));
    summary.put("produce_seconds", String.format(Locale.ROOT, "%.1f", secs));
  }

  /**
   * Rolls every partition's active segment so that all backfill and live data can be tiered:
   * {@code segment.ms=1000} for a moment, one marker record per partition, then the override
   * is removed (segments roll on size again).
   */
  private void rollAll() throws Exception {
    console.heading("roll every partition: segment.ms=1000, one marker record per partition");
    alterTopic("segment.ms", "1000");
    Thread.sleep(2000);
    markerOffset = new long[o.partitions];
    try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(producerProps("marker", "none"))) {
      List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
      for (int q = 0; q < o.partitions; q++) {
        long id = MARKER_BASE + q;
        fs.add(
            p.send(new ProducerRecord<>(topic, q, System.currentTimeMillis(), key(id), gen.value(id))));
      }
      for (int q = 0; q < o.partitions; q++) {
        RecordMetadata md = fs.get(q).get(120, TimeUnit.SECONDS);
        markerOffset[q] = md.offset();
        liveTs.put(MARKER_BASE + q, md.timestamp());
      }
    }
    alterTopic("segment.ms", null);
    console.line("  marker offsets (= records before them per partition): %s", Arrays.toString(markerOffset));
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

  private long[] offsets(OffsetSpec spec) throws Exception {
    Map<TopicPartition, ListOffsetsResultInfo> m = listOffsets(spec);
    long[] r = new long[o.partitions];
    for (int p = 0; p < o.partitions; p++) {
      r[p] = m.get(tps.get(p)).offset();
    }
    return r;
  }

  private void waitForTiering() throws Exception {
    console.heading("wait until everything before the markers is tiered and deleted locally");
    long t0 = System.nanoTime();
    long deadline = t0 + TimeUnit.SECONDS.toNanos(o.tierTimeoutSec);
    String last = "";
    while (true) {
      long[] lt = offsets(OffsetSpec.latestTiered());
      long[] el = offsets(OffsetSpec.earliestLocal());
      int tiered = 0;
      int local = 0;
      for (int p = 0; p < o.partitions; p++) {
        tiered += lt[p] >= markerOffset[p] - 1 ? 1 : 0;
        local += el[p] >= markerOffset[p] ? 1 : 0;
      }
      double secs = (System.nanoTime() - t0) / 1e9;
      String state =
          String.format(
              Locale.ROOT,
              "%d/%d partitions tiered up to their marker, %d/%d deleted locally up to it",
              tiered,
              o.partitions,
              local,
              o.partitions);
      if (!state.equals(last)) {
        console.line("  [%5.1fs] %s", secs, state);
        last = state;
      }
      if (tiered == o.partitions && local == o.partitions) {
        checks.check(
            "all backfill and live data tiered, local copies deleted",
            true,
            String.format(Locale.ROOT, "after %.1f s", secs));
        summary.put("tier_seconds", String.format(Locale.ROOT, "%.1f", secs));
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new AbortRun(
            "timed out after "
                + o.tierTimeoutSec
                + " s waiting for tiering and local deletion: "
                + state
                + "; latest-tiered "
                + Arrays.toString(lt)
                + ", earliest-local "
                + Arrays.toString(el)
                + ", markers "
                + Arrays.toString(markerOffset)
                + " (see the broker log: RemoteLogManager, the plugin's errors)");
      }
      Thread.sleep(1000);
    }
  }

  /**
   * While retention.ms=-1: lists the bucket every second; any .log/.indexes/.rsm-manifest
   * object that disappears is a violation.
   */
  private final class HoldWatcher implements AutoCloseable {
    private final Thread thread = new Thread(this::loop, "hold-watcher");
    private final Set<String> seen = ConcurrentHashMap.newKeySet();
    private final List<String> vanished = new ArrayList<>();
    private volatile boolean stop;
    private volatile String error;

    void start() {
      thread.setDaemon(true);
      thread.start();
    }

    private void loop() {
      while (!stop) {
        try {
          scan();
          Thread.sleep(1000);
        } catch (InterruptedException e) {
          return;
        } catch (Exception e) {
          // finish() interrupts a scan in progress (its HTTP call then fails as
          // "interrupted"): that is the end of watching, not an error of the store.
          if (stop) {
            return;
          }
          error = e.toString();
        }
      }
    }

    private synchronized void scan() throws IOException {
      Set<String> now = new HashSet<>();
      for (RemoteStore.RemoteObject ob : store.list(objectFragment())) {
        // Final objects only: a backend may stage uploads under temporary names.
        String k = ob.key();
        if (k.endsWith(".log") || k.endsWith(".indexes") || k.endsWith(".rsm-manifest")) {
          now.add(k);
        }
      }
      for (String k : seen) {
        if (!now.contains(k) && vanished.size() < 1000) {
          vanished.add(k);
        }
      }
      seen.addAll(now);
    }

    void finish() throws Exception {
      stop = true;
      thread.interrupt();
      thread.join(10_000);
      scan();
      checks.check(
          "retention.ms=-1: no object left the bucket",
          vanished.isEmpty() && error == null && !seen.isEmpty(),
          vanished.isEmpty()
              ? seen.size() + " objects seen, none removed" + (error == null ? "" : "; " + error)
              : vanished.size() + " objects removed, e.g. " + vanished.get(0));
    }

    @Override
    public void close() {
      stop = true;
      thread.interrupt();
    }
  }

  // ------------------------------------------------------------------ reads

  private Properties consumerProps(String clientId) {
    Properties cp = new Properties();
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrap);
    cp.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
    cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
    cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 2000);
    cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return cp;
  }

  /** What is wrong with record {@code r}, or null. */
  private String verify(ConsumerRecord<byte[], byte[]> r) {
    long id = RecordGen.idOf(r.value());
    String where = r.partition() + "@" + r.offset();
    Long ts = expectedTs(id);
    if (ts == null) {
      return where + ": unknown record id " + id;
    }
    if (!Arrays.equals(r.key(), key(id))) {
      return where + ": key differs from the produced one (id " + id + ")";
    }
    if (!Arrays.equals(r.value(), gen.value(id))) {
      return where + ": value differs from the produced one (id " + id + ")";
    }
    if (r.timestampType() != TimestampType.CREATE_TIME || r.timestamp() != ts) {
      return where + ": timestamp " + r.timestampType() + " " + r.timestamp() + ", produced " + ts;
    }
    return null;
  }

  /**
   * Reads every partition from {@code from[p]} to its marker (inclusive), calling {@code sink}
   * for each record; bounded by the stall timeout.
   */
  private void readRange(String label, long[] from, java.util.function.Consumer<ConsumerRecord<byte[], byte[]>> sink)
      throws Exception {
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps(label))) {
      c.assign(tps);
      for (int p = 0; p < o.partitions; p++) {
        c.seek(tps.get(p), from[p]);
      }
      long lastProgress = System.nanoTime();
      while (true) {
        boolean done = true;
        for (int p = 0; p < o.partitions; p++) {
          done &= c.position(tps.get(p)) > markerOffset[p];
        }
        if (done) {
          return;
        }
        ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(500));
        if (recs.isEmpty()) {
          if (System.nanoTime() - lastProgress > TimeUnit.SECONDS.toNanos(o.stallTimeoutSec)) {
            StringBuilder pos = new StringBuilder();
            for (TopicPartition tp : tps) {
              pos.append(tp.partition()).append(':').append(c.position(tp)).append(' ');
            }
            throw new AbortRun(
                label + ": no progress for " + o.stallTimeoutSec + " s at positions [" + pos.toString().trim()
                    + "], markers " + Arrays.toString(markerOffset) + " (see the broker log)");
          }
          continue;
        }
        lastProgress = System.nanoTime();
        for (ConsumerRecord<byte[], byte[]> r : recs) {
          if (r.offset() <= markerOffset[r.partition()]) {
            sink.accept(r);
          }
        }
      }
    }
  }

  private void readAllFromZero() throws Exception {
    console.heading("read every partition from offset 0 through the broker (remote storage)");
    long[] earliest = offsets(OffsetSpec.earliest());
    checks.check(
        "log start offset is 0 on every partition",
        Arrays.stream(earliest).allMatch(x -> x == 0),
        Arrays.toString(earliest));
    tsAt = new long[o.partitions][];
    idAt = new long[o.partitions][];
    for (int p = 0; p < o.partitions; p++) {
      tsAt[p] = new long[(int) markerOffset[p] + 1];
      idAt[p] = new long[(int) markerOffset[p] + 1];
      Arrays.fill(idAt[p], -1);
    }
    List<String> errors = new ArrayList<>();
    long[] bad = {0, 0};
    Map<String, Integer> keyPartition = new HashMap<>();
    Map<String, long[]> lastPerKey = new HashMap<>(); // backfill id, backfill ts, live id
    long t0 = System.nanoTime();
    readRange(
        "cutover-read-all",
        new long[o.partitions],
        r -> {
          int p = r.partition();
          String err = verify(r);
          long id = RecordGen.idOf(r.value());
          if (err == null) {
            if (idAt[p][(int) r.offset()] != -1) {
              err = p + "@" + r.offset() + " read twice";
            }
            idAt[p][(int) r.offset()] = id;
            tsAt[p][(int) r.offset()] = r.timestamp();
          }
          if (err == null && id < MARKER_BASE) {
            String k = new String(r.key(), StandardCharsets.US_ASCII);
            Integer prev = keyPartition.putIfAbsent(k, p);
            long[] lp = lastPerKey.computeIfAbsent(k, x -> new long[] {-1, Long.MIN_VALUE, -1});
            if (prev != null && prev != p) {
              err = "key " + k + " in partitions " + prev + " and " + p;
            } else if (id < LIVE_BASE) {
              if (id <= lp[0] || r.timestamp() < lp[1]) {
                err = p + "@" + r.offset() + ": backfill record " + id + " of " + k + " after " + lp[0];
                bad[1]++;
              }
              lp[0] = id;
              lp[1] = r.timestamp();
            } else {
              if (id <= lp[2]) {
                err = p + "@" + r.offset() + ": live record " + id + " of " + k + " after " + lp[2];
                bad[1]++;
              }
              lp[2] = id;
            }
          }
          if (err != null) {
            bad[0]++;
            if (errors.size() < 10) {
              errors.add(err);
            }
          }
        });
    double secs = (System.nanoTime() - t0) / 1e9;
    long missing = 0;
    long read = 0;
    for (int p = 0; p < o.partitions; p++) {
      for (long id : idAt[p]) {
        if (id == -1) {
          missing++;
        } else {
          read++;
        }
      }
    }
    long produced = backfillCount + liveTs.size();
    checks.check(
        "every offset from 0 to the marker read, every produced record once",
        missing == 0 && read == produced,
        String.format(
            Locale.ROOT,
            "%d records read in %.1f s (%d produced incl. %d markers), %d offsets missing",
            read,
            secs,
            produced,
            o.partitions,
            missing));
    checks.check(
        "every record's key, value and CreateTime as produced",
        bad[0] == 0,
        bad[0] == 0 ? "" : bad[0] + " bad records, first: " + String.join(" | ", errors));
    checks.check(
        "per-key order intact (backfill by id and timestamp, live by id), one partition per key",
        bad[1] == 0 && bad[0] == 0,
        keyPartition.size() + " accounts");
    summary.put("read_seconds", String.format(Locale.ROOT, "%.1f", secs));
  }

  /** Named [start, end) windows in ms. */
  private Map<String, long[]> windows() {
    long liveMin = Long.MAX_VALUE;
    long liveMax = Long.MIN_VALUE;
    for (Map.Entry<Long, Long> e : liveTs.entrySet()) {
      if (e.getKey() < MARKER_BASE) {
        liveMin = Math.min(liveMin, e.getValue());
        liveMax = Math.max(liveMax, e.getValue());
      }
    }
    Map<String, long[]> w = new LinkedHashMap<>();
    w.put("9d..8d ago", new long[] {now0 - 9 * DAY_MS, now0 - 8 * DAY_MS});
    w.put("8d-1h..7d+3h ago", new long[] {now0 - 8 * DAY_MS + HOUR_MS, now0 - SEVEN_DAYS_MS - 3 * HOUR_MS});
    w.put("7d+1h..7d-1h ago (empty gap)", new long[] {now0 - SEVEN_DAYS_MS - HOUR_MS, now0 - SEVEN_DAYS_MS + HOUR_MS});
    w.put("5d..4d ago", new long[] {now0 - 5 * DAY_MS, now0 - 4 * DAY_MS});
    w.put("last day (backfill tail + live)", new long[] {now0 - DAY_MS, liveMax + 1});
    w.put("live records only", new long[] {liveMin, liveMax + 1});
    return w;
  }

  /**
   * Counts the records read (offsets from {@code from[p]} on; the caller has checked that
   * those were read through the broker and are the recorded ones) with a timestamp in each
   * window, and compares with what was produced in the window. Windows ending at or before
   * {@code onlyAfterMs} are skipped.
   */
  private void checkWindows(String when, long onlyAfterMs, long[] from) throws Exception {
    long[] lt = offsets(OffsetSpec.latestTiered());
    for (Map.Entry<String, long[]> e : windows().entrySet()) {
      long s = e.getValue()[0];
      long en = e.getValue()[1];
      if (en <= onlyAfterMs) {
        continue;
      }
      long produced = 0;
      for (long id = 0; id < backfillCount; id++) {
        long t = backfillTs(id);
        produced += t >= s && t < en ? 1 : 0;
      }
      for (Map.Entry<Long, Long> l : liveTs.entrySet()) {
        if (l.getKey() < MARKER_BASE) {
          produced += l.getValue() >= s && l.getValue() < en ? 1 : 0;
        }
      }
      long counted = 0;
      boolean allTiered = true;
      for (int p = 0; p < o.partitions; p++) {
        for (int off = (int) from[p]; off < tsAt[p].length; off++) {
          if (idAt[p][off] >= 0 && idAt[p][off] < MARKER_BASE && tsAt[p][off] >= s && tsAt[p][off] < en) {
            counted++;
            allTiered &= off <= lt[p];
          }
        }
      }
      checks.check(
          "records with timestamp in window " + e.getKey() + when + " = produced",
          counted == produced,
          String.format(
              Locale.ROOT,
              "[%s, %s): %d counted, %d produced%s",
              Instant.ofEpochMilli(s),
              Instant.ofEpochMilli(en),
              counted,
              produced,
              allTiered && counted > 0 ? ", all in tiered segments" : ""));
    }
  }

  /** First offset in partition p with timestamp >= ts (Kafka's ListOffsets semantics), or -1. */
  private long firstAtOrAfter(int p, long ts) {
    for (int off = 0; off < tsAt[p].length; off++) {
      if (idAt[p][off] >= 0 && tsAt[p][off] >= ts) {
        return off;
      }
    }
    return -1;
  }

  private void checkOffsetsForTimes() throws Exception {
    console.heading("offsetsForTimes inside the tiered range");
    long[] targets = {
      now0 - 9 * DAY_MS + 1, now0 - 8 * DAY_MS - 7 * HOUR_MS, now0 - SEVEN_DAYS_MS,
      now0 - 3 * DAY_MS - 11 * HOUR_MS, now0 - 6 * HOUR_MS,
    };
    int asked = 0;
    List<String> wrong = new ArrayList<>();
    long[] lt = offsets(OffsetSpec.latestTiered());
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps("cutover-times"))) {
      for (long t : targets) {
        Map<TopicPartition, Long> req = new HashMap<>();
        for (TopicPartition tp : tps) {
          req.put(tp, t);
        }
        Map<TopicPartition, OffsetAndTimestamp> res = c.offsetsForTimes(req, Duration.ofSeconds(60));
        for (int p = 0; p < o.partitions; p++) {
          long want = firstAtOrAfter(p, t);
          OffsetAndTimestamp got = res.get(tps.get(p));
          long g = got == null ? -1 : got.offset();
          asked++;
          if (g != want && wrong.size() < 10) {
            wrong.add("p" + p + " ts " + Instant.ofEpochMilli(t) + ": got " + g + ", want " + want);
          }
          if (want > lt[p] && wrong.size() < 10) {
            wrong.add("p" + p + " ts " + Instant.ofEpochMilli(t) + ": answer " + want + " not in tiered range");
          }
        }
      }
    }
    checks.check(
        "offsetsForTimes in the tiered range returns the first offset at or after the time",
        wrong.isEmpty(),
        wrong.isEmpty() ? asked + " lookups" : String.join(" | ", wrong));
  }

  // ------------------------------------------------------------------ retention

  /** The remote segments of the topic, complete (.log + .indexes + .rsm-manifest), by partition. */
  private List<Seg> remoteSegments() throws Exception {
    console.heading("remote segments in " + store.describe());
    Map<String, Set<String>> parts = new TreeMap<>();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      parts.clear();
      for (RemoteStore.RemoteObject ob : store.list(objectFragment())) {
        int dot = ob.key().lastIndexOf('.');
        if (dot > 0) {
          parts.computeIfAbsent(ob.key().substring(0, dot), x -> new HashSet<>()).add(ob.key().substring(dot + 1));
        }
      }
      boolean complete = parts.values().stream().allMatch(s -> s.equals(Set.of("log", "indexes", "rsm-manifest")));
      if (complete || System.nanoTime() > deadline) {
        checks.check(
            "every remote segment is .log + .indexes + .rsm-manifest",
            complete && !parts.isEmpty(),
            parts.size() + " segments");
        break;
      }
      Thread.sleep(1000);
    }
    // <topic>-<id>/<partition>/<startOffset:020>-<segmentId>
    Map<Integer, TreeMap<Long, String>> byPart = new TreeMap<>();
    for (String stem : parts.keySet()) {
      String rel = stem.substring(stem.indexOf(objectFragment()) + objectFragment().length());
      String[] pp = rel.split("/");
      int p = Integer.parseInt(pp[0]);
      long start = Long.parseLong(pp[1].substring(0, 20));
      byPart.computeIfAbsent(p, x -> new TreeMap<>()).put(start, stem);
    }
    // The last remote segment ends at latest-tiered (inclusive): usually the marker's
    // predecessor, or the marker itself when local retention rolled its segment too.
    long[] lt = offsets(OffsetSpec.latestTiered());
    List<Seg> segs = new ArrayList<>();
    for (Map.Entry<Integer, TreeMap<Long, String>> e : byPart.entrySet()) {
      int p = e.getKey();
      List<Long> starts = new ArrayList<>(e.getValue().keySet());
      for (int i = 0; i < starts.size(); i++) {
        long start = starts.get(i);
        long end = i + 1 < starts.size() ? starts.get(i + 1) : Math.min(lt[p], markerOffset[p]) + 1;
        long maxTs = Long.MIN_VALUE;
        for (long off = start; off < end; off++) {
          maxTs = Math.max(maxTs, tsAt[p][(int) off]);
        }
        segs.add(new Seg(p, start, end, e.getValue().get(start), maxTs));
      }
    }
    long covered = segs.stream().mapToLong(s -> s.end() - s.start()).sum();
    long before = 0;
    for (int p = 0; p < o.partitions; p++) {
      before += Math.min(lt[p], markerOffset[p]) + 1;
    }
    checks.check(
        "remote segments cover every offset up to latest-tiered (at least up to the markers)",
        covered == before && byPart.size() == o.partitions && segs.stream().allMatch(x -> x.end() > x.start()),
        String.format(Locale.ROOT, "%d segments over %d partitions cover %d of %d offsets", segs.size(), byPart.size(), covered, before));
    summary.put("remote_segments", Integer.toString(segs.size()));
    return segs;
  }

  private void restoreRetention(List<Seg> segs) throws Exception {
    console.heading("cutover done: retention.ms=" + SEVEN_DAYS_MS + " (7 days)");
    long cutoff = System.currentTimeMillis() - SEVEN_DAYS_MS;
    // Kafka deletes remote segments by time in offset order, from the oldest, while their
    // max timestamp is past the cutoff: per partition, the leading run of all-old segments.
    Set<String> expectGone = new HashSet<>();
    Set<String> expectKept = new HashSet<>();
    long[] newStart = new long[o.partitions];
    Set<Integer> blocked = new HashSet<>();
    Set<String> oldButBlocked = new HashSet<>();
    for (Seg s : segs) {
      boolean old = s.maxTs() < cutoff;
      if (old && !blocked.contains(s.partition())) {
        expectGone.add(s.stem());
        newStart[s.partition()] = s.end();
      } else {
        blocked.add(s.partition());
        if (old) {
          oldButBlocked.add(s.stem());
        } else {
          expectKept.add(s.stem());
        }
      }
    }
    StringBuilder p0 = new StringBuilder();
    for (Seg s : segs) {
      if (s.partition() == 0) {
        p0.append(String.format(Locale.ROOT, " [%d,%d) newest %.1f d ago%s;", s.start(), s.end(),
            (System.currentTimeMillis() - s.maxTs()) / (double) DAY_MS, expectGone.contains(s.stem()) ? " (expires)" : ""));
      }
    }
    console.line("  partition 0 remote segments:%s", p0);
    console.line(
        "  %d segments have only records older than 7 days and lead their partition, %d are newer,"
            + " %d are old but follow a newer one",
        expectGone.size(),
        expectKept.size(),
        oldButBlocked.size());
    summary.put("segments_old_behind_newer", Integer.toString(oldButBlocked.size()));
    if (o.backfillFirst) {
      checks.check(
          "--backfill-first: no all-old segment is held back by a newer one",
          oldButBlocked.isEmpty(),
          oldButBlocked.size() + " all-old segments behind newer ones");
    }
    if (expectGone.isEmpty()) {
      throw new AbortRun("the data produced no segment whose records are all older than 7 days (more --size or --old-fraction)");
    }
    summary.put("segments_expected_deleted", Integer.toString(expectGone.size()));
    long t0 = System.nanoTime();
    alterTopic("retention.ms", Long.toString(SEVEN_DAYS_MS));
    long deadline = t0 + TimeUnit.SECONDS.toNanos(o.deleteTimeoutSec);
    Set<String> present;
    while (true) {
      present = new HashSet<>();
      for (RemoteStore.RemoteObject ob : store.list(objectFragment())) {
        int dot = ob.key().lastIndexOf('.');
        present.add(dot > 0 ? ob.key().substring(0, dot) : ob.key());
      }
      long left = expectGone.stream().filter(present::contains).count();
      if (left == 0) {
        break;
      }
      if (System.nanoTime() > deadline) {
        throw new AbortRun(
            left + " of " + expectGone.size() + " segments older than 7 days still in the bucket "
                + o.deleteTimeoutSec + " s after retention.ms=7d (see the broker log: RemoteLogManager)");
      }
      Thread.sleep(1000);
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    checks.check(
        "segments older than 7 days left the bucket (all three objects each)",
        true,
        String.format(Locale.ROOT, "%d segments gone after %.1f s", expectGone.size(), secs));
    summary.put("retention_delete_seconds", String.format(Locale.ROOT, "%.1f", secs));
    // Give the broker a few more cleaner rounds (interval 1 s) to delete anything it should not.
    Thread.sleep(5000);
    present.clear();
    Map<String, Integer> objs = new HashMap<>();
    for (RemoteStore.RemoteObject ob : store.list(objectFragment())) {
      int dot = ob.key().lastIndexOf('.');
      objs.merge(ob.key().substring(0, dot), 1, Integer::sum);
    }
    List<String> lost = new ArrayList<>();
    for (String k : expectKept) {
      if (objs.getOrDefault(k, 0) != 3) {
        lost.add(k);
      }
    }
    checks.check(
        "segments with records newer than 7 days stay in the bucket",
        lost.isEmpty(),
        lost.isEmpty() ? expectKept.size() + " segments kept" : lost.size() + " gone, e.g. " + lost.get(0));
    List<String> lostOld = new ArrayList<>();
    for (String k : oldButBlocked) {
      if (objs.getOrDefault(k, 0) != 3) {
        lostOld.add(k);
      }
    }
    checks.check(
        "old segments behind a segment with newer records stay (Kafka expires in offset order)",
        lostOld.isEmpty(),
        lostOld.isEmpty()
            ? oldButBlocked.size() + " segments kept"
            : lostOld.size() + " gone, e.g. " + lostOld.get(0));
    long[] earliest = offsets(OffsetSpec.earliest());
    checks.check(
        "log start offsets moved to the first kept segment",
        Arrays.equals(earliest, newStart),
        "earliest " + Arrays.toString(earliest) + ", expected " + Arrays.toString(newStart));
    // Read the rest again: same record at every offset.
    long[] from = Arrays.copyOf(earliest, o.partitions);
    long[] bad = {0, 0};
    List<String> errors = new ArrayList<>();
    readRange(
        "cutover-read-kept",
        from,
        r -> {
          bad[1]++;
          String err = verify(r);
          if (err == null && RecordGen.idOf(r.value()) != idAt[r.partition()][(int) r.offset()]) {
            err = r.partition() + "@" + r.offset() + ": another record than before the retention change";
          }
          if (err != null) {
            bad[0]++;
            if (errors.size() < 5) {
              errors.add(err);
            }
          }
        });
    long want = 0;
    for (int p = 0; p < o.partitions; p++) {
      want += markerOffset[p] + 1 - earliest[p];
    }
    checks.check(
        "the kept data reads back unchanged from the new log start offsets",
        bad[0] == 0 && bad[1] == want,
        bad[1] + " of " + want + " records read" + (errors.isEmpty() ? "" : ", " + String.join(" | ", errors)));
    checkWindows(" after retention=7d", cutoff + 2 * HOUR_MS, earliest);
  }

  private void checkMeters() throws Exception {
    Map<String, Long> m = jmx.snapshot();
    console.line("  broker meters: %s", m);
    for (String n : List.of(BrokerJmx.COPY_ERRORS, BrokerJmx.FETCH_ERRORS, BrokerJmx.DELETE_ERRORS)) {
      checks.check("broker " + n + " is 0", m.get(n) == 0, "Count=" + m.get(n));
    }
    checks.check(
        "broker copied and fetched remote bytes",
        m.get(BrokerJmx.COPY_BYTES) > 0 && m.get(BrokerJmx.FETCH_BYTES) > 0,
        "RemoteCopyBytes=" + m.get(BrokerJmx.COPY_BYTES) + ", RemoteFetchBytes=" + m.get(BrokerJmx.FETCH_BYTES));
  }

  private void writeSummary() {
    if (o.summaryFile == null) {
      return;
    }
    try (FileWriter w = new FileWriter(o.summaryFile, StandardCharsets.UTF_8)) {
      for (Map.Entry<String, String> e : summary.entrySet()) {
        w.write(e.getKey() + "=" + e.getValue() + "\n");
      }
    } catch (IOException e) {
      console.line("could not write %s: %s", o.summaryFile, e);
    }
  }
}
