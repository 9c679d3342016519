//! `locality_region_hints`: all of one zone's hints in one resource (its page:
//! `docs/resources/region_hints.md`).
//!
//! - `schema.rs`: the schema (its descriptions are the docs);
//! - `model.rs`: the model, the only place attributes are named;
//! - `desired.rs`: what the configuration asks for, element by element (with the hints derived
//!   from the IP ranges), and the plan-time checks;
//! - this file: planning, the difference against the zone, and the state after a write. Batch
//!   requests, narrowing and read-back live in `crate::provider::cloudflare` (`sync.rs`).

mod desired;
mod model;
mod schema;

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;

pub use desired::{desired, parse_hint, Wanted};
pub use model::RegionHintsModel;
pub use schema::{identity_schema, schema};

use super::region_hint::{check_zone_id, is_zone_id, required_identity, suggestions};
use crate::provider::cloudflare::{Mapping, Owner, Support, SyncError, Zones};
use crate::provider::timeouts::{self, Operation};
use crate::provider::ProviderData;
use crate::ranges;
use crate::tfplugin::{
    AttributePath, Context, Diagnostic, Diagnostics, Field, IdentitySchema, Resource, Schema, Value,
};

/// The resource type.
pub struct RegionHints;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_region_hints";

/// Default `timeouts`: 10 minutes for each operation (a zone's writes go 100 a request).
pub const TIMEOUTS: timeouts::Defaults = timeouts::Defaults::all(std::time::Duration::from_secs(10 * 60));

/// Per-IP errors reported one by one; past this many, the rest are summed up in one.
const ITEM_DIAGNOSTICS: usize = 50;

#[async_trait]
impl Resource<ProviderData> for RegionHints {
    type Model = RegionHintsModel;

    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn identity_schema(&self) -> Option<IdentitySchema> {
        Some(identity_schema())
    }

    fn identity(&self, state: &RegionHintsModel) -> Option<Value> {
        let zone = state.zone_id.get()?;
        Some(identity_schema().value([("zone_id", Value::String(zone.clone()))]))
    }

    fn import_id(&self, _ctx: &Context<ProviderData>, identity: &Value) -> Result<String, Diagnostic> {
        required_identity(identity, "zone_id").map(str::to_string)
    }

    fn validate(&self, config: &RegionHintsModel, diags: &mut Diagnostics) {
        check_zone_id(config.zone_id.get(), diags);
        desired(config, ranges::active(), diags);
        timeouts::validate(&config.timeouts, diags);
    }

    async fn modify_plan(
        &self,
        ctx: &Context<ProviderData>,
        prior: Option<&RegionHintsModel>,
        config: &RegionHintsModel,
        planned: &mut RegionHintsModel,
        diags: &mut Diagnostics,
    ) {
        let Some(zones) = diags.check(ctx.data.cloudflare()) else {
            return;
        };
        planned.id = planned.zone_id.clone();
        if config.origins.get().is_some_and(|o| !o.is_empty()) {
            if let Ok(table) = ranges::active() {
                let stale = ranges::staleness(table, &ranges::active_source(), std::time::SystemTime::now());
                if let Some(stale) = stale {
                    diags.attribute_warning(AttributePath::root("origins"), "Old IP-range snapshot", stale);
                }
            }
        }
        let wanted = desired(config, ranges::active(), diags);
        planned.unmanaged_mappings = match planned.exclusive {
            Field::Known(true) => Field::known_map(BTreeMap::<String, String>::new()),
            Field::Unknown => Field::Unknown,
            _ => Field::Null,
        };
        let Some(wanted) = wanted else {
            planned.effective = Field::Unknown;
            planned.unmanaged = Field::Unknown;
            return;
        };
        planned.effective = Field::known_map(wanted.iter().map(|(ip, w)| (ip.clone(), w.value())));
        let unchanged =
            prior.is_some_and(|p| p.effective == planned.effective && p.is_exclusive() == planned.is_exclusive());
        if planned.is_exclusive() {
            planned.set_unmanaged(0);
        } else if let (true, Some(p)) = (unchanged, prior) {
            planned.unmanaged = p.unmanaged.clone();
        } else {
            planned.unmanaged = Field::Unknown;
        }
        let turned_exclusive = planned.is_exclusive() && !prior.is_some_and(RegionHintsModel::is_exclusive);
        if let (true, Some(zone)) = (turned_exclusive, planned.zone_id.get()) {
            // The diff of `unmanaged_mappings` names the deletions once the state tracks them;
            // the apply that turns `exclusive` on names them here.
            warn_about_deletions(&zones, zone, &wanted, diags).await;
        }
        if let Some(zone) = planned.zone_id.get() {
            let ips: Vec<String> = wanted.keys().cloned().collect();
            let owner = Owner::ZoneWide {
                exclusive: planned.is_exclusive(),
            };
            for (ip, other) in zones.plan_claim(zone, owner, &ips) {
                let path = wanted
                    .get(&ip)
                    .map_or_else(|| AttributePath::root("exclusive"), |w| w.path.clone());
                diags.attribute_error(path, "IP managed twice", conflict_detail(zone, &ip, other));
            }
        }
    }

