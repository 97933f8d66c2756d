package io.tsm.brokertest;

import picocli.CommandLine.Option;

/**
 * Options every broker scenario takes ({@code tiering}, {@code cutover}): where the broker and
 * the plugin's objects are, the topic's segment and local-retention settings, how long to wait
 * for the broker, and output. picocli picks up these inherited fields in each subcommand.
 */
abstract class BrokerRunOptions {
  @Option(names = "--bootstrap", required = true, description = "host:port of the broker")
  String bootstrap;

  @Option(
      names = "--remote-store",
      required = true,
      description =
          "where the plugin's objects are: filesystem:<storage.root>, s3:<endpoint>/<bucket>,"
              + " gcs:<endpoint>/<bucket>, azure:<endpoint>/<container>")
  String remoteStore;

  @Option(names = "--segment-bytes", defaultValue = "1048576")
  int segmentBytes;

  @Option(names = "--local-retention-ms", defaultValue = "1000")
  long localRetentionMs;

  @Option(names = "--tier-timeout", defaultValue = "300", description = "seconds")
  int tierTimeoutSec;

  @Option(names = "--stall-timeout", defaultValue = "120", description = "seconds")
  int stallTimeoutSec;

  @Option(names = "--delete-timeout", defaultValue = "180", description = "seconds")
  int deleteTimeoutSec;

  @Option(names = "--fancy", description = "progress bars and colours (a terminal)")
  boolean fancy;

  @Option(names = "--summary-file", description = "write key=value results here")
  String summaryFile;
}
