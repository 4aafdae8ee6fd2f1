//! `DiskUsage`: GNU `df` and its variants (`-h`, `-H`/`--si`, `-k`, `-B SIZE`, `-P`, `-T`,
//! `-i`, `--total`, paths as operands).
//!
//! The header names the columns and, for block counts, the block size (`1K-blocks`,
//! `1B-blocks`, `1024-blocks`), so it is read when present: the environment (`DF_BLOCK_SIZE`,
//! `POSIXLY_CORRECT`) can change the block size without a flag showing it. When a later stage
//! dropped the header (`df | grep sda`), the flags tell the columns and the block size. Only
//! the first column (a file system name) and the last (the mount point, which may hold spaces)
//! are free text; every column between is a number or a type, so a line is read by tokens.
//! Older `df` versions wrap a name too long for its column onto a line of its own; that line
//! is joined with the next.

use schemars::JsonSchema;
use serde::Serialize;

use crate::columns::Cursor;
use crate::text::{number, si_size};
use crate::{Context, Output, Parser, Stage, Typed};

/// The output of `df`: one record per file system.
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct DiskUsage {
    /// The `df:` lines of stderr (paths or mounts that could not be read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The `total` row of `--total`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<FileSystem>,
    /// One record per file system row, in output order.
    pub filesystems: Vec<FileSystem>,
}

/// One row of `df`. Block rows carry sizes, `-i` rows carry inode counts; `-` is absent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct FileSystem {
    /// The file system (device or source) as printed.
    pub filesystem: String,
    /// Its type (`-T`).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub fs_type: Option<String>,
    /// Total size in bytes: the printed count times the block size (df rounds up to whole
    /// blocks; exact with `-B1`), approximate when `size_raw` is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Used space in bytes, as `size_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<u64>,
    /// Space available to unprivileged users in bytes, as `size_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    /// The size as printed by `-h`/`-H` (`252G`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_raw: Option<String>,
    /// The used space as printed by `-h`/`-H`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_raw: Option<String>,
    /// The available space as printed by `-h`/`-H`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_raw: Option<String>,
    /// Percentage of the space in use (rounded up by df).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_percent: Option<u32>,
    /// Total inodes (`-i`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes: Option<u64>,
    /// Inodes in use (`-i`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes_used: Option<u64>,
    /// Free inodes (`-i`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes_free: Option<u64>,
    /// Percentage of inodes in use (`-i`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes_use_percent: Option<u32>,
    /// Where it is mounted (`-` for the `total` row).
    pub mounted_on: String,
}

/// How the size columns are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sizes {
    /// Counts of blocks of this many bytes.
    Blocks(u64),
    /// `-h`: human-readable, powers of 1024.
    Binary,
    /// `-H`, `--si`: human-readable, powers of 1000.
    Si,
    /// `-i`: inode counts.
    Inodes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Columns {
    fs_type: bool,
    sizes: Sizes,
}

struct DfParser {
    from_flags: Columns,
}

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    (stage.program == "df")
        .then(|| columns(&stage.args))
        .flatten()
        .map(|from_flags| Box::new(DfParser { from_flags }) as Box<dyn Parser>)
}

