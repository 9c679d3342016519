#!/usr/bin/env python3
"""`locality resolve` wall time and metadata requests, for scripts/bench.

Usage: bench_resolve.py LOCALITY_BINARY WORK_DIR   (prints one tab-separated row per case:
name, median ms of 30, /bin/true median ms, most metadata requests of one run)

The cases: the zone given (--zone) with a file map; the zone from a cached detection; a cold
detection (a fresh cache directory each run) through a loopback IMDS that follows the IMDSv2
contract (Python's http.server, counting requests).
"""
import http.server, json, os, statistics, subprocess, sys, threading, time
binary, work = sys.argv[1], sys.argv[2]
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
def wall(args, fresh_cache=None):
    times, requests = [], []
    for i in range(30):
        cache = os.path.join(work, f"resolve-cache-{fresh_cache}-{i}" if fresh_cache else "resolve-cache")
        count[0] = 0
        start = time.perf_counter()
        out = subprocess.run(args + (["--cache-dir", cache] if args[0] == binary else []), env=env, capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
        requests.append(count[0])
        assert out.returncode == 0, out.stderr
    return statistics.median(times), max(requests)
true_ms, _ = wall(["/bin/true"])
base = [binary, "resolve", "--map", map_path]
given_ms, given_req = wall(base + ["--zone", "ap-northeast-1a"])
subprocess.run(base + ["--cache-dir", os.path.join(work, "resolve-cache")], env=env, capture_output=True)  # warm the cache
cached_ms, cached_req = wall(base)
cold_ms, cold_req = wall(base, fresh_cache="cold")
for name, ms, req in [("zone given (--zone), file map", given_ms, given_req), ("zone from the cache", cached_ms, cached_req), ("cold: loopback IMDSv2", cold_ms, cold_req)]:
    print(f"{name}\t{ms:.2f}\t{true_ms:.2f}\t{req}")
