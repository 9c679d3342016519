#!/usr/bin/env python3
"""`locality audit`'s peak memory per distinct client and per distinct interface id
(scripts/bench --audit-memory; issue 58, item 2).

Writes, as an attacker would, gzip flow-log files (the default format with its header line) in
which every record comes from a new address of one IPv6 /64 (or, for interfaces, is captured by
a new interface id), each talking to a replica of the map, and measures in one run the audit's
peak RSS (getrusage of the child) for each, against the same audit of a 1,000-record file (the
process's own floor). Prints bytes per distinct client or interface: (peak - floor) / distinct.
Goal: at most 300 (2 million clients in 600 MiB or less). Then the same 2 million clients with
--max-clients 1000000: the sentence and the exit status, and the peak at that cap.

Usage: bench_audit_memory.py LOCALITY WORK_DIR [CLIENTS...]   (default: 1000000 2000000)
"""
import gzip
import json
import os
import resource
import subprocess
import sys
import time

HEADER = "version account-id interface-id srcaddr dstaddr srcport dstport protocol packets bytes start end action log-status"
T0 = 1_796_083_200  # 2026-12-01 00:00:00 UTC
REPLICA = "2600:1f18:0:1::11"


def write_inputs(work):
    with open(os.path.join(work, "map.json"), "w") as f:
        json.dump({"version": 1, "fallback": "reader.example:6379",
                   "zones": {"ap-northeast-1a": f"[{REPLICA}]:6379"},
                   "nodes": [{"endpoint": f"[{REPLICA}]:6379", "role": "replica", "zone": "ap-northeast-1a"}]}, f)
    with open(os.path.join(work, "subnets.json"), "w") as f:
        json.dump({"Subnets": [{"CidrBlock": "10.0.1.0/24", "AvailabilityZone": "ap-northeast-1a",
                                "Ipv6CidrBlockAssociationSet": [{"Ipv6CidrBlock": "2600:1f18:0:1::/64"}]},
                               {"CidrBlock": "10.0.2.0/24", "AvailabilityZone": "ap-northeast-1c",
                                "Ipv6CidrBlockAssociationSet": [{"Ipv6CidrBlock": "2600:1f18:0:2::/64"}]}]}, f)


def write_log(path, distinct, kind):
    """`distinct` records: each a new client of the /64 (kind "clients", all at the node's
    interface), or each the same client at a new interface id (kind "interfaces")."""
    if os.path.exists(path):
        return
    with gzip.open(path + ".tmp", "wt", compresslevel=1) as f:
        f.write(HEADER + "\n")
        for n in range(distinct):
            if kind == "clients":
                client, eni = f"2600:1f18:0:2:{n >> 48 & 0xffff:x}:{n >> 32 & 0xffff:x}:{n >> 16 & 0xffff:x}:{n & 0xffff:x}", "eni-0node0000000000"
            else:
                client, eni = "2600:1f18:0:2::7", f"eni-{n:017x}"
            start = T0 + (n % 1440) * 60
            f.write(f"2 123456789012 {eni} {client} {REPLICA} 40000 6379 6 10 4000 {start} {start + 60} ACCEPT OK\n")
    os.rename(path + ".tmp", path)


def peak_rss(argv):
    """Runs argv; its exit status, stderr's last line, and its peak RSS in bytes (its own:
    getrusage of one waited child)."""
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    stderr = process.stderr.read().decode(errors="replace").strip().splitlines()
    return os.waitstatus_to_exitcode(status), (stderr[-1] if stderr else ""), usage.ru_maxrss * 1024, time.monotonic() - started


def main():
    locality, work = sys.argv[1], sys.argv[2]
    counts = [int(n) for n in sys.argv[3:]] or [1_000_000, 2_000_000]
    os.makedirs(work, exist_ok=True)
    write_inputs(work)
    audit = lambda log, *extra: [locality, "audit", "--map", os.path.join(work, "map.json"), "--subnets",
                                 os.path.join(work, "subnets.json"), "--flow-logs", log, "--format", "json", *extra]
    floor_log = os.path.join(work, "floor.log.gz")
    write_log(floor_log, 1000, "clients")
    _, _, floor, _ = peak_rss(audit(floor_log))
    print(f"floor: the audit of 1,000 records peaks at {floor / 2**20:.1f} MiB")
    worst = 0.0
    for kind in ["clients", "interfaces"]:
        for n in counts:
            log = os.path.join(work, f"{kind}-{n}.log.gz")
            write_log(log, n, kind)
            code, last, peak, seconds = peak_rss(audit(log, "--max-clients", str(n)))
            per = (peak - floor) / n
            worst = max(worst, per)
            print(f"{n:>10,} distinct {kind:<10}: exit {code}, peak {peak / 2**20:7.1f} MiB, "
                  f"{per:6.1f} B each over the floor, {seconds:6.1f} s (goal <= 300 B)")
            if code != 0:
                print(f"   {last}")
    n = max(counts)
    log = os.path.join(work, f"clients-{n}.log.gz")
    cap = n // 2
    code, last, peak, _ = peak_rss(audit(log, "--max-clients", str(cap)))
    print(f"{n:,} clients with --max-clients {cap:,}: exit {code} at {peak / 2**20:.1f} MiB peak")
    print(f"   {last}")
    print(f"worst: {worst:.1f} B per distinct client or interface (goal <= 300)")


if __name__ == "__main__":
    main()
