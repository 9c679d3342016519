//! Actions (protocol 6.10, Terraform 1.14+): operations a person or a lifecycle trigger invokes
//! (`terraform apply -invoke=action.TYPE.NAME`), outside the resource lifecycle. They are
//! validated and planned like a configuration, then invoked with a stream of progress messages;
//! StopProvider (Ctrl-C) cancels them through [`Context::stop`].

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::mpsc;

use super::diagnostics::Diagnostics;
use super::model::Model;
use super::schema::Schema;
use super::traits::{present, Context, Typed};
use super::value::Value;

/// Where an action reports progress; each message is shown as it comes.
pub struct Progress {
    tx: mpsc::UnboundedSender<String>,
}

impl Progress {
    /// A reporter sending to `tx`.
    pub(crate) fn new(tx: mpsc::UnboundedSender<String>) -> Self {
        Progress { tx }
    }

    /// Reports one step.
    pub fn report(&self, message: impl Into<String>) {
        let _ = self.tx.send(message.into());
    }
}

/// An action type, working on its model.
#[async_trait]
pub trait Action<D>: Send + Sync + 'static {
    /// The model of the action's `config` block.
    type Model: Model;

    /// The full type name, e.g. `locality_shift_weights`.
    fn type_name(&self) -> &'static str;

    /// The schema of the `config` block.
    fn schema(&self) -> Schema;

    /// Offline checks (values may be unknown: skip them).
    fn validate(&self, _config: &Self::Model, _diags: &mut Diagnostics) {}

    /// Checks before anything runs, with the provider configured (e.g. that the target exists).
    async fn plan(&self, _ctx: &Context<D>, _config: &Self::Model, _diags: &mut Diagnostics) {}

    /// Runs the action, reporting progress; should stop early once `ctx.stop` is cancelled.
    async fn invoke(&self, ctx: &Context<D>, config: Self::Model, progress: &Progress, diags: &mut Diagnostics);
}

/// An action over dynamic values (what the service dispatches to).
#[async_trait]
pub trait DynamicAction<D>: Send + Sync + 'static {
    /// The full type name.
    fn type_name(&self) -> &'static str;
    /// The schema of the `config` block.
    fn schema(&self) -> Schema;
    /// Offline checks.
    fn validate(&self, _config: &Value, _diags: &mut Diagnostics) {}
    /// Checks before anything runs.
    async fn plan(&self, ctx: &Context<D>, config: &Value, diags: &mut Diagnostics);
    /// Runs the action.
    async fn invoke(&self, ctx: &Context<D>, config: &Value, progress: &Progress, diags: &mut Diagnostics);
}

/// A typed action as the service sees it.
pub fn action<D: Send + Sync + 'static, A: Action<D>>(action: A) -> Arc<dyn DynamicAction<D>> {
    Arc::new(Typed(action))
}

#[async_trait]
impl<D: Send + Sync + 'static, A: Action<D>> DynamicAction<D> for Typed<A> {
    fn type_name(&self) -> &'static str {
        self.0.type_name()
    }

    fn schema(&self) -> Schema {
        self.0.schema()
    }

    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        if let Some(config) = present::<A::Model>(config, diags) {
            self.0.validate(&config, diags);
        }
    }

    async fn plan(&self, ctx: &Context<D>, config: &Value, diags: &mut Diagnostics) {
        if let Some(config) = present::<A::Model>(config, diags) {
            self.0.plan(ctx, &config, diags).await;
        }
    }

    async fn invoke(&self, ctx: &Context<D>, config: &Value, progress: &Progress, diags: &mut Diagnostics) {
        if let Some(config) = present::<A::Model>(config, diags) {
            self.0.invoke(ctx, config, progress, diags).await;
        }
    }
}
