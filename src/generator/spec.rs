//! The compact spec (`docs/guides/generator.md`): its shape, its rules, and the validated model.
//!
//! Every rule reports a [`SpecDiagnostic`] on the exact span; the whole spec is checked (all
//! problems are reported at once) and nothing is generated when any error remains.

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::time::Duration;

use super::diagnostic::{suggest, Level, SpecDiagnostic};
use super::names;
use super::tree::{Literal, Node, Spanned};
pub use crate::naming::{is_google_name, is_project_id};

/// The validated spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Services in spec order.
    pub services: Vec<Service>,
    /// AWS load balancer forwards in spec order (`super::aws`).
    pub forwards: Vec<super::aws::Forward>,
}

/// One service: a Cloud Run service deployed in several regions behind one URL map.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    /// The block label; prefix of every generated name.
    pub name: String,
    /// Google Cloud project.
    pub project: String,
    /// Backend protocol (HTTP, HTTPS, HTTP2).
    pub protocol: String,
    /// Regions in spec order.
    pub regions: Vec<Region>,
    /// Names of the active regions, in region order.
    pub active: Vec<String>,
    /// Outlier detection for every backend service.
    pub outlier: Outlier,
    /// Who sets the URL map's weights.
    pub weights_managed_by: WeightsManagedBy,
}

/// Who sets the URL map's weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightsManagedBy {
    /// The `google_compute_url_map` itself (the weights follow `active`).
    UrlMap,
    /// A `locality_weighted_backend` resource: the URL map is written with every region active and
    /// its weights in `ignore_changes`, and the weights resource follows `active`.
    LocalityWeightedBackend,
}

/// The values `weights_managed_by` takes.
pub const WEIGHTS_MANAGED_BY: [&str; 2] = ["url_map", "locality_weighted_backend"];

/// One region of a service.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    /// The block label (e.g. `tokyo`).
    pub name: String,
    /// Cloud Run location (e.g. `asia-northeast1`).
    pub location: String,
    /// Cloud Run service name in that location.
    pub cloud_run: String,
}

/// Outlier detection values, all explicit in the output.
#[derive(Debug, Clone, PartialEq)]
pub struct Outlier {
    /// How often ejection is evaluated.
    pub interval: Duration,
    /// Base ejection time (multiplied by the times ejected).
    pub base_ejection_time: Duration,
    /// Consecutive 5xx before ejection.
    pub consecutive_errors: u32,
    /// Consecutive gateway failures (502/503/504) before ejection.
    pub consecutive_gateway_failure: u32,
    /// Percent chance that a consecutive-5xx detection ejects.
    pub enforcing_consecutive_errors: u32,
    /// Percent chance that a gateway-failure detection ejects.
    pub enforcing_consecutive_gateway_failure: u32,
    /// Largest share of NEGs that may be ejected at once.
    pub max_ejection_percent: u32,
}

/// Allowed backend protocols for serverless NEG backends.
pub const PROTOCOLS: [&str; 3] = ["HTTP", "HTTPS", "HTTP2"];

/// The blocks of the spec's top level.
const TOP_BLOCKS: [&str; 2] = ["service", "forward"];

const SERVICE_ATTRS: [&str; 4] = ["project", "protocol", "active", "weights_managed_by"];
const SERVICE_BLOCKS: [&str; 2] = ["region", "outlier_detection"];
const REGION_ATTRS: [&str; 2] = ["location", "cloud_run"];
const OUTLIER_ATTRS: [&str; 7] = [
    "interval",
    "base_ejection_time",
    "consecutive_errors",
    "consecutive_gateway_failure",
    "enforcing_consecutive_errors",
    "enforcing_consecutive_gateway_failure",
    "max_ejection_percent",
];

/// Block types and their label counts, for the JSON reader.
pub fn block_shape(parent: &str, name: &str) -> Option<usize> {
    match (parent, name) {
        ("", "service") | ("service", "region") | ("", "forward") | ("forward", "target_group") => Some(1),
        ("service", "outlier_detection") => Some(0),
        _ => None,
    }
}

