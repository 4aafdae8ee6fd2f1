//! `parse: true` (docs/BEHAVIOUR.md §8): which parser a call gets, decided from its command line
//! before it runs, and the typed result in its answer.
//!
//! Recognition reads the line the way the shell will run it (the guard's parse): the command
//! whose output reaches the result, the filters after it, and where its stdout and stderr go.
//! Set-up commands that print nothing may come first (`cd app && ls -l`). Anything else (two
//! commands printing, output redirected to a file, a line that did not parse cleanly) is
//! answered as text with one note saying why, never guessed at.

use agentty_guard::{Analysis, SimpleCommand};
use agentty_parse::{Context, Cut, Output, Parsed, Recognized, Stage};
use rmcp::schemars::{self, JsonSchema};
use serde::Serialize;

use super::notice;

/// Commands that print nothing on success, allowed before the one whose output is parsed.
const SILENT_SETUP: &[&str] = &["cd", "export", "set", "unset", "umask", "true", ":"];

/// What a call's output will be parsed as.
#[derive(Debug)]
pub struct Plan {
    pub recognized: Recognized,
    /// The producer's stderr is sent into its stdout (`2>&1`): both streams arrive as one.
    pub merged: bool,
}

/// `structuredContent.parsed`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ParsedContent {
    /// The type's name, e.g. "DirectoryListing".
    #[serde(rename = "type")]
    pub type_name: String,
    /// The type's JSON Schema, an MCP resource: agentty://schema/<type>.
    pub schema: String,
    /// The typed data; validates against `schema`.
    pub data: serde_json::Value,
    /// Records left out to fit the 50 KB budget, from the middle of the type's records array:
    /// the first `omitted_at` records are the first ones, those after them the last ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted: Option<u64>,
    /// Where in the records array the left-out ones were (with `omitted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted_at: Option<u64>,
}

impl ParsedContent {
    /// As JSON, `data` moved rather than copied.
    pub fn into_value(self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        map.insert("type".into(), self.type_name.into());
        map.insert("schema".into(), self.schema.into());
        map.insert("data".into(), self.data);
        if let Some(omitted) = self.omitted {
            map.insert("omitted".into(), omitted.into());
        }
        if let Some(at) = self.omitted_at {
            map.insert("omitted_at".into(), at.into());
        }
        serde_json::Value::Object(map)
    }
}

/// The parser for a call's command line, as the guard read it; `argv`: the call's argv, when
/// it ran one without a shell (its producer is then that argv, as given).
pub fn recognize(line: &Analysis, argv: Option<&[String]>) -> Result<Plan, String> {
    match argv {
        Some(argv) => recognize_argv(argv),
        None => plan(line),
    }
}

/// The parser for an `argv` run without a shell.
fn recognize_argv(argv: &[String]) -> Result<Plan, String> {
    let stage = Stage::from_argv(argv).ok_or_else(|| notice::NOT_PARSED_EMPTY.to_owned())?;
    agentty_parse::recognize(&[stage])
        .map(|recognized| Plan {
            recognized,
            merged: false,
        })
        .map_err(|e| e.to_string())
}

fn plan(analysis: &Analysis) -> Result<Plan, String> {
    let (stages, merged) = stages(analysis)?;
    let recognized = agentty_parse::recognize(&stages).map_err(|e| e.to_string())?;
    Ok(Plan { recognized, merged })
}

/// The stages of the one pipeline whose output reaches the result, and whether its producer
/// sends stderr into stdout.
fn stages(analysis: &Analysis) -> Result<(Vec<Stage>, bool), String> {
    if !analysis.exact || analysis.too_deep.is_some() {
        return Err(notice::NOT_PARSED_UNCLEAR.into());
    }
    let commands = &analysis.commands;
    // Commands inside `$(…)` print into a word of another command, not onto the output.
    let inner: std::collections::HashSet<usize> = commands
        .iter()
        .flat_map(|c| c.inner.iter().copied())
        .collect();
    let printing: Vec<&SimpleCommand> = commands
        .iter()
        .enumerate()
        .filter(|(i, _)| !inner.contains(i))
        .map(|(_, c)| c)
        .skip_while(|c| is_silent_setup(c))
        .collect();
    if printing
        .iter()
        .any(|c| c.background || c.function.is_some() || c.argv.is_empty())
    {
        return Err(notice::NOT_PARSED_SHAPE.into());
    }
    let Some(first) = printing.first() else {
        return Err(notice::NOT_PARSED_EMPTY.into());
    };
    // One command, or one pipeline whose stages are listed in order.
    let same_pipeline = match first.pipeline {
        None => printing.len() == 1,
        Some((id, _)) => printing
            .iter()
            .enumerate()
            .all(|(i, c)| c.pipeline == Some((id, i as u32))),
    };
    if !same_pipeline {
        return Err(notice::NOT_PARSED_SHAPE.into());
    }
    if printing.iter().any(|c| stdout_leaves(c)) {
        return Err(notice::NOT_PARSED_REDIRECTED.into());
    }
    let merged = first
        .redirects
        .iter()
        .any(|r| r.fd == Some(2) && r.op == ">&" && r.target == "1");
    let stages: Vec<Stage> = printing
        .iter()
        .filter_map(|c| Stage::from_argv(&c.argv))
        .collect();
    Ok((stages, merged))
}

