package io.tsm.brokertest;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Options of the {@code cutover} subcommand (issue 10): a backfilled, tiered payments topic
 * whose retention goes from -1 to 7 days after the cutover. See {@link CutoverScenario}.
 */
@Command(
    name = "cutover",
    mixinStandardHelpOptions = true,
    description =
        "Backfill 9 days of keyed history (old CreateTime timestamps) plus live records into a"
            + " tiered topic with retention.ms=-1, check that nothing leaves the bucket and that"
            + " everything reads back (offsets, per-key order, time windows, offsetsForTimes),"
            + " then set retention.ms to 7 days and check that exactly the segments older than"
            + " 7 days leave the bucket.")
final class Cutover extends BrokerRunOptions implements Callable<Integer> {
  @Option(
      names = "--jmx-url",
      required = true,
      description = "JMX service URL of the broker (its remote copy/fetch/delete error meters)")
  String jmxUrl;

  @Option(names = "--topic", description = "topic name (default: payments-<random>)")
  String topic;

  @Option(names = "--partitions", defaultValue = "24")
  int partitions;

  @Option(
      names = "--size",
      defaultValue = "40MiB",
      description = "bytes of backfill record values (default ${DEFAULT-VALUE})")
  String size;

  @Option(
      names = "--old-fraction",
      defaultValue = "0.7",
      description =
          "share of the backfill records stamped 9 to 7 days ago (the rest: the last 7 days);"
              + " must give more than one segment per partition (default ${DEFAULT-VALUE})")
  double oldFraction;

  @Option(names = "--min-record", defaultValue = "300", description = "min value size, bytes")
  int minRecord;

  @Option(names = "--max-record", defaultValue = "1500", description = "max value size, bytes")
  int maxRecord;

  @Option(names = "--accounts", defaultValue = "2000", description = "distinct account ids (keys)")
  int accounts;

  @Option(
      names = "--live-rate",
      defaultValue = "20",
      description = "live records per second while the backfill runs (default ${DEFAULT-VALUE})")
  int liveRate;

  @Option(
      names = "--backfill-first",
      description =
          "start the live producer only when the backfill is done (for ~3 s): no segment mixes"
              + " history with live records, so every all-old segment must expire at once")
  boolean backfillFirst;

  @Option(
      names = "--backfill-compression",
      defaultValue = "none",
      description =
          "compression.type of the backfill producer (default ${DEFAULT-VALUE}: segments fill"
              + " with as many records as bytes; zstd packs ~3x more history per segment)")
  String backfillCompression;

  @Option(
      names = "--retention-bytes",
      defaultValue = "1073741824",
      description = "retention.bytes per partition, large enough never to delete here")
  long retentionBytes;

  @Option(names = "--seed", defaultValue = "10")
  long seed;

  @Override
  public Integer call() {
    return new CutoverScenario(this).run() ? 0 : 1;
  }
}
