//! `locality_anycast_check`: is an origin anycast? From latency probes and the speed of light.

//!
//! - `schema.rs`: the schema (its descriptions are the docs);
//! - `model.rs`: the model, the only place attributes and blocks are named;
//! - `physics.rs`: great-circle distance and the speed of light in fiber;
//! - this file: checks of the probes and the glue.

mod model;
mod physics;
mod schema;

use async_trait::async_trait;

pub use model::{AnycastCheckModel, ProbeModel, ViolationModel};
pub use physics::{distance_km, margin_ms, FIBER_KM_PER_MS};
pub use schema::schema;

use crate::provider::ProviderData;
use crate::tfplugin::{AttributePath, Context, DataSource, Diagnostics, Field, Number, Schema};

/// The data source type.
pub struct AnycastCheck;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_anycast_check";

struct Probe {
    name: String,
    lat: f64,
    lon: f64,
    rtt: f64,
}

fn rounded(value: f64, places: i32) -> Field<Number> {
    let factor = 10f64.powi(places);
    let text = format!("{:.*}", places as usize, (value * factor).round() / factor);
    Number::parse(&text).ok().into()
}

fn probes(config: &AnycastCheckModel, diags: &mut Diagnostics) -> Option<Vec<Probe>> {
    let items = config.probe.get().map_or(&[][..], Vec::as_slice);
    if !config.probe.is_unknown() && items.len() < 2 {
        diags.attribute_error(
            AttributePath::root("probe"),
            "Too few probes",
            "At least two `probe` blocks are needed to compare them.",
        );
    }
    let mut out = Vec::new();
    let mut known = true;
    for (i, p) in items.iter().enumerate() {
        let at = |a: &str| AttributePath::root("probe").index(i).attr(a);
        let mut check = |attr: &str, value: &Field<Number>, min: f64, max: f64, open_min: bool| -> Option<f64> {
            match value {
                Field::Unknown => {
                    known = false;
                    None
                }
                Field::Null => None,
                Field::Known(v) => {
                    let n = v.to_f64();
                    let ok = if open_min {
                        n > min && n <= max
                    } else {
                        (min..=max).contains(&n)
                    };
                    if !ok {
                        let range = if open_min {
                            format!("greater than {min}")
                        } else {
                            format!("from {min} to {max}")
                        };
                        diags.attribute_error(
                            at(attr),
                            "Out of range",
                            format!("`{attr}` is {n}; it must be {range}."),
                        );
                        return None;
                    }
                    Some(n)
                }
            }
        };
        let lat = check("latitude", &p.latitude, -90.0, 90.0, false);
        let lon = check("longitude", &p.longitude, -180.0, 180.0, false);
        let rtt = check("rtt_ms", &p.rtt_ms, 0.0, 60_000.0, true);
        let name = p.name.get().cloned();
        if let Some(n) = &name {
            if out.iter().any(|o: &Probe| &o.name == n) {
                diags.attribute_error(
                    at("name"),
                    "Duplicate probe",
                    format!("A probe named {n:?} already exists; names must be unique."),
                );
            }
        }
        if let (Some(name), Some(lat), Some(lon), Some(rtt)) = (name, lat, lon, rtt) {
            out.push(Probe { name, lat, lon, rtt });
        } else {
            known = false;
        }
    }
    (known && !diags.has_errors()).then_some(out)
}

#[async_trait]
impl DataSource<ProviderData> for AnycastCheck {
    type Model = AnycastCheckModel;

    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &AnycastCheckModel, diags: &mut Diagnostics) {
        let _ = probes(config, diags);
    }

    async fn read(
        &self,
        _ctx: &Context<ProviderData>,
        mut config: AnycastCheckModel,
        diags: &mut Diagnostics,
    ) -> Option<AnycastCheckModel> {
        let probes = probes(&config, diags)?;
        let mut violations = Vec::new();
        for (i, a) in probes.iter().enumerate() {
            for b in &probes[i + 1..] {
                let d = distance_km(a.lat, a.lon, b.lat, b.lon);
                let margin = margin_ms(d, a.rtt, b.rtt);
                if margin > 0.0 {
                    violations.push((margin, a.name.clone(), b.name.clone(), d));
                }
            }
        }
        violations.sort_by(|x, y| y.0.total_cmp(&x.0).then_with(|| (&x.1, &x.2).cmp(&(&y.1, &y.2))));
        config.anycast = Field::Known(!violations.is_empty());
        config.violations = Field::Known(
            violations
                .into_iter()
                .map(|(margin, a, b, d)| ViolationModel {
                    probe_a: a.into(),
                    probe_b: b.into(),
                    distance_km: rounded(d, 1),
                    margin_ms: rounded(margin, 2),
                })
                .collect(),
        );
        Some(config)
    }
}
