//! The one list of typed results. Each entry of [`parse_types!`] below declares a type whole:
//! its Rust type, name and records array (the [`TypedResult`] impl), what it holds (for
//! `resources/list`), the commands it is made from (for the `parse` parameter's description),
//! the fields the model's text skips, and the family `recognize` that picks its parser. A new
//! type is one new entry; there is no second table to forget.
//!
//! One order serves both `resources/list` and recognition. Recognition could depend on it only
//! if two families took the same command line, and none does (cargo's `test`/`nextest` and its
//! `build`/`check`/`clippy` are told apart by the subcommand, `go test` and `go build`/`vet`
//! likewise, jest and tsc/eslint by the program `npx` runs); the unit test
//! `no_command_is_taken_by_two_types` keeps that true over every fixture's command line.

use crate::{Parser, Stage, TypedResult};

/// The `recognize` of a family module: the parser for a producer's flags, or `None`.
pub(crate) type Recognize = fn(&Stage) -> Option<Box<dyn Parser>>;

/// One typed result.
pub struct TypeInfo {
    /// `"DirectoryListing"`: the `type` of `parsed`, the last part of its schema URI.
    pub name: &'static str,
    /// The top-level array a result too large for the budget is cut in, whole records at a time.
    pub records: &'static str,
    /// What it holds, for `resources/list`.
    pub description: &'static str,
    /// The commands it is made from, as the model would type them (`git status`): one item of
    /// the list in [`parse_param_description`](crate::parse_param_description).
    pub commands: &'static str,
    /// Fields the model's text leaves out because another field says the same (see
    /// `model_text`): `"field"` at the top, `"records.field"` in each record.
    pub model_skips: &'static [&'static str],
    schema: fn() -> schemars::Schema,
    recognize: Recognize,
}

/// Declares every typed result once: its [`TypedResult`] impl and its [`TYPES`] entry.
macro_rules! parse_types {
    ($(
        $type:ty {
            name: $name:literal,
            records: $records:ident of $record:ty,
            commands: $commands:literal,
            recognize: $recognize:path,
            model_skips: [$($skip:literal),* $(,)?],
            description: $description:literal $(,)?
        }
    )*) => {
        $(
            impl TypedResult for $type {
                const NAME: &'static str = $name;
                const RECORDS: &'static str = stringify!($records);
                type Record = $record;
                fn records(&mut self) -> &mut Vec<$record> {
                    &mut self.$records
                }
            }
        )*

        /// Every type a parser may return, in the order `resources/list` shows them (and the
        /// order families are asked in, which no command line depends on: see the module).
        pub const TYPES: &[TypeInfo] = &[$(
            TypeInfo {
                name: <$type as TypedResult>::NAME,
                records: <$type as TypedResult>::RECORDS,
                description: $description,
                commands: $commands,
                model_skips: &[$($skip),*],
                schema: || schemars::schema_for!($type),
                recognize: $recognize,
            },
        )*];
    };
}