fn is_silent_setup(c: &SimpleCommand) -> bool {
    SILENT_SETUP.contains(&c.program.as_str())
        && c.pipeline.is_none_or(|(_, stage)| stage == 0)
        && c.redirects.is_empty()
        && c.inner.is_empty()
}

/// Whether the command's stdout goes somewhere other than the next stage or the result: a
/// file (`> out`, `&> log`) or stderr (`>&2`).
fn stdout_leaves(c: &SimpleCommand) -> bool {
    c.redirects.iter().any(|r| {
        let on_stdout = matches!(r.fd, None | Some(1));
        if on_stdout && r.op == ">&" {
            // `>&2` or `>& file`: either way not onto the output.
            return true;
        }
        (on_stdout && r.op.starts_with('>') || r.op.starts_with("&>")) && r.writes()
    })
}

/// Parses a finished run's whole output, keeping as many whole records as fit in `max_bytes`.
pub fn parse(
    plan: &Plan,
    whole: &agentty_core::run::Whole,
    exit_code: Option<i32>,
    max_bytes: usize,
) -> Result<(Parsed, Option<Cut>), String> {
    if whole.stdout.len() + whole.stderr.len() > agentty_core::limits::PARSE_INPUT_MAX_BYTES {
        return Err(notice::not_parsed_too_big());
    }
    // With `2>&1` both streams arrive in stdout, and stderr holds nothing of the producer's
    // (what is there came from a filter): the parsers read stdout for what the tool writes on
    // stderr when stderr is empty.
    let output = Output {
        stdout: &whole.stdout,
        stderr: if plan.merged { "" } else { &whole.stderr },
        exit_code,
    };
    plan.recognized.parse_within(&output, &context(), max_bytes)
}

/// `agentty parse`: what a call with `parse: true` would return, for output captured elsewhere
/// (raw bytes, cleaned here as a call's are). One word is a command line, several an argv.
/// Never cut to the budget.
pub fn offline(
    command: &[String],
    stdout: &[u8],
    stderr: &[u8],
    exit_code: Option<i32>,
) -> Result<ParsedContent, String> {
    let plan = match command {
        [] => return Err(notice::NOT_PARSED_EMPTY.into()),
        [line] => plan(&Analysis::of_line(line, None))?,
        argv => recognize_argv(argv)?,
    };
    let clean = |bytes: &[u8]| {
        let mut cleaner = agentty_core::Cleaner::new();
        let mut text = cleaner.feed(bytes).to_owned();
        text.push_str(cleaner.finish());
        text
    };
    let whole = agentty_core::run::Whole {
        stdout: clean(stdout),
        stderr: clean(stderr),
    };
    let (parsed, _) = parse(&plan, &whole, exit_code, usize::MAX)?;
    Ok(ParsedContent {
        type_name: parsed.type_name.to_owned(),
        schema: agentty_parse::schema_uri(parsed.type_name),
        data: parsed.data,
        omitted: None,
        omitted_at: None,
    })
}

/// Now, in the server's local zone: what `ls -l` prints its year-less dates in.
fn context() -> Context {
    Context {
        now: chrono::Local::now().fixed_offset(),
    }
}

/// The typed result in the answer: `structuredContent.parsed`, and the compact JSON the model
/// reads (records as tables, the form the budget was measured on).
pub fn answer(parsed: Parsed, cut: Option<Cut>) -> (ParsedContent, String) {
    let json = parsed.model_text();
    let content = ParsedContent {
        type_name: parsed.type_name.to_owned(),
        schema: agentty_parse::schema_uri(parsed.type_name),
        data: parsed.data,
        omitted: cut.map(|c| c.omitted as u64),
        omitted_at: cut.map(|c| c.head as u64),
    };
    (content, json)
}

#[cfg(test)]
#[path = "parsed_tests.rs"]
mod tests;
