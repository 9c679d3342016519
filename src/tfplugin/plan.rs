//! The planning contract, handled once for every resource (what Terraform checks of a plan: a
//! planned value differs from the config only where the attribute is computed, and a value
//! known at plan time must not change at apply):
//!
//! - defaults are applied where the configuration is null;
//! - on create, or when anything changes, computed attributes that the configuration leaves
//!   null become unknown (unless `use_state_for_unknown` keeps the prior value);
//! - when nothing changes, the prior values are kept, so plans after apply are empty;
//! - `requires_replace` attributes whose value changes are reported as replace paths;
//! - provider-level defaults, semantic equality of values and of map keys, and computed
//!   values that track other attributes, as the schema declares them.

use std::collections::BTreeMap;

use super::diagnostics::{AttributePath, Diagnostic, Diagnostics};
use super::schema::{Block, Nesting};
use super::value::Value;

/// Applies defaults, provider defaults, semantic equality, tracked values and the
/// computed-unknown rule to `proposed`, returning the plan the resource's `modify_plan`
/// starts from. `provider_default` looks up a provider-level default by key.
pub(crate) fn initial_plan(
    block: &Block,
    prior: &Value,
    proposed: &Value,
    config: &Value,
    provider_default: &dyn Fn(&str) -> Option<Value>,
    diags: &mut Diagnostics,
) -> Value {
    let mut planned = block.conform(proposed);
    keep_equivalent(block, &mut planned, prior, Equivalence::Plan);
    apply_defaults(block, &mut planned, config);
    if prior.is_null() || planned != block.conform(prior) {
        mark_computed_unknown(block, &mut planned, config, prior);
    }
    apply_provider_defaults(block, &mut planned, prior, config, provider_default, diags);
    track(block, &mut planned, prior, None);
    planned
}

/// The last step, after the resource's `modify_plan`: tracked values whose attributes changed
/// become unknown, and those whose attributes did not keep the prior value, unless the
/// resource planned a value of its own (`before` is the plan it was given).
pub(crate) fn finish_plan(block: &Block, planned: &mut Value, prior: &Value, before: &Value) {
    track(block, planned, prior, Some(before));
}

/// Where the new value differs from the prior one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Equivalence {
    /// In a plan: only the prior value or the configured one may be planned; map keys keep
    /// the configuration's spelling.
    Plan,
    /// In a refresh: any value may be returned, so map keys take the prior spelling.
    Read,
}

/// Where an attribute has semantic equality and the new value means the same as the prior one,
/// use the prior value (Terraform allows planning the prior value of a configured attribute).
/// Maps with key equality take the prior spelling of each key on refresh (in plans the
/// configuration's spelling stands). Used on ReadResource results too, so refresh never
/// reports a difference in form only.
pub(crate) fn keep_equivalent(block: &Block, new: &mut Value, prior: &Value, mode: Equivalence) {
    if prior.is_null() || new.is_null() {
        return;
    }
    for attr in &block.attributes {
        let (p, n) = (prior.get(&attr.name), new.get(&attr.name));
        if p.is_null() || n.is_null() || n.is_unknown() || p == n {
            continue;
        }
        if let Some(equal) = attr.semantic_equality {
            if equal(p, n) {
                let p = p.clone();
                new.set(&attr.name, p);
                continue;
            }
        }
        if let (Some(equal), Some(prior_map), Some(new_map)) = (attr.key_equality, p.entries(), n.entries()) {
            let respelled: BTreeMap<String, Value> = new_map
                .iter()
                .map(|(key, v)| {
                    let prior_key = prior_map.keys().find(|pk| *pk == key || equal(pk, key));
                    (prior_key.unwrap_or(key).clone(), v.clone())
                })
                .collect();
            // In plans the configuration's spelling stands (it becomes the state's on apply).
            if mode == Equivalence::Read {
                new.set(&attr.name, Value::Map(respelled));
            }
        }
    }
}

fn apply_provider_defaults(
    block: &Block,
    planned: &mut Value,
    prior: &Value,
    config: &Value,
    lookup: &dyn Fn(&str) -> Option<Value>,
    diags: &mut Diagnostics,
) {
    for attr in &block.attributes {
        let Some(default) = &attr.provider_default else {
            continue;
        };
        if !config.get(&attr.name).is_null() {
            continue;
        }
        let prior_value = prior.get(&attr.name);
        if !prior_value.is_null() && !prior_value.is_unknown() {
            planned.set(&attr.name, prior_value.clone());
        } else if let Some(value) = lookup(default.key) {
            planned.set(&attr.name, value);
        } else {
            diags.add(
                Diagnostic::error(
                    format!("No {}", attr.name),
                    format!("Set `{}` here, or {}.", attr.name, default.alternative),
                )
                .at(AttributePath::root(&attr.name)),
            );
        }
    }
}

