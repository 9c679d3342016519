//! A stand-in for the `hashicorp/aws` provider, served in-process and attached to terraform
//! with TF_REATTACH_PROVIDERS, so that `terraform validate` checks what `locality gen` writes
//! for AWS (attribute names, types, block nesting, references) offline, and so that a generated
//! configuration can be applied against moto. Its schemas are the subset of hashicorp/aws 6.x
//! that the generator emits: `aws_lb_target_group`, `aws_lb_listener` and `aws_lb_listener_rule`
//! with `forward { target_group { arn, weight }, stickiness { duration, enabled } }` as
//! `internal/service/elbv2/listener.go` and `listener_rule.go` declare them (`target_group` a
//! set of at most 5, `stickiness.duration` required).
//!
//! With an ELBv2 endpoint, create really creates: the target groups, the listener with its
//! weighted forward, the rule with its conditions (moto behind tests/common/elbv2.rs's layer).

use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2::types::{
    Action, ActionTypeEnum, ForwardActionConfig, ProtocolEnum, RuleCondition, TargetGroupStickinessConfig,
    TargetGroupTuple, TargetTypeEnum,
};
use locality::tfplugin::{
    serve_plaintext, Attribute, Block, Context, Diagnostics, DynamicDataSource, DynamicResource, NestedBlock, Nesting,
    Provider, Schema, Type, Value,
};

struct Aws {
    elb: Option<aws_sdk_elasticloadbalancingv2::Client>,
}

struct Fake {
    name: &'static str,
    block: Block,
    elb: Option<aws_sdk_elasticloadbalancingv2::Client>,
}

fn computed(name: &str) -> Attribute {
    Attribute::string(name).computed().description(name)
}

fn forward_action(name: &str) -> NestedBlock {
    let target_group = Block::new("target_group")
        .attribute(Attribute::string("arn").required())
        .attribute(Attribute::number("weight").optional());
    let stickiness = Block::new("stickiness")
        .attribute(Attribute::number("duration").required())
        .attribute(Attribute::bool("enabled").optional());
    let forward = Block::new("forward")
        .block(NestedBlock::new("target_group", Nesting::Set, target_group).items(1, 5))
        .block(NestedBlock::new("stickiness", Nesting::List, stickiness).items(0, 1));
    NestedBlock::new(
        name,
        Nesting::List,
        Block::new(name)
            .attribute(Attribute::string("type").required())
            // (Optional and computed in hashicorp/aws; optional here, so the stand-in need not fill it.)
            .attribute(Attribute::number("order").optional())
            .attribute(Attribute::string("target_group_arn").optional())
            .block(NestedBlock::new("forward", Nesting::List, forward).items(0, 1)),
    )
    .items(1, 0)
}

fn values_block(name: &str) -> NestedBlock {
    NestedBlock::new(
        name,
        Nesting::List,
        Block::new(name).attribute(Attribute::typed("values", Type::set(Type::String)).required()),
    )
    .items(0, 1)
}

fn schemas() -> Vec<(&'static str, Block)> {
    let tags = || Attribute::typed("tags", Type::map(Type::String)).optional();
    let target_group = Block::new("tg")
        .attribute(computed("id"))
        .attribute(computed("arn"))
        .attribute(Attribute::string("name").optional().computed())
        .attribute(Attribute::number("port").optional())
        .attribute(Attribute::string("protocol").optional())
        .attribute(Attribute::string("vpc_id").optional())
        .attribute(Attribute::string("target_type").optional())
        .attribute(tags());
    let listener = Block::new("listener")
        .attribute(computed("id"))
        .attribute(computed("arn"))
        .attribute(Attribute::string("load_balancer_arn").required())
        .attribute(Attribute::number("port").optional())
        .attribute(Attribute::string("protocol").optional().computed())
        .attribute(Attribute::string("certificate_arn").optional())
        .attribute(Attribute::string("ssl_policy").optional().computed())
        .attribute(tags())
        .block(forward_action("default_action"));
    let condition = Block::new("condition")
        .block(values_block("path_pattern"))
        .block(values_block("host_header"));
    let rule = Block::new("rule")
        .attribute(computed("id"))
        .attribute(computed("arn"))
        .attribute(Attribute::string("listener_arn").required())
        .attribute(Attribute::number("priority").optional().computed())
        .attribute(tags())
        .block(forward_action("action"))
        .block(NestedBlock::new("condition", Nesting::Set, condition).items(1, 0));
    vec![
        ("aws_lb_target_group", target_group),
        ("aws_lb_listener", listener),
        ("aws_lb_listener_rule", rule),
    ]
}

#[async_trait]
impl Provider for Aws {
    type Data = ();
    fn schema(&self) -> Schema {
        Schema {
            version: 0,
            block: Block::new("aws").attribute(Attribute::string("region").optional()),
        }
    }
    async fn configure(&self, _: &Value, _: &str, _: &mut Diagnostics) -> Option<()> {
        Some(())
    }
    fn resources(&self) -> Vec<Arc<dyn DynamicResource<()>>> {
        schemas()
            .into_iter()
            .map(|(name, block)| {
                Arc::new(Fake {
                    name,
                    block,
                    elb: self.elb.clone(),
                }) as Arc<dyn DynamicResource<()>>
            })
            .collect()
    }
    fn data_sources(&self) -> Vec<Arc<dyn DynamicDataSource<()>>> {
        Vec::new()
    }
}

fn text(value: &Value, key: &str) -> String {
    value.get(key).as_str().unwrap_or_default().to_string()
}

fn whole(value: &Value, key: &str) -> Option<i32> {
    value
        .get(key)
        .as_number()
        .and_then(|n| n.as_u64())
        .and_then(|n| i32::try_from(n).ok())
}

