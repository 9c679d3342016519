//! The `tfplugin6.Provider` gRPC service: decode → dispatch by type name → encode.
//!
//! No business logic lives here. Problems are always answered as diagnostics in an `Ok`
//! response; values are never logged (they may hold secrets).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures_util::FutureExt as _;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::action::{DynamicAction, Progress};
use super::convert::{decode_dynamic, diagnostics_to_pb, encode_dynamic, path_to_pb, schema_to_pb};
use super::diagnostics::{Diagnostic, Diagnostics};
use super::function::{Function, FunctionDefinition};
use super::guard::{action_completed, panic_diagnostic, PanicGuard};
use super::identity::IdentitySchema;
use super::list::DynamicListResource;
use super::plan::{finish_plan, initial_plan, keep_equivalent, replace_paths, Equivalence};
use super::proto::tfplugin6 as pb;
use super::schema::Schema;
use super::traits::{Context, DynamicDataSource, DynamicResource, MoveSource, PlanRequest, Provider};
use super::value::{Type, Value};

/// A registered resource or data source type, with its schema and value type computed once.
struct Entry<T: ?Sized> {
    imp: Arc<T>,
    schema: Schema,
    ty: Type,
}

impl<T: ?Sized> Entry<T> {
    fn encode(&self, value: &Value) -> pb::DynamicValue {
        encode_dynamic(&self.schema.block.conform(value), &self.ty)
    }
}

/// What every call starts from: the type's entry, the request's values decoded against its
/// schema (and conformed), and the provider context when the call needs one.
struct Call<'s, T: ?Sized, D, const N: usize> {
    entry: &'s Entry<T>,
    values: [Value; N],
    ctx: Option<Context<D>>,
}

/// A resource type's identity schema and its value type, computed once.
struct Identity {
    schema: IdentitySchema,
    ty: Type,
}

struct Inner<P: Provider> {
    provider: P,
    provider_schema: Schema,
    provider_type: Type,
    resources: BTreeMap<String, Entry<dyn DynamicResource<P::Data>>>,
    identities: BTreeMap<String, Identity>,
    data_sources: BTreeMap<String, Entry<dyn DynamicDataSource<P::Data>>>,
    list_resources: BTreeMap<String, Entry<dyn DynamicListResource<P::Data>>>,
    actions: BTreeMap<String, Entry<dyn DynamicAction<P::Data>>>,
    functions: BTreeMap<String, (Arc<dyn Function>, FunctionDefinition)>,
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

fn entries<T: ?Sized>(
    items: Vec<Arc<T>>,
    name: impl Fn(&T) -> &'static str,
    schema: impl Fn(&T) -> Schema,
) -> BTreeMap<String, Entry<T>> {
    items
        .into_iter()
        .map(|imp| {
            let schema = schema(&imp);
            let ty = schema.block.value_type();
            (name(&imp).to_string(), Entry { imp, schema, ty })
        })
        .collect()
}

impl<P: Provider> ProviderService<P> {
    /// Wraps a provider. `stop` is cancelled by StopProvider.
    pub fn new(provider: P, stop: CancellationToken) -> Self {
        let provider_schema = provider.schema();
        let provider_type = provider_schema.block.value_type();
        let resources = entries(provider.resources(), |r| r.type_name(), |r| r.schema());
        let data_sources = entries(provider.data_sources(), |d| d.type_name(), |d| d.schema());
        let list_resources = entries(provider.list_resources(), |l| l.type_name(), |l| l.schema());
        let actions = entries(provider.actions(), |a| a.type_name(), |a| a.schema());
        let functions = provider
            .functions()
            .into_iter()
            .map(|f| {
                let definition = f.definition();
                (definition.name.to_string(), (f, definition))
            })
            .collect();
        let identities = resources
            .iter()
            .filter_map(|(name, entry)| {
                let schema = entry.imp.identity_schema()?;
                let ty = schema.value_type();
                Some((name.clone(), Identity { schema, ty }))
            })
            .collect();
        ProviderService {
            inner: Arc::new(Inner {
                provider,
                provider_schema,
                provider_type,
                resources,
                identities,
                data_sources,
                list_resources,
                actions,
                functions,
                data: RwLock::new(None),
                stop,
            }),
        }
    }

