//! One module per command. Each takes the parsed arguments and a [`Context`] (or nothing,
//! for `config docs` and `config check`), prints its report through [`crate::output::Output`] and returns
//! `Ok` or a [`CliError`](crate::error::CliError) carrying the exit code.

pub(crate) mod config_check;
pub(crate) mod config_docs;
pub(crate) mod copy;
pub(crate) mod delete;
pub(crate) mod fetch;
pub(crate) mod gc;
pub(crate) mod inspect;
pub(crate) mod ls;
pub(crate) mod rekey;
pub(crate) mod verify;

use crate::cli::{Cli, Command, ConfigCommand};
use crate::context::{Context, RootPolicy};
use crate::error::CliResult;
use crate::output::Output;
use crate::props;
use crate::segment::Filter;
use tsm_core::config::KeyFiles;

/// Runs the command of `cli`.
pub(crate) async fn dispatch(cli: Cli) -> CliResult {
    let out = Output {
        json: cli.global.json,
        quiet: cli.global.quiet,
    };
    match &cli.command {
        Command::Config {
            command: ConfigCommand::Docs,
        } => return config_docs::run(out),
        Command::Config {
            command:
                ConfigCommand::Check {
                    file,
                    skip_key_files,
                },
        } => {
            let key_files = if *skip_key_files {
                KeyFiles::Skip
            } else {
                KeyFiles::Read
            };
            return config_check::run(out, file, key_files);
        }
        _ => {}
    }
    let props = props::load(cli.global.config.as_deref(), &cli.global.set)?;
    // Only an upload may start a new filesystem bucket directory (see context.rs).
    let root = match cli.command {
        Command::Copy(_) => RootPolicy::Create,
        _ => RootPolicy::MustExist,
    };
    let ctx = Context::new(props, root, out).await?;
    match cli.command {
        Command::Ls {
            select,
            orphans: false,
            ..
        } => ls::run(&ctx, &filter(select)).await,
        Command::Ls {
            select,
            orphans: true,
            older_than,
        } => {
            let older_than = older_than.unwrap_or(crate::orphans::DEFAULT_OLDER_THAN);
            ls::run_orphans(&ctx, &filter(select), older_than).await
        }
        Command::Inspect { segment } => inspect::run(&ctx, &segment).await,
        Command::Fetch {
            segment,
            range,
            index,
            output,
        } => fetch::run(&ctx, &segment, range.as_deref(), index.as_deref(), &output).await,
        Command::Verify {
            select,
            jobs,
            sample,
            seed,
            segments,
            since,
            yes,
        } => {
            let opts = verify::Options {
                jobs,
                sample,
                seed,
                segments,
                since,
                yes,
            };
            verify::run(&ctx, &filter(select), &opts).await
        }
        Command::Rekey {
            to,
            select,
            dry_run,
            limit,
        } => rekey::run(&ctx, &to, &filter(select), dry_run, limit).await,
        Command::Copy(args) => copy::run(&ctx, &args).await,
        Command::Delete { segment, dry_run } => delete::run(&ctx, &segment, dry_run).await,
        Command::Gc {
            older_than,
            select,
            dry_run,
            include_unknown_age,
        } => {
            let opts = gc::Options {
                older_than,
                dry_run,
                include_unknown_age,
            };
            gc::run(&ctx, &filter(select), &opts).await
        }
        Command::Config { .. } => Ok(()),
    }
}

fn filter(s: crate::cli::Selection) -> Filter {
    Filter {
        topic: s.topic,
        partition: s.partition,
    }
}
