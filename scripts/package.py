#!/usr/bin/env python3
"""Packs built binaries into the release artifacts, byte for byte the same on every run.

    scripts/package.py BIN_DIR VERSION OUT_DIR [--mirror MIRROR_DIR] [--sign GPG_KEY_ID] [--level N]

BIN_DIR holds `terraform-provider-locality` and `locality`. Writes to OUT_DIR:
  terraform-provider-locality_VERSION_linux_amd64.zip   the binary as terraform-provider-locality_vVERSION
  terraform-provider-locality_VERSION_manifest.json     from terraform-registry-manifest.json
  terraform-provider-locality_VERSION_SHA256SUMS        sha256 of the two above (registry format)
  locality_VERSION_linux_amd64.tar.gz                   the CLI with README.md, LICENSE, CHANGELOG.md
  locality_VERSION_SHA256SUMS                           sha256 of the CLI tarball
With --sign, also terraform-provider-locality_VERSION_SHA256SUMS.sig (gpg --detach-sign with
that key), which a registry serves so that `terraform init` verifies the checksums and records
the zh: hashes. --level sets the deflate level (default 9; tests use 1 on debug binaries). With --mirror, also a packed filesystem mirror for `terraform init`:
  MIRROR_DIR/registry.terraform.io/locality/locality/terraform-provider-locality_VERSION_linux_amd64.zip

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
PLATFORM = "linux_amd64"


def zip_one(path, name, data, level):
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # unix, so that the mode below is honoured
    info.external_attr = (0o100755 & 0xFFFF) << 16
    with zipfile.ZipFile(path, "w") as z:
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


def main(argv):
    args = argv[1:]
    options = {}
    for flag in ("--mirror", "--sign", "--level"):
        if flag in args:
            i = args.index(flag)
            options[flag] = args[i + 1]
            del args[i : i + 2]
    mirror, sign = options.get("--mirror"), options.get("--sign")
    level = int(options.get("--level", "9"))
    if len(args) != 3:
        sys.exit(__doc__)
    bin_dir, version, out = args
    os.makedirs(out, exist_ok=True)
    provider = f"terraform-provider-locality_{version}"
    zip_name = f"{provider}_{PLATFORM}.zip"
    manifest_name = f"{provider}_manifest.json"
    zip_one(os.path.join(out, zip_name), f"terraform-provider-locality_v{version}",
            read(os.path.join(bin_dir, "terraform-provider-locality")), level)
    shutil.copyfile(os.path.join(ROOT, "terraform-registry-manifest.json"), os.path.join(out, manifest_name))
    sums = "".join(
        f"{hashlib.sha256(read(os.path.join(out, name))).hexdigest()}  {name}\n"
        for name in sorted([zip_name, manifest_name])
    )
    sums_path = os.path.join(out, f"{provider}_SHA256SUMS")
    with open(sums_path, "w") as f:
        f.write(sums)
    if sign:
        subprocess.run(["gpg", "--batch", "--yes", "--local-user", sign, "--output", sums_path + ".sig",
                        "--detach-sign", sums_path], check=True)
    folder = f"locality_{version}_{PLATFORM}"
    tar_gz(os.path.join(out, f"{folder}.tar.gz"), [
        (f"{folder}/locality", read(os.path.join(bin_dir, "locality")), 0o755),
        (f"{folder}/README.md", read(os.path.join(ROOT, "README.md")), 0o644),
        (f"{folder}/LICENSE", read(os.path.join(ROOT, "LICENSE")), 0o644),
        (f"{folder}/CHANGELOG.md", read(os.path.join(ROOT, "CHANGELOG.md")), 0o644),
    ], level)
    tarball = f"{folder}.tar.gz"
    with open(os.path.join(out, f"locality_{version}_SHA256SUMS"), "w") as f:
        f.write(f"{hashlib.sha256(read(os.path.join(out, tarball))).hexdigest()}  {tarball}\n")
    if mirror:
        target = os.path.join(mirror, "registry.terraform.io", "locality", "locality")
        os.makedirs(target, exist_ok=True)
        shutil.copyfile(os.path.join(out, zip_name), os.path.join(target, zip_name))


if __name__ == "__main__":
    main(sys.argv)
