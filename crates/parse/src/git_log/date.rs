//! The dates `git log` prints under `--date=` (or `log.date`): each style has its own shape, so
//! the shape says which one it is, whichever of flag or config chose it. Styles that name a
//! moment only roughly (`relative`, `human`, `short`) or in a user's own pattern (`format:`)
//! are not read: a parser does not make up the missing hours.

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, NaiveDateTime, TimeZone, Weekday};

use crate::Context;
use crate::time::{Timestamp, month_number};

/// `--date=STYLE` values whose output is read.
pub(super) fn readable(style: &str) -> bool {
    let style = style.strip_suffix("-local").unwrap_or(style);
    matches!(
        style,
        "default"
            | "iso"
            | "iso8601"
            | "iso-strict"
            | "iso8601-strict"
            | "rfc"
            | "rfc2822"
            | "raw"
            | "unix"
            | "local"
    )
}

/// One date as printed on a `Date:` line.
pub(super) fn parse(text: &str, ctx: &Context) -> Option<Timestamp> {
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        // rfc: `Tue, 1 Dec 2026 20:57:16 +0000`.
        [weekday, ..] if weekday.ends_with(',') => {
            Some(Timestamp::exact(DateTime::parse_from_rfc2822(text).ok()?))
        }
        // default: `Tue Dec 1 20:57:16 2026 +0000`; default-local has no offset.
        [weekday, month, day, time, year, rest @ ..] if rest.len() <= 1 => {
            let naive = naive(year, month_number(month)?, day, time)?;
            if weekday.parse::<Weekday>().ok()? != naive.weekday() {
                return None;
            }
            match rest {
                [offset] => exact(naive, offset),
                _ => Timestamp::local(naive, text, ctx),
            }
        }
        // iso: `2026-12-01 20:57:16 +0000`.
        [date, time, offset] => {
            let mut parts = date.splitn(3, '-');
            let (year, month, day) = (parts.next()?, parts.next()?, parts.next()?);
            exact(naive(year, month.parse().ok()?, day, time)?, offset)
        }
        // raw: `1796159836 +0000`.
        [epoch, offset] => {
            let at = DateTime::from_timestamp(epoch.parse().ok()?, 0)?;
            Some(Timestamp::exact(at.with_timezone(&offset_of(offset)?)))
        }
        // iso-strict `2026-12-01T20:57:16+00:00`, or unix `1796159836`.
        [one] if one.contains('T') => {
            Some(Timestamp::exact(DateTime::parse_from_rfc3339(one).ok()?))
        }
        [epoch] => Some(Timestamp::exact(
            DateTime::from_timestamp(epoch.parse().ok()?, 0)?.fixed_offset(),
        )),
        _ => None,
    }
}

fn naive(year: &str, month: u32, day: &str, time: &str) -> Option<NaiveDateTime> {
    let mut hms = time.splitn(3, ':').map(str::parse::<u32>);
    let (h, m, s) = (hms.next()?.ok()?, hms.next()?.ok()?, hms.next()?.ok()?);
    NaiveDate::from_ymd_opt(year.parse().ok()?, month, day.parse().ok()?)?.and_hms_opt(h, m, s)
}

fn exact(naive: NaiveDateTime, offset: &str) -> Option<Timestamp> {
    let at = offset_of(offset)?.from_local_datetime(&naive).single()?;
    Some(Timestamp::exact(at))
}

/// `+0530`, `-0700`.
fn offset_of(text: &str) -> Option<FixedOffset> {
    let (sign, digits) = match text.split_at_checked(1)? {
        ("+", digits) => (1, digits),
        ("-", digits) => (-1, digits),
        _ => return None,
    };
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: i32 = digits.parse().ok()?;
    FixedOffset::east_opt(sign * ((value / 100) * 3600 + (value % 100) * 60))
}
