# Every plan reads the last 7 complete days of cross-zone data transfer from Cost Explorer and
# warns when the daily average rises above the budget: a replica map gone stale, a client that
# ignores it. Scoped to the check block, a Cost Explorer failure is a warning too, never a
# failed plan.
check "cross_zone_spend" {
  data "locality_cross_zone_cost" "last_week" {}

  assert {
    condition     = data.locality_cross_zone_cost.last_week.average_daily_usd <= 25
    error_message = "Cross-zone data transfer averaged ${data.locality_cross_zone_cost.last_week.average_daily_usd} USD a day from ${data.locality_cross_zone_cost.last_week.start_date} through ${data.locality_cross_zone_cost.last_week.last_date}, above the 25 USD budget: run `locality audit` to see which clients read across zones."
  }
}
