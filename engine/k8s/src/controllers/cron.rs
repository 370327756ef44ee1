//! CronJob schedules: the syntax the API server accepts in `spec.schedule` and the times a
//! schedule fires, in the CronJob's `spec.timeZone` (UTC when unset).
//!
//! Accepted, as the CronJob controller's parser does: five fields (minute, hour, day of month,
//! month, day of week) of `*`, `?` (= `*`), numbers, ranges `a-b`, steps `*/n`, `a-b/n` and
//! `a/n` (= `a-max/n`), comma lists, month names `JAN`..`DEC` and day names `SUN`..`SAT` (any
//! case; Sunday is 0, and 7 is also Sunday); the macros `@yearly` (`@annually`), `@monthly`,
//! `@weekly`, `@daily` (`@midnight`), `@hourly` and `@every DURATION`. When both the day of
//! month and the day of week are restricted, a day matching either fires (cron's rule); when
//! one of them is `*` (or `?`) the other decides. `TZ=` / `CRON_TZ=` prefixes are refused as
//! the API server refuses them (use `spec.timeZone`).
//!
//! Times are computed in the zone's civil time: a time a daylight-saving change skips fires
//! as far after the gap's start as it was into it (02:30 on a day that jumps from 02:00 to
//! 03:00 fires at 03:30, as Go reads such a time), one it repeats fires once (at its first
//! occurrence).
//! Zone data is jiff's bundled IANA database, so answers do not depend on the machine.

use std::time::Duration;

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// A parsed `spec.schedule`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// `@every DURATION`: every so long after the previous time.
    Every(Duration),
    /// Five fields as bit sets.
    Fields(Fields),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fields {
    minute: u64,
    hour: u32,
    /// Bits 1..=31.
    dom: u32,
    /// Bits 1..=12.
    month: u16,
    /// Bits 0..=6, Sunday 0.
    dow: u8,
    /// Whether day of month or day of week was `*` / `?` (unrestricted).
    dom_star: bool,
    dow_star: bool,
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// How far ahead `next_after` looks for a matching time (a schedule such as `0 0 30 2 *`
/// never fires).
const SEARCH_YEARS: i16 = 8;

impl Schedule {
    /// Parses a schedule; the error reads like the API server's validation message.
    pub fn parse(s: &str) -> Result<Schedule, String> {
        let s = s.trim();
        if s.starts_with("TZ=") || s.starts_with("CRON_TZ=") {
            return Err("cannot use TZ or CRON_TZ in schedule, use timeZone field instead".into());
        }
        let bad = |why: String| format!("unparseable schedule {s:?}: {why}");
        if let Some(rest) = s.strip_prefix("@every ") {
            let d = ksched_engine::util::duration::parse_go_duration(rest.trim()).map_err(bad)?;
            if d < Duration::from_secs(1) {
                return Ok(Schedule::Every(Duration::from_secs(1)));
            }
            // Whole seconds, as the controller's parser keeps them.
            return Ok(Schedule::Every(Duration::from_secs(d.as_secs())));
        }
        let expanded = match s.to_ascii_lowercase().as_str() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            m if m.starts_with('@') => return Err(bad(format!("unrecognized descriptor {m:?}"))),
            _ => s,
        };
        let parts: Vec<&str> = expanded.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(bad(format!("expected exactly 5 fields, found {}", parts.len())));
        }
        let field = |i: usize, lo: u32, hi: u32, names: &[&str]| field(parts[i], lo, hi, names).map_err(&bad);
        let (minute, _) = field(0, 0, 59, &[])?;
        let (hour, _) = field(1, 0, 23, &[])?;
        let (dom, dom_star) = field(2, 1, 31, &[])?;
        let (month, _) = field(3, 1, 12, &MONTHS)?;
        let (mut dow, dow_star) = field(4, 0, 7, &DAYS)?;
        // 7 is Sunday too.
        if dow & (1 << 7) != 0 {
            dow = (dow & !(1 << 7)) | 1;
        }
        Ok(Schedule::Fields(Fields {
            minute,
            hour: hour as u32,
            dom: dom as u32,
            month: month as u16,
            dow: dow as u8,
            dom_star,
            dow_star,
        }))
    }

    /// The first time this schedule fires strictly after `t`, in `tz`; `None` when it never
    /// does within the next years.
    pub fn next_after(&self, t: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        match self {
            Schedule::Every(d) => {
                let secs = i64::try_from(d.as_secs()).ok()?;
                // Whole seconds after `t`.
                let base = Timestamp::from_second(t.as_second()).ok()?;
                base.checked_add(secs.seconds()).ok()
            }
            Schedule::Fields(f) => f.next_after(t, tz),
        }
    }

    /// The latest time this schedule fired in `(after, until]`, if any (the controller's most
    /// recent unmet schedule time), and how many times it fired there.
    pub fn last_in(&self, after: Timestamp, until: Timestamp, tz: &TimeZone) -> Option<(Timestamp, u64)> {
        let mut last = None;
        let mut n = 0u64;
        let mut t = after;
        while let Some(next) = self.next_after(t, tz).filter(|n| *n <= until) {
            last = Some(next);
            n += 1;
            t = next;
        }
        last.map(|l| (l, n))
    }
}

