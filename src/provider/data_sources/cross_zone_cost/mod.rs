//! `locality_cross_zone_cost`: the cross-zone data transfer bill, per day, from AWS Cost
//! Explorer, read in every plan (a `check` block's assertion warns when it rises).
//!
//! - `schema.rs`: the schema (its descriptions are the docs);
//! - `model.rs`: the model, the only place attributes are named;
//! - this file: the window (whole UTC days), the call (`crate::provider::aws::Aws::daily_cost`)
//!   and the sums.

mod model;
mod schema;

use async_trait::async_trait;
use aws_smithy_types::date_time::{DateTime, Format};

pub use model::{CrossZoneCostModel, DayModel};
pub use schema::schema;

use crate::provider::aws::CostQuery;
use crate::provider::timeouts::{self, Operation};
use crate::provider::ProviderData;
use crate::tfplugin::{AttributePath, Context, DataSource, Diagnostics, Field, Number, Schema};

/// The data source type.
pub struct CrossZoneCost;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_cross_zone_cost";

const DAY: i64 = 86_400;

/// The read's default deadline: every page, retries included (a server that answers page after
/// page, or not at all, ends here).
pub const TIMEOUTS: timeouts::Defaults = timeouts::Defaults::all(std::time::Duration::from_secs(5 * 60));

/// A `YYYY-MM-DD` date as days since 1970-01-01.
fn parse_date(text: &str) -> Option<i64> {
    if text.len() != 10 {
        return None;
    }
    let seconds = DateTime::from_str(&format!("{text}T00:00:00Z"), Format::DateTime)
        .ok()?
        .secs();
    (date(seconds / DAY) == text).then_some(seconds / DAY)
}

/// Days since 1970-01-01 as `YYYY-MM-DD`.
fn date(days: i64) -> String {
    DateTime::from_secs(days * DAY)
        .fmt(Format::DateTime)
        .map(|t| t.chars().take(10).collect())
        .unwrap_or_default()
}

/// A figure rounded to `places` decimals, as a number.
fn rounded(value: f64, places: i32) -> Field<Number> {
    let scale = 10f64.powi(places);
    Number::from_f64((value * scale).round() / scale).ok().into()
}

/// The window: (first day, day after the last), in days since 1970-01-01.
fn window(config: &CrossZoneCostModel, today: i64, diags: &mut Diagnostics) -> Option<(i64, i64)> {
    let days = match config.days.get() {
        None => schema::DEFAULT_DAYS,
        Some(n) => match n.as_u64() {
            Some(d) if (1..=schema::MAX_DAYS).contains(&d) => d,
            _ => {
                diags.attribute_error(
                    AttributePath::root("days"),
                    "Invalid window",
                    format!(
                        "days = {} is not a whole number from 1 to {}: e.g. days = 7 for the last week.",
                        n.as_str(),
                        schema::MAX_DAYS
                    ),
                );
                return None;
            }
        },
    } as i64;
    let mut dates = [None, None];
    for (slot, name) in dates.iter_mut().zip(["start_date", "end_date"]) {
        let field = if name == "start_date" {
            &config.start_date
        } else {
            &config.end_date
        };
        if let Some(text) = field.get() {
            match parse_date(text) {
                Some(d) => *slot = Some(d),
                None => {
                    diags.attribute_error(
                        AttributePath::root(name),
                        "Invalid date",
                        format!("{name} = {text:?} is not a date: write YYYY-MM-DD, e.g. \"2026-12-01\"."),
                    );
                    return None;
                }
            }
        }
    }
    let (start, end) = match dates {
        [Some(s), Some(e)] => (s, e),
        [Some(s), None] => (s, s + days),
        [None, Some(e)] => (e - days, e),
        [None, None] => (today - days, today),
    };
    if end <= start {
        diags.attribute_error(
            AttributePath::root("end_date"),
            "Invalid window",
            format!(
                "end_date {} is not after start_date {}: the window is start_date (inclusive) to end_date (exclusive).",
                date(end),
                date(start)
            ),
        );
        return None;
    }
    if end - start > schema::MAX_DAYS as i64 {
        diags.attribute_error(
            AttributePath::root("start_date"),
            "Invalid window",
            format!(
                "{} to {} is {} days: at most {} days.",
                date(start),
                date(end),
                end - start,
                schema::MAX_DAYS
            ),
        );
        return None;
    }
    Some((start, end))
}

