//! `DirectoryListing`: GNU `ls -l` and its variants (`-la`, `-lh`, `-n`, `-i`, `-s`, `-F`,
//! `--full-time`, `--time-style`, several operands, `-R`), read from a pipe.
//!
//! The columns are known from the flags (`-i` and `-s` add one in front, `-g`/`-o`/`-G` drop
//! owner or group), so a line is read by position, not by a header, and survives `grep` or
//! `head`. The date is the one part whose shape varies (the locale default, `long-iso`,
//! `full-iso`, `iso`, and the `TIME_STYLE` environment variable may pick any of them), so it is
//! recognised by its shape; the spacing tells the styles apart. The name is everything after
//! the single space that follows the date: names keep their spaces, and in a pipe `ls` prints
//! them unquoted. A symlink's ` -> ` is ambiguous when the name or target holds one too; `ls`
//! prints a symlink's size as the length of its target, which picks the right split.
//! Structure (`dir:` headers, `total` lines, blank separators) is only trusted when no later
//! stage dropped or reordered lines: filtered output keeps the entries and drops the rest.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;

use crate::budget::Newest;
use crate::text::number;
use crate::time::Timestamp;
use crate::{Context, Keeper, Output, Parser, Stage, Typed};

mod entry;
mod options;
mod time_field;

use entry::{finish_name, read_entry, size_value};
use options::{Human, Layout};

/// The output of `ls -l` (or a variant): each entry printed, and each directory's `total`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct DirectoryListing {
    /// Each directory listed, in output order, with its `total` line; empty when a later
    /// pipeline stage may have dropped lines (the headers could not be trusted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directories: Vec<Directory>,
    /// The `ls:` lines of stderr (entries or operands that could not be read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// One record per entry line, in output order.
    pub entries: Vec<Entry>,
}

/// One directory `ls` listed the contents of.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Directory {
    /// The path of its `dir:` header; absent when `ls` printed none (a single directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The `total` line: disk blocks used, in ls's block size (1024 bytes unless
    /// POSIXLY_CORRECT or BLOCK_SIZE say otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_blocks: Option<u64>,
    /// The `total` line as printed with `-h`/`--si` (`8.0K`, in bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_raw: Option<String>,
}

/// What kind of file an entry is (the first letter of its mode string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryType {
    /// `-`: a regular file.
    File,
    /// `d`.
    Directory,
    /// `l`.
    Symlink,
    /// `c`.
    CharDevice,
    /// `b`.
    BlockDevice,
    /// `p`: a named pipe.
    Fifo,
    /// `s`: a Unix socket.
    Socket,
    /// `D`: a Solaris door.
    Door,
    /// `?`: ls could not tell.
    Unknown,
}

/// A device file's numbers, printed by `ls` where the size would be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Device {
    /// Major device number.
    pub major: u64,
    /// Minor device number.
    pub minor: u64,
}

/// One line of the listing. Fields printed as `?` (ls could not stat the entry) are absent.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Entry {
    /// The name as printed (the operand as given for files named on the command line),
    /// without a `-F`/`-p` indicator.
    pub name: String,
    /// The file type.
    #[serde(rename = "type")]
    pub kind: EntryType,
    /// A symlink's target as printed after ` -> ` (without a `-F` indicator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The name or target holds ` -> ` and the size did not tell where the name ends; the
    /// split was made at the first ` -> `.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ambiguous_target: bool,
    /// The nine permission letters as printed (`rwxr-xr-x`, `rwsr-x--T`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "options::as_letters")]
    #[schemars(with = "Option<String>")]
    pub permissions: Option<u32>,
    /// The same permissions in octal, as chmod takes them (`0755`, `4755`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "options::as_octal")]
    #[schemars(with = "Option<String>")]
    pub mode: Option<u32>,
    /// The mode string ended in `+`: the file has an access control list.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub acl: bool,
    /// Hard link count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<u64>,
    /// Owner: a user name, or a number with `-n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Arc<str>>,
    /// Group: a group name, or a number with `-n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<Arc<str>>,
    /// Size in bytes (approximate when `size_raw` is present); absent for device files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// The size as printed by `-h`/`--si` when it has a unit (`1.5M`, rounded up by ls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_raw: Option<String>,
    /// Major and minor numbers of a device file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<Device>,
    /// Last modification. `raw` is kept when the year or the offset was inferred; a date
    /// printed with a year but no time is read as midnight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<Timestamp>,
    /// Inode number (`-i`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inode: Option<u64>,
    /// Allocated disk blocks (`-s`), in ls's block size (1024 bytes by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<u64>,
    /// Allocated size as printed by `-s` with `-h`/`--si` (`4.0K`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks_raw: Option<String>,
    /// The directory whose `dir:` header the entry is under (several directories, `-R`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<Arc<str>>,
}

