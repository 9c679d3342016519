//! Release artifacts (`scripts/package.py`, which `scripts/release` runs on the release build):
//! names and contents in the registry's layout, SHA256SUMS, byte-identical output on a second
//! run, and a packed filesystem mirror that the real `terraform init` installs from, records in
//! the lock file, verifies from another directory, and refuses once the zip is tampered with.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{app_binary, provider_binary, Terraform, PREAMBLE, VERSION};
use sha2::{Digest, Sha256};

/// The debug binaries are hundreds of MB: the tests deflate at level 1 (releases use 9; the
/// output is reproducible at any fixed level).
const FAST: [&str; 2] = ["--level", "1"];

fn package(out: &Path, mirror: Option<&Path>) {
    app_binary();
    let bin_dir = provider_binary().parent().unwrap().to_path_buf();
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/package.py"))
        .arg(&bin_dir)
        .arg(VERSION)
        .arg(out)
        .args(FAST);
    if let Some(m) = mirror {
        cmd.arg("--mirror").arg(m);
    }
    let status = cmd.output().unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

fn sha256(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

#[test]
fn artifacts_have_the_registry_layout_and_are_reproducible() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    package(&a, None);
    package(&b, None);
    let names: Vec<String> = files(&a)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            format!("locality-app_{VERSION}_linux_amd64.tar.gz"),
            format!("locality_{VERSION}_SHA256SUMS"),
            format!("locality_{VERSION}_linux_amd64.tar.gz"),
            format!("terraform-provider-locality_{VERSION}_SHA256SUMS"),
            format!("terraform-provider-locality_{VERSION}_linux_amd64.zip"),
            format!("terraform-provider-locality_{VERSION}_manifest.json"),
        ]
    );
    for (x, y) in files(&a).iter().zip(files(&b)) {
        assert_eq!(
            std::fs::read(x).unwrap(),
            std::fs::read(&y).unwrap(),
            "{} differs between runs",
            x.display()
        );
    }

    // SHA256SUMS lists the zip and the manifest with their digests.
    let sums = std::fs::read_to_string(a.join(format!("terraform-provider-locality_{VERSION}_SHA256SUMS"))).unwrap();
    let zip = a.join(format!("terraform-provider-locality_{VERSION}_linux_amd64.zip"));
    let manifest = a.join(format!("terraform-provider-locality_{VERSION}_manifest.json"));
    assert_eq!(
        sums,
        format!(
            "{}  terraform-provider-locality_{VERSION}_linux_amd64.zip\n{}  terraform-provider-locality_{VERSION}_manifest.json\n",
            sha256(&zip),
            sha256(&manifest)
        )
    );
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    assert_eq!(manifest["metadata"]["protocol_versions"], serde_json::json!(["6.0"]));

    // The zip holds the binary alone, executable, named as the registry expects.
    let listing = Command::new("unzip").arg("-Z").arg(&zip).output().unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    assert!(
        listing.contains("-rwxr-xr-x") && listing.contains(&format!("terraform-provider-locality_v{VERSION}")),
        "{listing}"
    );
    assert!(listing.contains("1 file"), "{listing}");
    let unzip = Command::new("unzip").arg("-p").arg(&zip).output().unwrap();
    assert!(
        unzip.stdout == std::fs::read(provider_binary()).unwrap(),
        "the zip holds the binary as built"
    );

    // The CLI and application tarballs: the binary, README, licence and changelog, with their
    // own checksum file.
    let cli_sums = std::fs::read_to_string(a.join(format!("locality_{VERSION}_SHA256SUMS"))).unwrap();
    assert_eq!(
        cli_sums,
        format!(
            "{}  locality-app_{VERSION}_linux_amd64.tar.gz\n{}  locality_{VERSION}_linux_amd64.tar.gz\n",
            sha256(&a.join(format!("locality-app_{VERSION}_linux_amd64.tar.gz"))),
            sha256(&a.join(format!("locality_{VERSION}_linux_amd64.tar.gz")))
        )
    );
    let tar = Command::new("tar")
        .arg("-tvzf")
        .arg(a.join(format!("locality_{VERSION}_linux_amd64.tar.gz")))
        .output()
        .unwrap();
    let tar = String::from_utf8_lossy(&tar.stdout).into_owned();
    for member in ["locality", "README.md", "LICENSE", "CHANGELOG.md"] {
        assert!(
            tar.contains(&format!("locality_{VERSION}_linux_amd64/{member}")),
            "{member} in\n{tar}"
        );
    }
    assert!(tar.contains("-rwxr-xr-x") && tar.contains("1980-01-01"), "{tar}");
    // The CLI and the application-side binary run from their tarballs, `resolve` included.
    let unpacked = tempfile::tempdir().unwrap();
    let map = unpacked.path().join("map.json");
    std::fs::write(
        &map,
        r#"{"version":1,"fallback":"reader.example:6379","zones":{"ap-northeast-1a":"replica-a.example:6379"}}"#,
    )
    .unwrap();
    for binary in ["locality", "locality-app"] {
        let status = Command::new("tar")
            .arg("-xzf")
            .arg(a.join(format!("{binary}_{VERSION}_linux_amd64.tar.gz")))
            .arg("-C")
            .arg(unpacked.path())
            .status()
            .unwrap();
        assert!(status.success());
        let folder = unpacked.path().join(format!("{binary}_{VERSION}_linux_amd64"));
        for member in ["README.md", "LICENSE", "CHANGELOG.md"] {
            assert!(folder.join(member).exists(), "{member} of {binary}");
        }
        let out = Command::new(folder.join(binary))
            .args(["resolve", "--zone", "ap-northeast-1a", "--map"])
            .arg(&map)
            .arg("--cache-dir")
            .arg(unpacked.path().join("cache"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "replica-a.example:6379\n",
            "{binary}"
        );
    }
    let app = unpacked
        .path()
        .join(format!("locality-app_{VERSION}_linux_amd64/locality-app"));
    assert_eq!(
        std::fs::read(app).unwrap(),
        std::fs::read(app_binary()).unwrap(),
        "locality-app as built"
    );
}

