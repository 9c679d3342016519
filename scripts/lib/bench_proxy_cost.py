"""What one sidecar costs a host, next to a direct connection and to twemproxy (Debian's
nutcracker), measured in one run on loopback (called by scripts/bench; runs alone too).

Usage: bench_proxy_cost.py LOCALITY_APP VALKEY_SERVER WORKDIR [TABLE]
One Valkey 9 node (the zone's replica) and a reader; redis-benchmark GET (50 clients, 200,000
requests, 64-byte values) straight to the node, through `locality-app sidecar` (HAProxy steered by
the map; its own metrics listener on), and through nutcracker with the node as its only server;
3 rounds in turn, medians. For each: requests/s, p50, and the CPU time the proxy's processes (the
sidecar, HAProxy's master and worker; nutcracker) and the node used, per request, as cores at
10,000 requests/s; the proxy's memory (RSS and PSS of its processes) after the run.
Prints the figures and appends rows (figure, value, baseline, ratio, goal) to TABLE when given.
"""

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

app, valkey, work = sys.argv[1:4]
table = sys.argv[4] if len(sys.argv) > 4 else None
os.makedirs(work, exist_ok=True)
TICK = os.sysconf("SC_CLK_TCK")
ZONE_A, ZONE_B = "ap-northeast-1a", "ap-northeast-1b"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from valkey_nodes import free_port  # noqa: E402
REQUESTS, CLIENTS = 200000, 50


def wait_port(port, what):
    for _ in range(1000):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        time.sleep(0.01)
    raise SystemExit("%s does not answer on %d" % (what, port))