struct LsParser {
    layout: Layout,
}

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    if stage.program != "ls" {
        return None;
    }
    let layout = options::layout(&stage.args)?;
    Some(Box::new(LsParser { layout }))
}

impl Parser for LsParser {
    fn type_name(&self) -> &'static str {
        "DirectoryListing"
    }

    fn parse(&self, out: &Output<'_>, ctx: &Context, filtered: bool) -> Result<Typed, String> {
        self.parse_within(out, ctx, filtered, usize::MAX)
    }

    /// A recursive listing can be megabytes: lines past the first entries are read and
    /// checked (a line that is no entry still refuses the whole), and only those that end up
    /// among the last are built.
    fn parse_within(
        &self,
        out: &Output<'_>,
        ctx: &Context,
        filtered: bool,
        max_bytes: usize,
    ) -> Result<Typed, String> {
        let errors: Vec<String> = out
            .stderr
            .lines()
            .filter(|l| l.starts_with("ls: "))
            .map(str::to_owned)
            .collect();
        if out.stdout.trim().is_empty() {
            if let Some(first) = out.stderr.lines().find(|l| !l.trim().is_empty()) {
                return Err(format!(
                    "ls listed nothing: {}",
                    crate::text::clip(first.trim(), 200)
                ));
            }
            if let Some(code) = out.exit_code.filter(|c| *c != 0 && !filtered) {
                return Err(format!("ls exited with status {code} and listed nothing"));
            }
        }
        let mut entries = Keeper::new(max_bytes);
        let mut listing = read_listing(out.stdout, self.layout, ctx, filtered, &mut entries)?;
        let mut memo = entry::Memo::default();
        let (mut kept, omitted, gap) =
            entries.finish(|later| later.build(self.layout, ctx, &mut memo))?;
        for entry in &mut kept {
            finish_name(entry, self.layout.indicators);
        }
        listing.entries = kept;
        listing.errors = errors;
        Ok(Typed::kept(listing, omitted, gap))
    }
}

/// An entry past the first ones, as read: built only if it is one of the last.
struct Later<'a> {
    number: usize,
    line: &'a str,
    directory: Option<Arc<str>>,
    /// The rest of a name holding newlines, a line each.
    more: Vec<&'a str>,
}

/// The least an entry costs the [`Keeper`] once built: an empty name and the shortest type.
const ENTRY_AT_LEAST: usize = r#"{"name":"","type":"file"},"#.len();

impl Later<'_> {
    /// The entry, and its cost as it was read (before its name's later lines).
    fn build(
        self,
        layout: Layout,
        ctx: &Context,
        memo: &mut entry::Memo,
    ) -> Result<(Entry, usize), String> {
        let mut entry = read_entry(self.line, layout, ctx, memo)
            .map_err(|why| format!("line {} is not an `ls -l` entry: {why}", self.number))?;
        entry.directory = self.directory;
        let cost = crate::budget::cost(&entry);
        for line in self.more {
            entry.name.push('\n');
            entry.name.push_str(line);
        }
        Ok((entry, cost))
    }
}

/// Reads the listing's headers and totals into the result and its entries into `entries`
/// (their names not yet finished: see [`finish_name`]).
fn read_listing<'a>(
    text: &'a str,
    layout: Layout,
    ctx: &Context,
    filtered: bool,
    entries: &mut Keeper<Entry, Later<'a>>,
) -> Result<DirectoryListing, String> {
    let mut reader = Reader {
        layout,
        ctx,
        entries,
        listing: DirectoryListing::default(),
        directory: None,
        memo: entry::Memo::default(),
        any_entry: false,
        after_blank: false,
        total_allowed: true,
        last_was_entry: false,
    };
    for (index, line) in text.lines().enumerate() {
        if line.is_empty() {
            reader.after_blank = reader.any_entry || !reader.listing.directories.is_empty();
            reader.last_was_entry = false;
            continue;
        }
        if filtered {
            reader.filtered_line(index + 1, line)?;
        } else {
            reader.line(index, line)?;
        }
    }
    Ok(reader.listing)
}

/// What the lines read so far say, and where the next line may fit.
struct Reader<'a, 'k> {
    layout: Layout,
    ctx: &'k Context,
    entries: &'k mut Keeper<Entry, Later<'a>>,
    listing: DirectoryListing,
    /// The path of the last `dir:` header: the entries under it are its.
    directory: Option<Arc<str>>,
    memo: entry::Memo,
    /// Whether an entry was read yet (a later line may continue the last one's name).
    any_entry: bool,
    after_blank: bool,
    /// `total` follows a header, or opens the output when a single directory is listed.
    total_allowed: bool,
    /// A line that is no entry right after an entry is the rest of a name holding a newline
    /// (a pipe gets names unescaped); anywhere else it is not `ls -l` output.
    last_was_entry: bool,
}

