//! The command line (clap derive). `tsm --help` and `tsm <command> --help` are generated
//! from these doc comments.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};

/// tsm: inspect, verify and repair tiered Kafka segments in object storage, without a
/// broker. Exit codes: 0 ok, 1 findings (bad segments) or a failed operation, 2 usage or
/// configuration error.
#[derive(Debug, Parser)]
#[command(name = "tsm", version, propagate_version = true)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command.
#[derive(Debug, Args)]
pub(crate) struct Global {
    /// Properties file: the broker's server.properties (keys `rsm.config.*` are used, the
    /// prefix stripped) or a file of `rsm.config.*` lines.
    #[arg(short, long, global = true, env = "TSM_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override one property, `key=value` (`rsm.config.` prefix optional); repeatable.
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print one JSON document on stdout instead of text (no progress bars).
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress bars.
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

/// Which segments to work on.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct Selection {
    /// Only segments of this topic.
    #[arg(long, short = 't')]
    pub topic: Option<String>,
    /// Only segments of this partition.
    #[arg(long, short = 'p')]
    pub partition: Option<i32>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List tiered segments: topic, partition, offsets, sizes, compression, key id. With
    /// `--orphans`: the `.log` / `.indexes` objects that belong to no committed segment.
    Ls {
        #[command(flatten)]
        select: Selection,
        /// List orphans instead: `.log` / `.indexes` objects whose `.rsm-manifest` does not
        /// exist (left by a copy that crashed), with size and age. Exit 0.
        #[arg(long)]
        orphans: bool,
        /// With --orphans: only segments whose youngest object is at least this old (90s,
        /// 30m, 2h, 1d; default 1h), so a copy in flight is not listed. Objects of unknown
        /// age are listed with age `?`.
        #[arg(long, value_name = "DURATION", requires = "orphans", value_parser = parse_duration)]
        older_than: Option<Duration>,
    },
    /// Show a segment's manifest, chunk table summary, index sizes and custom metadata.
    Inspect {
        /// Object key, `<topic>-<topicId>/<partition>/<startOffset>-<segmentId>`, or segment id
        /// (a segment id may start with `-`: base64url).
        #[arg(allow_hyphen_values = true)]
        segment: String,
    },
    /// Download and restore a segment (byte-identical to the original), a byte range of
    /// it, or one of its indexes.
    Fetch {
        /// Object key, `<topic>-<topicId>/<partition>/<startOffset>-<segmentId>`, or segment id
        /// (a segment id may start with `-`: base64url).
        #[arg(allow_hyphen_values = true)]
        segment: String,
        /// Inclusive byte range of the original segment, `START-END` or `START-`.
        #[arg(long, conflicts_with = "index")]
        range: Option<String>,
        /// An index instead of the log: offset, timestamp, producer-snapshot, leader-epoch,
        /// transaction (or the Java names OFFSET, TIMESTAMP, ...).
        #[arg(long)]
        index: Option<String>,
        /// Output file (`-` for stdout).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Check segments: manifest, chunks (authenticate, decompress), Kafka record batches
    /// (CRC32C, offsets), index sizes. Downloads every byte of each segment checked: on a
    /// remote bucket the download is estimated on stderr first (and, on a terminal, from
    /// 1 GiB on, confirmed). Exit 1 when any segment is bad.
    Verify {
        #[command(flatten)]
        select: Selection,
        /// Segments checked at a time (1 to 64); each holds one segment's fetch pipeline.
        #[arg(long, short = 'j', value_name = "N", default_value_t = crate::cmd::verify::DEFAULT_JOBS,
              value_parser = clap::value_parser!(u16).range(1..=64).map(usize::from))]
        jobs: usize,
        /// Check only N segments chosen at random among those selected (--seed to pick the
        /// same ones again; the seed used is printed).
        #[arg(long, value_name = "N")]
        sample: Option<usize>,
        /// Seed of --sample: the same seed over the same listing picks the same segments.
        #[arg(long, value_name = "SEED", requires = "sample")]
        seed: Option<u64>,
        /// Only these segments: segment ids, main paths
        /// (`<topic>-<topicId>/<partition>/<startOffset>-<segmentId>`) or object keys,
        /// comma-separated or repeated. One that names no segment is an error (exit 2).
        #[arg(
            long,
            value_name = "ID,...",
            value_delimiter = ',',
            allow_hyphen_values = true
        )]
        segments: Vec<String>,
        /// Only segments whose manifest was last modified since: a duration back from now
        /// (90s, 30m, 2h, 1d) or a UTC timestamp (2024-05-01, 2024-05-01T12:00:00Z,
        /// +HH:MM offsets accepted), from the store's listing.
        #[arg(long, value_name = "DURATION|TIMESTAMP", value_parser = crate::cmd::verify::parse_since)]
        since: Option<crate::cmd::verify::Since>,
        /// Do not ask before a large download (the estimate is still printed).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Re-wrap every segment's data key under another key pair, rewriting only the
    /// manifests' `encryption.dataKey`. Resumable and idempotent.
    Rekey {
        /// Target key-pair id (must be on the configured key ring).
        #[arg(long, value_name = "KEY_PAIR_ID")]
        to: String,
        #[command(flatten)]
        select: Selection,
        /// Report what would change; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Rewrite at most this many manifests, then stop (run again to continue).
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
    },
    /// Upload a local segment (its `.log` and the index files next to it) as the plugin
    /// would; for tests and backfills.
    Copy(CopyArgs),
    /// Delete a segment's three objects.
    Delete {
        /// Object key, `<topic>-<topicId>/<partition>/<startOffset>-<segmentId>`, or segment id
        /// (a segment id may start with `-`: base64url).
        #[arg(allow_hyphen_values = true)]
        segment: String,
        /// Report what would be deleted; delete nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Delete the orphans `tsm ls --orphans --older-than DURATION` lists: `.log` /
    /// `.indexes` objects without their `.rsm-manifest`. Never deletes a manifest or any
    /// object of a segment that has one.
    Gc {
        /// Required: only segments whose youngest object is at least this old (90s, 30m,
        /// 2h, 1d). Pick it longer than any copy can take.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        older_than: Option<Duration>,
        #[command(flatten)]
        select: Selection,
        /// Report what would be deleted; delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Also delete orphans whose age the store does not report (listed with age `?`).
        #[arg(long)]
        include_unknown_age: bool,
    },
    /// Configuration reference.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print the configuration reference (Markdown; docs/configuration.md) for the core and
    /// every backend linked into this build.
    Docs,
    /// Validate a properties file as the plugin would at `configure`, without contacting
    /// the store: exit 0 when every key is known and every value valid, else exit 2 with
    /// one line per problem naming the key (for an unknown key, the closest known key).
    /// Accepts bare keys (as the plugin receives them) or `rsm.config.`-prefixed ones (a
    /// broker's server.properties, whose other keys are left alone). Reads the key-pair
    /// files it names; never prints a secret value. `--config` and `--set` are not used.
    Check {
        /// The properties file.
        file: PathBuf,
        /// Do not open the key-pair files (each pair must still name both): for a
        /// configuration checked away from the broker, e.g. a Kubernetes manifest whose
        /// Secret is mounted only in the pod.
        #[arg(long)]
        skip_key_files: bool,
    },
}

/// `tsm copy` arguments.
#[derive(Debug, Args)]
pub(crate) struct CopyArgs {
    /// The segment's `.log` file; `.index`, `.timeindex`, `.snapshot`, `.txnindex` with
    /// the same base name are picked up when present (missing ones are stored empty).
    pub log: PathBuf,
    /// Topic name.
    #[arg(long, short = 't')]
    pub topic: String,
    /// Partition.
    #[arg(long, short = 'p')]
    pub partition: i32,
    /// Topic id (Kafka Uuid, 22 characters); random when absent.
    #[arg(long)]
    pub topic_id: Option<String>,
    /// Segment id (Kafka Uuid); random when absent.
    #[arg(long)]
    pub segment_id: Option<String>,
    /// First offset; by default the number in the file name (`00000000000000001234.log`).
    #[arg(long)]
    pub start_offset: Option<i64>,
    /// Leader-epoch checkpoint file (stored as the LEADER_EPOCH index); empty when absent.
    #[arg(long, value_name = "FILE")]
    pub leader_epoch_checkpoint: Option<PathBuf>,
}

/// `--older-than` values: `90s`, `30m`, `2h`, `1d`, `1h30m`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    crate::orphans::parse_duration(text)
}
