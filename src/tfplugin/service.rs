//! The `tfplugin6.Provider` gRPC service: decode → dispatch by type name → encode.
//!
//! No business logic lives here. Problems are always answered as diagnostics in an `Ok`
//! response; values are never logged (they may hold secrets).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, RwLock};

use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::convert::{decode_dynamic, diagnostics_to_pb, encode_dynamic, path_to_pb, schema_to_pb};
use super::diagnostics::Diagnostics;
use super::plan::{initial_plan, replace_paths};
use super::proto::tfplugin6 as pb;
use super::schema::Schema;
use super::traits::{Context, DataSource, PlanRequest, Provider, Resource};
use super::value::{Type, Value};

struct Entry<T: ?Sized> {
    imp: Arc<T>,
    schema: Schema,
    ty: Type,
}

struct Inner<P: Provider> {
    provider: P,
    provider_schema: Schema,
    provider_type: Type,
    resources: BTreeMap<String, Entry<dyn Resource<P::Data>>>,
    data_sources: BTreeMap<String, Entry<dyn DataSource<P::Data>>>,
    data: RwLock<Option<Arc<P::Data>>>,
    stop: CancellationToken,
}

/// The gRPC service for one provider implementation.
pub struct ProviderService<P: Provider> {
    inner: Arc<Inner<P>>,
}