#[test]
fn terraform_init_installs_from_the_packed_mirror_and_verifies_the_lock_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (dist, mirror) = (tmp.path().join("dist"), tmp.path().join("mirror"));
    package(&dist, Some(&mirror));
    let packed = mirror.join(format!(
        "registry.terraform.io/locality/locality/terraform-provider-locality_{VERSION}_linux_amd64.zip"
    ));
    assert!(packed.is_file());
    let config = format!("{PREAMBLE}\nprovider \"locality\" {{}}\n\ndata \"locality_cloud_region\" \"x\" {{\n  ip = \"34.84.1.1\"\n}}\n\noutput \"hint\" {{\n  value = data.locality_cloud_region.x.hint\n}}\n");

    // First init: installs from the zip and records its hash.
    let first = Terraform::from_mirror(&mirror);
    first.write("main.tf", &config);
    let out = first.ok(&["init"]);
    assert!(
        out.contains(&format!("Installed locality/locality v{VERSION}")),
        "{out}"
    );
    let lock = first.read(".terraform.lock.hcl").unwrap();
    assert!(
        lock.contains(&format!("version = \"{VERSION}\"")) && lock.contains("\"h1:"),
        "{lock}"
    );
    first.ok(&["apply", "-auto-approve"]);
    assert_eq!(first.output("hint"), "gcp:asia-northeast1");

    // Another directory with that lock file: init verifies the package against it.
    let second = Terraform::from_mirror(&mirror);
    second.write("main.tf", &config);
    second.write(".terraform.lock.hcl", &lock);
    let out = second.ok(&["init"]);
    assert!(
        out.contains(&format!("Installed locality/locality v{VERSION}")),
        "{out}"
    );
    assert_eq!(second.read(".terraform.lock.hcl").unwrap(), lock, "unchanged");

    // The zh: hash a registry records from SHA256SUMS is accepted for the same zip too.
    let zh = format!("zh:{}", sha256(&packed));
    let sums = std::fs::read_to_string(dist.join(format!("terraform-provider-locality_{VERSION}_SHA256SUMS"))).unwrap();
    assert!(sums.contains(&zh[3..]), "SHA256SUMS carries the zip's zh: hash");
    let with_zh = lock.replace("hashes = [\n", &format!("hashes = [\n    \"{zh}\",\n"));
    assert!(with_zh.contains(&zh), "{with_zh}");
    let third = Terraform::from_mirror(&mirror);
    third.write("main.tf", &config);
    third.write(".terraform.lock.hcl", &with_zh);
    third.ok(&["init"]);

    // A tampered zip (one byte of the binary changed) is refused against the lock file.
    let bytes = std::fs::read(provider_binary()).unwrap();
    let mut tampered = bytes.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0xff;
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("terraform-provider-locality"), &tampered).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_locality"), bin.join("locality")).unwrap();
    std::fs::copy(app_binary(), bin.join("locality-app")).unwrap();
    let evil = tmp.path().join("evil-mirror");
    let status = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/package.py"))
        .arg(&bin)
        .arg(VERSION)
        .arg(tmp.path().join("evil-dist"))
        .arg("--mirror")
        .arg(&evil)
        .args(FAST)
        .output()
        .unwrap();
    assert!(status.status.success());
    for lock in [&lock, &with_zh] {
        let victim = Terraform::from_mirror(&evil);
        victim.write("main.tf", &config);
        victim.write(".terraform.lock.hcl", lock);
        let out = victim.fails(&["init"]).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(out.contains("doesn't match any of the checksums"), "{out}");
        assert!(
            !victim.exists(&format!(
                ".terraform/providers/registry.terraform.io/locality/locality/{VERSION}/linux_amd64/terraform-provider-locality_v{VERSION}"
            )),
            "nothing installed"
        );
    }
}