fn track(block: &Block, planned: &mut Value, prior: &Value, before: Option<&Value>) {
    if prior.is_null() {
        return;
    }
    for attr in block.attributes.iter().filter(|a| !a.tracks.is_empty()) {
        let current = planned.get(&attr.name);
        if before.is_some_and(|b| b.get(&attr.name) != current) {
            continue; // the resource planned a value of its own
        }
        let unchanged = attr.tracks.iter().all(|dep| planned.get(dep) == prior.get(dep));
        let prior_value = prior.get(&attr.name);
        if unchanged && current.is_unknown() && !prior_value.is_null() {
            let value = prior_value.clone();
            planned.set(&attr.name, value);
        } else if !unchanged && current == prior_value && !current.is_unknown() {
            planned.set(&attr.name, Value::Unknown);
        }
    }
}

fn apply_defaults(block: &Block, planned: &mut Value, config: &Value) {
    for attr in &block.attributes {
        if let Some(default) = &attr.default {
            if config.get(&attr.name).is_null() {
                planned.set(&attr.name, default.clone());
            }
        }
    }
    for_each_nested(block, planned, config, &Value::Null, &mut |b, p, c, _| {
        apply_defaults(b, p, c)
    });
}

fn mark_computed_unknown(block: &Block, planned: &mut Value, config: &Value, prior: &Value) {
    for attr in &block.attributes {
        if !attr.computed || attr.default.is_some() || !config.get(&attr.name).is_null() {
            continue;
        }
        let keep = attr.use_state_for_unknown && !prior.is_null() && !prior.get(&attr.name).is_null();
        let value = if keep {
            prior.get(&attr.name).clone()
        } else {
            Value::Unknown
        };
        planned.set(&attr.name, value);
    }
    for_each_nested(block, planned, config, prior, &mut mark_computed_unknown);
}

/// Visits the objects of single, group, list and set blocks with their config and prior element
/// (list elements are matched by index, as Terraform does). A set's elements have no index to
/// match by: each planned element (Terraform's proposal, which starts from the configuration's
/// element) stands for its own configuration, and has no prior element.
fn for_each_nested(
    block: &Block,
    planned: &mut Value,
    config: &Value,
    prior: &Value,
    visit: &mut dyn FnMut(&Block, &mut Value, &Value, &Value),
) {
    for nested in &block.blocks {
        let name = nested.name.as_str();
        let config_v = config.get(name).clone();
        let prior_v = prior.get(name).clone();
        let target = planned.get_mut(name);
        match (nested.nesting, target) {
            (Nesting::Single | Nesting::Group, v @ Value::Object(_)) => visit(&nested.block, v, &config_v, &prior_v),
            (Nesting::List, Value::List(items)) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let c = config_v.elements().get(i).cloned().unwrap_or_default();
                    let p = prior_v.elements().get(i).cloned().unwrap_or_default();
                    visit(&nested.block, item, &c, &p);
                }
            }
            (Nesting::Set, Value::Set(items)) => {
                for item in items.iter_mut() {
                    let own = item.clone();
                    visit(&nested.block, item, &own, &Value::Null);
                }
            }
            _ => {}
        }
    }
}

/// The `requires_replace` attribute paths whose value differs between prior and planned.
pub(crate) fn replace_paths(block: &Block, prior: &Value, planned: &Value) -> Vec<AttributePath> {
    let mut out = Vec::new();
    if prior.is_null() || planned.is_null() {
        return out;
    }
    collect_replace(block, prior, planned, AttributePath::default(), &mut out);
    out
}