def tree(pid):
    """pid and its descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError):
            pass
    return total / TICK


def memory_kib(pids):
    rss = pss = 0
    for pid in pids:
        try:
            with open("/proc/%d/smaps_rollup" % pid) as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except OSError:
            pass
    return rss, pss


node_dir = os.path.join(work, "node")
os.makedirs(node_dir, exist_ok=True)
node_port, reader_port = free_port(), free_port()
nodes = [subprocess.Popen([valkey, "--port", str(p), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                           "--availability-zone", z, "--dir", node_dir],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
         for p, z in ((node_port, ZONE_A), (reader_port, ZONE_B))]
wait_port(node_port, "valkey")
wait_port(reader_port, "valkey")
with socket.create_connection(("127.0.0.1", node_port)) as s:
    value = "x" * 64
    s.sendall(("*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$64\r\n%s\r\n" % value).encode())
    s.recv(16)

# The sidecar, as deployed: HAProxy steered by the map, its statistics and metrics listeners on.
map_path = os.path.join(work, "map.json")
with open(map_path, "w") as f:
    json.dump({"version": 1, "fallback": "127.0.0.1:%d" % reader_port, "zones": {ZONE_A: "127.0.0.1:%d" % node_port}}, f)
sidecar_port = free_port()
sidecar = subprocess.Popen([app, "sidecar", "--map", map_path, "--zone", ZONE_A, "--listen", "127.0.0.1:%d" % sidecar_port,
                            "--stats", "127.0.0.1:%d" % free_port(), "--metrics", "127.0.0.1:%d" % free_port(),
                            "--run-dir", os.path.join(work, "sidecar-run"), "--cache-dir", os.path.join(work, "cache")],
                           stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "sidecar.log"), "w"))
wait_port(sidecar_port, "the sidecar")

# twemproxy with the node as its only server (no sharding to do), statistics on loopback.
nutcracker_port = free_port()
conf = os.path.join(work, "nutcracker.yml")
with open(conf, "w") as f:
    f.write("zone:\n  listen: 127.0.0.1:%d\n  redis: true\n  hash: fnv1a_64\n  distribution: ketama\n"
            "  auto_eject_hosts: false\n  servers:\n    - 127.0.0.1:%d:1\n" % (nutcracker_port, node_port))
nutcracker = subprocess.Popen(["nutcracker", "-c", conf, "-s", str(free_port()), "-a", "127.0.0.1",
                               "-o", os.path.join(work, "nutcracker.log")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wait_port(nutcracker_port, "nutcracker")

ways = {"direct": (node_port, None), "sidecar": (sidecar_port, sidecar.pid), "nutcracker": (nutcracker_port, nutcracker.pid)}


def run(port, proxy):
    proxy_pids = tree(proxy) if proxy else []
    node_pids = [nodes[0].pid]
    before = (cpu_seconds(proxy_pids), cpu_seconds(node_pids))
    out = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-t", "get", "-n", str(REQUESTS),
                          "-c", str(CLIENTS), "-P", "1", "-d", "64", "--csv", "-q"],
                         capture_output=True, text=True, check=True).stdout
    after = (cpu_seconds(proxy_pids), cpu_seconds(node_pids))
    header, values = [l for l in out.splitlines() if l.strip()][:2]
    fields = dict(zip([h.strip('"') for h in header.split(",")], [v.strip('"') for v in values.split(",")]))
    per_10k = lambda used: used / REQUESTS * 10000  # CPU seconds per 10,000 requests = cores at 10k req/s
    return {"rps": float(fields["rps"]), "p50": float(fields["p50_latency_ms"]),
            "proxy_cores": per_10k(after[0] - before[0]), "node_cores": per_10k(after[1] - before[1])}


results = {name: [] for name in ways}
for _ in range(3):
    for name, (port, proxy) in ways.items():
        results[name].append(run(port, proxy))
median = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in results.items()}
memory = {name: memory_kib(tree(proxy)) for name, (_, proxy) in ways.items() if proxy}

rows = []
for name in ways:
    m = median[name]
    mem = memory.get(name)
    print("%-10s %8.0f req/s  p50 %.3f ms  proxy %.3f cores per 10k req/s  node %.3f cores per 10k req/s%s"
          % (name, m["rps"], m["p50"], m["proxy_cores"], m["node_cores"],
             "  memory RSS %.1f MiB, PSS %.1f MiB" % (mem[0] / 1024, mem[1] / 1024) if mem else ""))
d, s, n = median["direct"], median["sidecar"], median["nutcracker"]
rows.append(("per-host CPU per 10k GET/s: sidecar (locality-app + HAProxy)", "%.3f cores" % s["proxy_cores"],
             "nutcracker %.3f cores" % n["proxy_cores"], "%.2fx" % (s["proxy_cores"] / n["proxy_cores"] if n["proxy_cores"] else float("nan")),
             "-"))
rows.append(("per-host CPU per 10k GET/s: the node itself (direct / sidecar / nutcracker)",
             "%.3f / %.3f / %.3f cores" % (d["node_cores"], s["node_cores"], n["node_cores"]), "-", "-", "-"))
rows.append(("per-host memory: sidecar (RSS / PSS)", "%.1f / %.1f MiB" % (memory["sidecar"][0] / 1024, memory["sidecar"][1] / 1024),
             "nutcracker %.1f / %.1f MiB" % (memory["nutcracker"][0] / 1024, memory["nutcracker"][1] / 1024), "-", "-"))
rows.append(("GET p50, 50 clients: direct / sidecar / nutcracker", "%.3f / %.3f / %.3f ms" % (d["p50"], s["p50"], n["p50"]),
             "direct", "sidecar +%.3f ms" % (s["p50"] - d["p50"]), "-"))
rows.append(("GET throughput, 50 clients: direct / sidecar / nutcracker", "%.0f / %.0f / %.0f req/s" % (d["rps"], s["rps"], n["rps"]),
             "direct", "sidecar %.2fx, nutcracker %.2fx" % (s["rps"] / d["rps"], n["rps"] / d["rps"]), "-"))

sidecar.send_signal(signal.SIGTERM)
sidecar.wait(timeout=10)
nutcracker.send_signal(signal.SIGTERM)
nutcracker.wait(timeout=10)
for p in nodes:
    p.kill()
    p.wait()
if table:
    with open(table, "a") as f:
        for r in rows:
            f.write("\t".join(r) + "\n")
else:
    for r in rows:
        print("\t".join(r))
