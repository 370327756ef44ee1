//! Go `time.Duration` strings (`300ms`, `1m30s`, `1.5h`, `0`), the one parser every input
//! uses: the scheduler configuration (`httpTimeout`), scheduler_perf workload files (`duration`,
//! `durationParam`) and the command line (`ksched soak --duration`).

use std::time::Duration;

/// Parses a Go duration: a sequence of decimal numbers, each with a unit (`ns`, `us`/`µs`,
/// `ms`, `s`, `m`, `h`), with an optional leading `+`; `0` alone needs no unit. Negative
/// durations are an error (nothing ksched reads takes one).
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?} (want e.g. 300ms, 10s, 1m30s)");
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    if rest.is_empty() || rest.starts_with('-') {
        return Err(bad());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += n * unit;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

/// A duration on the command line: a Go duration, or a bare number of seconds (`20`).
pub fn parse_cli_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = s.parse().map_err(|_| format!("invalid duration {s:?} (want e.g. 60s, 10m, 1h30m)"))?;
        return Duration::try_from_secs_f64(secs).map_err(|e| format!("invalid duration {s:?}: {e}"));
    }
    parse_go_duration(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_go_duration_takes_go_forms_and_rejects_the_rest() {
        let cases = [
            ("300ms", Some(Duration::from_millis(300))),
            ("30s", Some(Duration::from_secs(30))),
            ("1m30s", Some(Duration::from_secs(90))),
            ("1.5h", Some(Duration::from_secs(5400))),
            ("1.5s", Some(Duration::from_millis(1500))),
            ("2us", Some(Duration::from_micros(2))),
            ("2µs", Some(Duration::from_micros(2))),
            ("7ns", Some(Duration::from_nanos(7))),
            ("+5s", Some(Duration::from_secs(5))),
            ("0", Some(Duration::ZERO)),
            ("10", None),
            ("30", None),
            ("-1s", None),
            ("", None),
            ("s", None),
            ("3x", None),
            ("5d", None),
            ("3 s", None),
            ("1..5s", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_go_duration(s).ok(), want, "{s:?}");
        }
        assert_eq!(parse_go_duration("5d").unwrap_err(), "invalid duration \"5d\" (want e.g. 300ms, 10s, 1m30s)");
    }

    #[test]
    fn parse_cli_duration_also_takes_bare_seconds() {
        let cases = [
            ("60s", Some(Duration::from_secs(60))),
            ("10m", Some(Duration::from_secs(600))),
            ("1.5h", Some(Duration::from_secs(5400))),
            ("250ms", Some(Duration::from_millis(250))),
            ("20", Some(Duration::from_secs(20))),
            (" 20 ", Some(Duration::from_secs(20))),
            ("0.5", Some(Duration::from_millis(500))),
            ("5d", None),
            ("", None),
            ("-3", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_cli_duration(s).ok(), want, "{s:?}");
        }
    }
}
