//! The replica map's format, `schema/replica-map.v1.schema.json`, checked with a real JSON
//! Schema validator (draft 2020-12): `locality resolve` (the `locality-resolve` parser) accepts
//! exactly the documents the schema allows — compared on hand-picked edge cases and on tens of
//! thousands of generated endpoints, zone keys and document shapes — and every document the
//! provider writes, to each target (file, SSM, Secrets Manager, one key of a shared secret)
//! with each combination of `zone_ids` and `spread_replicas`, is valid.

mod common;

use serde_json::{json, Value};

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schema/replica-map.v1.schema.json"
    ))
    .unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

/// Whether the schema and the parser agree on `text`; returns the verdict.
#[track_caller]
fn agree(validator: &jsonschema::Validator, text: &str) -> bool {
    let by_schema = serde_json::from_str::<Value>(text).is_ok_and(|v| validator.is_valid(&v));
    let by_parser = locality_resolve::ReplicaMap::parse(text);
    assert_eq!(
        by_schema,
        by_parser.is_ok(),
        "schema says {by_schema}, parser says {by_parser:?} for {text}"
    );
    by_schema
}

fn with_fallback(endpoint: &str) -> String {
    json!({"version": 1, "fallback": endpoint}).to_string()
}

const EDGE_ENDPOINTS: &[&str] = &[
    "reader.example:6379",
    "a:1",
    "a:65535",
    "a:65536",
    "a:0",
    "a:06379",
    "a:",
    ":6379",
    "a",
    "a:b",
    "127.0.0.1:6379",
    "0.0.0.0:1",
    "255.255.255.255:1",
    "256.1.1.1:1",
    "01.2.3.4:1",
    "1.2.3:1",
    "1.2.3.4.:1",
    "1.2.3.4.5:1",
    "1.2.3.4a:1",
    "a.b.c.:1",
    ".:1",
    "a..b:1",
    "-a:1",
    "a-:1",
    "a_b:1",
    "_srv.example:1",
    "A-Z.Example.COM:1",
    "xn--bcher-kva.example:1",
    "[::1]:6379",
    "[::]:1",
    "::1:6379",
    "[2001:db8::1]:6379",
    "[2001:DB8::1]:1",
    "[1:2:3:4:5:6:7:8]:1",
    "[1:2:3:4:5:6:7:8:9]:1",
    "[1:2:3:4:5:6:7::]:1",
    "[::2:3:4:5:6:7:8]:1",
    "[1::3:4:5:6:7:8]:1",
    "[::ffff:1.2.3.4]:1",
    "[::ffff:1.2.3.256]:1",
    "[64:ff9b::192.0.2.33]:1",
    "[1:2:3:4:5:6:1.2.3.4]:1",
    "[1:2:3:4:5:6:7:1.2.3.4]:1",
    "[1::2::3]:1",
    "[12345::]:1",
    "[fe80::1%eth0]:1",
    "[1.2.3.4]:1",
    "[a]:1",
    "[]:1",
    "[::1]",
    "[::1]:0",
    "[00000::1]:1",
    "[0001::1]:1",
    "[::01.2.3.4]:1",
    "é.example:1",
    "a b:1",
    "a:1 ",
    " a:1",
    "a:+1",
    "a:1e3",
];