    async fn read(
        &self,
        ctx: &Context<ProviderData>,
        mut state: RegionHintsModel,
        diags: &mut Diagnostics,
    ) -> Option<RegionHintsModel> {
        let zones = diags.check(ctx.data.cloudflare())?;
        let zone = state.zone_id.get()?.clone();
        let live = zones.current(&zone).await;
        let live = diags.check(live.map_err(|e| Diagnostic::from(e).context(format!("Listing zone {zone}"))))?;
        let managed: BTreeSet<String> = state.effective_hints().unwrap_or_default().into_keys().collect();
        let effective: BTreeMap<String, String> = managed
            .iter()
            .filter_map(|ip| Some((ip.clone(), hint_of(live.get(ip)?))))
            .collect();
        state.id = zone.as_str().into();
        state.set_unmanaged_from(&live, &effective, hint_of);
        state.set_effective(&effective);
        Some(state)
    }

    async fn create(
        &self,
        ctx: &Context<ProviderData>,
        planned: RegionHintsModel,
        diags: &mut Diagnostics,
    ) -> Option<RegionHintsModel> {
        // Timed out: no state; the next apply adopts what was written (same-value hints).
        timed(Operation::Create, ctx, None, planned, diags).await
    }

    async fn update(
        &self,
        ctx: &Context<ProviderData>,
        prior: RegionHintsModel,
        planned: RegionHintsModel,
        diags: &mut Diagnostics,
    ) -> Option<RegionHintsModel> {
        // Timed out: Terraform keeps the prior state; the next plan reads the zone.
        timed(Operation::Update, ctx, Some(prior), planned, diags).await
    }

    async fn delete(&self, ctx: &Context<ProviderData>, prior: RegionHintsModel, diags: &mut Diagnostics) {
        // Timed out: Terraform keeps the state, and the next destroy deletes what remains.
        let limit = timeouts::of(&prior.timeouts, Operation::Delete, TIMEOUTS);
        let mut inner = Diagnostics::default();
        match timeouts::within(limit, Operation::Delete, TYPE_NAME, delete(ctx, &prior, &mut inner)).await {
            Ok(()) => diags.extend(inner),
            Err(timed_out) => diags.add(timed_out),
        }
    }

    async fn import(&self, ctx: &Context<ProviderData>, id: &str, diags: &mut Diagnostics) -> Option<RegionHintsModel> {
        if !is_zone_id(id) {
            diags.error(
                "Invalid import ID",
                format!("Expected the zone ID (32 lowercase hexadecimal characters), e.g. `023e105f4ecef8ad9ca31a8372d0c353`; got {id:?}."),
            );
            return None;
        }
        let zones = diags.check(ctx.data.cloudflare())?;
        let live = zones.current(id).await;
        let live = diags.check(live.map_err(|e| Diagnostic::from(e).context(format!("Listing zone {id}"))))?;
        let hints: BTreeMap<String, String> = live.iter().map(|(ip, m)| (ip.clone(), hint_of(m))).collect();
        let mut state = RegionHintsModel {
            id: id.into(),
            zone_id: id.into(),
            hints: Field::known_map(hints.clone()),
            origins: Field::Null,
            exclusive: Field::Null,
            takeover: Field::Null,
            effective: Field::Null,
            unmanaged: Field::Null,
            unmanaged_mappings: Field::Null,
            timeouts: Field::Null,
        };
        state.set_effective(&hints);
        state.set_unmanaged(0);
        Some(state)
    }
}

