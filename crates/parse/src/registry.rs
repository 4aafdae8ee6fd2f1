//! The one table of typed results: each type's name, its records array, its schema, and the
//! family module that recognises the commands producing it.

use crate::{Parser, Stage};

/// One typed result.
pub struct TypeInfo {
    /// `"DirectoryListing"`: the `type` of `parsed`, the last part of its schema URI.
    pub name: &'static str,
    /// The top-level array a result too large for the budget is cut in, whole records at a time.
    pub records: &'static str,
    /// What it holds, for `resources/list`.
    pub description: &'static str,
    schema: fn() -> schemars::Schema,
}

/// Every type a parser may return, in the order `resources/list` shows them.
pub const TYPES: &[TypeInfo] = &[
    TypeInfo {
        name: "DirectoryListing",
        records: "entries",
        description: "`ls -l` and its variants: one entry per file, sizes in bytes, times RFC 3339 and epoch",
        schema: || schemars::schema_for!(crate::ls::DirectoryListing),
    },
    TypeInfo {
        name: "ProcessList",
        records: "processes",
        description: "`ps aux`, `ps -ef`, `ps -eo …`: one record per process, columns named by the header or the flags",
        schema: || schemars::schema_for!(crate::ps::ProcessList),
    },
    TypeInfo {
        name: "HttpResponseHeader",
        records: "responses",
        description: "`curl -I`: status and headers of each response, redirects included",
        schema: || schemars::schema_for!(crate::curl::HttpResponseHeader),
    },
    TypeInfo {
        name: "GitStatus",
        records: "files",
        description: "`git status` (porcelain v1/v2 or plain): branch, upstream, and each changed file",
        schema: || schemars::schema_for!(crate::git_status::GitStatus),
    },
    TypeInfo {
        name: "GitLog",
        records: "commits",
        description: "`git log` (default or --oneline): one record per commit",
        schema: || schemars::schema_for!(crate::git_log::GitLog),
    },
    TypeInfo {
        name: "DiskUsage",
        records: "filesystems",
        description: "`df`, `df -h`: one record per file system, sizes in bytes",
        schema: || schemars::schema_for!(crate::df::DiskUsage),
    },
    TypeInfo {
        name: "MemoryUsage",
        records: "rows",
        description: "`free`, `free -m`, `free -h`: memory and swap rows, sizes in bytes",
        schema: || schemars::schema_for!(crate::free::MemoryUsage),
    },
    TypeInfo {
        name: "Diagnostics",
        records: "diagnostics",
        description: "compiler and linter messages (cargo, rustc, gcc, clang, tsc, eslint, go): file, line, column, severity, code, message, and the summary",
        schema: || schemars::schema_for!(crate::diagnostics::Diagnostics),
    },
    TypeInfo {
        name: "TestReport",
        records: "failures",
        description: "test runs (cargo test, nextest, pytest, go test, jest, vitest): counts, each failure with its first lines, duration",
        schema: || schemars::schema_for!(crate::test_report::TestReport),
    },
];

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

/// The records key of type `name`.
pub(crate) fn records_key(name: &str) -> Option<&'static str> {
    TYPES.iter().find(|t| t.name == name).map(|t| t.records)
}

/// Asks each family in turn; the first that knows the producer's flags wins.
pub(crate) fn parser_for(producer: &Stage) -> Option<Box<dyn Parser>> {
    type Family = fn(&Stage) -> Option<Box<dyn Parser>>;
    const FAMILIES: &[Family] = &[
        crate::ls::recognize,
        crate::ps::recognize,
        crate::curl::recognize,
        crate::git_status::recognize,
        crate::git_log::recognize,
        crate::df::recognize,
        crate::free::recognize,
        crate::test_report::recognize,
        crate::diagnostics::recognize,
    ];
    FAMILIES.iter().find_map(|family| family(producer))
}
