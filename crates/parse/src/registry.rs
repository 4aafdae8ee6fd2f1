//! The one table of typed results: each type's name, its records array, its schema, and the
//! family module that recognises the commands producing it.

use crate::{Parser, Stage, TypedResult};

/// One typed result.
pub struct TypeInfo {
    /// `"DirectoryListing"`: the `type` of `parsed`, the last part of its schema URI.
    pub name: &'static str,
    /// The top-level array a result too large for the budget is cut in, whole records at a time.
    pub records: &'static str,
    /// What it holds, for `resources/list`.
    pub description: &'static str,
    /// Fields the model's text leaves out because another field says the same (see
    /// `model_text`): `"field"` at the top, `"records.field"` in each record.
    pub model_skips: &'static [&'static str],
    schema: fn() -> schemars::Schema,
}

/// Every type a parser may return, in the order `resources/list` shows them.
pub const TYPES: &[TypeInfo] = &[
    TypeInfo {
        name: <crate::ls::DirectoryListing as TypedResult>::NAME,
        records: <crate::ls::DirectoryListing as TypedResult>::RECORDS,
        description: "`ls -l` and its variants: one entry per file, sizes in bytes, times RFC 3339 and epoch",
        model_skips: &["entries.mode"],
        schema: || schemars::schema_for!(crate::ls::DirectoryListing),
    },
    TypeInfo {
        name: <crate::ps::ProcessList as TypedResult>::NAME,
        records: <crate::ps::ProcessList as TypedResult>::RECORDS,
        description: "`ps aux`, `ps -ef`, `ps -eo …`: one record per process, columns named by the header or the flags",
        model_skips: &["columns", "processes.started"],
        schema: || schemars::schema_for!(crate::ps::ProcessList),
    },
    TypeInfo {
        name: <crate::curl::HttpResponseHeader as TypedResult>::NAME,
        records: <crate::curl::HttpResponseHeader as TypedResult>::RECORDS,
        description: "`curl -I`: status and headers of each response, redirects included",
        model_skips: &[],
        schema: || schemars::schema_for!(crate::curl::HttpResponseHeader),
    },
    TypeInfo {
        name: <crate::git_status::GitStatus as TypedResult>::NAME,
        records: <crate::git_status::GitStatus as TypedResult>::RECORDS,
        description: "`git status` (porcelain v1/v2 or plain): branch, upstream, and each changed file",
        model_skips: &[],
        schema: || schemars::schema_for!(crate::git_status::GitStatus),
    },
    TypeInfo {
        name: <crate::git_log::GitLog as TypedResult>::NAME,
        records: <crate::git_log::GitLog as TypedResult>::RECORDS,
        description: "`git log` (default or --oneline): one record per commit",
        model_skips: &[],
        schema: || schemars::schema_for!(crate::git_log::GitLog),
    },
    TypeInfo {
        name: <crate::df::DiskUsage as TypedResult>::NAME,
        records: <crate::df::DiskUsage as TypedResult>::RECORDS,
        description: "`df`, `df -h`: one record per file system, sizes in bytes",
        model_skips: &[],
        schema: || schemars::schema_for!(crate::df::DiskUsage),
    },
    TypeInfo {
        name: <crate::free::MemoryUsage as TypedResult>::NAME,
        records: <crate::free::MemoryUsage as TypedResult>::RECORDS,
        description: "`free`, `free -m`, `free -h`: memory and swap rows, sizes in bytes",
        model_skips: &[],
        schema: || schemars::schema_for!(crate::free::MemoryUsage),
    },
    TypeInfo {
        name: <crate::diagnostics::Diagnostics as TypedResult>::NAME,
        records: <crate::diagnostics::Diagnostics as TypedResult>::RECORDS,
        description: "compiler and linter messages (cargo, rustc, gcc, clang, tsc, eslint, go): file, line, column, severity, code, message, and the summary",
        model_skips: &[],
        schema: || schemars::schema_for!(crate::diagnostics::Diagnostics),
    },
    TypeInfo {
        name: <crate::test_report::TestReport as TypedResult>::NAME,
        records: <crate::test_report::TestReport as TypedResult>::RECORDS,
        description: "test runs (cargo test, nextest, pytest, go test, jest, vitest): counts, each failure with its first lines, duration",
        model_skips: &[],
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

/// The fields the model's text leaves out for type `name`.
pub(crate) fn model_skips(name: &str) -> &'static [&'static str] {
    TYPES
        .iter()
        .find(|t| t.name == name)
        .map_or(&[], |t| t.model_skips)
}

/// Each type's name and records array, known to the budget (see [`TypedResult`]).
macro_rules! typed_result {
    ($($type:ty => $name:literal, $records:ident: $record:ty;)*) => {$(
        impl TypedResult for $type {
            const NAME: &'static str = $name;
            const RECORDS: &'static str = stringify!($records);
            type Record = $record;
            fn records(&mut self) -> &mut Vec<$record> {
                &mut self.$records
            }
        }
    )*};
}

typed_result! {
    crate::ls::DirectoryListing => "DirectoryListing", entries: crate::ls::Entry;
    crate::ps::ProcessList => "ProcessList", processes: crate::ps::Process;
    crate::curl::HttpResponseHeader => "HttpResponseHeader", responses: crate::curl::Response;
    crate::git_status::GitStatus => "GitStatus", files: crate::git_status::FileStatus;
    crate::git_log::GitLog => "GitLog", commits: crate::git_log::Commit;
    crate::df::DiskUsage => "DiskUsage", filesystems: crate::df::FileSystem;
    crate::free::MemoryUsage => "MemoryUsage", rows: crate::free::MemoryRow;
    crate::diagnostics::Diagnostics => "Diagnostics", diagnostics: crate::diagnostics::Diagnostic;
    crate::test_report::TestReport => "TestReport", failures: crate::test_report::Failure;
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