/// Most mappings a plan warning names one by one.
const LISTED_DELETIONS: usize = 50;

/// A plan warning naming the zone's mappings that turning `exclusive` on will delete.
async fn warn_about_deletions(zones: &Zones, zone: &str, wanted: &BTreeMap<String, Wanted>, diags: &mut Diagnostics) {
    // Unreadable now: apply lists the zone again and reports it.
    let Ok(live) = zones.current(zone).await else {
        return;
    };
    let doomed: Vec<String> = live
        .iter()
        .filter(|(ip, _)| !wanted.contains_key(*ip))
        .map(|(ip, m)| format!("{ip} = {}", hint_of(m)))
        .collect();
    if doomed.is_empty() {
        return;
    }
    let more = doomed.len().saturating_sub(LISTED_DELETIONS);
    diags.attribute_warning(
        AttributePath::root("exclusive"),
        "Mappings this apply deletes",
        format!(
            "With `exclusive = true` the apply deletes the {} mapping(s) of zone {zone} that this resource does not \
             manage: {}{}.",
            doomed.len(),
            doomed
                .iter()
                .take(LISTED_DELETIONS)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ),
    );
}

/// `vendor:region` of a mapping.
fn hint_of(mapping: &Mapping) -> String {
    format!("{}:{}", mapping.vendor, mapping.region)
}

fn conflict_detail(zone: &str, ip: &str, other: Owner) -> String {
    match other {
        Owner::Single => format!(
            "{ip} of zone {zone} is also managed by a locality_region_hint of this configuration. Manage each IP in one \
             resource: remove that locality_region_hint (a `removed` block with `destroy = false` keeps the mapping) \
             or drop the IP here."
        ),
        Owner::ZoneWide { exclusive: true } => format!(
            "Zone {zone} has a locality_region_hints with `exclusive = true` in this configuration, which would delete \
             {ip}: give the IP there, or set `exclusive = false`."
        ),
        Owner::ZoneWide { exclusive: false } => format!(
            "{ip} of zone {zone} is also managed by another locality_region_hints of this configuration; manage each \
             IP in one resource."
        ),
    }
}

/// Deletes what `prior` manages (every other mapping too when exclusive), except IPs another
/// resource of this run has just written.
async fn delete(ctx: &Context<ProviderData>, prior: &RegionHintsModel, diags: &mut Diagnostics) {
    let Some(zones) = diags.check(ctx.data.cloudflare()) else {
        return;
    };
    let Some(zone) = prior.zone_id.get() else { return };
    let _no_single_deletes_meanwhile = zones.exclusive(zone).await;
    let live = zones.current(zone).await;
    let Some(live) = diags.check(live.map_err(|e| Diagnostic::from(e).context(format!("Listing zone {zone}")))) else {
        return;
    };
    let managed: BTreeSet<String> = prior.effective_hints().unwrap_or_default().into_keys().collect();
    // IPs a resource of this run wrote are theirs now (a replacement created before this
    // one is destroyed adopted them): they stay.
    let deletes: Vec<String> = live
        .keys()
        .filter(|ip| prior.is_exclusive() || managed.contains(*ip))
        .filter(|ip| !zones.is_claimed(zone, ip))
        .cloned()
        .collect();
    let outcomes = zones.sync(zone, deletes, Vec::new()).await;
    report_failures(zone, &outcomes, &BTreeMap::new(), diags);
}

/// [`write`] within `timeouts.<op>`.
async fn timed(
    op: Operation,
    ctx: &Context<ProviderData>,
    prior: Option<RegionHintsModel>,
    planned: RegionHintsModel,
    diags: &mut Diagnostics,
) -> Option<RegionHintsModel> {
    let limit = timeouts::of(&planned.timeouts, op, TIMEOUTS);
    let mut inner = Diagnostics::default();
    let state = diags.check(timeouts::within(limit, op, TYPE_NAME, write(ctx, prior, planned, &mut inner)).await)?;
    diags.extend(inner);
    state
}