#[async_trait]
impl DataSource<ProviderData> for CrossZoneCost {
    type Model = CrossZoneCostModel;

    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &CrossZoneCostModel, diags: &mut Diagnostics) {
        let _ = window(config, 0, diags);
        timeouts::validate(&config.timeouts, diags);
        if config.tag_key.is_known() != config.tag_value.is_known()
            && !config.tag_key.is_unknown()
            && !config.tag_value.is_unknown()
        {
            let missing = if config.tag_key.is_known() {
                "tag_value"
            } else {
                "tag_key"
            };
            diags.attribute_error(
                AttributePath::root(missing),
                "Incomplete tag filter",
                "tag_key and tag_value go together: e.g. tag_key = \"team\" and tag_value = \"cache\".",
            );
        }
        if let Some(pattern) = config.usage_type_pattern.get() {
            if pattern.trim().is_empty() {
                diags.attribute_error(
                    AttributePath::root("usage_type_pattern"),
                    "Empty pattern",
                    "usage_type_pattern would match every usage type: e.g. \"DataTransfer-Regional-Bytes\".",
                );
            }
        }
    }

    async fn read(
        &self,
        ctx: &Context<ProviderData>,
        mut config: CrossZoneCostModel,
        diags: &mut Diagnostics,
    ) -> Option<CrossZoneCostModel> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let (start, end) = window(&config, now / DAY, diags)?;
        let pattern = config
            .usage_type_pattern
            .get()
            .cloned()
            .unwrap_or_else(|| schema::DEFAULT_PATTERN.to_string());
        let query = CostQuery {
            start: date(start),
            end: date(end),
            usage_type_pattern: pattern.clone(),
            service: config.service.get().cloned(),
            linked_account: config.linked_account.get().cloned(),
            tag: config.tag_key.get().cloned().zip(config.tag_value.get().cloned()),
        };
        let aws = ctx.data.aws().await;
        let limit = timeouts::of(&config.timeouts, Operation::Read, TIMEOUTS);
        let report = match timeouts::within(limit, Operation::Read, TYPE_NAME, aws.daily_cost(&query)).await {
            Ok(Ok(report)) => report,
            Ok(Err(e)) => {
                diags.error("Cannot read the cross-zone cost", e.to_string());
                return None;
            }
            Err(timed_out) => {
                diags.add(timed_out);
                return None;
            }
        };
        if !report.bad_amounts.is_empty() {
            diags.warning(
                "Amounts that are not numbers were left out",
                format!(
                    "Cost Explorer gave amounts that are not a finite, non-negative number of at most 10^12 (USD or GB a day); they are left out of total_usd, total_gb and average_daily_usd: {}.",
                    report.bad_amounts.join("; ")
                ),
            );
        }
        if !report.bad_dates.is_empty() {
            diags.warning(
                "Days that are not dates of the window were left out",
                format!(
                    "Cost Explorer gave days whose start is not a real YYYY-MM-DD date from {} to {}; they are left out of daily and every total: {}{}.",
                    date(start),
                    date(end - 1),
                    report.bad_dates.join("; "),
                    if report.more_bad_dates > 0 {
                        format!(" and {} more", report.more_bad_dates)
                    } else {
                        String::new()
                    }
                ),
            );
        }
        if report.matched_groups == 0 && !report.other_usage_types.is_empty() {
            let mut seen: Vec<(&String, &f64)> = report.other_usage_types.iter().collect();
            seen.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
            let listed: Vec<String> = seen
                .iter()
                .take(10)
                .map(|(usage_type, usd)| format!("{usage_type} ({usd:.2} USD)"))
                .collect();
            let more = seen.len().saturating_sub(listed.len());
            diags.attribute_warning(
                AttributePath::root("usage_type_pattern"),
                "No usage type matches the pattern",
                format!(
                    "No usage type from {} to {} contains usage_type_pattern {pattern:?}, so every figure is 0; Cost Explorer reported other usage: {}{}. Set usage_type_pattern to part of the one that is cross-zone data transfer (e.g. \"DataTransfer-Regional-Bytes\").",
                    date(start),
                    date(end - 1),
                    listed.join(", "),
                    if more > 0 { format!(" and {more} more") } else { String::new() }
                ),
            );
        }
        let days = report.days;
        let total_usd: f64 = days.iter().map(|d| d.usd).sum();
        let total_gb: f64 = days.iter().map(|d| d.gb).sum();
        config.daily = Field::Known(
            days.iter()
                .map(|d| DayModel {
                    date: d.date.clone().into(),
                    usd: rounded(d.usd, 10),
                    gb: rounded(d.gb, 10),
                })
                .collect(),
        );
        config.total_usd = rounded(total_usd, 10);
        config.total_gb = rounded(total_gb, 10);
        config.average_daily_usd = rounded(total_usd / (end - start) as f64, 10);
        config.usage_type_pattern = pattern.into();
        config.start_date = date(start).into();
        config.end_date = date(end).into();
        config.last_date = date(end - 1).into();
        config.days = Number::parse(&(end - start).to_string()).ok().into();
        Some(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_and_nonsense_is_refused() {
        assert_eq!(parse_date("2026-12-04").map(date).as_deref(), Some("2026-12-04"));
        assert_eq!(parse_date("2024-02-29").map(date).as_deref(), Some("2024-02-29"));
        for bad in [
            "2026-02-30",
            "2026-13-01",
            "26-12-04",
            "2026-12-04T00:00:00Z",
            "",
            "２０２６-12-04",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }
}
