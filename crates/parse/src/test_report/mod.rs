//! `TestReport`: what a test run says: counts, each failure with its first lines, the duration.
//! Each runner's format has its own module; where a runner has a machine format
//! (`go test -json`) it is read as such.

use schemars::JsonSchema;
use serde::Serialize;

use crate::diagnostics::Diagnostic;
use crate::{Parser, Stage};

pub(crate) mod cargo;
pub(crate) mod go;
pub(crate) mod jest;
pub(crate) mod pytest;

/// The outcome of a test run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TestReport {
    /// The runner: cargo, nextest, pytest, go, jest or vitest.
    pub tool: String,
    /// passed: every test ran and passed; failed: a test failed; error: the run did not get to
    /// run the tests (a build failed, a collection error).
    pub outcome: Outcome,
    /// Tests that passed.
    pub passed: u64,
    /// Tests that failed (each is in `failures`, unless cut for length).
    pub failed: u64,
    /// Skipped or ignored tests.
    pub skipped: u64,
    /// The whole run's duration as the runner reported it, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
    /// One record per failed test, in the order reported.
    pub failures: Vec<Failure>,
    /// When the tests could not be built: the compiler's messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub build_errors: Vec<Diagnostic>,
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
    Error,
}

/// One failed test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Failure {
    /// The test's full name as the runner prints it (`tests::adds`, `test_x.py::test_y`).
    pub name: String,
    /// Where it failed, when the runner said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The first lines of its failure message (at most 10), as printed.
    pub message: String,
}

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    cargo::recognize(stage)
        .or_else(|| pytest::recognize(stage))
        .or_else(|| go::recognize(stage))
        .or_else(|| jest::recognize(stage))
}