/// The forward action a planned `default_action`/`action` block describes.
fn forward(planned: &Value, block: &str) -> Vec<Action> {
    planned
        .get(block)
        .elements()
        .iter()
        .map(|action| {
            let forward = action.get("forward").elements().first().cloned().unwrap_or_default();
            let mut config = ForwardActionConfig::builder();
            for group in forward.get("target_group").elements() {
                config = config.target_groups(
                    TargetGroupTuple::builder()
                        .target_group_arn(text(group, "arn"))
                        .set_weight(whole(group, "weight"))
                        .build(),
                );
            }
            if let Some(sticky) = forward.get("stickiness").elements().first() {
                config = config.target_group_stickiness_config(
                    TargetGroupStickinessConfig::builder()
                        .enabled(sticky.get("enabled").as_bool().unwrap_or(false))
                        .set_duration_seconds(whole(sticky, "duration"))
                        .build(),
                );
            }
            Action::builder()
                .r#type(ActionTypeEnum::Forward)
                .forward_config(config.build())
                .build()
        })
        .collect()
}

#[async_trait]
impl DynamicResource<()> for Fake {
    fn type_name(&self) -> &'static str {
        self.name
    }
    fn schema(&self) -> Schema {
        Schema {
            version: 0,
            block: self.block.clone(),
        }
    }
    async fn read(&self, _: &Context<()>, state: &Value, _: &mut Diagnostics) -> Option<Value> {
        Some(state.clone())
    }
    async fn create(&self, _: &Context<()>, planned: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let mut state = planned.clone();
        let arn = match &self.elb {
            None => format!(
                "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:{}/stand-in",
                self.name
            ),
            Some(elb) => {
                let made = match self.name {
                    "aws_lb_target_group" => elb
                        .create_target_group()
                        .name(text(planned, "name"))
                        .set_port(whole(planned, "port"))
                        .set_protocol(Some(ProtocolEnum::from(text(planned, "protocol").as_str())))
                        .vpc_id(text(planned, "vpc_id"))
                        .set_target_type(planned.get("target_type").as_str().map(TargetTypeEnum::from))
                        .send()
                        .await
                        .map(|o| o.target_groups()[0].target_group_arn().unwrap_or_default().to_string())
                        .map_err(|e| format!("{e:?}")),
                    "aws_lb_listener" => elb
                        .create_listener()
                        .load_balancer_arn(text(planned, "load_balancer_arn"))
                        .set_port(whole(planned, "port"))
                        .protocol(ProtocolEnum::from(text(planned, "protocol").as_str()))
                        .set_default_actions(Some(forward(planned, "default_action")))
                        .send()
                        .await
                        .map(|o| o.listeners()[0].listener_arn().unwrap_or_default().to_string())
                        .map_err(|e| format!("{e:?}")),
                    _ => {
                        let mut conditions = Vec::new();
                        for condition in planned.get("condition").elements() {
                            for (field, block) in [("path-pattern", "path_pattern"), ("host-header", "host_header")] {
                                for values in condition.get(block).elements() {
                                    let values: Vec<String> = values
                                        .get("values")
                                        .elements()
                                        .iter()
                                        .filter_map(|v| v.as_str().map(str::to_string))
                                        .collect();
                                    conditions
                                        .push(RuleCondition::builder().field(field).set_values(Some(values)).build());
                                }
                            }
                        }
                        elb.create_rule()
                            .listener_arn(text(planned, "listener_arn"))
                            .set_priority(whole(planned, "priority"))
                            .set_conditions(Some(conditions))
                            .set_actions(Some(forward(planned, "action")))
                            .send()
                            .await
                            .map(|o| o.rules()[0].rule_arn().unwrap_or_default().to_string())
                            .map_err(|e| format!("{e:?}"))
                    }
                };
                match made {
                    Ok(arn) => arn,
                    Err(e) => {
                        diags.error("stand-in aws: the create failed", e);
                        return None;
                    }
                }
            }
        };
        state.set("id", arn.as_str().into());
        state.set("arn", arn.as_str().into());
        for key in ["name", "protocol", "ssl_policy"] {
            if state.get(key).is_unknown() {
                state.set(key, Value::Null);
            }
        }
        if state.get("priority").is_unknown() {
            state.set("priority", Value::Null);
        }
        Some(state)
    }
    async fn update(&self, _: &Context<()>, _: &Value, planned: &Value, _: &mut Diagnostics) -> Option<Value> {
        Some(planned.clone())
    }
    async fn delete(&self, _: &Context<()>, _: &Value, _: &mut Diagnostics) {}
}

/// Starts the stand-in on 127.0.0.1 and returns its TF_REATTACH_PROVIDERS entry (one provider:
/// merge it with others' with [`merge`]). With `elb`, creates really create.
pub async fn start(elb: Option<aws_sdk_elasticloadbalancingv2::Client>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(serve_plaintext(Aws { elb }, listener, Default::default()));
    serde_json::json!({
        "registry.terraform.io/hashicorp/aws": {
            "Protocol": "grpc", "ProtocolVersion": 6, "Pid": std::process::id(), "Test": true,
            "Addr": {"Network": "tcp", "String": addr.to_string()}
        }
    })
    .to_string()
}

/// Two TF_REATTACH_PROVIDERS values as one.
pub fn merge(a: &str, b: &str) -> String {
    let mut a: serde_json::Value = serde_json::from_str(a).unwrap();
    let b: serde_json::Value = serde_json::from_str(b).unwrap();
    for (k, v) in b.as_object().unwrap() {
        a[k] = v.clone();
    }
    a.to_string()
}
