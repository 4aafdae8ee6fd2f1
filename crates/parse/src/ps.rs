//! `ProcessList`: the rows of procps `ps` (`ps aux`, `ps -ef`, `ps -eo pid,ppid,args`, …).
//!
//! The columns are worked out from the flags alone, the way procps itself builds its format
//! list (the `-f`/`-F`/`-l`/`-y`/`-j`/`-L`/`-T` rules of `generate_sysv_list`, the BSD `u j l s v`
//! macros, and `-o` keyword lists with `=NAME` headers). That is what makes `ps aux | grep nginx`
//! parseable: grep drops the header, but the flags still say which column is which. When the
//! header is there it is checked against the expected one, so a `ps` that is not procps (busybox,
//! BSD) or an unexpected `PS_FORMAT` is refused instead of misread.
//!
//! Rows are split on whitespace; only the last column may contain spaces (`args`, `comm`), so a
//! list with such a column elsewhere is not recognised. The start columns have known shapes
//! (`lstart` is always five words, `start`/`bsdstart` one or two), so they may sit anywhere.
//! Values are typed where procps prints them exactly (pids, KiB, cpu time); a start time becomes
//! a timestamp only when ps printed the time of day. Other known keywords keep their raw text
//! under `other`, keyed by the ps keyword.

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate, NaiveDateTime, NaiveTime};
use schemars::JsonSchema;
use serde::Serialize;

use crate::time::{Timestamp, month_number};
use crate::{Context, Output, Parser, Stage, Typed};

mod format;
mod options;

use format::{Field, Kind, Plan};

/// The processes `ps` listed, one record per output row.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProcessList {
    /// The columns ps printed, in order, and the field of each process holding their values.
    pub columns: Vec<Column>,
    /// One record per process row (a header line is not a record).
    pub processes: Vec<Process>,
}

/// One column of the `ps` output.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Column {
    /// The header as ps prints it (`%CPU`, or the NAME of `-o pid=NAME`; empty when blanked).
    pub header: String,
    /// The process field holding its values (`cpu_percent`), or `other.<ps keyword>`.
    pub field: String,
}

/// One process row. A field is present when its column was printed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct Process {
    /// Process id (`PID`, `TGID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Parent process id (`PPID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ppid: Option<u32>,
    /// Process group id (`PGID`, `PGRP`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgid: Option<u32>,
    /// Session id (`SID`, `SESS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sid: Option<u32>,
    /// Thread id (`LWP`, `TID`, `SPID`), with `-L`/`-T`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<u32>,
    /// Number of threads (`NLWP`, `THCNT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Effective user as printed: a name, a number when it does not fit (`-f`), or cut to the
    /// column width with a trailing `+` (`USER` of `ps aux`: `systemd+`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Numeric effective user id (`UID` of `-l`, `-o uid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// CPU time used divided by the time the process has been running, in percent (`%CPU`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_percent: Option<f64>,
    /// Resident memory as a percentage of physical memory (`%MEM`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_percent: Option<f64>,
    /// Integer processor utilisation over the process's life (`C` of `-f`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<u32>,
    /// Virtual memory size in bytes (`VSZ`, printed in KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vsz_bytes: Option<u64>,
    /// Resident set size in bytes (`RSS`, printed in KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Controlling terminal as printed (`pts/0`); `?` when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
    /// Multi-character process state (`STAT`: `Ss`, `R+`, `S<l`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<String>,
    /// One-letter process state (`S` of `-l`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Start time as printed (`06:58`, `Nov09`, `2025`, `Dec  1`, `Tue Dec  1 06:58:54 2026`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// The start time as a moment, only when ps printed the time of day (its precision is
    /// that of `start`); a bare date or year is not converted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Timestamp>,
    /// Cumulative CPU time in seconds (`TIME`; printed `[DD-]HH:MM:SS` or `M:SS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<u64>,
    /// Seconds since the process started (`ELAPSED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_seconds: Option<u64>,
    /// Executable name only (`comm`, `ucmd`; the `CMD` of plain `ps` and `-l`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm: Option<String>,
    /// Full command line with its arguments, as printed (`args`; `COMMAND`, or `CMD` of `-f`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Other columns, as printed, keyed by ps keyword (`ni`, `wchan`, `psr`, `sz`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other: BTreeMap<String, String>,
}

