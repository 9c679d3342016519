//! `list "locality_weighted_backend"` for `terraform query`: the URL maps of a project that
//! have weighted backend services (paged `urlMaps.list`), each with its identity and, with
//! `include_resource`, its weights.

use async_trait::async_trait;

use super::{WeightedBackend, WeightedBackendModel};
use crate::naming::is_project_id;
use crate::provider::ProviderData;
use crate::tfplugin::{
    Attribute, AttributePath, Block, Context, Diagnostic, Diagnostics, Field, ListResource, Listed, Schema,
};

crate::model! {
    /// The `config` block of a `list "locality_weighted_backend"` block.
    pub struct WeightedBackendListConfig {
        /// The project to list; the provider's by default.
        pub project: Field<String>,
    }
}

/// The `config` block's schema.
pub fn list_schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "The URL maps of a project whose default route action has weighted backend services, for \
             `terraform query`: each result is named `<url_map> (<n> weighted backends)` and carries the \
             resource identity (`project`, `url_map`), so `-generate-config-out` writes a \
             `locality_weighted_backend` with its current weights and an `import` block.",
        )
        .attribute(
            Attribute::string("project")
                .optional()
                .description("The project; default: the provider's `google.project`."),
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
        if let Some(project) = config.project.get() {
            if !is_project_id(project) {
                diags.attribute_error(
                    AttributePath::root("project"),
                    "Invalid project ID",
                    format!("{project:?} is not a Google Cloud project ID: 6-30 lowercase letters, digits and hyphens, starting with a letter."),
                );
            }
        }
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
        let maps = compute.list_url_maps(&project).await;
        let Some(maps) = diags.check(maps.map_err(Diagnostic::from)) else {
            return Vec::new();
        };
        maps.into_iter()
            .filter(|map| !map.weighted().is_empty())
            .take(limit)
            .map(|map| {
                let count = map.weighted().len();
                let mut state = WeightedBackendModel {
                    id: format!("{project}/{}", map.name).into(),
                    project: project.as_str().into(),
                    url_map: map.name.as_str().into(),
                    weights: Field::Null,
                };
                state.set_weights(map.weights());
                Listed {
                    display_name: format!(
                        "{} ({count} weighted backend{})",
                        map.name,
                        if count == 1 { "" } else { "s" }
                    ),
                    state,
                }
            })
            .collect()
    }
}
