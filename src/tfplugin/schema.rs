//! Schemas: attributes, nested attributes and blocks of every nesting mode, built with
//! small builders and turned into the protocol's `Schema` and into value types.
//!
//! Plan-time behaviour that the framework applies for every resource is declared here too:
//! `requires_replace`, `default`, and `use_state_for_unknown`.

use super::value::{Type, Value};

/// A versioned schema for a provider, resource or data source.
#[derive(Debug, Clone)]
pub struct Schema {
    /// Bumped when the stored state's shape changes (see UpgradeResourceState).
    pub version: i64,
    /// The top-level block.
    pub block: Block,
}

/// A block: attributes and nested blocks.
#[derive(Debug, Clone, Default)]
pub struct Block {
    /// Attributes, in documentation order.
    pub attributes: Vec<Attribute>,
    /// Nested block types, in documentation order.
    pub blocks: Vec<NestedBlock>,
    /// Markdown description (the docs).
    pub description: String,
    /// Deprecation message; empty when not deprecated.
    pub deprecation: String,
}

/// How an attribute's value is described.
#[derive(Debug, Clone)]
pub enum AttributeKind {
    /// A plain typed attribute.
    Typed(Type),
    /// A nested attribute (`nested_type`).
    Nested(Nesting, Vec<Attribute>),
}

/// One attribute.
#[derive(Debug, Clone)]
pub struct Attribute {
    /// Its name.
    pub name: String,
    /// Its type or nested attributes.
    pub kind: AttributeKind,
    /// Markdown description (the docs).
    pub description: String,
    /// Must be set in configuration.
    pub required: bool,
    /// May be set in configuration.
    pub optional: bool,
    /// Set by the provider.
    pub computed: bool,
    /// Masked in plan output.
    pub sensitive: bool,
    /// Deprecation message; empty when not deprecated.
    pub deprecation: String,
    /// A change forces the resource to be replaced.
    pub requires_replace: bool,
    /// Planned when the configuration leaves it null (the attribute must be optional+computed).
    pub default: Option<Value>,
    /// Keep the prior value in plans instead of marking it unknown (stable computed values).
    pub use_state_for_unknown: bool,
    /// Semantic equality: when it says the configured (or read) value means the same as the prior
    /// one, the prior value is kept, so that e.g. `2001:DB8::1` and `2001:db8::1` never diff.
    pub semantic_equality: Option<SemanticEquality>,
    /// For maps: keys that name the same thing (`web-bs` and its self-link). Refresh keeps the
    /// prior state's spelling of each key.
    pub key_equality: Option<KeyEquality>,
    /// A computed value that belongs to these attributes: planned as the prior value while they
    /// are unchanged, and unknown when they change (unless the resource plans a new value).
    pub tracks: Vec<&'static str>,
    /// A default that comes from the provider's configuration, looked up by this key (see
    /// `Provider::attribute_default`), with how to set it for the error when there is none.
    pub provider_default: Option<ProviderDefault>,
}

/// Decides whether two known values of an attribute mean the same thing.
pub type SemanticEquality = fn(&Value, &Value) -> bool;

/// Decides whether two map keys name the same thing.
pub type KeyEquality = fn(&str, &str) -> bool;

/// A provider-level default of an optional+computed attribute.
#[derive(Debug, Clone)]
pub struct ProviderDefault {
    /// The key the provider looks up, e.g. `google.project`.
    pub key: &'static str,
    /// Where else the value can be set, for the error when neither is, e.g. "`project` in the
    /// provider's `google` block".
    pub alternative: &'static str,
}

/// Nesting modes of blocks and nested attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nesting {
    /// One object, or null.
    Single,
    /// A list of objects.
    List,
    /// A set of objects.
    Set,
    /// A map of objects keyed by label.
    Map,
    /// One object, never null (blocks only).
    Group,
}

