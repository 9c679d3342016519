//! A bound on the body of an AWS answer. The SDK reads a whole answer into memory, then parses
//! it, and only then can the caller check what it holds: one page of 1.5 M S3 keys reached
//! 3.38 GB before a key or token limit was looked at. [`BodyLimit`], an SDK interceptor, refuses
//! an answer whose `Content-Length` says it is larger than the bound, and cuts a body that grows
//! past it while it is read (chunked, or a length that lied): the call fails with a sentence
//! that names the bound, and the memory spent is the bound.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::BeforeDeserializationInterceptorContextMut;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::config_bag::ConfigBag;

/// An interceptor that bounds every answer's body of the client it is given to
/// (`config::Builder::interceptor`).
#[derive(Debug, Clone)]
pub struct BodyLimit {
    max_bytes: usize,
    what: &'static str,
    only: Option<&'static str>,
}

impl BodyLimit {
    /// At most `max_bytes` of body for each answer of `what` (an operation or a service, for
    /// the sentence: "an S3 listing page").
    #[must_use]
    pub fn new(what: &'static str, max_bytes: usize) -> BodyLimit {
        BodyLimit {
            max_bytes,
            what,
            only: None,
        }
    }

    /// The bound for answers of the operation named `operation` only (`ListObjectsV2`): the
    /// client's other answers (an object's body, streamed) pass as they are.
    #[must_use]
    pub fn only(mut self, operation: &'static str) -> BodyLimit {
        self.only = Some(operation);
        self
    }

    fn refusal(&self) -> String {
        format!(
            "{} larger than {} bytes: refused before reading it whole (an endpoint that is not AWS, or broken)",
            self.what, self.max_bytes
        )
    }
}

/// The error a cut body ends with.
#[derive(Debug)]
struct TooLarge(String);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TooLarge {}

impl Intercept for BodyLimit {
    fn name(&self) -> &'static str {
        "BodyLimit"
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(only) = self.only {
            let operation = cfg.load::<aws_smithy_runtime_api::client::orchestrator::Metadata>();
            if operation.is_none_or(|m| m.name() != only) {
                return Ok(());
            }
        }
        let response = context.response_mut();
        let declared = response
            .headers()
            .get("content-length")
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|length| length > self.max_bytes as u64) {
            return Err(Box::new(TooLarge(self.refusal())));
        }
        let body = std::mem::replace(response.body_mut(), SdkBody::taken());
        let refusal = self.refusal();
        let limited = http_body_util::BodyExt::map_err(http_body_util::Limited::new(body, self.max_bytes), move |e| {
            if e.is::<http_body_util::LengthLimitError>() {
                Box::new(TooLarge(refusal.clone())) as BoxError
            } else {
                e
            }
        });
        *response.body_mut() = SdkBody::from_body_1_x(limited);
        Ok(())
    }
}
