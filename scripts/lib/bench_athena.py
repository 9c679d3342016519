#!/usr/bin/env python3
"""`locality audit --athena` against the stand-in Athena (scripts/bench --athena).

Writes RECORDS flow-log records (default 2,000,000; the default format, VPC-wide: every flow at
the client's and the node's interface) spread over 7 days, one folder a day as S3 delivery
lays them out (AWSLogs/ACCOUNT/vpcflowlogs/REGION/yyyy/MM/dd/), starts the stand-in Athena of
tests/fixtures/athena_standin.py over them (DuckDB, the projected table's `day` partition), and
measures in one run, one day asked for (--since/--until):
  - the API calls `--athena` made: the start, the polls, the result pages;
  - the bytes the stand-in scanned (the partitions the query's predicate names), against the
    whole table's: about 1/7;
  - the wall time of `--athena` against the file audit of the same day's folder, and that the
    two give the same share.

Usage: bench_athena.py LOCALITY WORK_DIR [RECORDS]   (run with the audit venv's python: duckdb, sqlglot)
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
DAY0 = 1796083200  # 2026-12-01
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_inputs(work, records):
    with open(os.path.join(work, "map.json"), "w") as f:
        nodes = [{"endpoint": f"{r}:6379", "role": "replica", "zone": z} for r, z in zip(REPLICAS, ZONES)]
        nodes.append({"endpoint": "10.0.1.10:6379", "role": "primary", "zone": ZONES[0]})
        json.dump({"version": 1, "fallback": "reader.example:6379",
                   "zones": {z: f"{r}:6379" for r, z in zip(REPLICAS, ZONES)}, "nodes": nodes}, f)
    with open(os.path.join(work, "subnets.json"), "w") as f:
        json.dump({"Subnets": [{"CidrBlock": f"10.0.{n + 1}.0/24", "AvailabilityZone": z}
                               for n, z in enumerate(ZONES)]}, f)
    logs = os.path.join(work, "logs")
    done = os.path.join(work, f"written-{records}")
    if os.path.exists(done):
        return logs
    rng = random.Random(11)
    per_day = records // 7
    for day in range(7):
        folder = os.path.join(logs, "AWSLogs/123456789012/vpcflowlogs/ap-northeast-1", f"2026/12/{day + 1:02d}")
        os.makedirs(folder, exist_ok=True)
        lines = [HEADER]
        while len(lines) <= per_day:
            z = rng.randrange(3)
            client = f"10.0.{z + 1}.{rng.randrange(2, 250)}"
            node = REPLICAS[z] if rng.random() > 0.1 else REPLICAS[(z + 1) % 3]
            req, ans = rng.randrange(100, 500), rng.randrange(1000, 50000)
            t = DAY0 + day * 86400 + rng.randrange(0, 86000)
            for eni in ("eni-" + client.replace(".", ""), "eni-" + node.replace(".", "")):
                lines.append(f"2 123456789012 {eni} {client} {node} 41000 6379 6 3 {req} {t} {t + 60} ACCEPT OK")
                lines.append(f"2 123456789012 {eni} {node} {client} 6379 41000 6 9 {ans} {t} {t + 60} ACCEPT OK")
        with gzip.open(os.path.join(folder, "part0.log.gz"), "wt", compresslevel=6) as f:
            f.write("\n".join(lines[: per_day + 1]) + "\n")
    open(done, "w").close()
    return logs


def size_of(root):
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(root) for n in names)


def main():
    locality, work = sys.argv[1], sys.argv[2]
    records = int(sys.argv[3]) if len(sys.argv) > 3 else 2_000_000
    os.makedirs(work, exist_ok=True)
    logs = write_inputs(work, records)
    port_file, calls = os.path.join(work, "port"), os.path.join(work, "calls")
    for path in (port_file, calls):
        if os.path.exists(path):
            os.remove(path)
    started = time.monotonic()
    standin = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests/fixtures/athena_standin.py"),
                                "--logs", logs, "--port-file", port_file, "--calls", calls])
    try:
        while not os.path.exists(port_file):
            if standin.poll() is not None:
                sys.exit("the stand-in Athena ended")
            time.sleep(0.05)
        loaded = time.monotonic() - started
        port = open(port_file).read()
        env = dict(os.environ, AWS_ENDPOINT_URL_ATHENA=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="testing",
                   AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="ap-northeast-1", AWS_EC2_METADATA_DISABLED="true")
        common = ["audit", "--map", os.path.join(work, "map.json"), "--subnets", os.path.join(work, "subnets.json"),
                  "--since", "2026-12-04", "--until", "2026-12-04", "--format", "json"]
        t = time.monotonic()
        athena = subprocess.run([locality, *common, "--athena"], env=env, capture_output=True, text=True, check=True)
        athena_s = time.monotonic() - t
        day = os.path.join(logs, "AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/2026/12/04")
        t = time.monotonic()
        files = subprocess.run([locality, *common, "--flow-logs", day], capture_output=True, text=True, check=True)
        files_s = time.monotonic() - t
    finally:
        standin.kill()
    a, f = json.loads(athena.stdout), json.loads(files.stdout)
    made = open(calls).read().split("\n")
    scanned, total = a["athena"]["data_scanned_bytes"], size_of(logs)
    print(f"athena: {records:,} records over 7 days ({total:,} B of gzip), the stand-in loaded them in {loaded:.1f} s")
    print(f"athena: one day asked for: calls 1 start, {made.count('GetQueryExecution')} polls, "
          f"{made.count('GetQueryResults')} result pages ({len([l for l in made if l])} in all)")
    print(f"athena: scanned {scanned:,} B of {total:,} B: {scanned / total:.3f} of the table (1/7 = {1 / 7:.3f}); "
          f"price {a['athena']['cost_usd']:.6f} USD")
    print(f"athena: wall time --athena {athena_s:.2f} s, file audit of the same day {files_s:.2f} s "
          f"(ratio {athena_s / files_s:.2f}); share {a['in_zone_share']} vs {f['in_zone_share']}: "
          f"{'equal' if a['in_zone_share'] == f['in_zone_share'] else 'DIFFERENT'}")
    if a["in_zone_share"] != f["in_zone_share"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