/// A nested block type.
#[derive(Debug, Clone)]
pub struct NestedBlock {
    /// The block type name.
    pub name: String,
    /// The block's content.
    pub block: Block,
    /// Nesting mode.
    pub nesting: Nesting,
    /// Minimum number of blocks (list/set).
    pub min_items: i64,
    /// Maximum number of blocks (list/set); 0 is no limit.
    pub max_items: i64,
}

impl Attribute {
    fn new(name: &str, kind: AttributeKind) -> Self {
        Attribute {
            name: name.to_string(),
            kind,
            description: String::new(),
            required: false,
            optional: false,
            computed: false,
            sensitive: false,
            deprecation: String::new(),
            requires_replace: false,
            default: None,
            use_state_for_unknown: false,
            semantic_equality: None,
            key_equality: None,
            tracks: Vec::new(),
            provider_default: None,
        }
    }
    /// An attribute of any type.
    pub fn typed(name: &str, ty: Type) -> Self {
        Self::new(name, AttributeKind::Typed(ty))
    }
    /// A string attribute.
    pub fn string(name: &str) -> Self {
        Self::typed(name, Type::String)
    }
    /// A number attribute.
    pub fn number(name: &str) -> Self {
        Self::typed(name, Type::Number)
    }
    /// A bool attribute.
    pub fn bool(name: &str) -> Self {
        Self::typed(name, Type::Bool)
    }
    /// A nested attribute.
    pub fn nested(name: &str, nesting: Nesting, attributes: Vec<Attribute>) -> Self {
        Self::new(name, AttributeKind::Nested(nesting, attributes))
    }
    /// Must be set.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }
    /// May be set.
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }
    /// Set by the provider.
    pub fn computed(mut self) -> Self {
        self.computed = true;
        self
    }
    /// Masked in output.
    pub fn sensitive(mut self) -> Self {
        self.sensitive = true;
        self
    }
    /// Deprecated, with the message shown to users.
    pub fn deprecated(mut self, message: &str) -> Self {
        self.deprecation = message.to_string();
        self
    }
    /// Markdown description.
    pub fn description(mut self, text: &str) -> Self {
        self.description = text.to_string();
        self
    }
    /// Changing it replaces the resource.
    pub fn requires_replace(mut self) -> Self {
        self.requires_replace = true;
        self
    }
    /// The value planned when configuration leaves it null; makes the attribute optional+computed.
    pub fn default(mut self, value: impl Into<Value>) -> Self {
        self.default = Some(value.into());
        self.optional = true;
        self.computed = true;
        self
    }
    /// Keep the prior state's value in plans rather than "(known after apply)".
    pub fn use_state_for_unknown(mut self) -> Self {
        self.use_state_for_unknown = true;
        self
    }

    /// Treats values that `equal` says are the same as no change (see [`SemanticEquality`]).
    pub fn semantic_equality(mut self, equal: SemanticEquality) -> Self {
        self.semantic_equality = Some(equal);
        self
    }

    /// Map keys that `equal` says name the same thing are not a change (see [`KeyEquality`]).
    pub fn key_equality(mut self, equal: KeyEquality) -> Self {
        self.key_equality = Some(equal);
        self
    }

    /// The value belongs to `attributes`: kept from the prior state while they are unchanged,
    /// unknown when they change (a computed attribute whose value the API derives from them).
    pub fn tracks(mut self, attributes: &[&'static str]) -> Self {
        self.tracks = attributes.to_vec();
        self
    }

    /// When the configuration leaves it null, the plan keeps the prior value, else takes the
    /// provider's default `key`, else reports that it must be set here or in `alternative`.
    /// Makes the attribute optional+computed.
    pub fn provider_default(mut self, key: &'static str, alternative: &'static str) -> Self {
        self.provider_default = Some(ProviderDefault { key, alternative });
        self.optional = true;
        self.computed = true;
        self
    }

    /// The attribute's value type.
    pub fn value_type(&self) -> Type {
        match &self.kind {
            AttributeKind::Typed(t) => t.clone(),
            AttributeKind::Nested(nesting, attrs) => {
                let object = Type::object(attrs.iter().map(|a| (a.name.clone(), a.value_type())));
                wrap(*nesting, object)
            }
        }
    }
}

