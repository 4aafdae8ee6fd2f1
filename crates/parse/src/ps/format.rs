//! Which columns a `ps` command line prints, worked out from its flags the way procps-ng does
//! (parser.c, sortformat.c): SysV options first, and when procps would reject them as SysV
//! (`ps -aux`, `ps -axu`), the whole line again as BSD options. Only the options known to keep
//! the row format are accepted; forest art (`f`, `-H`, `--forest`), the environment (`e`),
//! thread-mixing (`m`, `H`), widths and date formats make the recogniser say no.
//!
//! This module turns what the options asked for into columns (procps' keyword table, its
//! SysV and BSD default formats, `-o` lists); `options` reads the option line itself.

use super::options::{Options, Refusal, options};

/// What procps prints for one column, and where it goes in a `Process`.
pub(super) struct PlanColumn {
    pub keyword: &'static str,
    pub header: String,
    pub kind: Kind,
    pub field: Field,
}

/// The columns of one `ps` command line, and whether it prints a header line.
pub(super) struct Plan {
    pub columns: Vec<PlanColumn>,
    pub header: bool,
}

/// How a column's value is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A pid-sized number.
    Id,
    /// A count.
    Count,
    /// KiB, stored in bytes.
    Kib,
    /// `12.5`.
    Percent,
    /// One word kept as printed.
    Word,
    /// `[DD-]HH:MM:SS`.
    CpuTime,
    /// `MMM:SS`.
    BsdTime,
    /// `[[DD-]HH:]MM:SS`.
    Elapsed,
    /// Plain seconds.
    Seconds,
    /// `HH:MM`, `MonDD` or `YYYY` (`stime`, `start_time`).
    StartDay,
    /// `HH:MM:SS` or `Mon DD` (`start`).
    Start,
    /// `HH:MM` or `Mon  D` (`bsdstart`).
    BsdStart,
    /// `Tue Dec  1 06:58:54 2026` (`lstart`).
    LongStart,
    /// The rest of the line, spaces included: only as the last column.
    Rest,
}

/// The `Process` field a column fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Pid,
    Ppid,
    Pgid,
    Sid,
    Tid,
    Threads,
    User,
    Uid,
    CpuPercent,
    MemPercent,
    C,
    Vsz,
    Rss,
    Tty,
    Stat,
    State,
    Start,
    CpuTime,
    Elapsed,
    Comm,
    Command,
    Other,
}

impl Field {
    pub(super) fn name(self) -> &'static str {
        match self {
            Field::Pid => "pid",
            Field::Ppid => "ppid",
            Field::Pgid => "pgid",
            Field::Sid => "sid",
            Field::Tid => "tid",
            Field::Threads => "threads",
            Field::User => "user",
            Field::Uid => "uid",
            Field::CpuPercent => "cpu_percent",
            Field::MemPercent => "mem_percent",
            Field::C => "c",
            Field::Vsz => "vsz_bytes",
            Field::Rss => "rss_bytes",
            Field::Tty => "tty",
            Field::Stat => "stat",
            Field::State => "state",
            Field::Start => "start",
            Field::CpuTime => "cpu_seconds",
            Field::Elapsed => "elapsed_seconds",
            Field::Comm => "comm",
            Field::Command => "command",
            Field::Other => "other",
        }
    }
}

use Field as F;
use Kind as K;

