//! `locality_zone_replica_map` on AWS, against moto: topology discovered from ElastiCache,
//! published to Secrets Manager or SSM; a topology change shows as a plan diff naming the AZs;
//! out-of-band edits are drift; import and destroy for both targets; errors as diagnostics.

mod common;

use common::moto::{Moto, ENV};
use common::{Terraform, PREAMBLE};

const SECRET: &str = "prod/cache/replica-map";
const PARAM: &str = "/prod/cache/replica-map";

fn terraform(moto: &Moto) -> Terraform {
    let mut tf = Terraform::dev_overrides();
    for (k, v) in ENV {
        tf.env(k, v);
    }
    tf.env("AWS_ENDPOINT_URL", &moto.endpoint);
    tf
}

fn config(moto: &Moto, group: &str, target: &str) -> String {
    format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{}\"\n  }}\n}}\n\nresource \"locality_zone_replica_map\" \"cache\" {{\n  replication_group_id = \"{group}\"\n\n  {target}\n}}\n\noutput \"document\" {{\n  value     = locality_zone_replica_map.cache.document\n  sensitive = true\n}}\n",
        moto.endpoint
    )
}

fn secret_target() -> String {
    format!("secretsmanager {{\n    secret_id = \"{SECRET}\"\n  }}")
}

fn ssm_target() -> String {
    format!("ssm_parameter {{\n    name = \"{PARAM}\"\n  }}")
}

async fn secret_value(moto: &Moto) -> Option<String> {
    let client = aws_sdk_secretsmanager::Client::new(&moto.config().await);
    client
        .get_secret_value()
        .secret_id(SECRET)
        .send()
        .await
        .ok()
        .and_then(|o| o.secret_string().map(String::from))
}

async fn put_secret(moto: &Moto, value: &str, create: bool) {
    let client = aws_sdk_secretsmanager::Client::new(&moto.config().await);
    if create {
        client
            .create_secret()
            .name(SECRET)
            .secret_string(value)
            .send()
            .await
            .unwrap();
    } else {
        client
            .put_secret_value()
            .secret_id(SECRET)
            .secret_string(value)
            .send()
            .await
            .unwrap();
    }
}

async fn parameter(moto: &Moto) -> Option<(String, i64)> {
    let client = aws_sdk_ssm::Client::new(&moto.config().await);
    let out = client.get_parameter().name(PARAM).send().await.ok()?;
    let p = out.parameter()?;
    Some((p.value()?.to_string(), p.version()))
}

async fn primary(moto: &Moto) -> String {
    let c = aws_sdk_elasticache::Client::new(&moto.config().await);
    let out = c
        .describe_replication_groups()
        .replication_group_id("sessions")
        .send()
        .await
        .unwrap();
    let e = out.replication_groups()[0].node_groups()[0].primary_endpoint().unwrap();
    format!("{}:{}", e.address().unwrap(), e.port().unwrap())
}