impl Fields {
    fn day_matches(&self, dt: DateTime) -> bool {
        let dom = self.dom & (1 << dt.day()) != 0;
        let dow = self.dow & (1 << dt.weekday().to_sunday_zero_offset()) != 0;
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    fn next_after(&self, t: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let start = t.to_zoned(tz.clone()).datetime();
        // The next whole minute after `t`.
        let mut dt = start.with().second(0).subsec_nanosecond(0).build().ok()?.checked_add(1.minute()).ok()?;
        let limit = start.year().checked_add(SEARCH_YEARS)?;
        while dt.year() <= limit {
            if self.month & (1 << dt.month()) == 0 {
                dt = dt.first_of_month().start_of_day().checked_add(1.month()).ok()?;
                continue;
            }
            if !self.day_matches(dt) {
                dt = dt.start_of_day().tomorrow().ok()?;
                continue;
            }
            if self.hour & (1 << dt.hour()) == 0 {
                dt = dt.with().minute(0).build().ok()?.checked_add(1.hour()).ok()?;
                continue;
            }
            if self.minute & (1 << dt.minute()) == 0 {
                dt = dt.checked_add(1.minute()).ok()?;
                continue;
            }
            let at = tz.to_ambiguous_zoned(dt).compatible().ok()?.timestamp();
            if at > t {
                return Some(at);
            }
            // A repeated hour: its second occurrence is not another firing.
            dt = dt.checked_add(1.minute()).ok()?;
        }
        None
    }
}

/// One field as a bit set over `lo..=hi`, and whether it was `*` / `?` without a step.
fn field(s: &str, lo: u32, hi: u32, names: &[&str]) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    let mut star = false;
    for part in s.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, st)) => {
                let step: u32 = st.parse().map_err(|_| format!("invalid step {st:?} in {s:?}"))?;
                if step == 0 {
                    return Err(format!("step of 0 in {s:?}"));
                }
                (r, Some(step))
            }
            None => (part, None),
        };
        let (a, b) = if range == "*" || range == "?" {
            star |= step.is_none();
            (lo, hi)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a, lo, hi, names, s)?, value(b, lo, hi, names, s)?)
        } else {
            let a = value(range, lo, hi, names, s)?;
            // `a/n` runs to the field's end.
            (a, if step.is_some() { hi } else { a })
        };
        if a > b {
            return Err(format!("beginning of range ({a}) beyond end of range ({b}) in {s:?}"));
        }
        let step = step.unwrap_or(1);
        let mut v = a;
        while v <= b {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, star))
}

fn value(v: &str, lo: u32, hi: u32, names: &[&str], field: &str) -> Result<u32, String> {
    let lower = v.to_ascii_lowercase();
    let n = match names.iter().position(|n| *n == lower) {
        // Month names count from 1, day names from 0.
        Some(i) => i as u32 + lo.min(1),
        None => v.parse::<u32>().map_err(|_| format!("failed to parse {v:?} in {field:?}"))?,
    };
    if n < lo || n > hi {
        return Err(format!("{n} out of range [{lo}, {hi}] in {field:?}"));
    }
    Ok(n)
}

