//! The `locality_cloud_region` schema. Its descriptions are the data source's documentation.

use crate::tfplugin::{Attribute, Block, Schema};

/// The data source schema.
pub fn schema() -> Schema {
    let computed = |name: &str, text: &str| Attribute::string(name).computed().description(text);
    Schema {
        version: 0,
        block: Block::new(
            "Which cloud region an IP address is in, by longest-prefix match against the IP ranges AWS, Google \
             Cloud, Azure and Oracle publish. The ranges are a snapshot built into the provider, or the newer one \
             written by `locality ranges update` when `LOCALITY_RANGES_FILE` names it (`ranges_source` says which, \
             `ranges_date` how old it is), so this works offline; `locality lookup` answers from the same snapshot. \
             A snapshot older than 180 days gives a plan-time warning: the clouds add ranges every week.\n\n\
             An address in no cloud's ranges is not an error: `found` is false and the other attributes are \
             null, so a configuration can filter on it. An address in a global range (e.g. AWS CloudFront) has a \
             vendor but no region and no hint.\n\n\
             The function `provider::locality::cloud_region(ip)` (Terraform 1.8+) gives the same answer as a \
             value, or null: use it in expressions over many addresses (`for`, `for_each`, locals); use this data \
             source when the snapshot's date and source belong in state, or for the warning about an old snapshot.",
        )
        .attribute(Attribute::string("ip").required().description("The IPv4 or IPv6 address to look up."))
        .attribute(Attribute::bool("found").computed().description("Whether the address is in a published cloud range."))
        .attribute(computed("vendor", "`aws`, `azure`, `gcp` or `oci`, as Cloudflare's hints spell them."))
        .attribute(computed("region", "The region, in the vendor's naming (`ap-northeast-1`, `asia-northeast1`, `japaneast`, `ap-tokyo-1`); null for global ranges."))
        .attribute(computed("prefix", "The longest published prefix that holds the address."))
        .attribute(computed("service", "The service the cloud lists the prefix under (`EC2`, `Google Cloud`, `AzureCloud`, `OCI`, ...)."))
        .attribute(computed("hint", "`vendor:region`, e.g. `aws:ap-northeast-1`: ready for `locality_region_hint`; null without a region."))
        .attribute(computed("ranges_date", "The date of the snapshot used (YYYY-MM-DD): the built-in one's, or that of the file `LOCALITY_RANGES_FILE` names — the newest publication date of the clouds' files it was built from."))
        .attribute(computed("ranges_source", "Which snapshot answered: `built-in`, or the path in `LOCALITY_RANGES_FILE`.")),
    }
}
