//! The protocol layer with a test-only provider: every value type (0.1, 20-digit numbers,
//! dynamic), nested attributes and blocks of every nesting mode, driven by the real terraform
//! (attached to an in-process server), plus direct gRPC checks of StopProvider cancelling
//! in-flight work, UpgradeResourceState, message limits, private state and diagnostics.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::proto::tfplugin6 as pb;
use locality::tfplugin::value::{decode_msgpack, encode_msgpack};
use locality::tfplugin::{
    serve_plaintext, Attribute, Block, Context, Diagnostics, DynamicDataSource, DynamicResource, NestedBlock, Nesting,
    PlanRequest, Provider, Schema, Type, Value,
};
use pb::provider_client::ProviderClient;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

struct ProbeProvider;
struct Probe;

#[async_trait]
impl Provider for ProbeProvider {
    type Data = ();
    fn schema(&self) -> Schema {
        Schema {
            version: 0,
            block: Block::new("probe provider"),
        }
    }
    async fn configure(&self, _: &Value, _: &str, _: &mut Diagnostics) -> Option<()> {
        Some(())
    }
    fn resources(&self) -> Vec<Arc<dyn DynamicResource<()>>> {
        vec![Arc::new(Probe)]
    }
    fn data_sources(&self) -> Vec<Arc<dyn DynamicDataSource<()>>> {
        Vec::new()
    }
}

fn inner_block() -> Block {
    Block::new("inner").attribute(Attribute::string("name").optional().description("a name"))
}

#[async_trait]
impl DynamicResource<()> for Probe {
    fn type_name(&self) -> &'static str {
        "locality_probe"
    }
    fn schema(&self) -> Schema {
        Schema {
            version: 1,
            block: Block::new("probe")
                .attribute(Attribute::string("id").computed().use_state_for_unknown())
                .attribute(Attribute::number("number").optional())
                .attribute(Attribute::number("echo_number").computed())
                .attribute(Attribute::typed("numbers", Type::list(Type::Number)).optional())
                .attribute(Attribute::typed("anything", Type::Dynamic).optional())
                .attribute(Attribute::string("big").optional())
                .attribute(Attribute::bool("slow").optional())
                .attribute(Attribute::string("secret").optional().sensitive())
                .attribute(Attribute::string("old").optional().deprecated("use number"))
                .attribute(
                    Attribute::nested(
                        "settings",
                        Nesting::List,
                        vec![
                            Attribute::string("key").required(),
                            Attribute::number("value").optional(),
                        ],
                    )
                    .optional(),
                )
                .attribute(
                    Attribute::nested(
                        "single_nested",
                        Nesting::Single,
                        vec![Attribute::string("x").optional()],
                    )
                    .optional(),
                )
                .attribute(
                    Attribute::nested("map_nested", Nesting::Map, vec![Attribute::string("x").optional()]).optional(),
                )
                .block(NestedBlock::new("one", Nesting::Single, inner_block()))
                .block(NestedBlock::new("many", Nesting::List, inner_block()))
                .block(NestedBlock::new("bag", Nesting::Set, inner_block()))
                .block(NestedBlock::new("labeled", Nesting::Map, inner_block()))
                .block(NestedBlock::new("grp", Nesting::Group, inner_block())),
        }
    }
    async fn modify_plan(&self, _: &Context<()>, req: PlanRequest<'_>, planned: &mut Value, _: &mut Diagnostics) {
        // A provider bug at plan time (see a_panic_is_a_diagnostic_and_the_provider_keeps_serving).
        assert!(
            req.config.get("big").as_str() != Some("panic-at-plan"),
            "probe bug at plan time"
        );
        if !req.config.get("number").is_unknown() {
            planned.set("echo_number", req.config.get("number").clone());
        }
    }
    async fn read(&self, _: &Context<()>, state: &Value, _: &mut Diagnostics) -> Option<Value> {
        Some(state.clone())
    }
    async fn create(&self, ctx: &Context<()>, planned: &Value, _: &mut Diagnostics) -> Option<Value> {
        if planned.get("slow").as_bool() == Some(true) {
            // Only StopProvider ends this.
            std::future::pending::<()>().await;
        }
        let _ = &ctx.stop;
        if planned.get("big").as_str() == Some("panic-at-apply") {
            let index: usize = "12".parse().unwrap();
            let _ = &"é"[..index.min(1)]; // a char-boundary slice: a typical bug
        }
        let mut state = planned.clone();
        state.set("id", "probe".into());
        Some(state)
    }
    async fn update(&self, _: &Context<()>, _: &Value, planned: &Value, _: &mut Diagnostics) -> Option<Value> {
        Some(planned.clone())
    }
    async fn delete(&self, _: &Context<()>, _: &Value, _: &mut Diagnostics) {}
    async fn import(&self, _: &Context<()>, id: &str, _: &mut Diagnostics) -> Option<Value> {
        Some(Value::object([("id", Value::from(id))]))
    }
    fn upgrade(&self, from: i64, mut state: Value, diags: &mut Diagnostics) -> Option<Value> {
        if from != 0 {
            diags.error("no", "unknown version");
            return None;
        }
        // Version 0 stored the number as a string attribute "legacy_number".
        let legacy = state
            .get("legacy_number")
            .as_str()
            .map(|s| locality::tfplugin::Number::parse(s).unwrap());
        if let Value::Object(m) = &mut state {
            m.remove("legacy_number");
        }
        state.set("number", legacy.map_or(Value::Null, Value::Number));
        Some(state)
    }
}

