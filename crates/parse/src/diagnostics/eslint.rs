//! `eslint` (directly or as `npx eslint`): its problems as `Diagnostics`, from the default
//! `stylish` format or from `-f json` / `-f json-with-metadata`, ESLint's machine formats.
//!
//! JSON is read as such: an array of files, each with its messages (`ruleId`, `severity` 1 or
//! 2, `message`, `line`, `column`). Stylish is a table per file: the file's path on a line of
//! its own, then one row per problem, `  3:7  error  message  rule-id`, columns padded with
//! spaces, then a blank line, and at the end `✖ 2 problems (1 error, 1 warning)`. The rule is
//! the last column when there is one (a parsing error has none); it is told from the message
//! by its shape, a single word of the characters rule names use, after two or more spaces.
//! Stylish drops a message's final period; JSON keeps it. The counts of the closing line are
//! checked against the rows read (they differ only if a row was misread, and then the parser
//! refuses), and are taken as they are when a filter may have dropped rows. `--max-warnings`
//! adds a line on stderr saying why the exit code is 1 with no error; it becomes the summary.

use serde::Deserialize;

use super::shared::{no_message, number, quote};
use super::{Diagnostic, Diagnostics, Severity};
use crate::{Context, Output, Parser, Stage, Typed};

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    let args = super::tsc::run_by_name(stage, "eslint")?;
    const REFUSED: &[&str] = &[
        "-o",
        "--output-file",
        "-h",
        "--help",
        "-v",
        "--version",
        "--print-config",
        "--init",
        "--env-info",
        "--inspect-config",
        "--mcp",
    ];
    let mut json = false;
    let mut words = args.iter().map(String::as_str);
    while let Some(word) = words.next() {
        let name = word.split('=').next().unwrap_or(word);
        if REFUSED.contains(&name) {
            return None;
        }
        let format = match word {
            "-f" | "--format" => words.next()?,
            _ => match word.strip_prefix("--format=") {
                Some(format) => format,
                None => continue,
            },
        };
        json = match format {
            "stylish" => false,
            "json" | "json-with-metadata" => true,
            _ => return None,
        };
    }
    Some(Box::new(EslintParser { json }))
}

struct EslintParser {
    json: bool,
}

impl Parser for EslintParser {
    fn type_name(&self) -> &'static str {
        "Diagnostics"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        let too_many = out
            .stderr
            .lines()
            .find(|l| l.starts_with("ESLint found too many warnings"));
        let (records, summary) = if self.json && !out.stdout.trim().is_empty() {
            let records = from_json(out.stdout).map_err(|why| match filtered {
                true => "the filter after `eslint -f json` cut its JSON".to_owned(),
                false => why,
            })?;
            (records, None)
        } else {
            stylish(out.stdout, filtered)?
        };
        if records.is_empty() && summary.is_none() {
            // ESLint's crash banner says nothing; the lines after it say what went wrong.
            let banner =
                |l: &&str| l.starts_with("Oops! Something went wrong") || l.starts_with("ESLint: ");
            let stderr: Vec<&str> = out.stderr.lines().filter(|l| !banner(l)).collect();
            let stderr = stderr.join("\n");
            let out = Output {
                stderr: &stderr,
                ..*out
            };
            if let Some(why) = no_message("eslint", &out, filtered) {
                return Err(why);
            }
        }
        let counted = summary
            .as_ref()
            .map(|(_, errors, warnings)| (*errors, *warnings));
        let line = too_many
            .map(str::to_owned)
            .or(summary.map(|(line, _, _)| line));
        let mut result = Diagnostics::counted("eslint", records, line);
        if let Some((errors, warnings)) = counted {
            let read = (result.summary.errors, result.summary.warnings);
            if !filtered && read != (errors, warnings) {
                return Err(format!(
                    "eslint counted {errors} errors and {warnings} warnings, but {} and {} were read",
                    read.0, read.1
                ));
            }
            (result.summary.errors, result.summary.warnings) = (errors, warnings);
        }
        Ok(Typed::new(result))
    }
}

/// The closing line as printed, with its error and warning counts.
type Closing = (String, u64, u64);

