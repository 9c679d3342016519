//! Logging to stderr in hclog's JSON form, which Terraform re-logs at the right level.
//!
//! The level comes from `TF_LOG_PROVIDER`, else `TF_LOG` (`TRACE`, `DEBUG`, `INFO`, `WARN`,
//! `ERROR`, `OFF`; `JSON` means `TRACE`). Nothing is written unless one of them is set.
//! Callers never log attribute values: credentials and state stay out of logs.

use std::fmt::Write as _;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Installs the stderr logger for a binary; `module` becomes hclog's `@module`.
pub fn init(module: &'static str) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let Some(level) = level_from_env() else { return };
    // Our own events at the requested level; the HTTP/2 and gRPC machinery only when it warns
    // (at trace it logs every frame, drowning what a user is looking for).
    let filter = tracing_subscriber::filter::Targets::new()
        .with_default(level.min(Level::WARN))
        .with_target("locality", level)
        .with_target("terraform_provider_locality", level);
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .event_format(HclogJson { module });
    let _ = tracing_subscriber::registry().with(layer).with(filter).try_init();
}

fn level_from_env() -> Option<Level> {
    let raw = std::env::var("TF_LOG_PROVIDER")
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| std::env::var("TF_LOG").ok())?;
    match raw.trim().to_ascii_uppercase().as_str() {
        "TRACE" | "JSON" => Some(Level::TRACE),
        "DEBUG" => Some(Level::DEBUG),
        "INFO" => Some(Level::INFO),
        "WARN" => Some(Level::WARN),
        "ERROR" => Some(Level::ERROR),
        _ => None,
    }
}

struct HclogJson {
    module: &'static str,
}

struct Fields(serde_json::Map<String, serde_json::Value>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let key = if field.name() == "message" {
            "@message"
        } else {
            field.name()
        };
        self.0
            .insert(key.to_string(), serde_json::Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let key = if field.name() == "message" {
            "@message"
        } else {
            field.name()
        };
        self.0
            .insert(key.to_string(), serde_json::Value::String(value.to_string()));
    }
}

impl<S, N> FormatEvent<S, N> for HclogJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> std::fmt::Result {
        let mut fields = Fields(serde_json::Map::new());
        event.record(&mut fields);
        let mut map = fields.0;
        let level = match *event.metadata().level() {
            Level::TRACE => "trace",
            Level::DEBUG => "debug",
            Level::INFO => "info",
            Level::WARN => "warn",
            Level::ERROR => "error",
        };
        map.entry("@message")
            .or_insert_with(|| serde_json::Value::String(String::new()));
        map.insert("@level".into(), level.into());
        map.insert("@module".into(), self.module.into());
        // hclog's "2006-01-02T15:04:05.000000Z07:00".
        let now = humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string();
        map.insert("@timestamp".into(), now.into());
        let mut line = serde_json::to_string(&map).map_err(|_| std::fmt::Error)?;
        line.push('\n');
        writer.write_str(&line)
    }
}

/// Writes a message for a person (used before logging is set up); never to stdout.
pub fn eprint_plain(message: &str) {
    let mut text = String::new();
    let _ = writeln!(text, "{message}");
    use std::io::Write as _;
    let _ = std::io::stderr().write_all(text.as_bytes());
}
