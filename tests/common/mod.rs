//! Test harness: runs the real `terraform` CLI against the provider binary, each run in its own
//! temp dir with its own CLI config (dev_overrides, or an offline filesystem mirror).

#![allow(dead_code, unreachable_pub)] // helpers shared by the test crates; each uses some

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The provider binary cargo built for these tests.
pub fn provider_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_terraform-provider-locality"))
}

/// `locality-app` beside the other binaries, built (or found up to date) by cargo: a build of
/// this package alone does not make it (it is `locality-resolve`'s, feature `cli`).
pub fn app_binary() -> PathBuf {
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "--locked",
            "-p",
            "locality-resolve",
            "--features",
            "cli",
            "--bin",
            "locality-app",
        ])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo build of locality-app: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    provider_binary().with_file_name("locality-app")
}

/// A Python from one of the venvs scripts/test makes: `var` when set, else
/// `target/<venv>/bin/python`; `what` says what it must carry.
pub fn venv_python(var: &str, venv: &str, what: &str) -> PathBuf {
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(venv)
            .join("bin/python")
    });
    assert!(
        path.exists(),
        "no Python with {what} at {} ({var}; scripts/test installs it)",
        path.display()
    );
    path
}

/// The terraform the suites run: `LOCALITY_TERRAFORM` when set (scripts/test runs the suites a
/// second time with Terraform 1.15.5), else `terraform` on PATH (1.11.4).
pub fn terraform_binary() -> String {
    std::env::var("LOCALITY_TERRAFORM")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "terraform".to_string())
}

/// A loopback port for a server the tests start by number (moto, redis-server), checked free.
///
/// Taken below Linux's ephemeral range (32768–60999): a `127.0.0.1:0` listener or a client
/// socket of a test running alongside can be given any port in that range, including one picked
/// here in the seconds before the server binds it (moto then exits and the test talks to someone
/// else's socket, which later vanishes: a CI failure seen once). Ports are handed out in order
/// within a test binary and start at an offset from the process id, so binaries rarely meet.
pub fn server_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    const FIRST: u16 = 10_000;
    const SPAN: u16 = 22_000; // 10000..32000, below 32768
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let offset = (std::process::id() % 550) as u16 * 40;
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::SeqCst) % SPAN;
        let candidate = FIRST + (offset + n) % SPAN;
        if std::net::TcpListener::bind(("127.0.0.1", candidate)).is_ok() {
            return candidate;
        }
    }
    panic!("no free loopback port in {FIRST}..{}", FIRST + SPAN)
}

/// Terraform 1.15.5, for the 1.12+ features (identity, `terraform query`, actions): the path in
/// `LOCALITY_TERRAFORM_1_15`, which scripts/test installs and sets.
pub fn terraform_1_15() -> String {
    std::env::var("LOCALITY_TERRAFORM_1_15")
        .ok()
        .filter(|p| !p.is_empty())
        .expect("LOCALITY_TERRAFORM_1_15 must name a Terraform 1.15.5 executable: run scripts/test, which installs it under target/terraform-1.15.5/")
}

/// The crate version, which is the provider version in the mirror.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A terraform working directory.
pub struct Terraform {
    pub dir: tempfile::TempDir,
    env: Vec<(String, String)>,
    removed: Vec<String>,
    binary: String,
}

/// What a terraform command did.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn all(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

impl Terraform {
    fn with_cli_config(cli_config: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(".terraformrc");
        std::fs::write(&path, cli_config).expect("write CLI config");
        let mut tf = Terraform {
            dir,
            env: Vec::new(),
            removed: Vec::new(),
            binary: terraform_binary(),
        };
        tf.env("TF_CLI_CONFIG_FILE", path.to_str().unwrap());
        let home = tf.dir.path().to_str().unwrap().to_string();
        tf.env("HOME", &home);
        // Google's Application Default Credentials end at the metadata server: never the real
        // one. A closed loopback port refuses at once; tests that need one set their fake.
        tf.env("GCE_METADATA_HOST", "127.0.0.1:1");
        for var in [
            "GOOGLE_APPLICATION_CREDENTIALS",
            "GOOGLE_CREDENTIALS",
            "GOOGLE_OAUTH_ACCESS_TOKEN",
            "GOOGLE_IMPERSONATE_SERVICE_ACCOUNT",
            "GOOGLE_PROJECT",
            "GOOGLE_CLOUD_PROJECT",
            "CLOUDSDK_CORE_PROJECT",
        ] {
            tf.env_remove(var);
        }
        tf
    }

    /// A directory with an empty CLI config (for reattach mode).
    pub fn with_empty_cli_config() -> Self {
        Self::with_cli_config("")
    }

    /// A directory whose CLI config points the provider at the built binary (no init needed).
    pub fn dev_overrides() -> Self {
        let bin_dir = provider_binary().parent().unwrap().to_path_buf();
        Self::with_cli_config(&format!(
            "provider_installation {{\n  dev_overrides {{\n    \"locality/locality\" = \"{}\"\n  }}\n  direct {{}}\n}}\n",
            bin_dir.display()
        ))
    }