impl<'a> Reader<'a, '_> {
    /// A line of output a filter may have thinned: entries only; headers and totals are
    /// passed over, since what they belong to may be gone.
    fn filtered_line(&mut self, number: usize, line: &'a str) -> Result<(), String> {
        match self.read(line) {
            Ok(entry) => {
                self.any_entry = true;
                self.keep(entry, number, line);
            }
            Err(_) if line.starts_with("total ") || line.ends_with(':') => {}
            Err(why) => return Err(format!("line {number} is not an `ls -l` entry: {why}")),
        }
        Ok(())
    }

    /// Line `index` (0-based) of the whole output, not blank: a header, a total, an entry, or
    /// the rest of an entry's name.
    fn line(&mut self, index: usize, line: &'a str) -> Result<(), String> {
        let number = index + 1;
        if std::mem::take(&mut self.after_blank) {
            // After a blank line `ls` prints nothing but the next directory's header.
            let Some(path) = line.strip_suffix(':').filter(|p| p.len() <= MAX_HEADER) else {
                return Err(format!(
                    "line {number} should be a `dir:` header after a blank line"
                ));
            };
            self.header(path);
            return Ok(());
        }
        if let Some(total) = line.strip_prefix("total ").filter(|_| self.total_allowed) {
            if self.listing.directories.is_empty() {
                self.listing.directories.push(Directory {
                    path: None,
                    total_blocks: None,
                    total_raw: None,
                });
            }
            if let Some(dir) = self.listing.directories.last_mut() {
                read_total(dir, total, self.layout)
                    .ok_or_else(|| format!("line {number} is not a valid `total` line"))?;
            }
            self.total_allowed = false;
            return Ok(());
        }
        self.total_allowed = false;
        self.entry(index == 0, number, line)
    }

    /// An entry; or, when it is none, the first line's `dir:` header, or the rest of the last
    /// entry's name.
    fn entry(&mut self, first: bool, number: usize, line: &'a str) -> Result<(), String> {
        match self.read(line) {
            Ok(entry) => {
                self.any_entry = true;
                self.keep(entry, number, line);
                self.last_was_entry = true;
            }
            Err(_) if first && line.ends_with(':') && line.len() <= MAX_HEADER => {
                self.header(line.strip_suffix(':').unwrap_or(line));
            }
            Err(_) if self.last_was_entry => {
                // The rest of a name holding a newline.
                match self.entries.newest() {
                    Some(Newest::First(entry)) => {
                        entry.name.push('\n');
                        entry.name.push_str(line);
                    }
                    Some(Newest::Later(later)) => later.more.push(line),
                    None => {}
                }
            }
            Err(why) => return Err(format!("line {number} is not an `ls -l` entry: {why}")),
        }
        Ok(())
    }

    /// An entry line, built whole while it may be one of the first; past them, only checked.
    fn read(&mut self, line: &str) -> Result<Entry, &'static str> {
        self.memo.checking = !self.entries.taking_first();
        read_entry(line, self.layout, self.ctx, &mut self.memo)
    }

    /// An entry `read` returned: one of the first, or kept as read for the end.
    fn keep(&mut self, mut entry: Entry, number: usize, line: &'a str) {
        let at_least = if self.memo.checking {
            ENTRY_AT_LEAST
        } else {
            entry.directory.clone_from(&self.directory);
            match self.entries.push_first(entry) {
                Ok(()) => return,
                Err((_, cost)) => cost,
            }
        };
        let later = Later {
            number,
            line,
            directory: self.directory.clone(),
            more: Vec::new(),
        };
        self.entries.push_later(later, at_least);
    }

    /// A `dir:` header: the entries after it are under `path`, and a `total` may follow.
    fn header(&mut self, path: &str) {
        self.directory = Some(path.into());
        self.listing.directories.push(header(path));
        self.total_allowed = true;
    }
}

/// The longest `dir:` header read (PATH_MAX): each entry under it repeats the path, so a
/// longer one would multiply the cost of every line after it.
const MAX_HEADER: usize = 4096;

fn header(path: &str) -> Directory {
    Directory {
        path: Some(path.to_owned()),
        total_blocks: None,
        total_raw: None,
    }
}

fn read_total(dir: &mut Directory, total: &str, layout: Layout) -> Option<()> {
    if layout.human == Human::No {
        dir.total_blocks = Some(number(total)?);
    } else {
        size_value(total, layout.human)?;
        dir.total_raw = Some(total.to_owned());
    }
    Some(())
}

#[cfg(test)]
#[path = "ls_tests.rs"]
mod tests;