/// Checks the tree and builds the spec. Returns the spec (when there are no errors) and every
/// diagnostic (errors and warnings).
pub fn lower(root: &Node) -> (Option<Spec>, Vec<SpecDiagnostic>) {
    let mut d = Vec::new();
    for (key, _) in &root.attributes {
        d.push(unknown(
            &key.value,
            key.span.clone(),
            "at the top level",
            &[],
            &TOP_BLOCKS,
        ));
    }
    let mut services = Vec::new();
    let mut forwards = Vec::new();
    let mut seen: HashMap<&str, Range<usize>> = HashMap::new();
    let mut seen_forwards: HashMap<&str, Range<usize>> = HashMap::new();
    for block in &root.blocks {
        if block.ident.value == "forward" {
            let Some(label) = one_label(block, &mut d) else {
                continue;
            };
            if seen_forwards.insert(&label.value, label.span.clone()).is_some() {
                d.push(
                    SpecDiagnostic::error(label.span.clone(), format!("duplicate forward \"{}\"", label.value))
                        .help("each forward name may appear once"),
                );
                continue;
            }
            if let Some(forward) = super::aws::lower_forward(block, label, &mut d) {
                forwards.push((forward, label.span.clone()));
            }
            continue;
        }
        if block.ident.value != "service" {
            d.push(unknown(
                &block.ident.value,
                block.ident.span.clone(),
                "at the top level",
                &[],
                &TOP_BLOCKS,
            ));
            continue;
        }
        let Some(label) = one_label(block, &mut d) else {
            continue;
        };
        if seen.insert(&label.value, label.span.clone()).is_some() {
            d.push(
                SpecDiagnostic::error(label.span.clone(), format!("duplicate service \"{}\"", label.value))
                    .help("each service name may appear once"),
            );
            continue;
        }
        if let Some(service) = lower_service(block, label, &mut d) {
            services.push((service, label.span.clone()));
        }
    }
    if root.blocks.is_empty() && root.attributes.is_empty() {
        d.push(
            SpecDiagnostic::error(0..0, "the spec has no service and no forward").help(
                "add a `service \"NAME\" { ... }` block (Google Cloud) or a `forward \"NAME\" { ... }` block (AWS)",
            ),
        );
    }
    check_generated_names(&services, &mut d);
    super::aws::check_collisions(&forwards, &mut d);
    let ok = !d.iter().any(|x| x.level == Level::Error);
    let services = services.into_iter().map(|(service, _)| service).collect();
    let forwards = forwards.into_iter().map(|(forward, _)| forward).collect();
    (ok.then_some(Spec { services, forwards }), d)
}

pub(super) fn one_label<'a>(block: &'a Node, d: &mut Vec<SpecDiagnostic>) -> Option<&'a Spanned<String>> {
    match block.labels.as_slice() {
        [label] => Some(label),
        _ => {
            d.push(
                SpecDiagnostic::error(
                    block.ident.span.clone(),
                    format!("a `{}` block takes exactly one label", block.ident.value),
                )
                .help(format!("write `{} \"NAME\" {{ ... }}`", block.ident.value)),
            );
            None
        }
    }
}

pub(super) fn unknown(name: &str, span: Range<usize>, place: &str, attrs: &[&str], blocks: &[&str]) -> SpecDiagnostic {
    let all: Vec<&str> = attrs.iter().chain(blocks).copied().collect();
    let what = if blocks.contains(&name) || attrs.contains(&name) {
        "misplaced"
    } else {
        "unknown"
    };
    let mut diag = SpecDiagnostic::error(span, format!("{what} `{name}` {place}"));
    let mut help = String::new();
    if let Some(s) = suggest(name, all.iter().copied()) {
        help = format!("did you mean `{s}`? ");
    }
    let mut allowed = Vec::new();
    if !attrs.is_empty() {
        allowed.push(format!("attributes {}", attrs.join(", ")));
    }
    if !blocks.is_empty() {
        allowed.push(format!("blocks {}", blocks.join(", ")));
    }
    help.push_str(&format!("allowed here: {}", allowed.join("; ")));
    diag.help = Some(help);
    diag
}

