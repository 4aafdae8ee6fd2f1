//! gcc and clang (`gcc`, `g++`, `cc`, `c++`, `clang`, `clang++`, versioned or cross names such
//! as `gcc-12` or `x86_64-linux-gnu-gcc`) compiling and linking: their messages as
//! `Diagnostics`.
//!
//! Both print one message per line on stderr, `file:line:column: severity: message [-Wflag]`,
//! and around it lines that are not messages: context (`a.c: In function 'main':`, `In file
//! included from`, `required from here`), the source excerpt with its caret, the linker's
//! lines (`/usr/bin/ld: x.o: in function `main':`, then `a.c:(.text+0x9): undefined reference
//! to `foo'`) and closing lines (`compilation terminated.`, clang's `2 errors generated.`).
//! Every line is classified by its shape; context becomes notes of the message it introduces,
//! and `note:` lines become notes of the message before them, since gcc and clang print a
//! note right after what it explains. The excerpt is source code, so anything may be in it:
//! gcc marks it with a `|` gutter, clang does not, which is why any line right after a located
//! message that has no known shape is taken as excerpt. Elsewhere an unknown line makes the
//! parser refuse. With `-fdiagnostics-format=json` (gcc 10+) each compilation prints its
//! messages as one JSON array on a line of its own, read as such; the linker still writes
//! text, read as above.
//!
//! This module says which command lines are read; `reader` reads the output in context,
//! `shapes` the shape of each line.

use super::Diagnostics;
use super::shared::{no_message, quote};
use crate::{Context, Output, Parser, Stage, Typed};

mod reader;
mod shapes;

use reader::Reader;

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    let tool = compiler(&stage.program)?;
    let json = json_format(&stage.args)?;
    Some(Box::new(GccParser { tool, json }))
}

/// `gcc` or `clang` for a compiler driver's name, whatever its version suffix or target prefix.
fn compiler(program: &str) -> Option<&'static str> {
    let name = match program.rsplit_once('-') {
        Some((name, version))
            if !version.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.') =>
        {
            name
        }
        _ => program,
    };
    let base = name.rsplit('-').next().unwrap_or(name);
    match base {
        "clang" | "clang++" => Some("clang"),
        "gcc" | "g++" | "cc" | "c++" | "c89" | "c99" => Some("gcc"),
        _ => None,
    }
}

/// `Some(json)` when every flag leaves the messages in a format read here; `json` for
/// `-fdiagnostics-format=json`.
fn json_format(args: &[String]) -> Option<bool> {
    // They print something else (preprocessed source, dependencies, versions, statistics,
    // fix-it lines, a patch) or move the columns.
    const REFUSED: &str = "-E -M -MM -v --verbose -### --version --help -dumpversion \
        -dumpfullversion -dumpmachine -dumpspecs -Q -H -time -ftime-report -fmem-report \
        -fdiagnostics-parseable-fixits -fdiagnostics-print-source-range-info \
        -fdiagnostics-generate-patch -fdiagnostics-show-template-tree -fproc-stat-report";
    const REFUSED_PREFIXES: &str = "--help= -print- --print- -fopt-info \
        -fdiagnostics-add-output -fdiagnostics-set-output";
    let mut json = false;
    let mut previous = "";
    for arg in args.iter().map(String::as_str) {
        let linker_word = match previous {
            "-Xlinker" => Some(arg),
            _ => None,
        };
        if (previous == "-o" && arg == "-") || arg == "-o-" {
            return None;
        }
        previous = arg;
        if let Some(word) = linker_word {
            if chatty_linker_flag(word) {
                return None;
            }
            continue;
        }
        if let Some(format) = arg.strip_prefix("-fdiagnostics-format=") {
            json = match format {
                "text" | "clang" => false,
                "json" | "json-stderr" => true,
                _ => return None,
            };
            continue;
        }
        if let Some(words) = arg.strip_prefix("-Wl,") {
            if words.split(',').any(chatty_linker_flag) {
                return None;
            }
            continue;
        }
        let moved = arg
            .strip_prefix("-fdiagnostics-column-origin=")
            .is_some_and(|n| n != "1")
            || arg
                .strip_prefix("-fmessage-length=")
                .is_some_and(|n| n != "0")
            || (arg.starts_with("-fdump-")
                && (arg.ends_with("=stderr") || arg.ends_with("=stdout")));
        let refused = REFUSED.split_whitespace().any(|r| r == arg)
            || REFUSED_PREFIXES
                .split_whitespace()
                .any(|p| arg.starts_with(p));
        if moved || refused {
            return None;
        }
    }
    Some(json)
}

/// Linker options that print maps, traces or versions among the messages.
fn chatty_linker_flag(word: &str) -> bool {
    const CHATTY: &str = "-v -V --verbose --version -t --trace -M --print-map --stats --cref \
        --print-memory-usage";
    CHATTY.split_whitespace().any(|flag| flag == word)
}

struct GccParser {
    tool: &'static str,
    json: bool,
}

impl Parser for GccParser {
    fn type_name(&self) -> &'static str {
        "Diagnostics"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        let mut reader = Reader::default();
        // Messages go to stderr; with `2>&1` they are all on stdout.
        for (n, line) in out.stdout.lines().chain(out.stderr.lines()).enumerate() {
            if self.json && line.starts_with('[') {
                reader
                    .json_line(line)
                    .map_err(|why| format!("line {}: {why}", n + 1))?;
            } else {
                reader.line(line).map_err(|()| {
                    format!(
                        "line {} is not a {} message: `{}`",
                        n + 1,
                        self.tool,
                        quote(line)
                    )
                })?;
            }
        }
        if reader.records.is_empty()
            && reader.summary.is_none()
            && let Some(why) = no_message(self.tool, out, filtered)
        {
            return Err(why);
        }
        let tool = if reader.clang { "clang" } else { self.tool };
        let mut result = Diagnostics::counted(tool, reader.records, reader.summary);
        // A filter may have dropped messages; clang's closing line still counts them all.
        if let (true, Some((errors, warnings))) = (filtered, reader.generated) {
            (result.summary.errors, result.summary.warnings) = (errors, warnings);
        }
        Ok(Typed::new(result))
    }
}

#[cfg(test)]
#[path = "gcc_tests.rs"]
mod tests;
