//! AWS errors as one readable sentence, for `locality resolve` and the provider alike: what was
//! being done, then the cause — the service's error code and message, or the chain of causes
//! of a failure before an answer (no credentials found, and where they were looked for; no
//! region; a connection refused). Never the SDK's debug form: no raw response, body or header
//! reaches a user (a Secrets Manager body holds secrets).

use std::error::Error;

use aws_sdk_ssm::error::{ProvideErrorMetadata, SdkError};

/// Where the default credential chain looks, in its order (what "tried" means in a message).
pub const CREDENTIAL_SOURCES: &str = "the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), \
the profile of the shared files (AWS_PROFILE, else \"default\", in ~/.aws/credentials and ~/.aws/config, \
or AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE), web identity (AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN), \
ECS container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI) and the EC2 instance profile (IMDS)";

/// The sentence for a missing region.
pub const NO_REGION: &str = "no AWS region is set: set AWS_REGION (or AWS_DEFAULT_REGION, or `region` in the \
profile of ~/.aws/config); on EC2 and ECS the region also comes from the instance metadata";

/// `{what}: {cause}` for an SDK error.
pub fn describe<E, R>(what: &str, error: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + Error + 'static,
    R: std::fmt::Debug + 'static,
{
    format!("{what}: {}", cause(error))
}

/// The cause of an SDK error, without the raw response.
pub fn cause<E, R>(error: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + Error + 'static,
    R: std::fmt::Debug + 'static,
{
    match error {
        SdkError::ServiceError(service) => {
            let err = service.err();
            match (err.code(), err.message()) {
                (Some(code), Some(message)) => format!("{code}: {message}"),
                (Some(code), None) => code.to_string(),
                (None, Some(message)) => message.to_string(),
                (None, None) => "the service refused the request without an error code".to_string(),
            }
        }
        // (A timeout's chain says which limit: "request has timed out: … after 3s".)
        other => chain(other),
    }
}

/// The chain of causes of `error`, joined with `: ` (credential errors said in full).
pub fn chain(error: &(dyn Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(e) = next {
        if let Some(credentials) = e.downcast_ref::<aws_credential_types::provider::error::CredentialsError>() {
            parts.push(credentials_problem(credentials));
            break;
        }
        let text = e.to_string();
        // SDK layers repeat their cause in their own text, or say only "other": keep one.
        if !text.is_empty() && text != "other" && !parts.last().is_some_and(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    if parts.is_empty() {
        "an error without a description".to_string()
    } else {
        parts.join(": ")
    }
}

fn credentials_problem(error: &aws_credential_types::provider::error::CredentialsError) -> String {
    use aws_credential_types::provider::error::CredentialsError as C;
    match error {
        C::CredentialsNotLoaded(_) => format!("no AWS credentials were found; tried, in order: {CREDENTIAL_SOURCES}"),
        C::ProviderTimedOut(_) => "the AWS credentials did not arrive in time".to_string(),
        other => {
            let mut text = format!("the AWS credentials could not be loaded: {other}");
            if let Some(source) = other.source() {
                text.push_str(": ");
                text.push_str(&chain(source));
            }
            text
        }
    }
}
