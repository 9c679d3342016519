//! `locality_lb_forward_weights` (issue 63) driven by the real terraform CLI (1.11) against
//! moto's Elastic Load Balancing v2 behind the layer that answers as AWS does
//! (tests/common/elbv2.rs), with a fault proxy in front that counts every call.
//!
//! The truth is what the load balancer holds afterwards, read back through the SDK: the
//! forward's weights, every other action with its Order, the OIDC secret in moto's own memory,
//! the stickiness, the rule's priority and conditions.

mod common;

use common::elbv2::{self, Elbv2, Fixture, OIDC_SECRET};
use common::fault_proxy::FaultProxy;
use common::{Terraform, PREAMBLE};

fn provider(endpoint: &str, region: &str) -> String {
    format!("{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"{region}\"\n    endpoint_url = \"{endpoint}\"\n  }}\n}}\n")
}

fn resource(name: &str, attribute: &str, arn: &str, weights: &str) -> String {
    format!("\nresource \"locality_lb_forward_weights\" \"{name}\" {{\n  {attribute} = \"{arn}\"\n  weights = {{\n{weights}\n  }}\n}}\n")
}

fn tf() -> Terraform {
    let mut tf = Terraform::dev_overrides();
    for (k, v) in common::moto::ENV {
        tf.env(k, v);
    }
    tf
}

