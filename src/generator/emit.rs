//! Spec → Google Cloud blocks: per service, one serverless NEG per region, a backend service
//! holding every region's NEG, one backend service per region, and a URL map whose default
//! route splits traffic with `weighted_backend_services`.
//!
//! Ordering is fixed (services, then regions, in spec order) so that a one-line spec change,
//! such as `active = ["tokyo"]`, is a small diff.

use std::time::Duration;

use super::hcl::{Block, Expr};
use super::names::{self, label as ident};
use super::spec::{Outlier, Service, Spec, WeightsManagedBy};

/// The total weight split between backend services.
pub const TOTAL_WEIGHT: i64 = 100;

fn reference(kind: &str, name: &str) -> Expr {
    Expr::Traversal(vec![kind.into(), name.into(), "id".into()])
}

fn s(value: &str) -> Expr {
    Expr::Str(value.into())
}

/// The weight of each backend service, in URL-map order: the all-regions service first, then
/// each region's. All regions active: the all-regions service takes everything. Otherwise the
/// active regions' own services share it, the remainder going to the earliest.
pub fn weights(service: &Service) -> Vec<(String, i64)> {
    weights_for(service, &service.active)
}

fn weights_for(service: &Service, active: &[String]) -> Vec<(String, i64)> {
    let all_active = active.len() == service.regions.len();
    let mut out = vec![(service.name.clone(), if all_active { TOTAL_WEIGHT } else { 0 })];
    let share = TOTAL_WEIGHT / active.len().max(1) as i64;
    let mut remainder = TOTAL_WEIGHT - share * active.len() as i64;
    for region in &service.regions {
        let weight = if !all_active && active.contains(&region.name) {
            let extra = i64::from(remainder > 0);
            remainder -= extra;
            share + extra
        } else {
            0
        };
        out.push((format!("{}_{}", service.name, region.name), weight));
    }
    out
}

/// The Google name of a backend service from its weights key (`web` or `web_tokyo`).
fn google_backend_name(service: &Service, key: &str) -> String {
    match key.strip_prefix(&format!("{}_", service.name)) {
        Some(region) => names::backend_service(&service.name, Some(region)).name,
        None => names::backend_service(&service.name, None).name,
    }
}

/// Every block for the spec, in output order.
pub fn blocks(spec: &Spec) -> Vec<Block> {
    let mut out = Vec::new();
    for service in &spec.services {
        out.extend(service_blocks(service));
    }
    for forward in &spec.forwards {
        out.extend(super::aws::blocks(forward));
    }
    out
}

fn duration_block(name: &str, duration: Duration) -> Block {
    Block::new(name, &[])
        .attr("seconds", Expr::Int(duration.as_secs() as i64))
        .attr("nanos", Expr::Int(i64::from(duration.subsec_nanos())))
}

fn outlier_block(outlier: &Outlier, single_neg: bool) -> Block {
    let max_ejection_percent = if single_neg { 0 } else { outlier.max_ejection_percent };
    let block = Block::new("outlier_detection", &[]);
    let block = if single_neg {
        block.comment("One NEG: ejecting it would leave this service no backend, so it is never ejected.")
    } else {
        block
    };
    block
        .attr("consecutive_errors", Expr::Int(outlier.consecutive_errors.into()))
        .attr(
            "consecutive_gateway_failure",
            Expr::Int(outlier.consecutive_gateway_failure.into()),
        )
        .attr(
            "enforcing_consecutive_errors",
            Expr::Int(outlier.enforcing_consecutive_errors.into()),
        )
        .attr(
            "enforcing_consecutive_gateway_failure",
            Expr::Int(outlier.enforcing_consecutive_gateway_failure.into()),
        )
        .attr("max_ejection_percent", Expr::Int(max_ejection_percent.into()))
        .block(duration_block("base_ejection_time", outlier.base_ejection_time))
        .block(duration_block("interval", outlier.interval))
}

