//! `locality_anycast_check`: is an origin anycast? From latency probes and the speed of light.

mod physics;

use async_trait::async_trait;

pub use physics::{distance_km, margin_ms, FIBER_KM_PER_MS};

use crate::provider::ProviderData;
use crate::tfplugin::{
    Attribute, AttributePath, Block, Context, DataSource, Diagnostics, NestedBlock, Nesting, Number, Schema, Type,
    Value,
};

/// The data source type.
pub struct AnycastCheck;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_anycast_check";

/// The data source schema.
pub fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "Whether an origin is anycast (or behind a cloud's regional front end), from latency probes: a pair of \
             probes whose half round-trip times add up to less than the great-circle distance between them divided \
             by the speed of light in fiber (about 204 km/ms) cannot be reaching one physical location. Such an \
             origin needs a `locality_region_hint` for Smart Tiered Cache to pick the right upper tier.",
        )
        .attribute(
            Attribute::bool("anycast")
                .computed()
                .description("True when at least one pair of probes is faster than light allows for one location."),
        )
        .attribute(
            Attribute::typed(
                "violations",
                Type::list(Type::object([
                    ("probe_a", Type::String),
                    ("probe_b", Type::String),
                    ("distance_km", Type::Number),
                    ("margin_ms", Type::Number),
                ])),
            )
            .computed()
            .description(
                "The impossible pairs, largest margin first: the probes, the distance between them (km, 0.1 km) and \
                 the margin (ms, 0.01 ms) by which their half round-trip times beat light in fiber.",
            ),
        )
        .block(NestedBlock::new(
            "probe",
            Nesting::List,
            Block::new("A latency measurement from a known place to the origin. At least two.")
                .attribute(
                    Attribute::string("name")
                        .required()
                        .description("A unique name, e.g. `nrt` or `tokyo`."),
                )
                .attribute(
                    Attribute::number("latitude")
                        .required()
                        .description("Degrees, -90 to 90."),
                )
                .attribute(
                    Attribute::number("longitude")
                        .required()
                        .description("Degrees, -180 to 180."),
                )
                .attribute(
                    Attribute::number("rtt_ms")
                        .required()
                        .description("Round-trip time to the origin, ms, greater than 0."),
                ),
        )),
    }
}

struct Probe {
    name: String,
    lat: f64,
    lon: f64,
    rtt: f64,
}

fn number(value: &Value) -> Option<f64> {
    value.as_number().map(Number::to_f64)
}

fn rounded(value: f64, places: i32) -> Value {
    let factor = 10f64.powi(places);
    let text = format!("{:.*}", places as usize, (value * factor).round() / factor);
    Number::parse(&text).map_or(Value::Null, Value::Number)
}

fn probes(config: &Value, diags: &mut Diagnostics) -> Option<Vec<Probe>> {
    let items = config.get("probe").elements();
    if !config.get("probe").is_unknown() && items.len() < 2 {
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
        let mut check = |attr: &str, min: f64, max: f64, open_min: bool| -> Option<f64> {
            match p.get(attr) {
                Value::Unknown => {
                    known = false;
                    None
                }
                v => {
                    let n = number(v)?;
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
        let lat = check("latitude", -90.0, 90.0, false);
        let lon = check("longitude", -180.0, 180.0, false);
        let rtt = check("rtt_ms", 0.0, 60_000.0, true);
        let name = p.get("name").as_str().map(String::from);
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
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        let _ = probes(config, diags);
    }

    async fn read(&self, _ctx: &Context<ProviderData>, config: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let probes = probes(config, diags)?;
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
        let mut out = config.clone();
        out.set("anycast", (!violations.is_empty()).into());
        out.set(
            "violations",
            Value::List(
                violations
                    .into_iter()
                    .map(|(margin, a, b, d)| {
                        Value::object([
                            ("probe_a", Value::from(a)),
                            ("probe_b", Value::from(b)),
                            ("distance_km", rounded(d, 1)),
                            ("margin_ms", rounded(margin, 2)),
                        ])
                    })
                    .collect(),
            ),
        );
        Some(out)
    }
}
