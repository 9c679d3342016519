//! AWS credentials the way CI pipelines have them, through the real terraform CLI against
//! moto: a named profile from shared files given in the provider block, a `credential_process`
//! profile, a `source_profile` role profile, `assume_role`, web identity
//! (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`, as EKS IRSA and GitHub OIDC set them), and
//! `allowed_account_ids` / `forbidden_account_ids` refusing the wrong account at plan time,
//! before anything is read or written. moto tells accounts apart: static keys belong to
//! 123456789012, an assumed role's credentials to the account in its ARN.
//!
//! Every terraform process runs with no AWS credentials in its environment and HOME pointing at
//! its own temp dir, so the only credentials are the ones each test gives.

mod common;

use common::moto::Moto;
use common::{Terraform, PREAMBLE};

const PARAM: &str = "/prod/cache/replica-map";

/// A terraform working dir whose environment has no AWS credentials of its own.
fn terraform(moto: &Moto) -> Terraform {
    let mut tf = Terraform::dev_overrides();
    for key in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ] {
        tf.env_remove(key);
    }
    let home = tf.path("home");
    std::fs::create_dir_all(&home).unwrap();
    tf.env("HOME", home.to_str().unwrap());
    tf.env("AWS_EC2_METADATA_DISABLED", "true");
    tf.env("AWS_REGION", "ap-northeast-1");
    tf.env("AWS_ENDPOINT_URL", &moto.endpoint);
    tf
}

/// A replica map published to SSM, with the given `aws` block lines.
fn config(moto: &Moto, aws: &str) -> String {
    format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{}\"\n{aws}  }}\n}}\n\n\
         resource \"locality_zone_replica_map\" \"cache\" {{\n  member {{\n    endpoint = \"replica-a.example:6379\"\n    zone     = \"ap-northeast-1a\"\n    role     = \"replica\"\n  }}\n  fallback_endpoint = \"reader.example:6379\"\n\n  ssm_parameter {{\n    name = \"{PARAM}\"\n  }}\n}}\n",
        moto.endpoint
    )
}

