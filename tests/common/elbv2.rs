//! moto's Elastic Load Balancing v2 behind the layer that makes it answer as AWS does
//! (`tests/fixtures/elbv2_as_aws.py`: no OIDC secret in Describe, ModifyRule refused on a
//! default rule, weights over 999 and a sixth group refused, a plain forward described with its
//! ForwardConfig, NLB ARNs with `net`), on 127.0.0.1, plus the load balancers the tests shift.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aws_sdk_elasticloadbalancingv2::types::{
    Action, ActionTypeEnum, AuthenticateOidcActionConfig, FixedResponseActionConfig, ForwardActionConfig,
    LoadBalancerTypeEnum, ProtocolEnum, RuleCondition, TargetGroupStickinessConfig, TargetGroupTuple,
};
use aws_sdk_elasticloadbalancingv2::Client;

/// The OIDC client secret the fixture's listener is created with (AWS never returns it).
pub const OIDC_SECRET: &str = "oidc-secret-never-returned";

pub struct Elbv2 {
    pub endpoint: String,
    child: Child,
}

impl Drop for Elbv2 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fixture's load balancers: ARNs by role.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The ALB listener: OIDC login (order 1), then forward web-blue 90 / web-green 10 / web-canary 0 with
    /// stickiness 300 s (order 2).
    pub listener: String,
    /// Its default rule (as DescribeRules names it).
    pub default_rule: String,
    /// Rule 10 (`/api/*`): forward web-blue 100 / web-canary 0.
    pub api_rule: String,
    /// Rule 20 (`/static/*`): a plain forward to web-canary (one TargetGroupArn).
    pub static_rule: String,
    /// Rule 30 (`/down/*`): a fixed response, no forward.
    pub fixed_rule: String,
    /// The NLB listener: forward edge-blue 100 / edge-green 0.
    pub nlb_listener: String,
    /// A second ALB whose listener answers a fixed response.
    pub fixed_listener: String,
    /// Target group ARNs by name.
    pub groups: std::collections::BTreeMap<String, String>,
    /// The ALB's ARN (it has a listener on port 80).
    pub alb: String,
    /// The VPC of every target group.
    pub vpc_id: String,
}

impl Elbv2 {
    pub fn start() -> Elbv2 {
        let server = std::env::var("LOCALITY_MOTO_SERVER")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target/moto-venv/bin/moto_server").to_string());
        let python = std::path::Path::new(&server).with_file_name("python");
        assert!(
            python.exists(),
            "moto's python not found at {}: run scripts/test",
            python.display()
        );
        let port = super::server_port();
        let mut child = Command::new(&python)
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/elbv2_as_aws.py"))
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "the ELBv2 layer did not start"
            );
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the ELBv2 layer on port {port} exited before it listened: {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Elbv2 {
            endpoint: format!("http://127.0.0.1:{port}"),
            child,
        }
    }