/// procps keywords this parser knows: keyword, default header, how printed, where stored.
/// Keywords outside it are refused: their header and shape would be guesses.
const KEYWORDS: &[(&str, &str, Kind, Field)] = &[
    ("pid", "PID", K::Id, F::Pid),
    ("tgid", "TGID", K::Id, F::Pid),
    ("ppid", "PPID", K::Id, F::Ppid),
    ("pgid", "PGID", K::Id, F::Pgid),
    ("pgrp", "PGRP", K::Id, F::Pgid),
    ("sid", "SID", K::Id, F::Sid),
    ("sess", "SESS", K::Id, F::Sid),
    ("session", "SESS", K::Id, F::Sid),
    ("lwp", "LWP", K::Id, F::Tid),
    ("tid", "TID", K::Id, F::Tid),
    ("spid", "SPID", K::Id, F::Tid),
    ("nlwp", "NLWP", K::Count, F::Threads),
    ("thcount", "THCNT", K::Count, F::Threads),
    ("user", "USER", K::Word, F::User),
    ("uname", "USER", K::Word, F::User),
    ("euser", "EUSER", K::Word, F::User),
    ("uid_hack", "UID", K::Word, F::User),
    ("uid", "UID", K::Id, F::Uid),
    ("euid", "EUID", K::Id, F::Uid),
    ("%cpu", "%CPU", K::Percent, F::CpuPercent),
    ("pcpu", "%CPU", K::Percent, F::CpuPercent),
    ("%mem", "%MEM", K::Percent, F::MemPercent),
    ("pmem", "%MEM", K::Percent, F::MemPercent),
    ("c", "C", K::Count, F::C),
    ("vsz", "VSZ", K::Kib, F::Vsz),
    ("vsize", "VSZ", K::Kib, F::Vsz),
    ("rss", "RSS", K::Kib, F::Rss),
    ("rssize", "RSS", K::Kib, F::Rss),
    ("rsz", "RSZ", K::Kib, F::Rss),
    ("tname", "TTY", K::Word, F::Tty),
    ("tt", "TT", K::Word, F::Tty),
    ("tty", "TT", K::Word, F::Tty),
    ("tty8", "TTY", K::Word, F::Tty),
    ("stat", "STAT", K::Word, F::Stat),
    ("s", "S", K::Word, F::State),
    ("state", "S", K::Word, F::State),
    ("stime", "STIME", K::StartDay, F::Start),
    ("start_time", "START", K::StartDay, F::Start),
    ("start", "STARTED", K::Start, F::Start),
    ("bsdstart", "START", K::BsdStart, F::Start),
    ("lstart", "STARTED", K::LongStart, F::Start),
    ("time", "TIME", K::CpuTime, F::CpuTime),
    ("cputime", "TIME", K::CpuTime, F::CpuTime),
    ("bsdtime", "TIME", K::BsdTime, F::CpuTime),
    ("cputimes", "TIME", K::Seconds, F::CpuTime),
    ("times", "TIME", K::Seconds, F::CpuTime),
    ("etime", "ELAPSED", K::Elapsed, F::Elapsed),
    ("etimes", "ELAPSED", K::Seconds, F::Elapsed),
    ("args", "COMMAND", K::Rest, F::Command),
    ("command", "COMMAND", K::Rest, F::Command),
    ("cmd", "CMD", K::Rest, F::Command),
    ("comm", "COMMAND", K::Rest, F::Comm),
    ("ucomm", "COMMAND", K::Rest, F::Comm),
    ("ucmd", "CMD", K::Rest, F::Comm),
    ("cgroup", "CGROUP", K::Rest, F::Other),
    ("exe", "EXE", K::Rest, F::Other),
    ("ni", "NI", K::Word, F::Other),
    ("nice", "NI", K::Word, F::Other),
    ("pri", "PRI", K::Word, F::Other),
    ("opri", "PRI", K::Word, F::Other),
    ("priority", "PRI", K::Word, F::Other),
    ("rtprio", "RTPRIO", K::Word, F::Other),
    ("cls", "CLS", K::Word, F::Other),
    ("class", "CLS", K::Word, F::Other),
    ("policy", "POL", K::Word, F::Other),
    ("psr", "PSR", K::Word, F::Other),
    ("wchan", "WCHAN", K::Word, F::Other),
    ("f", "F", K::Word, F::Other),
    ("flags", "F", K::Word, F::Other),
    ("addr_1", "ADDR", K::Word, F::Other),
    ("sz", "SZ", K::Word, F::Other),
    ("size", "SIZE", K::Word, F::Other),
    ("pss", "PSS", K::Word, F::Other),
    ("uss", "USS", K::Word, F::Other),
    ("m_trs", "TRS", K::Word, F::Other),
    ("m_drs", "DRS", K::Word, F::Other),
    ("maj_flt", "MAJFL", K::Word, F::Other),
    ("min_flt", "MINFL", K::Word, F::Other),
    ("majflt", "MAJFLT", K::Word, F::Other),
    ("minflt", "MINFLT", K::Word, F::Other),
    ("tpgid", "TPGID", K::Word, F::Other),
    ("gid", "GID", K::Word, F::Other),
    ("group", "GROUP", K::Word, F::Other),
    ("ruser", "RUSER", K::Word, F::Other),
    ("ruid", "RUID", K::Word, F::Other),
    ("rgroup", "RGROUP", K::Word, F::Other),
    ("label", "LABEL", K::Word, F::Other),
    ("fds", "FDS", K::Word, F::Other),
    ("pending", "PENDING", K::Word, F::Other),
    ("sig_block", "BLOCKED", K::Word, F::Other),
    ("sig_ignore", "IGNORED", K::Word, F::Other),
    ("caught", "CAUGHT", K::Word, F::Other),
    ("unit", "UNIT", K::Word, F::Other),
];

/// procps-ng's BSD format macros (`OL_u`, …).
fn bsd_macro(letter: char) -> &'static str {
    match letter {
        'u' => "user,pid,pcpu,pmem,vsz,rss,tname,stat,start_time,bsdtime,args",
        'j' => "ppid,pid,pgid,sid,tname,tpgid,stat,uid,bsdtime,args",
        'l' => "flags,uid,pid,ppid,priority,nice,vsz,rss,wchan,stat,tname,bsdtime,args",
        's' => "uid,pid,pending,sig_block,sig_ignore,caught,stat,tname,bsdtime,args",
        _ => "pid,tname,stat,bsdtime,maj_flt,m_trs,m_drs,rss,pmem,args",
    }
}

