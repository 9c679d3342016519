//! No panic reaches Terraform as a cancelled request: [`PanicGuard`] wraps the gRPC service and
//! turns a panic inside any RPC into an error diagnostic on that RPC's response ("internal error
//! in the provider: …"), with the panic message in the provider log. The process keeps serving
//! the RPCs after it (tokio keeps the connection; locks are taken poison-tolerant).

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use tonic::{Request, Response, Status};

use super::proto::tfplugin6 as pb;
use pb::provider_server::Provider as Rpc;

/// A `tfplugin6.Provider` service whose every RPC answers a panic with a diagnostic.
pub(crate) struct PanicGuard<S>(pub(crate) S);

/// The text of a panic payload (`panic!("…")` gives a `&str` or a `String`).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// The diagnostic a panic in `rpc` becomes; the message also goes to the provider log.
pub(crate) fn panic_diagnostic(rpc: &str, payload: &(dyn Any + Send)) -> pb::Diagnostic {
    let message = panic_message(payload);
    tracing::error!(rpc, panic = %message, "internal error in the provider (panic)");
    pb::Diagnostic {
        severity: pb::diagnostic::Severity::Error as i32,
        summary: "Internal error in the provider".to_string(),
        detail: format!(
            "internal error in the provider during {rpc}: {message}; please report it with TF_LOG=debug output. \
             The provider is still running: nothing else was affected."
        ),
        attribute: None,
    }
}

/// Runs one RPC's future; a panic becomes `on_panic(diagnostic)`.
async fn guarded<T>(
    rpc: &'static str,
    call: impl std::future::Future<Output = Result<Response<T>, Status>>,
    on_panic: impl FnOnce(pb::Diagnostic) -> T,
) -> Result<Response<T>, Status> {
    match AssertUnwindSafe(call).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => Ok(Response::new(on_panic(panic_diagnostic(rpc, payload.as_ref())))),
    }
}

/// The impl: one delegating method per RPC whose response carries `diagnostics`, plus the
/// methods written out after them. (Generated as a whole so that `async_trait` sees the
/// expanded methods.)
macro_rules! guarded_service {
    ([$($method:ident;)*] $($rest:tt)*) => {
        // (`..Default::default()` fills the fields beside `diagnostics` where a response has any.)
        #[allow(clippy::needless_update)]
        #[tonic::async_trait]
        impl<S: Rpc> Rpc for PanicGuard<S> {
            $(
                async fn $method(
                    &self,
                    request: Request<pb::$method::Request>,
                ) -> Result<Response<pb::$method::Response>, Status> {
                    guarded(stringify!($method), self.0.$method(request), |d| pb::$method::Response {
                        diagnostics: vec![d],
                        ..Default::default()
                    })
                    .await
                }
            )*
            $($rest)*
        }
    };
}

guarded_service! {
    [
        get_metadata;
        get_provider_schema;
        validate_provider_config;
        validate_resource_config;
        validate_data_resource_config;
        upgrade_resource_state;
        get_resource_identity_schemas;
        upgrade_resource_identity;
        configure_provider;
        read_resource;
        plan_resource_change;
        apply_resource_change;
        import_resource_state;
        move_resource_state;
        read_data_source;
        generate_resource_config;
        validate_ephemeral_resource_config;
        open_ephemeral_resource;
        renew_ephemeral_resource;
        close_ephemeral_resource;
        get_functions;
        validate_list_resource_config;
        plan_action;
        validate_action_config;
    ]

    async fn call_function(
        &self,
        request: Request<pb::call_function::Request>,
    ) -> Result<Response<pb::call_function::Response>, Status> {
        guarded("call_function", self.0.call_function(request), |d| pb::call_function::Response {
            result: None,
            error: Some(pb::FunctionError {
                text: d.detail,
                function_argument: None,
            }),
        })
        .await
    }

    async fn list_resource(
        &self,
        request: Request<pb::list_resource::Request>,
    ) -> Result<Response<tonic::codegen::BoxStream<pb::list_resource::Event>>, Status> {
        guarded("list_resource", self.0.list_resource(request), |d| {
            let event = pb::list_resource::Event {
                diagnostic: vec![d],
                ..Default::default()
            };
            Box::pin(tokio_stream::iter([Ok(event)])) as tonic::codegen::BoxStream<_>
        })
        .await
    }

    async fn invoke_action(
        &self,
        request: Request<pb::invoke_action::Request>,
    ) -> Result<Response<tonic::codegen::BoxStream<pb::invoke_action::Event>>, Status> {
        // (The action itself runs in a task of its own, which catches its panics the same way:
        // see the service's invoke_action.)
        guarded("invoke_action", self.0.invoke_action(request), |d| {
            Box::pin(tokio_stream::iter([Ok(action_completed(vec![d]))])) as tonic::codegen::BoxStream<_>
        })
        .await
    }

    async fn stop_provider(
        &self,
        request: Request<pb::stop_provider::Request>,
    ) -> Result<Response<pb::stop_provider::Response>, Status> {
        guarded("stop_provider", self.0.stop_provider(request), |d| pb::stop_provider::Response {
            error: d.detail,
        })
        .await
    }
}

/// The last event of an action: completed, with its diagnostics.
pub(crate) fn action_completed(diagnostics: Vec<pb::Diagnostic>) -> pb::invoke_action::Event {
    pb::invoke_action::Event {
        r#type: Some(pb::invoke_action::event::Type::Completed(
            pb::invoke_action::event::Completed { diagnostics },
        )),
    }
}