fn stylish(stdout: &str, filtered: bool) -> Result<(Vec<Diagnostic>, Option<Closing>), String> {
    let mut records = Vec::new();
    let mut file: Option<&str> = None;
    let mut summary: Option<Closing> = None;
    for (n, line) in stdout.lines().enumerate() {
        let refuse = || {
            format!(
                "line {} is not in eslint's stylish format: `{}`",
                n + 1,
                quote(line)
            )
        };
        if line.trim().is_empty() {
            continue;
        }
        if let Some(counts) = line.strip_prefix("✖ ") {
            let (errors, warnings) = closing_counts(counts).ok_or_else(refuse)?;
            summary = Some((line.trim_end().to_owned(), errors, warnings));
            continue;
        }
        if !line.starts_with(' ') {
            if summary.is_some() {
                return Err(refuse());
            }
            file = Some(line.trim_end());
            continue;
        }
        if summary.is_some()
            && line
                .trim_end()
                .ends_with("potentially fixable with the `--fix` option.")
        {
            continue;
        }
        let mut record = row(line).ok_or_else(refuse)?;
        if file.is_none() && !filtered {
            return Err(refuse());
        }
        record.file = file.map(str::to_owned);
        records.push(record);
    }
    Ok((records, summary))
}

/// `10 problems (7 errors, 3 warnings)` → (7, 3).
fn closing_counts(text: &str) -> Option<(u64, u64)> {
    let (_, counts) = text.split_once(" (")?;
    let (errors, warnings) = counts.strip_suffix(')')?.split_once(", ")?;
    let count = |text: &str, word: &str| {
        let (n, rest) = number(text)?;
        matches!(rest.strip_prefix(' ')?.strip_prefix(word)?, "" | "s").then_some(n)
    };
    Some((count(errors, "error")?, count(warnings, "warning")?))
}

/// `  3:7  error  'x' is assigned a value but never used  no-unused-vars`.
fn row(line: &str) -> Option<Diagnostic> {
    let rest = line.trim_start();
    let (row, rest) = number(rest)?;
    let (column, rest) = number(rest.strip_prefix(':')?)?;
    let rest = rest.strip_prefix("  ")?.trim_start();
    let (word, rest) = rest.split_once(' ')?;
    let severity = match word {
        "error" => Severity::Error,
        "warning" => Severity::Warning,
        _ => return None,
    };
    let rest = rest.trim();
    let (message, rule) = match rest.rsplit_once("  ") {
        Some((message, rule)) if is_rule(rule) && !message.trim().is_empty() => {
            (message.trim_end(), Some(rule))
        }
        _ => (rest, None),
    };
    if message.is_empty() {
        return None;
    }
    Some(Diagnostic {
        severity,
        message: message.to_owned(),
        code: rule.map(str::to_owned),
        file: None,
        // Stylish prints 0:0 for a problem with no place (a file ignored by a pattern).
        line: (row > 0).then_some(row),
        column: (column > 0).then_some(column),
        notes: Vec::new(),
    })
}

/// `no-unused-vars`, `@typescript-eslint/no-explicit-any`, `react-hooks/rules-of-hooks`.
fn is_rule(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 100
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/' | '@' | '.'))
}

#[derive(Deserialize)]
#[serde(untagged)]
enum JsonReport {
    Files(Vec<JsonFile>),
    WithMetadata { results: Vec<JsonFile> },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonFile {
    file_path: String,
    messages: Vec<JsonMessage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonMessage {
    rule_id: Option<String>,
    severity: u8,
    message: String,
    line: Option<u64>,
    column: Option<u64>,
}

fn from_json(stdout: &str) -> Result<Vec<Diagnostic>, String> {
    let report: JsonReport = serde_json::from_str(stdout.trim())
        .map_err(|e| format!("stdout is not eslint's JSON report: {e}"))?;
    let (JsonReport::Files(files) | JsonReport::WithMetadata { results: files }) = report;
    let mut records = Vec::new();
    for file in files {
        for message in file.messages {
            let severity = match message.severity {
                2 => Severity::Error,
                1 => Severity::Warning,
                _ => Severity::Info,
            };
            records.push(Diagnostic {
                severity,
                message: message
                    .message
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
                code: message.rule_id,
                file: Some(file.file_path.clone()),
                line: message.line.filter(|l| *l > 0),
                column: message.column.filter(|c| *c > 0),
                notes: Vec::new(),
            });
        }
    }
    Ok(records)
}

#[cfg(test)]
#[path = "eslint_tests.rs"]
mod tests;
