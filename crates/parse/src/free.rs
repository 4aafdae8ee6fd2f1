//! `MemoryUsage`: procps `free` (`-b`, `-k`, `-m`, `-g`, `--mebi` … `--peta`, `--si`, `-h`,
//! `-w`, `-t`, `-l`, `-v`).
//!
//! The header names the columns (`-w` splits `buff/cache` into `buffers` and `cache`), and each
//! row names itself (`Mem:`, `Swap:`, `Total:` …) and fills the first columns only, so rows are
//! matched to the header by position. The unit is not printed: it comes from the flags
//! (kibibytes by default). `free` truncates to whole units, so numbers are exact in bytes only
//! with `-b` or in kibibytes (the kernel counts in KiB); `unit` says which one was used.
//! Repeating output (`-s`, `-c`) and the one-line format are refused.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::text::{number, si_size};
use crate::{Context, Output, Parser, Stage, Typed};

/// The output of `free`: one record per row.
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct MemoryUsage {
    /// The unit the numbers were printed in (`B`, `KiB`, `MiB`, `GiB`, `TiB`, `PiB`, `kB`,
    /// `MB`, `GB`, `TB`, `PB`, or `human` for `-h`); free truncates to it, so the byte
    /// values are exact only for `B` and `KiB`.
    pub unit: String,
    /// One record per row, in output order.
    pub rows: Vec<MemoryRow>,
}

/// One row of `free`. Columns the row leaves empty (`Swap:` has no `shared`) are absent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct MemoryRow {
    /// `mem`, `swap`, `total` (`-t`), `low`, `high` (`-l`) or `comm` (`-v`, committed memory).
    pub name: String,
    /// Total, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<u64>,
    /// Used, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<u64>,
    /// Unused, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_bytes: Option<u64>,
    /// Shared (mostly tmpfs), in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_bytes: Option<u64>,
    /// Buffers and page cache together, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buff_cache_bytes: Option<u64>,
    /// Kernel buffers (`-w`), in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffers_bytes: Option<u64>,
    /// Page cache and slabs (`-w`), in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_bytes: Option<u64>,
    /// Estimated memory available for new programs without swapping, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    /// With `-h`: each value as printed (`23Gi`), by column (`total`, `used`, `buff_cache` …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub raw: BTreeMap<String, String>,
}

/// A column of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Total,
    Used,
    Free,
    Shared,
    BuffCache,
    Buffers,
    Cache,
    Available,
}

const NARROW: &[Column] = &[
    Column::Total,
    Column::Used,
    Column::Free,
    Column::Shared,
    Column::BuffCache,
    Column::Available,
];
const WIDE: &[Column] = &[
    Column::Total,
    Column::Used,
    Column::Free,
    Column::Shared,
    Column::Buffers,
    Column::Cache,
    Column::Available,
];

impl Column {
    fn from_header(word: &str) -> Option<Column> {
        Some(match word {
            "total" => Column::Total,
            "used" => Column::Used,
            "free" => Column::Free,
            "shared" => Column::Shared,
            "buff/cache" => Column::BuffCache,
            "buffers" => Column::Buffers,
            "cache" | "cached" => Column::Cache,
            "available" => Column::Available,
            _ => return None,
        })
    }

    fn key(self) -> &'static str {
        match self {
            Column::Total => "total",
            Column::Used => "used",
            Column::Free => "free",
            Column::Shared => "shared",
            Column::BuffCache => "buff_cache",
            Column::Buffers => "buffers",
            Column::Cache => "cache",
            Column::Available => "available",
        }
    }

    fn slot(self, row: &mut MemoryRow) -> &mut Option<u64> {
        match self {
            Column::Total => &mut row.total_bytes,
            Column::Used => &mut row.used_bytes,
            Column::Free => &mut row.free_bytes,
            Column::Shared => &mut row.shared_bytes,
            Column::BuffCache => &mut row.buff_cache_bytes,
            Column::Buffers => &mut row.buffers_bytes,
            Column::Cache => &mut row.cache_bytes,
            Column::Available => &mut row.available_bytes,
        }
    }
}

/// How the numbers are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// Whole units of `base ^ power` bytes.
    Scaled { base: u64, power: u32 },
    /// `-h`, with powers of `base`.
    Human { base: u64 },
}

