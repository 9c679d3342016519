#!/usr/bin/env python3
"""`locality audit` against the decompression floor (scripts/bench --audit).

Writes FILES gzip flow-log files of RECORDS records each (the default format with its header
line, as S3 delivery writes them; a VPC-wide log: every flow at the client's and the node's
interface), then measures in one run, on this machine:
  - the floor: `gzip -dc` of every file, one after the other (one core);
  - `locality audit --threads 1` over the same files (one core), and with one thread per core;
  - the audit of one file alone and of all of them, for the memory: peak RSS grows with the
    distinct (client, node, interface, window) keys the records hold (the guide's figures).
Prints records/s and the ratios to the floor (goal: at most 1.5x on one core, below it with
several cores).

Usage: bench_audit.py LOCALITY WORK_DIR [FILES] [RECORDS]
"""
import gzip
import json
import os
import random
import subprocess
import sys
import time

ZONES = ["ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"]
REPLICAS = ["10.0.1.11", "10.0.2.11", "10.0.3.11"]
HEADER = "version account-id interface-id srcaddr dstaddr srcport dstport protocol packets bytes start end action log-status"


def write_inputs(work, files, records):
    with open(os.path.join(work, "map.json"), "w") as f:
        nodes = [{"endpoint": f"{r}:6379", "role": "replica", "zone": z} for r, z in zip(REPLICAS, ZONES)]
        nodes.append({"endpoint": "10.0.1.10:6379", "role": "primary", "zone": ZONES[0]})
        json.dump({"version": 1, "fallback": "reader.example:6379",
                   "zones": {z: f"{r}:6379" for r, z in zip(REPLICAS, ZONES)}, "nodes": nodes}, f)
    with open(os.path.join(work, "subnets.json"), "w") as f:
        json.dump({"Subnets": [{"CidrBlock": f"10.0.{n + 1}.0/24", "AvailabilityZone": z}
                               for n, z in enumerate(ZONES)]}, f)
    rng = random.Random(7)
    paths = []
    for n in range(files):
        path = os.path.join(work, f"part{n}.log.gz")
        paths.append(path)
        if os.path.exists(path):
            continue
        lines = [HEADER]
        start = 1796083200
        while len(lines) <= records:
            z = rng.randrange(3)
            client = f"10.0.{z + 1}.{rng.randrange(2, 250)}"
            # One read in ten crosses a zone; half the records are other traffic.
            node = REPLICAS[z] if rng.random() > 0.1 else REPLICAS[(z + 1) % 3]
            if rng.random() < 0.5:
                node = f"10.0.9.{rng.randrange(2, 250)}"
            req, ans = rng.randrange(100, 500), rng.randrange(1000, 50000)
            t = start + rng.randrange(0, 3600)
            for eni in ("eni-" + client.replace(".", ""), "eni-" + node.replace(".", "")):
                lines.append(f"2 123456789012 {eni} {client} {node} 41000 6379 6 3 {req} {t} {t + 60} ACCEPT OK")
                lines.append(f"2 123456789012 {eni} {node} {client} 6379 41000 6 9 {ans} {t} {t + 60} ACCEPT OK")
        with gzip.open(path, "wt", compresslevel=6) as f:
            f.write("\n".join(lines[: records + 1]) + "\n")
    return paths


def timed(cmd):
    """Wall seconds and standard output of one command."""
    started = time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    took = time.monotonic() - started
    if out.returncode != 0:
        sys.exit(f"{cmd[0]} failed: {out.stderr.decode()[-2000:]}")
    return took, out.stdout


def peak_rss(cmd):
    """The peak RSS (KiB) of one command, measured in a fresh process (ru_maxrss of children
    only grows)."""
    probe = "import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    return int(subprocess.run([sys.executable, "-c", probe] + cmd, capture_output=True, text=True, check=True).stdout)


def main():
    locality, work = sys.argv[1], sys.argv[2]
    files = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    records = int(sys.argv[4]) if len(sys.argv) > 4 else 1_000_000
    os.makedirs(work, exist_ok=True)
    started = time.monotonic()
    paths = write_inputs(work, files, records)
    print(f"audit: {files} gzip files of {records:,} records ({sum(os.path.getsize(p) for p in paths) / 1e6:.0f} MB compressed), written in {time.monotonic() - started:.0f} s")
    base = [locality, "audit", "--map", os.path.join(work, "map.json"), "--subnets", os.path.join(work, "subnets.json"), "--format", "json"]
    rounds = 3
    floor, one, many = [], [], []
    for _ in range(rounds):
        t0 = time.monotonic()
        for p in paths:
            subprocess.run(["gzip", "-dc", p], stdout=subprocess.DEVNULL, check=True)
        floor.append(time.monotonic() - t0)
        took, out = timed(base + ["--threads", "1"] + sum((["--flow-logs", p] for p in paths), []))
        one.append(took)
        took, out = timed(base + sum((["--flow-logs", p] for p in paths), []))
        many.append(took)
    figures = json.loads(out)
    # Peak RSS: one file, then all of them (one thread each time, so the difference is records).
    rss_one = peak_rss(base + ["--threads", "1", "--flow-logs", paths[0]])
    rss_all = peak_rss(base + ["--threads", "1"] + sum((["--flow-logs", p] for p in paths), []))
    med = lambda xs: sorted(xs)[len(xs) // 2]
    total = files * records
    cores = os.cpu_count()
    print(f"  records read by the audit: {figures['records']:,} (in-zone share {figures['in_zone_share']:.4f})")
    print(f"  gzip -dc, one file after another (one core): {med(floor):.2f} s, {total / med(floor) / 1e6:.2f} M records/s")
    print(f"  locality audit --threads 1:                 {med(one):.2f} s, {total / med(one) / 1e6:.2f} M records/s, {med(one) / med(floor):.2f}x the floor (goal: at most 1.5x)")
    print(f"  locality audit ({cores} threads):              {med(many):.2f} s, {total / med(many) / 1e6:.2f} M records/s, {med(many) / med(floor):.2f}x the floor (goal: below 1x)")
    print(f"  peak RSS, one thread: {rss_one / 1024:.1f} MiB for {records:,} records, {rss_all / 1024:.1f} MiB for {total:,}")
    print(f"  (medians of {rounds} rounds in turn; {cores} cores)")


if __name__ == "__main__":
    main()
