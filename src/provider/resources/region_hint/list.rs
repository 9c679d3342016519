//! `list "locality_region_hint"` for `terraform query`: the mappings of one zone (the shared,
//! paged listing), each with its identity and, with `include_resource`, its full state.

use async_trait::async_trait;

use super::{check_zone_id, RegionHint, RegionHintModel};
use crate::provider::ProviderData;
use crate::tfplugin::{Attribute, Block, Context, Diagnostic, Diagnostics, Field, ListResource, Listed, Schema};

crate::model! {
    /// The `config` block of a `list "locality_region_hint"` block.
    pub struct RegionHintListConfig {
        /// The zone to list.
        pub zone_id: Field<String>,
    }
}

/// The `config` block's schema.
pub fn list_schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "Every origin cloud-region hint of one zone, for `terraform query` (`list` blocks live in \
             `*.tfquery.hcl` files; Terraform 1.14 and later): each result is named \
             `<ip> → <vendor>:<region>` and carries the resource identity (`zone_id`, `origin_ip`), so \
             `-generate-config-out` writes a `locality_region_hint` with an `import` block for each.",
        )
        .attribute(
            Attribute::string("zone_id")
                .required()
                .description("The zone's ID (32 hexadecimal characters)."),
        ),
    }
}

#[async_trait]
impl ListResource<ProviderData> for RegionHint {
    type ListConfig = RegionHintListConfig;

    fn list_schema(&self) -> Schema {
        list_schema()
    }

    fn validate_list(&self, config: &RegionHintListConfig, diags: &mut Diagnostics) {
        check_zone_id(config.zone_id.get(), diags);
    }

    async fn list(
        &self,
        ctx: &Context<ProviderData>,
        config: RegionHintListConfig,
        limit: usize,
        diags: &mut Diagnostics,
    ) -> Vec<Listed<RegionHintModel>> {
        let Some(zones) = diags.check(ctx.data.cloudflare()) else {
            return Vec::new();
        };
        let Some(zone) = config.zone_id.get() else {
            return Vec::new();
        };
        let listing = zones.listing(zone).await;
        let Some(listing) =
            diags.check(listing.map_err(|e| Diagnostic::from(e).context(format!("Listing zone {zone}"))))
        else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for mapping in listing.values().take(limit) {
            let display_name = format!("{} → {}:{}", mapping.origin_ip, mapping.vendor, mapping.region);
            let colos = zones.upper_tier_colos(zone, &mapping.vendor, &mapping.region).await;
            let mut state = RegionHintModel::from_mapping(zone, mapping.clone());
            state.set_colos(colos.unwrap_or_default());
            found.push(Listed { display_name, state });
        }
        found
    }
}