/// The zone of `spec.timeZone` (UTC when unset); the error reads like the API server's.
pub fn time_zone(name: Option<&str>) -> Result<TimeZone, String> {
    match name {
        None => Ok(TimeZone::UTC),
        Some(n) => TimeZone::get(n).map_err(|_| format!("Invalid value: {n:?}: unknown time zone {n}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    /// The first `n` firing times after `from` in `zone`, as RFC 3339 strings in UTC.
    fn firings(schedule: &str, zone: Option<&str>, from: &str, n: usize) -> Vec<String> {
        let s = Schedule::parse(schedule).unwrap_or_else(|e| panic!("{schedule}: {e}"));
        let tz = time_zone(zone).unwrap();
        let mut t = ts(from);
        let mut out = Vec::new();
        for _ in 0..n {
            t = s.next_after(t, &tz).unwrap();
            out.push(t.to_string());
        }
        out
    }

    #[test]
    fn cron_schedules_fire_when_cron_would() {
        // (schedule, time zone, from, want the next firings in UTC)
        let cases: &[(&str, Option<&str>, &str, &[&str])] = &[
            ("*/15 * * * *", None, "2025-01-01T00:07:30Z", &["2025-01-01T00:15:00Z", "2025-01-01T00:30:00Z"]),
            ("0 * * * *", None, "2025-01-01T00:00:00Z", &["2025-01-01T01:00:00Z", "2025-01-01T02:00:00Z"]),
            ("@hourly", None, "2025-01-01T00:59:59Z", &["2025-01-01T01:00:00Z"]),
            ("@daily", None, "2025-03-10T12:00:00Z", &["2025-03-11T00:00:00Z", "2025-03-12T00:00:00Z"]),
            ("@weekly", None, "2025-01-01T00:00:00Z", &["2025-01-05T00:00:00Z", "2025-01-12T00:00:00Z"]),
            ("@monthly", None, "2025-01-31T00:00:00Z", &["2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z"]),
            ("@yearly", None, "2025-06-01T00:00:00Z", &["2026-01-01T00:00:00Z"]),
            ("30 9 * * MON-FRI", None, "2025-01-03T10:00:00Z", &["2025-01-06T09:30:00Z", "2025-01-07T09:30:00Z"]),
            ("0 0 29 2 *", None, "2025-01-01T00:00:00Z", &["2028-02-29T00:00:00Z"]),
            // Day of month OR day of week when both are restricted: the 13th and Fridays.
            (
                "0 0 13 * 5",
                None,
                "2025-06-01T00:00:00Z",
                &["2025-06-06T00:00:00Z", "2025-06-13T00:00:00Z", "2025-06-20T00:00:00Z"],
            ),
            // 7 is Sunday; names in any case; a/n runs to the end; lists.
            ("0 12 * jan,Feb 7", None, "2025-01-01T00:00:00Z", &["2025-01-05T12:00:00Z"]),
            (
                "50/5 23 * * *",
                None,
                "2025-01-01T00:00:00Z",
                &["2025-01-01T23:50:00Z", "2025-01-01T23:55:00Z", "2025-01-02T23:50:00Z"],
            ),
            ("@every 90m", None, "2025-01-01T00:00:10.5Z", &["2025-01-01T01:30:10Z", "2025-01-01T03:00:10Z"]),
            // 09:00 in New York is 14:00 UTC in winter and 13:00 UTC in summer.
            ("0 9 * * *", Some("America/New_York"), "2025-03-08T15:00:00Z", &["2025-03-09T13:00:00Z"]),
            ("0 9 * * *", Some("America/New_York"), "2025-03-07T15:00:00Z", &["2025-03-08T14:00:00Z"]),
            // 02:30 does not exist on 2025-03-09 in New York: it fires an hour later (03:30 EDT),
            // as Go reads a time in a gap.
            (
                "30 2 * * *",
                Some("America/New_York"),
                "2025-03-08T12:00:00Z",
                &["2025-03-09T07:30:00Z", "2025-03-10T06:30:00Z"],
            ),
            // 01:30 happens twice on 2025-11-02 in New York: it fires once.
            (
                "30 1 * * *",
                Some("America/New_York"),
                "2025-11-02T04:00:00Z",
                &["2025-11-02T05:30:00Z", "2025-11-03T06:30:00Z"],
            ),
        ];
        for (schedule, zone, from, want) in cases {
            assert_eq!(firings(schedule, *zone, from, want.len()), *want, "{schedule} in {zone:?} after {from}");
        }
    }

    #[test]
    fn cron_schedules_the_api_server_refuses_are_errors() {
        // (schedule, a word of the error)
        let cases = [
            ("TZ=UTC 0 * * * *", "use timeZone field"),
            ("CRON_TZ=Asia/Tokyo @daily", "use timeZone field"),
            ("* * * *", "exactly 5 fields"),
            ("60 * * * *", "out of range"),
            ("* 24 * * *", "out of range"),
            ("* * 0 * *", "out of range"),
            ("* * * 13 *", "out of range"),
            ("* * * * 8", "out of range"),
            ("*/0 * * * *", "step of 0"),
            ("5-1 * * * *", "beyond end of range"),
            ("@fortnightly", "unrecognized descriptor"),
            ("@every soon", "invalid duration"),
            ("a * * * *", "failed to parse"),
        ];
        for (schedule, word) in cases {
            let err = Schedule::parse(schedule).expect_err(schedule);
            assert!(err.contains(word), "{schedule}: {err}");
        }
        assert!(time_zone(Some("Mars/Olympus_Mons")).unwrap_err().contains("unknown time zone"));
    }

    #[test]
    fn cron_last_in_finds_the_most_recent_unmet_time() {
        let s = Schedule::parse("*/10 * * * *").unwrap();
        let tz = TimeZone::UTC;
        let got = s.last_in(ts("2025-01-01T00:00:00Z"), ts("2025-01-01T00:35:00Z"), &tz);
        assert_eq!(got, Some((ts("2025-01-01T00:30:00Z"), 3)));
        assert_eq!(s.last_in(ts("2025-01-01T00:30:00Z"), ts("2025-01-01T00:39:59Z"), &tz), None);
    }
}
