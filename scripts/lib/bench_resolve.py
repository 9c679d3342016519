#!/usr/bin/env python3
"""`locality resolve` wall time and metadata requests, for scripts/bench.

Usage: bench_resolve.py WORK_DIR BINARY...   (prints one tab-separated row per binary and case:
binary, name, median ms of 30, /bin/true median ms, most metadata requests of one run)

The cases: the zone given (--zone) with a file map; the zone from a cached detection; a cold
detection (a fresh cache directory each run) through a loopback IMDS that follows the IMDSv2
contract (Python's http.server, counting requests). Within a case the binaries and /bin/true run
in turn, round after round, so that a noisy moment costs each of them alike.
"""
import http.server, json, os, statistics, subprocess, sys, threading, time
work, binaries = sys.argv[1], sys.argv[2:]
count = [0]
class Imds(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def answer(self, body):
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_PUT(self):
        count[0] += 1; self.answer(b"token")
    def do_GET(self):
        count[0] += 1
        self.answer(b"apne1-az4" if self.path.endswith("-id") else b"ap-northeast-1a")
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Imds)
threading.Thread(target=server.serve_forever, daemon=True).start()
map_path = os.path.join(work, "resolve-map.json")
json.dump({"version": 1, "fallback": "reader.example:6379", "zones": {"ap-northeast-1a": "replica-a.example:6379"}}, open(map_path, "w"))
env = {"PATH": os.environ.get("PATH", ""), "AWS_EC2_METADATA_SERVICE_ENDPOINT": f"http://127.0.0.1:{server.server_port}"}
def cache_of(index, cold=None):
    # Each binary its own cache: a cold run must find none, a warm one its own.
    return os.path.join(work, f"resolve-cache-{index}-cold-{cold}" if cold is not None else f"resolve-cache-{index}")
def run(args):
    count[0] = 0
    start = time.perf_counter()
    out = subprocess.run(args, env=env, capture_output=True)
    ms = (time.perf_counter() - start) * 1000
    assert out.returncode == 0, out.stderr
    return ms, count[0]
def case(extra, cold=False):
    """Median ms and most requests per binary, with /bin/true's median, over 30 rounds."""
    times = {i: [] for i in range(-1, len(binaries))}
    requests = {i: [] for i in range(len(binaries))}
    for r in range(30):
        times[-1].append(run(["/bin/true"])[0])
        for i, binary in enumerate(binaries):
            cache = cache_of(i, r if cold else None)
            ms, req = run([binary, "resolve", "--map", map_path] + extra + ["--cache-dir", cache])
            times[i].append(ms); requests[i].append(req)
    true_ms = statistics.median(times[-1])
    return [(statistics.median(times[i]), true_ms, max(requests[i])) for i in range(len(binaries))]
given = case(["--zone", "ap-northeast-1a"])
for i, binary in enumerate(binaries):  # warm each binary's cache
    run([binary, "resolve", "--map", map_path, "--cache-dir", cache_of(i)])
cached = case([])
cold = case([], cold=True)
for name, results in [("zone given (--zone), file map", given), ("zone from the cache", cached), ("cold: loopback IMDSv2", cold)]:
    for binary, (ms, true_ms, req) in zip(binaries, results):
        print(f"{binary}\t{name}\t{ms:.2f}\t{true_ms:.2f}\t{req}")