/// Applies the planned hints: lists the zone, refuses takeovers (before writing anything),
/// checks regions against the zone, writes the difference and returns the state the zone is
/// in, with every failed IP an error on its element.
async fn write(
    ctx: &Context<ProviderData>,
    prior: Option<RegionHintsModel>,
    mut planned: RegionHintsModel,
    diags: &mut Diagnostics,
) -> Option<RegionHintsModel> {
    let zones = diags.check(ctx.data.cloudflare())?;
    let zone = diags.check(planned.zone_id.require("zone_id"))?.clone();
    let wanted = desired(&planned, ranges::active(), diags)?;
    if diags.has_errors() {
        return None;
    }
    let _no_single_deletes_meanwhile = zones.exclusive(&zone).await;
    let live = zones.current(&zone).await;
    let live = diags.check(live.map_err(|e| Diagnostic::from(e).context(format!("Listing zone {zone}"))))?;
    let managed: BTreeSet<String> = prior
        .as_ref()
        .and_then(RegionHintsModel::effective_hints)
        .unwrap_or_default()
        .into_keys()
        .collect();

    // The difference.
    let (mut puts, mut refused) = (Vec::new(), Vec::new());
    for (ip, want) in &wanted {
        match live.get(ip) {
            // Adopted as it is; claimed all the same, so that a resource that gave it up in
            // this run (a `locality_region_hint` being destroyed) does not delete it.
            Some(have) if have.vendor == want.mapping.vendor && have.region == want.mapping.region => {
                zones.claim(&zone, ip);
            }
            Some(have) if !managed.contains(ip) && !planned.takes_over() => refused.push((want, have)),
            _ => puts.push(want.mapping.clone()),
        }
    }
    if !refused.is_empty() {
        refuse_takeover(&zone, &refused, diags);
        return None;
    }
    // Mappings to remove, except those another resource of this run has just written: they
    // moved to that resource (e.g. from `hints` to a `locality_region_hint`) and are its now.
    let (handed_over, deletes): (Vec<String>, Vec<String>) = live
        .keys()
        .filter(|ip| !wanted.contains_key(*ip) && (planned.is_exclusive() || managed.contains(*ip)))
        .cloned()
        .partition(|ip| zones.is_claimed(&zone, ip));
    let unsupported = unsupported_regions(&zones, &zone, &puts, &wanted, diags).await;
    puts.retain(|m| !unsupported.contains(&m.origin_ip));

    let outcomes = zones.sync(&zone, deletes.clone(), puts.clone()).await;
    report_failures(&zone, &outcomes, &wanted, diags);

    // The state: what the zone holds now for the IPs this resource manages.
    let mut after = live.clone();
    for ip in &deletes {
        if outcomes.get(ip).is_some_and(Result::is_ok) {
            after.remove(ip);
        }
    }
    for mapping in &puts {
        match outcomes.get(&mapping.origin_ip) {
            // Applied, or maybe applied: tracked as written (a refresh corrects a guess).
            Some(Ok(())) | Some(Err(SyncError::Unconfirmed(_))) | None => {
                after.insert(mapping.origin_ip.clone(), mapping.clone());
            }
            Some(Err(_)) => {}
        }
    }
    let effective: BTreeMap<String, String> = after
        .iter()
        .filter(|(ip, have)| {
            let wanted_here = wanted
                .get(*ip)
                .is_some_and(|w| w.mapping.vendor == have.vendor && w.mapping.region == have.region);
            wanted_here || (managed.contains(*ip) && !handed_over.contains(*ip))
        })
        .map(|(ip, m)| (ip.clone(), hint_of(m)))
        .collect();
    planned.id = zone.as_str().into();
    planned.set_unmanaged_from(&after, &effective, hint_of);
    planned.set_effective(&effective);
    if prior.is_none() && effective.is_empty() && diags.has_errors() {
        return None; // nothing was created or adopted: nothing to track
    }
    Some(planned)
}

