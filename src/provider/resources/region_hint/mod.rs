//! `locality_region_hint`: one Cloudflare origin cloud-region mapping (its page:
//! `docs/resources/region_hint.md`).
//!
//! - `schema.rs`: the schema (its descriptions are the docs);
//! - `model.rs`: the model, the only place attributes are named;
//! - `moved.rs`: the state of the official `cloudflare_origin_cloud_region`, for `moved` blocks;
//! - this file: the glue between model and client. The client, the per-zone listing cache,
//!   batching and create-without-takeover live in `crate::provider::cloudflare`.

mod list;
mod model;
mod moved;
mod schema;

use async_trait::async_trait;

pub use list::{list_schema, RegionHintListConfig};
pub use model::{Hint, RegionHintModel};
pub use schema::{identity_schema, schema};

use crate::provider::cloudflare::{canonical_ip, CreateError, Owner, Support};
use crate::provider::timeouts::{self, Operation};
use crate::provider::ProviderData;
use crate::regions::{near_matches, regions, CATALOGUE_DATE, VENDORS};
use crate::tfplugin::{
    identity_string, AttributePath, Context, Diagnostic, Diagnostics, Field, IdentitySchema, MoveSource, Resource,
    Schema, Value,
};

/// The resource type.
pub struct RegionHint;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_region_hint";

/// Default `timeouts`: 5 minutes for each operation.
pub const TIMEOUTS: timeouts::Defaults = timeouts::Defaults::all(std::time::Duration::from_secs(5 * 60));