async fn start_server() -> (SocketAddr, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(serve_plaintext(ProbeProvider, listener, stop.clone()));
    (addr, stop)
}

async fn client(addr: SocketAddr) -> ProviderClient<Channel> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    ProviderClient::new(channel)
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20)
}

fn probe_type() -> Type {
    Probe.schema().block.value_type()
}

fn dv(value: &Value) -> Option<pb::DynamicValue> {
    Some(pb::DynamicValue {
        msgpack: encode_msgpack(value, &probe_type()),
        json: Vec::new(),
    })
}

fn reattach(addr: SocketAddr) -> String {
    serde_json::json!({
        "registry.terraform.io/locality/locality": {
            "Protocol": "grpc", "ProtocolVersion": 6, "Pid": std::process::id(), "Test": true,
            "Addr": {"Network": "tcp", "String": addr.to_string()}
        }
    })
    .to_string()
}

const CONFIG: &str = r#"
resource "locality_probe" "p" {
  number   = 0.1
  numbers  = [12345678901234567890, 1.5, -7, 300, 1e30]
  anything = { a = 1, b = ["x", "y"] }
  big      = "ok"
  secret   = "s3cr3t"
  settings = [{ key = "k", value = 0.25 }]
  single_nested = { x = "y" }
  map_nested    = { first = { x = "1" } }
  one {
    name = "single"
  }
  many {
    name = "a"
  }
  many {
    name = "b"
  }
  bag {
    name = "s"
  }
  labeled "l1" {
    name = "m"
  }
  grp {
    name = "g"
  }
}

