//! Timestamps as every typed result carries them: RFC 3339 and epoch seconds, plus the text as
//! printed where the conversion added something the output did not say (a year `ls` left out,
//! the local offset of a time printed without one).

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, NaiveDateTime, TimeZone};
use schemars::JsonSchema;
use serde::Serialize;

use crate::Context;

/// A moment in time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Timestamp {
    /// RFC 3339, with the offset the output gave, else the local one. Written out only when
    /// the record is encoded (most records of a huge output never are).
    #[serde(serialize_with = "as_rfc3339")]
    #[schemars(with = "String")]
    pub rfc3339: DateTime<FixedOffset>,
    /// Seconds since 1970-01-01T00:00:00Z.
    pub epoch: i64,
    /// The text as printed, kept when the conversion inferred part of it (year, offset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

impl Timestamp {
    /// A moment printed with its offset: nothing was inferred.
    pub fn exact(at: DateTime<FixedOffset>) -> Timestamp {
        Timestamp {
            rfc3339: at,
            epoch: at.timestamp(),
            raw: None,
        }
    }

    /// A wall-clock time printed without an offset, read in the local zone of `ctx.now`.
    pub fn local(naive: NaiveDateTime, raw: &str, ctx: &Context) -> Option<Timestamp> {
        let at = ctx.now.offset().from_local_datetime(&naive).single()?;
        Some(Timestamp {
            raw: Some(raw.to_owned()),
            ..Timestamp::exact(at)
        })
    }
}

fn as_rfc3339<S: serde::Serializer>(at: &DateTime<FixedOffset>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&at.to_rfc3339())
}

/// The year of a date printed without one, as `ls` and `ps` print recent dates: the latest year
/// in which that month and day are not after today (a file dated "Dec 31" read on Jan 1 is from
/// last year). `None` for a day no year has (Feb 30).
pub fn infer_year(month: u32, day: u32, ctx: &Context) -> Option<i32> {
    let today = ctx.now.date_naive();
    let this_year = today.year();
    let candidate = NaiveDate::from_ymd_opt(this_year, month, day)
        .or_else(|| NaiveDate::from_ymd_opt(this_year - 1, month, day));
    match candidate {
        // One day of slack: a file written "tomorrow" by a clock a little ahead, or in a zone
        // east of ours, is still this year's.
        Some(date) if date.year() == this_year && date <= today.succ_opt().unwrap_or(today) => {
            Some(this_year)
        }
        _ => NaiveDate::from_ymd_opt(this_year - 1, month, day)
            .map(|_| this_year - 1)
            .or_else(|| {
                (1..=4)
                    .map(|back| this_year - back)
                    .find(|y| NaiveDate::from_ymd_opt(*y, month, day).is_some())
            }),
    }
}

/// `Jan` … `Dec` (English, as the C locale prints them) to 1 … 12.
pub fn month_number(abbrev: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let at = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(abbrev))?;
    u32::try_from(at + 1).ok()
}

#[cfg(test)]
#[path = "time_tests.rs"]
mod tests;
