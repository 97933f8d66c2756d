//! `tsm-bench report`: results -> markdown.
use crate::record::Record;

/// Renders `records` as markdown.
pub fn render(records: &[Record]) -> String {
    format!("{} results\n", records.len())
}
