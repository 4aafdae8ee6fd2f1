use super::*;
use crate::testutil::ctx_at as ctx;

#[test]
fn year_of_a_recent_date() {
    let c = ctx("2026-01-01T10:00:00+01:00");
    assert_eq!(infer_year(12, 31, &c), Some(2025));
    assert_eq!(infer_year(1, 1, &c), Some(2026));
    assert_eq!(infer_year(1, 2, &c), Some(2026), "one day of slack");
    assert_eq!(infer_year(2, 29, &ctx("2029-03-01T00:00:00Z")), Some(2028));
    assert_eq!(infer_year(2, 30, &c), None);
}

#[test]
fn local_time_keeps_what_was_printed() {
    let c = ctx("2026-12-01T20:00:00+01:00");
    let naive = NaiveDate::from_ymd_opt(2026, 12, 1)
        .unwrap()
        .and_hms_opt(9, 30, 0)
        .unwrap();
    let t = Timestamp::local(naive, "Dec  1 09:30", &c).unwrap();
    assert_eq!(t.rfc3339.to_rfc3339(), "2026-12-01T09:30:00+01:00");
    assert_eq!(t.epoch, 1_796_113_800);
    assert_eq!(t.raw.as_deref(), Some("Dec  1 09:30"));
    assert_eq!(month_number("Dec"), Some(12));
    assert_eq!(month_number("Dez"), None);
}