/// One error naming every IP whose existing mapping has another value.
fn refuse_takeover(zone: &str, refused: &[(&Wanted, &Mapping)], diags: &mut Diagnostics) {
    let listed: Vec<String> = refused
        .iter()
        .take(ITEM_DIAGNOSTICS)
        .map(|(want, have)| format!("  {} is {} (want {})", have.origin_ip, hint_of(have), want.value()))
        .collect();
    let more = refused.len().saturating_sub(ITEM_DIAGNOSTICS);
    let path = if refused.len() == 1 {
        refused[0].0.path.clone()
    } else {
        AttributePath::root("hints")
    };
    diags.attribute_error(
        path,
        "Region hints already set to other values",
        format!(
            "Zone {zone} already has region hints with other values for {} IP(s), and this resource does not take \
             over existing mappings silently. Nothing was written.\n{}{}\nSet `takeover = true` to overwrite them, or \
             change these hints to the values the zone has.",
            refused.len(),
            listed.join("\n"),
            if more > 0 {
                format!("\n  ... and {more} more")
            } else {
                String::new()
            }
        ),
    );
}

/// The IPs whose region the zone does not support (each an error on its element, with near
/// matches). A zone whose list cannot be read gives one warning; Cloudflare still checks.
async fn unsupported_regions(
    zones: &Zones,
    zone: &str,
    puts: &[Mapping],
    wanted: &BTreeMap<String, Wanted>,
    diags: &mut Diagnostics,
) -> BTreeSet<String> {
    let mut unsupported = BTreeSet::new();
    let Some(first) = puts.first() else {
        return unsupported;
    };
    if let Err(e) = zones.support(zone, &first.vendor, &first.region).await {
        diags.warning(
            "Cannot check supported regions",
            format!("Zone {zone}: {e}. Regions are still validated by Cloudflare when they are written (supported_regions needs Tiered Cache enabled)."),
        );
        return unsupported;
    }
    for mapping in puts {
        if let Ok(Support::Unsupported(names)) = zones.support(zone, &mapping.vendor, &mapping.region).await {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let path = wanted
                .get(&mapping.origin_ip)
                .map_or_else(|| AttributePath::root("hints"), |w| w.path.clone());
            diags.attribute_error(
                path,
                "Region not supported by the zone",
                format!(
                    "Zone {zone} does not support {}:{} (its supported_regions), so {} was not written.{}",
                    mapping.vendor,
                    mapping.region,
                    mapping.origin_ip,
                    suggestions(&mapping.region, &names)
                ),
            );
            unsupported.insert(mapping.origin_ip.clone());
        }
    }
    unsupported
}

/// Each failed IP as an error on its element (removed IPs on `hints`), Cloudflare's code and
/// message included; past [`ITEM_DIAGNOSTICS`], one error sums up the rest.
fn report_failures(
    zone: &str,
    outcomes: &crate::provider::cloudflare::SyncOutcomes,
    wanted: &BTreeMap<String, Wanted>,
    diags: &mut Diagnostics,
) {
    let failed: Vec<(&String, &SyncError)> = outcomes
        .iter()
        .filter_map(|(ip, outcome)| outcome.as_ref().err().map(|e| (ip, e)))
        .collect();
    for (ip, error) in failed.iter().take(ITEM_DIAGNOSTICS) {
        let (path, action) = match wanted.get(*ip) {
            Some(w) => (w.path.clone(), format!("Writing the region hint for {ip}")),
            None => (
                AttributePath::root("hints"),
                format!("Deleting the region hint for {ip}"),
            ),
        };
        diags.add(
            Diagnostic::error(
                format!("Region hint for {ip} failed"),
                format!("{action} in zone {zone}: {error}."),
            )
            .at(path),
        );
    }
    if failed.len() > ITEM_DIAGNOSTICS {
        let rest: Vec<&str> = failed
            .iter()
            .skip(ITEM_DIAGNOSTICS)
            .map(|(ip, _)| ip.as_str())
            .collect();
        diags.error(
            format!("{} more region hints failed", rest.len()),
            format!("Zone {zone}: {}.", rest.join(", ")),
        );
    }
}
