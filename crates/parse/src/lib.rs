//! agentty-parse: typed results for the command outputs agents read most (docs/BEHAVIOUR.md §8).
//!
//! `ls -l` becomes a `DirectoryListing`, `ps aux | grep nginx` a `ProcessList`, a failing
//! `cargo build` a `Diagnostics`: the model reads facts instead of writing regexes to guess.
//!
//! Two steps, both pure:
//! 1. [`recognize`] looks at the command line as the shell will run it (the caller hands over
//!    the pipeline's stages, parsed by the guard): the program that produces the output, its
//!    flags, and the filters after it that keep the format (`grep`, `head`, `tail`, `sort`).
//!    Recognition never looks at the output, so an unknown command is never guessed at.
//! 2. [`Recognized::parse`] reads the cleaned output. A parser refuses (with one line saying
//!    why) rather than return facts it is not sure of.
//!
//! Every parser is a pure function over text: no I/O, no clock (the caller passes [`Context`]),
//! no regex, bounded work per byte, and no panic on any input (fuzzed in `tests`).
//!
//! Leaf crate: it depends on nothing of ours.

mod budget;
mod columns;
mod filters;
mod model_text;
mod registry;
#[cfg(test)]
mod testutil;
mod text;
pub mod time;

pub mod curl;
pub mod df;
pub mod diagnostics;
pub mod free;
pub mod git_log;
pub mod git_status;
pub mod ls;
pub mod ps;
pub mod test_report;

pub use budget::Cut;
pub(crate) use budget::Keeper;
pub use registry::{TYPES, TypeInfo, parse_param_description, schema, schema_uri};

/// One command of a pipeline, as the shell will run it: the program's basename and its
/// arguments (quotes removed, wrappers such as `sudo` already peeled by the guard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    pub program: String,
    pub args: Vec<String>,
}

impl Stage {
    /// A stage from a full argv (`argv[0]` is reduced to its basename).
    pub fn from_argv(argv: &[String]) -> Option<Stage> {
        let (first, rest) = argv.split_first()?;
        let program = first.rsplit('/').next().unwrap_or(first).to_owned();
        Some(Stage {
            program,
            args: rest.to_vec(),
        })
    }
}

/// The finished run, as the parsers read it: cleaned text (no escapes, `\r` collapsed).
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    pub stdout: &'a str,
    pub stderr: &'a str,
    pub exit_code: Option<i32>,
}

/// What a pure parser may not look up itself.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// Now, in the local time zone the command's dates are printed in (year-less `ls` dates).
    pub now: chrono::DateTime<chrono::FixedOffset>,
}

impl Context {
    /// Now as seconds since the epoch, in UTC (for callers without chrono).
    pub fn utc_at(epoch_seconds: i64) -> Option<Context> {
        chrono::DateTime::from_timestamp(epoch_seconds, 0).map(|now| Context {
            now: now.fixed_offset(),
        })
    }
}

/// What the output will be parsed as. Made by [`recognize`].
pub struct Recognized {
    parser: Box<dyn Parser>,
    /// A later stage (`grep`, `head`, `sort`, …) may have dropped or reordered lines.
    filtered: bool,
}

impl std::fmt::Debug for Recognized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recognized")
            .field("type", &self.parser.type_name())
            .field("filtered", &self.filtered)
            .finish()
    }
}

impl Recognized {
    /// The name of the type the output will be parsed into (`"DirectoryListing"`).
    pub fn type_name(&self) -> &'static str {
        self.parser.type_name()
    }

    /// Parses the run's output, whole; `Err` is one line for the model saying why nothing was
    /// parsed.
    pub fn parse(&self, out: &Output<'_>, ctx: &Context) -> Result<Parsed, String> {
        self.parser.parse(out, ctx, self.filtered)?.encode()
    }

    /// Parses the run's output and keeps as many whole records as fit in `max_bytes` of
    /// compact JSON (see [`Cut`]). Only the records kept are ever encoded, so the cost of a
    /// huge output is its parse, not a JSON tree of it.
    pub fn parse_within(
        &self,
        out: &Output<'_>,
        ctx: &Context,
        max_bytes: usize,
    ) -> Result<(Parsed, Option<Cut>), String> {
        let mut typed = self
            .parser
            .parse_within(out, ctx, self.filtered, max_bytes)?;
        let type_name = typed.value.type_name();
        let (data, cut) = typed
            .value
            .fit(max_bytes, typed.gap)
            .map_err(|e| format!("could not encode the parsed {type_name}: {e}"))?;
        let cut = cut.map(|cut| Cut {
            kept: cut.kept,
            omitted: cut.omitted + typed.omitted,
            head: cut.head,
        });
        Ok((Parsed { type_name, data }, cut))
    }
}

