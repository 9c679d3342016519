#!/usr/bin/env python3
"""Packs built binaries into the release artifacts, byte for byte the same on every run.

    scripts/package.py BIN_DIR VERSION OUT_DIR [--platform OS_ARCH] [--mirror MIRROR_DIR] [--sign GPG_KEY_ID] [--level N]
    scripts/package.py --combine VERSION OUT_DIR PART_DIR... [--mirror MIRROR_DIR] [--sign GPG_KEY_ID]

The first form packs one platform's binaries (BIN_DIR holds `terraform-provider-locality`,
`locality` and `locality-app`, with `.exe` on Windows; --platform defaults to this machine's, one of linux_amd64,
linux_arm64, darwin_amd64, darwin_arm64, windows_amd64) and then writes the release files for
it; the second gathers the archives of several platforms' OUT_DIRs (the release workflow's
native builds) into one release. Release files in OUT_DIR:
  terraform-provider-locality_VERSION_OS_ARCH.zip        the binary as terraform-provider-locality_vVERSION(.exe)
  terraform-provider-locality_VERSION_manifest.json      from terraform-registry-manifest.json
  terraform-provider-locality_VERSION_SHA256SUMS         sha256 of the zips and the manifest (registry format)
  locality_VERSION_OS_ARCH.tar.gz (.zip on Windows)      the CLI with README.md, LICENSE, CHANGELOG.md
  locality-app_VERSION_OS_ARCH.tar.gz (.zip on Windows)  the application-side binary (resolve, sidecar), the same three
  locality_VERSION_SHA256SUMS                            sha256 of the CLI and application archives
With --sign, also terraform-provider-locality_VERSION_SHA256SUMS.sig (gpg --detach-sign with
that key), which a registry serves so that `terraform init` verifies the checksums and records
the zh: hashes. --level sets the deflate level (default 9; tests use 1 on debug binaries). With
--mirror, also a packed filesystem mirror for `terraform init`, every platform's zip in
  MIRROR_DIR/registry.terraform.io/locality/locality/

Reproducible: fixed timestamps (1980-01-01, the zip epoch), owners and modes, sorted entries,
gzip without a name or time. `scripts/release` packs twice and compares.
"""
import gzip
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
TAR_TIME = 315532800  # 1980-01-01T00:00:00Z


def zip_one(path, name, data, level):
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # unix, so that the mode below is honoured
    info.external_attr = (0o100755 & 0xFFFF) << 16
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(info, data, compresslevel=level)


def zip_many(path, members, level):
    with zipfile.ZipFile(path, "w") as z:
        for name, data, mode in sorted(members):
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = ((0o100000 | mode) & 0xFFFF) << 16
            z.writestr(info, data, compresslevel=level)


def tar_gz(path, members, level):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, TAR_TIME
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    with open(path, "wb") as out:
        with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=level) as gz:
            gz.write(raw.getvalue())


def read(path):
    with open(path, "rb") as f:
        return f.read()


PLATFORMS = ["linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64"]