fn collect_replace(block: &Block, prior: &Value, planned: &Value, at: AttributePath, out: &mut Vec<AttributePath>) {
    let path = |name: &str| {
        let mut p = at.clone();
        p.0.push(super::diagnostics::PathStep::Attribute(name.to_string()));
        p
    };
    for attr in &block.attributes {
        if attr.requires_replace && prior.get(&attr.name) != planned.get(&attr.name) {
            out.push(path(&attr.name));
        }
    }
    for nested in &block.blocks {
        let (p, n) = (prior.get(&nested.name), planned.get(&nested.name));
        match nested.nesting {
            Nesting::Single | Nesting::Group if !p.is_null() && !n.is_null() => {
                collect_replace(&nested.block, p, n, path(&nested.name), out);
            }
            Nesting::List => {
                for (i, (pe, ne)) in p.elements().iter().zip(n.elements()).enumerate() {
                    collect_replace(&nested.block, pe, ne, path(&nested.name).index(i), out);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfplugin::schema::{Attribute, NestedBlock};

    fn block() -> Block {
        Block::new("t")
            .attribute(Attribute::string("id").computed().use_state_for_unknown())
            .attribute(Attribute::string("name").required())
            .attribute(Attribute::string("digest").computed())
            .attribute(Attribute::bool("flag").default(false))
            .block(
                NestedBlock::new(
                    "target",
                    Nesting::List,
                    Block::new("x").attribute(Attribute::string("path").required().requires_replace()),
                )
                .items(1, 1),
            )
    }

    fn obj(name: &str, path: &str) -> Value {
        Value::object([
            ("name", Value::from(name)),
            (
                "target",
                Value::List(vec![Value::object([("path", Value::from(path))])]),
            ),
        ])
    }

    #[test]
    fn create_marks_computed_unknown_and_applies_defaults() {
        let b = block();
        let config = b.conform(&obj("a", "/p"));
        let planned = initial_plan(
            &b,
            &Value::Null,
            &config,
            &config,
            &|_| None,
            &mut Diagnostics::default(),
        );
        assert!(planned.get("id").is_unknown());
        assert!(planned.get("digest").is_unknown());
        assert_eq!(planned.get("flag"), &Value::Bool(false));
    }

    #[test]
    fn no_change_keeps_prior_and_change_marks_unknown() {
        let b = block();
        let mut prior = b.conform(&obj("a", "/p"));
        prior.set("id", "x".into());
        prior.set("digest", "d".into());
        prior.set("flag", false.into());
        let config = b.conform(&obj("a", "/p"));
        let planned = initial_plan(&b, &prior, &prior, &config, &|_| None, &mut Diagnostics::default());
        assert_eq!(planned, prior);

        let config = b.conform(&obj("b", "/q"));
        let mut proposed = config.clone();
        proposed.set("id", "x".into());
        proposed.set("digest", "d".into());
        let planned = initial_plan(&b, &prior, &proposed, &config, &|_| None, &mut Diagnostics::default());
        assert_eq!(planned.get("id").as_str(), Some("x"), "use_state_for_unknown");
        assert!(planned.get("digest").is_unknown());
        let paths: Vec<String> = replace_paths(&b, &prior, &planned)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(paths, ["target[0].path"]);
    }
}

#[cfg(test)]
mod declared_tests {
    use super::*;
    use crate::tfplugin::schema::Attribute;
    use crate::tfplugin::Type;

    fn block() -> Block {
        Block::new("t")
            .attribute(Attribute::string("region").required())
            .attribute(Attribute::string("colos").computed().tracks(&["region"]))
            .attribute(Attribute::string("project").provider_default("google.project", "`project` in the provider"))
            .attribute(
                Attribute::typed("weights", Type::map(Type::Number))
                    .required()
                    .key_equality(|a, b| a.rsplit('/').next() == b.rsplit('/').next()),
            )
    }

    fn value(region: &str, colos: Value, project: Value, key: &str) -> Value {
        Value::object([
            ("region", Value::from(region)),
            ("colos", colos),
            ("project", project),
            ("weights", Value::Map([(key.to_string(), Value::from(1))].into())),
        ])
    }

    #[test]
    fn tracked_values_follow_their_attributes() {
        let b = block();
        let prior = value("r1", "c1".into(), "p".into(), "x/bs");
        let mut diags = Diagnostics::default();
        // Same region: the prior colos stay even though another attribute changed.
        let config = value("r1", Value::Null, Value::Null, "bs2");
        let planned = initial_plan(&b, &prior, &config, &config, &|_| None, &mut diags);
        assert_eq!(planned.get("colos").as_str(), Some("c1"));
        assert_eq!(
            planned.get("project").as_str(),
            Some("p"),
            "prior wins over the provider"
        );
        // New region: unknown, unless the resource plans a value; a stale prior value is dropped.
        let config = value("r2", Value::Null, Value::Null, "x/bs");
        let planned = initial_plan(&b, &prior, &config, &config, &|_| None, &mut diags);
        assert!(planned.get("colos").is_unknown());
        let before = planned.clone();
        // modify_plan changed what colos tracks and left the prior colos: they become unknown.
        let mut stale = prior.clone();
        stale.set("region", "r3".into());
        finish_plan(&b, &mut stale, &prior, &prior);
        assert!(stale.get("colos").is_unknown());
        let mut own = planned;
        own.set("colos", "c2".into());
        finish_plan(&b, &mut own, &prior, &before);
        assert_eq!(own.get("colos").as_str(), Some("c2"));
        assert!(!diags.has_errors());
    }

    #[test]
    fn provider_defaults_and_missing_ones() {
        let b = block();
        let config = value("r1", Value::Null, Value::Null, "bs");
        let mut diags = Diagnostics::default();
        let planned = initial_plan(&b, &Value::Null, &config, &config, &|_| Some("dflt".into()), &mut diags);
        assert_eq!(planned.get("project").as_str(), Some("dflt"));
        initial_plan(&b, &Value::Null, &config, &config, &|_| None, &mut diags);
        let d = diags.iter().next().expect("an error");
        assert_eq!(d.path.as_ref().map(ToString::to_string).as_deref(), Some("project"));
        assert!(d.detail.contains("`project` in the provider"));
    }

    #[test]
    fn map_keys_keep_their_prior_spelling() {
        let b = block();
        let prior = value("r1", "c".into(), "p".into(), "projects/p/global/backendServices/bs");
        let mut read = value("r1", "c".into(), "p".into(), "bs");
        keep_equivalent(&b, &mut read, &prior, Equivalence::Read);
        assert_eq!(read, prior);
        // In a plan the configuration's spelling stands.
        let mut planned = value("r1", "c".into(), "p".into(), "bs");
        keep_equivalent(&b, &mut planned, &prior, Equivalence::Plan);
        assert!(planned.get("weights").entries().unwrap().contains_key("bs"));
    }
}