struct FreeParser {
    unit: Unit,
    wide: bool,
}

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    if stage.program != "free" {
        return None;
    }
    let (mut power, mut si, mut human, mut wide) = (None, false, false, false);
    let mut set_power = |p: u32| power.replace(p).is_none();
    for arg in &stage.args {
        let ok = match arg.as_str() {
            "-b" | "--bytes" => set_power(0),
            "-k" | "--kibi" => set_power(1),
            "-m" | "--mebi" => set_power(2),
            "-g" | "--gibi" => set_power(3),
            "--tebi" => set_power(4),
            "--pebi" => set_power(5),
            "--kilo" | "--mega" | "--giga" | "--tera" | "--peta" => {
                si = true;
                let p = match arg.as_str() {
                    "--kilo" => 1,
                    "--mega" => 2,
                    "--giga" => 3,
                    "--tera" => 4,
                    _ => 5,
                };
                set_power(p)
            }
            "-h" | "--human" => {
                human = true;
                true
            }
            "--si" => {
                si = true;
                true
            }
            "-w" | "--wide" => {
                wide = true;
                true
            }
            "-t" | "--total" | "-l" | "--lohi" | "-v" | "--committed" => true,
            // Bundled short options (`-ht`, `-wm`).
            other => match other
                .strip_prefix('-')
                .filter(|l| !l.is_empty() && !l.starts_with('-'))
            {
                Some(letters) => letters.chars().all(|c| match c {
                    'b' => set_power(0),
                    'k' => set_power(1),
                    'm' => set_power(2),
                    'g' => set_power(3),
                    'h' => {
                        human = true;
                        true
                    }
                    'w' => {
                        wide = true;
                        true
                    }
                    't' | 'l' | 'v' => true,
                    _ => false,
                }),
                None => false,
            },
        };
        if !ok {
            return None;
        }
    }
    let base = if si { 1000 } else { 1024 };
    let unit = if human {
        Unit::Human { base }
    } else {
        Unit::Scaled {
            base,
            power: power.unwrap_or(1),
        }
    };
    Some(Box::new(FreeParser { unit, wide }))
}

impl Unit {
    fn name(self) -> String {
        match self {
            Unit::Human { .. } => "human".into(),
            Unit::Scaled { power: 0, .. } => "B".into(),
            Unit::Scaled { base, power } => {
                let index = usize::try_from(power).unwrap_or(0).saturating_sub(1);
                let letter = ["k", "M", "G", "T", "P"].get(index).copied().unwrap_or("?");
                match (base, letter) {
                    (1000, letter) => format!("{letter}B"),
                    (_, "k") => "KiB".into(),
                    (_, letter) => format!("{letter}iB"),
                }
            }
        }
    }

    /// A printed value in bytes, and whether to keep the text beside it (it was rounded).
    fn bytes(self, text: &str) -> Option<(u64, bool)> {
        match self {
            Unit::Scaled { base, power } => {
                Some((number(text)?.checked_mul(base.checked_pow(power)?)?, false))
            }
            Unit::Human { base } => {
                let bytes = if base == 1000 {
                    si_size(text)?
                } else {
                    crate::text::human_size(text)?
                };
                // `0B`, `512B`: bytes as they are, nothing to keep.
                let exact = number(text.strip_suffix('B').unwrap_or(text)).is_some();
                Some((bytes, !exact))
            }
        }
    }
}

impl Parser for FreeParser {
    fn type_name(&self) -> &'static str {
        "MemoryUsage"
    }

    fn parse(&self, out: &Output<'_>, _ctx: &Context, filtered: bool) -> Result<Typed, String> {
        if out.stdout.trim().is_empty() {
            if let Some(first) = out.stderr.lines().find(|l| !l.trim().is_empty()) {
                return Err(format!(
                    "free printed no table: {}",
                    crate::text::clip(first.trim(), 200)
                ));
            }
            if !filtered {
                return Err("free printed nothing".into());
            }
        }
        let usage = read_table(out.stdout, self, filtered)?;
        Ok(Typed::new(usage))
    }
}

fn read_table(text: &str, parser: &FreeParser, filtered: bool) -> Result<MemoryUsage, String> {
    let mut usage = MemoryUsage {
        unit: parser.unit.name(),
        rows: Vec::new(),
    };
    let mut columns: Option<Vec<Column>> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(' ') {
            let words: Option<Vec<Column>> =
                line.split_whitespace().map(Column::from_header).collect();
            match words {
                Some(header) if index == 0 && !header.is_empty() => columns = Some(header),
                Some(_) if filtered => {}
                _ => return Err(format!("line {number} is not the `free` header")),
            }
            continue;
        }
        let layout: &[Column] = match &columns {
            Some(columns) => columns,
            None if filtered => {
                if parser.wide {
                    WIDE
                } else {
                    NARROW
                }
            }
            None => return Err("line 1 is not the `free` header".into()),
        };
        let mut words = line.split_whitespace();
        let name = words.next().and_then(|w| w.strip_suffix(':')).unwrap_or("");
        let name = match name {
            "Mem" | "Swap" | "Total" | "Low" | "High" | "Comm" => name.to_ascii_lowercase(),
            _ => return Err(format!("line {number} is not a `free` row")),
        };
        let mut row = MemoryRow {
            name,
            ..MemoryRow::default()
        };
        let mut columns_left = layout.iter();
        for word in words {
            let column = columns_left
                .next()
                .ok_or_else(|| format!("line {number} has more values than columns"))?;
            let (bytes, keep) = parser.unit.bytes(word).ok_or_else(|| {
                format!(
                    "line {number} holds a value that is not a size: {}",
                    crate::text::clip(word.trim(), 200)
                )
            })?;
            *column.slot(&mut row) = Some(bytes);
            if keep {
                row.raw.insert(column.key().to_owned(), word.to_owned());
            }
        }
        usage.rows.push(row);
    }
    Ok(usage)
}

#[cfg(test)]
#[path = "free_tests.rs"]
mod tests;
