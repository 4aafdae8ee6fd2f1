//! `Diagnostics`: what compilers and linters report, one record per message, with the file,
//! line, column, severity, code and message, and the counts. Each tool's format has its own
//! module; where a tool has a machine format (`cargo --message-format=json`) it is read as such.

use schemars::JsonSchema;
use serde::Serialize;

use crate::{Parser, Stage};

pub(crate) mod cargo;
pub(crate) mod eslint;
mod flags;
pub(crate) mod gcc;
pub(crate) mod go;
mod location;
mod shared;
pub(crate) mod tsc;

/// Compiler or linter messages.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Diagnostics {
    /// The tool that reported them: cargo, rustc, gcc, clang, tsc, eslint or go.
    pub tool: String,
    /// Counts over every message, including any left out of `diagnostics` for length.
    pub summary: Summary,
    /// One record per message, in the order reported.
    pub diagnostics: Vec<Diagnostic>,
}

/// How many messages of each severity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Summary {
    /// Messages of severity error.
    pub errors: u64,
    /// Messages of severity warning.
    pub warnings: u64,
    /// The tool's own closing line, when it printed one ("error: could not compile `x`").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
}

/// One message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Diagnostic {
    /// How serious it is.
    pub severity: Severity,
    /// The message's first line, as the tool wrote it.
    pub message: String,
    /// The tool's code for it: `E0308`, `-Wunused-variable`, `TS2322`, `no-unused-vars`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The file, as the tool printed it (relative to the directory it ran in, usually).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u64>,
    /// Notes and help attached to the message (`help: consider borrowing here`), one per line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// How serious a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Note,
    Help,
    Info,
}

impl Diagnostics {
    /// Counts `diagnostics` into `summary.errors` and `summary.warnings`.
    pub fn counted(tool: &str, diagnostics: Vec<Diagnostic>, line: Option<String>) -> Diagnostics {
        let count = |s: Severity| diagnostics.iter().filter(|d| d.severity == s).count() as u64;
        Diagnostics {
            tool: tool.to_owned(),
            summary: Summary {
                errors: count(Severity::Error),
                warnings: count(Severity::Warning),
                line,
            },
            diagnostics,
        }
    }
}

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    cargo::recognize(stage)
        .or_else(|| gcc::recognize(stage))
        .or_else(|| tsc::recognize(stage))
        .or_else(|| eslint::recognize(stage))
        .or_else(|| go::recognize(stage))
}