parse_types! {
    crate::ls::DirectoryListing {
        name: "DirectoryListing",
        records: entries of crate::ls::Entry,
        commands: "ls -l",
        recognize: crate::ls::recognize,
        model_skips: ["entries.mode"],
        description: "`ls -l` and its variants: one entry per file, sizes in bytes, times RFC 3339 and epoch",
    }
    crate::ps::ProcessList {
        name: "ProcessList",
        records: processes of crate::ps::Process,
        commands: "ps",
        recognize: crate::ps::recognize,
        model_skips: ["columns", "processes.started"],
        description: "`ps aux`, `ps -ef`, `ps -eo …`: one record per process, columns named by the header or the flags",
    }
    crate::curl::HttpResponseHeader {
        name: "HttpResponseHeader",
        records: responses of crate::curl::Response,
        commands: "curl -I",
        recognize: crate::curl::recognize,
        model_skips: [],
        description: "`curl -I`: status and headers of each response, redirects included",
    }
    crate::git_status::GitStatus {
        name: "GitStatus",
        records: files of crate::git_status::FileStatus,
        commands: "git status",
        recognize: crate::git_status::recognize,
        model_skips: [],
        description: "`git status` (porcelain v1/v2 or plain): branch, upstream, and each changed file",
    }
    crate::git_log::GitLog {
        name: "GitLog",
        records: commits of crate::git_log::Commit,
        commands: "git log",
        recognize: crate::git_log::recognize,
        model_skips: [],
        description: "`git log` (default or --oneline): one record per commit",
    }
    crate::df::DiskUsage {
        name: "DiskUsage",
        records: filesystems of crate::df::FileSystem,
        commands: "df",
        recognize: crate::df::recognize,
        model_skips: [],
        description: "`df`, `df -h`: one record per file system, sizes in bytes",
    }
    crate::free::MemoryUsage {
        name: "MemoryUsage",
        records: rows of crate::free::MemoryRow,
        commands: "free",
        recognize: crate::free::recognize,
        model_skips: [],
        description: "`free`, `free -m`, `free -h`: memory and swap rows, sizes in bytes",
    }
    crate::diagnostics::Diagnostics {
        name: "Diagnostics",
        records: diagnostics of crate::diagnostics::Diagnostic,
        commands: "cargo/gcc/tsc/eslint/go",
        recognize: crate::diagnostics::recognize,
        model_skips: [],
        description: "compiler and linter messages (cargo, rustc, gcc, clang, tsc, eslint, go): file, line, column, severity, code, message, and the summary",
    }
    crate::test_report::TestReport {
        name: "TestReport",
        records: failures of crate::test_report::Failure,
        commands: "cargo test/pytest/go test/jest",
        recognize: crate::test_report::recognize,
        model_skips: [],
        description: "test runs (cargo test, nextest, pytest, go test, jest, vitest): counts, each failure with its first lines, duration",
    }
}

/// `agentty://schema/<name>`.
pub fn schema_uri(name: &str) -> String {
    format!("agentty://schema/{name}")
}

/// The JSON Schema of type `name`, or `None` for a name not in [`TYPES`].
pub fn schema(name: &str) -> Option<serde_json::Value> {
    let info = TYPES.iter().find(|t| t.name == name)?;
    let mut value = serde_json::to_value((info.schema)()).ok()?;
    if let Some(object) = value.as_object_mut() {
        object.insert("$id".into(), schema_uri(name).into());
    }
    Some(value)
}

/// The fields the model's text leaves out for type `name`.
pub(crate) fn model_skips(name: &str) -> &'static [&'static str] {
    TYPES
        .iter()
        .find(|t| t.name == name)
        .map_or(&[], |t| t.model_skips)
}

/// The columns of a records table the model's text leaves out for type `name` (its
/// `records.field` skips, by field name).
pub(crate) fn record_skips(name: &str) -> Vec<&'static str> {
    model_skips(name)
        .iter()
        .filter_map(|s| s.split_once('.').map(|(_, field)| field))
        .collect()
}

/// Asks each type's family in turn; the first that knows the producer's flags wins.
pub(crate) fn parser_for(producer: &Stage) -> Option<Box<dyn Parser>> {
    TYPES.iter().find_map(|t| (t.recognize)(producer))
}

/// The description of the server's `parse` parameter: what it does, for which commands (each
/// type's [`TypeInfo::commands`], in [`TYPES`] order), where the schemas are, and what other
/// commands get. Made from the list so a new type is named to the model without a second edit.
pub fn parse_param_description() -> String {
    let commands: Vec<&str> = TYPES.iter().map(|t| t.commands).collect();
    format!(
        "Typed JSON instead of text for {}: record tables, shared values in \"same\". \
         Schemas: {} resources. Others: text and a note.",
        commands.join(", "),
        schema_uri("<Type>"),
    )
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