/// The columns `df ARGS` prints, or `None` for options whose output is not read here.
fn columns(args: &[String]) -> Option<Columns> {
    let (mut fs_type, mut inodes) = (false, false);
    let mut sizes = Sizes::Blocks(1024);
    let mut words = args.iter();
    while let Some(arg) = words.next() {
        if arg == "--" {
            break;
        }
        if let Some(option) = arg.strip_prefix("--") {
            let (name, value) = match option.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (option, None),
            };
            let value = match value {
                None if matches!(name, "block-size" | "type" | "exclude-type") => {
                    Some(words.next()?.as_str())
                }
                other => other,
            };
            match (name, value) {
                ("human-readable", None) => sizes = Sizes::Binary,
                ("si", None) => sizes = Sizes::Si,
                ("print-type", None) => fs_type = true,
                ("inodes", None) => inodes = true,
                ("block-size", Some(spec)) => sizes = Sizes::Blocks(block_size(spec)?),
                ("portability", None) => sizes = Sizes::Blocks(1024),
                ("all" | "local" | "total" | "sync" | "no-sync", None) => {}
                ("type" | "exclude-type", Some(_)) => {}
                _ => return None,
            }
            continue;
        }
        let Some(letters) = arg.strip_prefix('-').filter(|l| !l.is_empty()) else {
            continue;
        };
        for (at, letter) in letters.char_indices() {
            match letter {
                'h' => sizes = Sizes::Binary,
                'H' => sizes = Sizes::Si,
                'k' | 'P' => sizes = Sizes::Blocks(1024),
                'T' => fs_type = true,
                'i' => inodes = true,
                'a' | 'l' | 'v' => {}
                'B' | 't' | 'x' => {
                    let rest = letters.get(at + 1..).unwrap_or("");
                    let value = if rest.is_empty() {
                        words.next()?.as_str()
                    } else {
                        rest
                    };
                    if letter == 'B' {
                        sizes = Sizes::Blocks(block_size(value)?);
                    }
                    break;
                }
                _ => return None,
            }
        }
    }
    if inodes {
        // `-ih` scales inode counts by 1024 and rounds them: not exact.
        if matches!(sizes, Sizes::Binary | Sizes::Si) {
            return None;
        }
        sizes = Sizes::Inodes;
    }
    Some(Columns { fs_type, sizes })
}

/// A block size as `-B` takes it and the header prints it: `1`, `1K`, `4K`, `1024`, `1kB`,
/// `MiB`, `1B` (one byte). `K` alone is 1024, `KB` 1000, `KiB` 1024.
fn block_size(spec: &str) -> Option<u64> {
    let split = spec
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(spec.len());
    let (count, unit) = spec.split_at(split);
    let count = if count.is_empty() { 1 } else { number(count)? };
    let mut letters = unit.chars();
    let scale: u64 = match letters.next() {
        None => 1,
        Some('B') if letters.as_str().is_empty() => 1,
        Some(letter) => {
            let power = "KMGTPE".find(letter.to_ascii_uppercase())?;
            let base: u64 = match letters.as_str() {
                "" | "iB" => 1024,
                "B" => 1000,
                _ => return None,
            };
            base.checked_pow(u32::try_from(power + 1).ok()?)?
        }
    };
    count.checked_mul(scale).filter(|size| *size > 0)
}

impl Parser for DfParser {
    fn type_name(&self) -> &'static str {
        "DiskUsage"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        let errors: Vec<String> = out
            .stderr
            .lines()
            .filter(|l| l.starts_with("df: "))
            .map(str::to_owned)
            .collect();
        if out.stdout.trim().is_empty() {
            if let Some(first) = out.stderr.lines().find(|l| !l.trim().is_empty()) {
                return Err(format!(
                    "df printed no table: {}",
                    crate::text::clip(first.trim(), 200)
                ));
            }
            if !filtered {
                return Err("df printed nothing".into());
            }
        }
        let mut usage = read_table(out.stdout, self.from_flags, filtered)?;
        usage.errors = errors;
        Ok(Typed::new(usage))
    }
}

fn read_table(text: &str, from_flags: Columns, filtered: bool) -> Result<DiskUsage, String> {
    let mut usage = DiskUsage::default();
    let mut columns = None;
    // The name of a file system printed alone on its line, waiting for the rest of its row.
    let mut wrapped: Option<(usize, &str)> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with("Filesystem ") {
            if index == 0 {
                columns = Some(header(line, from_flags).map_err(|why| format!("line 1: {why}"))?);
            } else if !filtered {
                return Err(format!("line {number} repeats the header"));
            }
            continue;
        }
        let columns = match columns {
            Some(columns) => columns,
            None if filtered => from_flags,
            None => return Err("line 1 is not the `df` header".into()),
        };
        let row = match wrapped.take() {
            Some((_, name)) if line.starts_with(' ') => read_row(name, line, columns),
            Some((at, _)) => {
                return Err(format!(
                    "line {at} holds a file system name with no row after it"
                ));
            }
            None if !line.trim().contains(' ') => {
                wrapped = Some((number, line.trim()));
                continue;
            }
            None => {
                let mut cur = Cursor::new(line);
                let name = cur.token().unwrap_or("");
                read_row(name, cur.rest(), columns)
            }
        }
        .ok_or_else(|| format!("line {number} is not a `df` row"))?;
        if row.filesystem == "total" && row.mounted_on == "-" {
            usage.total = Some(row);
        } else {
            usage.filesystems.push(row);
        }
    }
    if let Some((at, _)) = wrapped {
        return Err(format!(
            "line {at} holds a file system name with no row after it"
        ));
    }
    Ok(usage)
}

