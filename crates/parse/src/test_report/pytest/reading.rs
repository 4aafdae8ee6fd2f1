//! One pass over pytest's stdout: which section each line is in, the `FAILURES`/`ERRORS`
//! blocks filed by name, the failures named by the short summary or by `-v`, and the closing
//! line; then the failures matched to their blocks. The node ids the model can rerun come from
//! the names; a block is matched to its node id by the name pytest derives from it
//! (`TestGroup.test_param[2]` for `test_x.py::TestGroup::test_param[2]`), in order.

use std::collections::{HashMap, VecDeque};

use super::lines::{
    Block, Named, Summary, block_header, closing_line, read_block_line, section_title,
    summary_entry, verbose_result,
};
use crate::test_report::Failure;

/// At most this many lines of a failure's message are kept.
const MESSAGE_LINES: usize = 10;

/// What the pass over stdout found.
#[derive(Default)]
pub(super) struct Reading<'a> {
    /// The last closing line.
    pub(super) summary: Option<Summary>,
    /// The title of the section the pass is in.
    section: &'a str,
    /// pytest said it stopped early (`Interrupted: …`).
    pub(super) interrupted: bool,
    summary_names: Vec<Named<'a>>,
    verbose_names: Vec<Named<'a>>,
    /// Blocks by (is an error, name), in order; and the order of all headers.
    blocks: HashMap<(bool, String), VecDeque<Block<'a>>>,
    headers: Vec<(bool, &'a str)>,
    /// The blocks of modules that could not be collected, by module.
    pub(super) collection: Vec<(&'a str, Block<'a>)>,
    /// The block being read: whether it is an error's, its name, what it holds so far.
    current: Option<(bool, &'a str, Block<'a>)>,
}

impl<'a> Reading<'a> {
    pub(super) fn of(stdout: &'a str) -> Reading<'a> {
        let mut reading = Reading::default();
        for line in stdout.lines() {
            reading.line(line);
        }
        reading.file_block();
        reading
    }

    fn line(&mut self, line: &'a str) {
        let title = section_title(line);
        let header = block_header(line);
        if title.is_some() || header.is_some() {
            self.file_block();
        }
        if let Some(counts) = closing_line(line) {
            self.summary = Some(counts);
        }
        if let Some(title) = title {
            self.section = title;
            if title.starts_with("Interrupted: ") {
                self.interrupted = true;
            }
            return;
        }
        if line.starts_with('!') && line.contains("Interrupted: ") {
            self.interrupted = true;
        }
        let section = self.section;
        if let Some(name) = header.filter(|_| section == "FAILURES" || section == "ERRORS") {
            let error = section == "ERRORS";
            let name = name
                .strip_prefix("ERROR at setup of ")
                .or_else(|| name.strip_prefix("ERROR at teardown of "))
                .unwrap_or(name);
            if !name.starts_with("ERROR collecting ") {
                self.headers.push((error, name));
            }
            self.current = Some((error, name, Block::default()));
        } else if let Some((_, _, block)) = self.current.as_mut() {
            read_block_line(block, line);
        } else if let Some(named) = summary_entry(line)
            // Out of its section (a filter dropped the title) only a node id is trusted.
            .filter(|n| section == "short test summary info" || n.id.contains("::"))
        {
            self.summary_names.push(named);
        } else if let Some(named) = verbose_result(line) {
            self.verbose_names.push(named);
        }
    }

    /// Files the block being read under its test's name, or, for `ERROR collecting x.py`,
    /// under the module that could not be collected.
    fn file_block(&mut self) {
        if let Some((error, name, block)) = self.current.take() {
            match name.strip_prefix("ERROR collecting ") {
                Some(module) => self.collection.push((module, block)),
                None => self
                    .blocks
                    .entry((error, name.to_owned()))
                    .or_default()
                    .push_back(block),
            }
        }
    }

    /// Modules that could not be collected: the short summary's errors without a test in
    /// their node id, or the collection blocks, whichever says more.
    pub(super) fn collection_errors(&self) -> u64 {
        let named = self
            .summary_names
            .iter()
            .filter(|n| n.error && !n.id.contains("::"))
            .count();
        (named.max(self.collection.len())) as u64
    }

    /// Each failed test, named by the short summary, else by `-v`'s results, else by the
    /// block headers, with what its block says.
    pub(super) fn failures(&mut self) -> Vec<Failure> {
        let mut summary_names = std::mem::take(&mut self.summary_names);
        summary_names.retain(|n| n.id.contains("::"));
        let named = if summary_names.is_empty() {
            std::mem::take(&mut self.verbose_names)
        } else {
            summary_names
        };
        let mut failures: Vec<Failure> = Vec::new();
        if named.is_empty() {
            for (error, name) in std::mem::take(&mut self.headers) {
                let block = self
                    .blocks
                    .get_mut(&(error, name.to_owned()))
                    .and_then(VecDeque::pop_front);
                failures.push(failure(name, block.as_ref(), None));
            }
        } else {
            for entry in &named {
                let key = block_name(entry.id);
                let block = self
                    .blocks
                    .get_mut(&(entry.error, key))
                    .and_then(VecDeque::pop_front);
                failures.push(failure(entry.id, block.as_ref(), entry.message));
            }
        }
        failures
    }
}

/// The header pytest prints for a node id: the part after the module, `::` as `.`.
fn block_name(id: &str) -> String {
    id.split_once("::")
        .map_or(id, |(_, name)| name)
        .replace("::", ".")
}

fn failure(name: &str, block: Option<&Block>, summary_message: Option<&str>) -> Failure {
    let raised = block.map(|b| raised_text(&b.raised)).unwrap_or_default();
    let message = if raised.is_empty() {
        summary_message.unwrap_or_default().to_owned()
    } else {
        raised
    };
    let location = block.and_then(|b| b.location);
    Failure {
        name: name.to_owned(),
        file: location.map(|(file, _)| file.to_owned()),
        line: location.map(|(_, line)| line),
        message,
    }
}

/// The `E ` lines without the `E` and the indent of the first one.
fn raised_text(raised: &[&str]) -> String {
    let indent = raised.first().map_or(0, |l| l.len() - l.trim_start().len());
    let lines: Vec<&str> = raised
        .iter()
        .take(MESSAGE_LINES)
        .map(|l| {
            let spaces = l.len() - l.trim_start().len();
            l.get(spaces.min(indent)..).unwrap_or(l).trim_end()
        })
        .collect();
    lines.join("\n")
}