pub(crate) fn recognize(stage: &Stage) -> Option<Box<dyn Parser>> {
    if stage.program != "ps" {
        return None;
    }
    let plan = format::plan(&stage.args)?;
    Some(Box::new(PsParser { plan }))
}

struct PsParser {
    plan: Plan,
}

impl Parser for PsParser {
    fn type_name(&self) -> &'static str {
        "ProcessList"
    }

    fn parse(&self, out: &Output<'_>, ctx: &Context, filtered: bool) -> Result<Typed, String> {
        let plan = &self.plan;
        let expected: Vec<&str> = plan
            .columns
            .iter()
            .flat_map(|c| c.header.split_whitespace())
            .collect();
        let mut lines = out
            .stdout
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .peekable();
        if lines.peek().is_none() {
            let failed = out.exit_code.is_some_and(|c| c != 0);
            let why = out.stderr.lines().map(str::trim).find(|l| !l.is_empty());
            if let (true, Some(why)) = (failed, why) {
                return Err(format!("ps failed: {why}"));
            }
            if plan.header && !filtered {
                return Err("ps printed nothing, not even its header line".into());
            }
        }
        if plan.header && !filtered {
            let first = lines.next().map(|(_, l)| l).unwrap_or_default();
            if !first.split_whitespace().eq(expected.iter().copied()) {
                return Err(format!(
                    "the first line is not the header these ps flags print (`{}`)",
                    expected.join(" ")
                ));
            }
        }
        let mut processes = Vec::new();
        for (index, line) in lines {
            if plan.header && line.split_whitespace().eq(expected.iter().copied()) {
                continue;
            }
            let process = row(plan, line, ctx).map_err(|why| {
                format!("line {} is not a ps row of these columns: {why}", index + 1)
            })?;
            processes.push(process);
        }
        let columns = plan
            .columns
            .iter()
            .map(|c| Column {
                header: c.header.clone(),
                field: match c.field {
                    Field::Other => format!("other.{}", c.keyword),
                    field => field.name().to_owned(),
                },
            })
            .collect();
        Ok(Typed::new(ProcessList { columns, processes }))
    }
}

/// A value read from one column.
enum Value {
    Number(u64),
    Real(f64),
    Text(String),
    Start(String, Option<Timestamp>),
}

/// Reads one row: each column takes its known number of words, the last may take the rest.
fn row(plan: &Plan, line: &str, ctx: &Context) -> Result<Process, String> {
    let mut words = Words { line, at: 0 };
    let mut process = Process::default();
    for column in &plan.columns {
        let name = column.keyword;
        let missing = || format!("no `{name}` value");
        let (raw, value) = match column.kind {
            Kind::Rest => {
                let rest = words.rest().ok_or_else(missing)?;
                (rest, Value::Text(rest.to_owned()))
            }
            Kind::LongStart => {
                let raw = words.take(5).ok_or_else(missing)?;
                let at = long_start(raw, ctx).ok_or_else(|| format!("`{raw}` is not a date"))?;
                (raw, Value::Start(raw.to_owned(), Some(at)))
            }
            Kind::Start | Kind::BsdStart => {
                let first = words.peek().ok_or_else(missing)?;
                let raw = words
                    .take(if first.contains(':') { 1 } else { 2 })
                    .ok_or_else(missing)?;
                let at = short_start(raw, column.kind, ctx)
                    .ok_or_else(|| format!("`{raw}` is not a start time"))?;
                (raw, Value::Start(raw.to_owned(), at))
            }
            kind => {
                let raw = words.take(1).ok_or_else(missing)?;
                let value = single(raw, kind, ctx)
                    .ok_or_else(|| format!("`{raw}` is not a `{name}` value"))?;
                (raw, value)
            }
        };
        store(&mut process, column.field, name, raw, value);
    }
    process.elapsed_seconds = process
        .elapsed_seconds
        .map(|elapsed| possible_elapsed(elapsed, ctx));
    match words.rest() {
        None => Ok(process),
        Some(extra) => Err(format!("unexpected `{extra}` after the last column")),
    }
}

/// A cursor over the words of a line that can hand out the untouched rest.
struct Words<'a> {
    line: &'a str,
    at: usize,
}