    /// The tonic server for this service, with message limits raised to 256 MiB each way
    /// (tonic's default of 4 MiB is too small for large states).
    /// Every RPC is behind [`PanicGuard`]: a panic is a diagnostic, never a cancelled request.
    pub(crate) fn into_server(self) -> pb::provider_server::ProviderServer<PanicGuard<Self>> {
        const LIMIT: usize = 256 << 20;
        pb::provider_server::ProviderServer::new(PanicGuard(self))
            .max_decoding_message_size(LIMIT)
            .max_encoding_message_size(LIMIT)
    }

    /// The one dispatch helper: looks `type_name` up in `table`, takes the provider context
    /// when `with_context`, and decodes `inputs` against the type's schema. Every problem is a
    /// diagnostic, and `None` means the call cannot go on.
    fn prepare<'s, T: ?Sized, const N: usize>(
        &'s self,
        table: &'s BTreeMap<String, Entry<T>>,
        kind: &str,
        type_name: &str,
        inputs: [(&str, Option<&pb::DynamicValue>); N],
        with_context: bool,
        diags: &mut Diagnostics,
    ) -> Option<Call<'s, T, P::Data, N>> {
        let Some(entry) = table.get(type_name) else {
            let known: Vec<&str> = table.keys().map(String::as_str).collect();
            diags.error(
                format!("Unknown {kind}"),
                format!(
                    "This provider has no {kind} {type_name:?}; it has: {}.",
                    known.join(", ")
                ),
            );
            return None;
        };
        let ctx = if with_context { Some(self.context(diags)?) } else { None };
        let mut values: [Value; N] = std::array::from_fn(|_| Value::Null);
        for (slot, (what, dv)) in values.iter_mut().zip(inputs) {
            *slot = entry.schema.block.conform(&decode_dynamic(dv, &entry.ty, what, diags)?);
        }
        Some(Call { entry, values, ctx })
    }

    fn context(&self, diags: &mut Diagnostics) -> Option<Context<P::Data>> {
        let data = self.inner.data.read().unwrap_or_else(|e| e.into_inner()).clone();
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

    /// The identity of `state` (a non-null state of `type_name`), encoded, when the type has an
    /// identity and it is wholly known.
    fn identity_of(&self, type_name: &str, state: &Value) -> Option<pb::ResourceIdentityData> {
        let identity = self.inner.identities.get(type_name)?;
        if state.is_null() {
            return None;
        }
        let entry = self.inner.resources.get(type_name)?;
        let value = entry.imp.identity(state)?;
        value.is_wholly_known().then(|| pb::ResourceIdentityData {
            identity_data: Some(encode_dynamic(&value, &identity.ty)),
        })
    }

    /// The import ID an identity (as sent by `import { identity = {...} }`) stands for.
    fn import_id(
        &self,
        type_name: &str,
        entry: &Entry<dyn DynamicResource<P::Data>>,
        ctx: &Context<P::Data>,
        identity: &pb::ResourceIdentityData,
    ) -> Result<String, Diagnostic> {
        let Some(schema) = self.inner.identities.get(type_name) else {
            return Err(Diagnostic::error(
                "No identity",
                format!("{type_name} has no resource identity; import it by ID."),
            ));
        };
        let mut diags = Diagnostics::default();
        let value = decode_dynamic(identity.identity_data.as_ref(), &schema.ty, "identity", &mut diags);
        match value {
            Some(value) if !diags.has_errors() => entry.imp.import_id(ctx, &value),
            _ => Err(diags
                .iter()
                .next()
                .cloned()
                .unwrap_or_else(|| Diagnostic::error("Invalid identity", "The identity could not be read."))),
        }
    }

    /// Runs `work` unless StopProvider cancels it first (reads, plans, imports: nothing to
    /// lose by stopping them at once).
    async fn cancellable<T>(&self, diags: &mut Diagnostics, work: impl Future<Output = (T, Diagnostics)>) -> Option<T> {
        self.stoppable(diags, Duration::ZERO, work).await
    }

    /// Runs `work`; after StopProvider it still gets `grace` to finish before it is cancelled.
    /// Changes get [`APPLY_GRACE`]: a write cut off mid-request may have been applied without
    /// the state learning of it, while one left to finish is tracked.
    async fn stoppable<T>(
        &self,
        diags: &mut Diagnostics,
        grace: Duration,
        work: impl Future<Output = (T, Diagnostics)>,
    ) -> Option<T> {
        let stopped = async {
            self.inner.stop.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            biased;
            () = stopped => {
                diags.error("Operation cancelled", "Terraform asked the provider to stop (StopProvider) before this operation finished.");
                None
            }
            (result, inner) = work => {
                diags.extend(inner);
                Some(result)
            }
        }
    }
}