impl<P: Provider> Clone for ProviderService<P> {
    fn clone(&self) -> Self {
        ProviderService {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<P: Provider> ProviderService<P> {
    /// Wraps a provider. `stop` is cancelled by StopProvider.
    pub fn new(provider: P, stop: CancellationToken) -> Self {
        let provider_schema = provider.schema();
        let provider_type = provider_schema.block.value_type();
        let resources = provider
            .resources()
            .into_iter()
            .map(|imp| {
                let schema = imp.schema();
                let ty = schema.block.value_type();
                (imp.type_name().to_string(), Entry { imp, schema, ty })
            })
            .collect();
        let data_sources = provider
            .data_sources()
            .into_iter()
            .map(|imp| {
                let schema = imp.schema();
                let ty = schema.block.value_type();
                (imp.type_name().to_string(), Entry { imp, schema, ty })
            })
            .collect();
        ProviderService {
            inner: Arc::new(Inner {
                provider,
                provider_schema,
                provider_type,
                resources,
                data_sources,
                data: RwLock::new(None),
                stop,
            }),
        }
    }

    /// The tonic server for this service, with message limits raised to 256 MiB each way
    /// (tonic's default of 4 MiB is too small for large states).
    pub fn into_server(self) -> pb::provider_server::ProviderServer<Self> {
        const LIMIT: usize = 256 << 20;
        pb::provider_server::ProviderServer::new(self)
            .max_decoding_message_size(LIMIT)
            .max_encoding_message_size(LIMIT)
    }

    fn resource(&self, name: &str, diags: &mut Diagnostics) -> Option<&Entry<dyn Resource<P::Data>>> {
        let found = self.inner.resources.get(name);
        if found.is_none() {
            let known: Vec<&str> = self.inner.resources.keys().map(String::as_str).collect();
            diags.error(
                "Unknown resource type",
                format!(
                    "This provider has no resource type {name:?}; it has: {}.",
                    known.join(", ")
                ),
            );
        }
        found
    }

    fn data_source(&self, name: &str, diags: &mut Diagnostics) -> Option<&Entry<dyn DataSource<P::Data>>> {
        let found = self.inner.data_sources.get(name);
        if found.is_none() {
            let known: Vec<&str> = self.inner.data_sources.keys().map(String::as_str).collect();
            diags.error(
                "Unknown data source",
                format!(
                    "This provider has no data source {name:?}; it has: {}.",
                    known.join(", ")
                ),
            );
        }
        found
    }

    fn context(&self, diags: &mut Diagnostics) -> Option<Context<P::Data>> {
        let data = self.inner.data.read().expect("provider data lock").clone();
        match data {
            Some(data) => Some(Context {
                data,
                stop: self.inner.stop.clone(),
            }),
            None => {
                diags.error("Provider not configured", "Terraform did not configure the provider before this call, or its configuration failed; see the errors above.");
                None
            }
        }
    }

    /// Runs `work` unless StopProvider cancels it first.
    async fn cancellable<T>(
        &self,
        diags: &mut Diagnostics,
        work: impl Future<Output = (Option<T>, Diagnostics)>,
    ) -> Option<T> {
        tokio::select! {
            biased;
            () = self.inner.stop.cancelled() => {
                diags.error("Operation cancelled", "Terraform asked the provider to stop (StopProvider) before this operation finished.");
                None
            }
            (result, inner) = work => {
                diags.extend(inner);
                result
            }
        }
    }
}

fn reply<T>(message: T) -> Result<Response<T>, Status> {
    Ok(Response::new(message))
}

#[tonic::async_trait]
impl<P: Provider> pb::provider_server::Provider for ProviderService<P> {
    async fn get_provider_schema(
        &self,
        _: Request<pb::get_provider_schema::Request>,
    ) -> Result<Response<pb::get_provider_schema::Response>, Status> {
        tracing::debug!(rpc = "GetProviderSchema");
        let inner = &self.inner;
        reply(pb::get_provider_schema::Response {
            provider: Some(schema_to_pb(&inner.provider_schema)),
            resource_schemas: inner
                .resources
                .iter()
                .map(|(k, e)| (k.clone(), schema_to_pb(&e.schema)))
                .collect(),
            data_source_schemas: inner
                .data_sources
                .iter()
                .map(|(k, e)| (k.clone(), schema_to_pb(&e.schema)))
                .collect(),
            functions: Default::default(),
            ephemeral_resource_schemas: Default::default(),
            diagnostics: Vec::new(),
            provider_meta: None,
            server_capabilities: Some(pb::ServerCapabilities {
                plan_destroy: false,
                get_provider_schema_optional: false,
                move_resource_state: false,
            }),
        })
    }

    async fn get_metadata(
        &self,
        _: Request<pb::get_metadata::Request>,
    ) -> Result<Response<pb::get_metadata::Response>, Status> {
        let inner = &self.inner;
        reply(pb::get_metadata::Response {
            server_capabilities: Some(pb::ServerCapabilities {
                plan_destroy: false,
                get_provider_schema_optional: false,
                move_resource_state: false,
            }),
            diagnostics: Vec::new(),
            data_sources: inner
                .data_sources
                .keys()
                .map(|k| pb::get_metadata::DataSourceMetadata { type_name: k.clone() })
                .collect(),
            resources: inner
                .resources
                .keys()
                .map(|k| pb::get_metadata::ResourceMetadata { type_name: k.clone() })
                .collect(),
            functions: Vec::new(),
            ephemeral_resources: Vec::new(),
        })
    }

    async fn validate_provider_config(
        &self,
        request: Request<pb::validate_provider_config::Request>,
    ) -> Result<Response<pb::validate_provider_config::Response>, Status> {
        tracing::debug!(rpc = "ValidateProviderConfig");
        let req = request.into_inner();
        let mut diags = Diagnostics::default();
        if let Some(config) = decode_dynamic(
            req.config.as_ref(),
            &self.inner.provider_type,
            "provider configuration",
            &mut diags,
        ) {
            self.inner.provider.validate(&config, &mut diags);
        }
        reply(pb::validate_provider_config::Response {
            diagnostics: diagnostics_to_pb(&diags),
        })
    }

    async fn configure_provider(
        &self,
        request: Request<pb::configure_provider::Request>,
    ) -> Result<Response<pb::configure_provider::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "ConfigureProvider", terraform_version = %req.terraform_version);
        let mut diags = Diagnostics::default();
        if let Some(config) = decode_dynamic(
            req.config.as_ref(),
            &self.inner.provider_type,
            "provider configuration",
            &mut diags,
        ) {
            let config = self.inner.provider_schema.block.conform(&config);
            if let Some(data) = self.inner.provider.configure(&config, &mut diags).await {
                *self.inner.data.write().expect("provider data lock") = Some(Arc::new(data));
            }
        }
        reply(pb::configure_provider::Response {
            diagnostics: diagnostics_to_pb(&diags),
        })
    }

    async fn validate_resource_config(
        &self,
        request: Request<pb::validate_resource_config::Request>,
    ) -> Result<Response<pb::validate_resource_config::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "ValidateResourceConfig", type_name = %req.type_name);
        let mut diags = Diagnostics::default();
        if let Some(entry) = self.resource(&req.type_name, &mut diags) {
            if let Some(config) = decode_dynamic(req.config.as_ref(), &entry.ty, "configuration", &mut diags) {
                entry.imp.validate(&entry.schema.block.conform(&config), &mut diags);
            }
        }
        reply(pb::validate_resource_config::Response {
            diagnostics: diagnostics_to_pb(&diags),
        })
    }

    async fn validate_data_resource_config(
        &self,
        request: Request<pb::validate_data_resource_config::Request>,
    ) -> Result<Response<pb::validate_data_resource_config::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "ValidateDataResourceConfig", type_name = %req.type_name);
        let mut diags = Diagnostics::default();
        if let Some(entry) = self.data_source(&req.type_name, &mut diags) {
            if let Some(config) = decode_dynamic(req.config.as_ref(), &entry.ty, "configuration", &mut diags) {
                entry.imp.validate(&entry.schema.block.conform(&config), &mut diags);
            }
        }
        reply(pb::validate_data_resource_config::Response {
            diagnostics: diagnostics_to_pb(&diags),
        })
    }

    async fn upgrade_resource_state(
        &self,
        request: Request<pb::upgrade_resource_state::Request>,
    ) -> Result<Response<pb::upgrade_resource_state::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "UpgradeResourceState", type_name = %req.type_name, version = req.version);
        let mut diags = Diagnostics::default();
        let mut upgraded = None;
        if let Some(entry) = self.resource(&req.type_name, &mut diags) {
            let json = req.raw_state.map(|r| r.json).unwrap_or_default();
            let current = entry.schema.version;
            let state = if req.version == current {
                match super::value::decode_json(&json, &entry.ty) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        diags.error(
                            "Unreadable state",
                            format!("The stored state of {} does not match its schema: {e}.", req.type_name),
                        );
                        None
                    }
                }
            } else if req.version < current {
                match serde_json::from_slice::<serde_json::Value>(&json) {
                    Ok(raw) => entry.imp.upgrade(req.version, untyped(&raw), &mut diags),
                    Err(e) => {
                        diags.error("Unreadable state", format!("The stored state is not JSON: {e}."));
                        None
                    }
                }
            } else {
                diags.error(
                    "State from a newer provider",
                    format!("The state of {} was written by a newer version of this provider (schema version {}, this one knows {current}). Upgrade the provider.", req.type_name, req.version),
                );
                None
            };
            upgraded = state.map(|s| encode_dynamic(&entry.schema.block.conform(&s), &entry.ty));
        }
        reply(pb::upgrade_resource_state::Response {
            upgraded_state: upgraded,
            diagnostics: diagnostics_to_pb(&diags),
        })
    }

    async fn read_resource(
        &self,
        request: Request<pb::read_resource::Request>,
    ) -> Result<Response<pb::read_resource::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "ReadResource", type_name = %req.type_name);
        let mut diags = Diagnostics::default();
        let mut new_state = None;
        if let (Some(entry), Some(ctx)) = (self.resource(&req.type_name, &mut diags), self.context(&mut diags)) {
            if let Some(current) = decode_dynamic(req.current_state.as_ref(), &entry.ty, "current state", &mut diags) {
                let current = entry.schema.block.conform(&current);
                let read = self
                    .cancellable(&mut diags, async {
                        let mut d = Diagnostics::default();
                        let r = entry.imp.read(&ctx, &current, &mut d).await;
                        (Some(r), d)
                    })
                    .await;
                new_state = match read {
                    Some(Some(state)) => {
                        let mut state = entry.schema.block.conform(&state);
                        super::plan::keep_equivalent(&entry.schema.block, &mut state, &current);
                        Some(encode_dynamic(&state, &entry.ty))
                    }
                    // The object is gone: a null state makes Terraform drop it and plan a create.
                    Some(None) if !diags.has_errors() => Some(encode_dynamic(&Value::Null, &entry.ty)),
                    // On errors keep what Terraform had.
                    _ => Some(encode_dynamic(&current, &entry.ty)),
                };
            }
        }
        reply(pb::read_resource::Response {
            new_state,
            diagnostics: diagnostics_to_pb(&diags),
            private: req.private,
            deferred: None,
        })
    }

    async fn plan_resource_change(
        &self,
        request: Request<pb::plan_resource_change::Request>,
    ) -> Result<Response<pb::plan_resource_change::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "PlanResourceChange", type_name = %req.type_name);
        let mut diags = Diagnostics::default();
        let mut planned_state = None;
        let mut requires_replace = Vec::new();
        if let Some(entry) = self.resource(&req.type_name, &mut diags) {
            let block = &entry.schema.block;
            let prior = decode_dynamic(req.prior_state.as_ref(), &entry.ty, "prior state", &mut diags);
            let proposed = decode_dynamic(req.proposed_new_state.as_ref(), &entry.ty, "proposed state", &mut diags);
            let config = decode_dynamic(req.config.as_ref(), &entry.ty, "configuration", &mut diags);
            if let (Some(prior), Some(proposed), Some(config)) = (prior, proposed, config) {
                if proposed.is_null() {
                    planned_state = Some(encode_dynamic(&Value::Null, &entry.ty));
                } else if let Some(ctx) = self.context(&mut diags) {
                    let prior = block.conform(&prior);
                    let config = block.conform(&config);
                    let mut planned = initial_plan(block, &prior, &proposed, &config);
                    let modified = self
                        .cancellable(&mut diags, async {
                            let mut d = Diagnostics::default();
                            entry
                                .imp
                                .modify_plan(
                                    &ctx,
                                    PlanRequest {
                                        prior: &prior,
                                        config: &config,
                                    },
                                    &mut planned,
                                    &mut d,
                                )
                                .await;
                            (Some(planned), d)
                        })
                        .await;
                    if let Some(planned) = modified {
                        requires_replace = replace_paths(block, &prior, &planned).iter().map(path_to_pb).collect();
                        planned_state = Some(encode_dynamic(&block.conform(&planned), &entry.ty));
                    }
                }
            }
        }
        reply(pb::plan_resource_change::Response {
            planned_state,
            requires_replace,
            planned_private: req.prior_private,
            diagnostics: diagnostics_to_pb(&diags),
            legacy_type_system: false,
            deferred: None,
        })
    }

    async fn apply_resource_change(
        &self,
        request: Request<pb::apply_resource_change::Request>,
    ) -> Result<Response<pb::apply_resource_change::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "ApplyResourceChange", type_name = %req.type_name);
        let mut diags = Diagnostics::default();
        let mut new_state = None;
        if let (Some(entry), Some(ctx)) = (self.resource(&req.type_name, &mut diags), self.context(&mut diags)) {
            let block = &entry.schema.block;
            let prior = decode_dynamic(req.prior_state.as_ref(), &entry.ty, "prior state", &mut diags);
            let planned = decode_dynamic(req.planned_state.as_ref(), &entry.ty, "planned state", &mut diags);
            if let (Some(prior), Some(planned)) = (prior, planned) {
                let (prior, planned) = (block.conform(&prior), block.conform(&planned));
                if planned.is_null() {
                    self.cancellable(&mut diags, async {
                        let mut d = Diagnostics::default();
                        entry.imp.delete(&ctx, &prior, &mut d).await;
                        (Some(()), d)
                    })
                    .await;
                    // A failed delete keeps the object in state.
                    let after = if diags.has_errors() { &prior } else { &Value::Null };
                    new_state = Some(encode_dynamic(after, &entry.ty));
                } else {
                    let result = self
                        .cancellable(&mut diags, async {
                            let mut d = Diagnostics::default();
                            let r = if prior.is_null() {
                                entry.imp.create(&ctx, &planned, &mut d).await
                            } else {
                                entry.imp.update(&ctx, &prior, &planned, &mut d).await
                            };
                            (r, d)
                        })
                        .await;
                    new_state = match result {
                        Some(state) => {
                            let state = block.conform(&state);
                            if !state.is_wholly_known() {
                                diags.error(
                                    "Provider bug",
                                    format!("{} returned a state with unknown values after apply.", req.type_name),
                                );
                            }
                            Some(encode_dynamic(&state, &entry.ty))
                        }
                        // Failed create: nothing to track. Failed update: Terraform keeps the prior state.
                        None if prior.is_null() => Some(encode_dynamic(&Value::Null, &entry.ty)),
                        None => None,
                    };
                }
            }
        }
        reply(pb::apply_resource_change::Response {
            new_state,
            private: req.planned_private,
            diagnostics: diagnostics_to_pb(&diags),
            legacy_type_system: false,
        })
    }

    async fn import_resource_state(
        &self,
        request: Request<pb::import_resource_state::Request>,
    ) -> Result<Response<pb::import_resource_state::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "ImportResourceState", type_name = %req.type_name);
        let mut diags = Diagnostics::default();
        let mut imported = Vec::new();
        if let (Some(entry), Some(ctx)) = (self.resource(&req.type_name, &mut diags), self.context(&mut diags)) {
            let state = self
                .cancellable(&mut diags, async {
                    let mut d = Diagnostics::default();
                    let r = entry.imp.import(&ctx, &req.id, &mut d).await;
                    (r, d)
                })
                .await;
            if let Some(state) = state.filter(|_| !diags.has_errors()) {
                imported.push(pb::import_resource_state::ImportedResource {
                    type_name: req.type_name.clone(),
                    state: Some(encode_dynamic(&entry.schema.block.conform(&state), &entry.ty)),
                    private: Vec::new(),
                });
            }
        }
        reply(pb::import_resource_state::Response {
            imported_resources: imported,
            diagnostics: diagnostics_to_pb(&diags),
            deferred: None,
        })
    }

    async fn read_data_source(
        &self,
        request: Request<pb::read_data_source::Request>,
    ) -> Result<Response<pb::read_data_source::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "ReadDataSource", type_name = %req.type_name);
        let mut diags = Diagnostics::default();
        let mut state = None;
        if let (Some(entry), Some(ctx)) = (self.data_source(&req.type_name, &mut diags), self.context(&mut diags)) {
            if let Some(config) = decode_dynamic(req.config.as_ref(), &entry.ty, "configuration", &mut diags) {
                let config = entry.schema.block.conform(&config);
                let read = self
                    .cancellable(&mut diags, async {
                        let mut d = Diagnostics::default();
                        let r = entry.imp.read(&ctx, &config, &mut d).await;
                        (r, d)
                    })
                    .await;
                state = read.map(|s| encode_dynamic(&entry.schema.block.conform(&s), &entry.ty));
            }
        }
        reply(pb::read_data_source::Response {
            state,
            diagnostics: diagnostics_to_pb(&diags),
            deferred: None,
        })
    }

    async fn stop_provider(
        &self,
        _: Request<pb::stop_provider::Request>,
    ) -> Result<Response<pb::stop_provider::Response>, Status> {
        tracing::info!(rpc = "StopProvider", "cancelling in-flight operations");
        self.inner.stop.cancel();
        reply(pb::stop_provider::Response { error: String::new() })
    }
}

/// A JSON document as a value without a schema (for upgrading old state shapes).
fn untyped(json: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match json {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Number(n) => super::value::Number::parse(&n.to_string()).map_or(Value::Null, Value::Number),
        J::String(s) => Value::String(s.clone()),
        J::Array(a) => Value::List(a.iter().map(untyped).collect()),
        J::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), untyped(v))).collect()),
    }
}
