"""The sidecar held under load, changes and attack for a while (scripts/bench --soak; not CI).

Usage: bench_soak.py LOCALITY_APP VALKEY_SERVER WORKDIR SECONDS
Valkey 9 nodes on loopback (a primary, replicas a1 and a2 in zone a, the reader in zone b), and
`locality-app sidecar --interval 1` in front with both listeners on. For SECONDS:
  - load: redis-benchmark GET at 50 clients through the sidecar, run after run (each a few
    seconds), and a prober: one pooled connection and one new connection reading every 20 ms;
  - changes: the map's zone entry switches between a1 and a2 every 5 s (applied at run time),
    and the zone's replica a1 is SIGKILLed every 30 s and restarted 10 s later;
  - attack: 3,000 idle connections held on the sidecar's metrics listener (opened again as it
    closes them) with an endless header line every 30 s, and 1,000 held on HAProxy's
    statistics listener.
Reports: failed reads outside the failover windows (the 5 s after each kill and each restart;
goal 0), failed reads inside them, p99 through the sidecar against the same run direct to a1
(added latency), and the RSS, threads and descriptors of the sidecar and of HAProxy at the
start (after a 10 s warm-up) and at the end (goal: flat). Prints one line per figure.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from valkey_nodes import ZONE_A, Group, command, free_port  # noqa: E402

app, valkey, work, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
map_path = os.path.join(work, "soak-map.json")
group = Group(valkey, work, map_path)
primary, a1, a2, reader, write_map = group.primary, group.a1, group.a2, group.reader, group.write_map
write_map(a1)
listen, stats, metrics = free_port(), free_port(), free_port()
log = open(os.path.join(work, "soak-sidecar.log"), "w")
sidecar = subprocess.Popen([app, "sidecar", "--map", map_path, "--zone", ZONE_A, "--listen", "127.0.0.1:%d" % listen,
                            "--interval", "1", "--stats", "127.0.0.1:%d" % stats, "--metrics", "127.0.0.1:%d" % metrics,
                            "--run-dir", os.path.join(work, "soak-run"), "--cache-dir", os.path.join(work, "soak-cache")],
                           stdout=subprocess.DEVNULL, stderr=log)
for _ in range(1000):
    try:
        with socket.create_connection(("127.0.0.1", listen)) as s:
            command(s, "PING")
            break
    except OSError:
        time.sleep(0.01)


def footprint(pid):
    """RSS (KiB), threads, descriptors of one process."""
    try:
        status = open("/proc/%d/status" % pid).read()
        fds = len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return (0, 0, 0)
    field = {l.split(":")[0]: l.split(":")[1].split()[0] for l in status.splitlines() if ":" in l and l.split(":")[1].split()}
    return (int(field.get("VmRSS", 0)), int(field.get("Threads", 0)), fds)


def haproxy_pids():
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if open("/proc/%s/cmdline" % entry, "rb").read().split(b"\0")[0].endswith(b"haproxy"):
                    if int(open("/proc/%s/status" % entry).read().split("PPid:")[1].split()[0]) in (sidecar.pid,) or \
                            os.path.realpath("/proc/%s/cwd" % entry) == os.path.realpath(os.path.join(work, "soak-run")):
                        pids.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return pids


def sample():
    own = footprint(sidecar.pid)
    hap = [footprint(p) for p in haproxy_pids()]
    return own, tuple(sum(x[i] for x in hap) for i in range(3)), len(hap)


stop = threading.Event()
events = []  # (time, what)
failures = []  # (time, what)
lock = threading.Lock()


def fail(what):
    with lock:
        failures.append((time.monotonic(), what))


def prober():
    pooled = None
    while not stop.is_set():
        try:
            if pooled is None:
                pooled = socket.create_connection(("127.0.0.1", listen), timeout=3)
            command(pooled, "GET", "k")
        except OSError:
            fail("pooled")
            if pooled:
                pooled.close()
            pooled = None
        try:
            with socket.create_connection(("127.0.0.1", listen), timeout=3) as s:
                command(s, "GET", "k")
        except OSError:
            fail("new")
        time.sleep(0.02)


def hold(port, count, endless_every=None):
    """Keeps `count` idle connections open to `port`, opening again what the server closes."""
    held = []
    last_endless = 0.0
    while not stop.is_set():
        alive = []
        for s in held:
            try:
                s.setblocking(False)
                if s.recv(1) == b"":
                    s.close()
                    continue
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                continue
            alive.append(s)
        held = alive
        opened = 0
        while len(held) < count and opened < 500 and not stop.is_set():
            opened += 1
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=0.05))
            except OSError:
                break
        if endless_every and time.monotonic() - last_endless > endless_every:
            last_endless = time.monotonic()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Endless: ")
                    chunk = b"a" * 65536
                    for _ in range(4096):  # up to 256 MiB
                        s.sendall(chunk)
            except OSError:
                pass
        time.sleep(0.5)
    for s in held:
        s.close()


p99 = {"direct": [], "sidecar": []}
bench_failed = []  # (start, end)


def benchmark_loop():
    while not stop.is_set():
        for name, port in (("direct", a2.port), ("sidecar", listen)):
            started = time.monotonic()
            out = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-t", "get", "-n", "100000",
                                  "-c", "50", "--csv", "-q"], capture_output=True, text=True)
            lines = [l for l in out.stdout.splitlines() if l.strip()]
            if out.returncode != 0 or len(lines) < 2 or "rror" in out.stdout + out.stderr:
                if name == "sidecar":
                    bench_failed.append((started, time.monotonic()))
                continue
            header, values = lines[:2]
            fields = dict(zip([h.strip('"') for h in header.split(",")], [v.strip('"') for v in values.split(",")]))
            p99[name].append(float(fields["p99_latency_ms"]))


def changes():
    start = time.monotonic()
    n = 0
    killed = False
    while not stop.is_set():
        time.sleep(0.2)
        t = time.monotonic() - start
        if t >= 5 * (n + 1):
            n += 1
            write_map(a2 if n % 2 else a1)
        cycle = t % 30
        if cycle < 10 and not killed and t >= 30:
            a1.kill()
            killed = True
            events.append((time.monotonic(), "kill"))
        elif cycle >= 10 and killed:
            a1.start()
            killed = False
            events.append((time.monotonic(), "restart"))
    if killed:
        a1.start()


workers = [threading.Thread(target=f, args=a, daemon=True) for f, a in
           [(prober, ()), (hold, (metrics, 3000, 30)), (hold, (stats, 1000)), (benchmark_loop, ()), (changes, ())]]
for w in workers:
    w.start()
time.sleep(10)
first = sample()
began = time.monotonic()
time.sleep(max(seconds - 10, 1))
last = sample()
ended = time.monotonic()
stop.set()
for w in workers:
    w.join(timeout=60)


def in_window(t):
    return any(0 <= t - at <= 5 for at, _ in events)


def span_in_window(a, b):
    return any(a - 5 <= at <= b for at, _ in events)


outside = [f for f in failures if not in_window(f[0])]
inside = [f for f in failures if in_window(f[0])]
bench_outside = [b for b in bench_failed if not span_in_window(*b)]
kills = sum(1 for _, what in events if what == "kill")
print("soak: %.0f s measured, %d kills and %d restarts of the zone's replica, the map changed every 5 s"
      % (ended - began + 10, kills, len(events) - kills))
print("failed reads outside the failover windows: %d (prober: %d pooled, %d new; redis-benchmark runs: %d)"
      % (len(outside) + len(bench_outside), sum(1 for f in outside if f[1] == "pooled"),
         sum(1 for f in outside if f[1] == "new"), len(bench_outside)))
print("failed reads inside the failover windows (5 s after a kill or a restart): %d prober reads, %d redis-benchmark runs"
      % (len(inside), len(bench_failed) - len(bench_outside)))
if p99["direct"] and p99["sidecar"]:
    d, s = statistics.median(p99["direct"]), statistics.median(p99["sidecar"])
    print("GET p99 at 50 clients, median of %d runs: direct %.3f ms, through the sidecar %.3f ms (added %.3f ms)"
          % (min(len(p99["direct"]), len(p99["sidecar"])), d, s, s - d))
(own0, hap0, n0), (own1, hap1, n1) = first, last
print("sidecar (locality-app): RSS %d → %d KiB, threads %d → %d, descriptors %d → %d"
      % (own0[0], own1[0], own0[1], own1[1], own0[2], own1[2]))
print("HAProxy (%d → %d processes): RSS %d → %d KiB, threads %d → %d, descriptors %d → %d"
      % (n0, n1, hap0[0], hap1[0], hap0[1], hap1[1], hap0[2], hap1[2]))
log.flush()
said = open(os.path.join(work, "soak-sidecar.log")).read()
print("map changes applied: %d at run time, %d by a reload (open sessions stay on the old worker until they end)"
      % (said.count("(applied at run time)"), said.count("(HAProxy reloaded")))
sidecar.send_signal(signal.SIGTERM)
sidecar.wait(timeout=10)
for node in (primary, a1, a2, reader):
    try:
        node.kill()
    except Exception:
        pass
