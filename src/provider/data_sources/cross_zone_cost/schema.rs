//! The `locality_cross_zone_cost` schema. Its descriptions are the data source's documentation.

use crate::provider::timeouts::{self, Operation};
use crate::tfplugin::{Attribute, Block, Schema, Type};

/// The usage types counted unless `usage_type_pattern` says otherwise.
pub(super) const DEFAULT_PATTERN: &str = "DataTransfer-Regional-Bytes";
/// The window's length unless `days` says otherwise.
pub(super) const DEFAULT_DAYS: u64 = 7;
/// The longest window (Cost Explorer keeps 14 months of daily data at most).
pub(super) const MAX_DAYS: u64 = 366;

/// The data source schema.
pub fn schema() -> Schema {
    let number = |name: &str, text: &str| Attribute::number(name).computed().description(text);
    Schema {
        version: 0,
        block: Block::new(
            "What data crossing availability zones cost, per day, from AWS Cost Explorer (GetCostAndUsage, DAILY, \
             grouped by usage type): the usage types whose name contains `usage_type_pattern` \
             (`DataTransfer-Regional-Bytes` by default, which matches every region's, e.g. \
             `APN1-DataTransfer-Regional-Bytes`), over a window of whole days (the last 7 complete days by default). \
             Read in every plan, it turns the manual Cost Explorer check into an assertion: put it in a `check` \
             block, and every plan warns when the average daily cost rises above a budget (a replica map gone stale, \
             a client that ignores it).\n\n\
             Needs `ce:GetCostAndUsage` (each request costs 0.01 USD). Cost Explorer's API is served from \
             `us-east-1` only: the data source calls it there whatever the `aws` block's region (the credentials \
             and endpoint are the block's). Cost Explorer's figures lag by up to a day, and the last day may be an \
             estimate. This is account-wide (optionally one service, linked account or cost allocation tag): \
             `locality audit` says which clients and nodes the bytes are. It reads the bill itself, so it needs no \
             price and counts nothing twice: a byte between an EC2 client and an ElastiCache node in another AZ is \
             billed once, at the EC2 side (no ElastiCache data transfer charge in or out of the node), and Cost \
             Explorer shows it once; a byte between two EC2 instances in different AZs is billed on both sides, \
             and shows twice.",
        )
        .attribute(
            Attribute::string("usage_type_pattern")
                .optional()
                .computed()
                .description("Usage types whose name contains this are counted. Default: `DataTransfer-Regional-Bytes`."),
        )
        .attribute(
            Attribute::number("days")
                .optional()
                .computed()
                .description("The window's length in days, 1 to 366, ending with `end_date` (default: 7, ending today: the last 7 complete days in UTC). Ignored when both dates are given."),
        )
        .attribute(
            Attribute::string("start_date")
                .optional()
                .computed()
                .description("The window's first day, `YYYY-MM-DD` (inclusive). Default: `days` before `end_date`."),
        )
        .attribute(
            Attribute::string("end_date")
                .optional()
                .computed()
                .description("The day after the window, `YYYY-MM-DD` (exclusive). Default: today (UTC), or `days` after `start_date` when only that is given."),
        )
        .attribute(
            Attribute::string("last_date")
                .computed()
                .description("The window's last day, `YYYY-MM-DD` (inclusive: the day before `end_date`). Say the window as a person reads it: `from ${start_date} through ${last_date}`."),
        )
        .attribute(
            Attribute::string("service")
                .optional()
                .description("Only this service, as Cost Explorer's `SERVICE` dimension names it, e.g. `EC2 - Other`."),
        )
        .attribute(
            Attribute::string("linked_account")
                .optional()
                .description("Only this member account of an organization (12 digits)."),
        )
        .attribute(
            Attribute::string("tag_key")
                .optional()
                .description("Only resources with this cost allocation tag (activated in Billing); with `tag_value`."),
        )
        .attribute(
            Attribute::string("tag_value")
                .optional()
                .description("The value of `tag_key`."),
        )
        .attribute(
            Attribute::typed(
                "daily",
                Type::list(Type::object([
                    ("date", Type::String),
                    ("usd", Type::Number),
                    ("gb", Type::Number),
                ])),
            )
            .computed()
            .description("One element per day Cost Explorer reports, oldest first: `date` (`YYYY-MM-DD`), `usd` (unblended cost) and `gb` (usage quantity) of the matching usage types."),
        )
        .attribute(number("total_usd", "The window's cost, USD (the sum of `daily[*].usd`)."))
        .attribute(number("average_daily_usd", "`total_usd` over the window's days: the figure to hold against a daily budget."))
        .attribute(number("total_gb", "The window's usage, GB (the sum of `daily[*].gb`)."))
        .block(timeouts::block(
            &[Operation::Read],
            super::TIMEOUTS,
            "every page of Cost Explorer's answer, retries included",
        )),
    }
}