/// Kills the fake registry when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The artifacts served by a registry (HTTPS on 127.0.0.1, SHA256SUMS signed with a throwaway
/// GPG key): `terraform init` verifies the signature and records both the `h1:` hash of the
/// package and the `zh:` hash of the zip from SHA256SUMS.
#[test]
fn terraform_init_from_a_registry_records_h1_and_zh_hashes() {
    let tmp = tempfile::tempdir().unwrap();
    let gnupg = tmp.path().join("gnupg");
    std::fs::create_dir_all(&gnupg).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&gnupg, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let gpg = || {
        let mut c = Command::new("gpg");
        c.env("GNUPGHOME", &gnupg).arg("--batch");
        c
    };
    run_ok(gpg().args([
        "--pinentry-mode",
        "loopback",
        "--passphrase",
        "",
        "--quick-gen-key",
        "locality release test <release-test@localhost>",
        "rsa2048",
        "sign",
        "1d",
    ]));
    let listing = run_ok(gpg().args(["--list-keys", "--with-colons"]));
    let key_id = listing
        .lines()
        .find(|l| l.starts_with("pub:"))
        .and_then(|l| l.split(':').nth(4))
        .unwrap()
        .to_string();
    let armored = tmp.path().join("key.asc");
    std::fs::write(&armored, run_ok(gpg().args(["--armor", "--export", &key_id]))).unwrap();

    let dist = tmp.path().join("dist");
    let bin_dir = provider_binary().parent().unwrap().to_path_buf();
    run_ok(
        Command::new("python3")
            .env("GNUPGHOME", &gnupg)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/package.py"))
            .arg(&bin_dir)
            .arg(VERSION)
            .arg(&dist)
            .args(["--sign", &key_id])
            .args(FAST),
    );
    let sig = dist.join(format!("terraform-provider-locality_{VERSION}_SHA256SUMS.sig"));
    assert!(sig.is_file());

    let (cert, key) = (tmp.path().join("cert.pem"), tmp.path().join("key.pem"));
    run_ok(
        Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-keyout",
            ])
            .arg(&key)
            .arg("-out")
            .arg(&cert),
    );
    let port_file = tmp.path().join("port");
    let registry = Killed(
        Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/fake_registry.py"))
            .arg(&dist)
            .arg(VERSION)
            .arg(&cert)
            .arg(&key)
            .arg(&port_file)
            .arg(&key_id)
            .arg(&armored)
            .spawn()
            .unwrap(),
    );
    let started = std::time::Instant::now();
    while !port_file.exists() {
        assert!(started.elapsed().as_secs() < 20, "the fake registry did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let port = std::fs::read_to_string(&port_file).unwrap();
    let source = format!("localhost:{port}/locality/locality");

    let mut tf = Terraform::with_empty_cli_config();
    tf.env("SSL_CERT_FILE", cert.to_str().unwrap());
    tf.write(
        "main.tf",
        &format!("terraform {{\n  required_providers {{\n    locality = {{\n      source  = \"{source}\"\n      version = \"{VERSION}\"\n    }}\n  }}\n}}\n\nprovider \"locality\" {{}}\n\ndata \"locality_cloud_region\" \"x\" {{\n  ip = \"34.84.1.1\"\n}}\n"),
    );
    let out = tf.ok(&["init"]);
    assert!(
        out.contains(&format!("Installed {source} v{VERSION} (self-signed, key ID")),
        "{out}"
    );
    let lock = tf.read(".terraform.lock.hcl").unwrap();
    let zip = dist.join(format!("terraform-provider-locality_{VERSION}_linux_amd64.zip"));
    assert!(lock.contains("\"h1:"), "{lock}");
    assert!(lock.contains(&format!("\"zh:{}\"", sha256(&zip))), "{lock}");
    tf.ok(&["plan"]);
    drop(registry);
}

/// Every platform the release workflow builds, packed here from stand-in binaries (this machine
/// has only the linux_amd64 Rust target): each platform's names and archive format (Windows:
/// `.exe` binaries and `.zip` CLI and application archives), the combined SHA256SUMS and manifest, the mirror
/// layout with every platform, and byte-identical output when packed again.
#[test]
fn every_platform_is_packed_with_its_names_and_format() {
    const PLATFORMS: [&str; 5] = [
        "linux_amd64",
        "linux_arm64",
        "darwin_amd64",
        "darwin_arm64",
        "windows_amd64",
    ];
    let tmp = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/package.py");
    let release = |dist: &Path, mirror: &Path| {
        let mut parts = Vec::new();
        for platform in PLATFORMS {
            let exe = if platform.starts_with("windows") { ".exe" } else { "" };
            let bin = tmp.path().join(format!("bin-{platform}"));
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(
                bin.join(format!("terraform-provider-locality{exe}")),
                format!("provider for {platform}"),
            )
            .unwrap();
            std::fs::write(bin.join(format!("locality{exe}")), format!("cli for {platform}")).unwrap();
            std::fs::write(bin.join(format!("locality-app{exe}")), format!("app for {platform}")).unwrap();
            let part = dist.with_extension(format!("part-{platform}"));
            run_ok(
                Command::new("python3")
                    .arg(&script)
                    .arg(&bin)
                    .arg(VERSION)
                    .arg(&part)
                    .args(["--platform", platform]),
            );
            parts.push(part);
        }
        run_ok(
            Command::new("python3")
                .arg(&script)
                .args(["--combine", VERSION])
                .arg(dist)
                .args(&parts)
                .arg("--mirror")
                .arg(mirror),
        );
    };
    let (dist, mirror) = (tmp.path().join("dist"), tmp.path().join("mirror"));
    release(&dist, &mirror);
    let names: Vec<String> = files(&dist)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut expected: Vec<String> = PLATFORMS
        .iter()
        .flat_map(|p| {
            let cli = if p.starts_with("windows") { "zip" } else { "tar.gz" };
            [
                format!("terraform-provider-locality_{VERSION}_{p}.zip"),
                format!("locality_{VERSION}_{p}.{cli}"),
                format!("locality-app_{VERSION}_{p}.{cli}"),
            ]
        })
        .chain([
            format!("terraform-provider-locality_{VERSION}_manifest.json"),
            format!("terraform-provider-locality_{VERSION}_SHA256SUMS"),
            format!("locality_{VERSION}_SHA256SUMS"),
        ])
        .collect();
    expected.sort();
    assert_eq!(names, expected);
    // The registry's SHA256SUMS: every provider zip and the manifest, sorted, and right.
    let sums = std::fs::read_to_string(dist.join(format!("terraform-provider-locality_{VERSION}_SHA256SUMS"))).unwrap();
    let listed: Vec<&str> = sums.lines().map(|l| l.split_once("  ").unwrap().1).collect();
    let mut wanted: Vec<String> = PLATFORMS
        .iter()
        .map(|p| format!("terraform-provider-locality_{VERSION}_{p}.zip"))
        .chain([format!("terraform-provider-locality_{VERSION}_manifest.json")])
        .collect();
    wanted.sort();
    assert_eq!(listed, wanted);
    for line in sums.lines().chain(
        std::fs::read_to_string(dist.join(format!("locality_{VERSION}_SHA256SUMS")))
            .unwrap()
            .lines(),
    ) {
        let (digest, name) = line.split_once("  ").unwrap();
        assert_eq!(digest, sha256(&dist.join(name)), "{name}");
    }
    // Windows: the .exe inside both archives; the others: the plain names.
    let listing = |archive: &str| run_ok(Command::new("unzip").arg("-l").arg(dist.join(archive)));
    assert!(
        listing(&format!("terraform-provider-locality_{VERSION}_windows_amd64.zip"))
            .contains(&format!("terraform-provider-locality_v{VERSION}.exe"))
    );
    assert!(listing(&format!("locality_{VERSION}_windows_amd64.zip"))
        .contains(&format!("locality_{VERSION}_windows_amd64/locality.exe")));
    assert!(listing(&format!("locality-app_{VERSION}_windows_amd64.zip"))
        .contains(&format!("locality-app_{VERSION}_windows_amd64/locality-app.exe")));
    // The CLI and application archives of every platform are in their SHA256SUMS.
    let cli_sums = std::fs::read_to_string(dist.join(format!("locality_{VERSION}_SHA256SUMS"))).unwrap();
    assert_eq!(cli_sums.lines().count(), 2 * PLATFORMS.len(), "{cli_sums}");
    let darwin = listing(&format!("terraform-provider-locality_{VERSION}_darwin_arm64.zip"));
    assert!(
        darwin.contains(&format!("terraform-provider-locality_v{VERSION}\n"))
            || darwin.contains(&format!("terraform-provider-locality_v{VERSION} ")),
        "{darwin}"
    );
    let tar = run_ok(
        Command::new("tar")
            .arg("-tzf")
            .arg(dist.join(format!("locality_{VERSION}_linux_arm64.tar.gz"))),
    );
    assert!(
        tar.contains(&format!("locality_{VERSION}_linux_arm64/locality\n")),
        "{tar}"
    );
    // The packed mirror: every platform's zip where `terraform init` looks.
    for platform in PLATFORMS {
        assert!(mirror
            .join(format!(
                "registry.terraform.io/locality/locality/terraform-provider-locality_{VERSION}_{platform}.zip"
            ))
            .is_file());
    }
    // Reproducible across platforms too.
    let (again, again_mirror) = (tmp.path().join("again"), tmp.path().join("again-mirror"));
    release(&again, &again_mirror);
    for file in files(&dist) {
        let name = file.file_name().unwrap();
        assert_eq!(
            std::fs::read(&file).unwrap(),
            std::fs::read(again.join(name)).unwrap(),
            "{name:?}"
        );
    }
    // An unknown platform is refused, naming the known ones.
    let out = Command::new("python3")
        .arg(&script)
        .arg(tmp.path().join("bin-linux_amd64"))
        .arg(VERSION)
        .arg(tmp.path().join("x"))
        .args(["--platform", "plan9_mips"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected one of linux_amd64, linux_arm64"));
}
