//! UTC calendar times for humans: epoch milliseconds shown as RFC 3339
//! (`2023-11-14T22:13:20.000Z`, `inspect`) and timestamps read from the command line
//! (`verify --since 2024-05-01T12:00:00Z`). Proleptic Gregorian calendar, days from
//! 1970-01-01 by Howard Hinnant's `days_from_civil` / `civil_from_days`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Days since 1970-01-01 of the date `y-m-d` (`m` 1..=12, `d` 1..=31).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `(y, m, d)` of `z` days since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Epoch milliseconds as RFC 3339 UTC with milliseconds: `2023-11-14T22:13:20.000Z`.
pub(crate) fn format_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// Parses `YYYY-MM-DD` (midnight UTC) or `YYYY-MM-DDTHH:MM[:SS[.fraction]]` (`T` or a
/// space) with an optional zone `Z` or `+HH:MM` / `-HH:MM` (none: UTC). `None` when
/// `text` is not one of those or names no real date.
pub(crate) fn parse_timestamp(text: &str) -> Option<SystemTime> {
    let t = text.trim();
    let num = |s: &str| -> Option<i64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    if t.len() < 10 || !t.is_char_boundary(10) {
        return None;
    }
    let (date, rest) = t.split_at(10);
    let mut dp = date.split('-');
    let (y, m, d) = (num(dp.next()?)?, num(dp.next()?)?, num(dp.next()?)?);
    if dp.next().is_some() || !(1..=12).contains(&m) || d < 1 {
        return None;
    }
    let days = days_from_civil(y, m, d);
    // 2023-02-30 does not exist: it would come back as another date.
    if civil_from_days(days) != (y, m, d) {
        return None;
    }
    let mut secs = days * 86_400;
    let mut nanos = 0u32;
    if !rest.is_empty() {
        let rest = rest.strip_prefix(['T', 't', ' '])?;
        // Zone: a trailing Z, or +HH:MM / -HH:MM.
        let (clock, offset) = if let Some(c) = rest.strip_suffix(['Z', 'z']) {
            (c, 0)
        } else if rest.len() > 6 && matches!(rest.as_bytes()[rest.len() - 6], b'+' | b'-') {
            let (c, z) = rest.split_at(rest.len() - 6);
            let (h, mi) = z[1..].split_once(':')?;
            let (h, mi) = (num(h)?, num(mi)?);
            if h > 23 || mi > 59 {
                return None;
            }
            let sign = if z.starts_with('-') { -1 } else { 1 };
            (c, sign * (h * 3600 + mi * 60))
        } else {
            (rest, 0)
        };
        let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
        let mut parts = hms.split(':');
        let h = num(parts.next()?)?;
        let mi = num(parts.next()?)?;
        let s = match parts.next() {
            Some(s) => num(s)?,
            None if frac.is_empty() => 0,
            None => return None,
        };
        if parts.next().is_some() || h > 23 || mi > 59 || s > 60 {
            return None;
        }
        if !frac.is_empty() {
            num(frac)?;
            let digits: String = frac.chars().chain("000000000".chars()).take(9).collect();
            nanos = digits.parse().ok()?;
        }
        secs += h * 3600 + mi * 60 + s - offset;
    }
    let since_epoch = Duration::new(secs.unsigned_abs(), nanos);
    if secs >= 0 {
        UNIX_EPOCH.checked_add(since_epoch)
    } else {
        UNIX_EPOCH
            .checked_sub(Duration::from_secs(secs.unsigned_abs()))
            .and_then(|t| t.checked_add(Duration::from_nanos(u64::from(nanos))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(t: SystemTime) -> i64 {
        t.duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_millis() as i64
    }

    #[test]
    fn formats_epoch_millis_as_rfc3339_utc() {
        assert_eq!(format_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_millis(1_700_000_000_000), "2023-11-14T22:13:20.000Z");
        assert_eq!(format_millis(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(format_millis(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn parses_dates_and_times_with_zones() {
        let p = |s: &str| parse_timestamp(s).map(millis);
        assert_eq!(p("2023-11-14T22:13:20Z"), Some(1_700_000_000_000));
        assert_eq!(p("2023-11-14T22:13:20.5Z"), Some(1_700_000_000_500));
        assert_eq!(p("2023-11-14 22:13:20"), Some(1_700_000_000_000));
        assert_eq!(p("2023-11-14T23:13:20+01:00"), Some(1_700_000_000_000));
        assert_eq!(p("2023-11-14T21:13:20-01:00"), Some(1_700_000_000_000));
        assert_eq!(p("2023-11-14T22:13Z"), Some(1_699_999_980_000));
        assert_eq!(p("2000-02-29"), Some(951_782_400_000));
        for bad in [
            "",
            "2023-02-30",
            "2023-13-01",
            "2023-1-01",
            "yesterday",
            "2023-11-14T25:00:00Z",
            "2023-11-14T22",
            "2023-11-14X22:13:20",
            "2023-11-14T22:13:20+0100",
        ] {
            assert_eq!(p(bad), None, "{bad:?}");
        }
        // Round trip through the formatter.
        let t = 1_234_567_890_123;
        assert_eq!(p(&format_millis(t)), Some(t));
    }
}
