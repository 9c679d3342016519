//! `list "locality_weighted_backend"` for `terraform query`: every route with weighted backend
//! services of a project's URL maps (paged `urlMaps.list`, or `regionUrlMaps.list` with a
//! region), each with its identity and, with `include_resource`, its weights.

use async_trait::async_trait;

use super::{validate_address, WeightedBackend, WeightedBackendModel};
use crate::provider::google::{Route, UrlMapLocation};
use crate::provider::ProviderData;
use crate::tfplugin::{
    Attribute, AttributePath, Block, Context, Diagnostic, Diagnostics, Field, ListResource, Listed, Schema,
};

crate::model! {
    /// The `config` block of a `list "locality_weighted_backend"` block.
    pub struct WeightedBackendListConfig {
        /// The project to list; the provider's by default.
        pub project: Field<String>,
        /// The region whose regional URL maps to list; global URL maps when null.
        pub region: Field<String>,
    }
}

/// The `config` block's schema.
pub fn list_schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "Every route with weighted backend services of a project's URL maps — global ones, or with `region` \
             that region's — for `terraform query` (`list` blocks live in `*.tfquery.hcl` files; Terraform 1.14 \
             and later). Each result is one route: the URL map's default route is named \
             `<url_map> (<n> weighted backends)`, a path matcher's default route `<url_map>#<path_matcher> (...)` \
             and a route rule `<url_map>#<path_matcher>/<priority> (...)`. Each carries the resource identity, so \
             `-generate-config-out` writes a `locality_weighted_backend` with its current weights and an `import` \
             block.",
        )
        .attribute(
            Attribute::string("project")
                .optional()
                .description("The project; default: the provider's `google.project`."),
        )
        .attribute(
            Attribute::string("region")
                .optional()
                .description("A region (e.g. `asia-northeast1`): list its regional URL maps (`regionUrlMaps`). Default: the global URL maps."),
        ),
    }
}

#[async_trait]
impl ListResource<ProviderData> for WeightedBackend {
    type ListConfig = WeightedBackendListConfig;

    fn list_schema(&self) -> Schema {
        list_schema()
    }

    fn validate_list(&self, config: &WeightedBackendListConfig, diags: &mut Diagnostics) {
        validate_address(&config.project, &config.region, &Field::Null, &Field::Null, diags);
    }

    async fn list(
        &self,
        ctx: &Context<ProviderData>,
        config: WeightedBackendListConfig,
        limit: usize,
        diags: &mut Diagnostics,
    ) -> Vec<Listed<WeightedBackendModel>> {
        let Some(compute) = diags.check(ctx.data.compute()) else {
            return Vec::new();
        };
        let project = match config
            .project
            .get()
            .cloned()
            .or_else(|| ctx.data.config.google.project.clone())
        {
            Some(project) => project,
            None => {
                diags.attribute_error(
                    AttributePath::root("project"),
                    "No project",
                    "Set `project` in the list's `config` block, or `project` in the provider's `google` block.",
                );
                return Vec::new();
            }
        };
        let region = config.region.get().cloned();
        let maps = compute.list_url_maps(&project, region.as_deref()).await;
        let Some(maps) = diags.check(maps.map_err(Diagnostic::from)) else {
            return Vec::new();
        };
        maps.into_iter()
            .flat_map(|map| {
                let location = UrlMapLocation {
                    project: project.clone(),
                    region: region.clone(),
                    name: map.name.clone(),
                };
                map.weighted_routes()
                    .into_iter()
                    .map(move |(route, weighted)| (location.clone(), route, weighted))
            })
            .take(limit)
            .map(|(location, route, weighted)| {
                let count = weighted.len();
                let mut state = WeightedBackendModel::default();
                state.set_address(&location, &route);
                state.set_weights(weighted.iter().map(|w| (w.name().to_string(), w.weight)).collect());
                let route_name = match &route {
                    Route::Default => String::new(),
                    other => other.id_suffix(),
                };
                Listed {
                    display_name: format!(
                        "{}{route_name} ({count} weighted backend{})",
                        location.name,
                        if count == 1 { "" } else { "s" }
                    ),
                    state,
                }
            })
            .collect()
    }
}