fn flat(out: &str) -> String {
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The ELBv2 calls made since the last look, by action.
fn calls(proxy: &FaultProxy) -> Vec<String> {
    let mut s = proxy.state.lock().unwrap();
    std::mem::take(&mut s.actions)
}

fn count(calls: &[String], prefix: &str) -> usize {
    calls.iter().filter(|a| a.starts_with(prefix)).count()
}

struct Lab {
    elb: aws_sdk_elasticloadbalancingv2::Client,
    fixture: Fixture,
    runtime: tokio::runtime::Handle,
}

impl Lab {
    fn weights(&self, arn: &str) -> Vec<(String, i32)> {
        self.runtime.block_on(elbv2::weights(&self.elb, arn))
    }

    fn actions(&self, arn: &str) -> Vec<aws_sdk_elasticloadbalancingv2::types::Action> {
        self.runtime.block_on(elbv2::actions(&self.elb, arn))
    }

    fn w(pairs: &[(&str, i32)]) -> Vec<(String, i32)> {
        pairs.iter().map(|(n, w)| (n.to_string(), *w)).collect()
    }

    /// Someone else moves the listener's weights (the console, CodeDeploy): the whole list,
    /// the OIDC action re-sent with the existing secret.
    fn move_listener(&self, weights: &[(&str, i32)]) {
        use aws_sdk_elasticloadbalancingv2::types::{ForwardActionConfig, TargetGroupTuple};
        let mut actions = self.actions(&self.fixture.listener);
        for action in &mut actions {
            if let Some(oidc) = action.authenticate_oidc_config.as_mut() {
                oidc.use_existing_client_secret = Some(true);
            }
            if let Some(forward) = action.forward_config.as_mut() {
                let groups = weights
                    .iter()
                    .map(|(n, w)| {
                        TargetGroupTuple::builder()
                            .target_group_arn(&self.fixture.groups[*n])
                            .weight(*w)
                            .build()
                    })
                    .collect();
                *forward = ForwardActionConfig::builder()
                    .set_target_groups(Some(groups))
                    .set_target_group_stickiness_config(forward.target_group_stickiness_config.clone())
                    .build();
            }
        }
        self.runtime
            .block_on(
                self.elb
                    .modify_listener()
                    .listener_arn(&self.fixture.listener)
                    .set_default_actions(Some(actions))
                    .send(),
            )
            .unwrap();
    }
}

/// The whole life of the resource on an ALB listener, a rule, a plain forward, an NLB and a
/// listener's default rule: the weights change and nothing else does; drift shows naming the
/// groups; another writer after ours is reported; import; destroy leaves the load balancer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weights_change_and_nothing_else_does() {
    let aws = Elbv2::start();
    let fixture = aws.fixture().await;
    let proxy = FaultProxy::start(&aws.endpoint).await;
    let elb = aws.client().await;
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let lab = Lab { elb, fixture, runtime };
        let f = &lab.fixture;
        let before_listener = lab.actions(&f.listener);
        let rules_before = lab
            .runtime
            .block_on(lab.elb.describe_rules().listener_arn(&f.listener).send())
            .unwrap();
        let tf = tf();
        let green_arn = &f.groups["web-green"];
        // Keys by name and by ARN; web-canary not listed (it keeps its live 0).
        let config = |listener: &str, api: &str| {
            format!(
                "{}{}{}{}{}",
                provider(&proxy.endpoint(), "ap-northeast-1"),
                resource("web", "listener_arn", &f.listener, listener),
                resource("api", "rule_arn", &f.api_rule, api),
                resource("static", "rule_arn", &f.static_rule, "    \"web-canary\" = 5"),
                resource("edge", "listener_arn", &f.nlb_listener, "    \"edge-blue\" = 0\n    \"edge-green\" = 100"),
            )
        };
        tf.write(
            "main.tf",
            &config(
                &format!("    \"web-blue\" = 0\n    \"{green_arn}\" = 100"),
                "    \"web-blue\" = 20\n    \"web-canary\" = 80",
            ),
        );
        calls(&proxy);
        tf.ok(&["apply", "-auto-approve"]);
        let first = calls(&proxy);
        eprintln!("first apply (4 resources): {first:?}");
        assert_eq!(count(&first, "Modify"), 4, "{first:?}");

        assert_eq!(
            lab.weights(&f.listener),
            Lab::w(&[("web-blue", 0), ("web-green", 100), ("web-canary", 0)])
        );
        assert_eq!(lab.weights(&f.api_rule), Lab::w(&[("web-blue", 20), ("web-canary", 80)]));
        assert_eq!(lab.weights(&f.static_rule), Lab::w(&[("web-canary", 5)]));
        assert_eq!(lab.weights(&f.nlb_listener), Lab::w(&[("edge-blue", 0), ("edge-green", 100)]));
        // Nothing else changed: the OIDC login first with its secret kept (in moto's memory; AWS
        // never returns it), the Orders, the stickiness; the rules' priorities and conditions.
        let after = lab.actions(&f.listener);
        assert_eq!(after.len(), 2);
        assert_eq!(after[0].authenticate_oidc_config, before_listener[0].authenticate_oidc_config);
        assert_eq!((after[0].order, after[1].order), (Some(1), Some(2)));
        assert_eq!(
            after[1].forward_config.as_ref().unwrap().target_group_stickiness_config,
            before_listener[1].forward_config.as_ref().unwrap().target_group_stickiness_config
        );
        assert_eq!(aws.oidc_secrets()[&f.listener], OIDC_SECRET);
        let rules_after = lab
            .runtime
            .block_on(lab.elb.describe_rules().listener_arn(&f.listener).send())
            .unwrap();
        for (a, b) in rules_before.rules().iter().zip(rules_after.rules()) {
            assert_eq!((a.priority(), a.conditions()), (b.priority(), b.conditions()));
        }
        assert_eq!(
            lab.actions(&f.fixed_rule),
            lab.runtime.block_on(elbv2::actions(&lab.elb, &f.fixed_rule))
        );
        tf.assert_no_changes();

        // One shift: the requests it costs, counted at the proxy.
        tf.write(
            "main.tf",
            &config(
                &format!("    \"web-blue\" = 10\n    \"{green_arn}\" = 90"),
                "    \"web-blue\" = 20\n    \"web-canary\" = 80",
            ),
        );
        calls(&proxy);
        tf.ok(&["apply", "-auto-approve"]);
        let shift = calls(&proxy);
        let reads = count(&shift, "Describe");
        let writes = count(&shift, "Modify");
        eprintln!("one shift (terraform apply, 4 resources, 1 changed): {reads} reads, {writes} write: {shift:?}");
        assert_eq!(writes, 1, "{shift:?}");
        // Refresh reads each of the 4 once; plan reads the changed one (and Terraform plans it
        // again when it applies); apply reads, writes, reads.
        assert_eq!(reads, 4 + 2 + 2, "{shift:?}");
        assert_eq!(lab.weights(&f.listener)[..2], Lab::w(&[("web-blue", 10), ("web-green", 90)])[..]);

        // Drift: someone else moves the listener; the plan shows it, naming the groups.
        lab.move_listener(&[("web-blue", 50), ("web-green", 50), ("web-canary", 0)]);
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        let plan_flat = flat(&plan);
        assert!(
            plan_flat.contains("Live weights were changed outside this configuration")
                && plan_flat.contains("web-blue: live 50, configured 10")
                && plan_flat.contains("web-green: live 50, configured 90"),
            "{plan}"
        );
        assert!(plan_flat.contains("~ \"web-blue\" = 50 -> 10"), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(lab.weights(&f.listener)[..2], Lab::w(&[("web-blue", 10), ("web-green", 90)])[..]);
        tf.assert_no_changes();

        // Another writer lands right after our write: reported, and the state holds what is live,
        // so one more apply converges.
        tf.write(
            "main.tf",
            &config(
                &format!("    \"web-blue\" = 30\n    \"{green_arn}\" = 70"),
                "    \"web-blue\" = 20\n    \"web-canary\" = 80",
            ),
        );
        aws.after_next_write(&f.listener, &[("web-blue", 77)]);
        let out = tf.fails(&["apply", "-auto-approve"]);
        let out_flat = flat(&out);
        assert!(
            out_flat.contains("Changed by someone else")
                && out_flat.contains("its weights are now web-blue=77, web-canary=0, web-green=70, not web-blue=30, web-canary=0, web-green=70 as written"),
            "{out}"
        );
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        assert!(flat(&plan).contains("~ \"web-blue\" = 77 -> 30"), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();
        assert_eq!(lab.weights(&f.listener)[..2], Lab::w(&[("web-blue", 30), ("web-green", 70)])[..]);
        assert_eq!(aws.oidc_secrets()[&f.listener], OIDC_SECRET);

        // Import by the rule's ARN into a configuration that says the live weights: no change.
        let imported = tf_with(&proxy, &resource("api", "rule_arn", &f.api_rule, "    \"web-blue\" = 20\n    \"web-canary\" = 80"));
        let out = imported.ok(&["import", "locality_lb_forward_weights.api", &f.api_rule]);
        assert!(out.contains("Import successful"), "{out}");
        imported.assert_no_changes();

        // The default rule, addressed by its rule ARN, is written through ModifyListener (the
        // layer refuses ModifyRule on it, as AWS does). Destroy leaves everything as it is.
        let default = tf_with(&proxy, &resource("default", "rule_arn", &f.default_rule, "    \"web-blue\" = 1"));
        calls(&proxy);
        default.ok(&["apply", "-auto-approve"]);
        let made = calls(&proxy);
        assert!(made.contains(&"ModifyListener".to_string()) && !made.contains(&"ModifyRule".to_string()), "{made:?}");
        assert_eq!(lab.weights(&f.listener)[..2], Lab::w(&[("web-blue", 1), ("web-green", 70)])[..]);
        assert_eq!(aws.oidc_secrets()[&f.listener], OIDC_SECRET);
        let out = default.ok(&["destroy", "-auto-approve"]);
        assert!(flat(&out).contains("Load balancer left as it is"), "{out}");
        tf.ok(&["destroy", "-auto-approve"]);
        assert_eq!(lab.weights(&f.listener)[..2], Lab::w(&[("web-blue", 1), ("web-green", 70)])[..]);
        assert_eq!(lab.weights(&f.nlb_listener), Lab::w(&[("edge-blue", 0), ("edge-green", 100)]));
        assert_eq!(count(&calls(&proxy), "Modify"), 0, "destroy writes nothing");
    })
    .await
    .unwrap();
}