#[test]
fn the_parser_accepts_exactly_what_the_schema_allows() {
    let v = validator();
    // Endpoints, as the fallback, a zone's entry and a replica.
    let long_label = format!("{}.example:1", "a".repeat(63));
    let too_long_label = format!("{}.example:1", "a".repeat(64));
    let long_name = format!("{}a:1", "a.".repeat(126)); // 253 characters
    let too_long_name = format!("{}aa:1", "a.".repeat(126)); // 254
    let long_name_dot = format!("{}a.:1", "a.".repeat(126));
    let mut endpoints: Vec<String> = EDGE_ENDPOINTS.iter().map(|s| s.to_string()).collect();
    endpoints.extend([long_label, too_long_label, long_name, too_long_name, long_name_dot]);
    // Generated: random strings over the characters that matter, and structured IPv6 forms.
    let mut rng = fastrand::Rng::with_seed(0x10ca1);
    let alphabet: Vec<char> = "0123456789abfAF:.[]-_x%".chars().collect();
    for _ in 0..20_000 {
        let len = rng.usize(1..18);
        endpoints.push((0..len).map(|_| alphabet[rng.usize(..alphabet.len())]).collect());
    }
    for _ in 0..10_000 {
        let groups = rng.usize(0..9);
        let group = |rng: &mut fastrand::Rng| match rng.u8(..20) {
            0 => format!("{:x}", rng.u32(0x1_0000..0x10_0000)),
            1 => format!("0{:04x}", rng.u16(..)),
            _ => format!("{:x}", rng.u16(..)),
        };
        let mut parts: Vec<String> = (0..groups).map(|_| group(&mut rng)).collect();
        if rng.u8(..4) == 0 && !parts.is_empty() {
            let at = if rng.bool() {
                parts.len() - 1
            } else {
                rng.usize(..parts.len())
            };
            parts[at] = format!("{}.{}.{}.{}", rng.u16(0..270), rng.u8(..), rng.u8(..), rng.u8(..));
        }
        if rng.bool() {
            let at = rng.usize(..=parts.len());
            parts.insert(at, String::new());
            if at == 0 || at == parts.len() - 1 {
                parts.insert(at, String::new());
            }
        }
        let port = [0u32, 1, 6379, 65535, 65536, 7][rng.usize(..6)];
        endpoints.push(format!("[{}]:{port}", parts.join(":")));
    }
    // Generated host names and IPv4 addresses, mostly valid.
    let label_chars: Vec<char> = "abcz09AZ-_".chars().collect();
    for _ in 0..5_000 {
        let labels = rng.usize(1..5);
        let host: Vec<String> = (0..labels)
            .map(|_| {
                let len = if rng.u8(..50) == 0 { 64 } else { rng.usize(1..8) };
                (0..len).map(|_| label_chars[rng.usize(..label_chars.len())]).collect()
            })
            .collect();
        let dot = if rng.u8(..10) == 0 { "." } else { "" };
        endpoints.push(format!("{}{dot}:{}", host.join("."), rng.u32(0..70_000)));
        let octet = |rng: &mut fastrand::Rng| {
            if rng.u8(..20) == 0 {
                format!("0{}", rng.u8(..))
            } else {
                rng.u16(0..260).to_string()
            }
        };
        let ip: Vec<String> = (0..4).map(|_| octet(&mut rng)).collect();
        endpoints.push(format!("{}:{}", ip.join("."), rng.u32(0..70_000)));
    }
    let mut valid = 0;
    for endpoint in &endpoints {
        valid += usize::from(agree(&v, &with_fallback(endpoint)));
        agree(
            &v,
            &json!({"version": 1, "fallback": "r:1", "zones": {"ap-northeast-1a": endpoint}}).to_string(),
        );
        agree(
            &v,
            &json!({"version": 1, "fallback": "r:1", "replicas": {"apne1-az4": ["r:1", endpoint]}}).to_string(),
        );
    }
    // Not vacuous: thousands on each side.
    assert!(
        valid > 2_000 && endpoints.len() - valid > 2_000,
        "{valid} of {}",
        endpoints.len()
    );
    assert!(!agree(&v, &with_fallback("a:06379")) && agree(&v, &with_fallback("[::ffff:1.2.3.4]:1")));
    // Zone keys: names, IDs, and things that are neither.
    let mut keys: Vec<String> = [
        "ap-northeast-1a",
        "us-east-1a",
        "us-west-2-lax-1a",
        "us-east-1-wl1-bos-wlz-1",
        "apne1-az4",
        "use1-az1",
        "usw2-lax1-az1",
        "use1-wl1-bos-wlz1",
        "ap-northeast-1",
        "ap-northeast-a",
        "AP-northeast-1a",
        "a-1-b",
        "apne-az4",
        "a1-az4",
        "apne1-az",
        "apne1-az4a",
        "ap--1a",
        "",
        "-",
        "ap-northeast-1a-",
        "x".repeat(65).as_str(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let pieces = [
        "ap",
        "us",
        "apne1",
        "use1",
        "az4",
        "wlz1",
        "wlz",
        "1a",
        "1",
        "lax",
        "2",
        "a",
        "northeast",
        "AZ1",
        "9z",
    ];
    for _ in 0..5_000 {
        let n = rng.usize(1..6);
        keys.push(
            (0..n)
                .map(|_| pieces[rng.usize(..pieces.len())])
                .collect::<Vec<_>>()
                .join("-"),
        );
    }
    let regions = [
        "ap-northeast-1",
        "us-east-1",
        "eu-west-3",
        "us-west-2-lax-1",
        "us-east-1-wl1-bos-wlz",
    ];
    let codes = ["apne1", "use1", "euw3", "usw2-lax1", "use1-wl1-bos"];
    for _ in 0..1_000 {
        let i = rng.usize(..regions.len());
        keys.push(format!(
            "{}{}",
            regions[i],
            ["a", "b", "-1", "1", "", "z"][rng.usize(..6)]
        ));
        keys.push(format!(
            "{}-{}{}",
            codes[i],
            ["az", "wlz", "AZ", "a"][rng.usize(..4)],
            rng.u8(..12)
        ));
    }
    let mut valid_keys = 0;
    for key in &keys {
        for field in ["zones", "zone_ids"] {
            valid_keys += usize::from(agree(
                &v,
                &json!({"version": 1, "fallback": "r:1", field: {key.as_str(): "a:1"}}).to_string(),
            ));
        }
        agree(
            &v,
            &json!({"version": 1, "fallback": "r:1", "replicas": {key.as_str(): ["a:1"]}}).to_string(),
        );
    }
    assert!(
        valid_keys > 300 && keys.len() * 2 - valid_keys > 300,
        "{valid_keys} of {}",
        keys.len() * 2
    );
    // Shapes.
    for text in [
        "{}",
        "[]",
        "null",
        "1",
        "\"x\"",
        "<html>",
        r#"{"version":1}"#,
        r#"{"fallback":"r:1"}"#,
        r#"{"version":2,"fallback":"r:1"}"#,
        r#"{"version":"1","fallback":"r:1"}"#,
        r#"{"version":1.0,"fallback":"r:1"}"#,
        r#"{"version":1e0,"fallback":"r:1"}"#,
        r#"{"version":1.5,"fallback":"r:1"}"#,
        r#"{"version":true,"fallback":"r:1"}"#,
        r#"{"version":1,"fallback":null}"#,
        r#"{"version":1,"fallback":1}"#,
        r#"{"version":1,"fallback":"r:1","zones":null}"#,
        r#"{"version":1,"fallback":"r:1","zones":[]}"#,
        r#"{"version":1,"fallback":"r:1","zones":{}}"#,
        r#"{"version":1,"fallback":"r:1","zones":{"ap-northeast-1a":null}}"#,
        r#"{"version":1,"fallback":"r:1","zones":{"ap-northeast-1a":1}}"#,
        r#"{"version":1,"fallback":"r:1","replicas":{"apne1-az4":[]}}"#,
        r#"{"version":1,"fallback":"r:1","replicas":{"apne1-az4":"a:1"}}"#,
        r#"{"version":1,"fallback":"r:1","replicas":{"apne1-az4":[1]}}"#,
        r#"{"version":1,"fallback":"r:1","replicas":{}}"#,
        r#"{"version":1,"fallback":"r:1","later":{"anything":[1,2]}}"#,
        r#"{"version":1,"fallback":"r:1","zone_ids":"x"}"#,
    ] {
        agree(&v, text);
    }
}

/// Every document the provider writes, through the real terraform and moto: four targets ×
/// (`zone_ids` on/off) × (`spread_replicas` on/off), in one apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_document_the_provider_writes_is_valid() {
    let moto = common::moto::Moto::start();
    let config = moto.config().await;
    let secrets = aws_sdk_secretsmanager::Client::new(&config);
    let ssm = aws_sdk_ssm::Client::new(&config);
    for variant in 0..4 {
        secrets
            .create_secret()
            .name(format!("map-{variant}"))
            .secret_string("{}")
            .send()
            .await
            .unwrap();
    }
    secrets
        .create_secret()
        .name("shared")
        .secret_string(r#"{"db_password":"x"}"#)
        .send()
        .await
        .unwrap();
    let mut tf = common::Terraform::dev_overrides();
    for (k, v) in common::moto::ENV {
        tf.env(k, v);
    }
    tf.env("AWS_ENDPOINT_URL", &moto.endpoint);
    let mut main = format!("{}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{}\"\n  }}\n}}\n", common::PREAMBLE, moto.endpoint);
    for variant in 0..4 {
        let zone_ids = variant & 1 == 1;
        let spread = variant & 2 == 2;
        for target in ["file", "ssm", "secret", "key"] {
            let publish = match target {
                "file" => format!("  file {{\n    path = \"map-{variant}.json\"\n  }}\n"),
                "ssm" => format!("  ssm_parameter {{\n    name = \"/maps/{variant}\"\n  }}\n"),
                "secret" => format!("  secretsmanager {{\n    secret_id = \"map-{variant}\"\n  }}\n"),
                _ => format!(
                    "  secretsmanager {{\n    secret_id = \"shared\"\n    key       = \"map_{variant}\"\n  }}\n"
                ),
            };
            main.push_str(&format!(
                "\nresource \"locality_zone_replica_map\" \"{target}_{variant}\" {{\n  fallback_endpoint = \"reader.example:6379\"\n{}{}\
                 \n  member {{\n    endpoint = \"node-001.example:6379\"\n    zone     = \"ap-northeast-1a\"\n    role     = \"primary\"\n  }}\n\
                 \n  member {{\n    endpoint = \"node-002.example:6379\"\n    zone     = \"ap-northeast-1c\"\n  }}\n\
                 \n  member {{\n    endpoint = \"[2001:db8::3]:6380\"\n    zone     = \"ap-northeast-1c\"\n  }}\n\n{publish}}}\n",
                if zone_ids { "  zone_ids = {\n    \"ap-northeast-1a\" = \"apne1-az4\"\n    \"ap-northeast-1c\" = \"apne1-az1\"\n  }\n" } else { "" },
                if spread { "  spread_replicas = true\n" } else { "" },
            ));
        }
    }
    tf.write("main.tf", &main);
    let tf = tokio::task::spawn_blocking(move || {
        tf.ok(&["apply", "-auto-approve", "-parallelism=1"]);
        tf
    })
    .await
    .unwrap();
    let v = validator();
    let shared: Value = serde_json::from_str(
        &secrets
            .get_secret_value()
            .secret_id("shared")
            .send()
            .await
            .unwrap()
            .secret_string
            .unwrap(),
    )
    .unwrap();
    assert_eq!(shared["db_password"], "x", "the shared secret's other key is kept");
    let mut checked = 0;
    for variant in 0..4 {
        let documents = [
            tf.read(&format!("map-{variant}.json")).unwrap(),
            ssm.get_parameter()
                .name(format!("/maps/{variant}"))
                .send()
                .await
                .unwrap()
                .parameter
                .unwrap()
                .value
                .unwrap(),
            secrets
                .get_secret_value()
                .secret_id(format!("map-{variant}"))
                .send()
                .await
                .unwrap()
                .secret_string
                .unwrap(),
            shared[format!("map_{variant}")].to_string(),
        ];
        for document in documents {
            let value: Value = serde_json::from_str(&document).unwrap();
            let errors: Vec<String> = v.iter_errors(&value).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{document}: {errors:?}");
            assert!(locality_resolve::ReplicaMap::parse(&document).is_ok(), "{document}");
            assert_eq!(value.get("zone_ids").is_some(), variant & 1 == 1, "{document}");
            assert_eq!(value.get("replicas").is_some(), variant & 2 == 2, "{document}");
            checked += 1;
        }
    }
    assert_eq!(checked, 16);
}

/// Issue 44: `nodes` and `configuration_endpoint`, as the schema and the parser both read them.
#[test]
fn nodes_and_the_configuration_endpoint_agree_with_the_schema() {
    let v = validator();
    let node = |extra: Value| {
        let mut n = json!({"endpoint": "a.example:6379", "role": "replica", "zone": "ap-northeast-1a"});
        for (k, x) in extra.as_object().unwrap() {
            n[k] = x.clone();
        }
        n
    };
    let doc = |nodes: Value, configuration: Option<&str>| {
        let mut d = json!({"version": 1, "fallback": "r.example:6379", "nodes": nodes});
        if let Some(c) = configuration {
            d["configuration_endpoint"] = c.into();
        }
        d.to_string()
    };
    let accepted = [
        doc(json!([]), None),
        doc(json!([node(json!({}))]), None),
        doc(
            json!([node(json!({"zone_id": "apne1-az4", "shard": "0001"}))]),
            Some("cfg.example:6379"),
        ),
        doc(json!([node(json!({"role": "primary", "unknown": 1}))]), None),
        // The replication group a topology was discovered from (informative).
        doc(json!([node(json!({}))]), None).replacen('{', r#"{"replication_group_id":"sessions","#, 1),
    ];
    for text in accepted {
        assert!(agree(&v, &text), "{text}");
    }
    let refused = [
        doc(json!({}), None),
        doc(json!([1]), None),
        doc(json!([node(json!({"role": "writer"}))]), None),
        doc(json!([node(json!({"zone": "apne1-az4"}))]), None),
        doc(json!([node(json!({"zone_id": "ap-northeast-1a"}))]), None),
        doc(json!([node(json!({"endpoint": "a:0"}))]), None),
        doc(json!([node(json!({"shard": ""}))]), None),
        doc(json!([node(json!({"shard": "a b"}))]), None),
        doc(
            json!([json!({"endpoint": "a.example:6379", "zone": "ap-northeast-1a"})]),
            None,
        ),
        doc(json!([]), Some("not an endpoint")),
    ];
    for text in refused {
        assert!(!agree(&v, &text), "{text}");
    }
}
