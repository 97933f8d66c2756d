package io.tsm.brokertest;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * Deterministic records: everything about record {@code id} (key, value, timestamp) is a pure
 * function of the id and the seed, so a consumer can regenerate and compare every record it
 * reads without keeping what was produced.
 *
 * <p>Ids {@code [0, mainCount)} are the main data: key {@code acct-<id % numKeys>} (so the
 * default partitioner sends a key always to the same partition), a text-like value of
 * {@code minSize..maxSize} bytes (compressible about 3x, like JSON payloads) that starts with
 * the 8-byte id and contains {@link #MARKER}. Ids from {@code mainCount} on are padding
 * records (key {@code pad-<id>}, {@link #PAD_SIZE} random incompressible bytes after the id)
 * written to a chosen partition to roll the segment that holds the end of the main data.
 *
 * <p>Timestamps: {@code baseTimestampMs + id * timestampStepMs} (ms since the epoch).
 */
final class RecordGen {
  /** Bytes that appear in every main value: visible in a stored object only if it is plain. */
  static final byte[] MARKER = "<tsm-plaintext-marker>".getBytes(StandardCharsets.US_ASCII);

  /** Size of a padding record's value, bytes. */
  static final int PAD_SIZE = 64 * 1024;

  private static final String[] WORDS = {
    "account", "amount", "currency", "EUR", "USD", "GBP", "status", "settled", "pending",
    "merchant", "card", "present", "terminal", "region", "eu-west", "us-east", "risk",
    "score", "low", "high", "reference", "payment", "refund", "chargeback", "ledger",
    "balance", "{", "}", "\"", ":", ",", "true", "false", "null", "channel", "mobile", "web",
    "batch", "sequence", "created", "updated", "customer", "country", "FR", "DE", "NL", "IT",
  };

  final long seed;
  final int numKeys;
  final long mainCount;
  final int minSize;
  final int maxSize;
  final long baseTimestampMs;
  final long timestampStepMs;

  RecordGen(
      long seed,
      int numKeys,
      long mainCount,
      int minSize,
      int maxSize,
      long baseTimestampMs,
      long timestampStepMs) {
    if (minSize < 8 + MARKER.length || maxSize < minSize) {
      throw new IllegalArgumentException(
          "record sizes must satisfy " + (8 + MARKER.length) + " <= min <= max");
    }
    this.seed = seed;
    this.numKeys = numKeys;
    this.mainCount = mainCount;
    this.minSize = minSize;
    this.maxSize = maxSize;
    this.baseTimestampMs = baseTimestampMs;
    this.timestampStepMs = timestampStepMs;
  }

  /** Number of main records whose values add up to at least {@code bytes}. */
  static long countForBytes(long seed, int minSize, int maxSize, long bytes) {
    RecordGen probe = new RecordGen(seed, 1, Long.MAX_VALUE, minSize, maxSize, 0, 0);
    long n = 0;
    long sum = 0;
    while (sum < bytes) {
      sum += probe.valueSize(n);
      n++;
    }
    return n;
  }

  boolean isPadding(long id) {
    return id >= mainCount;
  }

  byte[] key(long id) {
    String k = isPadding(id) ? "pad-" + id : "acct-" + (id % numKeys);
    return k.getBytes(StandardCharsets.US_ASCII);
  }

  long timestamp(long id) {
    return baseTimestampMs + id * timestampStepMs;
  }

  int valueSize(long id) {
    if (isPadding(id)) {
      return 8 + PAD_SIZE;
    }
    long span = (long) maxSize - minSize + 1;
    return minSize + (int) Math.floorMod(mix(seed ^ 0x5bd1e995L, id), span);
  }

  byte[] value(long id) {
    int size = valueSize(id);
    ByteBuffer buf = ByteBuffer.allocate(size);
    buf.putLong(id);
    SplittableRandom r = new SplittableRandom(mix(seed, id));
    if (isPadding(id)) {
      byte[] noise = new byte[size - 8];
      r.nextBytes(noise);
      buf.put(noise);
      return buf.array();
    }
    buf.put(MARKER);
    while (buf.hasRemaining()) {
      byte[] w = WORDS[r.nextInt(WORDS.length)].getBytes(StandardCharsets.US_ASCII);
      int n = Math.min(w.length, buf.remaining());
      buf.put(w, 0, n);
      if (buf.hasRemaining()) {
        // Some digits: amounts, ids. Keeps the ratio near real payloads.
        buf.put(r.nextInt(4) == 0 ? (byte) ('0' + r.nextInt(10)) : (byte) ' ');
      }
    }
    return buf.array();
  }

  /** The id carried in the first 8 bytes of a value, or -1 if the value is too short. */
  static long idOf(byte[] value) {
    if (value == null || value.length < 8) {
      return -1;
    }
    return ByteBuffer.wrap(value, 0, 8).getLong();
  }

  /** CRC32C of key and value: summed over records, an order-independent content checksum. */
  static long crc(byte[] key, byte[] value) {
    CRC32C c = new CRC32C();
    if (key != null) {
      c.update(key);
    }
    c.update(0);
    if (value != null) {
      c.update(value);
    }
    return c.getValue();
  }

  private static long mix(long seed, long id) {
    long z = seed + id * 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