fn tf_with(proxy: &FaultProxy, resources: &str) -> Terraform {
    let tf = tf();
    tf.write(
        "main.tf",
        &format!("{}{resources}", provider(&proxy.endpoint(), "ap-northeast-1")),
    );
    tf
}

/// Every refusal at plan names its attribute or key and says what is allowed; nothing is
/// written (the proxy sees no Modify, the weights are as they were).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_at_plan_and_nothing_is_written() {
    let aws = Elbv2::start();
    let fixture = aws.fixture().await;
    let proxy = FaultProxy::start(&aws.endpoint).await;
    let elb = aws.client().await;
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let lab = Lab { elb, fixture, runtime };
        let f = &lab.fixture;
        let before = lab.weights(&f.listener);
        let six: String = ["a", "b", "c", "d", "e", "f"]
            .iter()
            .map(|n| format!("    \"web-{n}\" = 1\n"))
            .collect();
        let cases: Vec<(String, String, Vec<&str>)> = vec![
            (
                "listener_arn".into(),
                "    \"web-blue\" = 1000".into(),
                vec!["\"web-blue\" = 1000 1000 is not a weight: use a whole number from 0 to 999"],
            ),
            (
                "listener_arn".into(),
                "    \"web-blue\" = 1.5".into(),
                vec!["1.5 is not a weight: use a whole number from 0 to 999"],
            ),
            (
                "listener_arn".into(),
                "    \"web-blue\" = -1".into(),
                vec!["-1 is not a weight"],
            ),
            (
                "listener_arn".into(),
                "    \"web-purple\" = 1".into(),
                vec![
                    "\"web-purple\" = 1 target group web-purple is not in the forward action (its groups: web-blue, web-green, web-canary)",
                ],
            ),
            (
                "listener_arn".into(),
                "    \"web-blue\" = 0\n    \"web-green\" = 0".into(),
                vec!["every target group of the forward action would be at 0 (web-blue, web-green, web-canary)"],
            ),
            (
                "listener_arn".into(),
                six,
                vec!["`weights` names 6 target groups; a forward action holds at most 5"],
            ),
            (
                "listener_arn".into(),
                "    \"web blue\" = 1".into(),
                vec!["\"web blue\" is neither a target group's name"],
            ),
        ];
        for (attribute, weights, said) in cases {
            let tf = tf_with(&proxy, &resource("web", &attribute, &f.listener, &weights));
            let out = flat(&tf.fails(&["plan"]));
            for s in said {
                assert!(out.contains(s), "{s:?} not in: {out}");
            }
        }
        // Targets that are not a listener or rule, a listener that does not forward, a region
        // that is not the provider's.
        let nlb_rule = f.nlb_listener.replace(":listener/", ":listener-rule/") + "/9683b2d02a6cabee";
        let targets: Vec<(&str, String, &str, Vec<String>)> = vec![
            (
                "listener_arn",
                f.api_rule.clone(),
                "ap-northeast-1",
                vec!["listener_arn".into(), "is not a listener ARN: give arn:aws:elasticloadbalancing:REGION:ACCOUNT:listener/app|net/".into()],
            ),
            (
                "rule_arn",
                nlb_rule,
                "ap-northeast-1",
                vec!["is not a listener rule ARN".into()],
            ),
            (
                "listener_arn",
                "arn:aws:s3:::web".into(),
                "ap-northeast-1",
                vec!["\"arn:aws:s3:::web\" is not a listener ARN".into()],
            ),
            (
                "listener_arn",
                f.fixed_listener.clone(),
                "ap-northeast-1",
                vec!["Not a forward action".into(), "its actions hold no forward action (fixed-response)".into()],
            ),
            (
                "rule_arn",
                f.fixed_rule.clone(),
                "ap-northeast-1",
                vec!["its actions hold no forward action (fixed-response)".into()],
            ),
            (
                "listener_arn",
                f.listener.clone(),
                "us-east-1",
                vec!["is in region ap-northeast-1, and the provider's aws.region is us-east-1".into()],
            ),
            (
                "listener_arn",
                f.listener.replace("/app/web/", "/app/gone/"),
                "ap-northeast-1",
                vec!["does not exist (in account 123456789012, region ap-northeast-1)".into()],
            ),
        ];
        for (attribute, arn, region, said) in targets {
            let tf = tf();
            tf.write(
                "main.tf",
                &format!(
                    "{}{}",
                    provider(&proxy.endpoint(), region),
                    resource("web", attribute, &arn, "    \"web-blue\" = 1")
                ),
            );
            let out = flat(&tf.fails(&["plan"]));
            for s in said {
                assert!(out.contains(&s), "{s:?} not in: {out}");
            }
        }
        let both = tf_with(
            &proxy,
            &format!(
                "\nresource \"locality_lb_forward_weights\" \"web\" {{\n  listener_arn = \"{}\"\n  rule_arn = \"{}\"\n  weights = {{ \"web-blue\" = 1 }}\n}}\n",
                f.listener, f.api_rule
            ),
        );
        assert!(flat(&both.fails(&["plan"])).contains("Set one of `listener_arn` and `rule_arn`, not both"));
        let made = calls(&proxy);
        assert_eq!(count(&made, "Modify"), 0, "{made:?}");
        assert_eq!(lab.weights(&f.listener), before);
    })
    .await
    .unwrap();
}