/// The columns of `ps ARGS`, or `None` when the flags are not ones this parser handles.
pub(super) fn plan(args: &[String]) -> Option<Plan> {
    let options = match options(args, false) {
        Ok(o) => o,
        Err(Refusal::TryBsd) => options(args, true).ok()?,
        Err(Refusal::No) => return None,
    };
    let specs = specs(&options)?;
    let mut columns: Vec<PlanColumn> = Vec::with_capacity(specs.len());
    let last = specs.len().checked_sub(1)?;
    for (i, (keyword, header)) in specs.into_iter().enumerate() {
        let &(keyword, default, kind, field) = KEYWORDS.iter().find(|k| k.0 == keyword)?;
        if kind == Kind::Rest && i != last {
            return None;
        }
        // A second column for the same field (`-o time,bsdtime`) keeps its text under `other`.
        let field = if field != Field::Other && columns.iter().any(|c| c.field == field) {
            Field::Other
        } else {
            field
        };
        if field == Field::Other
            && columns
                .iter()
                .any(|c| c.field == Field::Other && c.keyword == keyword)
        {
            return None;
        }
        columns.push(PlanColumn {
            keyword,
            header: header.unwrap_or_else(|| default.to_owned()),
            kind,
            field,
        });
    }
    let header = !options.no_header && columns.iter().any(|c| !c.header.is_empty());
    Some(Plan { columns, header })
}

/// The keywords (with any `=HEADER`) the options select, in print order.
fn specs(o: &Options) -> Option<Vec<(String, Option<String>)>> {
    let format_flags = o.full || o.long || o.bsd_format.is_some();
    if !o.lists.is_empty() {
        if format_flags || o.y || o.jobs {
            return None;
        }
        let mut specs = Vec::new();
        for list in &o.lists {
            specs.extend(format_list(list)?);
        }
        return Some(specs);
    }
    if let Some(letter) = o.bsd_format {
        if o.full || o.long || o.y || o.jobs || o.lwp || o.spid {
            return None;
        }
        return Some(
            bsd_macro(letter)
                .split(',')
                .map(|k| (k.to_owned(), None))
                .collect(),
        );
    }
    if (o.y && !o.long) || (o.lwp && o.spid) {
        return None;
    }
    Some(
        sysv_list(o)
            .into_iter()
            .map(|k| (k.to_owned(), None))
            .collect(),
    )
}

/// procps `generate_sysv_list`, for the default personality and the supported modifiers. It
/// pushes columns in front, so this builds the list backwards and turns it round.
fn sysv_list(o: &Options) -> Vec<&'static str> {
    let mut v = Vec::new();
    if o.prefer_bsd {
        v.push(if o.full || o.long { "cmd" } else { "args" });
        v.push("bsdtime");
        if !o.long {
            v.push("stat");
        }
    } else {
        v.push(if o.full { "cmd" } else { "ucmd" });
        v.push("time");
    }
    v.push("tname");
    if o.full {
        v.push("stime");
    }
    if o.extra {
        v.push("psr");
        if !(o.long && o.y) {
            v.push("rss");
        }
    }
    if o.long {
        v.push("wchan");
    }
    if o.extra || o.long {
        v.push("sz");
    }
    if o.long {
        v.push(if o.y { "rss" } else { "addr_1" });
        v.push("ni");
        v.push("opri");
    }
    if o.lwp && o.full {
        v.push("nlwp");
    }
    if o.full || o.long {
        v.push("c");
    }
    if o.lwp {
        v.push("lwp");
    }
    if o.jobs {
        v.push("sid");
        v.push("pgid");
    }
    if o.full || o.long {
        v.push("ppid");
    }
    if o.spid {
        v.push("spid");
    }
    v.push("pid");
    if o.full {
        v.push("uid_hack");
    } else if o.long {
        v.push("uid");
    }
    if o.long {
        v.push("s");
        if !o.y {
            v.push("f");
        }
    }
    v.reverse();
    v
}

/// One `-o` argument: items split on space, comma, tab or newline, each `keyword[=HEADER]`.
/// Width overrides (`pid:8`) and AIX `%` descriptors are not handled.
fn format_list(list: &str) -> Option<Vec<(String, Option<String>)>> {
    let list = list.strip_suffix([' ', ',', '\t', '\n']).unwrap_or(list);
    let mut specs = Vec::new();
    for item in list.split([' ', ',', '\t', '\n']) {
        let (keyword, header) = match item.split_once('=') {
            Some((k, h)) => (k, Some(h.to_owned())),
            None => (item, None),
        };
        if keyword.is_empty() || keyword.contains(':') {
            return None;
        }
        specs.push((keyword.to_owned(), header));
    }
    Some(specs)
}
