//! The date column of `ls -l`, in whichever style printed it. The styles differ in shape, so
//! the shape picks the style (the `TIME_STYLE` environment variable can change the default
//! without a flag showing it):
//! - locale default (C): `Dec  1 21:04` (recent) or `Jan  2  2020` (older or future);
//! - `long-iso`: `2020-01-02 03:04`;
//! - `full-iso` (`--full-time`): `2020-01-02 03:04:05.123456789 +0000`, the only exact one;
//! - `iso`: `12-01 21:04` (recent) or `2020-01-02 ` (older, padded to the same width).
//!
//! `long-iso` and an older `iso` date both start with a full date; `iso` pads it with a second
//! space where `long-iso` has one space and the time, so the spacing tells them apart even
//! when a name starts with digits.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime};

use crate::Context;
use crate::columns::Cursor;
use crate::text::number;
use crate::time::{Timestamp, infer_year, month_number};

/// The last locale-default date read: files of one checkout, build or download share their
/// minute, and reading the date again is most of the cost of a line.
#[derive(Default)]
pub(super) struct LastDate {
    raw: String,
    at: Option<(chrono::DateTime<chrono::FixedOffset>, i64)>,
}

/// Reads the date at the cursor: `Some(None)` for `?` (not known), `None` if no style fits.
/// `keep_raw`: false when the line is only checked (see `Memo::checking`).
pub(super) fn read(
    cur: &mut Cursor<'_>,
    ctx: &Context,
    last: &mut LastDate,
    keep_raw: bool,
) -> Option<Option<Timestamp>> {
    let (start, first) = cur.token_at()?;
    if first == "?" {
        return Some(None);
    }
    if first.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return locale_default(cur, start, first, ctx, last, keep_raw).map(Some);
    }
    if let Some(date) = full_date(first) {
        if cur.rest().starts_with("  ") {
            // An older `iso` date: the padding space belongs to the date column.
            cur.skip_space();
            return Timestamp::local(date.and_time(NaiveTime::MIN), first, ctx).map(Some);
        }
        let time = cur.token()?;
        if time.len() > 5 {
            let offset = cur.token()?;
            if !offset.starts_with(['+', '-']) {
                return None;
            }
            let at = DateTime::parse_from_str(cur.since(start), "%Y-%m-%d %H:%M:%S%.f %z").ok()?;
            return Some(Some(Timestamp::exact(at)));
        }
        let naive = date.and_time(clock(time)?);
        return Timestamp::local(naive, cur.since(start), ctx).map(Some);
    }
    // A recent `iso` date: `MM-DD HH:MM`.
    let (month, day) = first.split_once('-')?;
    let (month, day) = (two_digits(month)?, two_digits(day)?);
    let time = clock(cur.token()?)?;
    let year = infer_year(month, day, ctx)?;
    let naive = NaiveDate::from_ymd_opt(year, month, day)?.and_time(time);
    Timestamp::local(naive, cur.since(start), ctx).map(Some)
}

/// `Dec  1 21:04` or `Jan  2  2020`.
fn locale_default(
    cur: &mut Cursor<'_>,
    start: usize,
    month: &str,
    ctx: &Context,
    memo: &mut LastDate,
    keep_raw: bool,
) -> Option<Timestamp> {
    let day = cur.token()?;
    let last = cur.token()?;
    let raw = cur.since(start);
    if let Some((at, epoch)) = memo.at.filter(|_| memo.raw == raw) {
        return Some(Timestamp {
            rfc3339: at,
            epoch,
            raw: keep_raw.then(|| raw.to_owned()),
        });
    }
    let month = month_number(month)?;
    let day = Some(day)
        .filter(|d| d.len() <= 2)
        .and_then(|d| d.parse::<u32>().ok())?;
    let naive: NaiveDateTime = if last.contains(':') {
        let year = infer_year(month, day, ctx)?;
        NaiveDate::from_ymd_opt(year, month, day)?.and_time(clock(last)?)
    } else {
        let year = number(last).filter(|_| last.len() <= 6)?;
        let year = i32::try_from(year).ok()?;
        NaiveDate::from_ymd_opt(year, month, day)?.and_time(NaiveTime::MIN)
    };
    let stamp = Timestamp::local(naive, raw, ctx)?;
    memo.raw.clear();
    memo.raw.push_str(raw);
    memo.at = Some((stamp.rfc3339, stamp.epoch));
    Some(stamp)
}

/// `2020-01-02`.
fn full_date(text: &str) -> Option<NaiveDate> {
    let mut parts = text.splitn(3, '-');
    let year = parts.next().filter(|y| y.len() == 4).and_then(number)?;
    let month = two_digits(parts.next()?)?;
    let day = two_digits(parts.next()?)?;
    NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)
}

/// `21:04`.
fn clock(text: &str) -> Option<NaiveTime> {
    let (hour, minute) = text.split_once(':')?;
    NaiveTime::from_hms_opt(two_digits(hour)?, two_digits(minute)?, 0)
}

fn two_digits(text: &str) -> Option<u32> {
    let value = number(text).filter(|_| text.len() == 2)?;
    u32::try_from(value).ok()
}
