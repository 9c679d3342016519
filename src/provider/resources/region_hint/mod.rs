//! `locality_region_hint`: one Cloudflare origin cloud-region mapping (DESIGN.md §2.2). The API
//! client, the per-zone listing cache and batching live in `crate::provider::cloudflare`.

mod schema;

use async_trait::async_trait;

pub use schema::schema;

use crate::provider::cloudflare::{canonical_ip, CloudflareError, Mapping, Zones, ZONE_LIMIT};
use crate::provider::regions::{near_matches, regions, VENDORS};
use crate::provider::ProviderData;
use crate::tfplugin::{AttributePath, Context, Diagnostics, PlanRequest, Resource, Schema, Value};

/// The resource type.
pub struct RegionHint;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_region_hint";

/// Whether `zone` looks like a Cloudflare zone ID.
pub fn is_zone_id(zone: &str) -> bool {
    zone.len() == 32 && zone.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

fn suggestions(word: &str, candidates: &[&str]) -> String {
    match near_matches(word, candidates).as_slice() {
        [] => String::new(),
        near => format!(
            " Did you mean {}?",
            near.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The request a configuration or state describes, when fully known.
struct Hint {
    zone: String,
    ip: String,
    vendor: String,
    region: String,
}

impl Hint {
    fn of(value: &Value) -> Option<Hint> {
        Some(Hint {
            zone: value.get("zone_id").as_str()?.to_string(),
            ip: canonical_ip(value.get("origin_ip").as_str()?)?,
            vendor: value.get("vendor").as_str()?.to_ascii_lowercase(),
            region: value.get("region").as_str()?.to_ascii_lowercase(),
        })
    }
    fn id(&self) -> String {
        format!("{}/{}", self.zone, self.ip)
    }
    fn import_hint(&self) -> String {
        format!("terraform import {TYPE_NAME}.NAME {}", self.id())
    }
}

fn strings(items: &[String]) -> Value {
    Value::List(items.iter().map(|s| Value::from(s.as_str())).collect())
}

#[async_trait]
impl Resource<ProviderData> for RegionHint {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        if let Some(zone) = config.get("zone_id").as_str() {
            if !is_zone_id(zone) {
                diags.attribute_error(
                    AttributePath::root("zone_id"),
                    "Invalid zone ID",
                    format!("{zone:?} is not a Cloudflare zone ID: 32 lowercase hexadecimal characters, as shown on the zone's Overview page."),
                );
            }
        }
        if let Some(ip) = config.get("origin_ip").as_str() {
            if canonical_ip(ip).is_none() {
                diags.attribute_error(
                    AttributePath::root("origin_ip"),
                    "Invalid IP address",
                    format!("{ip:?} is not an IPv4 or IPv6 address (no port, brackets, zone index or leading zeros), e.g. \"192.0.2.1\" or \"2001:db8::1\"."),
                );
            }
        }
        let vendor = config.get("vendor").as_str().map(str::to_ascii_lowercase);
        if let Some(v) = &vendor {
            if !VENDORS.contains(&v.as_str()) {
                diags.attribute_error(
                    AttributePath::root("vendor"),
                    "Unknown vendor",
                    format!(
                        "{v:?} is not a cloud Cloudflare knows; allowed: \"aws\", \"azure\", \"gcp\", \"oci\".{}",
                        suggestions(v, &VENDORS)
                    ),
                );
            }
        }
        if let (Some(v), Some(region)) = (vendor, config.get("region").as_str()) {
            if let Some(known) = regions(&v) {
                let lower = region.to_ascii_lowercase();
                if !known.contains(&lower.as_str()) {
                    diags.attribute_error(
                        AttributePath::root("region"),
                        "Unknown region",
                        format!(
                            "{region:?} is not a {v} region in the built-in catalogue ({}).{}",
                            crate::provider::regions::CATALOGUE_DATE,
                            suggestions(&lower, known)
                        ),
                    );
                }
            }
        }
    }

    async fn modify_plan(
        &self,
        ctx: &Context<ProviderData>,
        req: PlanRequest<'_>,
        planned: &mut Value,
        diags: &mut Diagnostics,
    ) {
        let zones = match ctx.data.cloudflare() {
            Ok(z) => z,
            Err(problem) => {
                diags.error("Cloudflare is not configured", problem);
                return;
            }
        };
        let Some(hint) = Hint::of(planned) else { return };
        planned.set("id", hint.id().into());
        let prior = Hint::of(req.prior);
        let same_region = prior
            .as_ref()
            .is_some_and(|p| p.vendor == hint.vendor && p.region == hint.region);
        if same_region && !req.prior.get("upper_tier_colos").is_null() {
            planned.set("upper_tier_colos", req.prior.get("upper_tier_colos").clone());
        } else if let Ok(supported) = zones.supported_regions(&hint.zone).await {
            // Known at plan time when the zone publishes it; otherwise filled in at apply.
            if let Some(r) = supported.find(&hint.vendor, &hint.region) {
                planned.set("upper_tier_colos", strings(&r.upper_tier_colos));
            }
        }
    }

    async fn read(&self, ctx: &Context<ProviderData>, state: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let zones = match ctx.data.cloudflare() {
            Ok(z) => z,
            Err(problem) => {
                diags.error("Cloudflare is not configured", problem);
                return Some(state.clone());
            }
        };
        let hint = Hint::of(state)?;
        let listing = match zones.listing(&hint.zone).await {
            Ok(l) => l,
            Err(e) => {
                diags.error(
                    "Cannot list the zone's region hints",
                    format!("Zone {}: {e}", hint.zone),
                );
                return Some(state.clone());
            }
        };
        let Some(live) = listing.get(&hint.ip) else {
            diags.warning(
                "Region hint deleted outside Terraform",
                format!(
                    "Zone {} has no region hint for {} any more; it will be created again.",
                    hint.zone, hint.ip
                ),
            );
            return None;
        };
        let mut new = state.clone();
        new.set("id", hint.id().into());
        new.set("vendor", live.vendor.as_str().into());
        new.set("region", live.region.as_str().into());
        new.set("modified_on", live.modified_on.clone().into());
        let colos = upper_tier_colos(&zones, &hint.zone, &live.vendor, &live.region).await;
        new.set(
            "upper_tier_colos",
            colos.map_or_else(|| state.get("upper_tier_colos").clone(), |c| strings(&c)),
        );
        if new.get("upper_tier_colos").is_null() {
            new.set("upper_tier_colos", Value::List(Vec::new()));
        }
        Some(new)
    }

    async fn create(&self, ctx: &Context<ProviderData>, planned: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let (zones, hint) = prepare(ctx, planned, diags)?;
        if !zones.claim(&hint.zone, &hint.ip) {
            diags.attribute_error(
                AttributePath::root("origin_ip"),
                "Duplicate region hint",
                format!(
                    "Another {TYPE_NAME} in this configuration already manages {} in zone {}.",
                    hint.ip, hint.zone
                ),
            );
            return None;
        }
        // No silent takeover: an existing mapping must be imported first.
        match zones.listing(&hint.zone).await {
            Ok(listing) => {
                if let Some(existing) = listing.get(&hint.ip) {
                    diags.attribute_error(
                        AttributePath::root("origin_ip"),
                        "Region hint already exists",
                        format!(
                            "Zone {} already has a region hint for {} ({}:{}), which this configuration did not create. To manage it, import it:\n  {}",
                            hint.zone,
                            hint.ip,
                            existing.vendor,
                            existing.region,
                            hint.import_hint()
                        ),
                    );
                    return None;
                }
                if listing.len() >= ZONE_LIMIT {
                    diags.error(
                        "Zone is full",
                        format!(
                            "Zone {} already has {ZONE_LIMIT} region hints, Cloudflare's limit.",
                            hint.zone
                        ),
                    );
                    return None;
                }
            }
            Err(e) => {
                diags.error(
                    "Cannot list the zone's region hints",
                    format!("Zone {}: {e}", hint.zone),
                );
                return None;
            }
        }
        write(&zones, planned, &hint, diags).await
    }

    async fn update(
        &self,
        ctx: &Context<ProviderData>,
        _prior: &Value,
        planned: &Value,
        diags: &mut Diagnostics,
    ) -> Option<Value> {
        let (zones, hint) = prepare(ctx, planned, diags)?;
        zones.claim(&hint.zone, &hint.ip);
        write(&zones, planned, &hint, diags).await
    }

    async fn delete(&self, ctx: &Context<ProviderData>, prior: &Value, diags: &mut Diagnostics) {
        let zones = match ctx.data.cloudflare() {
            Ok(z) => z,
            Err(problem) => return diags.error("Cloudflare is not configured", problem),
        };
        let Some(hint) = Hint::of(prior) else { return };
        zones.claim(&hint.zone, &hint.ip);
        if let Err(e) = zones.delete(&hint.zone, hint.ip.clone()).await {
            diags.error("Cannot delete the region hint", format!("{}: {e}", hint.id()));
        }
    }

    async fn import(&self, ctx: &Context<ProviderData>, id: &str, diags: &mut Diagnostics) -> Option<Value> {
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
        let zones = match ctx.data.cloudflare() {
            Ok(z) => z,
            Err(problem) => {
                diags.error("Cloudflare is not configured", problem);
                return None;
            }
        };
        match zones.client().get(zone, &ip).await {
            Ok(Some(m)) => Some(Value::object([
                ("id", Value::from(format!("{zone}/{ip}"))),
                ("zone_id", Value::from(zone)),
                ("origin_ip", Value::from(ip.as_str())),
                ("vendor", Value::from(m.vendor)),
                ("region", Value::from(m.region)),
                ("modified_on", Value::from(m.modified_on)),
            ])),
            Ok(None) => {
                diags.error(
                    "No such region hint",
                    format!("Zone {zone} has no region hint for {ip}; there is nothing to import."),
                );
                None
            }
            Err(e) => {
                diags.error("Cannot read the region hint", format!("{zone}/{ip}: {e}"));
                None
            }
        }
    }
}

fn prepare(
    ctx: &Context<ProviderData>,
    planned: &Value,
    diags: &mut Diagnostics,
) -> Option<(std::sync::Arc<Zones>, Hint)> {
    let zones = match ctx.data.cloudflare() {
        Ok(z) => z,
        Err(problem) => {
            diags.error("Cloudflare is not configured", problem);
            return None;
        }
    };
    let Some(hint) = Hint::of(planned) else {
        diags.error(
            "Provider bug",
            "The planned region hint is not fully known at apply time.",
        );
        return None;
    };
    Some((zones, hint))
}

async fn upper_tier_colos(zones: &Zones, zone: &str, vendor: &str, region: &str) -> Option<Vec<String>> {
    let supported = zones.supported_regions(zone).await.ok()?;
    Some(
        supported
            .find(vendor, region)
            .map(|r| r.upper_tier_colos.clone())
            .unwrap_or_default(),
    )
}

/// Checks the region against the zone's supported regions, writes (batched), returns the state.
async fn write(zones: &Zones, planned: &Value, hint: &Hint, diags: &mut Diagnostics) -> Option<Value> {
    match zones.supported_regions(&hint.zone).await {
        Ok(supported) if !supported.vendors.is_empty() => {
            let names: Vec<&str> = supported.vendors.get(&hint.vendor).map(|rs| rs.iter().map(|r| r.name.as_str()).collect()).unwrap_or_default();
            if !names.contains(&hint.region.as_str()) {
                diags.attribute_error(
                    AttributePath::root("region"),
                    "Region not supported by the zone",
                    format!(
                        "Zone {} does not support {}:{} (its supported_regions).{}",
                        hint.zone,
                        hint.vendor,
                        hint.region,
                        suggestions(&hint.region, &names)
                    ),
                );
                return None;
            }
        }
        Ok(_) => {}
        Err(e) => diags.warning(
            "Cannot check supported regions",
            format!("Zone {}: {e}. The region is still validated by Cloudflare when it is written (supported_regions needs Tiered Cache enabled).", hint.zone),
        ),
    }
    let mapping = Mapping {
        origin_ip: hint.ip.clone(),
        vendor: hint.vendor.clone(),
        region: hint.region.clone(),
        modified_on: None,
    };
    match zones.put(&hint.zone, mapping).await {
        Ok(stored) => {
            let mut state = planned.clone();
            state.set("id", hint.id().into());
            state.set("modified_on", stored.modified_on.into());
            if state.get("upper_tier_colos").is_unknown() || state.get("upper_tier_colos").is_null() {
                let colos = upper_tier_colos(zones, &hint.zone, &hint.vendor, &hint.region)
                    .await
                    .unwrap_or_default();
                state.set("upper_tier_colos", strings(&colos));
            }
            Some(state)
        }
        Err(e) => {
            let (path, summary, detail) = describe(&e, hint);
            match path {
                Some(p) => diags.attribute_error(p, summary, detail),
                None => diags.error(summary, detail),
            }
            None
        }
    }
}

fn describe(e: &CloudflareError, hint: &Hint) -> (Option<AttributePath>, &'static str, String) {
    match e.code() {
        Some(1164) => (
            None,
            "Zone is full",
            format!("Zone {} has reached Cloudflare's limit of {ZONE_LIMIT} origin cloud-region mappings; {} was not written ({e}).", hint.zone, hint.ip),
        ),
        Some(1157) | Some(1156) => (Some(AttributePath::root("region")), "Region refused by Cloudflare", format!("{}:{} for {}: {e}", hint.vendor, hint.region, hint.ip)),
        _ => (None, "Cloudflare API error", format!("Writing the region hint for {} in zone {}: {e}", hint.ip, hint.zone)),
    }
}