/// What this server offers beyond the base protocol.
fn capabilities() -> pb::ServerCapabilities {
    pb::ServerCapabilities {
        plan_destroy: false,
        get_provider_schema_optional: true,
        move_resource_state: true,
        generate_resource_config: false,
    }
}

fn identity_schema_to_pb(schema: &IdentitySchema) -> pb::ResourceIdentitySchema {
    pb::ResourceIdentitySchema {
        version: schema.version,
        identity_attributes: schema
            .attributes
            .iter()
            .map(|a| pb::resource_identity_schema::IdentityAttribute {
                name: a.name.clone(),
                r#type: a.ty.to_json_bytes(),
                required_for_import: a.required_for_import,
                optional_for_import: !a.required_for_import,
                description: a.description.clone(),
            })
            .collect(),
    }
}

/// How long an apply in flight may go on after StopProvider (Ctrl-C) to finish its requests.
pub(crate) const APPLY_GRACE: Duration = Duration::from_secs(3);

/// The functions' definitions as GetProviderSchema and GetFunctions send them.
fn function_definitions(
    functions: &BTreeMap<String, (Arc<dyn Function>, FunctionDefinition)>,
) -> std::collections::HashMap<String, pb::Function> {
    functions
        .iter()
        .map(|(name, (_, d))| {
            let function = pb::Function {
                parameters: d
                    .parameters
                    .iter()
                    .map(|p| pb::function::Parameter {
                        name: p.name.to_string(),
                        r#type: p.ty.to_json_bytes(),
                        allow_null_value: p.allow_null,
                        allow_unknown_values: false,
                        description: p.description.clone(),
                        description_kind: pb::StringKind::Markdown as i32,
                    })
                    .collect(),
                variadic_parameter: None,
                r#return: Some(pb::function::Return {
                    r#type: d.return_type.to_json_bytes(),
                }),
                summary: d.summary.clone(),
                description: d.description.clone(),
                description_kind: pb::StringKind::Markdown as i32,
                deprecation_message: String::new(),
            };
            (name.clone(), function)
        })
        .collect()
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
            functions: function_definitions(&inner.functions),
            ephemeral_resource_schemas: Default::default(),
            diagnostics: Vec::new(),
            provider_meta: None,
            server_capabilities: Some(capabilities()),
            list_resource_schemas: inner
                .list_resources
                .iter()
                .map(|(k, e)| (k.clone(), schema_to_pb(&e.schema)))
                .collect(),
            action_schemas: inner
                .actions
                .iter()
                .map(|(k, e)| {
                    (
                        k.clone(),
                        pb::ActionSchema {
                            schema: Some(schema_to_pb(&e.schema)),
                        },
                    )
                })
                .collect(),
        })
    }

    async fn get_metadata(
        &self,
        _: Request<pb::get_metadata::Request>,
    ) -> Result<Response<pb::get_metadata::Response>, Status> {
        let inner = &self.inner;
        reply(pb::get_metadata::Response {
            server_capabilities: Some(capabilities()),
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
            functions: inner
                .functions
                .keys()
                .map(|name| pb::get_metadata::FunctionMetadata { name: name.clone() })
                .collect(),
            ephemeral_resources: Vec::new(),
            list_resources: inner
                .list_resources
                .keys()
                .map(|k| pb::get_metadata::ListResourceMetadata { type_name: k.clone() })
                .collect(),
            actions: inner
                .actions
                .keys()
                .map(|k| pb::get_metadata::ActionMetadata { type_name: k.clone() })
                .collect(),
        })
    }

    async fn move_resource_state(
        &self,
        request: Request<pb::move_resource_state::Request>,
    ) -> Result<Response<pb::move_resource_state::Response>, Status> {
        let request = request.into_inner();
        tracing::debug!(rpc = "MoveResourceState", from = %request.source_type_name, to = %request.target_type_name);
        let mut diags = Diagnostics::default();
        let mut response = pb::move_resource_state::Response::default();
        let Some(entry) = self.inner.resources.get(&request.target_type_name) else {
            diags.error(
                "Unknown resource type",
                format!("This provider has no resource type {:?}.", request.target_type_name),
            );
            response.diagnostics = diagnostics_to_pb(&diags);
            return reply(response);
        };
        let state_json = request
            .source_state
            .as_ref()
            .map(|s| s.json.as_slice())
            .unwrap_or_default();
        let source = MoveSource {
            provider: &request.source_provider_address,
            type_name: &request.source_type_name,
            schema_version: request.source_schema_version,
            state_json,
        };
        if let Some(value) = entry.imp.move_state(&source, &mut diags) {
            let value = entry.schema.block.conform(&value);
            response.target_identity = self.identity_of(&request.target_type_name, &value);
            response.target_state = Some(entry.encode(&value));
        }
        response.diagnostics = diagnostics_to_pb(&diags);
        reply(response)
    }

    async fn get_functions(
        &self,
        _: Request<pb::get_functions::Request>,
    ) -> Result<Response<pb::get_functions::Response>, Status> {
        reply(pb::get_functions::Response {
            functions: function_definitions(&self.inner.functions),
            diagnostics: Vec::new(),
        })
    }

    async fn call_function(
        &self,
        request: Request<pb::call_function::Request>,
    ) -> Result<Response<pb::call_function::Response>, Status> {
        let request = request.into_inner();
        tracing::debug!(rpc = "CallFunction", function = %request.name);
        let failed = |text: String, argument: Option<usize>| {
            reply(pb::call_function::Response {
                result: None,
                error: Some(pb::FunctionError {
                    text,
                    function_argument: argument.and_then(|a| i64::try_from(a).ok()),
                }),
            })
        };
        let Some((function, definition)) = self.inner.functions.get(&request.name) else {
            let known: Vec<&str> = self.inner.functions.keys().map(String::as_str).collect();
            return failed(
                format!(
                    "This provider has no function {:?}; it has: {}.",
                    request.name,
                    known.join(", ")
                ),
                None,
            );
        };
        if request.arguments.len() != definition.parameters.len() {
            return failed(
                format!(
                    "{} takes {} argument(s), and {} were given.",
                    definition.name,
                    definition.parameters.len(),
                    request.arguments.len()
                ),
                None,
            );
        }
        let mut arguments = Vec::with_capacity(request.arguments.len());
        for (index, (argument, parameter)) in request.arguments.iter().zip(&definition.parameters).enumerate() {
            let mut diags = Diagnostics::default();
            match decode_dynamic(Some(argument), &parameter.ty, parameter.name, &mut diags) {
                Some(value) if !diags.has_errors() => arguments.push(value),
                _ => {
                    let text = diags.iter().next().map_or_else(
                        || format!("The argument {} could not be read.", parameter.name),
                        |d| format!("{}: {}", d.summary, d.detail),
                    );
                    return failed(text, Some(index));
                }
            }
        }
        match function.call(&arguments) {
            Ok(value) => reply(pb::call_function::Response {
                result: Some(encode_dynamic(&value, &definition.return_type)),
                error: None,
            }),
            Err(error) => failed(error.text, error.argument),
        }
    }

    async fn get_resource_identity_schemas(
        &self,
        _: Request<pb::get_resource_identity_schemas::Request>,
    ) -> Result<Response<pb::get_resource_identity_schemas::Response>, Status> {
        tracing::debug!(rpc = "GetResourceIdentitySchemas");
        reply(pb::get_resource_identity_schemas::Response {
            identity_schemas: self
                .inner
                .identities
                .iter()
                .map(|(name, identity)| (name.clone(), identity_schema_to_pb(&identity.schema)))
                .collect(),
            diagnostics: Vec::new(),
        })
    }

    async fn upgrade_resource_identity(
        &self,
        request: Request<pb::upgrade_resource_identity::Request>,
    ) -> Result<Response<pb::upgrade_resource_identity::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "UpgradeResourceIdentity", type_name = %req.type_name, version = req.version);
        let mut diags = Diagnostics::default();
        let mut upgraded = None;
        match self.inner.identities.get(&req.type_name) {
            None => diags.error(
                "No identity",
                format!("{:?} has no resource identity in this provider.", req.type_name),
            ),
            Some(identity) if req.version != identity.schema.version => diags.error(
                "Unsupported identity version",
                format!(
                    "The identity of {} was stored with version {}; this provider knows version {}.",
                    req.type_name, req.version, identity.schema.version
                ),
            ),
            Some(identity) => {
                let json = req.raw_identity.map(|r| r.json).unwrap_or_default();
                match super::value::decode_json(&json, &identity.ty) {
                    Ok(value) => {
                        upgraded = Some(pb::ResourceIdentityData {
                            identity_data: Some(encode_dynamic(&value, &identity.ty)),
                        })
                    }
                    Err(e) => diags.error(
                        "Unreadable identity",
                        format!(
                            "The stored identity of {} does not match its schema: {e}.",
                            req.type_name
                        ),
                    ),
                }
            }
        }
        reply(pb::upgrade_resource_identity::Response {
            upgraded_identity: upgraded,
            diagnostics: diagnostics_to_pb(&diags),
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
            if let Some(data) = self
                .inner
                .provider
                .configure(&config, &req.terraform_version, &mut diags)
                .await
            {
                *self.inner.data.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(data));
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
        let inputs = [("configuration", req.config.as_ref())];
        if let Some(call) = self.prepare(
            &self.inner.resources,
            "resource type",
            &req.type_name,
            inputs,
            false,
            &mut diags,
        ) {
            let [config] = &call.values;
            call.entry.imp.validate(config, &mut diags);
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
        let inputs = [("configuration", req.config.as_ref())];
        if let Some(call) = self.prepare(
            &self.inner.data_sources,
            "data source",
            &req.type_name,
            inputs,
            false,
            &mut diags,
        ) {
            let [config] = &call.values;
            call.entry.imp.validate(config, &mut diags);
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
        if let Some(call) = self.prepare(
            &self.inner.resources,
            "resource type",
            &req.type_name,
            [],
            false,
            &mut diags,
        ) {
            let entry = call.entry;
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
            upgraded = state.map(|s| entry.encode(&s));
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
        let mut new_identity = None;
        let inputs = [("current state", req.current_state.as_ref())];
        if let Some(Call {
            entry,
            values: [current],
            ctx: Some(ctx),
        }) = self.prepare(
            &self.inner.resources,
            "resource type",
            &req.type_name,
            inputs,
            true,
            &mut diags,
        ) {
            let read = self
                .cancellable(&mut diags, async {
                    let mut d = Diagnostics::default();
                    let r = entry.imp.read(&ctx, &current, &mut d).await;
                    (r, d)
                })
                .await;
            let state = match read {
                Some(Some(state)) => {
                    let mut state = entry.schema.block.conform(&state);
                    keep_equivalent(&entry.schema.block, &mut state, &current, Equivalence::Read);
                    state
                }
                // The object is gone: a null state makes Terraform drop it and plan a create.
                Some(None) if !diags.has_errors() => Value::Null,
                // On errors keep what Terraform had.
                _ => current,
            };
            new_identity = self.identity_of(&req.type_name, &state).or(req.current_identity);
            new_state = Some(entry.encode(&state));
        }
        reply(pb::read_resource::Response {
            new_state,
            diagnostics: diagnostics_to_pb(&diags),
            private: req.private,
            deferred: None,
            new_identity,
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
        let mut planned_identity = None;
        let mut requires_replace = Vec::new();
        let inputs = [
            ("prior state", req.prior_state.as_ref()),
            ("proposed state", req.proposed_new_state.as_ref()),
            ("configuration", req.config.as_ref()),
        ];
        if let Some(Call {
            entry,
            values: [prior, proposed, config],
            ..
        }) = self.prepare(
            &self.inner.resources,
            "resource type",
            &req.type_name,
            inputs,
            false,
            &mut diags,
        ) {
            let block = &entry.schema.block;
            if proposed.is_null() {
                // Destroy: planned null, and no provider configuration needed.
                planned_state = Some(entry.encode(&Value::Null));
                planned_identity = req.prior_identity.clone();
            } else if let Some(ctx) = self.context(&mut diags) {
                let lookup = |key: &str| P::attribute_default(&ctx.data, key);
                let mut planned = initial_plan(block, &prior, &proposed, &config, &lookup, &mut diags);
                let before = planned.clone();
                let modified = self
                    .cancellable(&mut diags, async {
                        let mut d = Diagnostics::default();
                        let req = PlanRequest {
                            prior: &prior,
                            config: &config,
                        };
                        entry.imp.modify_plan(&ctx, req, &mut planned, &mut d).await;
                        (planned, d)
                    })
                    .await;
                if let Some(mut planned) = modified {
                    finish_plan(block, &mut planned, &prior, &before);
                    requires_replace = replace_paths(block, &prior, &planned).iter().map(path_to_pb).collect();
                    planned_identity = self.identity_of(&req.type_name, &planned);
                    planned_state = Some(entry.encode(&planned));
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
            planned_identity,
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
        let mut new_identity = None;
        let inputs = [
            ("prior state", req.prior_state.as_ref()),
            ("planned state", req.planned_state.as_ref()),
        ];
        if let Some(Call {
            entry,
            values: [prior, planned],
            ctx: Some(ctx),
        }) = self.prepare(
            &self.inner.resources,
            "resource type",
            &req.type_name,
            inputs,
            true,
            &mut diags,
        ) {
            if planned.is_null() {
                self.stoppable(&mut diags, APPLY_GRACE, async {
                    let mut d = Diagnostics::default();
                    entry.imp.delete(&ctx, &prior, &mut d).await;
                    ((), d)
                })
                .await;
                // A failed delete keeps the object in state.
                let after = if diags.has_errors() { &prior } else { &Value::Null };
                new_identity = self.identity_of(&req.type_name, after);
                new_state = Some(entry.encode(after));
            } else {
                let result = self
                    .stoppable(&mut diags, APPLY_GRACE, async {
                        let mut d = Diagnostics::default();
                        let r = if prior.is_null() {
                            entry.imp.create(&ctx, &planned, &mut d).await
                        } else {
                            entry.imp.update(&ctx, &prior, &planned, &mut d).await
                        };
                        (r, d)
                    })
                    .await
                    .flatten();
                new_state = match result {
                    Some(state) => {
                        let state = entry.schema.block.conform(&state);
                        if !state.is_wholly_known() {
                            diags.error(
                                "Provider bug",
                                format!("{} returned a state with unknown values after apply.", req.type_name),
                            );
                        }
                        new_identity = self.identity_of(&req.type_name, &state);
                        Some(entry.encode(&state))
                    }
                    // Failed create: nothing to track. Failed update: Terraform keeps the prior state.
                    None if prior.is_null() => Some(entry.encode(&Value::Null)),
                    None => None,
                };
            }
        }
        reply(pb::apply_resource_change::Response {
            new_state,
            private: req.planned_private,
            diagnostics: diagnostics_to_pb(&diags),
            legacy_type_system: false,
            new_identity,
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
        if let Some(Call {
            entry, ctx: Some(ctx), ..
        }) = self.prepare(
            &self.inner.resources,
            "resource type",
            &req.type_name,
            [],
            true,
            &mut diags,
        ) {
            let state = self
                .cancellable(&mut diags, async {
                    let mut d = Diagnostics::default();
                    // `import { identity = {...} }` sends the identity instead of an ID.
                    let id = match (&req.identity, req.id.is_empty()) {
                        (Some(identity), true) => match self.import_id(&req.type_name, entry, &ctx, identity) {
                            Ok(id) => id,
                            Err(e) => {
                                d.add(e);
                                return (None, d);
                            }
                        },
                        _ => req.id.clone(),
                    };
                    let r = entry.imp.import(&ctx, &id, &mut d).await;
                    (r, d)
                })
                .await
                .flatten();
            if let Some(state) = state.filter(|_| !diags.has_errors()) {
                let state = entry.schema.block.conform(&state);
                imported.push(pb::import_resource_state::ImportedResource {
                    type_name: req.type_name.clone(),
                    identity: self.identity_of(&req.type_name, &state),
                    state: Some(entry.encode(&state)),
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
        let inputs = [("configuration", req.config.as_ref())];
        if let Some(Call {
            entry,
            values: [config],
            ctx: Some(ctx),
        }) = self.prepare(
            &self.inner.data_sources,
            "data source",
            &req.type_name,
            inputs,
            true,
            &mut diags,
        ) {
            let read = self
                .cancellable(&mut diags, async {
                    let mut d = Diagnostics::default();
                    let r = entry.imp.read(&ctx, &config, &mut d).await;
                    (r, d)
                })
                .await
                .flatten();
            state = read.map(|s| entry.encode(&s));
        }
        reply(pb::read_data_source::Response {
            state,
            diagnostics: diagnostics_to_pb(&diags),
            deferred: None,
        })
    }

    async fn validate_list_resource_config(
        &self,
        request: Request<pb::validate_list_resource_config::Request>,
    ) -> Result<Response<pb::validate_list_resource_config::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "ValidateListResourceConfig", type_name = %req.type_name);
        let mut diags = Diagnostics::default();
        let inputs = [("list configuration", req.config.as_ref())];
        if let Some(call) = self.prepare(
            &self.inner.list_resources,
            "list resource",
            &req.type_name,
            inputs,
            false,
            &mut diags,
        ) {
            let [config] = &call.values;
            call.entry.imp.validate(config, &mut diags);
        }
        reply(pb::validate_list_resource_config::Response {
            diagnostics: diagnostics_to_pb(&diags),
        })
    }

    async fn list_resource(
        &self,
        request: Request<pb::list_resource::Request>,
    ) -> Result<Response<tonic::codegen::BoxStream<pb::list_resource::Event>>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "ListResource", type_name = %req.type_name, limit = req.limit);
        let mut diags = Diagnostics::default();
        let mut events = Vec::new();
        let inputs = [("list configuration", req.config.as_ref())];
        if let Some(Call {
            entry,
            values: [config],
            ctx: Some(ctx),
        }) = self.prepare(
            &self.inner.list_resources,
            "list resource",
            &req.type_name,
            inputs,
            true,
            &mut diags,
        ) {
            let limit = usize::try_from(req.limit).ok().filter(|l| *l > 0).unwrap_or(usize::MAX);
            let results = self
                .cancellable(&mut diags, async {
                    let mut d = Diagnostics::default();
                    let r = entry.imp.list(&ctx, &config, limit, &mut d).await;
                    (r, d)
                })
                .await
                .unwrap_or_default();
            let resource = self.inner.resources.get(&req.type_name);
            let identity = self.inner.identities.get(&req.type_name);
            if let (Some(resource), Some(identity)) = (resource, identity) {
                for result in results {
                    events.push(Ok(pb::list_resource::Event {
                        identity: Some(pb::ResourceIdentityData {
                            identity_data: Some(encode_dynamic(&result.identity, &identity.ty)),
                        }),
                        display_name: result.display_name,
                        resource_object: req.include_resource_object.then(|| resource.encode(&result.object)),
                        diagnostic: Vec::new(),
                    }));
                }
            } else {
                diags.error(
                    "Provider bug",
                    format!(
                        "List resource {} has no managed resource with an identity.",
                        req.type_name
                    ),
                );
            }
        }
        if !diags.0.is_empty() {
            events.push(Ok(pb::list_resource::Event {
                identity: None,
                display_name: String::new(),
                resource_object: None,
                diagnostic: diagnostics_to_pb(&diags),
            }));
        }
        Ok(Response::new(Box::pin(tokio_stream::iter(events))))
    }

    async fn validate_action_config(
        &self,
        request: Request<pb::validate_action_config::Request>,
    ) -> Result<Response<pb::validate_action_config::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "ValidateActionConfig", type_name = %req.type_name);
        let mut diags = Diagnostics::default();
        let inputs = [("action configuration", req.config.as_ref())];
        if let Some(call) = self.prepare(&self.inner.actions, "action", &req.type_name, inputs, false, &mut diags) {
            let [config] = &call.values;
            call.entry.imp.validate(config, &mut diags);
        }
        reply(pb::validate_action_config::Response {
            diagnostics: diagnostics_to_pb(&diags),
        })
    }

    async fn plan_action(
        &self,
        request: Request<pb::plan_action::Request>,
    ) -> Result<Response<pb::plan_action::Response>, Status> {
        let req = request.into_inner();
        tracing::debug!(rpc = "PlanAction", type_name = %req.action_type);
        let mut diags = Diagnostics::default();
        let inputs = [("action configuration", req.config.as_ref())];
        if let Some(Call {
            entry,
            values: [config],
            ctx: Some(ctx),
        }) = self.prepare(
            &self.inner.actions,
            "action",
            &req.action_type,
            inputs,
            true,
            &mut diags,
        ) {
            entry.imp.validate(&config, &mut diags);
            if !diags.has_errors() && config.is_wholly_known() {
                self.cancellable(&mut diags, async {
                    let mut d = Diagnostics::default();
                    entry.imp.plan(&ctx, &config, &mut d).await;
                    ((), d)
                })
                .await;
            }
        }
        reply(pb::plan_action::Response {
            diagnostics: diagnostics_to_pb(&diags),
            deferred: None,
        })
    }

    async fn invoke_action(
        &self,
        request: Request<pb::invoke_action::Request>,
    ) -> Result<Response<tonic::codegen::BoxStream<pb::invoke_action::Event>>, Status> {
        use pb::invoke_action::event::{Completed, Progress as ProgressEvent, Type as EventType};
        let req = request.into_inner();
        tracing::debug!(rpc = "InvokeAction", type_name = %req.action_type);
        let (events, stream) = tokio::sync::mpsc::unbounded_channel();
        let completed = |diags: &Diagnostics| {
            Ok(pb::invoke_action::Event {
                r#type: Some(EventType::Completed(Completed {
                    diagnostics: diagnostics_to_pb(diags),
                })),
            })
        };
        let mut diags = Diagnostics::default();
        let inputs = [("action configuration", req.config.as_ref())];
        let prepared = self
            .prepare(
                &self.inner.actions,
                "action",
                &req.action_type,
                inputs,
                true,
                &mut diags,
            )
            .and_then(
                |Call {
                     entry,
                     values: [config],
                     ctx,
                 }| Some((entry.imp.clone(), config, ctx?)),
            );
        let Some((action, config, ctx)) = prepared else {
            let _ = events.send(completed(&diags));
            return Ok(Response::new(Box::pin(
                tokio_stream::wrappers::UnboundedReceiverStream::new(stream),
            )));
        };
        let service = self.clone();
        tokio::spawn(async move {
            let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
            let forward = events.clone();
            let forwarder = tokio::spawn(async move {
                while let Some(message) = progress_rx.recv().await {
                    let _ = forward.send(Ok(pb::invoke_action::Event {
                        r#type: Some(EventType::Progress(ProgressEvent { message })),
                    }));
                }
            });
            let mut diags = Diagnostics::default();
            let run = service.stoppable(&mut diags, APPLY_GRACE, async {
                let progress = Progress::new(progress_tx);
                let mut d = Diagnostics::default();
                action.invoke(&ctx, &config, &progress, &mut d).await;
                ((), d)
            });
            // A panic in the action is its completion with an error, as in every other RPC.
            let panicked = std::panic::AssertUnwindSafe(run).catch_unwind().await.err();
            let _ = forwarder.await;
            let _ = events.send(match panicked {
                None => completed(&diags),
                Some(payload) => {
                    let mut all = diagnostics_to_pb(&diags);
                    all.push(panic_diagnostic("invoke_action", payload.as_ref()));
                    Ok(action_completed(all))
                }
            });
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::UnboundedReceiverStream::new(stream),
        )))
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
