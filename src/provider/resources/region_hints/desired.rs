//! What a configuration asks for: every hint of `hints` and `origins` (derived from the IP
//! ranges), by canonical IP, each with the configuration element it came from, so that
//! problems and per-IP failures are reported on that element.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::RegionHintsModel;
use crate::provider::cloudflare::{canonical_ip, Mapping};
use crate::provider::resources::region_hint::{not_an_ip, region_problem, vendor_problem};
use crate::ranges::Table;
use crate::tfplugin::{AttributePath, Diagnostics};

/// One wanted mapping and where the configuration asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// Canonical IP, lowercase vendor and region.
    pub mapping: Mapping,
    /// `hints["<ip as written>"]` or `origins[<index>]`.
    pub path: AttributePath,
}

impl Wanted {
    /// `vendor:region`.
    pub fn value(&self) -> String {
        format!("{}:{}", self.mapping.vendor, self.mapping.region)
    }
}

/// Parses `vendor:region` (any case) into a lowercase pair, or says what is wrong.
pub fn parse_hint(text: &str) -> Result<(String, String), String> {
    let Some((vendor, region)) = text.split_once(':') else {
        return Err(format!(
            "{text:?} is not `vendor:region`, e.g. \"aws:us-east-1\" or \"gcp:asia-northeast1\"."
        ));
    };
    let (vendor, region) = (vendor.trim().to_ascii_lowercase(), region.trim().to_ascii_lowercase());
    if let Some(problem) = vendor_problem(&vendor) {
        return Err(problem);
    }
    if let Some(problem) = region_problem(&vendor, &region) {
        return Err(problem);
    }
    Ok((vendor, region))
}

/// The wanted hints by canonical IP, or `None` while `hints` or `origins` (or any of their
/// keys or elements) is unknown. Every problem is an error on its element; elements with
/// problems are left out. `table` is the IP-range table, needed only for `origins`; `Err`
/// holds why it could not be read.
pub fn desired(
    model: &RegionHintsModel,
    table: Result<&Table, String>,
    diags: &mut Diagnostics,
) -> Option<BTreeMap<String, Wanted>> {
    let hints = match &model.hints {
        crate::tfplugin::Field::Unknown => return None,
        field => field.get().cloned().unwrap_or_default(),
    };
    let origins = match &model.origins {
        crate::tfplugin::Field::Unknown => return None,
        field => field.get().cloned().unwrap_or_default(),
    };
    let mut wanted: BTreeMap<String, Wanted> = BTreeMap::new();
    // Every IP given so far, by where it was given (also those whose hint has a problem).
    let mut seen: BTreeMap<String, AttributePath> = BTreeMap::new();
    let mut complete = true;
    for (key, value) in &hints {
        let path = AttributePath::root("hints").key(key);
        let Some(ip) = canonical_ip(key) else {
            diags.attribute_error(path, "Invalid IP address", not_an_ip(key));
            continue;
        };
        if let Some(first) = seen.get(&ip) {
            diags.attribute_error(
                path,
                "IP given twice",
                format!("{key:?} is the same IP as {first} ({ip}); give each IP once."),
            );
            continue;
        }
        seen.insert(ip.clone(), path.clone());
        let Some(value) = value.get() else {
            complete &= !value.is_unknown();
            continue;
        };
        let (vendor, region) = match parse_hint(value) {
            Ok(pair) => pair,
            Err(problem) => {
                diags.attribute_error(path, "Invalid hint", problem);
                continue;
            }
        };
        wanted.insert(
            ip.clone(),
            Wanted {
                mapping: mapping(ip, vendor, region),
                path,
            },
        );
    }
    for (index, origin) in origins.iter().enumerate() {
        let path = AttributePath::root("origins").index(index);
        let Some(text) = origin.get() else {
            complete &= !origin.is_unknown();
            continue;
        };
        let Some(ip) = canonical_ip(text) else {
            diags.attribute_error(path, "Invalid IP address", not_an_ip(text));
            continue;
        };
        if let Some(first) = seen.get(&ip) {
            let detail = if first.to_string().starts_with("hints") {
                format!("{text:?} also has a hint in {first}; give it in one place only.")
            } else {
                format!("{text:?} is the same IP as {first}; list each IP once.")
            };
            diags.attribute_error(path, "IP given twice", detail);
            continue;
        }
        seen.insert(ip.clone(), path.clone());
        let ranges = match &table {
            Ok(t) => *t,
            Err(e) => {
                diags.attribute_error(path, "Cannot read the IP-range snapshot", e.clone());
                return None;
            }
        };
        let Ok(parsed) = ip.parse::<IpAddr>() else { continue };
        let range = match ranges.lookup(parsed) {
            Some(range) => range,
            None => {
                diags.attribute_error(
                    path,
                    "IP in no cloud",
                    format!(
                        "{ip} is in none of the published AWS, Azure, Google Cloud or Oracle ranges (snapshot of {}); give its hint in `hints` instead.",
                        ranges.date
                    ),
                );
                continue;
            }
        };
        let Some(region) = range.region.map(str::to_string) else {
            diags.attribute_error(
                path,
                "IP in no region",
                format!(
                    "{ip} is in {} ({}, {}), a range without a region; give its hint in `hints` instead.",
                    range.net,
                    range.vendor.as_str(),
                    range.service
                ),
            );
            continue;
        };
        let vendor = range.vendor.as_str().to_string();
        if let Some(problem) = region_problem(&vendor, &region) {
            diags.attribute_error(
                path,
                "Derived region unknown to Cloudflare",
                format!(
                    "{ip} is in {} ({vendor} {region}), but {problem} Give its hint in `hints` instead.",
                    range.net
                ),
            );
            continue;
        }
        wanted.insert(
            ip.clone(),
            Wanted {
                mapping: mapping(ip, vendor, region),
                path,
            },
        );
    }
    complete.then_some(wanted)
}

fn mapping(origin_ip: String, vendor: String, region: String) -> Mapping {
    Mapping {
        origin_ip,
        vendor,
        region,
        modified_on: None,
    }
}
