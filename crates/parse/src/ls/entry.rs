//! One entry line of `ls -l`: the columns the flags announce, read left to right by tokens
//! (padding varies with the widest value, so positions are not fixed), then the date in
//! whichever style printed it, then the name: the rest of the line after one space, so that
//! names keep their own spaces. A symlink's ` -> ` is split last, once a name continued on
//! later lines (a newline in it) is whole.

use super::options::{self, Human, Indicators, Layout};
use super::{Device, Entry, EntryType, time_field};
use crate::Context;
use crate::columns::Cursor;
use crate::text::number;

/// A size printed by `-h` (powers of 1024) or `--si` (powers of 1000).
pub(super) fn size_value(text: &str, human: Human) -> Option<u64> {
    match human {
        Human::No => number(text),
        Human::Binary => crate::text::human_size(text),
        Human::Si => crate::text::si_size(text),
    }
}

/// `?` (ls could not stat the entry) as `None`, anything else through `read`.
fn unless_unknown<T>(token: &str, read: impl FnOnce(&str) -> Option<T>) -> Result<Option<T>, ()> {
    if token == "?" {
        Ok(None)
    } else {
        read(token).map(Some).ok_or(())
    }
}

/// What one line of a listing remembers for the next: owner and group names, the last date.
#[derive(Default)]
pub(super) struct Memo {
    names: crate::text::Recent,
    last_date: time_field::LastDate,
    /// Past the first records: a line is read and checked, but its text is not copied (it is
    /// built again at the end if it is one of the last, see `Keeper`).
    pub(super) checking: bool,
}

pub(super) fn read_entry(
    line: &str,
    layout: Layout,
    ctx: &Context,
    memo: &mut Memo,
) -> Result<Entry, &'static str> {
    let mut cur = Cursor::new(line);
    let Prefix {
        inode,
        blocks,
        blocks_raw,
    } = read_prefix(&mut cur, layout)?;
    let mode_token = cur.token().ok_or("empty line")?;
    let options::ModeString {
        kind,
        permissions: perms,
        acl,
    } = options::mode_string(mode_token).ok_or("no mode string")?;
    let links = unless_unknown(cur.token().ok_or("no link count")?, number)
        .map_err(|()| "bad link count")?;
    let mut who = |present: bool| -> Result<Option<std::sync::Arc<str>>, &'static str> {
        if !present {
            return Ok(None);
        }
        let token = cur.token().ok_or("missing owner or group")?;
        let known = token != "?" || perms.is_some();
        Ok((known && !memo.checking).then(|| memo.names.get(token)))
    };
    let owner = who(layout.owner)?;
    let group = who(layout.group)?;
    let Size {
        bytes: size_bytes,
        raw: size_raw,
        device,
    } = read_size(&mut cur, kind, layout.human)?;
    let modified = time_field::read(&mut cur, ctx, &mut memo.last_date, !memo.checking)
        .ok_or("no date in a known style")?;
    if !cur.skip_space() {
        return Err("no name");
    }
    let name = cur.rest();
    if name.is_empty() {
        return Err("no name");
    }
    Ok(Entry {
        name: if memo.checking {
            String::new()
        } else {
            name.to_owned()
        },
        kind,
        target: None,
        ambiguous_target: false,
        permissions: perms,
        mode: perms,
        acl,
        links,
        owner,
        group,
        size_bytes,
        size_raw,
        device,
        modified,
        inode,
        blocks,
        blocks_raw,
        directory: None,
    })
}

/// The columns `-i` and `-s` put in front of the mode.
struct Prefix {
    inode: Option<u64>,
    /// `-s`'s count, or, with `-h`/`--si`, what it printed.
    blocks: Option<u64>,
    blocks_raw: Option<String>,
}

fn read_prefix(cur: &mut Cursor<'_>, layout: Layout) -> Result<Prefix, &'static str> {
    let mut inode = None;
    if layout.inode {
        let token = cur.token().ok_or("no inode")?;
        inode = unless_unknown(token, number).map_err(|()| "bad inode number")?;
    }
    let (mut blocks, mut blocks_raw) = (None, None);
    if layout.blocks {
        let token = cur.token().ok_or("no block count")?;
        if layout.human == Human::No {
            blocks = unless_unknown(token, number).map_err(|()| "bad block count")?;
        } else if token != "?" {
            size_value(token, layout.human).ok_or("bad block size")?;
            blocks_raw = Some(token.to_owned());
        }
    }
    Ok(Prefix {
        inode,
        blocks,
        blocks_raw,
    })
}

/// The size column: bytes (and the text, when `-h` or `--si` rounded it), or a device's
/// major and minor numbers.
struct Size {
    bytes: Option<u64>,
    raw: Option<String>,
    device: Option<Device>,
}

fn read_size(cur: &mut Cursor<'_>, kind: EntryType, human: Human) -> Result<Size, &'static str> {
    let size_token = cur.token().ok_or("no size")?;
    let (mut size_bytes, mut size_raw, mut device) = (None, None, None);
    if let Some(major) = size_token
        .strip_suffix(',')
        .filter(|_| matches!(kind, EntryType::CharDevice | EntryType::BlockDevice))
    {
        let minor = cur
            .token()
            .and_then(number)
            .ok_or("bad minor device number")?;
        device = Some(Device {
            major: number(major).ok_or("bad major device number")?,
            minor,
        });
    } else if size_token != "?" {
        size_bytes = Some(size_value(size_token, human).ok_or("bad size")?);
        if !size_token.bytes().all(|b| b.is_ascii_digit()) {
            size_raw = Some(size_token.to_owned());
        }
    }
    Ok(Size {
        bytes: size_bytes,
        raw: size_raw,
        device,
    })
}

/// Splits a symlink's `name -> target` and drops the `-F`/`-p` indicator `ls` appended.
pub(super) fn finish_name(entry: &mut Entry, indicators: Indicators) {
    let decorated = indicators != Indicators::None;
    if entry.kind == EntryType::Symlink && entry.permissions.is_some() {
        // A symlink's size is its target's length: it says which ` -> ` ends the name.
        let exact_size = entry.size_bytes.filter(|_| entry.size_raw.is_none());
        let fits = |target: &str| match exact_size {
            Some(size) => {
                let len = target.len() as u64;
                len == size
                    || (decorated
                        && len.checked_sub(1) == Some(size)
                        && target.ends_with(options::INDICATORS))
            }
            None => false,
        };
        let (mut arrows, mut first, mut fitting, mut fitting_at) = (0usize, None, 0usize, None);
        for (at, _) in entry.name.match_indices(" -> ") {
            arrows += 1;
            first.get_or_insert(at);
            if fits(entry.name.get(at + 4..).unwrap_or("")) {
                fitting += 1;
                fitting_at = Some(at);
            }
        }
        let split = if fitting == 1 { fitting_at } else { first };
        if let Some(at) = split {
            let mut target = entry.name.get(at + 4..).unwrap_or("").to_owned();
            if decorated
                && exact_size.is_some_and(|s| (target.len() as u64).checked_sub(1) == Some(s))
                && target.ends_with(options::INDICATORS)
            {
                target.pop();
            }
            entry.ambiguous_target = arrows > 1 && fitting != 1;
            entry.name.truncate(at);
            entry.target = Some(target);
        }
        return;
    }
    if let Some(mark) = indicators.mark(entry.kind, entry.mode)
        && entry.name.len() > 1
        && entry.name.ends_with(mark)
    {
        entry.name.pop();
    }
}