fn flat(out: &str) -> String {
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether the parameter exists in moto's account `account` (read with credentials of a role
/// of that account, which moto files under it).
async fn published_in(moto: &Moto, account: &str) -> bool {
    let base = moto.config().await;
    let role = aws_config::sts::AssumeRoleProvider::builder(format!("arn:aws:iam::{account}:role/reader"))
        .session_name("check")
        .configure(&base)
        .build()
        .await;
    let config = base
        .into_builder()
        .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(role))
        .build();
    let ssm = aws_sdk_ssm::Client::new(&config);
    ssm.get_parameter().name(PARAM).send().await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_profile_from_files_in_the_block_and_a_credential_process() {
    let moto = Moto::start();
    let endpoint = moto.endpoint.clone();
    tokio::task::spawn_blocking(move || {
        let tf = terraform(&moto);
        let marker = tf.path("process-ran");
        let script = tf.path("creds.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ntouch '{}'\necho '{{\"Version\": 1, \"AccessKeyId\": \"AKIDPROCESS\", \"SecretAccessKey\": \"process-secret\"}}'\n",
                marker.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        tf.write(
            "aws/credentials",
            "[ci]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n",
        );
        tf.write(
            "aws/config",
            &format!(
                "[profile ci]\nregion = ap-northeast-1\n\n[profile proc]\ncredential_process = {}\n\n[profile deploy]\nrole_arn = arn:aws:iam::444444444444:role/deploy\nsource_profile = ci\n",
                script.display()
            ),
        );
        let files = format!(
            "    shared_config_files      = [\"{}\"]\n    shared_credentials_files = [\"{}\"]\n",
            tf.path("aws/config").display(),
            tf.path("aws/credentials").display()
        );

        // No credentials anywhere but the profile: the apply works only through it, and STS
        // says whose they are.
        tf.write(
            "main.tf",
            &config(&moto, &format!("    profile = \"ci\"\n{files}    allowed_account_ids = [\"123456789012\"]\n")),
        );
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();

        // A profile that is not there: an error on `profile` naming the ones that are.
        tf.write("main.tf", &config(&moto, &format!("    profile = \"nope\"\n{files}")));
        let out = flat(&tf.fails(&["plan"]));
        assert!(
            out.contains("Profile \"nope\" is not in the shared config or credentials files")
                && out.contains("profiles there: ci, deploy, proc"),
            "{out}"
        );
        // A file that is not there: an error on that attribute.
        tf.write(
            "main.tf",
            &config(&moto, "    shared_config_files = [\"/nonexistent/aws-config\"]\n"),
        );
        let out = flat(&tf.fails(&["plan"]));
        assert!(out.contains("\"/nonexistent/aws-config\" is not a readable file") && out.contains("shared_config_files"), "{out}");

        // credential_process (aws-vault, granted): the script runs and its keys are used.
        tf.write("main.tf", &config(&moto, &format!("    profile = \"proc\"\n{files}    allowed_account_ids = [\"123456789012\"]\n")));
        tf.ok(&["plan"]);
        assert!(marker.exists(), "the credential_process ran");

        // A role profile (role_arn + source_profile): the role's account.
        tf.write("main.tf", &config(&moto, &format!("    profile = \"deploy\"\n{files}    allowed_account_ids = [\"444444444444\"]\n")));
        tf.ok(&["plan"]);
        let _ = endpoint;
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assume_role_and_the_account_guard() {
    let moto = Moto::start();
    let moto = std::sync::Arc::new(moto);
    let m = moto.clone();
    let tf = tokio::task::spawn_blocking(move || {
        let moto = m;
        let mut tf = terraform(&moto);
        tf.env("AWS_ACCESS_KEY_ID", "AKIDBASE");
        tf.env("AWS_SECRET_ACCESS_KEY", "base-secret");

        // The base credentials are account 123456789012's: refused before anything is written.
        tf.write("main.tf", &config(&moto, "    allowed_account_ids = [\"999999999999\"]\n"));
        let out = flat(&tf.fails(&["apply", "-auto-approve"]));
        assert!(
            out.contains("AWS account not allowed")
                && out.contains("belong to account 123456789012, which is not in `allowed_account_ids` (999999999999)"),
            "{out}"
        );
        assert!(!out.contains("base-secret"), "{out}");
        tf.write("main.tf", &config(&moto, "    forbidden_account_ids = [\"123456789012\"]\n"));
        let out = flat(&tf.fails(&["plan"]));
        assert!(out.contains("AWS account forbidden"), "{out}");

        // assume_role: every call is the role's, in the role's account.
        let role = "    assume_role {\n      role_arn     = \"arn:aws:iam::444444444444:role/locality\"\n      session_name = \"ci-run\"\n      external_id  = \"ext-4711\"\n      duration     = \"30m\"\n    }\n";
        tf.write("main.tf", &config(&moto, &format!("    allowed_account_ids = [\"444444444444\"]\n{role}")));
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();
        // With trace logging, no provider log line carries the secret key, the external ID or
        // the role's session credentials.
        tf.env("TF_LOG", "trace");
        let run = tf.run(&["plan"]);
        assert_eq!(run.code, 0, "{}", run.all());
        let provider_lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.contains("provider.terraform-provider-locality"))
            .collect();
        assert!(provider_lines.iter().any(|l| l.contains("sts:GetCallerIdentity")), "the provider logs at trace level");
        for secret in ["base-secret", "ext-4711", "x-amz-security-token", "aws_session_token", "FQoGZXIvYXdzE"] {
            assert!(
                !provider_lines.iter().any(|l| l.contains(secret)),
                "{secret} in a provider log line"
            );
        }
        tf.env("TF_LOG", "");
        // Offline checks of the block.
        tf.write(
            "main.tf",
            &config(&moto, "    allowed_account_ids = [\"12345\"]\n    assume_role {\n      role_arn = \"locality\"\n      duration = \"13h\"\n    }\n"),
        );
        let out = flat(&tf.fails(&["validate"]));
        assert!(
            out.contains("\"12345\" is not an AWS account ID")
                && out.contains("is not an IAM role ARN")
                && out.contains("from 15m to 12h"),
            "{out}"
        );
        tf
    })
    .await
    .unwrap();
    assert!(
        published_in(&moto, "444444444444").await,
        "written with the role's credentials"
    );
    assert!(
        !published_in(&moto, "123456789012").await,
        "not with the base credentials"
    );
    drop(tf);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_identity_through_the_default_chain() {
    let moto = std::sync::Arc::new(Moto::start());
    let m = moto.clone();
    tokio::task::spawn_blocking(move || {
        let moto = m;
        let mut tf = terraform(&moto);
        // What EKS IRSA and GitHub Actions' OIDC set up: a token file and a role.
        let token = tf.path("token");
        std::fs::write(
            &token,
            "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOmV4YW1wbGUvY2kifQ.c2lnbmF0dXJl",
        )
        .unwrap();
        tf.env("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap());
        tf.env("AWS_ROLE_ARN", "arn:aws:iam::555555555555:role/github-ci");
        tf.env("AWS_ROLE_SESSION_NAME", "github-run");
        tf.write(
            "main.tf",
            &config(&moto, "    allowed_account_ids = [\"555555555555\"]\n"),
        );
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();
    })
    .await
    .unwrap();
    assert!(
        published_in(&moto, "555555555555").await,
        "written with the web identity role's credentials"
    );
}

/// The AWS SDK's User-Agent names the provider and the Terraform that drives it: seen by a
/// loopback endpoint that records it and answers 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_requests_name_the_provider_and_terraform() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let agents = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = agents.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head).to_string();
                if let Some(agent) = text.lines().find_map(|l| {
                    l.strip_prefix("user-agent: ")
                        .or_else(|| l.strip_prefix("User-Agent: "))
                }) {
                    seen.lock().unwrap().push(agent.to_string());
                }
                let _ = socket
                    .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    let version = tokio::task::spawn_blocking(move || {
        let moto = Moto::start();
        let mut tf = terraform(&moto);
        tf.env("AWS_ACCESS_KEY_ID", "AKIDBASE");
        tf.env("AWS_SECRET_ACCESS_KEY", "base-secret");
        tf.env("AWS_MAX_ATTEMPTS", "1");
        tf.env("AWS_ENDPOINT_URL", &endpoint);
        let config = config(&moto, "    allowed_account_ids = [\"123456789012\"]\n").replace(&moto.endpoint, &endpoint);
        tf.write("main.tf", &config);
        let out = flat(&tf.fails(&["plan"]));
        assert!(out.contains("AWS credentials not usable"), "{out}");
        tf.version()
    })
    .await
    .unwrap();
    let agents = agents.lock().unwrap().clone();
    let wanted = format!(
        "app/terraform-provider-locality_{}-terraform_{version}",
        common::VERSION
    );
    assert!(
        !agents.is_empty() && agents.iter().all(|a| a.contains(&wanted)),
        "{wanted} in {agents:?}"
    );
}

/// The commonest laptop setting: a profile in `~/.aws/config` and `~/.aws/credentials`, named in
/// the block and nowhere else (no `shared_config_files`), then the same through `AWS_PROFILE`,
/// through `AWS_CONFIG_FILE` / `AWS_SHARED_CREDENTIALS_FILE`, and `~` in the block's paths. A
/// missing profile is an error on `profile` listing the profiles found, not a crash. (Before
/// the fix, ConfigureProvider panicked on the first plan and Terraform printed "Request
/// cancelled".)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_from_the_files_a_laptop_keeps_in_home() {
    let moto = Moto::start();
    tokio::task::spawn_blocking(move || {
        let mut tf = terraform(&moto);
        let home = tf.path("home");
        std::fs::create_dir_all(home.join(".aws")).unwrap();
        std::fs::write(
            home.join(".aws/credentials"),
            "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret\n\n[dev]\naws_access_key_id = AKIDDEV\naws_secret_access_key = dev-secret\n",
        )
        .unwrap();
        std::fs::write(
            home.join(".aws/config"),
            "[default]\nregion = ap-northeast-1\n\n[profile dev]\nregion = ap-northeast-1\n\n[profile ops]\nrole_arn = arn:aws:iam::444444444444:role/ops\nsource_profile = dev\n",
        )
        .unwrap();

        // `profile = "dev"` and nothing else: the apply goes through dev's keys.
        tf.write("main.tf", &config(&moto, "    profile             = \"dev\"\n    allowed_account_ids = [\"123456789012\"]\n"));
        let out = tf.ok(&["apply", "-auto-approve"]);
        assert!(!out.contains("Request cancelled") && !out.contains("panic"), "{out}");
        tf.assert_no_changes();

        // A role profile of ~/.aws/config: the role's account.
        tf.write("main.tf", &config(&moto, "    profile             = \"ops\"\n    allowed_account_ids = [\"444444444444\"]\n"));
        tf.ok(&["plan"]);

        // A profile that is in neither file: one error on `profile`, listing what is there.
        tf.write("main.tf", &config(&moto, "    profile = \"prod\"\n"));
        let out = flat(&tf.fails(&["plan"]));
        assert!(
            out.contains("Profile \"prod\" is not in the shared config or credentials files")
                && out.contains("profiles there: default, dev, ops")
                && !out.contains("Request cancelled"),
            "{out}"
        );

        // AWS_PROFILE, with no profile in the block.
        tf.env("AWS_PROFILE", "ops");
        tf.write("main.tf", &config(&moto, "    allowed_account_ids = [\"444444444444\"]\n"));
        tf.ok(&["plan"]);
        // AWS_PROFILE naming a profile that is in neither file: said as such, with the profiles
        // there (not the next source's "IMDS is disabled"), in the account check and in a read.
        tf.env("AWS_PROFILE", "prod");
        for extra in ["    allowed_account_ids = [\"444444444444\"]\n", ""] {
            tf.write("main.tf", &config(&moto, extra));
            let out = flat(&tf.fails(&["apply", "-auto-approve"]));
            assert!(
                out.contains("AWS_PROFILE names profile \"prod\", which is not in the shared config or credentials files (~/.aws/config")
                    && out.contains("profiles there: default, dev, ops")
                    && !out.contains("IMDS"),
                "{out}"
            );
        }
        tf.env_remove("AWS_PROFILE");

        // AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE point elsewhere: those files count.
        tf.write("elsewhere/config", "[profile ci]\nregion = ap-northeast-1\n");
        tf.write(
            "elsewhere/credentials",
            "[ci]\naws_access_key_id = AKIDCI\naws_secret_access_key = ci-secret\n",
        );
        tf.env("AWS_CONFIG_FILE", tf.path("elsewhere/config").to_str().unwrap());
        tf.env("AWS_SHARED_CREDENTIALS_FILE", tf.path("elsewhere/credentials").to_str().unwrap());
        tf.write("main.tf", &config(&moto, "    profile             = \"ci\"\n    allowed_account_ids = [\"123456789012\"]\n"));
        tf.ok(&["plan"]);
        tf.write("main.tf", &config(&moto, "    profile = \"dev\"\n"));
        let out = flat(&tf.fails(&["plan"]));
        assert!(out.contains("profiles there: ci"), "{out}");
        tf.env_remove("AWS_CONFIG_FILE");
        tf.env_remove("AWS_SHARED_CREDENTIALS_FILE");

        // `~` in the block's paths is the HOME Terraform runs with.
        tf.write(
            "main.tf",
            &config(
                &moto,
                "    profile                  = \"dev\"\n    shared_config_files      = [\"~/.aws/config\"]\n    shared_credentials_files = [\"~/.aws/credentials\"]\n    allowed_account_ids      = [\"123456789012\"]\n",
            ),
        );
        tf.ok(&["plan"]);
    })
    .await
    .unwrap();
}

/// AWS errors are one readable sentence — the operation, the resource, the cause — never the
/// SDK's debug dump; no region and no credentials are said as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_errors_are_one_readable_sentence() {
    let moto = Moto::start();
    tokio::task::spawn_blocking(move || {
        let mut tf = terraform(&moto);
        let closed = format!("http://127.0.0.1:{}", common::server_port());
        tf.env("AWS_ACCESS_KEY_ID", "AKIDBASE");
        tf.env("AWS_SECRET_ACCESS_KEY", "base-secret");
        tf.env("AWS_MAX_ATTEMPTS", "1");
        // A closed endpoint.
        tf.write("main.tf", &config(&moto, "").replace(&moto.endpoint, &closed));
        let out = flat(&tf.fails(&["apply", "-auto-approve"]));
        assert!(
            out.contains(&format!(
                "ssm:PutParameter of \"/prod/cache/replica-map\": dispatch failure: could not reach {closed}:"
            )) && out.contains("Connection refused"),
            "{out}"
        );
        for dump in ["DispatchFailure(", "ConnectorError {", "SdkError", "raw:", "headers"] {
            assert!(!out.contains(dump), "{dump} in {out}");
        }
        // No region anywhere.
        tf.env_remove("AWS_REGION");
        tf.write(
            "main.tf",
            &config(&moto, "").replace("    region       = \"ap-northeast-1\"\n", ""),
        );
        let out = flat(&tf.fails(&["apply", "-auto-approve"]));
        assert!(out.contains("no AWS region is set: set AWS_REGION"), "{out}");
        // No credentials anywhere.
        tf.env("AWS_REGION", "ap-northeast-1");
        tf.env_remove("AWS_ACCESS_KEY_ID");
        tf.env_remove("AWS_SECRET_ACCESS_KEY");
        tf.write("main.tf", &config(&moto, ""));
        let out = flat(&tf.fails(&["apply", "-auto-approve"]));
        assert!(
            out.contains("no AWS credentials were found; tried, in order: the environment"),
            "{out}"
        );
    })
    .await
    .unwrap();
}

/// Issue 27: the https-or-loopback rule holds for every endpoint the SDK uses, whatever set it:
/// the per-service variable and `endpoint_url` in the shared config file too. (0.0.0.0 is not
/// loopback by the rule, and a connection to it would stay on this machine: nothing is sent
/// anywhere when the rule works.) Before the fix, PutSecretValue/PutParameter went out over
/// plain http with the session token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_aws_endpoint_is_https_or_loopback_whatever_set_it() {
    let moto = Moto::start();
    tokio::task::spawn_blocking(move || {
        let mut tf = terraform(&moto);
        let plain = format!("http://0.0.0.0:{}", common::server_port());
        tf.env("AWS_ACCESS_KEY_ID", "AKIDBASE");
        tf.env("AWS_SECRET_ACCESS_KEY", "base-secret");
        tf.env("AWS_SESSION_TOKEN", "SESSION-TOKEN-MARKER");
        tf.env("AWS_MAX_ATTEMPTS", "1");
        let without_endpoint = config(&moto, "").replace(&format!("    endpoint_url = \"{}\"\n", moto.endpoint), "");
        tf.write("main.tf", &without_endpoint);
        // The per-service variable.
        tf.env("AWS_ENDPOINT_URL_SSM", &plain);
        let out = flat(&tf.fails(&["apply", "-auto-approve"]));
        assert!(out.contains(&format!("the AWS endpoint {plain} is refused")), "{out}");
        assert!(!out.contains("SESSION-TOKEN-MARKER"), "{out}");
        tf.env_remove("AWS_ENDPOINT_URL_SSM");
        // endpoint_url in the shared config file's profile.
        tf.write("home/.aws/config", &format!("[default]\nendpoint_url = {plain}\n"));
        tf.env_remove("AWS_ENDPOINT_URL");
        let out = flat(&tf.fails(&["apply", "-auto-approve"]));
        assert!(out.contains(&format!("the AWS endpoint {plain} is refused")), "{out}");
        // The credential providers' requests too: web identity's STS call would carry the token.
        tf.write("home/.aws/config", "");
        tf.env("AWS_ENDPOINT_URL", &moto.endpoint);
        tf.env_remove("AWS_ACCESS_KEY_ID");
        tf.env_remove("AWS_SECRET_ACCESS_KEY");
        tf.env_remove("AWS_SESSION_TOKEN");
        let token = tf.path("token");
        std::fs::write(
            &token,
            "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJXRUItSURFTlRJVFktTUFSS0VSIn0.c2ln",
        )
        .unwrap();
        tf.env("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap());
        tf.env("AWS_ROLE_ARN", "arn:aws:iam::555555555555:role/github-ci");
        tf.env("AWS_ENDPOINT_URL_STS", &plain);
        let out = flat(&tf.fails(&["apply", "-auto-approve"]));
        assert!(out.contains(&format!("the AWS endpoint {plain} is refused")), "{out}");
        tf.env_remove("AWS_ENDPOINT_URL_STS");
        tf.env_remove("AWS_WEB_IDENTITY_TOKEN_FILE");
        tf.env_remove("AWS_ROLE_ARN");
        tf.env("AWS_ACCESS_KEY_ID", "AKIDBASE");
        tf.env("AWS_SECRET_ACCESS_KEY", "base-secret");
        // Loopback over http (moto) stays allowed.
        tf.write(
            "home/.aws/config",
            &format!("[default]\nendpoint_url = {}\n", moto.endpoint),
        );
        tf.env_remove("AWS_SESSION_TOKEN");
        tf.ok(&["apply", "-auto-approve"]);
    })
    .await
    .unwrap();
}

/// Issue 43, item 5, with `terraform apply`: running as root, a shared config file that another
/// user owns is not read at all — its `credential_process` would run as uid 0 (shown first with
/// root's own file, whose process runs and writes `id -u`). Every AWS call fails with the file
/// and what named it, and nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_refuses_shared_files_another_user_could_write() {
    use std::os::unix::fs::PermissionsExt as _;
    let moto = Moto::start();
    tokio::task::spawn_blocking(move || {
        let tf = terraform(&moto);
        let marker = tf.path("ran-as");
        tf.write(
            "theirs/config",
            &format!(
                "[profile ci]\nregion = ap-northeast-1\ncredential_process = sh -c 'id -u > {}; echo {{\\\"Version\\\": 1, \\\"AccessKeyId\\\": \\\"AKIDCI\\\", \\\"SecretAccessKey\\\": \\\"ci-secret\\\"}}'\n",
                marker.display()
            ),
        );
        let shared = tf.path("theirs/config");
        std::fs::set_permissions(tf.path("theirs"), std::fs::Permissions::from_mode(0o755)).unwrap();
        tf.write(
            "main.tf",
            &config(
                &moto,
                &format!("    profile             = \"ci\"\n    shared_config_files = [\"{}\"]\n", shared.display()),
            ),
        );
        // Root's own file: its process runs, as root.
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(std::fs::read_to_string(&marker).unwrap().trim(), "0");
        std::fs::remove_file(&marker).unwrap();
        // Another user's (`daemon`): refused, and nothing runs.
        std::os::unix::fs::chown(&shared, Some(1), Some(1)).unwrap();
        let out = flat(&tf.fails(&["apply", "-auto-approve", "-refresh=true"]));
        assert!(
            out.contains(&format!(
                "the shared AWS file {} (from `shared_config_files` in the aws block) is refused",
                shared.display()
            )) && out.contains("owned by uid 1"),
            "{out}"
        );
        assert!(!marker.exists(), "another user's credential_process ran as root");
    })
    .await
    .unwrap();
}
