"""locality sidecar, measured in one run on loopback (called by scripts/bench).

Usage: bench_sidecar.py LOCALITY VALKEY_SERVER WORKDIR TABLE
Valkey 9 nodes (a primary and two replicas in zone a, the reader in zone b), the sidecar in front
(--interval 1), then:
  - redis-benchmark GET at 1 and 50 clients, direct to the replica vs through the sidecar
    (alternating, 3 rounds each, medians): p50, p99, requests/s;
  - failover: 4 persistent client connections reading in a loop (reconnecting on error) and a
    new connection every 20 ms; the replica SIGKILLed: failed commands per open connection,
    failed new connects, time until a new connection reads (from the reader);
  - recovery: the replica restarted: time until a new connection's read lands on it (counted on
    the node);
  - map change: the map rewritten to the other replica: time until a new connection's read lands
    on it;
  - start-up: a map whose zone has 50 silent replicas: time from the start to the first read
    (served by the reader).
Prints the figures and appends rows (figure, value, baseline, ratio, goal) to TABLE.
"""

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

locality, valkey, work, table = sys.argv[1:5]
ZONE_A, ZONE_B = "ap-northeast-1a", "ap-northeast-1b"


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from valkey_nodes import Group, command, free_port  # noqa: E402

map_path = os.path.join(work, "sidecar-map.json")
group = Group(valkey, work, map_path)
primary, a1, a2, reader, write_map = group.primary, group.a1, group.a2, group.reader, group.write_map
write_map(a1)
listen = free_port()
sidecar = subprocess.Popen([locality, "sidecar", "--map", map_path, "--zone", ZONE_A, "--listen", "127.0.0.1:%d" % listen,
                            "--interval", "1", "--stats", "off", "--metrics", "off", "--run-dir", os.path.join(work, "sidecar-run"),
                            "--cache-dir", os.path.join(work, "sidecar-cache")],
                           stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "sidecar.log"), "w"))
for _ in range(500):
    try:
        with socket.create_connection(("127.0.0.1", listen)) as s:
            command(s, "PING")
            break
    except OSError:
        time.sleep(0.01)

rows = []


def row(*cells):
    rows.append("\t".join(cells))


def benchmark(port, clients):
    out = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-t", "get", "-n",
                          str(20000 if clients == 1 else 200000), "-c", str(clients), "-P", "1", "--csv", "-q"],
                         capture_output=True, text=True, check=True).stdout
    header, values = [l for l in out.splitlines() if l.strip()][:2]
    fields = dict(zip([h.strip('"') for h in header.split(",")], [v.strip('"') for v in values.split(",")]))
    return float(fields["rps"]), float(fields["p50_latency_ms"]), float(fields["p99_latency_ms"])


for clients in (1, 50):
    direct, through = [], []
    for _ in range(3):
        direct.append(benchmark(a1.port, clients))
        through.append(benchmark(listen, clients))
    d = [statistics.median(x[i] for x in direct) for i in range(3)]
    t = [statistics.median(x[i] for x in through) for i in range(3)]
    print("redis-benchmark GET, %d client(s), medians of 3: direct %.0f req/s p50 %.3f ms p99 %.3f ms; "
          "through the sidecar %.0f req/s p50 %.3f ms p99 %.3f ms" % (clients, *d, *t))
    row("sidecar GET p50 / p99, %d client(s) (redis-benchmark)" % clients, "%.3f / %.3f ms" % (t[1], t[2]),
        "direct %.3f / %.3f ms" % (d[1], d[2]), "p50 +%.3f ms" % (t[1] - d[1]), "p50 added <= 0.1 ms")
    row("sidecar GET throughput, %d client(s)" % clients, "%.0f req/s" % t[0], "direct %.0f req/s" % d[0],
        "%.2fx" % (t[0] / d[0]), ">= 0.8x at 50 clients" if clients == 50 else "-")

# Failover.
stop = threading.Event()
failures = [0] * 4