/// The example ARNs of examples/resources/locality_lb_forward_weights and
/// examples/actions/locality_shift_lb_weights, and the fixture's in their place: the only change
/// made to the documented snippets.
fn as_written(example: &str, f: &Fixture) -> String {
    const LISTENER: &str =
        "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2";
    const RULE: &str = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener-rule/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee";
    const NLB: &str =
        "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/net/edge/4d9e3b5a1c2f7e60/a1b2c3d4e5f60718";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(example);
    let text = std::fs::read_to_string(&path).unwrap();
    // Rules first: a rule's ARN begins like its listener's.
    text.replace(RULE, &f.api_rule)
        .replace(LISTENER, &f.listener)
        .replace(NLB, &f.nlb_listener)
}

/// The documented snippets as written, under Terraform 1.15: the resource example applied, the
/// action page's runbook (roll back, the warning, the configuration made to follow; a canary; a
/// drain in 3 steps 30 s apart), import by identity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_snippets_run_as_written_under_terraform_1_15() {
    let aws = Elbv2::start();
    let fixture = aws.fixture().await;
    let elb = aws.client().await;
    let runtime = tokio::runtime::Handle::current();
    let endpoint = aws.endpoint.clone();
    tokio::task::spawn_blocking(move || {
        let lab = Lab { elb, fixture, runtime };
        let f = &lab.fixture;
        let tf = || {
            let mut tf = tf().with_binary(&common::terraform_1_15());
            tf.env("CHECKPOINT_DISABLE", "1");
            tf
        };
        let dir = tf();
        let resources = as_written("resources/locality_lb_forward_weights/resource.tf", f);
        dir.write("provider.tf", &provider(&endpoint, "ap-northeast-1"));
        dir.write("resource.tf", &resources);
        dir.write("action.tf", &as_written("actions/locality_shift_lb_weights/action.tf", f));
        dir.ok(&["apply", "-auto-approve"]);
        assert_eq!(lab.weights(&f.listener), Lab::w(&[("web-blue", 0), ("web-green", 100), ("web-canary", 0)]));
        assert_eq!(lab.weights(&f.api_rule), Lab::w(&[("web-blue", 90), ("web-canary", 10)]));
        assert_eq!(lab.weights(&f.nlb_listener), Lab::w(&[("edge-blue", 100), ("edge-green", 0)]));

        // Roll back the canary with the action; the plan warns before reverting it.
        let out = dir.ok(&["apply", "-auto-approve", "-invoke=action.locality_shift_lb_weights.roll_back"]);
        assert!(flat(&out).contains("step 1/1 done: web-blue=100, web-canary=0"), "{out}");
        assert_eq!(lab.weights(&f.api_rule), Lab::w(&[("web-blue", 100), ("web-canary", 0)]));
        let (code, plan) = dir.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        let plan = flat(&plan);
        assert!(
            plan.contains("Live weights were changed outside this configuration")
                && plan.contains("web-blue: live 100, configured 90; web-canary: live 0, configured 10"),
            "{plan}"
        );
        // Step 3: the configuration follows; the plan is empty.
        let followed = resources.replace(
            "    \"web-blue\"   = 90\n    \"web-canary\" = 10",
            "    \"web-blue\"   = 100\n    \"web-canary\" = 0",
        );
        assert_ne!(followed, resources);
        dir.write("resource.tf", &followed);
        dir.assert_no_changes();

        // The canary again, then a drain of web-blue in 3 steps after someone moved it to 90/10.
        dir.ok(&["apply", "-auto-approve", "-invoke=action.locality_shift_lb_weights.canary_10"]);
        assert_eq!(lab.weights(&f.api_rule), Lab::w(&[("web-blue", 90), ("web-canary", 10)]));
        lab.move_listener(&[("web-blue", 90), ("web-green", 10), ("web-canary", 0)]);
        let started = std::time::Instant::now();
        let out = flat(&dir.ok(&["apply", "-auto-approve", "-invoke=action.locality_shift_lb_weights.drain_blue"]));
        for step in [
            "step 1/3 done: web-blue=60, web-green=40",
            "step 2/3 done: web-blue=30, web-green=70",
            "step 3/3 done: web-blue=0, web-green=100",
        ] {
            assert!(out.contains(step), "{step:?} not in {out}");
        }
        assert!(started.elapsed() >= std::time::Duration::from_secs(60), "two 30 s pauses");
        assert_eq!(lab.weights(&f.listener), Lab::w(&[("web-blue", 0), ("web-green", 100), ("web-canary", 0)]));
        assert_eq!(aws.oidc_secrets()[&f.listener], OIDC_SECRET);
        // A refused action writes nothing: a group the forward does not have.
        dir.write(
            "bad.tf",
            &format!(
                "action \"locality_shift_lb_weights\" \"bad\" {{\n  config {{\n    listener_arn = \"{}\"\n    weights = {{ \"web-purple\" = 1 }}\n  }}\n}}\n",
                f.listener
            ),
        );
        let out = flat(&dir.fails(&["apply", "-auto-approve", "-invoke=action.locality_shift_lb_weights.bad"]));
        assert!(out.contains("target group web-purple is not in the forward action"), "{out}");
        std::fs::remove_file(dir.path("bad.tf")).unwrap();

        // Import by identity, as the example writes it.
        let imported = tf();
        imported.write("provider.tf", &provider(&endpoint, "ap-northeast-1"));
        imported.write(
            "main.tf",
            &format!(
                "resource \"locality_lb_forward_weights\" \"web\" {{\n  listener_arn = \"{}\"\n  weights = {{\n    \"web-blue\"   = 0\n    \"web-green\"  = 100\n    \"web-canary\" = 0\n  }}\n}}\n",
                f.listener
            ),
        );
        imported.write(
            "import.tf",
            &as_written("resources/locality_lb_forward_weights/import-by-identity.tf", f),
        );
        let out = flat(&imported.ok(&["apply", "-auto-approve"]));
        assert!(out.contains("1 imported, 0 added, 0 changed, 0 destroyed"), "{out}");
        imported.assert_no_changes();
    })
    .await
    .unwrap();
}

