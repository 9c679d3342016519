//! What a run reads around the days asked for: the rule that makes daily runs add up to the
//! whole (issue 61, item 6), the same for files, S3 and Athena.
//!
//! - **A flow record belongs to the day of its start** (`start`, else `end`). A run over
//!   `--since D1 --until D2` counts the records that start on those days; every other record it
//!   reads is context only, matched with the other end of its flow and never counted
//!   (`outside_window`). So a flow across midnight counts in one day's run, the day its
//!   counted end started.
//! - **AWS delivers a record into the folder (and the Athena partition) of the day it was
//!   delivered**, after its end: a record that starts at 23:59:50 lies in the next day's
//!   folder, and the other end of a flow that starts just after midnight may lie in the day
//!   before's (AWS stamps each interface up to 60 s late). So a run reads around its days:
//!   - given the delivery path of a region (`…/AWSLogs/ACCOUNT/vpcflowlogs/REGION/`), the
//!     folders of D1−1 to D2+1;
//!   - given one day's folder (`…/yyyy/MM/dd/`, the guide's daily job), that folder and its two
//!     neighbours;
//!   - of the neighbour folders outside the days, only the files AWS wrote within
//!     [`EDGE_SECONDS`] of the days (by the time in the file's name,
//!     `…_YYYYMMDDTHHmmZ_…`; a file whose name has none is read);
//!   - Athena reads the partitions D1−1 to D2+1 ([`super::athena::partition_predicate`]).

use std::path::PathBuf;

use super::days::{day_text, Days};
use super::read::{Input, Location};

/// How far past the days' edges a neighbour folder's files are read (by their names' time):
/// records are delivered minutes after their window ends (a window is at most 10 minutes), and
/// a flow's two ends are stamped at most a minute apart.
pub const EDGE_SECONDS: u64 = 2 * 3_600;

const DAY: u64 = 86_400;

/// One place to read, and which part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// Where.
    pub location: Location,
    /// `None`: every file; `Some((from, to))`: the files written in `[from, to)` (epoch
    /// seconds, by their names), and those whose names give no time.
    pub written: Option<(u64, u64)>,
}

/// `yyyy/MM/dd` of a day.
fn folder(day: u64) -> String {
    day_text(day).replace('-', "/")
}

