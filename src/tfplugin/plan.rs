//! The planning contract, handled once for every resource (reference/tfplugin/FACTS.md §3.5-3.7):
//!
//! - defaults are applied where the configuration is null;
//! - on create, or when anything changes, computed attributes that the configuration leaves
//!   null become unknown (unless `use_state_for_unknown` keeps the prior value);
//! - when nothing changes, the prior values are kept, so plans after apply are empty;
//! - `requires_replace` attributes whose value changes are reported as replace paths.

use super::diagnostics::AttributePath;
use super::schema::{Block, Nesting};
use super::value::Value;

/// Applies defaults and the computed-unknown rule to `proposed`, returning the plan the
/// resource's `modify_plan` starts from.
pub fn initial_plan(block: &Block, prior: &Value, proposed: &Value, config: &Value) -> Value {
    let mut planned = block.conform(proposed);
    keep_equivalent(block, &mut planned, prior);
    apply_defaults(block, &mut planned, config);
    if prior.is_null() || planned != block.conform(prior) {
        mark_computed_unknown(block, &mut planned, config, prior);
    }
    planned
}

/// Where an attribute has semantic equality and the new value means the same as the prior one,
/// use the prior value (Terraform allows planning the prior value of a configured attribute).
/// Also used on ReadResource results, so refresh never reports a difference in form only.
pub fn keep_equivalent(block: &Block, new: &mut Value, prior: &Value) {
    if prior.is_null() || new.is_null() {
        return;
    }
    for attr in &block.attributes {
        let Some(equal) = attr.semantic_equality else { continue };
        let (p, n) = (prior.get(&attr.name), new.get(&attr.name));
        if !p.is_null() && !n.is_null() && !n.is_unknown() && p != n && equal(p, n) {
            let p = p.clone();
            new.set(&attr.name, p);
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

/// Visits the objects of single, group and list blocks with their config and prior element
/// (list elements are matched by index, as Terraform does).
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
            _ => {}
        }
    }
}

/// The `requires_replace` attribute paths whose value differs between prior and planned.
pub fn replace_paths(block: &Block, prior: &Value, planned: &Value) -> Vec<AttributePath> {
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
        let planned = initial_plan(&b, &Value::Null, &config, &config);
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
        let planned = initial_plan(&b, &prior, &prior, &config);
        assert_eq!(planned, prior);

        let config = b.conform(&obj("b", "/q"));
        let mut proposed = config.clone();
        proposed.set("id", "x".into());
        proposed.set("digest", "d".into());
        let planned = initial_plan(&b, &prior, &proposed, &config);
        assert_eq!(planned.get("id").as_str(), Some("x"), "use_state_for_unknown");
        assert!(planned.get("digest").is_unknown());
        let paths: Vec<String> = replace_paths(&b, &prior, &planned)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(paths, ["target[0].path"]);
    }
}