fn wrap(nesting: Nesting, object: Type) -> Type {
    match nesting {
        Nesting::Single | Nesting::Group => object,
        Nesting::List => Type::list(object),
        Nesting::Set => Type::set(object),
        Nesting::Map => Type::map(object),
    }
}

impl Block {
    /// An empty block with a description.
    pub fn new(description: &str) -> Self {
        Block {
            description: description.to_string(),
            ..Block::default()
        }
    }
    /// Adds an attribute.
    pub fn attribute(mut self, attribute: Attribute) -> Self {
        self.attributes.push(attribute);
        self
    }
    /// Adds a nested block type.
    pub fn block(mut self, block: NestedBlock) -> Self {
        self.blocks.push(block);
        self
    }
    /// The object type of this block's values.
    pub fn value_type(&self) -> Type {
        Type::object(
            self.attributes.iter().map(|a| (a.name.clone(), a.value_type())).chain(
                self.blocks
                    .iter()
                    .map(|b| (b.name.clone(), wrap(b.nesting, b.block.value_type()))),
            ),
        )
    }
    /// The attribute called `name`.
    pub fn find_attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }

    /// Brings a value into the shape Terraform requires for this block: every attribute
    /// present, list/set blocks never null (an empty list means "no blocks"), group blocks
    /// never null.
    pub fn conform(&self, value: &Value) -> Value {
        if value.is_null() || value.is_unknown() {
            return value.clone();
        }
        let mut out = Value::Object(Default::default());
        for attr in &self.attributes {
            out.set(&attr.name, value.get(&attr.name).clone());
        }
        for nested in &self.blocks {
            let v = value.get(&nested.name);
            let conformed = match nested.nesting {
                // A `dynamic` block whose `for_each` is not known yet: the whole list is unknown.
                _ if v.is_unknown() => Value::Unknown,
                Nesting::List => Value::List(v.elements().iter().map(|e| nested.block.conform(e)).collect()),
                Nesting::Set => Value::Set(v.elements().iter().map(|e| nested.block.conform(e)).collect()),
                Nesting::Single => nested.block.conform(v),
                Nesting::Group if v.is_null() => nested.block.conform(&Value::Object(Default::default())),
                Nesting::Group => nested.block.conform(v),
                Nesting::Map => match v.entries() {
                    Some(m) => Value::Map(m.iter().map(|(k, e)| (k.clone(), nested.block.conform(e))).collect()),
                    None => Value::Map(Default::default()),
                },
            };
            out.set(&nested.name, conformed);
        }
        out
    }
}

impl NestedBlock {
    /// A nested block type.
    pub fn new(name: &str, nesting: Nesting, block: Block) -> Self {
        NestedBlock {
            name: name.to_string(),
            block,
            nesting,
            min_items: 0,
            max_items: 0,
        }
    }
    /// Sets the item bounds (list/set blocks).
    pub fn items(mut self, min: i64, max: i64) -> Self {
        self.min_items = min;
        self.max_items = max;
        self
    }
}

/// Every attribute and block in a schema, depth first, with its path; used by the
/// description check and the docs.
pub fn walk_attributes<'a>(block: &'a Block, prefix: &str, out: &mut Vec<(String, &'a Attribute)>) {
    for attr in &block.attributes {
        out.push((format!("{prefix}{}", attr.name), attr));
        if let AttributeKind::Nested(_, attrs) = &attr.kind {
            for inner in attrs {
                out.push((format!("{prefix}{}.{}", attr.name, inner.name), inner));
            }
        }
    }
    for nested in &block.blocks {
        walk_attributes(&nested.block, &format!("{prefix}{}.", nested.name), out);
    }
}