def reader_loop(i):
    sock = None
    while not stop.is_set():
        try:
            if sock is None:
                sock = socket.create_connection(("127.0.0.1", listen), timeout=3)
            command(sock, "GET", "k")
        except OSError:
            failures[i] += 1
            if sock:
                sock.close()
            sock = None
        time.sleep(0.002)


threads = [threading.Thread(target=reader_loop, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
time.sleep(1)


def fresh_read():
    try:
        with socket.create_connection(("127.0.0.1", listen), timeout=3) as s:
            command(s, "GET", "k")
            return True
    except OSError:
        return False


killed = time.monotonic()
a1.kill()
failed_connects, served_at = 0, None
while time.monotonic() - killed < 3:
    if fresh_read():
        served_at = served_at or time.monotonic() - killed
    else:
        failed_connects += 1
    time.sleep(0.02)
stop.set()
for t in threads:
    t.join()
print("failover: failed commands per open connection %s; failed new connects %d; first new connection served %.3f s after SIGKILL"
      % (failures, failed_connects, served_at or -1))
row("failover: failed commands per connection open at the kill", "max %d (of 4 connections: %s)" % (max(failures), failures), "-", "-", "<= 1")
row("failover: new connections served by the reader after SIGKILL", "%.3f s, %d failed connects" % (served_at or -1, failed_connects), "-", "-", "<= 2 s, 0 failed")

# Recovery.
a1.start()
answered = time.monotonic()
recovered = None
while time.monotonic() - answered < 15:
    before = a1.gets()
    if fresh_read() and a1.gets() > before:
        recovered = time.monotonic() - answered
        break
    time.sleep(0.02)
print("recovery: reads back on the replica %.3f s after it answered again" % (recovered or -1))
row("recovery: reads back on the replica after it answers", "%.3f s" % (recovered or -1), "-", "-", "<= 5 s")

# Map change.
written = time.monotonic()
write_map(a2)
moved = None
while time.monotonic() - written < 15:
    before = a2.gets()
    if fresh_read() and a2.gets() > before:
        moved = time.monotonic() - written
        break
    time.sleep(0.02)
print("map change: the new replica serves %.3f s after the map was written (interval 1 s)" % (moved or -1))
row("map change: new replica serves (--interval 1)", "%.3f s" % (moved or -1), "interval 1 s", "-", "<= 1 interval")

sidecar.send_signal(signal.SIGTERM)
sidecar.wait(timeout=10)

# Start-up with 50 silent replicas (listening, never answering): the first read, from the reader,
# after the start. Probed at once within one deadline (the check timeout, 300 ms).
silent = []
for _ in range(50):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    silent.append(s)
silent_map = os.path.join(work, "sidecar-silent-map.json")
with open(silent_map, "w") as f:
    json.dump({"version": 1, "fallback": reader.endpoint(),
               "zones": {ZONE_A: "127.0.0.1:%d" % silent[0].getsockname()[1]},
               "replicas": {ZONE_A: ["127.0.0.1:%d" % s.getsockname()[1] for s in silent]}}, f)
listen = free_port()
started = time.monotonic()
quiet = subprocess.Popen([locality, "sidecar", "--map", silent_map, "--zone", ZONE_A, "--listen", "127.0.0.1:%d" % listen,
                          "--stats", "off", "--metrics", "off", "--run-dir", os.path.join(work, "sidecar-silent-run"),
                          "--cache-dir", os.path.join(work, "sidecar-cache")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
first = None
while time.monotonic() - started < 30:
    if fresh_read():
        first = time.monotonic() - started
        break
    time.sleep(0.01)
print("start-up: 50 silent replicas, first read (from the reader) %.3f s after the start" % (first or -1))
row("start-up with 50 silent replicas: first read", "%.3f s" % (first or -1), "check timeout 0.3 s",
    "%.1fx" % ((first or 0) / 0.3), "< 2 s")
quiet.send_signal(signal.SIGTERM)
quiet.wait(timeout=10)
for s in silent:
    s.close()
for n in (primary, a1, a2, reader):
    n.kill()
with open(table, "a") as f:
    for r in rows:
        f.write(r + "\n")