fn backend_service(service: &Service, tf_name: &str, google_name: &str, negs: &[String]) -> Block {
    let mut block = Block::new("resource", &["google_compute_backend_service", tf_name])
        .attr("name", s(google_name))
        .attr("project", s(&service.project))
        .attr("protocol", s(&service.protocol))
        .attr("load_balancing_scheme", s("EXTERNAL_MANAGED"));
    for neg in negs {
        block = block.block(
            Block::new("backend", &[]).attr("group", reference("google_compute_region_network_endpoint_group", neg)),
        );
    }
    block.block(outlier_block(&service.outlier, negs.len() == 1))
}

fn service_blocks(service: &Service) -> Vec<Block> {
    let svc = ident(&service.name);
    let mut out = Vec::new();
    let mut negs = Vec::new();
    for region in &service.regions {
        let neg = names::neg(&service.name, &region.name);
        out.push(
            Block::new("resource", &[neg.resource_type, &neg.label])
                .attr("name", s(&neg.name))
                .attr("project", s(&service.project))
                .attr("region", s(&region.location))
                .attr("network_endpoint_type", s("SERVERLESS"))
                .block(Block::new("cloud_run", &[]).attr("service", s(&region.cloud_run))),
        );
        negs.push(neg.label);
    }
    let all_regions = names::backend_service(&service.name, None);
    out.push(backend_service(service, &all_regions.label, &all_regions.name, &negs));
    for (region, neg) in service.regions.iter().zip(&negs) {
        let own = names::backend_service(&service.name, Some(&region.name));
        out.push(backend_service(
            service,
            &own.label,
            &own.name,
            std::slice::from_ref(neg),
        ));
    }

    let active = if service.active.len() == service.regions.len() {
        "all regions active".to_string()
    } else {
        format!("active: {}", service.active.join(", "))
    };
    let external = service.weights_managed_by == WeightsManagedBy::LocalityWeightedBackend;
    // With external weights the URL map keeps its creation-time weights (every region active) and
    // ignores later changes to them, so `active` only changes the locality_weighted_backend.
    let all: Vec<String> = service.regions.iter().map(|r| r.name.clone()).collect();
    let url_map_weights = weights_for(service, if external { &all } else { &service.active });
    let mut route = Block::new("default_route_action", &[]);
    for (backend, weight) in &url_map_weights {
        route = route.block(
            Block::new("weighted_backend_services", &[])
                .attr(
                    "backend_service",
                    reference("google_compute_backend_service", &ident(backend)),
                )
                .attr("weight", Expr::Int(*weight)),
        );
    }
    let url_map_names = names::url_map(&service.name);
    let url_map = Block::new("resource", &[url_map_names.resource_type, &url_map_names.label])
        .attr("name", s(&url_map_names.name))
        .attr("project", s(&service.project));
    let url_map = if external {
        let ignored = (0..url_map_weights.len())
            .map(|i| Expr::StaticRef(format!("default_route_action[0].weighted_backend_services[{i}].weight")))
            .collect();
        url_map
            .comment("Weights are set by locality_weighted_backend; these are only the initial ones.")
            .block(route)
            .block(Block::new("lifecycle", &[]).attr("ignore_changes", Expr::List(ignored)))
    } else {
        url_map.comment(&format!("Weights: {active}.")).block(route)
    };
    out.push(url_map);
    if external {
        let weights = weights(service)
            .into_iter()
            .map(|(backend, weight)| (google_backend_name(service, &backend), Expr::Int(weight)))
            .collect();
        out.push(
            Block::new("resource", &["locality_weighted_backend", &svc])
                .attr("project", s(&service.project))
                .attr(
                    "url_map",
                    Expr::Traversal(vec!["google_compute_url_map".into(), svc.clone(), "name".into()]),
                )
                .comment(&format!("Weights: {active}."))
                .attr("weights", Expr::Map(weights)),
        );
    }
    out
}
