#!/usr/bin/env python3
"""Terraform's cost per resource kind, for scripts/bench (never asserted in tests).

For each kind: REPS times, a fresh directory with N resources, `terraform apply` (creates N)
then `terraform plan` (refreshes N, no changes); the wall time of the two together and the CPU
time of terraform and its provider processes (rusage of the children). Then one more apply
+ plan under `perf record` (when perf works) splits that CPU between the terraform process and the
provider. Prints one tab-separated line per kind:

    kind  median_ms  min_ms  max_ms  cpu_ms  terraform_cpu_share(or -)  state_bytes_per_instance

The kinds separate Terraform's own resource (`terraform_data`), the protocol floor
(`locality_floor`: the same RPCs through locality's protocol layer, a minimal schema, no
work), the floor with `locality_zone_replica_map`'s schema varied one thing at a time, and the
real `locality_zone_replica_map` (file target). The floor resources come from
benches/floor/provider.rs (`cargo build --release --example floor-provider`).

usage: bench_terraform.py N REPS RELEASE_DIR FLOOR_DIR WORK_DIR
"""

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

PROVIDER_BLOCK = 'terraform {\n  required_providers {\n    locality = {\n      source = "locality/locality"\n    }\n  }\n}\n'

ZRM_BLOCKS = (
    'resource "{type}" "m{i}" {{\n  fallback_endpoint = "reader-{i}.example:6379"\n'
    '  member {{\n    endpoint = "node-{i}.example:6379"\n    zone     = "ap-northeast-1a"\n  }}\n'
    '  file {{\n    path = "out/m{i}.json"\n  }}\n}}\n'
)
ZRM_NESTED = (
    'resource "{type}" "m{i}" {{\n  fallback_endpoint = "reader-{i}.example:6379"\n'
    '  member = [{{\n    endpoint = "node-{i}.example:6379"\n    zone     = "ap-northeast-1a"\n  }}]\n'
    '  file = {{\n    path = "out/m{i}.json"\n  }}\n}}\n'
)

# (kind, which provider, resource type, template)
KINDS = [
    ("terraform_data", None, "terraform_data", 'resource "terraform_data" "d{i}" {{\n  input = "node-{i}.example:6379"\n}}\n'),
    ("locality_floor", "floor", "locality_floor", 'resource "locality_floor" "f{i}" {{\n  input = "node-{i}.example:6379"\n}}\n'),
    ("locality_floor_zrm", "floor", "locality_floor_zrm", ZRM_BLOCKS),
    ("locality_floor_zrm_plain", "floor", "locality_floor_zrm_plain", ZRM_BLOCKS),
    ("locality_floor_zrm_nested", "floor", "locality_floor_zrm_nested", ZRM_NESTED),
    ("locality_floor_zrm_nodesc", "floor", "locality_floor_zrm_nodesc", ZRM_BLOCKS),
    ("locality_floor_zrm_nocomputed", "floor", "locality_floor_zrm_nocomputed", ZRM_BLOCKS),
    ("locality_floor_big", "floor", "locality_floor_big", 'resource "locality_floor_big" "f{i}" {{\n  input = "node-{i}.example:6379"\n}}\n'),
    ("locality_zone_replica_map", "release", "locality_zone_replica_map", ZRM_BLOCKS),
]


def main():
    n, reps = int(sys.argv[1]), int(sys.argv[2])
    providers = {"release": sys.argv[3], "floor": sys.argv[4]}
    work = sys.argv[5]
    env = dict(os.environ, CHECKPOINT_DISABLE="1", TF_IN_AUTOMATION="1")
    for key in ("TF_LOG", "TF_LOG_PROVIDER", "TF_REATTACH_PROVIDERS"):
        env.pop(key, None)
    perf = shutil.which("perf") is not None
    for kind, provider, type_name, template in KINDS:
        kind_env = dict(env)
        if provider:
            # dev_overrides wants a directory holding terraform-provider-locality.
            bin_dir = os.path.join(work, f"bin-{provider}")
            if not os.path.isdir(bin_dir):
                os.makedirs(bin_dir)
                os.symlink(providers[provider], os.path.join(bin_dir, "terraform-provider-locality"))
            rc = os.path.join(work, f"{provider}.tfrc")
            with open(rc, "w") as f:
                f.write(f'provider_installation {{\n  dev_overrides {{\n    "locality/locality" = "{bin_dir}"\n  }}\n  direct {{}}\n}}\n')
            kind_env["TF_CLI_CONFIG_FILE"] = rc
        else:
            kind_env["TF_CLI_CONFIG_FILE"] = os.path.join(work, "none.tfrc")
            open(kind_env["TF_CLI_CONFIG_FILE"], "w").close()
        config = (PROVIDER_BLOCK if provider else "") + "".join(
            template.format(type=type_name, i=i) for i in range(1, n + 1)
        )
        walls, cpus = [], []
        for rep in range(reps + (1 if perf else 0)):
            d = os.path.join(work, f"{kind}-{rep}")
            os.makedirs(d)
            with open(os.path.join(d, "main.tf"), "w") as f:
                f.write(config)
            if rep == reps:  # the extra, profiled run
                share = profiled_share(d, kind_env)
                continue
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            for args in (["apply", "-auto-approve"], ["plan"]):
                subprocess.run(["terraform", f"-chdir={d}", *args, "-no-color"], env=kind_env, check=True,
                               stdout=subprocess.DEVNULL)
            walls.append((time.perf_counter() - started) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
            if rep == 0:
                with open(os.path.join(d, "terraform.tfstate")) as f:
                    state_bytes = len(json.dumps(json.load(f), indent=2)) // n
        share_text = f"{share:.2f}" if perf and share is not None else "-"
        print(f"{kind}\t{statistics.median(walls):.0f}\t{min(walls):.0f}\t{max(walls):.0f}\t"
              f"{statistics.median(cpus):.0f}\t{share_text}\t{state_bytes}", flush=True)


def profiled_share(d, env):
    """The terraform process's share of the CPU samples of one apply + plan (the rest is the
    provider's), or None when perf cannot record here."""
    data = os.path.join(d, "perf.data")
    try:
        for args in (["apply", "-auto-approve"], ["plan"]):
            subprocess.run(["perf", "record", "-q", "-F", "1999", "-o", data + args[0], "--", "terraform", f"-chdir={d}",
                            *args, "-no-color"], env=env, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        total = ours = 0.0
        for args in (["apply"], ["plan"]):
            out = subprocess.run(["perf", "report", "-i", data + args[0], "--stdio", "-q", "--sort", "comm",
                                  "-F", "sample,comm"], capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                parts = line.split()
                if len(parts) >= 2 and parts[0].isdigit():
                    total += int(parts[0])
                    if parts[1] == "terraform":
                        ours += int(parts[0])
        return ours / total if total else None
    except (subprocess.CalledProcessError, OSError):
        return None


if __name__ == "__main__":
    main()