impl<'a> Words<'a> {
    fn remaining(&self) -> &'a str {
        self.line.get(self.at..).unwrap_or_default()
    }

    fn peek(&self) -> Option<&'a str> {
        self.remaining().split_whitespace().next()
    }

    /// The next `n` words as one slice of the line (inner spacing kept).
    fn take(&mut self, n: usize) -> Option<&'a str> {
        let rest = self.remaining();
        let start = rest.len() - rest.trim_start().len();
        let mut end = start;
        for _ in 0..n {
            let tail = rest.get(end..)?.trim_start();
            if tail.is_empty() {
                return None;
            }
            let word = tail.find(char::is_whitespace).unwrap_or(tail.len());
            end = rest.len() - tail.len() + word;
        }
        self.at += end;
        rest.get(start..end)
    }

    /// Everything left, trimmed; `None` when nothing is.
    fn rest(&mut self) -> Option<&'a str> {
        let rest = self.remaining().trim();
        self.at = self.line.len();
        (!rest.is_empty()).then_some(rest)
    }
}

/// `elapsed`, or 0 where it is longer than the clock has run since the epoch: procps prints
/// an unsigned wrap of a negative difference (4123168608 for a process started that instant,
/// its clock a moment behind the start it read), which only such a process gets.
fn possible_elapsed(elapsed: u64, ctx: &Context) -> u64 {
    let since_epoch = u64::try_from(ctx.now.timestamp()).unwrap_or(0);
    if elapsed > since_epoch { 0 } else { elapsed }
}

/// A one-word value of the given kind.
fn single(raw: &str, kind: Kind, ctx: &Context) -> Option<Value> {
    Some(match kind {
        Kind::Id => Value::Number(u64::from(u32::try_from(number(raw)?).ok()?)),
        Kind::Count => Value::Number(number(raw)?),
        Kind::Kib => Value::Number(number(raw)?.checked_mul(1024)?),
        Kind::Percent => {
            let ok = raw.bytes().all(|b| b.is_ascii_digit() || b == b'.') && raw.len() < 24;
            Value::Real(ok.then(|| raw.parse::<f64>().ok()).flatten()?)
        }
        Kind::CpuTime => Value::Number(clock(raw, 3, 3)?),
        Kind::Elapsed => Value::Number(clock(raw, 2, 3)?),
        Kind::BsdTime => {
            let (minutes, seconds) = raw.split_once(':')?;
            let seconds = number(seconds).filter(|s| *s < 60)?;
            Value::Number(number(minutes)?.checked_mul(60)?.checked_add(seconds)?)
        }
        Kind::Seconds => Value::Number(number(raw)?),
        Kind::StartDay => Value::Start(raw.to_owned(), start_day(raw, ctx)?),
        Kind::Word | Kind::Rest | Kind::Start | Kind::BsdStart | Kind::LongStart => {
            Value::Text(raw.to_owned())
        }
    })
}

fn store(process: &mut Process, field: Field, keyword: &str, raw: &str, value: Value) {
    let id = |n: u64| u32::try_from(n).ok();
    match (field, value) {
        (Field::Pid, Value::Number(n)) => process.pid = id(n),
        (Field::Ppid, Value::Number(n)) => process.ppid = id(n),
        (Field::Pgid, Value::Number(n)) => process.pgid = id(n),
        (Field::Sid, Value::Number(n)) => process.sid = id(n),
        (Field::Tid, Value::Number(n)) => process.tid = id(n),
        (Field::Threads, Value::Number(n)) => process.threads = id(n),
        (Field::Uid, Value::Number(n)) => process.uid = id(n),
        (Field::C, Value::Number(n)) => process.c = id(n),
        (Field::Vsz, Value::Number(n)) => process.vsz_bytes = Some(n),
        (Field::Rss, Value::Number(n)) => process.rss_bytes = Some(n),
        (Field::CpuTime, Value::Number(n)) => process.cpu_seconds = Some(n),
        (Field::Elapsed, Value::Number(n)) => process.elapsed_seconds = Some(n),
        (Field::CpuPercent, Value::Real(x)) => process.cpu_percent = Some(x),
        (Field::MemPercent, Value::Real(x)) => process.mem_percent = Some(x),
        (Field::User, Value::Text(s)) => process.user = Some(s),
        (Field::Tty, Value::Text(s)) => process.tty = Some(s),
        (Field::Stat, Value::Text(s)) => process.stat = Some(s),
        (Field::State, Value::Text(s)) => process.state = Some(s),
        (Field::Comm, Value::Text(s)) => process.comm = Some(s),
        (Field::Command, Value::Text(s)) => process.command = Some(s),
        (Field::Start, Value::Start(s, at)) => {
            process.start = Some(s);
            process.started = at;
        }
        _ => {
            process.other.insert(keyword.to_owned(), raw.to_owned());
        }
    }
}