/// The day of a trailing `yyyy/MM/dd` in `parts` (the path's components), with the rest.
fn trailing_day<'a>(parts: &'a [&'a str]) -> Option<(u64, &'a [&'a str])> {
    let [rest @ .., y, m, d] = parts else { return None };
    let digits = |t: &str, n: usize| t.len() == n && t.bytes().all(|b| b.is_ascii_digit());
    if !(digits(y, 4) && digits(m, 2) && digits(d, 2)) {
        return None;
    }
    let day = super::days::parse_day(&format!("{y}-{m}-{d}"))?;
    Some((day, rest))
}

/// Whether `parts` end at a region's delivery path (`…/AWSLogs/ACCOUNT/vpcflowlogs/REGION`).
fn is_region_path(parts: &[&str]) -> bool {
    matches!(parts, [.., "AWSLogs", _, "vpcflowlogs", region] if !region.is_empty())
}

/// The places a run over `days` reads for `location` (see the module's note).
pub fn places(location: &Location, days: Option<&Days>) -> Vec<Place> {
    let whole = |location: Location| Place {
        location,
        written: None,
    };
    let Some(days) = days else {
        return vec![whole(location.clone())];
    };
    let (from, to) = days.seconds();
    let edge = |day: u64| -> Option<(u64, u64)> {
        if day < days.first {
            Some((from.saturating_sub(EDGE_SECONDS), from))
        } else if day > days.last {
            Some((to, to + EDGE_SECONDS))
        } else {
            None
        }
    };
    match location {
        Location::S3 { bucket, prefix } => {
            let trimmed = prefix.trim_end_matches('/');
            let parts: Vec<&str> = trimmed.split('/').collect();
            let at = |base: &str, day: u64| Place {
                location: Location::S3 {
                    bucket: bucket.clone(),
                    prefix: format!("{base}/{}/", folder(day)),
                },
                written: edge(day),
            };
            if is_region_path(&parts) {
                return (days.first.saturating_sub(1)..=days.last + 1)
                    .map(|d| at(trimmed, d))
                    .collect();
            }
            if let Some((day, rest)) = trailing_day(&parts) {
                let base = rest.join("/");
                return [day.saturating_sub(1), day, day + 1]
                    .into_iter()
                    .filter(|d| *d == day || edge(*d).is_some())
                    .map(|d| Place {
                        written: if d == day { None } else { edge(d) },
                        ..at(&base, d)
                    })
                    .collect();
            }
            vec![whole(location.clone())]
        }
        Location::Path(path) => {
            let text = path.to_string_lossy();
            let parts: Vec<&str> = text.trim_end_matches('/').split('/').collect();
            let Some((day, rest)) = trailing_day(&parts) else {
                return vec![whole(location.clone())];
            };
            let base = PathBuf::from(rest.join("/"));
            let mut out = vec![whole(location.clone())];
            for neighbour in [day.saturating_sub(1), day + 1] {
                let dir = base.join(folder(neighbour));
                if let (Some(written), true) = (edge(neighbour), dir.is_dir()) {
                    out.push(Place {
                        location: Location::Path(dir),
                        written: Some(written),
                    });
                }
            }
            out
        }
    }
}

/// The time AWS wrote a file, from its name (`…_YYYYMMDDTHHmmZ_…`), epoch seconds.
pub fn written_at(name: &str) -> Option<u64> {
    let file = name.rsplit('/').next().unwrap_or(name);
    file.split('_').find_map(|part| {
        let b = part.as_bytes();
        if b.len() != 14 || b[8] != b'T' || b[13] != b'Z' {
            return None;
        }
        let digits = |r: std::ops::Range<usize>| -> Option<u64> {
            let t = part.get(r)?;
            t.bytes().all(|c| c.is_ascii_digit()).then(|| t.parse().ok())?
        };
        let day = super::days::parse_day(&format!("{}-{}-{}", part.get(0..4)?, part.get(4..6)?, part.get(6..8)?))?;
        let (hours, minutes) = (digits(9..11)?, digits(11..13)?);
        (hours < 24 && minutes < 60).then_some(day * DAY + hours * 3_600 + minutes * 60)
    })
}

/// The inputs of a neighbour folder a run reads: those written within `written`, and those
/// whose names give no time.
pub fn keep(inputs: Vec<Input>, written: Option<(u64, u64)>) -> Vec<Input> {
    let Some((from, to)) = written else { return inputs };
    inputs
        .into_iter()
        .filter(|input| {
            let name = match input {
                Input::File(path, _) => path
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default(),
                Input::Object { key, .. } => key.clone(),
            };
            written_at(&name).is_none_or(|t| (from..to).contains(&t))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_reads_its_days_and_the_edges_of_their_neighbours() {
        let days = Days {
            first: super::super::days::parse_day("2026-12-01").unwrap(),
            last: super::super::days::parse_day("2026-12-01").unwrap(),
        };
        let (from, to) = days.seconds();
        let region = Location::S3 {
            bucket: "b".into(),
            prefix: "AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/".into(),
        };
        let got: Vec<(String, Option<(u64, u64)>)> = places(&region, Some(&days))
            .into_iter()
            .map(|p| match p.location {
                Location::S3 { prefix, .. } => (prefix, p.written),
                Location::Path(_) => unreachable!(),
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/2026/11/30/".to_string(),
                    Some((from - EDGE_SECONDS, from))
                ),
                (
                    "AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/2026/12/01/".to_string(),
                    None
                ),
                (
                    "AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/2026/12/02/".to_string(),
                    Some((to, to + EDGE_SECONDS))
                ),
            ]
        );
        let day = Location::S3 {
            bucket: "b".into(),
            prefix: "AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/2026/12/01/".into(),
        };
        assert_eq!(places(&day, Some(&days)).len(), 3);
        assert_eq!(places(&day, None).len(), 1);
        let other = Location::S3 {
            bucket: "b".into(),
            prefix: "logs/".into(),
        };
        assert_eq!(
            places(&other, Some(&days)),
            vec![Place {
                location: other.clone(),
                written: None
            }]
        );
        assert_eq!(
            written_at("123456789012_vpcflowlogs_us-east-1_fl-1234abcd_20261202T0005Z_fe123456.log.gz"),
            Some(to + 300)
        );
        assert_eq!(written_at("part0.log.gz"), None);
        assert_eq!(written_at("x_20261302T0005Z_y"), None);
    }
}