/// A typed result as JSON: `data` validates against the schema of `type_name` (see [`schema`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub type_name: &'static str,
    pub data: serde_json::Value,
}

/// One of the [`TYPES`], as its Rust type: its name and its records array (the one a result
/// too large for the budget is cut in). Implemented in `registry`, next to the table.
pub(crate) trait TypedResult: serde::Serialize + Send + 'static {
    const NAME: &'static str;
    const RECORDS: &'static str;
    type Record: serde::Serialize + Send;
    fn records(&mut self) -> &mut Vec<Self::Record>;
}

/// A parser's result, still a Rust value: encoded as JSON only once the caller's budget is
/// known, so a 1 MB listing is not made into a JSON tree only to be cut to 50 KB.
pub(crate) struct Typed {
    value: Box<dyn budget::Encode>,
    /// Records the parser already left out, past the budget it was given (see [`Keeper`]),
    /// and where: the index in the records array of the first record after them.
    omitted: usize,
    gap: Option<usize>,
}

impl std::fmt::Debug for Typed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Typed")
            .field(&self.value.type_name())
            .finish()
    }
}

impl Typed {
    pub(crate) fn new<T: TypedResult>(value: T) -> Typed {
        Typed {
            value: Box::new(value),
            omitted: 0,
            gap: None,
        }
    }

    /// A value whose records array holds what a [`Keeper`] kept; `omitted` more were read,
    /// between the records before `gap` and those from it on.
    pub(crate) fn kept<T: TypedResult>(value: T, omitted: usize, gap: Option<usize>) -> Typed {
        Typed {
            value: Box::new(value),
            omitted,
            gap,
        }
    }

    /// The whole value as JSON (the unit tests read it).
    #[cfg(test)]
    pub(crate) fn data(self) -> serde_json::Value {
        self.encode().map(|p| p.data).unwrap_or_default()
    }

    fn encode(self) -> Result<Parsed, String> {
        let type_name = self.value.type_name();
        self.value
            .to_value()
            .map(|data| Parsed { type_name, data })
            .map_err(|e| format!("could not encode the parsed {type_name}: {e}"))
    }
}

/// A parser for one output format, chosen by a family module's `recognize`.
pub(crate) trait Parser: Send + Sync {
    /// One of the names in [`TYPES`].
    fn type_name(&self) -> &'static str;
    /// `filtered`: a later stage may have dropped lines (a header, a summary) or reordered
    /// them; the parser must cope (known columns from the flags) or refuse.
    fn parse(&self, out: &Output<'_>, ctx: &Context, filtered: bool) -> Result<Typed, String>;

    /// As `parse`, for a caller that keeps only what fits in `max_bytes`: a parser of outputs
    /// that can be huge (a recursive listing) stops building records past it, and only
    /// counts them ([`Keeper`]). The caller cuts to the budget either way.
    fn parse_within(
        &self,
        out: &Output<'_>,
        ctx: &Context,
        filtered: bool,
        max_bytes: usize,
    ) -> Result<Typed, String> {
        let _ = max_bytes;
        self.parse(out, ctx, filtered)
    }
}

/// Why a command line is not parsed; one line for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrecognized(pub String);

impl std::fmt::Display for Unrecognized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Chooses the parser for a pipeline: `stages[0]` produces the output, every later stage must
/// be a filter that keeps its format.
pub fn recognize(stages: &[Stage]) -> Result<Recognized, Unrecognized> {
    let Some((producer, rest)) = stages.split_first() else {
        return Err(Unrecognized(
            "there is no command to parse the output of".into(),
        ));
    };
    let mut filtered = false;
    for stage in rest {
        match filters::keeps_format(stage) {
            Ok(drops_lines) => filtered |= drops_lines,
            Err(why) => return Err(Unrecognized(why)),
        }
    }
    let parser = registry::parser_for(producer).ok_or_else(|| {
        Unrecognized(format!(
            "no parser for `{}` with these flags",
            producer.program
        ))
    })?;
    Ok(Recognized { parser, filtered })
}
