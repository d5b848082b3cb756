//! A schedule's timing: a cron expression read in an IANA time zone.

use std::str::FromStr;

use chrono::{DateTime, SubsecRound, Utc};
use chrono_tz::Tz;
use croner::Cron;

/// Most missed firings counted one by one; beyond, the count says "at least".
const MAX_COUNTED: u64 = 100_000;

/// A parsed cron expression and its time zone.
#[derive(Debug, Clone)]
pub struct CronSpec {
    cron: Cron,
    zone: Tz,
}

impl CronSpec {
    /// Parses `expression` (five fields, or six with seconds first) in `zone` (an IANA
    /// name; UTC when `None`); the error says what is wrong.
    pub fn parse(expression: &str, zone: Option<&str>) -> Result<CronSpec, String> {
        let fields = expression.split_whitespace().count();
        if !(5..=6).contains(&fields) {
            return Err(format!(
                "cron must have 5 fields (minute hour day-of-month month day-of-week), or 6 \
                 with seconds first; {expression:?} has {fields}"
            ));
        }
        let cron = Cron::from_str(expression).map_err(|e| format!("cron {expression:?}: {e}"))?;
        let zone = match zone {
            None => Tz::UTC,
            Some(name) => Tz::from_str(name).map_err(|_| {
                format!("timeZone {name:?} is not an IANA time zone (e.g. \"Europe/Berlin\")")
            })?,
        };
        let spec = CronSpec { cron, zone };
        // An expression that never matches (`0 0 31 2 *`) is refused now, not at firing.
        spec.next_after(Utc::now())
            .map(|_| spec)
            .ok_or_else(|| format!("cron {expression:?} never fires"))
    }

    /// The time zone's IANA name.
    pub fn zone(&self) -> &str {
        self.zone.name()
    }

    /// The first firing strictly after `after`, if there is one (a whole second).
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = after.trunc_subsecs(0).with_timezone(&self.zone);
        self.cron
            .find_next_occurrence(&local, false)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    /// How many firings fall in `(after, until]`, counted up to a bound.
    pub fn count_between(&self, after: DateTime<Utc>, until: DateTime<Utc>) -> u64 {
        let mut count = 0;
        let mut at = after;
        while count < MAX_COUNTED {
            match self.next_after(at) {
                Some(next) if next <= until => {
                    count += 1;
                    at = next;
                }
                _ => break,
            }
        }
        count
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    #[test]
    fn a_nightly_expression_fires_at_its_hour_in_its_time_zone() {
        let utc = CronSpec::parse("0 3 * * *", None).unwrap();
        assert_eq!(
            utc.next_after(at(2026, 1, 10, 12, 0)),
            Some(at(2026, 1, 11, 3, 0))
        );
        // 03:00 in Berlin is 02:00 UTC in winter and 01:00 UTC in summer.
        let berlin = CronSpec::parse("0 3 * * *", Some("Europe/Berlin")).unwrap();
        assert_eq!(berlin.zone(), "Europe/Berlin");
        assert_eq!(
            berlin.next_after(at(2026, 1, 10, 12, 0)),
            Some(at(2026, 1, 11, 2, 0))
        );
        assert_eq!(
            berlin.next_after(at(2026, 7, 10, 12, 0)),
            Some(at(2026, 7, 11, 1, 0))
        );
    }

    #[test]
    fn daylight_saving_nights_neither_skip_nor_double_a_firing() {
        let berlin = CronSpec::parse("30 2 * * *", Some("Europe/Berlin")).unwrap();
        // 2026-03-29: 02:00 becomes 03:00, so 02:30 does not exist that night.
        // It fires at the first time after the gap: 03:00 CEST.
        let spring = berlin.next_after(at(2026, 3, 28, 12, 0));
        assert_eq!(spring, Some(at(2026, 3, 29, 1, 0)));
        // 2026-10-25: 03:00 becomes 02:00, so 02:30 happens twice: it fires once, at
        // the first (CEST), and next at 02:30 CET the night after.
        let autumn = berlin.next_after(at(2026, 10, 24, 12, 0)).unwrap();
        assert_eq!(autumn, at(2026, 10, 25, 0, 30));
        assert_eq!(berlin.next_after(autumn), Some(at(2026, 10, 26, 1, 30)));
    }

    #[test]
    fn seconds_may_lead_and_missed_firings_are_counted() {
        let every_10s = CronSpec::parse("*/10 * * * * *", None).unwrap();
        let start = at(2026, 1, 1, 0, 0);
        assert_eq!(
            every_10s.next_after(start),
            Some(start + chrono::Duration::seconds(10))
        );
        assert_eq!(
            every_10s.count_between(start, start + chrono::Duration::seconds(60)),
            6
        );
        let hourly = CronSpec::parse("0 * * * *", None).unwrap();
        assert_eq!(hourly.count_between(start, at(2026, 1, 2, 0, 30)), 24);
    }

    #[test]
    fn bad_expressions_and_zones_are_refused_with_the_reason() {
        let fields = CronSpec::parse("0 3 * *", None).unwrap_err();
        assert!(
            fields.contains("5 fields") && fields.contains("has 4"),
            "{fields}"
        );
        let value = CronSpec::parse("0 25 * * *", None).unwrap_err();
        assert!(value.contains("\"0 25 * * *\""), "{value}");
        let zone = CronSpec::parse("0 3 * * *", Some("Mars/Olympus")).unwrap_err();
        assert!(
            zone.contains("Mars/Olympus") && zone.contains("IANA"),
            "{zone}"
        );
        let never = CronSpec::parse("0 0 31 2 *", None).unwrap_err();
        assert!(never.contains("never fires"), "{never}");
    }
}
