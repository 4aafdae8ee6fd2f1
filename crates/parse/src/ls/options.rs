//! Which `ls` command lines print a listing this parser reads exactly, and what columns they
//! print. Options that only select or sort entries are accepted; options that change a
//! column's meaning (`-c`, `--block-size`), quote names (`-b`, `-Q`) or leave the long format
//! (`-1`, `-C`, `-m`) are refused, since their output would be misread.

use super::EntryType;

/// How sizes are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Human {
    /// Plain numbers.
    No,
    /// `-h`: powers of 1024.
    Binary,
    /// `--si`: powers of 1000.
    Si,
}

/// Which indicator `ls` appends to names (`-p`, `--file-type`, `-F`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Indicators {
    None,
    Slash,
    FileType,
    Classify,
}

/// Every character `-F` may append.
pub(crate) const INDICATORS: [char; 6] = ['/', '*', '=', '|', '>', '@'];

impl Indicators {
    /// The character appended to an entry of this kind and octal mode, if any.
    pub(crate) fn mark(self, kind: EntryType, mode: Option<u32>) -> Option<char> {
        let executable = mode.is_some_and(|bits| bits & 0o111 != 0);
        match (self, kind) {
            (Indicators::None, _) => None,
            (_, EntryType::Directory) => Some('/'),
            (Indicators::Slash, _) => None,
            (_, EntryType::Fifo) => Some('|'),
            (_, EntryType::Socket) => Some('='),
            (_, EntryType::Door) => Some('>'),
            (Indicators::Classify, EntryType::File) if executable => Some('*'),
            _ => None,
        }
    }
}

/// The columns a recognised command line prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub inode: bool,
    pub blocks: bool,
    pub owner: bool,
    pub group: bool,
    pub human: Human,
    pub indicators: Indicators,
}

/// The layout of `ls ARGS`, or `None` when it is not a long listing read exactly.
pub(crate) fn layout(args: &[String]) -> Option<Layout> {
    let mut layout = Layout {
        inode: false,
        blocks: false,
        owner: true,
        group: true,
        human: Human::No,
        indicators: Indicators::None,
    };
    let mut long = false;
    let mut words = args.iter();
    while let Some(arg) = words.next() {
        if arg == "--" {
            break;
        }
        if let Some(option) = arg.strip_prefix("--") {
            let (name, inline) = match option.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (option, None),
            };
            // Options whose value is required may take it from the next word.
            let value = match inline {
                Some(value) => Some(value),
                None if TAKE_VALUE.contains(&name) => Some(words.next()?.as_str()),
                None => None,
            };
            long |= long_option(&mut layout, name, value)?;
            continue;
        }
        let Some(letters) = arg.strip_prefix('-').filter(|l| !l.is_empty()) else {
            continue;
        };
        for (at, letter) in letters.char_indices() {
            match letter {
                'l' | 'n' => long = true,
                'g' => (long, layout.owner) = (true, false),
                'o' => (long, layout.group) = (true, false),
                'G' => layout.group = false,
                'i' => layout.inode = true,
                's' => layout.blocks = true,
                'h' => layout.human = Human::Binary,
                'F' => layout.indicators = Indicators::Classify,
                'p' => layout.indicators = Indicators::Slash,
                'a' | 'A' | 'd' | 't' | 'S' | 'r' | 'U' | 'X' | 'v' | 'k' | 'L' | 'H' | 'B'
                | 'N' | 'q' | 'R' => {}
                'I' | 'w' | 'T' => {
                    // The value is the rest of the word, or the next word.
                    if at + 1 == letters.len() {
                        words.next()?;
                    }
                    break;
                }
                _ => return None,
            }
        }
    }
    long.then_some(layout)
}

/// Long options whose value may be the next word.
const TAKE_VALUE: &[&str] = &[
    "time-style",
    "ignore",
    "hide",
    "width",
    "tabsize",
    "indicator-style",
    "format",
    "sort",
    "quoting-style",
    "block-size",
    "time",
];

