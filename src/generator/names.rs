//! The names `locality gen` gives what it writes, in one place so that the emitter and the
//! checks never disagree: Terraform labels use underscores (`web_tokyo`), Google names keep the
//! hyphens (`web-bs-tokyo`, at most 63 characters).

/// Google's limit on resource names.
pub const MAX_GOOGLE_NAME: usize = 63;

/// One generated resource: its Terraform type and label, and its Google name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// e.g. `google_compute_backend_service`.
    pub resource_type: &'static str,
    /// The Terraform label, e.g. `web_tokyo`.
    pub label: String,
    /// The Google name, e.g. `web-bs-tokyo`.
    pub name: String,
}

/// Terraform resource labels use underscores; Google names keep the hyphens.
pub fn label(name: &str) -> String {
    name.replace('-', "_")
}

/// A region's serverless NEG.
pub fn neg(service: &str, region: &str) -> Generated {
    Generated {
        resource_type: "google_compute_region_network_endpoint_group",
        label: format!("{}_{}", label(service), label(region)),
        name: format!("{service}-neg-{region}"),
    }
}

/// The all-regions backend service (`region` None) or a region's own.
pub fn backend_service(service: &str, region: Option<&str>) -> Generated {
    let (label, name) = match region {
        Some(region) => (
            format!("{}_{}", label(service), label(region)),
            format!("{service}-bs-{region}"),
        ),
        None => (label(service), format!("{service}-bs")),
    };
    Generated {
        resource_type: "google_compute_backend_service",
        label,
        name,
    }
}

/// The service's URL map.
pub fn url_map(service: &str) -> Generated {
    Generated {
        resource_type: "google_compute_url_map",
        label: label(service),
        name: format!("{service}-urlmap"),
    }
}

/// Everything generated for a service with these regions.
pub fn all<'a>(service: &str, regions: impl IntoIterator<Item = &'a str> + Clone) -> Vec<Generated> {
    let mut out: Vec<Generated> = regions.clone().into_iter().map(|r| neg(service, r)).collect();
    out.push(backend_service(service, None));
    out.extend(regions.into_iter().map(|r| backend_service(service, Some(r))));
    out.push(url_map(service));
    out
}
