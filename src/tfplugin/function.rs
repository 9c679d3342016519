//! Provider-defined functions (Terraform 1.8+, `provider::NAME::function(...)`): pure
//! computations with typed parameters and a typed result. Terraform reads their definitions from
//! GetProviderSchema and calls them with CallFunction, without configuring the provider; a
//! function therefore sees only its arguments. A bad argument is a [`FunctionError`] naming it,
//! which Terraform shows on the call's argument.

use super::value::{Type, Value};

/// One parameter.
#[derive(Debug, Clone)]
pub struct Parameter {
    /// Its name in the docs and errors.
    pub name: &'static str,
    /// Its type.
    pub ty: Type,
    /// Whether `null` may be passed (otherwise Terraform refuses it before calling).
    pub allow_null: bool,
    /// Markdown.
    pub description: String,
}

/// What Terraform and the docs know of a function.
#[derive(Debug, Clone)]
pub struct FunctionDefinition {
    /// The name after `provider::NAME::`.
    pub name: &'static str,
    /// One line.
    pub summary: String,
    /// Markdown.
    pub description: String,
    /// The parameters, in order.
    pub parameters: Vec<Parameter>,
    /// The result's type.
    pub return_type: Type,
}

/// Why a call failed; `argument` is the 0-based index of the argument at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionError {
    /// A sentence that says what is allowed.
    pub text: String,
    /// The argument at fault, when one is.
    pub argument: Option<usize>,
}

impl FunctionError {
    /// An error on argument `index`.
    pub fn argument(index: usize, text: impl Into<String>) -> FunctionError {
        FunctionError {
            text: text.into(),
            argument: Some(index),
        }
    }
}

/// A provider-defined function.
pub trait Function: Send + Sync + 'static {
    /// Its definition.
    fn definition(&self) -> FunctionDefinition;

    /// Calls it with arguments that have the parameters' types (known; null only where
    /// allowed).
    ///
    /// # Errors
    /// A [`FunctionError`] when an argument is not acceptable.
    fn call(&self, arguments: &[Value]) -> Result<Value, FunctionError>;
}
