//! The example properties block of crates/tsm-backend-s3/README.md loads through the
//! CLI's properties loader (`src/props.rs`, the same code `tsm --config` runs) and
//! validates as plugin configuration (tsm-core) and S3 backend configuration, both as
//! written and with its commented-out `#rsm.config.*` examples switched on: a value with
//! a trailing `# comment` is not a valid properties value.

use crate::util::repo_file;

/// The lines between the README's first ```` ```properties ```` fence and the next fence.
fn properties_block(readme: &str) -> String {
    let mut lines = readme.lines().skip_while(|l| l.trim() != "```properties");
    assert!(lines.next().is_some(), "no ```properties block");
    let block: Vec<&str> = lines.take_while(|l| l.trim() != "```").collect();
    assert!(!block.is_empty(), "empty ```properties block");
    block.join("\n") + "\n"
}

/// Loads `text` as `tsm --config FILE --set chunk.size=...` does, then validates it.
fn load(text: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("s3.properties");
    std::fs::write(&file, text).map_err(|e| e.to_string())?;
    // The README shows the backend keys only; chunk.size is the one required core key.
    let props = crate::props::load(Some(&file), &["chunk.size=4194304".to_string()])
        .map_err(|e| e.to_string())?;
    let cfg = tsm_core::config::RsmConfig::from_props(props, tsm_backends::KINDS)
        .map_err(|e| e.to_string())?;
    if cfg.backend.name != "s3" {
        return Err(format!("backend {}", cfg.backend.name));
    }
    tsm_backend_s3::S3Config::from_storage_config(&cfg.storage).map_err(|e| e.to_string())?;
    Ok(())
}

#[test]
fn s3_readme_properties_load() {
    let readme = std::fs::read_to_string(repo_file("crates/tsm-backend-s3/README.md"))
        .expect("read the README");
    let block = properties_block(&readme);
    load(&block).unwrap_or_else(|e| panic!("README block:\n{block}\n{e}"));
    let enabled: String = block
        .lines()
        .map(|l| {
            l.strip_prefix('#')
                .filter(|r| r.starts_with("rsm.config."))
                .unwrap_or(l)
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(enabled, block, "the block has commented-out examples");
    load(&enabled).unwrap_or_else(|e| panic!("README block, examples on:\n{enabled}\n{e}"));
    // The check has teeth: a trailing comment after a value is refused.
    let broken = format!("{block}rsm.config.storage.s3.multipart.upload.parts.in.flight=4  # x\n");
    assert!(load(&broken).is_err(), "{broken}");
}
