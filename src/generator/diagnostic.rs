//! Spec diagnostics: `file:line:column`, the offending line with a caret, and what is allowed.

use std::fmt::Write as _;
use std::ops::Range;

/// Error or warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Nothing is written.
    Error,
    /// Reported; output is still written.
    Warning,
}

/// One problem in a spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecDiagnostic {
    /// Error or warning.
    pub level: Level,
    /// What is wrong.
    pub message: String,
    /// Byte range in the spec text.
    pub span: Range<usize>,
    /// What is allowed, or a suggestion.
    pub help: Option<String>,
}

impl SpecDiagnostic {
    /// An error.
    pub fn error(span: Range<usize>, message: impl Into<String>) -> Self {
        SpecDiagnostic {
            level: Level::Error,
            message: message.into(),
            span,
            help: None,
        }
    }
    /// A warning.
    pub fn warning(span: Range<usize>, message: impl Into<String>) -> Self {
        SpecDiagnostic {
            level: Level::Warning,
            ..Self::error(span, message)
        }
    }
    /// Adds the "allowed" / suggestion line.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// A spec file: its name (as given on the command line) and text.
pub struct SourceFile<'a> {
    /// Shown in diagnostics and in the generated header.
    pub name: &'a str,
    /// The spec.
    pub text: &'a str,
}

impl SourceFile<'_> {
    /// `offset` within the text, moved back to the start of the character it falls in.
    fn boundary(&self, offset: usize) -> usize {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = self.boundary(offset);
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, self.text[line_start..offset].chars().count() + 1)
    }

    /// Renders a diagnostic the way compilers do:
    ///
    /// ```text
    /// error: spec.hcl:7:5: unknown attribute `lcation` in region "tokyo"
    ///   |
    /// 7 |     lcation   = "asia-northeast1"
    ///   |     ^^^^^^^
    ///   = allowed: location, cloud_run
    /// ```
    pub fn render(&self, diagnostic: &SpecDiagnostic) -> String {
        let (line, col) = self.line_col(diagnostic.span.start);
        let level = match diagnostic.level {
            Level::Error => "error",
            Level::Warning => "warning",
        };
        let mut out = format!("{level}: {}:{line}:{col}: {}\n", self.name, diagnostic.message);
        let text = self.text.lines().nth(line - 1).unwrap_or_default();
        let gutter = " ".repeat(line.to_string().len());
        let (start, end) = (self.boundary(diagnostic.span.start), self.boundary(diagnostic.span.end));
        let width = self.text[start..end.max(start)]
            .lines()
            .next()
            .map_or(1, |s| s.chars().count().max(1));
        let _ = writeln!(
            out,
            "{gutter} |\n{line} | {text}\n{gutter} | {}{}",
            " ".repeat(col - 1),
            "^".repeat(width)
        );
        if let Some(help) = &diagnostic.help {
            let _ = writeln!(out, "{gutter} = {help}");
        }
        out
    }
}

pub use crate::naming::{edit_distance, suggest};