    /// A directory whose CLI config installs the provider from an offline filesystem mirror
    /// holding a copy of the built binary (unpacked layout); `terraform init` is required.
    pub fn mirror() -> Self {
        let mirror = tempfile::tempdir().expect("temp dir").keep();
        let platform = mirror.join(format!("registry.terraform.io/locality/locality/{VERSION}/linux_amd64"));
        std::fs::create_dir_all(&platform).unwrap();
        std::fs::copy(
            provider_binary(),
            platform.join(format!("terraform-provider-locality_v{VERSION}")),
        )
        .unwrap();
        Self::with_cli_config(&format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [\"registry.terraform.io/locality/*\"]\n  }}\n}}\n",
            mirror.display()
        ))
    }

    /// A directory whose CLI config installs the provider from the filesystem mirror at
    /// `mirror` (packed or unpacked layout) and from nowhere else; `terraform init` is required.
    pub fn from_mirror(mirror: &Path) -> Self {
        Self::with_cli_config(&format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [\"registry.terraform.io/locality/*\"]\n  }}\n}}\n",
            mirror.display()
        ))
    }

    /// Runs this terraform executable instead (e.g. [`terraform_1_15`]).
    pub fn with_binary(mut self, binary: &str) -> Self {
        self.binary = binary.to_string();
        self
    }

    pub fn env(&mut self, key: &str, value: &str) -> &mut Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Leaves `key` out of the environment terraform (and so the provider) runs with.
    pub fn env_remove(&mut self, key: &str) -> &mut Self {
        self.env.retain(|(k, _)| k != key);
        self.removed.push(key.into());
        self
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, content: &str) {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.path(name)).ok()
    }

    pub fn exists(&self, name: &str) -> bool {
        Path::new(&self.path(name)).exists()
    }

    /// Runs `terraform ARGS -no-color` in the directory.
    pub fn run(&self, args: &[&str]) -> Run {
        let Output { status, stdout, stderr } = self.command(args).output().expect("terraform on PATH");
        let run = Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        };
        assert!(
            !run.all().contains("Provider produced inconsistent"),
            "terraform {args:?}:\n{}",
            run.all()
        );
        assert!(
            !run.all().contains("Provider produced invalid"),
            "terraform {args:?}:\n{}",
            run.all()
        );
        run
    }

    /// The command `terraform ARGS -no-color` in the directory, with the test's environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.binary);
        cmd.args(args).current_dir(self.dir.path());
        if !args.iter().any(|a| *a == "-no-color" || a.starts_with("-json"))
            && !matches!(args.first(), Some(&"output" | &"state" | &"version" | &"fmt"))
        {
            cmd.arg("-no-color");
        }
        for var in [
            "TF_LOG",
            "TF_LOG_PROVIDER",
            "TF_LOG_PATH",
            "TF_DISABLE_PLUGIN_TLS",
            "TF_CLI_ARGS",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("CHECKPOINT_DISABLE", "1")
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0");
        cmd.env_remove("TF_REATTACH_PROVIDERS");
        for k in &self.removed {
            cmd.env_remove(k);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// The version of the terraform this runs (`1.11.4`, `1.15.5`).
    pub fn version(&self) -> String {
        let run = self.run(&["version", "-json"]);
        let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("terraform version -json");
        json["terraform_version"].as_str().expect("a version").to_string()
    }

    /// Runs and requires exit code 0.
    #[track_caller]
    pub fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert_eq!(run.code, 0, "terraform {args:?} failed:\n{}", run.all());
        run.all()
    }

    /// Runs and requires a non-zero exit code; returns everything it printed.
    #[track_caller]
    pub fn fails(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert_ne!(run.code, 0, "terraform {args:?} unexpectedly succeeded:\n{}", run.all());
        run.all()
    }

    /// `terraform plan -detailed-exitcode`: 0 = no changes, 2 = changes.
    #[track_caller]
    pub fn plan_exit_code(&self) -> (i32, String) {
        let run = self.run(&["plan", "-detailed-exitcode"]);
        assert!(run.code == 0 || run.code == 2, "plan failed:\n{}", run.all());
        (run.code, run.all())
    }

    #[track_caller]
    pub fn assert_no_changes(&self) {
        let (code, out) = self.plan_exit_code();
        assert_eq!(code, 0, "expected an empty plan:\n{out}");
    }

    #[track_caller]
    pub fn output(&self, name: &str) -> String {
        let run = self.run(&["output", "-raw", name]);
        assert_eq!(run.code, 0, "terraform output failed:\n{}", run.all());
        run.stdout.trim().to_string()
    }
}

/// The `terraform { required_providers }` preamble.
pub const PREAMBLE: &str = r#"terraform {
  required_providers {
    locality = {
      source = "locality/locality"
    }
  }
}
"#;
pub mod aws_provider;
pub mod cloudflare_provider;
pub mod elbv2;
pub mod fake_cloudflare;
pub mod fake_compute;
pub mod fake_google_auth;
pub mod fake_metadata;
pub mod fault_proxy;
pub mod google;
pub mod moto;
pub mod proto;
pub mod valkey;