/// ASCII digits only (no sign, no `+`), as ps prints counts.
fn number(text: &str) -> Option<u64> {
    let ok = !text.is_empty() && text.len() <= 19 && text.bytes().all(|b| b.is_ascii_digit());
    ok.then(|| text.parse().ok()).flatten()
}

/// `[DD-][HH:]MM:SS` in seconds, with between `min` and `max` colon-separated parts.
fn clock(text: &str, min: usize, max: usize) -> Option<u64> {
    let (days, rest) = match text.split_once('-') {
        Some((days, rest)) => (number(days)?, rest),
        None => (0, text),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.len() < min || parts.len() > max || (days > 0 && parts.len() != 3) {
        return None;
    }
    let mut seconds = days.checked_mul(86_400)?;
    let mut scale = 1;
    for (i, part) in parts.iter().rev().enumerate() {
        let value = number(part)?;
        if (i < 2 && value >= 60) || (i == 2 && value >= 24) {
            return None;
        }
        seconds = seconds.checked_add(value.checked_mul(scale)?)?;
        scale *= 60;
    }
    Some(seconds)
}

/// `HH:MM` or `HH:MM:SS`.
fn time_of_day(text: &str) -> Option<NaiveTime> {
    let mut parts = text.split(':');
    let hour = u32::try_from(number(parts.next()?)?).ok()?;
    let minute = u32::try_from(number(parts.next()?)?).ok()?;
    let second = match parts.next() {
        Some(s) => u32::try_from(number(s)?).ok()?,
        None => 0,
    };
    if parts.next().is_some() {
        return None;
    }
    NaiveTime::from_hms_opt(hour, minute, second)
}

/// The latest moment at or before now (a minute of slack) with this time of day: ps prints
/// only the time for processes started within the last day (or, for `STIME`, today).
fn recent(time: NaiveTime, raw: &str, ctx: &Context) -> Option<Timestamp> {
    let now = ctx.now.naive_local();
    let mut at = now.date().and_time(time);
    if at > now.checked_add_signed(Duration::minutes(1))? {
        at = at.checked_sub_signed(Duration::days(1))?;
    }
    let mut stamp = Timestamp::local(at, raw, ctx)?;
    stamp.raw = None;
    Some(stamp)
}

/// `STIME`/`START` of `-f` and `u`: `HH:MM` today, `MonDD` this year, or a year.
fn start_day(raw: &str, ctx: &Context) -> Option<Option<Timestamp>> {
    if raw.contains(':') {
        return Some(Some(recent(time_of_day(raw)?, raw, ctx)?));
    }
    let day_ok = match (raw.get(..3).and_then(month_number), raw.get(3..)) {
        (Some(_), Some(day)) => number(day).is_some_and(|d| (1..=31).contains(&d)),
        _ => false,
    };
    let year_ok = raw.len() == 4 && number(raw).is_some();
    (day_ok || year_ok).then_some(None)
}

/// `start` (`HH:MM:SS` or `Mon DD`) and `bsdstart` (`HH:MM` or `Mon  D`).
fn short_start(raw: &str, kind: Kind, ctx: &Context) -> Option<Option<Timestamp>> {
    if raw.contains(':') {
        let time = time_of_day(raw)?;
        let colons = raw.matches(':').count();
        let fits = (kind == Kind::Start) == (colons == 2);
        return fits.then(|| recent(time, raw, ctx)).flatten().map(Some);
    }
    let (month, day) = raw.split_once(' ')?;
    month_number(month)?;
    number(day.trim_start()).filter(|d| (1..=31).contains(d))?;
    Some(None)
}

/// `lstart`: `Tue Dec  1 06:58:54 2026`, a full local time.
fn long_start(raw: &str, ctx: &Context) -> Option<Timestamp> {
    let mut words = raw.split_whitespace().skip(1);
    let month = month_number(words.next()?)?;
    let day = u32::try_from(number(words.next()?)?).ok()?;
    let time = time_of_day(words.next()?)?;
    let year = i32::try_from(number(words.next()?)?).ok()?;
    let date = NaiveDate::from_ymd_opt(year, month, day)?;
    let mut stamp = Timestamp::local(NaiveDateTime::new(date, time), raw, ctx)?;
    stamp.raw = None;
    Some(stamp)
}

#[cfg(test)]
#[path = "ps_tests.rs"]
mod tests;