output "echo"    { value = locality_probe.p.echo_number }
output "numbers" { value = jsonencode(locality_probe.p.numbers) }
output "anything" { value = jsonencode(locality_probe.p.anything) }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_round_trips_every_value_and_schema_shape() {
    let (addr, _stop) = start_server().await;
    let mut tf = common::Terraform::with_empty_cli_config();
    tf.env("TF_REATTACH_PROVIDERS", &reattach(addr));
    tf.write("main.tf", &format!("{}{CONFIG}", common::PREAMBLE));
    let tf = tokio::task::spawn_blocking(move || {
        tf.ok(&["validate"]);
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(tf.output("echo"), "0.1");
        assert_eq!(
            tf.output("numbers"),
            "[12345678901234567890,1.5,-7,300,1000000000000000000000000000000]"
        );
        assert_eq!(tf.output("anything"), r#"{"a":1,"b":["x","y"]}"#);
        tf.assert_no_changes();
        tf.write(
            "main.tf",
            &format!(
                "{}{}",
                common::PREAMBLE,
                CONFIG.replace("number   = 0.1", "number   = 0.30000000000000000001")
            ),
        );
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(plan.contains("0.1 -> 0.30000000000000000001"), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(tf.output("echo"), "0.30000000000000000001");
        tf.assert_no_changes();
        tf
    })
    .await
    .unwrap();
    drop(tf);
}

/// A panic inside an RPC is an error diagnostic on that RPC, never "Request cancelled", and the
/// same provider process serves the next plan and apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_a_diagnostic_and_the_provider_keeps_serving() {
    let (addr, _stop) = start_server().await;
    let mut tf = common::Terraform::with_empty_cli_config();
    tf.env("TF_REATTACH_PROVIDERS", &reattach(addr));
    let config = |big: &str| {
        format!(
            "{}resource \"locality_probe\" \"p\" {{\n  big = \"{big}\"\n}}\n",
            common::PREAMBLE
        )
    };
    tokio::task::spawn_blocking(move || {
        for (big, rpc) in [
            ("panic-at-plan", "plan_resource_change"),
            ("panic-at-apply", "apply_resource_change"),
        ] {
            tf.write("main.tf", &config(big));
            let out = tf.fails(&["apply", "-auto-approve"]);
            let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                out.contains("Internal error in the provider")
                    && out.contains(&format!("internal error in the provider during {rpc}"))
                    && out.contains("please report it with TF_LOG=debug output")
                    && !out.contains("Request cancelled")
                    && !out.contains("connection"),
                "{out}"
            );
            if big == "panic-at-plan" {
                assert!(out.contains("probe bug at plan time"), "{out}");
            } else {
                assert!(out.contains("byte index 1 is not a char boundary"), "{out}");
            }
        }
        // The same process still serves: a plan, an apply, an empty plan.
        tf.write("main.tf", &config("fine"));
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn stop_provider_cancels_in_flight_work() {
    let (addr, _stop) = start_server().await;
    let mut c = client(addr).await;
    c.configure_provider(pb::configure_provider::Request {
        config: None,
        ..Default::default()
    })
    .await
    .unwrap();
    let planned = Probe
        .schema()
        .block
        .conform(&Value::object([("slow", Value::Bool(true)), ("id", Value::Unknown)]));
    let mut apply_client = c.clone();
    let apply = tokio::spawn(async move {
        apply_client
            .apply_resource_change(pb::apply_resource_change::Request {
                type_name: "locality_probe".into(),
                prior_state: dv(&Value::Null),
                planned_state: dv(&planned),
                config: dv(&planned),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!apply.is_finished(), "the apply is in flight");
    c.stop_provider(pb::stop_provider::Request {}).await.unwrap();
    let response = tokio::time::timeout(Duration::from_secs(5), apply)
        .await
        .expect("apply returns after StopProvider")
        .unwrap();
    let diag = &response.diagnostics[0];
    assert_eq!(diag.severity, pb::diagnostic::Severity::Error as i32);
    assert_eq!(diag.summary, "Operation cancelled");
    // Nothing was created, so nothing is tracked.
    assert!(decode_msgpack(&response.new_state.unwrap().msgpack, &probe_type())
        .unwrap()
        .is_null());
}

#[tokio::test]
async fn upgrade_resource_state_fills_new_attributes_and_runs_version_upgrades() {
    let (addr, _stop) = start_server().await;
    let mut c = client(addr).await;
    let upgrade = |version: i64, json: &str| pb::upgrade_resource_state::Request {
        type_name: "locality_probe".into(),
        version,
        raw_state: Some(pb::RawState {
            json: json.as_bytes().to_vec(),
            flatmap: Default::default(),
        }),
    };

    // Same version, attributes and blocks missing (as after a provider update adding them).
    let r = c
        .upgrade_resource_state(upgrade(1, "{\n  \"id\": \"x\",\n  \"number\": 12345678901234567890\n}"))
        .await
        .unwrap()
        .into_inner();
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    let state = decode_msgpack(&r.upgraded_state.unwrap().msgpack, &probe_type()).unwrap();
    assert_eq!(
        state.get("number").as_number().unwrap().as_str(),
        "12345678901234567890"
    );
    assert_eq!(
        state.get("many"),
        &Value::List(vec![]),
        "list blocks are empty, never null"
    );
    assert!(state.get("grp").entries().is_some(), "group blocks are never null");
    assert!(state.get("one").is_null());

    // Version 0 → 1 runs the resource's upgrade.
    let r = c
        .upgrade_resource_state(upgrade(0, r#"{"id":"x","legacy_number":"0.1"}"#))
        .await
        .unwrap()
        .into_inner();
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    let state = decode_msgpack(&r.upgraded_state.unwrap().msgpack, &probe_type()).unwrap();
    assert_eq!(state.get("number").as_number().unwrap().as_str(), "0.1");

    // A newer state than this provider knows is an error diagnostic, not a crash.
    let r = c.upgrade_resource_state(upgrade(2, "{}")).await.unwrap().into_inner();
    assert_eq!(r.diagnostics[0].severity, pb::diagnostic::Severity::Error as i32);
    assert!(r.diagnostics[0].detail.contains("newer version"));
}

#[tokio::test]
async fn plans_pass_private_state_and_unknown_types_are_diagnostics() {
    let (addr, _stop) = start_server().await;
    let mut c = client(addr).await;
    c.configure_provider(pb::configure_provider::Request::default())
        .await
        .unwrap();
    let config = Probe
        .schema()
        .block
        .conform(&Value::object([("big", Value::from("v"))]));
    let r = c
        .plan_resource_change(pb::plan_resource_change::Request {
            type_name: "locality_probe".into(),
            prior_state: dv(&Value::Null),
            proposed_new_state: dv(&config),
            config: dv(&config),
            prior_private: b"opaque-private".to_vec(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.planned_private, b"opaque-private");
    let planned = decode_msgpack(&r.planned_state.unwrap().msgpack, &probe_type()).unwrap();
    assert!(
        planned.get("id").is_unknown(),
        "computed attributes are unknown on create"
    );

    let r = c
        .validate_resource_config(pb::validate_resource_config::Request {
            type_name: "locality_nope".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.diagnostics[0].severity, pb::diagnostic::Severity::Error as i32);
    assert!(
        r.diagnostics[0].detail.contains("locality_probe"),
        "lists the real types"
    );
}

/// The server declares `get_provider_schema_optional`, so Terraform fetches the schema from one
/// process per command and reuses it: every call must work in a process that never answered
/// GetProviderSchema.
#[tokio::test]
async fn a_process_that_never_sent_its_schema_serves_every_call() {
    let (addr, _stop) = start_server().await;
    let mut c = client(addr).await;
    let ok = |diags: &[pb::Diagnostic]| assert!(diags.is_empty(), "{diags:?}");
    ok(&c
        .validate_provider_config(pb::validate_provider_config::Request {
            // The provider's schema is an empty block.
            config: Some(pb::DynamicValue {
                msgpack: encode_msgpack(
                    &Value::Object(Default::default()),
                    &Type::object(Vec::<(String, Type)>::new()),
                ),
                json: Vec::new(),
            }),
        })
        .await
        .unwrap()
        .into_inner()
        .diagnostics);
    ok(&c
        .configure_provider(pb::configure_provider::Request::default())
        .await
        .unwrap()
        .into_inner()
        .diagnostics);
    let config = Probe
        .schema()
        .block
        .conform(&Value::object([("number", Value::from(7i64))]));
    ok(&c
        .validate_resource_config(pb::validate_resource_config::Request {
            type_name: "locality_probe".into(),
            config: dv(&config),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .diagnostics);
    let plan = c
        .plan_resource_change(pb::plan_resource_change::Request {
            type_name: "locality_probe".into(),
            prior_state: dv(&Value::Null),
            proposed_new_state: dv(&config),
            config: dv(&config),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    ok(&plan.diagnostics);
    let applied = c
        .apply_resource_change(pb::apply_resource_change::Request {
            type_name: "locality_probe".into(),
            prior_state: dv(&Value::Null),
            planned_state: plan.planned_state,
            config: dv(&config),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    ok(&applied.diagnostics);
    let state = decode_msgpack(&applied.new_state.clone().unwrap().msgpack, &probe_type()).unwrap();
    assert_eq!(state.get("id").as_str(), Some("probe"));
    assert_eq!(state.get("echo_number").as_number().unwrap().as_str(), "7");
    let read = c
        .read_resource(pb::read_resource::Request {
            type_name: "locality_probe".into(),
            current_state: applied.new_state,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    ok(&read.diagnostics);
    assert_eq!(
        decode_msgpack(&read.new_state.unwrap().msgpack, &probe_type()).unwrap(),
        state
    );

    // And it says so in the schema it does send.
    let schema = client(addr)
        .await
        .get_provider_schema(pb::get_provider_schema::Request {})
        .await
        .unwrap()
        .into_inner();
    assert!(schema.server_capabilities.unwrap().get_provider_schema_optional);
}

#[tokio::test]
async fn messages_over_four_mebibytes_are_accepted() {
    let (addr, _stop) = start_server().await;
    let mut c = client(addr).await;
    let config = Probe
        .schema()
        .block
        .conform(&Value::object([("big", Value::from("x".repeat(6 << 20)))]));
    let r = c
        .validate_resource_config(pb::validate_resource_config::Request {
            type_name: "locality_probe".into(),
            config: dv(&config),
            ..Default::default()
        })
        .await
        .expect("a 6 MiB config is within the raised limit")
        .into_inner();
    assert!(r.diagnostics.is_empty());
}

#[tokio::test]
async fn schema_encoding_follows_terraform_rules() {
    let (addr, _stop) = start_server().await;
    let mut c = client(addr).await;
    let schema = c
        .get_provider_schema(pb::get_provider_schema::Request {})
        .await
        .unwrap()
        .into_inner();
    let probe = &schema.resource_schemas["locality_probe"];
    assert_eq!(probe.version, 1);
    let block = probe.block.as_ref().unwrap();
    let settings = block.attributes.iter().find(|a| a.name == "settings").unwrap();
    assert!(settings.r#type.is_empty(), "nested attributes have no `type`");
    assert_eq!(
        settings.nested_type.as_ref().unwrap().nesting,
        pb::schema::object::NestingMode::List as i32
    );
    let numbers = block.attributes.iter().find(|a| a.name == "numbers").unwrap();
    assert_eq!(numbers.r#type, br#"["list","number"]"#);
    assert!(block.attributes.iter().find(|a| a.name == "secret").unwrap().sensitive);
    assert!(block.attributes.iter().find(|a| a.name == "old").unwrap().deprecated);
    let modes: Vec<i32> = block.block_types.iter().map(|b| b.nesting).collect();
    use pb::schema::nested_block::NestingMode as M;
    assert_eq!(
        modes,
        [
            M::Single as i32,
            M::List as i32,
            M::Set as i32,
            M::Map as i32,
            M::Group as i32
        ]
    );
    assert!(schema.provider.is_some());
}

/// Issue 11: malformed values that reach the server come back as an error diagnostic in an OK
/// response, for every RPC that decodes one: the reserved msgpack marker, a number that would
/// expand to 100,001 digits, trailing bytes, and JSON that is not the schema's shape.
#[tokio::test]
async fn malformed_values_are_diagnostics_in_ok_responses() {
    let (addr, _stop) = start_server().await;
    let mut c = client(addr).await;
    c.configure_provider(pb::configure_provider::Request::default())
        .await
        .unwrap();
    // {"number": "1e100000"}: fixmap(1), fixstr "number", fixstr "1e100000".
    let mut huge = vec![0x81, 0xa6];
    huge.extend(b"number");
    huge.push(0xa8);
    huge.extend(b"1e100000");
    for bytes in [vec![0xc1], huge, vec![0xc0, 0xc0]] {
        let value = Some(pb::DynamicValue {
            msgpack: bytes.clone(),
            json: Vec::new(),
        });
        let r = c
            .validate_resource_config(pb::validate_resource_config::Request {
                type_name: "locality_probe".into(),
                config: value.clone(),
                ..Default::default()
            })
            .await
            .expect("an OK response")
            .into_inner();
        assert_eq!(r.diagnostics.len(), 1, "{bytes:x?}");
        assert_eq!(r.diagnostics[0].severity, pb::diagnostic::Severity::Error as i32);
        let r = c
            .plan_resource_change(pb::plan_resource_change::Request {
                type_name: "locality_probe".into(),
                prior_state: value.clone(),
                proposed_new_state: value.clone(),
                config: value.clone(),
                ..Default::default()
            })
            .await
            .expect("an OK response")
            .into_inner();
        assert!(r.planned_state.is_none() && !r.diagnostics.is_empty(), "{bytes:x?}");
        let r = c
            .read_resource(pb::read_resource::Request {
                type_name: "locality_probe".into(),
                current_state: value,
                ..Default::default()
            })
            .await
            .expect("an OK response")
            .into_inner();
        assert!(!r.diagnostics.is_empty(), "{bytes:x?}");
    }
    let r = c
        .upgrade_resource_state(pb::upgrade_resource_state::Request {
            type_name: "locality_probe".into(),
            version: 1,
            raw_state: Some(pb::RawState {
                json: br#"{"number": "1e100000", "numbers": {"not": "a list"}}"#.to_vec(),
                flatmap: Default::default(),
            }),
        })
        .await
        .expect("an OK response")
        .into_inner();
    assert!(r.upgraded_state.is_none() && !r.diagnostics.is_empty());
}