def host_platform():
    """linux_amd64, darwin_arm64, ... of this machine (the release workflow builds natively)."""
    import platform
    system = {"Linux": "linux", "Darwin": "darwin", "Windows": "windows"}.get(platform.system(), platform.system().lower())
    if system.startswith(("mingw", "msys", "cygwin")):
        system = "windows"
    machine = {"x86_64": "amd64", "AMD64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())
    return f"{system}_{machine}"


def pack(bin_dir, version, out, target, level):
    """One platform's archives: the provider zip, and the CLI's and the application-side binary's
    archives (.zip on Windows, else .tar.gz)."""
    if target not in PLATFORMS:
        sys.exit(f"package.py: unknown platform {target!r}; expected one of {', '.join(PLATFORMS)}")
    exe = ".exe" if target.startswith("windows_") else ""
    os.makedirs(out, exist_ok=True)
    provider = f"terraform-provider-locality_{version}"
    zip_one(os.path.join(out, f"{provider}_{target}.zip"), f"terraform-provider-locality_v{version}{exe}",
            read(os.path.join(bin_dir, f"terraform-provider-locality{exe}")), level)
    for binary in ("locality", "locality-app"):
        folder = f"{binary}_{version}_{target}"
        members = [
            (f"{folder}/{binary}{exe}", read(os.path.join(bin_dir, f"{binary}{exe}")), 0o755),
            (f"{folder}/README.md", read(os.path.join(ROOT, "README.md")), 0o644),
            (f"{folder}/LICENSE", read(os.path.join(ROOT, "LICENSE")), 0o644),
            (f"{folder}/CHANGELOG.md", read(os.path.join(ROOT, "CHANGELOG.md")), 0o644),
        ]
        if exe:
            zip_many(os.path.join(out, f"{folder}.zip"), members, level)
        else:
            tar_gz(os.path.join(out, f"{folder}.tar.gz"), members, level)


def combine(version, out, parts, mirror, sign):
    """The release from one or more platforms' archives: the registry manifest, SHA256SUMS of
    the provider zips and the manifest (the registry's format, signed with --sign), SHA256SUMS
    of the CLI and application archives, and with --mirror a packed filesystem mirror of every platform."""
    os.makedirs(out, exist_ok=True)
    provider = f"terraform-provider-locality_{version}"
    for part in parts:
        for name in sorted(os.listdir(part)):
            if name.startswith((f"{provider}_", f"locality_{version}_", f"locality-app_{version}_")) and name.endswith(
                (".zip", ".tar.gz")
            ):
                if os.path.abspath(part) != os.path.abspath(out):
                    shutil.copyfile(os.path.join(part, name), os.path.join(out, name))
    names = sorted(os.listdir(out))
    zips = [n for n in names if n.startswith(f"{provider}_") and n.endswith(".zip")]
    clis = [
        n
        for n in names
        if n.startswith((f"locality_{version}_", f"locality-app_{version}_")) and n.endswith((".zip", ".tar.gz"))
    ]
    if not zips or not clis:
        sys.exit(f"package.py: no archives of version {version} in {', '.join(parts)}")
    manifest_name = f"{provider}_manifest.json"
    shutil.copyfile(os.path.join(ROOT, "terraform-registry-manifest.json"), os.path.join(out, manifest_name))

    def sums(files):
        return "".join(f"{hashlib.sha256(read(os.path.join(out, n))).hexdigest()}  {n}\n" for n in sorted(files))

    sums_path = os.path.join(out, f"{provider}_SHA256SUMS")
    with open(sums_path, "w") as f:
        f.write(sums(zips + [manifest_name]))
    if sign:
        subprocess.run(["gpg", "--batch", "--yes", "--local-user", sign, "--output", sums_path + ".sig",
                        "--detach-sign", sums_path], check=True)
    with open(os.path.join(out, f"locality_{version}_SHA256SUMS"), "w") as f:
        f.write(sums(clis))
    if mirror:
        target = os.path.join(mirror, "registry.terraform.io", "locality", "locality")
        os.makedirs(target, exist_ok=True)
        for name in zips:
            shutil.copyfile(os.path.join(out, name), os.path.join(target, name))


def main(argv):
    args = argv[1:]
    options = {}
    for flag in ("--mirror", "--sign", "--level", "--platform"):
        if flag in args:
            i = args.index(flag)
            options[flag] = args[i + 1]
            del args[i : i + 2]
    combine_only = "--combine" in args
    if combine_only:
        args.remove("--combine")
    mirror, sign = options.get("--mirror"), options.get("--sign")
    level = int(options.get("--level", "9"))
    if combine_only:
        if len(args) < 3:
            sys.exit(__doc__)
        version, out, parts = args[0], args[1], args[2:]
        combine(version, out, parts, mirror, sign)
        return
    if len(args) != 3:
        sys.exit(__doc__)
    bin_dir, version, out = args
    pack(bin_dir, version, out, options.get("--platform", host_platform()), level)
    combine(version, out, [out], mirror, sign)


if __name__ == "__main__":
    main(sys.argv)