/// Applies one long option: `Some(true)` if it asks for the long format, `None` if refused.
fn long_option(layout: &mut Layout, name: &str, value: Option<&str>) -> Option<bool> {
    match (name, value) {
        ("numeric-uid-gid" | "full-time", None) => return Some(true),
        ("format", Some("long" | "verbose")) => return Some(true),
        ("human-readable", None) => layout.human = Human::Binary,
        ("si", None) => layout.human = Human::Si,
        ("no-group", None) => layout.group = false,
        ("inode", None) => layout.inode = true,
        ("size", None) => layout.blocks = true,
        ("file-type", None) => layout.indicators = Indicators::FileType,
        ("classify", None | Some("always" | "yes" | "force")) => {
            layout.indicators = Indicators::Classify;
        }
        // `auto` decorates only a terminal, and the output read here went to a pipe.
        ("classify", Some("never" | "no" | "none" | "auto" | "tty" | "if-tty")) => {
            layout.indicators = Indicators::None;
        }
        ("indicator-style", Some(style)) => {
            layout.indicators = match style {
                "none" => Indicators::None,
                "slash" => Indicators::Slash,
                "file-type" => Indicators::FileType,
                "classify" => Indicators::Classify,
                _ => return None,
            };
        }
        // Every named style prints a date shape the reader knows; `+FORMAT` is free-form.
        ("time-style", Some(style)) if !style.starts_with('+') => {}
        ("quoting-style", Some("literal")) | ("hyperlink", None | Some("never" | "auto")) => {}
        (
            "all"
            | "almost-all"
            | "reverse"
            | "recursive"
            | "directory"
            | "dereference"
            | "dereference-command-line"
            | "dereference-command-line-symlink-to-dir"
            | "group-directories-first"
            | "ignore-backups"
            | "kibibytes"
            | "literal"
            | "hide-control-chars"
            | "show-control-chars",
            None,
        ) => {}
        ("ignore" | "hide" | "width" | "tabsize" | "sort", Some(_)) => {}
        ("color" | "colour", _) => {}
        _ => return None,
    }
    Some(false)
}

/// A mode string as `ls -l` prints it (`drwxr-xr-x`, `-rwsr-x---+`, `l?????????`).
pub(crate) struct ModeString {
    pub kind: EntryType,
    /// The permission bits the nine letters spell; `None` when printed as `?`.
    pub permissions: Option<u32>,
    /// Ends in `+`.
    pub acl: bool,
}

pub(crate) fn mode_string(token: &str) -> Option<ModeString> {
    let kind = match token.chars().next()? {
        '-' => EntryType::File,
        'd' => EntryType::Directory,
        'l' => EntryType::Symlink,
        'c' => EntryType::CharDevice,
        'b' => EntryType::BlockDevice,
        'p' => EntryType::Fifo,
        's' => EntryType::Socket,
        'D' => EntryType::Door,
        '?' => EntryType::Unknown,
        _ => return None,
    };
    let letters = token.get(1..10)?;
    // `+`: an ACL; `.`: an SELinux context and nothing more; `@` (macOS): extended attributes.
    let acl = match token.get(10..)? {
        "" | "." | "@" => false,
        "+" => true,
        _ => return None,
    };
    if letters == "?????????" {
        return Some(ModeString {
            kind,
            permissions: None,
            acl: false,
        });
    }
    let mut bits = 0u32;
    for (at, letter) in letters.bytes().enumerate() {
        let shift = 8 - u32::try_from(at).ok()?;
        let special = match at {
            2 => 0o4000,
            5 => 0o2000,
            _ => 0o1000,
        };
        bits |= match (at % 3, letter) {
            (_, b'-') => 0,
            (0, b'r') | (1, b'w') | (2, b'x') => 1 << shift,
            (2, b's') if at != 8 => special | 1 << shift,
            (2, b'S') if at != 8 => special,
            (2, b't') if at == 8 => special | 1,
            (2, b'T') if at == 8 => special,
            _ => return None,
        };
    }
    Some(ModeString {
        kind,
        permissions: Some(bits),
        acl,
    })
}

/// The nine letters `ls` prints for permission bits (`rwsr-x--T`): the inverse of
/// [`mode_string`]'s reading, so the bits are all an entry keeps.
pub(crate) fn letters(bits: u32) -> [u8; 9] {
    let mut out = [b'-'; 9];
    for (at, slot) in out.iter_mut().enumerate() {
        let on = bits & (1 << (8 - at)) != 0;
        let special = match at {
            2 => bits & 0o4000 != 0,
            5 => bits & 0o2000 != 0,
            8 => bits & 0o1000 != 0,
            _ => false,
        };
        *slot = match (at, on, special) {
            (2 | 5, true, true) => b's',
            (2 | 5, false, true) => b'S',
            (8, true, true) => b't',
            (8, false, true) => b'T',
            (_, true, _) => b"rwx"[at % 3],
            _ => b'-',
        };
    }
    out
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with passes a reference"
)]
pub(crate) fn as_letters<S: serde::Serializer>(
    bits: &Option<u32>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match bits {
        Some(bits) => s.serialize_str(std::str::from_utf8(&letters(*bits)).unwrap_or("?????????")),
        None => s.serialize_none(),
    }
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with passes a reference"
)]
pub(crate) fn as_octal<S: serde::Serializer>(bits: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
    match bits {
        Some(bits) => s.collect_str(&format_args!("{bits:04o}")),
        None => s.serialize_none(),
    }
}