/// The generator's promise (issue 63): a blue/green switch or a canary is one line of the spec,
/// regenerated, and one in-place update. The generated configuration is applied for real: the
/// target groups, the listener and its weighted forward are created in moto by a stand-in
/// hashicorp/aws (tests/common/aws_provider.rs, the schema subset the output is validated
/// against); `locality_lb_forward_weights` by this provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_line_of_the_spec_is_one_in_place_update() {
    let aws = Elbv2::start();
    let fixture = aws.fixture().await;
    let elb = aws.client().await;
    let reattach = common::aws_provider::start(Some(elb.clone())).await;
    let runtime = tokio::runtime::Handle::current();
    let endpoint = aws.endpoint.clone();
    tokio::task::spawn_blocking(move || {
        let lab = Lab { elb, fixture, runtime };
        let f = &lab.fixture;
        let mut tf = tf();
        tf.env("TF_REATTACH_PROVIDERS", &reattach);
        let spec = |active: &str| {
            format!(
                "forward \"shift\" {{\n  load_balancer_arn = \"{}\"\n  port              = 8080\n  protocol          = \"HTTP\"\n  vpc_id            = \"{}\"\n\n  target_group \"blue\" {{\n    port = 80\n  }}\n\n  target_group \"green\" {{\n    port = 80\n  }}\n\n  active = {active}\n\n  stickiness = \"5m\"\n\n  weights_owner = \"locality_lb_forward_weights\"\n}}\n",
                f.alb, f.vpc_id
            )
        };
        let gen = |tf: &Terraform| {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_locality"))
                .args(["gen", "shift.hcl", "-o", "shift.tf"])
                .current_dir(tf.dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        };
        tf.write("provider.tf", &provider(&endpoint, "ap-northeast-1"));
        tf.write("shift.hcl", &spec("[\"blue\"]"));
        gen(&tf);
        tf.ok(&["apply", "-auto-approve"]);
        let listener = {
            let out = lab
                .runtime
                .block_on(lab.elb.describe_listeners().load_balancer_arn(&f.alb).send())
                .unwrap();
            out.listeners()
                .iter()
                .find(|l| l.port() == Some(8080))
                .unwrap()
                .listener_arn()
                .unwrap()
                .to_string()
        };
        assert_eq!(lab.weights(&listener), Lab::w(&[("shift-blue", 100), ("shift-green", 0)]));
        tf.assert_no_changes();

        for (active, weights) in [
            ("[\"green\"]", [("shift-blue", 0), ("shift-green", 100)]),
            ("[\"blue\", \"green\"]", [("shift-blue", 50), ("shift-green", 50)]),
        ] {
            tf.write("shift.hcl", &spec(active));
            gen(&tf);
            let (code, plan) = tf.plan_exit_code();
            assert_eq!(code, 2, "{plan}");
            let plan = flat(&plan);
            assert!(
                plan.contains("Plan: 0 to add, 1 to change, 0 to destroy.")
                    && plan.contains("# locality_lb_forward_weights.shift will be updated in-place"),
                "{plan}"
            );
            tf.ok(&["apply", "-auto-approve"]);
            assert_eq!(lab.weights(&listener), Lab::w(&weights));
            // The stickiness the listener was created with is kept by every shift.
            let actions = lab.actions(&listener);
            let sticky = actions[0]
                .forward_config()
                .unwrap()
                .target_group_stickiness_config()
                .unwrap();
            assert_eq!((sticky.enabled(), sticky.duration_seconds()), (Some(true), Some(300)));
            tf.assert_no_changes();
        }
    })
    .await
    .unwrap();
}
