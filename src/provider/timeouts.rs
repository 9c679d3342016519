//! The `timeouts` block of the resources that wait (URL-map operations, batched hint writes,
//! AWS writes), as the official providers have it: `create`, `update` and `delete`, each a
//! duration such as `"30s"`, `"10m"` or `"1h30m"`, bounding the whole operation (its requests,
//! retries, backoff and waits).
//!
//! A timed-out operation is reported as an error naming the setting to raise; what it sent
//! may still take effect, exactly as after a lost response, and the next plan reads the live
//! state and shows what remains (each resource already converges from a lost response).

use std::future::Future;
use std::time::Duration;

use crate::tfplugin::{Attribute, AttributePath, Block, Diagnostic, Diagnostics, Field, NestedBlock, Nesting};

crate::model! {
    /// The `timeouts` block of a resource whose create, update and delete all wait.
    pub struct TimeoutsModel {
        /// How long a create may take.
        pub create: Field<String>,
        /// How long an update may take.
        pub update: Field<String>,
        /// How long a delete may take.
        pub delete: Field<String>,
    }
}

crate::model! {
    /// The `timeouts` block of a data source whose read waits (many pages of an API).
    pub struct ReadTimeoutsModel {
        /// How long a read may take.
        pub read: Field<String>,
    }
}

crate::model! {
    /// The `timeouts` block of a resource whose delete calls no API (only create and update wait).
    pub struct WriteTimeoutsModel {
        /// How long a create may take.
        pub create: Field<String>,
        /// How long an update may take.
        pub update: Field<String>,
    }
}

/// A `timeouts` block's settings, by operation.
pub trait Settings {
    /// What the block sets for `op` (`None` when it is not set or the block has no such setting).
    fn setting(&self, op: Operation) -> Option<&Field<String>>;
}

impl Settings for TimeoutsModel {
    fn setting(&self, op: Operation) -> Option<&Field<String>> {
        match op {
            Operation::Create => Some(&self.create),
            Operation::Update => Some(&self.update),
            Operation::Delete => Some(&self.delete),
            Operation::Read => None,
        }
    }
}

impl Settings for ReadTimeoutsModel {
    fn setting(&self, op: Operation) -> Option<&Field<String>> {
        match op {
            Operation::Read => Some(&self.read),
            _ => None,
        }
    }
}

impl Settings for WriteTimeoutsModel {
    fn setting(&self, op: Operation) -> Option<&Field<String>> {
        match op {
            Operation::Create => Some(&self.create),
            Operation::Update => Some(&self.update),
            Operation::Delete | Operation::Read => None,
        }
    }
}

/// A resource's operations, in the block's order.
pub const ALL: [Operation; 3] = [Operation::Create, Operation::Update, Operation::Delete];
/// Every operation a `timeouts` block can set (a data source's `read` too).
const EVERY: [Operation; 4] = [Operation::Create, Operation::Update, Operation::Delete, Operation::Read];

/// The operation a timeout bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Create.
    Create,
    /// Update.
    Update,
    /// Delete.
    Delete,
    /// A data source's read.
    Read,
}

impl Operation {
    /// The attribute's name in the block.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::Update => "update",
            Operation::Delete => "delete",
            Operation::Read => "read",
        }
    }
}

/// A resource's default timeouts.
#[derive(Debug, Clone, Copy)]
pub struct Defaults {
    /// Create.
    pub create: Duration,
    /// Update.
    pub update: Duration,
    /// Delete.
    pub delete: Duration,
    /// A data source's read.
    pub read: Duration,
}

impl Defaults {
    /// The same default for every operation.
    pub const fn all(d: Duration) -> Self {
        Defaults {
            create: d,
            update: d,
            delete: d,
            read: d,
        }
    }

    fn of(&self, op: Operation) -> Duration {
        match op {
            Operation::Create => self.create,
            Operation::Update => self.update,
            Operation::Delete => self.delete,
            Operation::Read => self.read,
        }
    }
}

/// The longest timeout accepted (a typo such as `"100000h"` is refused, not waited for).
pub const MAX: Duration = Duration::from_secs(24 * 3600);

/// The `timeouts` block for a schema, with a setting for each of `ops`; `what` says what the
/// resource waits for.
pub fn block(ops: &[Operation], defaults: Defaults, what: &str) -> NestedBlock {
    let attribute = |op: Operation| {
        Attribute::string(op.name()).optional().description(&format!(
            "How long one {} may take, as a duration such as `\"30s\"`, `\"10m\"` or `\"1h30m\"` (at most 24h). \
             Default `{}`.",
            op.name(),
            shown(defaults.of(op))
        ))
    };
    let mut block = Block::new(&format!(
        "How long each operation may take, as the official providers' `timeouts` blocks: the whole operation \
             ({what}), its retries and waits included. An operation that runs out of time is an error naming \
             the setting; what it sent may still take effect, and the next plan reads the live state and shows \
             what remains."
    ));
    for op in ops {
        block = block.attribute(attribute(*op));
    }
    NestedBlock::new("timeouts", Nesting::Single, block)
}