/// The attributes of a block by name, reporting unknown and duplicate ones.
pub(super) fn attributes<'a>(
    block: &'a Node,
    allowed: &[&str],
    blocks: &[&str],
    place: &str,
    d: &mut Vec<SpecDiagnostic>,
) -> HashMap<&'a str, &'a Spanned<Literal>> {
    let mut out = HashMap::new();
    for (key, value) in &block.attributes {
        if !allowed.contains(&key.value.as_str()) {
            d.push(unknown(&key.value, key.span.clone(), place, allowed, blocks));
        } else if out.insert(key.value.as_str(), value).is_some() {
            d.push(SpecDiagnostic::error(
                key.span.clone(),
                format!("`{}` is set twice {place}", key.value),
            ));
        }
    }
    out
}

pub(super) fn required<'a>(
    attrs: &HashMap<&str, &'a Spanned<Literal>>,
    name: &str,
    block: &Node,
    place: &str,
    help: &str,
    d: &mut Vec<SpecDiagnostic>,
) -> Option<&'a Spanned<Literal>> {
    let found = attrs.get(name).copied();
    if found.is_none() {
        let span = block.labels.last().map_or(block.ident.span.clone(), |l| l.span.clone());
        d.push(
            SpecDiagnostic::error(span, format!("{place} is missing the required attribute `{name}`"))
                .help(help.to_string()),
        );
    }
    found
}

pub(super) fn string<'a>(value: &'a Spanned<Literal>, name: &str, d: &mut Vec<SpecDiagnostic>) -> Option<&'a str> {
    match &value.value {
        Literal::Str(s) => Some(s),
        other => {
            d.push(SpecDiagnostic::error(
                value.span.clone(),
                format!("`{name}` must be a string, not {}", describe(other)),
            ));
            None
        }
    }
}

pub(super) fn describe(literal: &Literal) -> &'static str {
    match literal {
        Literal::Str(_) => "a string",
        Literal::Num(_) => "a number",
        Literal::Bool(_) => "a bool",
        Literal::List(_) => "a list",
        Literal::Other(what) => what,
    }
}

/// The Google names generated for a region of a service (for the length check).
pub fn generated_names(service: &str, region: &str) -> [String; 2] {
    [
        names::neg(service, region).name,
        names::backend_service(service, Some(region)).name,
    ]
}