    pub async fn config(&self) -> aws_config::SdkConfig {
        aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("ap-northeast-1"))
            .endpoint_url(&self.endpoint)
            .credentials_provider(aws_sdk_ssm::config::Credentials::new(
                "testing", "testing", None, None, "tests",
            ))
            .load()
            .await
    }

    pub async fn client(&self) -> Client {
        Client::new(&self.config().await)
    }

    /// The stored OIDC secrets by listener or rule ARN (moto's own memory, through the layer).
    pub fn oidc_secrets(&self) -> serde_json::Value {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(self.endpoint.trim_start_matches("http://")).unwrap();
        s.write_all(b"GET /_aws_layer/oidc-secrets HTTP/1.0\r\n\r\n").unwrap();
        let mut response = String::new();
        s.read_to_string(&mut response).unwrap();
        serde_json::from_str(response.split("\r\n\r\n").nth(1).unwrap()).unwrap()
    }

    /// Builds the fixture's VPC, load balancers, target groups, listeners and rules.
    pub async fn fixture(&self) -> Fixture {
        let config = self.config().await;
        let ec2 = aws_sdk_ec2::Client::new(&config);
        let elb = Client::new(&config);
        let vpc = ec2
            .create_vpc()
            .cidr_block("10.0.0.0/16")
            .send()
            .await
            .unwrap()
            .vpc
            .unwrap()
            .vpc_id
            .unwrap();
        let mut subnets = Vec::new();
        for (cidr, az) in [("10.0.1.0/24", "ap-northeast-1a"), ("10.0.2.0/24", "ap-northeast-1c")] {
            let out = ec2
                .create_subnet()
                .vpc_id(&vpc)
                .cidr_block(cidr)
                .availability_zone(az)
                .send()
                .await
                .unwrap();
            subnets.push(out.subnet.unwrap().subnet_id.unwrap());
        }
        let lb = |name: &'static str, kind: LoadBalancerTypeEnum| {
            let (elb, subnets) = (elb.clone(), subnets.clone());
            async move {
                elb.create_load_balancer()
                    .name(name)
                    .r#type(kind)
                    .set_subnets(Some(subnets))
                    .send()
                    .await
                    .unwrap()
                    .load_balancers()[0]
                    .load_balancer_arn()
                    .unwrap()
                    .to_string()
            }
        };
        let alb = lb("web", LoadBalancerTypeEnum::Application).await;
        let nlb = lb("edge", LoadBalancerTypeEnum::Network).await;
        let other = lb("maintenance", LoadBalancerTypeEnum::Application).await;
        let mut groups = std::collections::BTreeMap::new();
        for (name, protocol) in [
            ("web-blue", ProtocolEnum::Http),
            ("web-green", ProtocolEnum::Http),
            ("web-canary", ProtocolEnum::Http),
            ("edge-blue", ProtocolEnum::Tcp),
            ("edge-green", ProtocolEnum::Tcp),
        ] {
            let arn = elb
                .create_target_group()
                .name(name)
                .protocol(protocol)
                .port(80)
                .vpc_id(&vpc)
                .send()
                .await
                .unwrap()
                .target_groups()[0]
                .target_group_arn()
                .unwrap()
                .to_string();
            groups.insert(name.to_string(), arn);
        }
        let forward = |weights: &[(&str, i32)], sticky: Option<i32>| {
            let mut config = ForwardActionConfig::builder();
            for (name, weight) in weights {
                config = config.target_groups(
                    TargetGroupTuple::builder()
                        .target_group_arn(&groups[*name])
                        .weight(*weight)
                        .build(),
                );
            }
            if let Some(duration) = sticky {
                config = config.target_group_stickiness_config(
                    TargetGroupStickinessConfig::builder()
                        .enabled(true)
                        .duration_seconds(duration)
                        .build(),
                );
            }
            Action::builder()
                .r#type(ActionTypeEnum::Forward)
                .forward_config(config.build())
        };
        let oidc = Action::builder()
            .r#type(ActionTypeEnum::AuthenticateOidc)
            .order(1)
            .authenticate_oidc_config(
                AuthenticateOidcActionConfig::builder()
                    .issuer("https://idp.example")
                    .authorization_endpoint("https://idp.example/authorize")
                    .token_endpoint("https://idp.example/token")
                    .user_info_endpoint("https://idp.example/userinfo")
                    .client_id("web")
                    .client_secret(OIDC_SECRET)
                    .build(),
            )
            .build();
        let listener = elb
            .create_listener()
            .load_balancer_arn(&alb)
            .protocol(ProtocolEnum::Http)
            .port(80)
            .default_actions(oidc)
            .default_actions(
                forward(&[("web-blue", 90), ("web-green", 10), ("web-canary", 0)], Some(300))
                    .order(2)
                    .build(),
            )
            .send()
            .await
            .unwrap()
            .listeners()[0]
            .listener_arn()
            .unwrap()
            .to_string();
        let rule = |priority: i32, path: &'static str, action: Action| {
            let (elb, listener) = (elb.clone(), listener.clone());
            async move {
                elb.create_rule()
                    .listener_arn(listener)
                    .priority(priority)
                    .conditions(RuleCondition::builder().field("path-pattern").values(path).build())
                    .actions(action)
                    .send()
                    .await
                    .unwrap()
                    .rules()[0]
                    .rule_arn()
                    .unwrap()
                    .to_string()
            }
        };
        let api_rule = rule(
            10,
            "/api/*",
            forward(&[("web-blue", 100), ("web-canary", 0)], None).build(),
        )
        .await;
        let static_rule = rule(
            20,
            "/static/*",
            Action::builder()
                .r#type(ActionTypeEnum::Forward)
                .target_group_arn(&groups["web-canary"])
                .build(),
        )
        .await;
        let fixed = || {
            Action::builder()
                .r#type(ActionTypeEnum::FixedResponse)
                .fixed_response_config(
                    FixedResponseActionConfig::builder()
                        .status_code("503")
                        .content_type("text/plain")
                        .message_body("down for maintenance")
                        .build(),
                )
                .build()
        };
        let fixed_rule = rule(30, "/down/*", fixed()).await;
        let default_rule = elb
            .describe_rules()
            .listener_arn(&listener)
            .send()
            .await
            .unwrap()
            .rules()
            .iter()
            .find(|r| r.is_default() == Some(true))
            .unwrap()
            .rule_arn()
            .unwrap()
            .to_string();
        let nlb_listener = elb
            .create_listener()
            .load_balancer_arn(&nlb)
            .protocol(ProtocolEnum::Tcp)
            .port(443)
            .default_actions(forward(&[("edge-blue", 100), ("edge-green", 0)], None).build())
            .send()
            .await
            .unwrap()
            .listeners()[0]
            .listener_arn()
            .unwrap()
            .to_string();
        let fixed_listener = elb
            .create_listener()
            .load_balancer_arn(&other)
            .protocol(ProtocolEnum::Http)
            .port(80)
            .default_actions(fixed())
            .send()
            .await
            .unwrap()
            .listeners()[0]
            .listener_arn()
            .unwrap()
            .to_string();
        Fixture {
            listener,
            default_rule,
            api_rule,
            static_rule,
            fixed_rule,
            nlb_listener,
            fixed_listener,
            groups,
            alb,
            vpc_id: vpc,
        }
    }
}