/// The columns the header names: the type column, and what the size columns count.
fn header(line: &str, from_flags: Columns) -> Result<Columns, &'static str> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let (fs_type, rest) = match words.as_slice() {
        ["Filesystem", "Type", rest @ ..] => (true, rest),
        ["Filesystem", rest @ ..] => (false, rest),
        _ => return Err("not a `df` header"),
    };
    let sizes = match rest {
        ["Inodes", "IUsed", "IFree", "IUse%", "Mounted", "on"] => Sizes::Inodes,
        [
            "Size",
            "Used",
            "Avail",
            "Use%" | "Capacity",
            "Mounted",
            "on",
        ] => match from_flags.sizes {
            human @ (Sizes::Binary | Sizes::Si) => human,
            _ => return Err("sizes are human-readable but the flags do not say in which base"),
        },
        [
            blocks,
            "Used",
            "Available" | "Avail",
            "Use%" | "Capacity",
            "Mounted",
            "on",
        ] => {
            let spec = blocks
                .strip_suffix("-blocks")
                .ok_or("unknown size column")?;
            Sizes::Blocks(block_size(spec).ok_or("unknown block size")?)
        }
        _ => return Err("columns this parser does not know"),
    };
    Ok(Columns { fs_type, sizes })
}

/// The row of file system `name`; `rest` is the line after the name.
fn read_row(name: &str, rest: &str, columns: Columns) -> Option<FileSystem> {
    let mut cur = Cursor::new(rest);
    let mut row = FileSystem {
        filesystem: name.to_owned(),
        ..FileSystem::default()
    };
    if columns.fs_type {
        row.fs_type = cur.token().filter(|t| *t != "-").map(str::to_owned);
    }
    let values = [cur.token()?, cur.token()?, cur.token()?];
    let percent = cur.token()?;
    let percent = match percent {
        "-" => None,
        p => Some(u32::try_from(number(p.strip_suffix('%')?)?).ok()?),
    };
    cur.skip_space().then_some(())?;
    row.mounted_on = cur.rest().to_owned();
    if row.mounted_on.is_empty() || name.is_empty() {
        return None;
    }
    let count = |text: &str| {
        if text == "-" {
            Some(None)
        } else {
            number(text).map(Some)
        }
    };
    match columns.sizes {
        Sizes::Inodes => {
            let [total, used, free] = values.map(count);
            (row.inodes, row.inodes_used, row.inodes_free) = (total?, used?, free?);
            row.inodes_use_percent = percent;
        }
        Sizes::Blocks(block) => {
            let [size, used, free] =
                values.map(|v| count(v).map(|c| c.and_then(|c| c.checked_mul(block))));
            (row.size_bytes, row.used_bytes, row.available_bytes) = (size?, used?, free?);
            row.use_percent = percent;
        }
        Sizes::Binary | Sizes::Si => {
            let read = |text: &str| match columns.sizes {
                Sizes::Si => si_size(text),
                _ => crate::text::human_size(text),
            };
            let [size, used, free] = values.map(read);
            (row.size_bytes, row.used_bytes, row.available_bytes) =
                (Some(size?), Some(used?), Some(free?));
            let raw =
                |text: &str| (!text.bytes().all(|b| b.is_ascii_digit())).then(|| text.to_owned());
            let [size, used, free] = values.map(raw);
            (row.size_raw, row.used_raw, row.available_raw) = (size, used, free);
            row.use_percent = percent;
        }
    }
    Some(row)
}

#[cfg(test)]
#[path = "df_tests.rs"]
mod tests;