/// Names that only make sense across services: two services whose generated Terraform labels
/// or Google names are the same (`web` with region `tokyo` and a service `web-tokyo` both make
/// `google_compute_backend_service.web_tokyo`), and service-level Google names over 63
/// characters (`<service>-urlmap`; region-level ones are checked at their region).
fn check_generated_names(services: &[(Service, Range<usize>)], d: &mut Vec<SpecDiagnostic>) {
    let mut labels: HashMap<(&'static str, String), &str> = HashMap::new();
    let mut google: HashMap<(&'static str, String), &str> = HashMap::new();
    for (service, span) in services {
        let regions = service.regions.iter().map(|r| r.name.as_str());
        // Region-level names are checked at their region; these two only here.
        for generated in [
            names::backend_service(&service.name, None),
            names::url_map(&service.name),
        ] {
            if generated.name.len() > names::MAX_GOOGLE_NAME {
                d.push(
                    SpecDiagnostic::error(
                        span.clone(),
                        format!(
                            "the generated name \"{}\" is {} characters; Google allows at most {}",
                            generated.name,
                            generated.name.len(),
                            names::MAX_GOOGLE_NAME
                        ),
                    )
                    .help("shorten the service name"),
                );
            }
        }
        for generated in names::all(&service.name, regions) {
            let address = format!("{}.{}", generated.resource_type, generated.label);
            let collides = [
                (
                    labels.insert((generated.resource_type, generated.label.clone()), &service.name),
                    address,
                ),
                (
                    google.insert((generated.resource_type, generated.name.clone()), &service.name),
                    format!("the Google name \"{}\"", generated.name),
                ),
            ];
            for (other, what) in collides {
                if let Some(other) = other.filter(|o| *o != service.name) {
                    d.push(
                        SpecDiagnostic::error(
                            span.clone(),
                            format!("service \"{}\" generates {what}, which service \"{other}\" generates too", service.name),
                        )
                        .help("rename one of the services (`-` becomes `_` in Terraform names, so `web` with region `tokyo` and `web-tokyo` collide)"),
                    );
                }
            }
        }
    }
}

fn lower_service(block: &Node, label: &Spanned<String>, d: &mut Vec<SpecDiagnostic>) -> Option<Service> {
    let errors_before = d.iter().filter(|x| x.level == Level::Error).count();
    let place = format!("in service \"{}\"", label.value);
    if !is_google_name(&label.value) {
        d.push(
            SpecDiagnostic::error(label.span.clone(), format!("service name \"{}\" is not a valid Google Cloud resource name", label.value))
                .help("use lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen (it prefixes every generated name)"),
        );
    }
    let attrs = attributes(block, &SERVICE_ATTRS, &SERVICE_BLOCKS, &place, d);
    let project = required(
        &attrs,
        "project",
        block,
        &format!("service \"{}\"", label.value),
        "add `project = \"my-project\"`",
        d,
    )
    .and_then(|v| Some((string(v, "project", d)?, v)))
    .map(|(p, v)| {
        if !is_project_id(p) {
            d.push(
                SpecDiagnostic::error(v.span.clone(), format!("\"{p}\" is not a Google Cloud project ID"))
                    .help("project IDs are 6-30 lowercase letters, digits and hyphens, starting with a letter"),
            );
        }
        p.to_string()
    });
    let protocol = match attrs.get("protocol") {
        None => Some("HTTPS".to_string()),
        Some(v) => string(v, "protocol", d).and_then(|p| {
            if PROTOCOLS.contains(&p) {
                Some(p.to_string())
            } else {
                d.push(
                    SpecDiagnostic::error(
                        v.span.clone(),
                        format!("protocol \"{p}\" is not supported for serverless backends"),
                    )
                    .help(format!("allowed: {}", PROTOCOLS.join(", "))),
                );
                None
            }
        }),
    };

    let weights_managed_by = match attrs.get("weights_managed_by") {
        None => Some(WeightsManagedBy::UrlMap),
        Some(v) => match string(v, "weights_managed_by", d) {
            Some("url_map") => Some(WeightsManagedBy::UrlMap),
            Some("locality_weighted_backend") => Some(WeightsManagedBy::LocalityWeightedBackend),
            Some(other) => {
                d.push(
                    SpecDiagnostic::error(
                        v.span.clone(),
                        format!("`weights_managed_by` = \"{other}\" is not supported"),
                    )
                    .help(format!("allowed: \"{}\"", WEIGHTS_MANAGED_BY.join("\", \""))),
                );
                None
            }
            None => None,
        },
    };

    let mut regions = Vec::new();
    let mut region_spans: HashMap<String, Range<usize>> = HashMap::new();
    let mut outlier_blocks = Vec::new();
    for child in &block.blocks {
        match child.ident.value.as_str() {
            "region" => {
                let Some(region_label) = one_label(child, d) else {
                    continue;
                };
                if region_spans.contains_key(&region_label.value) {
                    d.push(
                        SpecDiagnostic::error(
                            region_label.span.clone(),
                            format!("duplicate region \"{}\" {place}", region_label.value),
                        )
                        .help("each region name may appear once per service"),
                    );
                    continue;
                }
                region_spans.insert(region_label.value.clone(), region_label.span.clone());
                if let Some(region) = lower_region(child, region_label, &label.value, d) {
                    regions.push(region);
                }
            }
            "outlier_detection" => {
                if !child.labels.is_empty() {
                    d.push(SpecDiagnostic::error(
                        child.labels[0].span.clone(),
                        "an `outlier_detection` block takes no label",
                    ));
                }
                outlier_blocks.push(child);
            }
            other => d.push(unknown(
                other,
                child.ident.span.clone(),
                &place,
                &SERVICE_ATTRS,
                &SERVICE_BLOCKS,
            )),
        }
    }
    if region_spans.is_empty() {
        let span = label.span.clone();
        d.push(
            SpecDiagnostic::error(span, format!("service \"{}\" has no region", label.value))
                .help("add `region \"NAME\" { location = \"asia-northeast1\", cloud_run = \"SERVICE\" }` blocks"),
        );
    } else if region_spans.len() == 1 {
        d.push(SpecDiagnostic::warning(
            label.span.clone(),
            format!(
                "service \"{}\" has one region: there is nothing to fail over to",
                label.value
            ),
        ));
    }
    if outlier_blocks.len() > 1 {
        d.push(SpecDiagnostic::error(
            outlier_blocks[1].ident.span.clone(),
            format!("more than one `outlier_detection` block {place}"),
        ));
    }

    let active = match attrs.get("active") {
        None => Some(region_spans.keys().cloned().collect::<BTreeSet<_>>()),
        Some(value) => lower_active(value, &region_spans, &place, d),
    };
    let outlier = lower_outlier(outlier_blocks.first().copied(), region_spans.len(), &place, d);

    let errors_after = d.iter().filter(|x| x.level == Level::Error).count();
    if errors_after > errors_before {
        return None;
    }
    let active = active?;
    Some(Service {
        name: label.value.clone(),
        project: project?,
        protocol: protocol?,
        active: regions
            .iter()
            .filter(|r| active.contains(&r.name))
            .map(|r| r.name.clone())
            .collect(),
        regions,
        outlier: outlier?,
        weights_managed_by: weights_managed_by?,
    })
}

fn lower_active(
    value: &Spanned<Literal>,
    regions: &HashMap<String, Range<usize>>,
    place: &str,
    d: &mut Vec<SpecDiagnostic>,
) -> Option<BTreeSet<String>> {
    let mut names: Vec<&str> = regions.keys().map(String::as_str).collect();
    names.sort_unstable();
    let Literal::List(items) = &value.value else {
        d.push(
            SpecDiagnostic::error(
                value.span.clone(),
                format!(
                    "`active` must be a list of region names, not {}",
                    describe(&value.value)
                ),
            )
            .help(format!("e.g. `active = [\"{}\"]`", names.first().unwrap_or(&"tokyo"))),
        );
        return None;
    };
    if items.is_empty() {
        d.push(
            SpecDiagnostic::error(
                value.span.clone(),
                format!("`active` is empty {place}: no region would receive traffic"),
            )
            .help(format!("name at least one of: {}", names.join(", "))),
        );
        return None;
    }
    let mut out = BTreeSet::new();
    let mut ok = true;
    for item in items {
        let Literal::Str(name) = &item.value else {
            d.push(SpecDiagnostic::error(
                item.span.clone(),
                format!("`active` holds region names (strings), not {}", describe(&item.value)),
            ));
            ok = false;
            continue;
        };
        if !regions.contains_key(name) {
            let mut diag = SpecDiagnostic::error(
                item.span.clone(),
                format!("`active` names region \"{name}\", which is not defined {place}"),
            );
            diag.help = Some(match suggest(name, names.iter().copied()) {
                Some(s) => format!("did you mean \"{s}\"? regions: {}", names.join(", ")),
                None => format!("regions: {}", names.join(", ")),
            });
            d.push(diag);
            ok = false;
        } else if !out.insert(name.clone()) {
            d.push(SpecDiagnostic::warning(
                item.span.clone(),
                format!("region \"{name}\" is listed twice in `active`"),
            ));
        }
    }
    ok.then_some(out)
}

fn lower_region(block: &Node, label: &Spanned<String>, service: &str, d: &mut Vec<SpecDiagnostic>) -> Option<Region> {
    let place = format!("in region \"{}\"", label.value);
    let errors_before = d.iter().filter(|x| x.level == Level::Error).count();
    if !is_google_name(&label.value) {
        d.push(
            SpecDiagnostic::error(
                label.span.clone(),
                format!(
                    "region name \"{}\" is not a valid Google Cloud resource name part",
                    label.value
                ),
            )
            .help("use lowercase letters, digits and hyphens, starting with a letter"),
        );
    } else if let Some(long) = generated_names(service, &label.value).iter().find(|n| n.len() > 63) {
        d.push(
            SpecDiagnostic::error(
                label.span.clone(),
                format!(
                    "the generated name \"{long}\" is {} characters; Google allows at most 63",
                    long.len()
                ),
            )
            .help("shorten the service or region name"),
        );
    }
    for child in &block.blocks {
        d.push(unknown(
            &child.ident.value,
            child.ident.span.clone(),
            &place,
            &REGION_ATTRS,
            &[],
        ));
    }
    let attrs = attributes(block, &REGION_ATTRS, &[], &place, d);
    let region_desc = format!("region \"{}\"", label.value);
    let location = required(
        &attrs,
        "location",
        block,
        &region_desc,
        "add `location = \"asia-northeast1\"` (the Cloud Run region)",
        d,
    )
    .and_then(|v| {
        let loc = string(v, "location", d)?;
        if !crate::regions::cloud_run_locations().any(|l| l == loc) {
            let mut diag = SpecDiagnostic::error(v.span.clone(), format!("\"{loc}\" is not a Cloud Run location"));
            diag.help = Some(match suggest(loc, crate::regions::cloud_run_locations()) {
                Some(s) => format!("did you mean \"{s}\"?"),
                None => {
                    "use a Cloud Run region such as \"asia-northeast1\" (Tokyo) or \"asia-northeast2\" (Osaka)".into()
                }
            });
            d.push(diag);
            return None;
        }
        Some(loc.to_string())
    });
    let cloud_run = required(
        &attrs,
        "cloud_run",
        block,
        &region_desc,
        "add `cloud_run = \"SERVICE\"` (the Cloud Run service name in that location)",
        d,
    )
    .and_then(|v| {
        let name = string(v, "cloud_run", d)?;
        if !is_google_name(name) {
            d.push(
                SpecDiagnostic::error(
                    v.span.clone(),
                    format!("\"{name}\" is not a valid Cloud Run service name"),
                )
                .help(
                    "1-63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen",
                ),
            );
            return None;
        }
        Some(name.to_string())
    });
    if d.iter().filter(|x| x.level == Level::Error).count() > errors_before {
        return None;
    }
    Some(Region {
        name: label.value.clone(),
        location: location?,
        cloud_run: cloud_run?,
    })
}

/// Defaults from the production setup the generator reproduces (two Cloud Run regions behind
/// one global Application Load Balancer): evaluate every 10 s, eject after 5 consecutive 5xx or gateway
/// errors, for 3 minutes.
fn default_outlier(regions: usize) -> Outlier {
    Outlier {
        interval: Duration::from_secs(10),
        base_ejection_time: Duration::from_secs(180),
        consecutive_errors: 5,
        consecutive_gateway_failure: 5,
        enforcing_consecutive_errors: 100,
        enforcing_consecutive_gateway_failure: 100,
        max_ejection_percent: default_max_ejection_percent(regions),
    }
}

/// The share that lets every region but one be ejected: floor(100 * (n-1) / n), 50 for two.
pub fn default_max_ejection_percent(regions: usize) -> u32 {
    if regions == 0 {
        return 0;
    }
    (100 * (regions as u32 - 1)) / regions as u32
}

/// How many of `regions` NEGs can be ejected at once with `percent`: Envoy ejects another host
/// while the ejected share is below the maximum, so ceil(percent * n / 100).
pub fn ejectable(percent: u32, regions: usize) -> usize {
    (percent as usize * regions).div_ceil(100)
}

/// The longest duration accepted for `interval` and `base_ejection_time`.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

fn lower_outlier(block: Option<&Node>, regions: usize, place: &str, d: &mut Vec<SpecDiagnostic>) -> Option<Outlier> {
    let mut outlier = default_outlier(regions);
    let Some(block) = block else { return Some(outlier) };
    let place = format!("in outlier_detection {}", place.trim_start_matches("in "));
    for child in &block.blocks {
        d.push(unknown(
            &child.ident.value,
            child.ident.span.clone(),
            &place,
            &OUTLIER_ATTRS,
            &[],
        ));
    }
    let attrs = attributes(block, &OUTLIER_ATTRS, &[], &place, d);
    let mut ok = true;
    for (name, target) in [
        ("interval", &mut outlier.interval),
        ("base_ejection_time", &mut outlier.base_ejection_time),
    ] {
        if let Some(v) = attrs.get(name) {
            match string(v, name, d).map(parse_duration) {
                Some(Ok(dur)) if dur.is_zero() || dur > MAX_DURATION => {
                    d.push(SpecDiagnostic::error(
                        v.span.clone(),
                        format!("`{name}` must be greater than 0s and at most 24h"),
                    ));
                    ok = false;
                }
                Some(Ok(dur)) => *target = dur,
                Some(Err(problem)) => {
                    d.push(
                        SpecDiagnostic::error(v.span.clone(), format!("`{name}`: {problem}"))
                            .help("durations are like \"10s\", \"3m\", \"1m30s\", \"500ms\", \"1h\""),
                    );
                    ok = false;
                }
                None => ok = false,
            }
        }
    }
    let ranges: [(&str, u32, u32, &mut u32); 5] = [
        ("consecutive_errors", 1, 1000, &mut outlier.consecutive_errors),
        (
            "consecutive_gateway_failure",
            1,
            1000,
            &mut outlier.consecutive_gateway_failure,
        ),
        (
            "enforcing_consecutive_errors",
            0,
            100,
            &mut outlier.enforcing_consecutive_errors,
        ),
        (
            "enforcing_consecutive_gateway_failure",
            0,
            100,
            &mut outlier.enforcing_consecutive_gateway_failure,
        ),
        ("max_ejection_percent", 0, 100, &mut outlier.max_ejection_percent),
    ];
    let mut max_span = None;
    for (name, min, max, target) in ranges {
        let Some(v) = attrs.get(name) else { continue };
        let parsed = match &v.value {
            Literal::Num(n) => n.parse::<u32>().ok().filter(|x| (min..=max).contains(x)),
            _ => None,
        };
        match parsed {
            Some(x) => {
                *target = x;
                if name == "max_ejection_percent" {
                    max_span = Some(v.span.clone());
                }
                if name.starts_with("enforcing") && x == 0 {
                    d.push(SpecDiagnostic::warning(
                        v.span.clone(),
                        format!("`{name}` = 0: this detection never ejects"),
                    ));
                }
            }
            None => {
                d.push(SpecDiagnostic::error(
                    v.span.clone(),
                    format!("`{name}` must be a whole number from {min} to {max}"),
                ));
                ok = false;
            }
        }
    }
    if let Some(span) = max_span {
        let percent = outlier.max_ejection_percent;
        if regions >= 2 && ejectable(percent, regions) == 0 {
            d.push(
                SpecDiagnostic::error(
                    span,
                    format!("max_ejection_percent = {percent} can never eject one of the {regions} regions"),
                )
                .help(format!(
                    "allowed for {regions} regions: 1 to {}",
                    default_max_ejection_percent(regions)
                )),
            );
            ok = false;
        } else if regions >= 1 && ejectable(percent, regions) >= regions {
            d.push(
                SpecDiagnostic::error(
                    span,
                    format!(
                        "max_ejection_percent = {percent} can eject all {regions} regions at once, leaving no backend"
                    ),
                )
                .help(format!(
                    "allowed for {regions} regions: 1 to {} (one region always stays)",
                    default_max_ejection_percent(regions)
                )),
            );
            ok = false;
        }
    }
    ok.then_some(outlier)
}

/// Parses durations such as `10s`, `3m`, `1m30s`, `500ms`, `1h`.
///
/// # Errors
/// A sentence saying what is wrong.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if text.is_empty() {
        return Err("empty duration".into());
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("\"{text}\" is not a duration"));
        }
        let value: u64 = rest[..digits].parse().map_err(|_| format!("\"{text}\" is too large"))?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let part = match &rest[..unit_len] {
            "ms" => Duration::from_millis(value),
            "s" => Duration::from_secs(value),
            "m" => Duration::from_secs(value.saturating_mul(60)),
            "h" => Duration::from_secs(value.saturating_mul(3600)),
            "" => return Err(format!("\"{text}\" has no unit (ms, s, m or h)")),
            unit => {
                return Err(format!(
                    "\"{text}\" has an unknown unit \"{unit}\" (allowed: ms, s, m, h)"
                ))
            }
        };
        total = total.saturating_add(part);
        rest = &rest[unit_len..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("10").unwrap_err().contains("no unit"));
        assert!(parse_duration("10d").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn ejection_shares() {
        assert_eq!(default_max_ejection_percent(2), 50);
        assert_eq!(default_max_ejection_percent(3), 66);
        assert_eq!(ejectable(50, 2), 1);
        assert_eq!(ejectable(66, 3), 2);
        assert_eq!(ejectable(67, 3), 3);
        assert_eq!(ejectable(51, 2), 2);
        assert_eq!(ejectable(0, 2), 0);
        assert_eq!(ejectable(1, 2), 1);
    }
}
