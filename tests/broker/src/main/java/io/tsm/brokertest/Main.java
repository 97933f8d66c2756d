package io.tsm.brokertest;

import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Entry point of the real-broker test driver. Subcommands:
 *
 * <ul>
 *   <li>{@code tiering}: the KIP-405 end-to-end scenario ({@link TieringScenario}).
 *   <li>{@code cutover}: the backfill and retention scenario ({@link CutoverScenario}).
 *   <li>{@code cluster ...}: the 3-broker migration scenario ({@link Cluster}).
 * </ul>
 *
 * Exit code 0 when every check passed, 1 when a check failed, 2 on bad usage.
 */
@Command(
    name = "tsm-broker-test",
    mixinStandardHelpOptions = true,
    subcommands = {Main.Tiering.class, Cutover.class, Cluster.class},
    description = "Drives a real Kafka broker with tiered storage and checks what it does.")
public final class Main implements Callable<Integer> {

  @Override
  public Integer call() {
    new CommandLine(this).usage(System.err);
    return 2;
  }

  public static void main(String[] args) {
    // Keep the Kafka clients quiet unless asked (slf4j-simple).
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    int rc = new CommandLine(new Main()).setCaseInsensitiveEnumValuesAllowed(true).execute(args);
    System.exit(rc);
  }

  /** Parses "20MiB", "512KiB", "1GiB", "20m", "1g" or plain bytes. */
  static long parseSize(String s) {
    String t = s.trim().toLowerCase(Locale.ROOT).replace("ib", "").replace("b", "");
    long mult = 1;
    if (t.endsWith("k")) {
      mult = 1024;
    } else if (t.endsWith("m")) {
      mult = 1024 * 1024;
    } else if (t.endsWith("g")) {
      mult = 1024L * 1024 * 1024;
    }
    if (mult != 1) {
      t = t.substring(0, t.length() - 1);
    }
    try {
      return (long) (Double.parseDouble(t.trim()) * mult);
    } catch (NumberFormatException e) {
      throw new CommandLine.TypeConversionException(
          "'" + s + "' is not a size (examples: 20MiB, 512KiB, 1GiB, 1048576)");
    }
  }

  /** The options of {@code tiering}; see {@link TieringScenario}. */
  @Command(
      name = "tiering",
      mixinStandardHelpOptions = true,
      description =
          "Create a tiered topic, produce, wait for tiering and local deletion, read everything"
              + " back from remote storage and verify it, then delete the topic.")
  static final class Tiering extends BrokerRunOptions implements Callable<Integer> {
    @Option(
        names = "--jmx-url",
        description = "JMX service URL of the broker (checks its remote error meters)")
    String jmxUrl;

    @Option(
        names = "--object-format",
        defaultValue = "tsm",
        description =
            "tsm: check the v1 object layout and manifests; opaque: only count objects"
                + " (another RSM, e.g. Kafka's LocalTieredStorage). Default: ${DEFAULT-VALUE}")
    String objectFormat;

    @Option(names = "--expect-compression", description = "manifests must say compression=true")
    boolean expectCompression;

    @Option(names = "--expect-encryption", description = "manifests must carry an encryption key")
    boolean expectEncryption;

    @Option(names = "--expect-key-id", description = "the active key-pair id in dataKey")
    String expectKeyId;

    @Option(names = "--topic", description = "topic name (default: tsm-e2e-<random>)")
    String topic;

    @Option(names = "--partitions", defaultValue = "2")
    int partitions;

    @Option(
        names = "--size",
        defaultValue = "20MiB",
        description = "bytes of record values to produce (default ${DEFAULT-VALUE})")
    String size;

    @Option(names = "--min-record", defaultValue = "200", description = "min value size, bytes")
    int minRecord;

    @Option(names = "--max-record", defaultValue = "2000", description = "max value size, bytes")
    int maxRecord;

    @Option(names = "--keys", defaultValue = "1000", description = "distinct record keys")
    int keys;

    @Option(
        names = "--producers",
        defaultValue = "none,zstd,lz4",
        split = ",",
        description = "one producer per compression.type, writing concurrently")
    String[] producers;

    @Option(
        names = "--tiny-fetch-records",
        defaultValue = "1500",
        description = "records per partition read with fetch.max.bytes=1")
    int tinyFetchRecords;

    @Option(names = "--keep-topic", description = "do not delete the topic at the end")
    boolean keepTopic;

    @Option(names = "--seed", defaultValue = "42")
    long seed;

    @Override
    public Integer call() throws Exception {
      TieringScenario s = new TieringScenario(this);
      return s.run() ? 0 : 1;
    }
  }
}