/// Runs blocking terraform steps next to the async AWS checks.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_to_secrets_manager_shows_topology_changes_as_plan_diffs() {
    let moto = Moto::start();
    moto.create_group("sessions", &["ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"])
        .await;
    put_secret(&moto, "{}", true).await;
    let tf = std::sync::Arc::new(terraform(&moto));
    tf.write("main.tf", &config(&moto, "sessions", &secret_target()));

    let t = tf.clone();
    let first = blocking(move || {
        let out = t.ok(&["apply", "-auto-approve"]);
        assert!(
            out.contains("No reader endpoint"),
            "moto returns no ReaderEndpoint: the documented fallback applies with a warning:\n{out}"
        );
        t.assert_no_changes();
        t.output("document")
    })
    .await;
    assert_eq!(
        secret_value(&moto).await.as_deref(),
        Some(first.as_str()),
        "published as the secret's current version"
    );
    let doc: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(
        doc["zones"].as_object().unwrap().len(),
        2,
        "two replica AZs (the primary's AZ is uncovered): {first}"
    );

    // The topology changes (moto cannot move replicas: re-create the group elsewhere); the secret
    // still holds the old map.
    moto.reset();
    moto.create_group("sessions", &["ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1a"])
        .await;
    put_secret(&moto, &first, true).await;
    let t = tf.clone();
    let second = blocking(move || {
        let (code, plan) = t.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        // The AZ that lost its replica is named, and so is the one that gained one.
        assert!(plan.contains("- \"ap-northeast-1d\""), "{plan}");
        assert!(plan.contains("\"ap-northeast-1a\""), "{plan}");
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
        t.output("document")
    })
    .await;
    assert_ne!(second, first);
    // The fallback (the primary endpoint, as moto returns no reader endpoint) follows the new group.
    assert!(second.contains(&primary(&moto).await), "{second}");
    assert_eq!(secret_value(&moto).await.as_deref(), Some(second.as_str()));

    // An out-of-band edit of the secret is drift, and apply restores the map.
    put_secret(&moto, &second.replace("ap-northeast-1c", "ap-northeast-1b"), false).await;
    let t = tf.clone();
    blocking(move || {
        let (code, plan) = t.plan_exit_code();
        assert_eq!(code, 2);
        assert!(plan.contains("ap-northeast-1b"), "{plan}");
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
    })
    .await;
    assert_eq!(secret_value(&moto).await.as_deref(), Some(second.as_str()));

    // Import: the document names the replication group it was discovered from, so the import
    // reads back the configuration's topology source, and the plan is empty.
    let t = tf.clone();
    blocking(move || {
        t.ok(&["state", "rm", "locality_zone_replica_map.cache"]);
        t.ok(&[
            "import",
            "locality_zone_replica_map.cache",
            &format!("secretsmanager:{SECRET}"),
        ]);
        t.assert_no_changes();
        let show = t.ok(&["state", "show", "locality_zone_replica_map.cache"]);
        let flat = show.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("replication_group_id = \"sessions\""), "{show}");
        assert!(!show.contains("member {"), "{show}");
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
        // Destroy leaves the secret (its lifecycle is not ours), and says so.
        let out = t.ok(&["destroy", "-auto-approve"]);
        assert!(out.contains("keeps its last published replica map"), "{out}");
    })
    .await;
    assert_eq!(secret_value(&moto).await.as_deref(), Some(second.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssm_parameter_is_owned_drift_is_restored_and_destroy_deletes_it() {
    let moto = Moto::start();
    moto.create_group("sessions", &["ap-northeast-1a", "ap-northeast-1c"])
        .await;
    let tf = std::sync::Arc::new(terraform(&moto));
    tf.write("main.tf", &config(&moto, "sessions", &ssm_target()));
    let t = tf.clone();
    let doc = blocking(move || {
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
        t.output("document")
    })
    .await;
    assert_eq!(parameter(&moto).await, Some((doc.clone(), 1)));

    // Out-of-band overwrite → drift → restored as a new version.
    let client = aws_sdk_ssm::Client::new(&moto.config().await);
    client
        .put_parameter()
        .name(PARAM)
        .value("{\"version\":1}")
        .overwrite(true)
        .send()
        .await
        .unwrap();
    let t = tf.clone();
    blocking(move || {
        let (code, _) = t.plan_exit_code();
        assert_eq!(code, 2);
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
        let show = t.ok(&["state", "show", "locality_zone_replica_map.cache"]);
        assert!(show.contains("version              = \"3\""), "{show}");
        // import by ID, then destroy deletes the parameter it owns
        t.ok(&["state", "rm", "locality_zone_replica_map.cache"]);
        t.ok(&["import", "locality_zone_replica_map.cache", &format!("ssm:{PARAM}")]);
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
        t.ok(&["destroy", "-auto-approve"]);
    })
    .await;
    assert_eq!(parameter(&moto).await, None);

    // A parameter that already exists is not taken over: the error shows the import command.
    client
        .put_parameter()
        .name(PARAM)
        .value("someone else's")
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .unwrap();
    let t = tf.clone();
    blocking(move || {
        let out = t.fails(&["apply", "-auto-approve"]);
        assert!(
            out.contains("already exists")
                && out.contains(&format!("terraform import locality_zone_replica_map.NAME ssm:{PARAM}")),
            "{out}"
        );
    })
    .await;
    assert_eq!(parameter(&moto).await.unwrap().0, "someone else's");

    // Issue 11: one that already holds exactly the document (our own PutParameter, retried by
    // the SDK after its response was lost) is adopted, not refused.
    client
        .put_parameter()
        .name(PARAM)
        .value(&doc)
        .overwrite(true)
        .send()
        .await
        .unwrap();
    let t = tf.clone();
    blocking(move || {
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
    })
    .await;
    assert_eq!(parameter(&moto).await.unwrap().0, doc);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_group_missing_secret_and_unreachable_aws_are_diagnostics() {
    let moto = Moto::start();
    moto.create_group("sessions", &["ap-northeast-1a", "ap-northeast-1c"])
        .await;
    let tf = terraform(&moto);
    let flat = |s: String| s.split_whitespace().collect::<Vec<_>>().join(" ");
    blocking(move || {
        tf.write("main.tf", &config(&moto, "nonexistent", &secret_target()));
        let out = flat(tf.fails(&["plan"]));
        assert!(
            out.contains("Replication group not found") && out.contains("replication_group_id = \"nonexistent\""),
            "{out}"
        );

        tf.write("main.tf", &config(&moto, "sessions", &secret_target()));
        let out = flat(tf.fails(&["apply", "-auto-approve"]));
        assert!(out.contains("create the secret first"), "{out}");

        tf.write(
            "main.tf",
            &config(&moto, "sessions", &secret_target()).replace(&moto.endpoint, "http://127.0.0.1:9"),
        );
        let out = flat(tf.fails(&["plan"]));
        assert!(out.contains("Cannot describe the replication group"), "{out}");

        tf.write("main.tf", &config(&moto, "Bad--Group", &secret_target()));
        let out = flat(tf.fails(&["validate"]));
        assert!(out.contains("Invalid replication group ID"), "{out}");

        tf.write(
            "main.tf",
            &config(&moto, "sessions", &format!("{}\n  {}", secret_target(), ssm_target())),
        );
        let out = flat(tf.fails(&["validate"]));
        assert!(out.contains("More than one publish target"), "{out}");
        drop(moto);
    })
    .await;
}

/// `secretsmanager { key }`: the map as one key of a shared JSON secret. Other keys stay exactly
/// as they are (values, order); an out-of-band change of another key is no drift, of ours is;
/// `locality resolve` reads the key; import by `secretsmanager:<id>#<key>`; destroy removes only
/// the key; a secret that is not a JSON object is an error and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_map_under_one_key_of_a_shared_secret() {
    let moto = Moto::start();
    moto.create_group("sessions", &["ap-northeast-1a", "ap-northeast-1c"])
        .await;
    put_secret(&moto, r#"{"password":"s3cr3t","port":6379,"ratio":1.50}"#, true).await;
    let tf = std::sync::Arc::new(terraform(&moto));
    let target = format!("secretsmanager {{\n    secret_id = \"{SECRET}\"\n    key       = \"replica_map\"\n  }}");
    tf.write("main.tf", &config(&moto, "sessions", &target));
    let t = tf.clone();
    let document = blocking(move || {
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
        t.output("document")
    })
    .await;
    let value = secret_value(&moto).await.unwrap();
    assert_eq!(
        value,
        format!(r#"{{"password":"s3cr3t","port":6379,"ratio":1.50,"replica_map":{document}}}"#)
    );

    // Another key rotates: no drift. Our key is edited: drift, restored, the rotation kept.
    put_secret(&moto, &value.replace("s3cr3t", "rotated"), false).await;
    let t = tf.clone();
    blocking(move || t.assert_no_changes()).await;
    let doc: serde_json::Value = serde_json::from_str(&document).unwrap();
    let (zone, endpoint) = doc["zones"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .map(|(z, e)| (z.clone(), e.as_str().unwrap().to_string()))
        .unwrap();
    put_secret(
        &moto,
        &value
            .replace("s3cr3t", "rotated")
            .replace(&endpoint, "edited.example:6379"),
        false,
    )
    .await;
    let t = tf.clone();
    blocking(move || {
        let (code, plan) = t.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        assert!(plan.contains("edited.example:6379"), "{plan}");
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
    })
    .await;
    let value = secret_value(&moto).await.unwrap();
    assert!(
        value.starts_with(r#"{"password":"rotated","port":6379,"ratio":1.50,"replica_map":"#),
        "{value}"
    );
    assert!(
        value.contains(&endpoint) && !value.contains("edited.example"),
        "{value}"
    );

    // The application side reads the key.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_locality"));
    cmd.args([
        "resolve",
        "--map",
        &format!("secretsmanager:{SECRET}#replica_map"),
        "--zone",
        &zone,
    ])
    .env_clear()
    .env("AWS_ENDPOINT_URL", &moto.endpoint);
    for (k, v) in ENV {
        cmd.env(k, v);
    }
    let cache = tempfile::tempdir().unwrap();
    let out = cmd.arg("--cache-dir").arg(cache.path()).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        endpoint,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The sidecar's metrics name the secret's version it reads, and when it was made.
    let version = aws_sdk_secretsmanager::Client::new(&moto.config().await)
        .get_secret_value()
        .secret_id(SECRET)
        .send()
        .await
        .unwrap()
        .version_id
        .unwrap();
    let map = format!("secretsmanager:{SECRET}#replica_map");
    let run = cache.path().join("run");
    let text = tokio::task::block_in_place(|| common::moto::sidecar_metrics(&moto, &map, &run));
    assert!(
        text.contains(&format!("locality_sidecar_map{{version=\"{version}\",digest=\"")),
        "{text}"
    );
    common::moto::assert_modified_recently(&text);

    // Import by `secretsmanager:<id>#<key>`, then destroy: only the key goes.
    let t = tf.clone();
    blocking(move || {
        t.ok(&["state", "rm", "locality_zone_replica_map.cache"]);
        t.ok(&[
            "import",
            "locality_zone_replica_map.cache",
            &format!("secretsmanager:{SECRET}#replica_map"),
        ]);
        // The import reads the topology source back from the document: nothing to change.
        t.assert_no_changes();
        t.ok(&["apply", "-auto-approve"]);
    })
    .await;
    let after_import = secret_value(&moto).await.unwrap();
    assert_eq!(after_import, value, "an apply after import writes no new version");
    let t = tf.clone();
    blocking(move || {
        t.ok(&["destroy", "-auto-approve"]);
    })
    .await;
    assert_eq!(
        secret_value(&moto).await.as_deref(),
        Some(r#"{"password":"rotated","port":6379,"ratio":1.50}"#)
    );

    // A secret that is not a JSON object: an error, and nothing written.
    put_secret(&moto, "plain-password", false).await;
    let t = tf.clone();
    blocking(move || {
        let out = t
            .fails(&["apply", "-auto-approve"])
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            out.contains("is not a JSON object") && out.contains("nothing was written"),
            "{out}"
        );
    })
    .await;
    assert_eq!(secret_value(&moto).await.as_deref(), Some("plain-password"));
}

/// A secret that holds another application's keys is never replaced whole: publishing to it
/// without `key` (created, or imported to be applied) is an error naming the other keys (never
/// their values) and pointing at `key`, and the secret keeps its value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_shared_with_other_keys_is_not_replaced_whole() {
    const SHARED: &str = r#"{"db_password":"hunter2-value","port":6379}"#;
    let moto = Moto::start();
    moto.create_group("sessions", &["ap-northeast-1a", "ap-northeast-1c"])
        .await;
    put_secret(&moto, SHARED, true).await;
    let tf = std::sync::Arc::new(terraform(&moto));
    tf.write("main.tf", &config(&moto, "sessions", &secret_target()));
    let t = tf.clone();
    blocking(move || {
        let refused = |out: String| {
            let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                out.contains("Secret shared with other keys")
                    && out.contains(r#"other keys ("db_password", "port")"#)
                    && out.contains("Set `key` in the `secretsmanager` block"),
                "{out}"
            );
            assert!(!out.contains("hunter2"), "a value reached the output: {out}");
        };
        refused(t.fails(&["apply", "-auto-approve"]));
        // Import reads the secret: refused too, so the other keys' values never reach state.
        refused(t.fails(&[
            "import",
            "locality_zone_replica_map.cache",
            &format!("secretsmanager:{SECRET}"),
        ]));
        assert!(
            t.read("terraform.tfstate")
                .is_none_or(|state| !state.contains("hunter2")),
            "a value reached the state"
        );
    })
    .await;
    assert_eq!(secret_value(&moto).await.as_deref(), Some(SHARED));
}

/// Issue 43, item 8: a secret that holds something other than a replica map — a database URL
/// as plain text, a JSON array — is never replaced by the map. Before the fix, create replaced
/// the plain text (only a JSON object with other keys was refused). Apply and import are both
/// refused, the error says what the secret holds (never the value) and points at `key`, and the
/// secret keeps its value; an empty one (`{}`) is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_holding_anything_but_a_map_is_never_replaced() {
    const DATABASE_URL: &str = "postgres://app:DB-PASSWORD-MARKER@db.internal:5432/app";
    let moto = Moto::start();
    moto.create_group("sessions", &["ap-northeast-1a", "ap-northeast-1c"])
        .await;
    put_secret(&moto, DATABASE_URL, true).await;
    let tf = std::sync::Arc::new(terraform(&moto));
    tf.write("main.tf", &config(&moto, "sessions", &secret_target()));
    let refused = |out: String, what: &str| {
        let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            out.contains("Secret does not hold a replica map")
                && out.contains(&format!("holds {what}, which is not a replica map"))
                && out.contains("nothing was written")
                && out.contains("set `key` in the `secretsmanager` block"),
            "{out}"
        );
        assert!(
            !out.contains("DB-PASSWORD-MARKER") && !out.contains("db.internal"),
            "the value reached the output: {out}"
        );
    };
    let t = tf.clone();
    let characters = DATABASE_URL.chars().count();
    blocking(move || {
        let what = format!("plain text of {characters} characters");
        refused(t.fails(&["apply", "-auto-approve"]), &what);
        refused(
            t.fails(&[
                "import",
                "locality_zone_replica_map.cache",
                &format!("secretsmanager:{SECRET}"),
            ]),
            &what,
        );
        assert!(
            t.read("terraform.tfstate")
                .is_none_or(|state| !state.contains("DB-PASSWORD-MARKER")),
            "the value reached the state"
        );
    })
    .await;
    assert_eq!(secret_value(&moto).await.as_deref(), Some(DATABASE_URL));

    put_secret(&moto, r#"["a","b"]"#, false).await;
    let t = tf.clone();
    blocking(move || refused(t.fails(&["apply", "-auto-approve"]), "a JSON array of 2 elements")).await;
    assert_eq!(secret_value(&moto).await.as_deref(), Some(r#"["a","b"]"#));

    // Emptied (`{}`; Secrets Manager takes no empty string): taken, and the map is published.
    put_secret(&moto, "{}", false).await;
    let t = tf.clone();
    blocking(move || {
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
    })
    .await;
    assert!(secret_value(&moto).await.unwrap().contains("\"zones\""));
}

/// Ten maps under ten keys of one shared secret, written at Terraform's default parallelism
/// (10 at once), then destroyed at once: every apply succeeds, the secret ends with every key
/// (and the other key kept as it was), the next plan is empty, and the destroy leaves exactly
/// the other key. The provider writes one secret one change at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_maps_under_ten_keys_of_one_secret_at_default_parallelism() {
    let moto = Moto::start();
    moto.create_group("sessions", &["ap-northeast-1a", "ap-northeast-1c"])
        .await;
    put_secret(&moto, r#"{"db_password":"s3cr3t"}"#, true).await;
    let tf = std::sync::Arc::new(terraform(&moto));
    tf.write(
        "main.tf",
        &format!(
            "{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{}\"\n  }}\n}}\n\n\
             resource \"locality_zone_replica_map\" \"cache\" {{\n  for_each             = toset([for i in range(10) : \"map_${{i}}\"])\n  replication_group_id = \"sessions\"\n\n  \
             secretsmanager {{\n    secret_id = \"{SECRET}\"\n    key       = each.key\n  }}\n}}\n",
            moto.endpoint
        ),
    );
    let t = tf.clone();
    blocking(move || {
        let out = t.ok(&["apply", "-auto-approve"]);
        assert!(out.contains("10 added"), "{out}");
        t.assert_no_changes();
    })
    .await;
    let value: serde_json::Value = serde_json::from_str(&secret_value(&moto).await.unwrap()).unwrap();
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 11, "every map and the other key: {keys:?}");
    assert_eq!(value["db_password"], "s3cr3t");
    for i in 0..10 {
        assert!(value[format!("map_{i}")]["zones"].is_object(), "map_{i} in {keys:?}");
    }
    let t = tf.clone();
    blocking(move || {
        t.ok(&["destroy", "-auto-approve"]);
    })
    .await;
    assert_eq!(
        secret_value(&moto).await.as_deref(),
        Some(r#"{"db_password":"s3cr3t"}"#)
    );
}

/// Issue 27: an AWS answer that cannot be read (one badly typed field) is reported as the
/// operation, the resource and the cause — never with the response body, which here holds
/// another key's password of the shared secret — and neither trace logs nor state hold it.
/// (Before the fix the SDK's debug form, body included, was the Terraform error.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_aws_answer_never_shows_its_body() {
    use axum::response::IntoResponse;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let secret = serde_json::json!({"db_password": "DB-PASSWORD-MARKER", "replica_map": {"version": 1}}).to_string();
    let body = serde_json::json!({
        "ARN": "arn:aws:secretsmanager:ap-northeast-1:123456789012:secret:shared-AbCdEf",
        "Name": "shared",
        "SecretString": secret,
        "VersionId": "v1",
        "VersionStages": "AWSCURRENT",
        "CreatedDate": "yesterday"
    })
    .to_string();
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move { ([("content-type", "application/x-amz-json-1.1")], body).into_response() }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    blocking(move || {
        let mut tf = Terraform::dev_overrides();
        for (k, v) in ENV {
            tf.env(k, v);
        }
        tf.env("AWS_MAX_ATTEMPTS", "1");
        tf.write(
            "main.tf",
            &format!(
                "{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{endpoint}\"\n  }}\n}}\n\n\
                 resource \"locality_zone_replica_map\" \"cache\" {{\n  fallback_endpoint = \"reader.example:6379\"\n  member {{\n    endpoint = \"replica-a.example:6379\"\n    zone     = \"ap-northeast-1a\"\n  }}\n\n  \
                 secretsmanager {{\n    secret_id = \"shared\"\n    key       = \"replica_map\"\n  }}\n}}\n"
            ),
        );
        tf.env("TF_LOG", "trace");
        let run = tf.run(&["import", "locality_zone_replica_map.cache", "secretsmanager:shared#replica_map"]);
        assert_ne!(run.code, 0, "{}", run.all());
        let all = run.all();
        let flat = all.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("secretsmanager:GetSecretValue (AWSCURRENT) of secret \"shared\": the answer could not be read: ")
                && flat.contains("failed to parse JSON"),
            "{flat}"
        );
        assert!(!all.contains("DB-PASSWORD-MARKER"), "the body leaked:\n{all}");
        assert!(!tf.read("terraform.tfstate").unwrap_or_default().contains("DB-PASSWORD-MARKER"));
    })
    .await;
}

/// The parameter's tags, as ListTagsForResource gives them.
async fn parameter_tags(moto: &Moto) -> std::collections::BTreeMap<String, String> {
    let client = aws_sdk_ssm::Client::new(&moto.config().await);
    let out = client
        .list_tags_for_resource()
        .resource_type(aws_sdk_ssm::types::ResourceTypeForTagging::Parameter)
        .resource_id(PARAM)
        .send()
        .await
        .unwrap();
    out.tag_list()
        .iter()
        .map(|t| (t.key().to_string(), t.value().to_string()))
        .collect()
}

/// The parameter's type, KMS key and tier (DescribeParameters), and its decrypted value.
async fn parameter_kind(moto: &Moto) -> (String, Option<String>, String, String) {
    let client = aws_sdk_ssm::Client::new(&moto.config().await);
    let described = client
        .describe_parameters()
        .parameter_filters(
            aws_sdk_ssm::types::ParameterStringFilter::builder()
                .key("Name")
                .option("Equals")
                .values(PARAM)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let p = &described.parameters()[0];
    let value = client
        .get_parameter()
        .name(PARAM)
        .with_decryption(true)
        .send()
        .await
        .unwrap();
    (
        p.r#type().unwrap().as_str().to_string(),
        p.key_id().map(str::to_string),
        p.tier().map_or("Standard".to_string(), |t| t.as_str().to_string()),
        value.parameter().unwrap().value().unwrap().to_string(),
    )
}

/// Issue 29 item 4: `tags` merged over the provider's `default_tags` (tags win), drift on tags
/// shown and restored, a SecureString with a customer key and the Advanced tier read back
/// decrypted, a new key as a new version, the tier that SSM cannot take back refused at plan,
/// and `tags` on a target that creates nothing refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssm_tags_default_tags_secure_string_key_and_tier() {
    let moto = Moto::start();
    moto.create_group("sessions", &["ap-northeast-1a", "ap-northeast-1c"])
        .await;
    let tf = std::sync::Arc::new(terraform(&moto));
    let main = |tags: &str, ssm: &str| {
        format!(
            "{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{}\"\n    default_tags {{\n      tags = {{\n        team = \"cache\"\n        env  = \"prod\"\n      }}\n    }}\n  }}\n}}\n\nresource \"locality_zone_replica_map\" \"cache\" {{\n  replication_group_id = \"sessions\"\n  tags = {tags}\n\n  ssm_parameter {{\n    name = \"{PARAM}\"\n{ssm}\n  }}\n}}\n\noutput \"tags_all\" {{\n  value = locality_zone_replica_map.cache.tags_all\n}}\n\noutput \"document\" {{\n  value     = locality_zone_replica_map.cache.document\n  sensitive = true\n}}\n",
            moto.endpoint
        )
    };
    let secure = "    type   = \"SecureString\"\n    key_id = \"alias/locality-map\"\n    tier   = \"Advanced\"";
    tf.write(
        "main.tf",
        &main("{\n    env   = \"staging\"\n    owner = \"sre\"\n  }", secure),
    );
    let t = tf.clone();
    let (doc, tags_all) = blocking(move || {
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
        (t.output("document"), t.ok(&["output", "-json", "tags_all"]))
    })
    .await;
    let want: std::collections::BTreeMap<String, String> = [("env", "staging"), ("owner", "sre"), ("team", "cache")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(
        parameter_tags(&moto).await,
        want,
        "the resource's tags win over default_tags"
    );
    assert_eq!(
        serde_json::from_str::<std::collections::BTreeMap<String, String>>(&tags_all).unwrap(),
        want
    );
    let (kind, key, tier, value) = parameter_kind(&moto).await;
    assert_eq!(
        (kind.as_str(), key.as_deref(), tier.as_str()),
        ("SecureString", Some("alias/locality-map"), "Advanced")
    );
    assert_eq!(value, doc, "read back decrypted: the text applications read");

    // Drift on tags (one removed, one added, one changed outside Terraform) is shown, then undone.
    let client = aws_sdk_ssm::Client::new(&moto.config().await);
    let tag = |k: &str, v: &str| aws_sdk_ssm::types::Tag::builder().key(k).value(v).build().unwrap();
    client
        .remove_tags_from_resource()
        .resource_type(aws_sdk_ssm::types::ResourceTypeForTagging::Parameter)
        .resource_id(PARAM)
        .tag_keys("owner")
        .send()
        .await
        .unwrap();
    client
        .add_tags_to_resource()
        .resource_type(aws_sdk_ssm::types::ResourceTypeForTagging::Parameter)
        .resource_id(PARAM)
        .tags(tag("rogue", "x"))
        .tags(tag("team", "other"))
        .send()
        .await
        .unwrap();
    // And the decrypted value changed outside Terraform: drift too.
    client
        .put_parameter()
        .name(PARAM)
        .value("{\"version\":1}")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .key_id("alias/locality-map")
        .overwrite(true)
        .send()
        .await
        .unwrap();
    let t = tf.clone();
    blocking(move || {
        let (code, plan) = t.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        for shown in ["\"owner\"", "\"rogue\"", "\"team\""] {
            assert!(plan.contains(shown), "the plan names the drifted tag {shown}:\n{plan}");
        }
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
    })
    .await;
    assert_eq!(parameter_tags(&moto).await, want);
    assert_eq!(parameter_kind(&moto).await.3, doc);

    // Tags changed in the configuration: only the difference is sent.
    tf.write("main.tf", &main("{\n    env = \"staging\"\n  }", secure));
    let t = tf.clone();
    blocking(move || {
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
    })
    .await;
    let mut want_now = want.clone();
    want_now.remove("owner");
    assert_eq!(parameter_tags(&moto).await, want_now);

    // A new key is a new write (a new version), with the same text.
    let (_, before) = parameter(&moto).await.unwrap();
    let rekeyed = "    type   = \"SecureString\"\n    key_id = \"alias/locality-map-2\"\n    tier   = \"Advanced\"";
    tf.write("main.tf", &main("{\n    env = \"staging\"\n  }", rekeyed));
    let t = tf.clone();
    blocking(move || {
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
    })
    .await;
    let (_, after) = parameter(&moto).await.unwrap();
    assert!(after > before, "version {before} -> {after}");
    assert_eq!(parameter_kind(&moto).await.1.as_deref(), Some("alias/locality-map-2"));

    // Advanced → Standard: SSM cannot; the plan says so and what to do.
    let standard = "    type   = \"SecureString\"\n    key_id = \"alias/locality-map-2\"\n    tier   = \"Standard\"";
    tf.write("main.tf", &main("{\n    env = \"staging\"\n  }", standard));
    let t = tf.clone();
    blocking(move || {
        let out = t.fails(&["plan"]);
        assert!(
            out.contains("Tier cannot go back to Standard") && out.contains("-replace"),
            "{out}"
        );
    })
    .await;

    // A key on a String parameter, and tags on a file target: errors naming the attribute.
    tf.write("main.tf", &main("{}", "    key_id = \"alias/locality-map\""));
    let t = tf.clone();
    blocking(move || {
        let out = t.fails(&["validate"]);
        assert!(out.contains("Key without encryption") && out.contains("key_id"), "{out}");
        t.write(
            "main.tf",
            &format!("{PREAMBLE}\nresource \"locality_zone_replica_map\" \"f\" {{\n  fallback_endpoint = \"r:6379\"\n  tags = {{ a = \"b\" }}\n  member {{\n    endpoint = \"n1:6379\"\n    zone     = \"ap-northeast-1a\"\n  }}\n  file {{\n    path = \"m.json\"\n  }}\n}}\n"),
        );
        let out = t.fails(&["validate"]);
        assert!(out.contains("Nothing to tag"), "{out}");
    })
    .await;
}

/// Issue 44: a cluster-mode-enabled group applies (before: "Cluster mode is not supported"). The
/// published map holds the configuration endpoint and every shard's nodes, claims no zone, and
/// names as uncovered the zones where some shard has no replica. A topology change shows in the
/// plan under the shard and the zone. The sidecar refuses the map, naming GLIDE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_mode_group_publishes_every_shard_and_plans_name_the_shard() {
    let moto = Moto::start();
    let spread = ["ap-northeast-1c", "ap-northeast-1d"];
    moto.create_cluster_group("shards", &[spread, spread, spread]).await;
    put_secret(&moto, "{}", true).await;
    let tf = std::sync::Arc::new(terraform(&moto));
    tf.write(
        "main.tf",
        &format!(
            "{}\noutput \"shards\" {{\n  value = locality_zone_replica_map.cache.shards\n}}\n\noutput \"uncovered\" {{\n  value = locality_zone_replica_map.cache.uncovered_zones\n}}\n",
            config(&moto, "shards", &secret_target())
        ),
    );
    let t = tf.clone();
    let first = blocking(move || {
        let out = t.ok(&["apply", "-auto-approve"]);
        assert!(
            out.contains("Node endpoints named from the configuration endpoint"),
            "{out}"
        );
        t.assert_no_changes();
        t.output("document")
    })
    .await;
    assert_eq!(secret_value(&moto).await.as_deref(), Some(first.as_str()));
    let doc: serde_json::Value = serde_json::from_str(&first).unwrap();
    let configuration = doc["configuration_endpoint"].as_str().unwrap().to_string();
    assert!(configuration.starts_with("clustercfg.shards."), "{first}");
    assert_eq!(doc["fallback"], configuration.as_str());
    assert!(
        doc["zones"].as_object().unwrap().is_empty(),
        "no zone claims every key: {first}"
    );
    let nodes = doc["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 9, "{first}");
    for shard in ["0001", "0002", "0003"] {
        let of: Vec<&serde_json::Value> = nodes.iter().filter(|n| n["shard"] == shard).collect();
        assert_eq!(of.len(), 3, "{first}");
        assert_eq!(of.iter().filter(|n| n["role"] == "primary").count(), 1);
        assert!(of.iter().any(|n| n["zone"] == "ap-northeast-1d"));
    }
    // Only primaries in 1a: uncovered; 1c and 1d have a replica of every shard.
    let t = tf.clone();
    let uncovered = blocking(move || t.ok(&["output", "-json", "uncovered"])).await;
    assert_eq!(uncovered.trim(), r#"["ap-northeast-1a"]"#);

    // Shard 0002 loses its replica in 1d: the plan names the shard and the zone.
    moto.reset();
    moto.create_cluster_group("shards", &[spread, ["ap-northeast-1c", "ap-northeast-1c"], spread])
        .await;
    put_secret(&moto, &first, true).await;
    let t = tf.clone();
    let second = blocking(move || {
        let (code, plan) = t.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        let shard = plan
            .find("\"0002\" = {")
            .unwrap_or_else(|| panic!("the shard is named: {plan}"));
        assert!(plan[shard..].contains("- \"ap-northeast-1d\""), "{plan}");
        assert!(plan.contains("+ \"ap-northeast-1d\""), "1d becomes uncovered: {plan}");
        t.ok(&["apply", "-auto-approve"]);
        t.assert_no_changes();
        t.output("document")
    })
    .await;
    assert_ne!(second, first);

    // The sidecar refuses a cluster-mode map, in one sentence naming GLIDE.
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, &second).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_locality"))
        .args([
            "sidecar",
            "--zone",
            "ap-northeast-1c",
            "--stats",
            "off",
            "--metrics",
            "off",
            "--run-dir",
        ])
        .arg(dir.path().join("run"))
        .arg("--map")
        .arg(&map)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("MOVED") && err.contains("GLIDE"), "{err}");
}
