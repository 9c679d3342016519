//! `--since DATE` and `--until DATE`: inclusive UTC days, the seconds they cover, and the
//! partition values (`yyyy/MM/dd`) of the days between.

use aws_smithy_types::date_time::Format;
use aws_smithy_types::DateTime;

const DAY: u64 = 86_400;

/// The most days one audit may ask for (a year and a day).
pub const MOST_DAYS: u64 = 366;

/// Inclusive UTC days, as days since 1970-01-01.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Days {
    /// The first day.
    pub first: u64,
    /// The last day (inclusive).
    pub last: u64,
}

/// `YYYY-MM-DD` as days since 1970-01-01 (`None` for anything else, 2015-06-01 being the
/// earliest: VPC Flow Logs did not exist before).
pub fn parse_day(text: &str) -> Option<u64> {
    if text.len() != 10 || !text.is_ascii() {
        return None;
    }
    let seconds = DateTime::from_str(&format!("{text}T00:00:00Z"), Format::DateTime)
        .ok()?
        .secs();
    let days = u64::try_from(seconds).ok()? / DAY;
    (day_text(days) == text && days * DAY >= super::tally::EARLIEST_START).then_some(days)
}

/// Days since 1970-01-01 as `YYYY-MM-DD`.
pub fn day_text(days: u64) -> String {
    i64::try_from(days.saturating_mul(DAY))
        .ok()
        .and_then(|s| DateTime::from_secs(s).fmt(Format::DateTime).ok())
        .map(|t| t.chars().take(10).collect())
        .unwrap_or_default()
}

impl Days {
    /// The days `--since` and `--until` ask for: `None` when neither is given and
    /// `last_day_by_default` is not set (the file audit then counts every record); with it, the
    /// last 24 hours (yesterday and today) of `now` (epoch seconds).
    ///
    /// # Errors
    /// A sentence naming the flag and what is allowed.
    pub fn from_flags(
        since: Option<&str>,
        until: Option<&str>,
        now: u64,
        last_day_by_default: bool,
    ) -> Result<Option<Days>, String> {
        let today = now / DAY;
        let parse = |flag: &str, text: &str| {
            parse_day(text).ok_or_else(|| {
                format!(
                    "{flag} {:?} is not a day: give a UTC date as YYYY-MM-DD, from 2015-06-01 on, e.g. {flag} {}",
                    text.chars().take(40).collect::<String>(),
                    day_text(today)
                )
            })
        };
        let (first, last) = match (since, until) {
            (None, None) if !last_day_by_default => return Ok(None),
            (None, None) => (today.saturating_sub(1), today),
            (Some(since), None) => (parse("--since", since)?, today.max(parse("--since", since)?)),
            (None, Some(until)) => {
                let last = parse("--until", until)?;
                (last.saturating_sub(1), last)
            }
            (Some(since), Some(until)) => (parse("--since", since)?, parse("--until", until)?),
        };
        if first > last {
            return Err(format!(
                "--since {} is after --until {}: the days are inclusive, the first before the last",
                day_text(first),
                day_text(last)
            ));
        }
        if last - first + 1 > MOST_DAYS {
            return Err(format!(
                "{} to {} is {} days: ask for at most {MOST_DAYS} at once",
                day_text(first),
                day_text(last),
                last - first + 1
            ));
        }
        Ok(Some(Days { first, last }))
    }

    /// The seconds covered: `[first 00:00:00, the day after last 00:00:00)`.
    pub fn seconds(&self) -> (u64, u64) {
        (self.first * DAY, (self.last + 1) * DAY)
    }

    /// The days and one on each side: the partitions a run reads (AWS delivers a record after
    /// its end, into the next day's partition when it starts before midnight; see
    /// `super::around`).
    pub fn around(&self) -> Days {
        Days {
            first: self.first.saturating_sub(1),
            last: self.last + 1,
        }
    }

    /// Each day as a partition value, `yyyy/MM/dd`.
    pub fn partitions(&self) -> Vec<String> {
        (self.first..=self.last)
            .map(|d| day_text(d).replace('-', "/"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-06 12:00 UTC.
    const NOW: u64 = 1_796_515_200 + 12 * 3_600;

    #[test]
    fn days_are_inclusive_utc_dates_and_nonsense_is_refused() {
        assert_eq!(day_text(NOW / DAY), "2026-12-06");
        assert_eq!(Days::from_flags(None, None, NOW, false), Ok(None));
        let last_day = Days::from_flags(None, None, NOW, true).unwrap().unwrap();
        assert_eq!(last_day.partitions(), ["2026/12/05", "2026/12/06"]);
        let one = Days::from_flags(Some("2026-12-02"), Some("2026-12-02"), NOW, true)
            .unwrap()
            .unwrap();
        assert_eq!(one.seconds(), (1_796_169_600, 1_796_169_600 + DAY));
        assert_eq!(one.partitions(), ["2026/12/02"]);
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "26-12-01",
            "2026/12/01",
            "2015-05-31",
            "２０２６-12-01",
            "",
        ] {
            let refused = Days::from_flags(Some(bad), None, NOW, false).unwrap_err();
            assert!(
                refused.contains("--since") && refused.contains("YYYY-MM-DD"),
                "{bad}: {refused}"
            );
        }
        let backwards = Days::from_flags(Some("2026-12-03"), Some("2026-12-01"), NOW, false).unwrap_err();
        assert!(backwards.contains("after --until"), "{backwards}");
        let long = Days::from_flags(Some("2020-01-01"), Some("2026-01-01"), NOW, false).unwrap_err();
        assert!(long.contains("at most 366"), "{long}");
    }
}