/// A duration as written in a `timeouts` block (`"90s"`, `"10m"`, `"1h30m"`, `"2h 15m"`): more
/// than zero, at most [`MAX`].
///
/// # Errors
/// A sentence saying what is allowed.
pub fn parse(text: &str) -> Result<Duration, String> {
    let problem = || {
        format!("{text:?} is not a timeout: write a duration such as \"30s\", \"10m\" or \"1h30m\" (more than 0, at most 24h).")
    };
    let d = humantime::parse_duration(text.trim()).map_err(|_| problem())?;
    if d.is_zero() || d > MAX {
        return Err(problem());
    }
    Ok(d)
}

/// Checks every timeout the block sets (at validation, so a typo fails the plan).
pub fn validate<T: Settings>(timeouts: &Field<T>, diags: &mut Diagnostics) {
    let Some(t) = timeouts.get() else { return };
    for op in EVERY {
        if let Some(text) = t.setting(op).and_then(Field::get) {
            if let Err(problem) = parse(text) {
                diags.attribute_error(
                    AttributePath::root("timeouts").attr(op.name()),
                    "Invalid timeout",
                    problem,
                );
            }
        }
    }
}

/// The timeout of `op`: the block's, else the default.
pub fn of<T: Settings>(timeouts: &Field<T>, op: Operation, defaults: Defaults) -> Duration {
    let set = timeouts.get().and_then(|t| t.setting(op)).and_then(Field::get);
    set.and_then(|text| parse(text).ok()).unwrap_or_else(|| defaults.of(op))
}

/// Runs `work` within `limit`; when time runs out, `work` is dropped (whatever it has sent may
/// still take effect) and the error names `timeouts.<op>`.
///
/// # Errors
/// The diagnostic saying which operation ran out of time and what to raise.
pub async fn within<T>(
    limit: Duration,
    op: Operation,
    resource: &str,
    work: impl Future<Output = T>,
) -> Result<T, Diagnostic> {
    tokio::time::timeout(limit, work).await.map_err(|_| {
        let name = op.name();
        let after = if op == Operation::Read {
            "It was stopped; nothing was changed.".to_string()
        } else {
            "What was already sent may still take effect: the next plan reads the live state and shows what \
             remains."
                .to_string()
        };
        Diagnostic::error(
            format!("{resource}: {name} timed out"),
            format!(
                "The {name} did not finish within {} (`timeouts.{name}`). {after} Raise `timeouts.{name}` if the \
                 API needs longer.",
                shown(limit)
            ),
        )
    })
}

/// A duration as the docs and errors show it (`20m`, `1h30m`, `45s`).
pub fn shown(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs().max(1)))
        .to_string()
        .replace(' ', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_read_like_the_official_providers_and_bad_ones_say_what_is_allowed() {
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse(" 2h 15m "), Ok(Duration::from_secs(8100)));
        // Go's time.ParseDuration (what the official providers use) takes fractions too.
        assert_eq!(parse("1.5h"), Ok(Duration::from_secs(5400)));
        for bad in ["", "0s", "ten minutes", "25h", "-5m", "5", "1h30"] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("\"30s\""), "{bad}: {e}");
        }
        assert_eq!(shown(Duration::from_secs(1200)), "20m");
        assert_eq!(shown(Duration::from_secs(5400)), "1h30m");
        assert_eq!(shown(Duration::from_millis(200)), "1s");
    }

    #[test]
    fn the_block_wins_over_the_default() {
        let defaults = Defaults::all(Duration::from_secs(300));
        let set = Field::Known(TimeoutsModel {
            create: "2m".into(),
            update: Field::Null,
            delete: Field::Unknown,
        });
        assert_eq!(of(&set, Operation::Create, defaults), Duration::from_secs(120));
        assert_eq!(of(&set, Operation::Update, defaults), Duration::from_secs(300));
        assert_eq!(of(&set, Operation::Delete, defaults), Duration::from_secs(300));
        assert_eq!(
            of(&Field::<TimeoutsModel>::Null, Operation::Create, defaults),
            Duration::from_secs(300)
        );
    }

    #[tokio::test]
    async fn work_that_runs_out_of_time_is_an_error_naming_the_setting() {
        let slow = tokio::time::sleep(Duration::from_secs(5));
        let e = within(Duration::from_millis(20), Operation::Update, "locality_x", slow)
            .await
            .unwrap_err();
        let text = format!("{e:?}");
        assert!(text.contains("timeouts.update"), "{text}");
        assert_eq!(
            within(Duration::from_secs(1), Operation::Create, "locality_x", async { 7 })
                .await
                .ok(),
            Some(7)
        );
    }
}