/// A listener's or rule's actions, as AWS describes them.
pub async fn actions(elb: &Client, arn: &str) -> Vec<Action> {
    if arn.contains(":listener-rule/") {
        elb.describe_rules().rule_arns(arn).send().await.unwrap().rules()[0]
            .actions()
            .to_vec()
    } else {
        elb.describe_listeners()
            .listener_arns(arn)
            .send()
            .await
            .unwrap()
            .listeners()[0]
            .default_actions()
            .to_vec()
    }
}

/// The forward's weights by target group name, in the action's order.
pub async fn weights(elb: &Client, arn: &str) -> Vec<(String, i32)> {
    actions(elb, arn)
        .await
        .iter()
        .filter_map(|a| a.forward_config())
        .flat_map(|f| f.target_groups())
        .map(|t| {
            let arn = t.target_group_arn().unwrap();
            (arn.split('/').nth(1).unwrap().to_string(), t.weight().unwrap_or(1))
        })
        .collect()
}

impl Elbv2 {
    /// Plays another writer: right after the next successful ModifyListener/ModifyRule, sets
    /// these weights (by group name) on `arn`'s forward action.
    pub fn after_next_write(&self, arn: &str, weights: &[(&str, i32)]) {
        use std::io::{Read, Write};
        let body = serde_json::json!({ arn: weights.iter().map(|(n, w)| (n.to_string(), *w)).collect::<std::collections::BTreeMap<_, _>>() }).to_string();
        let mut s = std::net::TcpStream::connect(self.endpoint.trim_start_matches("http://")).unwrap();
        s.write_all(
            format!(
                "POST /_aws_layer/after-next-write HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
        let mut response = String::new();
        s.read_to_string(&mut response).unwrap();
        assert!(
            response.starts_with("HTTP/1.0 204") || response.starts_with("HTTP/1.1 204"),
            "{response}"
        );
    }
}