/// Whether `zone` looks like a Cloudflare zone ID.
pub fn is_zone_id(zone: &str) -> bool {
    zone.len() == 32 && zone.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// " Did you mean ...?" with the candidates near `word`, or nothing.
pub(crate) fn suggestions(word: &str, candidates: &[&str]) -> String {
    match near_matches(word, candidates).as_slice() {
        [] => String::new(),
        near => format!(
            " Did you mean {}?",
            near.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Why `text` is refused as an origin IP.
pub(crate) fn not_an_ip(text: &str) -> String {
    format!("{text:?} is not an IPv4 or IPv6 address (no port, brackets, zone index or leading zeros), e.g. \"192.0.2.1\" or \"2001:db8::1\".")
}

/// Reports a `zone_id` that is not a zone ID (unknown values pass).
pub(crate) fn check_zone_id(zone: Option<&String>, diags: &mut Diagnostics) {
    if let Some(zone) = zone.filter(|z| !is_zone_id(z)) {
        diags.attribute_error(
            AttributePath::root("zone_id"),
            "Invalid zone ID",
            format!("{zone:?} is not a Cloudflare zone ID: 32 lowercase hexadecimal characters, as shown on the zone's Overview page."),
        );
    }
}

/// A string an `import { identity = {...} }` must give.
pub(crate) fn required_identity<'a>(identity: &'a Value, name: &str) -> Result<&'a str, Diagnostic> {
    identity_string(identity, name).ok_or_else(|| {
        Diagnostic::error(
            "Incomplete identity",
            format!("The identity needs `{name}`; see the resource's Import section for its attributes."),
        )
    })
}

/// What is wrong with a (lowercase) vendor name, if anything.
pub(crate) fn vendor_problem(vendor: &str) -> Option<String> {
    (!VENDORS.contains(&vendor)).then(|| {
        format!(
            "{vendor:?} is not a cloud Cloudflare knows; allowed: \"aws\", \"azure\", \"gcp\", \"oci\".{}",
            suggestions(vendor, &VENDORS)
        )
    })
}

/// What is wrong with a region of a (lowercase) vendor, if anything: a region missing from the
/// built-in catalogue, with near matches. Unknown vendors are [`vendor_problem`]'s.
pub(crate) fn region_problem(vendor: &str, region: &str) -> Option<String> {
    let known = regions(vendor)?;
    let lower = region.to_ascii_lowercase();
    (!known.contains(&lower.as_str())).then(|| {
        format!(
            "{region:?} is not {} in the built-in catalogue ({CATALOGUE_DATE}).{}",
            crate::regions::a_region_of(vendor),
            suggestions(&lower, known)
        )
    })
}

#[async_trait]
impl Resource<ProviderData> for RegionHint {
    type Model = RegionHintModel;

    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn identity_schema(&self) -> Option<IdentitySchema> {
        Some(identity_schema())
    }

    fn move_state(&self, source: &MoveSource<'_>, diags: &mut Diagnostics) -> Option<RegionHintModel> {
        moved::from_official(source, diags)
    }

    fn identity(&self, state: &RegionHintModel) -> Option<Value> {
        let zone = state.zone_id.get()?;
        let ip = canonical_ip(state.origin_ip.get()?)?;
        Some(identity_schema().value([
            ("zone_id", Value::String(zone.clone())),
            ("origin_ip", Value::String(ip)),
        ]))
    }

    fn import_id(&self, _ctx: &Context<ProviderData>, identity: &Value) -> Result<String, Diagnostic> {
        let zone = required_identity(identity, "zone_id")?;
        let ip = required_identity(identity, "origin_ip")?;
        Ok(format!("{zone}/{ip}"))
    }

    fn validate(&self, config: &RegionHintModel, diags: &mut Diagnostics) {
        check_zone_id(config.zone_id.get(), diags);
        if let Some(ip) = config.origin_ip.get() {
            if canonical_ip(ip).is_none() {
                diags.attribute_error(AttributePath::root("origin_ip"), "Invalid IP address", not_an_ip(ip));
            }
        }
        let vendor = config.vendor.get().map(|v| v.to_ascii_lowercase());
        if let Some(problem) = vendor.as_deref().and_then(vendor_problem) {
            diags.attribute_error(AttributePath::root("vendor"), "Unknown vendor", problem);
        }
        if let (Some(v), Some(region)) = (vendor, config.region.get()) {
            if let Some(problem) = region_problem(&v, region) {
                diags.attribute_error(AttributePath::root("region"), "Unknown region", problem);
            }
        }
        timeouts::validate(&config.timeouts, diags);
    }

    async fn modify_plan(
        &self,
        ctx: &Context<ProviderData>,
        _prior: Option<&RegionHintModel>,
        _config: &RegionHintModel,
        planned: &mut RegionHintModel,
        diags: &mut Diagnostics,
    ) {
        let Some(zones) = diags.check(ctx.data.cloudflare()) else {
            return;
        };
        let Some(hint) = planned.hint() else { return };
        planned.id = hint.id().into();
        if let Some((_, other)) = zones
            .plan_claim(&hint.zone, Owner::Single, std::slice::from_ref(&hint.mapping.origin_ip))
            .first()
        {
            let by = match other {
                Owner::ZoneWide { exclusive: true } => {
                    "a locality_region_hints with `exclusive = true` (which would delete it)"
                }
                _ => "a locality_region_hints",
            };
            diags.attribute_error(
                AttributePath::root("origin_ip"),
                "IP managed twice",
                format!(
                    "{} of zone {} is also managed by {by} of this configuration. Manage each IP in one resource: \
                     drop this locality_region_hint (a `removed` block with `destroy = false` keeps the mapping) or \
                     the IP there.",
                    hint.mapping.origin_ip, hint.zone
                ),
            );
        }
        // The framework keeps the colos while vendor and region are unchanged; otherwise they
        // are known at plan time when the zone publishes them, else filled in at apply.
        if planned.upper_tier_colos.is_unknown() {
            if let Ok(Support::Supported(colos)) = zones
                .support(&hint.zone, &hint.mapping.vendor, &hint.mapping.region)
                .await
            {
                planned.set_colos(colos);
            }
        }
    }

    async fn read(
        &self,
        ctx: &Context<ProviderData>,
        mut state: RegionHintModel,
        diags: &mut Diagnostics,
    ) -> Option<RegionHintModel> {
        let zones = diags.check(ctx.data.cloudflare())?;
        let hint = state.hint()?;
        let live = zones.mapping(&hint.zone, &hint.mapping.origin_ip).await;
        let live = diags.check(live.map_err(|e| Diagnostic::from(e).context(format!("Listing zone {}", hint.zone))))?;
        let Some(live) = live else {
            diags.warning(
                "Region hint deleted outside Terraform",
                format!(
                    "Zone {} has no region hint for {} any more; it will be created again.",
                    hint.zone, hint.mapping.origin_ip
                ),
            );
            return None;
        };
        state.id = hint.id().into();
        state.vendor = live.vendor.as_str().into();
        state.region = live.region.as_str().into();
        state.modified_on = live.modified_on.clone().into();
        match zones.upper_tier_colos(&hint.zone, &live.vendor, &live.region).await {
            Some(colos) => state.set_colos(colos),
            None if state.upper_tier_colos.is_null() => state.set_colos(Vec::new()),
            None => {}
        }
        Some(state)
    }

    async fn create(
        &self,
        ctx: &Context<ProviderData>,
        planned: RegionHintModel,
        diags: &mut Diagnostics,
    ) -> Option<RegionHintModel> {
        let limit = timeouts::of(&planned.timeouts, Operation::Create, TIMEOUTS);
        let mut inner = Diagnostics::default();
        let written = timeouts::within(
            limit,
            Operation::Create,
            TYPE_NAME,
            write(ctx, planned.clone(), Write::Create, &mut inner),
        );
        match written.await {
            Ok(state) => {
                diags.extend(inner);
                state
            }
            // The hint may exist now: keep tracking it, as after a lost response (Terraform
            // taints it, and the next apply replaces it), so that it is never left behind.
            Err(timed_out) => {
                diags.add(timed_out);
                unconfirmed_state(planned)
            }
        }
    }

    async fn update(
        &self,
        ctx: &Context<ProviderData>,
        _prior: RegionHintModel,
        planned: RegionHintModel,
        diags: &mut Diagnostics,
    ) -> Option<RegionHintModel> {
        let limit = timeouts::of(&planned.timeouts, Operation::Update, TIMEOUTS);
        let mut inner = Diagnostics::default();
        let written = timeouts::within(
            limit,
            Operation::Update,
            TYPE_NAME,
            write(ctx, planned, Write::Update, &mut inner),
        );
        // Timed out: Terraform keeps the prior state and the next plan reads the live hint.
        let state = diags.check(written.await)?;
        diags.extend(inner);
        state
    }

    async fn delete(&self, ctx: &Context<ProviderData>, prior: RegionHintModel, diags: &mut Diagnostics) {
        let Some(zones) = diags.check(ctx.data.cloudflare()) else {
            return;
        };
        let Some(hint) = prior.hint() else { return };
        let _no_zone_wide_write_meanwhile = zones.shared(&hint.zone).await;
        if zones.is_claimed(&hint.zone, &hint.mapping.origin_ip) {
            // Another resource of this run has just written this IP (it moved to that resource,
            // or a replacement created first adopted it): it is theirs now.
            return;
        }
        let limit = timeouts::of(&prior.timeouts, Operation::Delete, TIMEOUTS);
        let deleted = timeouts::within(
            limit,
            Operation::Delete,
            TYPE_NAME,
            zones.delete(&hint.zone, hint.mapping.origin_ip.clone()),
        );
        let Some(deleted) = diags.check(deleted.await) else {
            return;
        };
        diags.check(deleted.map_err(|e| Diagnostic::from(e).context(format!("Deleting {}", hint.id()))));
    }

    async fn import(&self, ctx: &Context<ProviderData>, id: &str, diags: &mut Diagnostics) -> Option<RegionHintModel> {
        let parsed = id
            .split_once('/')
            .and_then(|(zone, ip)| Some((zone, canonical_ip(ip)?)))
            .filter(|(zone, _)| is_zone_id(zone));
        let Some((zone, ip)) = parsed else {
            diags.error(
                "Invalid import ID",
                format!(
                    "Expected `<zone_id>/<origin_ip>`, e.g. `023e105f4ecef8ad9ca31a8372d0c353/192.0.2.1`; got {id:?}."
                ),
            );
            return None;
        };
        let zones = diags.check(ctx.data.cloudflare())?;
        let found = zones.client().get(zone, &ip).await;
        match diags.check(found.map_err(|e| Diagnostic::from(e).context(format!("Reading {zone}/{ip}"))))? {
            Some(mapping) => Some(RegionHintModel::from_mapping(zone, mapping)),
            None => {
                diags.error(
                    "No such region hint",
                    format!("Zone {zone} has no region hint for {ip}; there is nothing to import."),
                );
                None
            }
        }
    }
}

/// The planned hint, which is wholly known at apply time.
fn known_hint(planned: &RegionHintModel) -> Result<Hint, Diagnostic> {
    for (name, field) in [
        ("zone_id", &planned.zone_id),
        ("origin_ip", &planned.origin_ip),
        ("vendor", &planned.vendor),
        ("region", &planned.region),
    ] {
        field.require(name)?;
    }
    planned.hint().ok_or_else(|| {
        Diagnostic::error("Invalid IP address", "The planned origin IP is not an IP address.")
            .at(AttributePath::root("origin_ip"))
    })
}

/// Checks the region against the zone's supported regions before writing. `None` when it is
/// not supported (the error names near matches); a zone whose list cannot be read is a warning,
/// and Cloudflare still validates the region when it is written.
async fn check_support(zones: &crate::provider::cloudflare::Zones, hint: &Hint, diags: &mut Diagnostics) -> Option<()> {
    let Hint { zone, mapping } = hint;
    match zones.support(zone, &mapping.vendor, &mapping.region).await {
        Ok(Support::Unsupported(names)) => {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            diags.attribute_error(
                AttributePath::root("region"),
                "Region not supported by the zone",
                format!(
                    "Zone {zone} does not support {}:{} (its supported_regions).{}",
                    mapping.vendor,
                    mapping.region,
                    suggestions(&mapping.region, &names)
                ),
            );
            None
        }
        Ok(_) => Some(()),
        Err(e) => {
            diags.warning(
                "Cannot check supported regions",
                format!("Zone {zone}: {e}. The region is still validated by Cloudflare when it is written (supported_regions needs Tiered Cache enabled)."),
            );
            Some(())
        }
    }
}

/// Whether a write creates the mapping (which must not exist yet) or updates ours.
enum Write {
    Create,
    Update,
}

/// Checks the region against the zone, writes the planned mapping and returns the new state.
async fn write(
    ctx: &Context<ProviderData>,
    planned: RegionHintModel,
    kind: Write,
    diags: &mut Diagnostics,
) -> Option<RegionHintModel> {
    let zones = diags.check(ctx.data.cloudflare())?;
    let hint = diags.check(known_hint(&planned))?;
    check_support(&zones, &hint, diags).await?;
    let stored = match kind {
        Write::Create => match zones.create(&hint.zone, hint.mapping.clone()).await {
            Ok(stored) => stored,
            // The mapping may exist: keep tracking it (Terraform taints a create that fails with
            // a state), so it is never lost; the next apply replaces it.
            Err(e @ CreateError::Unconfirmed { .. }) => {
                diags.add(e);
                hint.mapping.clone()
            }
            Err(e) => {
                diags.add(e);
                return None;
            }
        },
        Write::Update => {
            let put = zones.update(&hint.zone, hint.mapping.clone()).await.map_err(|e| {
                Diagnostic::from(e).context(format!(
                    "Writing the region hint for {} in zone {}",
                    hint.mapping.origin_ip, hint.zone
                ))
            });
            diags.check(put)?
        }
    };
    Some(stored_state(&zones, planned, &hint, stored.modified_on).await)
}

/// The state of a create whose outcome is unknown (it timed out): the plan, with the ID, and
/// the colos, if still unknown, empty until the next refresh. `None` when the plan does not
/// name a hint.
fn unconfirmed_state(mut planned: RegionHintModel) -> Option<RegionHintModel> {
    let hint = planned.hint()?;
    planned.id = hint.id().into();
    planned.modified_on = Field::Null;
    if !planned.upper_tier_colos.is_known() {
        planned.set_colos(Vec::new());
    }
    Some(planned)
}

/// The state after a write: the plan, with the ID, `modified_on`, and colos if still unknown.
async fn stored_state(
    zones: &crate::provider::cloudflare::Zones,
    mut state: RegionHintModel,
    hint: &Hint,
    modified_on: Option<String>,
) -> RegionHintModel {
    state.id = hint.id().into();
    state.modified_on = modified_on.into();
    if !state.upper_tier_colos.is_known() {
        let colos = zones
            .upper_tier_colos(&hint.zone, &hint.mapping.vendor, &hint.mapping.region)
            .await
            .unwrap_or_default();
        state.set_colos(colos);
    }
    state
}
