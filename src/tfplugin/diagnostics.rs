//! Diagnostics with severity and attribute paths: how every user-facing problem is reported
//! (never a panic, never a gRPC status).

use std::fmt;

/// One step of an [`AttributePath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathStep {
    /// `.name`
    Attribute(String),
    /// `["key"]` in a map.
    Key(String),
    /// `[3]` in a list.
    Index(i64),
}

/// Where in a configuration a diagnostic points, e.g. `member[1].endpoint`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AttributePath(pub Vec<PathStep>);

impl AttributePath {
    /// A path starting at a top-level attribute or block.
    pub fn root(name: &str) -> Self {
        AttributePath(vec![PathStep::Attribute(name.to_string())])
    }
    /// Appends `.name`.
    pub fn attr(mut self, name: &str) -> Self {
        self.0.push(PathStep::Attribute(name.to_string()));
        self
    }
    /// Appends `[index]`.
    pub fn index(mut self, index: usize) -> Self {
        self.0.push(PathStep::Index(index as i64));
        self
    }
    /// Appends `["key"]`.
    pub fn key(mut self, key: &str) -> Self {
        self.0.push(PathStep::Key(key.to_string()));
        self
    }
}

impl fmt::Display for AttributePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                PathStep::Attribute(name) if i == 0 => write!(f, "{name}")?,
                PathStep::Attribute(name) => write!(f, ".{name}")?,
                PathStep::Key(key) => write!(f, "[{key:?}]")?,
                PathStep::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// Error or warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Stops the operation.
    Error,
    /// Shown, does not stop anything.
    Warning,
}

/// One problem for Terraform to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// A short headline.
    pub summary: String,
    /// What went wrong and what is allowed.
    pub detail: String,
    /// The attribute the problem is about, if any.
    pub path: Option<AttributePath>,
}

impl Diagnostic {
    /// An error.
    pub fn error(summary: impl Into<String>, detail: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            summary: summary.into(),
            detail: detail.into(),
            path: None,
        }
    }
    /// A warning.
    pub fn warning(summary: impl Into<String>, detail: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(summary, detail)
        }
    }
    /// The same diagnostic, pointing at `path`.
    pub fn at(mut self, path: AttributePath) -> Self {
        self.path = Some(path);
        self
    }
    /// The same diagnostic, pointing at `path` unless it already points somewhere.
    pub fn or_at(mut self, path: AttributePath) -> Self {
        self.path.get_or_insert(path);
        self
    }
    /// The same diagnostic with `context` (e.g. `Zone 023e…`) before its detail.
    pub fn context(mut self, context: impl std::fmt::Display) -> Self {
        self.detail = format!("{context}: {}", self.detail);
        self
    }
}

/// A collector of diagnostics, passed to every provider and resource call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// An error not tied to an attribute.
    pub fn error(&mut self, summary: impl Into<String>, detail: impl Into<String>) {
        self.push(Severity::Error, summary, detail, None);
    }
    /// An error on one attribute.
    pub fn attribute_error(&mut self, path: AttributePath, summary: impl Into<String>, detail: impl Into<String>) {
        self.push(Severity::Error, summary, detail, Some(path));
    }
    /// A warning not tied to an attribute.
    pub fn warning(&mut self, summary: impl Into<String>, detail: impl Into<String>) {
        self.push(Severity::Warning, summary, detail, None);
    }
    /// A warning on one attribute.
    pub fn attribute_warning(&mut self, path: AttributePath, summary: impl Into<String>, detail: impl Into<String>) {
        self.push(Severity::Warning, summary, detail, Some(path));
    }
    /// Records a diagnostic.
    pub fn add(&mut self, diagnostic: impl Into<Diagnostic>) {
        self.0.push(diagnostic.into());
    }
    /// The value of `result`; its error is recorded (through its one conversion into a
    /// [`Diagnostic`]) and `None` returned, so that callers can use `?`.
    pub fn check<T, E: Into<Diagnostic>>(&mut self, result: Result<T, E>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                self.add(e);
                None
            }
        }
    }
    fn push(
        &mut self,
        severity: Severity,
        summary: impl Into<String>,
        detail: impl Into<String>,
        path: Option<AttributePath>,
    ) {
        self.0.push(Diagnostic {
            severity,
            summary: summary.into(),
            detail: detail.into(),
            path,
        });
    }
    /// Whether any error was recorded.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Error)
    }
    /// Moves all of `other`'s diagnostics into this collector.
    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }
    /// Iterates over the diagnostics.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }
}
