"""The lab: a three-zone VPC on one Linux machine, the product run in it as a user runs it, and
the kernel's own byte counts as the truth (`scripts/lab`; docs/guides/lab.md).

Steps, each named in the error when it fails: the VPC (a router namespace with a bridge per
zone, one namespace per host, each host's one interface playing its ENI, per-flow nft counters
in every host), the delay line (a TUN device in the router that holds cross-zone packets), the
cache (Debian's redis-server: a primary and a replica per zone), the reader endpoint (DNS round
robin over the healthy replicas), the map (`terraform apply` with this provider, a file
target), the apps (PHP-FPM with examples/php/read.php, started by the guide's entrypoint, an
HTTP front, a metadata fake per zone), the load, the drills, the flow logs built from the
counters, `locality audit` (files and the stand-in Athena), and the report.

Everything it starts is recorded and stopped, and every namespace it made is deleted, at the
end, on failure and on Ctrl-C.
"""

import argparse
import concurrent.futures
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)

import flowlogs  # noqa: E402
import report  # noqa: E402

# (zone name, AZ ID, subnet's third octet)
ZONES = [("ap-northeast-1a", "apne1-az4", 1), ("ap-northeast-1c", "apne1-az1", 2), ("ap-northeast-1d", "apne1-az2", 3)]
READER = "reader.lab.internal"
PORT = 6379
METADATA = "127.0.0.1:8775"
HTTP = "127.0.0.1:8080"
SIDECAR_METRICS = "127.0.0.1:9102"
SIDECAR_INTERVAL = 2
# PHP-FPM listens on a unix socket, as Debian's pool does (over TCP, its small writes meet
# HAProxy's delayed ACKs: 40 ms stalls that would hide what the cache costs).
FPM_SOCKET = "php-fpm.sock"
KEYS = 200
VALUE_SIZE = 16384


# Where a running lab records its pid (its namespaces' prefix names the file), so that the next
# lab tells a lab still running from one that did not end.
RUNNING_DIR = "/run/locality-lab"
STALE_NAMESPACE = re.compile(r"^lab[0-9a-f]{5}-[a-z0-9-]+$")


def delete_namespace(ns):
    """`ip netns del`, again for a few seconds while a process killed just now still holds the
    namespace's mount (the unlink then fails with EBUSY)."""
    deadline = time.time() + 5
    while subprocess.run(["ip", "netns", "del", ns], capture_output=True).returncode != 0:
        if ns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split() \
                or time.time() > deadline:
            return
        time.sleep(0.1)


class StepFailed(Exception):
    pass


def log(text):
    print("lab: " + text, file=sys.stderr, flush=True)


class Lab:
    def __init__(self, args):
        self.args = args
        self.id = "%05x" % random.randrange(1 << 20)
        self.prefix = "lab" + self.id
        self.work = tempfile.mkdtemp(prefix="locality-lab-")
        os.chmod(self.work, 0o755)
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.procs = {}  # name -> Popen
        self.namespaces = []
        self.etc_netns = []
        self.hosts = {}  # host -> {ns, address, zone, zone_id, eni, role}
        self.series = {}  # host -> key -> [(t, packets, bytes)]
        self.polled = []  # hosts polled
        self.poll_lock = threading.Lock()
        self.stop_polling = threading.Event()
        self.phases = []  # {name, t0, t1}
        self.step = "start"
        self.t_start = time.time()
        self.figures = {}
        self.locality = args.locality
        self.provider_dir = args.provider_dir
        # Debian's PHP-FPM binary (php-fpm8.2, ...); scripts/lab checked that there is one.
        self.php_fpm = max((p for p in os.listdir("/usr/sbin") if p.startswith("php-fpm")), default="php-fpm")

    def fail_here(self):
        if self.args.fail_at and self.step.startswith(self.args.fail_at):
            raise StepFailed("failed on purpose (--fail-at)")

    # -- processes and namespaces ---------------------------------------------------------
    def run(self, argv, ns=None, check=True, env=None, timeout=120, input=None):
        full = (["ip", "netns", "exec", ns] if ns else []) + argv
        done = subprocess.run(full, capture_output=True, text=True, env=env, timeout=timeout, input=input)
        if check and done.returncode != 0:
            raise StepFailed("%s exited %d: %s" % (" ".join(argv[:6]), done.returncode, (done.stderr or done.stdout).strip()[-600:]))
        return done

    def start(self, name, argv, ns=None, env=None, log_name=None):
        full = (["ip", "netns", "exec", ns] if ns else []) + argv
        logf = open(os.path.join(self.work, (log_name or name) + ".log"), "ab")
        proc = subprocess.Popen(full, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        self.procs[name] = proc
        return proc

    def stop(self, name, sig=signal.SIGTERM, wait=5.0):
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(5)

    def wait_file(self, path, what, timeout=20.0):
        deadline = time.time() + timeout
        while not os.path.exists(path):
            if time.time() > deadline:
                raise StepFailed("%s did not start within %.0f s" % (what, timeout))
            time.sleep(0.05)

    def wait_tcp(self, ns, address, what, timeout=30.0, proc=None):
        host, port = address.rsplit(":", 1)
        code = ("import socket,time,sys\nd=time.time()+%f\nwhile time.time()<d:\n try:\n  socket.create_connection((%r,%s),0.3).close();sys.exit(0)\n"
                " except OSError: time.sleep(0.05)\nsys.exit(1)") % (timeout, host, port)
        if self.run(["python3", "-c", code], ns=ns, check=False, timeout=timeout + 10).returncode != 0:
            raise StepFailed("%s did not listen on %s within %.0f s%s" % (what, address, timeout, self.tail(proc)))

    def wait_unix(self, path, what, timeout=30.0, proc=None):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with socket.socket(socket.AF_UNIX) as sock:
                    sock.connect(path)
                return
            except OSError:
                time.sleep(0.05)
        raise StepFailed("%s did not listen on %s within %.0f s%s" % (what, path, timeout, self.tail(proc)))

    def tail(self, name):
        if not name:
            return ""
        path = os.path.join(self.work, name + ".log")
        try:
            with open(path, errors="replace") as f:
                return "; its log ends: " + f.read()[-800:].strip()
        except OSError:
            return ""

    def cleanup(self):
        self.stop_polling.set()
        for name in list(self.procs)[::-1]:
            self.stop(name, wait=2.0)
        for ns in self.namespaces[::-1]:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            delete_namespace(ns)
        for path in self.etc_netns:
            shutil.rmtree(path, ignore_errors=True)
        try:
            os.unlink(os.path.join(RUNNING_DIR, self.prefix))
        except OSError:
            pass
        if not self.args.keep_work:
            shutil.rmtree(self.work, ignore_errors=True)

    def save_state(self):
        """The counters, hosts, phases and figures, and the maps, in the out folder
        (lab-state.json): `--analyse-only` builds the records and the report again from it."""
        for name in ("replica-map-before-drill-d.json",):
            if os.path.exists(os.path.join(self.work, name)):
                shutil.copy(os.path.join(self.work, name), os.path.join(self.out, name))
        shutil.copy(self.map_file, os.path.join(self.out, "replica-map.json"))
        state = {"series": {h: [[list(k), v] for k, v in keys.items()] for h, keys in self.series.items()},
                 "hosts": self.hosts, "phases": self.phases, "figures": self.figures, "t_start": self.t_start}
        with open(os.path.join(self.out, "lab-state.json"), "w") as f:
            json.dump(state, f)

    def load_state(self, path):
        with open(path) as f:
            state = json.load(f)
        self.series = {h: {tuple(k): [tuple(x) for x in v] for k, v in keys} for h, keys in state["series"].items()}
        self.hosts, self.phases, self.figures, self.t_start = state["hosts"], state["phases"], state["figures"], state["t_start"]
        self.map_file = os.path.join(self.out, "replica-map.json")

    # -- the VPC ---------------------------------------------------------------------------
    def ns_name(self, host):
        return "%s-%s" % (self.prefix, host)

    def sweep_stale(self):
        """Remove what a lab that did not end left behind (killed by SIGKILL, a machine
        stopped mid-run): its namespaces (`lab` + five hex digits + `-host`), their processes
        and /etc/netns folders. A lab still running is left alone: each lab records its pid in
        RUNNING_DIR while it runs."""
        self.step = "the sweep of labs that did not end"
        os.makedirs(RUNNING_DIR, exist_ok=True)
        alive = set()
        for name in os.listdir(RUNNING_DIR):
            try:
                with open(os.path.join(RUNNING_DIR, name)) as f:
                    pid = int(f.read().strip())
                os.kill(pid, 0)
                alive.add(name)
            except (OSError, ValueError):
                try:
                    os.unlink(os.path.join(RUNNING_DIR, name))
                except OSError:
                    pass
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n")
        stale = sorted({line.split()[0] for line in listed if line.strip()
                        and STALE_NAMESPACE.match(line.split()[0])
                        and line.split()[0].split("-", 1)[0] not in alive})
        for ns in stale:
            for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        for ns in stale:
            delete_namespace(ns)
        etc = [e for e in (os.listdir("/etc/netns") if os.path.isdir("/etc/netns") else [])
               if STALE_NAMESPACE.match(e) and e.split("-", 1)[0] not in alive]
        for e in etc:
            shutil.rmtree(os.path.join("/etc/netns", e), ignore_errors=True)
        if stale or etc:
            log("removed what a lab that did not end left behind: %d namespace%s, %d /etc/netns folder%s (%s)"
                % (len(stale), "" if len(stale) == 1 else "s", len(etc), "" if len(etc) == 1 else "s",
                   ", ".join(sorted({s.split("-", 1)[0] for s in stale + etc}))))
        with open(os.path.join(RUNNING_DIR, self.prefix), "w") as f:
            f.write(str(os.getpid()))

    def build_vpc(self):
        self.step = "the VPC: namespaces, bridges and links"
        self.router = self.ns_name("router")
        self.run(["ip", "netns", "add", self.router])
        self.namespaces.append(self.router)
        r = self.router
        self.run(["ip", "link", "set", "lo", "up"], ns=r)
        for key in ("net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"):
            self.run(["sysctl", "-q", "-w", key], ns=r)
        for _, _, n in ZONES:
            self.run(["ip", "link", "add", "br%d" % n, "type", "bridge"], ns=r)
            self.run(["ip", "link", "set", "br%d" % n, "mtu", "9001", "up"], ns=r)
            self.run(["ip", "addr", "add", "10.0.%d.1/24" % n, "dev", "br%d" % n], ns=r)
        self.link_no = 0
        for n, (zone, zone_id, octet) in enumerate(ZONES):
            letter = "abc"[n]
            self.add_host("app-" + letter, n, "10.0.%d.10" % octet, "client")
            self.add_host("replica-" + letter, n, "10.0.%d.20" % octet, "replica")
        self.add_host("primary", 0, "10.0.1.30", "primary")

    def add_host(self, host, zone_index, address, role):
        zone, zone_id, octet = ZONES[zone_index]
        ns = self.ns_name(host)
        self.run(["ip", "netns", "add", ns])
        self.namespaces.append(ns)
        self.link_no += 1
        peer = "v%s%d" % (self.id, self.link_no)
        self.run(["ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", peer, "netns", self.router])
        self.run(["ip", "link", "set", peer, "master", "br%d" % octet, "mtu", "9001", "up"], ns=self.router)
        for argv in (["ip", "link", "set", "lo", "up"],
                     ["ip", "addr", "add", address + "/24", "dev", "eth0"],
                     ["ip", "link", "set", "eth0", "mtu", "9001", "up"],
                     # One counted packet per wire packet at both ends (FACTS: gso_max_segs 1).
                     ["ip", "link", "set", "dev", "eth0", "gso_max_segs", "1"],
                     ["ip", "route", "add", "default", "via", "10.0.%d.1" % octet]):
            self.run(argv, ns=ns)
        self.run(["nft", "-f", "-"], ns=ns, input=NFT_COUNTERS)
        eni = "eni-%s%012x" % (self.id, random.randrange(1 << 48))
        self.hosts[host] = {"ns": ns, "address": address, "zone": zone, "zone_id": zone_id, "eni": eni, "role": role}
        if role == "client":
            etc = os.path.join("/etc/netns", ns)
            os.makedirs(etc, exist_ok=True)
            self.etc_netns.append(etc)
            with open(os.path.join(etc, "resolv.conf"), "w") as f:
                f.write("nameserver 10.0.%d.1\noptions timeout:1 attempts:2\n" % octet)
        with self.poll_lock:
            self.polled.append(host)

    def remove_host(self, host):
        ns = self.hosts[host]["ns"]
        with self.poll_lock:
            self.polled.remove(host)
        self.poll_once([host])
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.namespaces.remove(ns)

    # -- the kernel's counters -------------------------------------------------------------
    def poll_host(self, host, t):
        """One host's counters, stamped `t`: the round's time, the same for every host, so that
        both ends of a packet seen in one round carry the same second."""
        ns = self.hosts[host]["ns"]
        done = subprocess.run(["ip", "netns", "exec", ns, "nft", "-j", "list", "table", "inet", "lab"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            return
        series = self.series.setdefault(host, {})
        for item in json.loads(done.stdout).get("nftables", []):
            s = item.get("set")
            if not s:
                continue
            direction = "in" if s["name"] == "fin" else "out"
            for elem in s.get("elem", []):
                e = elem["elem"]
                saddr, daddr, proto, sport, dport = e["val"]["concat"]
                key = (direction, saddr, daddr, proto, int(sport), int(dport))
                packets, octets = e["counter"]["packets"], e["counter"]["bytes"]
                samples = series.setdefault(key, [])
                if not samples or samples[-1][2] != octets or samples[-1][1] != packets:
                    samples.append((t, packets, octets))

    def poll_once(self, hosts=None):
        with self.poll_lock:
            hosts = list(hosts or self.polled)
        t = time.time()
        with concurrent.futures.ThreadPoolExecutor(len(hosts)) as pool:
            list(pool.map(lambda host: self.poll_host(host, t), hosts))

    def poller(self):
        while not self.stop_polling.wait(1.0):
            try:
                self.poll_once()
            except Exception as e:  # a poll that failed is retried at the next second
                log("poll: %s" % e)

    def mark(self):
        """A poll now, and its time: phase boundaries fall between polls."""
        self.poll_once()
        return time.time()

    # -- the delay line --------------------------------------------------------------------
    def start_delay(self):
        self.step = "the delay line (TUN device in the router)"
        ready = os.path.join(self.work, "delay.ready")
        self.delay_stats = os.path.join(self.work, "delay.json")
        self.start("delay", ["python3", os.path.join(HERE, "agents.py"), "delay", "--name", "dl0",
                             "--ms", str(self.args.delay_ms), "--stats", self.delay_stats, "--ready", ready], ns=self.router)
        self.wait_file(ready, "the delay line")
        r = self.router
        self.run(["ip", "link", "set", "dl0", "mtu", "9001", "up"], ns=r)
        self.run(["sysctl", "-q", "-w", "net.ipv4.conf.dl0.rp_filter=0"], ns=r)
        # Only routed (cross-zone) packets: those that arrive from a zone's bridge. Same-zone
        # packets are bridged and never routed. If the delay line dies, its route goes with
        # it and the blackhole drops cross-zone packets: a dead delay line fails closed.
        self.run(["ip", "route", "add", "10.0.0.0/16", "dev", "dl0", "table", "100"], ns=r)
        self.run(["ip", "route", "add", "blackhole", "10.0.0.0/16", "table", "100", "metric", "4000"], ns=r)
        for _, _, n in ZONES:
            self.run(["ip", "rule", "add", "iif", "br%d" % n, "lookup", "100", "pref", "100"], ns=r)

    def measure_delay(self, label):
        # (self.replicas: zone a's, b's and c's, in that order)
        """TCP connect round trips from app-a: to the replica in its zone and to the replicas of
        the other zones (30 each, median): the delay line's added round trip."""
        code = (
            "import socket,time,statistics,json\n"
            "def rtt(a):\n"
            " s=[]\n"
            " for _ in range(30):\n"
            "  t=time.perf_counter();c=socket.create_connection((a,%d),1);s.append((time.perf_counter()-t)*1e3);c.close();time.sleep(0.01)\n"
            " return statistics.median(s)\n"
            "print(json.dumps({'same':rtt(%r),'across':statistics.median([rtt(%r),rtt(%r)])}))\n") % (
                PORT, *[r.rsplit(":", 1)[0] for r in self.replicas])
        out = json.loads(self.run(["python3", "-c", code], ns=self.hosts["app-a"]["ns"]).stdout)
        out["added_rtt_ms"] = out["across"] - out["same"]
        out["label"] = label
        try:
            with open(self.delay_stats) as f:
                out["delay_line"] = json.load(f)
        except (OSError, ValueError):
            out["delay_line"] = None
        out["delay_line_alive"] = self.procs.get("delay") is not None and self.procs["delay"].poll() is None
        self.figures.setdefault("delay", []).append(out)
        log("delay (%s): connect RTT same zone %.3f ms, across %.3f ms: +%.3f ms a round trip (configured %.2f ms each way)"
            % (label, out["same"], out["across"], out["added_rtt_ms"], self.args.delay_ms))
        if not out["delay_line_alive"] or out["added_rtt_ms"] < self.args.delay_ms:
            raise StepFailed("the delay line did not delay: %.3f ms added a round trip, %.2f ms expected at least"
                             % (out["added_rtt_ms"], self.args.delay_ms))

    # -- the cache -------------------------------------------------------------------------
    def start_redis(self, host, replicaof=None):
        info = self.hosts[host]
        data = os.path.join(self.work, host)
        os.makedirs(data, exist_ok=True)
        argv = ["redis-server", "--bind", info["address"], "127.0.0.1", "--port", str(PORT), "--save", "",
                "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no", "--dir", data,
                "--enable-debug-command", "local"]
        if replicaof:
            argv += ["--replicaof", replicaof, str(PORT)]
        self.start("redis-" + host, argv, ns=info["ns"])
        self.wait_tcp(info["ns"], "127.0.0.1:%d" % PORT, "redis-server on " + host, proc="redis-" + host)

    def wait_synced(self, host, timeout=60):
        ns = self.hosts[host]["ns"]
        deadline = time.time() + timeout
        while time.time() < deadline:
            info = self.run(["redis-cli", "-p", str(PORT), "INFO", "replication"], ns=ns, check=False).stdout
            size = self.run(["redis-cli", "-p", str(PORT), "DBSIZE"], ns=ns, check=False).stdout.strip()
            if "master_link_status:up" in info and size == str(KEYS):
                return
            time.sleep(0.2)
        raise StepFailed("the replica on %s did not sync from the primary within %d s" % (host, timeout))

    def start_cache(self):
        self.step = "the cache (redis-server: a primary and a replica per zone)"
        self.start_redis("primary")
        self.run(["redis-cli", "-p", str(PORT), "DEBUG", "POPULATE", str(KEYS), "lab", str(VALUE_SIZE)], ns=self.hosts["primary"]["ns"])
        for letter in "abc":
            self.start_redis("replica-" + letter, replicaof="10.0.1.30")
        for letter in "abc":
            self.wait_synced("replica-" + letter)
        self.replicas = ["10.0.%d.20:%d" % (n, PORT) for _, _, n in ZONES]
        self.write_reader_replicas()
        self.step = "the reader endpoint (DNS over the healthy replicas, in the router)"
        ready = os.path.join(self.work, "dns.ready")
        self.start("dns", ["python3", os.path.join(HERE, "agents.py"), "dns", "--name", READER,
                           "--replicas", os.path.join(self.work, "reader.json"), "--ready", ready], ns=self.router)
        self.wait_file(ready, "the DNS server")

    def write_reader_replicas(self):
        tmp = os.path.join(self.work, "reader.json.tmp")
        with open(tmp, "w") as f:
            json.dump(self.replicas, f)
        os.replace(tmp, os.path.join(self.work, "reader.json"))

    # -- the map ---------------------------------------------------------------------------
    def nodes(self):
        nodes = []
        for host, info in sorted(self.hosts.items()):
            if info["role"] in ("replica", "primary") and info.get("live", True):
                nodes.append({"endpoint": "%s:%d" % (info["address"], PORT), "zone": info["zone"], "role": info["role"]})
        return nodes

    def terraform(self, *argv, check=True):
        env = dict(os.environ, TF_CLI_CONFIG_FILE=self.tfrc, CHECKPOINT_DISABLE="1", TF_IN_AUTOMATION="1")
        return self.run([self.args.terraform, "-chdir=" + self.tfdir] + list(argv) + ["-no-color"], env=env, check=check, timeout=300)

    def apply_map(self):
        self.step = "the map (terraform apply with this provider)"
        self.tfdir = os.path.join(self.work, "terraform")
        self.map_file = os.path.join(self.tfdir, "replica-map.json")
        os.makedirs(self.tfdir, exist_ok=True)
        shutil.copy(os.path.join(HERE, "terraform", "main.tf"), self.tfdir)
        self.tfrc = os.path.join(self.work, "cli.tfrc")
        with open(self.tfrc, "w") as f:
            f.write('provider_installation {\n  dev_overrides {\n    "locality/locality" = "%s"\n  }\n  direct {}\n}\n' % self.provider_dir)
        self.write_nodes()
        self.terraform("apply", "-auto-approve")
        with open(self.map_file) as f:
            self.figures["map"] = json.load(f)

    def write_nodes(self):
        with open(os.path.join(self.tfdir, "nodes.json"), "w") as f:
            json.dump({"nodes": self.nodes(), "zone_ids": {zone: zone_id for zone, zone_id, _ in ZONES}}, f, indent=1)

    # -- the apps --------------------------------------------------------------------------
    def prepare_apps(self):
        self.step = "the apps (PHP-FPM, read.php, the guide's entrypoint, an HTTP front, metadata)"
        guide = open(os.path.join(ROOT, "docs/guides/consuming-the-replica-map.md")).read()
        pool = guide_block(guide, "tests/php.rs::the_guides_php_fpm_entrypoint_hands_every_worker_the_endpoint", "ini")
        entrypoint = guide_block(guide, "tests/php.rs::the_guides_php_fpm_entrypoint_hands_every_worker_the_endpoint", "sh")
        # The guide's PHP-FPM entrypoint, with the lab's map (a file) for its SSM parameter, and
        # without plan B's GLIDE line (read.php is plan A).
        entrypoint = "\n".join(l for l in entrypoint.splitlines() if "LOCALITY_GLIDE" not in l) + "\n"
        entrypoint = entrypoint.replace("ssm:/prod/cache/replica-map", "%s --failure-ttl %d"
                                        % (self.map_file, self.args.failure_ttl))
        self.entrypoint_text = entrypoint
        debian_pool = "/etc/php/%s/fpm/pool.d" % self.php_fpm[len("php-fpm"):]
        for n, (zone, zone_id, octet) in enumerate(ZONES):
            letter = "abc"[n]
            d = os.path.join(self.work, "zone-" + letter)
            for sub in ("bin", "pool.d", "www", "run"):
                os.makedirs(os.path.join(d, sub), exist_ok=True)
            os.chmod(os.path.join(d, "run"), 0o700)
            os.chmod(d, 0o755)
            os.chmod(os.path.join(d, "www"), 0o755)
            write(os.path.join(d, "php-fpm.conf"),
                  "[global]\npid = %s/php-fpm.pid\nerror_log = %s/php-fpm.log\ninclude = %s/*.conf\ninclude = %s/pool.d/*.conf\n"
                  % (d, d, debian_pool, d))
            write(os.path.join(d, "pool.d", "zz-locality.conf"), pool)
            write(os.path.join(d, "pool.d", "zzz-lab.conf"),
                  "[www]\nlisten = %s\nlisten.mode = 0660\npm = static\npm.max_children = 8\ncatch_workers_output = yes\n"
                  % os.path.join(d, FPM_SOCKET))
            write(os.path.join(d, "bin", "php-fpm"), "#!/bin/sh\nexec /usr/sbin/%s -y '%s/php-fpm.conf' \"$@\"\n" % (self.php_fpm, d), 0o755)
            link = os.path.join(d, "bin", "locality")
            if not os.path.exists(link):
                os.symlink(self.locality, link)
            write(os.path.join(d, "entrypoint.sh"), entrypoint, 0o755)
            # Before the map: the app reads through the reader endpoint, as the seed's did.
            write(os.path.join(d, "baseline.sh"),
                  "#!/bin/sh\nexport LOCALITY_READ_ENDPOINT=\"$LOCALITY_FALLBACK\"\nexec php-fpm -F\n", 0o755)
            shutil.copy(os.path.join(ROOT, "examples/php/read.php"), os.path.join(d, "www", "read.php"))
            os.chmod(os.path.join(d, "www", "read.php"), 0o644)
            write(os.path.join(d, "haproxy.cfg"), HTTP_FRONT % {"listen": HTTP, "fpm": os.path.join(d, FPM_SOCKET), "docroot": os.path.join(d, "www")})
            self.start("http-" + letter, ["haproxy", "-db", "-f", os.path.join(d, "haproxy.cfg")], ns=self.hosts["app-" + letter]["ns"])
            self.start_metadata(letter)
        self.fail_here()  # (with every front and metadata fake running)

    def start_metadata(self, letter):
        info = self.hosts["app-" + letter]
        ready = os.path.join(self.work, "metadata-%s.ready" % letter)
        if os.path.exists(ready):
            os.unlink(ready)
        self.start("metadata-" + letter, ["python3", os.path.join(HERE, "agents.py"), "metadata", "--bind", METADATA,
                                          "--zone", info["zone"], "--zone-id", info["zone_id"], "--ready", ready], ns=info["ns"])
        self.wait_file(ready, "the metadata fake of zone " + letter)

    def app_env(self, letter):
        d = os.path.join(self.work, "zone-" + letter)
        return {
            "PATH": os.path.join(d, "bin") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": d,
            "LANG": "C.UTF-8",
            # From the orchestrator, as the guide says: the reader endpoint.
            "LOCALITY_FALLBACK": "%s:%d" % (READER, PORT),
            # The product's documented override (as the AWS SDKs'): this zone's metadata fake.
            "AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://" + METADATA,
            # resolve's cache: this host's own (zones must not share one).
            "RUNTIME_DIRECTORY": os.path.join(d, "run"),
        }

    def start_app(self, letter, script):
        self.stop("app-" + letter, sig=signal.SIGQUIT)
        d = os.path.join(self.work, "zone-" + letter)
        self.start("app-" + letter, ["sh", os.path.join(d, script)], ns=self.hosts["app-" + letter]["ns"],
                   env=self.app_env(letter), log_name="app-" + letter)
        self.wait_unix(os.path.join(d, FPM_SOCKET), "PHP-FPM of zone " + letter, proc="app-" + letter)
        self.wait_tcp(self.hosts["app-" + letter]["ns"], HTTP, "the HTTP front of zone " + letter, proc="http-" + letter)

    def start_load(self, letter, seed):
        info = self.hosts["app-" + letter]
        self.start("load-" + letter, ["python3", os.path.join(HERE, "agents.py"), "load", "--target", HTTP,
                                      "--rate", str(self.args.rate), "--keys", str(KEYS), "--seed", str(seed),
                                      "--out", os.path.join(self.work, "requests-%s.txt" % letter)], ns=info["ns"])

    def start_writers(self):
        for n, letter in enumerate("abc"):
            self.start("writer-" + letter, ["python3", os.path.join(HERE, "agents.py"), "writer", "--primary", "10.0.1.30:%d" % PORT,
                                            "--rate", "2", "--size", str(VALUE_SIZE), "--keys", str(KEYS), "--seed", str(n)],
                       ns=self.hosts["app-" + letter]["ns"])

    def requests(self, letter, t0, t1):
        """(time s, latency ms, status, route) of zone `letter`'s requests in [t0, t1)."""
        out = []
        try:
            with open(os.path.join(self.work, "requests-%s.txt" % letter)) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) != 4:
                        continue
                    t = int(parts[0]) / 1000.0
                    if t0 <= t < t1:
                        out.append((t, int(parts[1]) / 1000.0, int(parts[2]), parts[3]))
        except OSError:
            pass
        return out

    def phase(self, name, seconds, note=""):
        t0 = self.mark()
        log("%s: %d s%s" % (name, seconds, (" (" + note + ")") if note else ""))
        time.sleep(seconds)
        t1 = self.mark()
        self.phases.append({"name": name, "t0": t0, "t1": t1})
        return t0, t1


def guide_block(text, run_by, lang):
    marker = "<!-- doc-test: run-by: %s -->" % run_by
    at = 0
    while True:
        at = text.index(marker, at) + len(marker)
        rest = text[at:].lstrip("\n")
        if rest.startswith("```" + lang + "\n"):
            body = rest[len(lang) + 4:]
            return body[: body.index("```")]


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


NFT_COUNTERS = """
table inet lab {
  set fin { type ipv4_addr . ipv4_addr . inet_proto . inet_service . inet_service; flags dynamic; counter; size 65536; }
  set fout { type ipv4_addr . ipv4_addr . inet_proto . inet_service . inet_service; flags dynamic; counter; size 65536; }
  chain input {
    type filter hook input priority 0; policy accept;
    iifname "eth0" meta l4proto { tcp, udp } update @fin { ip saddr . ip daddr . meta l4proto . th sport . th dport }
  }
  chain output {
    type filter hook output priority 0; policy accept;
    oifname "eth0" meta l4proto { tcp, udp } update @fout { ip saddr . ip daddr . meta l4proto . th sport . th dport }
  }
}
"""

HTTP_FRONT = """# The app's HTTP front: HAProxy speaking FastCGI to PHP-FPM (as nginx would).
global
  maxconn 256
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
frontend web
  bind %(listen)s
  default_backend php
backend php
  use-fcgi-app read
  server fpm %(fpm)s proto fcgi
fcgi-app read
  docroot %(docroot)s
  index read.php
  path-info ^(/.+\\.php)(/.*)?$
"""


# -- the drills --------------------------------------------------------------------------------
def latency_summary(reqs):
    ok = sorted(r[1] for r in reqs if r[2] == 200)
    routes = {}
    for r in reqs:
        routes[r[3]] = routes.get(r[3], 0) + 1
    pct = lambda q: ok[min(len(ok) - 1, int(q * len(ok)))] if ok else None
    return {"requests": len(reqs), "answered": sum(1 for r in reqs if r[2] == 200),
            "failed": sum(1 for r in reqs if r[2] != 200), "p50_ms": pct(0.50), "p99_ms": pct(0.99), "routes": routes}


def drill_load(lab):
    lab.step = "drill a: the same load, on the reader endpoint, then with the map"
    for letter in "abc":
        lab.start_app(letter, "baseline.sh")
    lab.start_writers()
    for n, letter in enumerate("abc"):
        lab.start_load(letter, seed=10 + n)
    b0, b1 = lab.phase("a-baseline", lab.args.load_seconds, "every app on the reader endpoint")
    for letter in "abc":
        lab.stop("load-" + letter)
    for letter in "abc":
        lab.start_app(letter, "entrypoint.sh")
    for n, letter in enumerate("abc"):
        lab.start_load(letter, seed=10 + n)
    l0, l1 = lab.phase("a-locality", lab.args.load_seconds, "every app through the guide's entrypoint and the map")
    lab.figures["load"] = {
        "baseline": latency_summary(sum((lab.requests(x, b0, b1) for x in "abc"), [])),
        "locality": latency_summary(sum((lab.requests(x, l0, l1) for x in "abc"), [])),
    }


def first(reqs, after, route):
    for t, _ms, status, r in reqs:
        if t >= after and status == 200 and r == route:
            return t
    return None


def wait_route(lab, letter, after, route, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        t = first(lab.requests(letter, after, time.time() + 1), after, route)
        if t is not None:
            return t
        time.sleep(0.5)
    return None


def drill_node_failure(lab):
    lab.step = "drill b: SIGKILL the replica of zone b under load, then restart it"
    t0 = lab.mark()
    t_kill = time.time()
    lab.stop("redis-replica-b", sig=signal.SIGKILL)
    log("drill b: replica-b killed (SIGKILL); %d s down" % lab.args.outage_seconds)
    time.sleep(lab.args.outage_seconds)
    t_restart = time.time()
    lab.start_redis("replica-b", replicaof="10.0.1.30")
    lab.wait_synced("replica-b")
    log("drill b: replica-b restarted; waiting for zone b's reads to come back (read.php skips a failed replica for 60 s)")
    t_back = wait_route(lab, "b", t_restart, "zone", 120)
    time.sleep(2)
    t1 = lab.mark()
    lab.phases.append({"name": "b-node-failure", "t0": t0, "t1": t1})
    zone_b = lab.requests("b", t0, t1)
    lab.figures["node_failure"] = {
        "zone": ZONES[1][0], "killed_at": t_kill, "restarted_at": t_restart, "back_at": t_back,
        "requests": latency_summary(sum((lab.requests(x, t0, t1) for x in "abc"), [])),
        "zone_requests": latency_summary(zone_b),
        "first_fallback_after_s": (lambda t: t - t_kill if t else None)(first(zone_b, t_kill, "fallback")),
        "back_in_zone_after_kill_s": t_back - t_kill if t_back else None,
        "back_in_zone_after_restart_s": t_back - t_restart if t_back else None,
        "window": (t_kill, t_back or t1),
    }


def drill_metadata(lab):
    lab.step = "drill c: the metadata endpoint of zone c down when its app starts"
    letter = "c"
    lab.stop("load-" + letter)
    lab.stop("metadata-" + letter)
    # A new task or container: its runtime directory, resolve's cache, starts empty (a zone
    # detected earlier is cached for good, and would make the outage invisible).
    run_dir = os.path.join(lab.work, "zone-" + letter, "run")
    shutil.rmtree(run_dir)
    os.makedirs(run_dir, mode=0o700)
    t0 = lab.mark()
    lab.start_app(letter, "entrypoint.sh")
    t_started = time.time()
    lab.start_load(letter, seed=30)
    # The sidecar, beside the app on the same host (the same cache directory: the failure that
    # resolve cached is the sidecar's too), with a client reading through it.
    ns = lab.hosts["app-" + letter]["ns"]
    lab.start("sidecar-" + letter, [lab.locality, "sidecar", "--map", lab.map_file, "--listen", "127.0.0.1:%d" % PORT,
                                    "--interval", str(SIDECAR_INTERVAL), "--failure-ttl", str(lab.args.failure_ttl),
                                    "--metrics", SIDECAR_METRICS], ns=ns, env=lab.app_env(letter))
    lab.wait_tcp(ns, "127.0.0.1:%d" % PORT, "the sidecar of zone c", proc="sidecar-" + letter)
    sidecar_reads = os.path.join(lab.work, "sidecar-reads-%s.txt" % letter)
    lab.start("sidecar-load-" + letter, ["python3", os.path.join(HERE, "agents.py"), "redisload", "--target", "127.0.0.1:%d" % PORT,
                                         "--rate", "20", "--keys", str(KEYS), "--out", sidecar_reads], ns=ns)
    route_at_start = sidecar_route(lab, ns)
    log("drill c: zone c's app and sidecar started with its metadata down (sidecar route: %s); %d s" % (route_at_start, lab.args.outage_seconds))
    time.sleep(lab.args.outage_seconds)
    lab.start_metadata(letter)
    t_meta = time.time()
    t_sidecar = None
    deadline = t_meta + lab.args.failure_ttl + SIDECAR_INTERVAL + 15
    while time.time() < deadline:
        if sidecar_route(lab, ns) == "zone":
            t_sidecar = time.time()
            break
        time.sleep(0.25)
    log("drill c: the sidecar %s" % ("moved to the zone's replica %.1f s after the metadata returned" % (t_sidecar - t_meta) if t_sidecar else "never moved to the zone"))
    # The entrypoint's next start: after the cached failure's TTL (the guide: --failure-ttl, never longer).
    wait = t_started + lab.args.failure_ttl + 1 - time.time()
    log("drill c: metadata back; the app's next start in %.0f s (after --failure-ttl %d)" % (max(wait, 0), lab.args.failure_ttl))
    if wait > 0:
        time.sleep(wait)
    lab.stop("load-" + letter)
    t_restart = time.time()
    lab.start_app(letter, "entrypoint.sh")
    lab.start_load(letter, seed=31)
    t_back = wait_route(lab, letter, t_restart, "zone", 30)
    time.sleep(2)
    lab.stop("sidecar-load-" + letter)
    metrics_text = sidecar_metrics(lab, ns)
    lab.stop("sidecar-" + letter)
    t1 = lab.mark()
    lab.phases.append({"name": "c-metadata-outage", "t0": t0, "t1": t1})
    with open(os.path.join(lab.work, "app-c.log"), errors="replace") as f:
        said = [l.strip() for l in f if "resolve" in l and ("fallback" in l or "zone" in l)]
    during = lab.requests(letter, t0, t_meta)
    lab.figures["metadata_outage"] = {
        "zone": ZONES[2][0], "metadata_back_at": t_meta, "restarted_at": t_restart, "back_at": t_back,
        "requests": latency_summary(lab.requests(letter, t0, t1)),
        "during_outage": latency_summary(during),
        "back_in_zone_after_metadata_s": t_back - t_meta if t_back else None,
        "failure_ttl_s": lab.args.failure_ttl,
        "resolve_said": said[-3:],
        "sidecar": {
            "route_at_start": route_at_start,
            "zone_after_metadata_s": t_sidecar - t_meta if t_sidecar else None,
            "bound_s": lab.args.failure_ttl + SIDECAR_INTERVAL,
            "interval_s": SIDECAR_INTERVAL,
            "reads": sidecar_reads_summary(sidecar_reads),
            "info": [l for l in metrics_text.splitlines() if l.startswith(("locality_sidecar_info", "locality_sidecar_route{"))],
            "said": [l.strip() for l in open(os.path.join(lab.work, "sidecar-c.log"), errors="replace") if "zone" in l][-4:],
        },
    }


def sidecar_metrics(lab, ns):
    code = "import urllib.request;print(urllib.request.urlopen('http://%s/metrics',timeout=2).read().decode())" % SIDECAR_METRICS
    return lab.run(["python3", "-c", code], ns=ns, check=False).stdout


def sidecar_route(lab, ns):
    """'zone' or 'reader', from the sidecar's locality_sidecar_route metric."""
    for line in sidecar_metrics(lab, ns).splitlines():
        if line.startswith("locality_sidecar_route{") and line.endswith(" 1"):
            return "zone" if 'route="zone"' in line else "reader"
    return None


def sidecar_reads_summary(path):
    rows = [l.split() for l in open(path)] if os.path.exists(path) else []
    return {"reads": len(rows), "failed": sum(1 for r in rows if r[2] != "ok")}


def drill_replaced(lab):
    lab.step = "drill d: a replica replaced (new address), the map not updated"
    letter = "c"
    t0 = lab.mark()
    lab.stop("redis-replica-c")
    lab.hosts["replica-c"]["live"] = False
    lab.add_host("replica-c2", 2, "10.0.3.21", "replica")
    lab.start_redis("replica-c2", replicaof="10.0.1.30")
    lab.wait_synced("replica-c2")
    # ElastiCache's side: the reader endpoint serves the new replica, and the group lists it.
    lab.replicas = ["10.0.1.20:%d" % PORT, "10.0.2.20:%d" % PORT, "10.0.3.21:%d" % PORT]
    lab.write_reader_replicas()
    lab.write_nodes()
    log("drill d: replica-c replaced by 10.0.3.21; the map still names 10.0.3.20")
    time.sleep(lab.args.load_seconds)
    t1 = lab.mark()
    lab.phases.append({"name": "d-stale-map", "t0": t0, "t1": t1})
    # The old replica's host goes now. (Until here its address answered with resets, and its
    # interface counted what the app still sent it, so that no byte of its flows went uncounted
    # at the node's end while the node's end still ran.)
    lab.remove_host("replica-c")
    lab.step = "drill d: terraform plan shows the drift"
    plan = lab.terraform("plan", "-detailed-exitcode", check=False)
    lab.figures["replaced"] = {"plan_exit": plan.returncode, "plan": plan.stdout[-4000:],
                               "requests_stale": latency_summary(lab.requests(letter, t0, t1))}
    if plan.returncode == 1:
        raise StepFailed("terraform plan failed: " + plan.stderr[-600:])
    lab.step = "drill d: terraform apply, the app's next start"
    shutil.copy(lab.map_file, os.path.join(lab.work, "replica-map-before-drill-d.json"))
    lab.terraform("apply", "-auto-approve")
    lab.stop("load-" + letter)
    lab.start_app(letter, "entrypoint.sh")
    lab.start_load(letter, seed=40)
    a0, a1 = lab.phase("d-applied", lab.args.load_seconds, "after terraform apply and the app's next start")
    lab.figures["replaced"]["requests_applied"] = latency_summary(lab.requests(letter, a0, a1))
    lab.figures["replaced"]["plan_after_apply_exit"] = lab.terraform("plan", "-detailed-exitcode", check=False).returncode


# -- the analysis ------------------------------------------------------------------------------
def subnets_json():
    return {"Subnets": [{"SubnetId": "subnet-lab%d" % n, "CidrBlock": "10.0.%d.0/24" % n, "AvailabilityZone": zone,
                         "AvailabilityZoneId": zone_id, "Ipv6CidrBlockAssociationSet": []} for zone, zone_id, n in ZONES]}


def topology_of(map_doc):
    nodes = {}
    for node in map_doc.get("nodes", []):
        nodes[node["endpoint"].rsplit(":", 1)[0]] = node["role"]
    return flowlogs.Topology([("10.0.%d.0/24" % n, zone) for zone, _, n in ZONES], nodes,
                             ["10.0.%d.1" % n for _, _, n in ZONES])


def audit(lab, map_path, logs, extra=(), env=None):
    day0 = time.strftime("%Y-%m-%d", time.gmtime(lab.t_start - 120))
    day1 = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 120))
    argv = [lab.locality, "audit", "--map", map_path, "--subnets", os.path.join(lab.out, "subnets.json"),
            "--since", day0, "--until", day1, "--format", "json"] + list(extra)
    if "--athena" not in extra:
        argv += ["--flow-logs", logs]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    try:
        report_json = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        report_json = None
    return done.returncode, report_json, done.stderr.strip()


def analyse(lab):
    lab.step = "the flow logs and the audit"
    with open(os.path.join(lab.out, "subnets.json"), "w") as f:
        json.dump(subnets_json(), f, indent=1)
    maps = {}
    for p in lab.phases:
        maps[p["name"]] = os.path.join(lab.out, "replica-map.json" if p["name"] == "d-applied" else "replica-map-before-drill-d.json")
    router = ["10.0.%d.1" % n for _, _, n in ZONES]
    logs_root = os.path.join(lab.out, "flow-logs")
    shutil.rmtree(logs_root, ignore_errors=True)
    shutil.rmtree(os.path.join(lab.out, "flow-logs-custom"), ignore_errors=True)
    phases = []
    for p in lab.phases:
        with open(maps[p["name"]]) as f:
            topo = topology_of(json.load(f))
        kernel = flowlogs.kernel_figures(lab.series, lab.hosts, topo, p["t0"], p["t1"])
        records = flowlogs.build_records(lab.series, lab.hosts, p["t0"], p["t1"], excluded=router)
        default_dir = flowlogs.write_logs(records, os.path.join(logs_root, p["name"]))
        custom_dir = flowlogs.write_logs(records, os.path.join(lab.out, "flow-logs-custom", p["name"]), custom=True)
        row = {"name": p["name"], "t0": p["t0"], "t1": p["t1"], "map": os.path.basename(maps[p["name"]]),
               "records": len(records), "kernel": kernel}
        for label, folder in (("audit", default_dir), ("audit_custom", custom_dir)):
            code, rep, err = audit(lab, maps[p["name"]], folder)
            row[label] = {"exit": code, "in_zone_bytes": rep and rep["in_zone_bytes"], "cross_zone_bytes": rep and rep["cross_zone_bytes"],
                          "share": rep and rep["in_zone_share"], "counted_records": rep and rep["counted_records"],
                          "primary_cross_zone_bytes": rep and rep["primary_cross_zone_bytes"], "stderr": err[-400:]}
        if p["name"] == "d-stale-map":
            code, rep, err = audit(lab, maps[p["name"]], default_dir, ["--min-share", str(lab.args.min_share)])
            row["min_share"] = {"threshold": lab.args.min_share, "exit": code, "share": rep and rep["in_zone_share"], "stderr": err[-400:]}
        phases.append(row)
        log("%s: kernel share %s (%d B in, %d B across), audit %s (exit %s), custom format %s"
            % (p["name"], kernel["share"], kernel["in_zone"], kernel["cross_zone"], row["audit"]["share"], row["audit"]["exit"], row["audit_custom"]["share"]))
    lab.figures["phases"] = phases
    lab.figures["flow_logs"] = logs_root
    by = {p["name"]: p for p in phases}

    # Athena: the stand-in (DuckDB really running the query) over the locality phase's records.
    lab.step = "the audit in the stand-in Athena"
    athena = {}
    if lab.args.duckdb_python:
        port_file = os.path.join(lab.work, "athena.port")
        folder = os.path.join(logs_root, "a-locality")
        proc = subprocess.Popen([lab.args.duckdb_python, os.path.join(ROOT, "tests/fixtures/athena_standin.py"), "--logs", folder,
                                 "--port-file", port_file, "--calls", os.path.join(lab.work, "athena.calls")],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(lab.work, "athena.log"), "w"))
        try:
            lab.wait_file(port_file, "the stand-in Athena", 60)
            time.sleep(0.1)
            env = dict(os.environ, AWS_ENDPOINT_URL_ATHENA="http://127.0.0.1:" + open(port_file).read().strip(),
                       AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_REGION=flowlogs.REGION,
                       AWS_EC2_METADATA_DISABLED="true")
            code, rep, err = audit(lab, maps["a-locality"], folder, ["--athena", "--fields", " ".join(flowlogs.DEFAULT_FIELDS)], env=env)
            athena = {"exit": code, "share": rep and rep["in_zone_share"], "in_zone_bytes": rep and rep["in_zone_bytes"],
                      "cross_zone_bytes": rep and rep["cross_zone_bytes"], "data_scanned_bytes": rep and rep["athena"]["data_scanned_bytes"],
                      "stderr": err[-400:]}
        finally:
            proc.kill()
            proc.wait()
    lab.figures["athena"] = athena
    nf = lab.figures["node_failure"]
    with open(maps["b-node-failure"]) as f:
        during = flowlogs.kernel_figures(lab.series, lab.hosts, topology_of(json.load(f)), nf["window"][0], nf["window"][1])
    lab.figures["node_failure_cross_bytes"] = during["per_client"].get(lab.hosts["app-b"]["address"], 0)

    # Drill e: AWS's clock. Each interface stamps its records on its own, up to 60 s late.
    lab.step = "drill e: records rebuilt with a per-interface clock skew"
    # One continuous span of records, as a flow log is: the whole run, from before the first
    # connection of the load to after the last (no flow cut by the span's edges), audited with
    # the map published at the end (the kernel's truth takes its nodes too).
    span0, span1 = lab.phases[0]["t0"], lab.figures.get("t_end", lab.phases[-1]["t1"])
    final_map = os.path.join(lab.out, "replica-map.json")
    with open(final_map) as f:
        kernel = flowlogs.kernel_figures(lab.series, lab.hosts, topology_of(json.load(f)), span0, span1)
    before_d = [{"name": "the first phase"}, {"name": "the end of the run"}]
    skews = []
    for s in lab.args.skews:
        rng = random.Random(s)
        per_host = {h: (rng.randint(0, s) if s else 0) for h in sorted(lab.hosts)}
        records = flowlogs.build_records(lab.series, lab.hosts, span0, span1, skews=per_host, excluded=router)
        folder = flowlogs.write_logs(records, os.path.join(lab.work, "skew", str(s)), custom=True)
        code, rep, err = audit(lab, final_map, folder)
        total_k = kernel["in_zone"] + kernel["cross_zone"]
        total_a = (rep["in_zone_bytes"] + rep["cross_zone_bytes"]) if rep else None
        skews.append({"span": ["a-baseline", "the end of the run"], "span_s": span1 - span0, "max_skew_s": s,
                      "skews": per_host, "exit": code, "audit_share": rep and rep["in_zone_share"],
                      "kernel_share": kernel["share"], "audit_bytes": total_a, "kernel_bytes": total_k,
                      "audit_cross_zone_bytes": rep and rep["cross_zone_bytes"], "kernel_cross_zone_bytes": kernel["cross_zone"],
                      "bytes_error": (total_a - total_k) / total_k if total_a is not None and total_k else None,
                      "cross_zone_error": ((rep["cross_zone_bytes"] - kernel["cross_zone"]) / kernel["cross_zone"])
                      if rep and kernel["cross_zone"] else None})
    lab.figures["clock_skew"] = skews
    # The picture's categories by what each host is (the replaced replica and its successor both
    # replicas), whatever map was published at the time.
    everyone = flowlogs.Topology([("10.0.%d.0/24" % n, zone) for zone, _, n in ZONES],
                                 {h["address"]: h["role"] for h in lab.hosts.values() if h["role"] != "client"},
                                 ["10.0.%d.1" % n for _, _, n in ZONES])
    lab.figures["per_second"] = {
        str(k): v for k, v in sorted(flowlogs.cross_zone_per_second(
            lab.series, lab.hosts, everyone, lab.phases[0]["t0"], lab.phases[-1]["t1"]).items())}
    lab.figures["per_second_t0"] = lab.phases[0]["t0"]


def main():
    parser = argparse.ArgumentParser(prog="scripts/lab", description="A three-zone VPC on this machine: the replica map proved on real packets.")
    parser.add_argument("--out", required=True)
    parser.add_argument("--short", action="store_true")
    parser.add_argument("--locality", required=True)
    parser.add_argument("--provider-dir", required=True)
    parser.add_argument("--terraform", default="terraform")
    parser.add_argument("--duckdb-python")
    parser.add_argument("--delay-ms", type=float, default=0.5)
    parser.add_argument("--rate", type=float, default=40.0)
    parser.add_argument("--keep-work", action="store_true", help="keep the run's working folder (logs, configurations) in /tmp")
    # (tests/lab.rs: a step made to fail, to check that a lab failing half way leaves nothing)
    parser.add_argument("--fail-at", help=argparse.SUPPRESS)
    parser.add_argument("--analyse-only", action="store_true",
                        help="build the records, the audits and the report again from OUT/lab-state.json (no namespaces, no root)")
    args = parser.parse_args()
    args.load_seconds = 25 if args.short else 75
    args.outage_seconds = 10 if args.short else 20
    args.failure_ttl = 15 if args.short else 60
    args.min_share = 0.95
    args.skews = [0, 10, 30, 60]
    lab = Lab(args)
    if args.analyse_only:
        lab.load_state(os.path.join(lab.out, "lab-state.json"))
        analyse(lab)
        checks = report.write(lab.out, lab.figures, lab.phases, args, machine())
        for c in checks:
            log("%s %s: %s" % ("ok  " if c["passed"] else "FAIL", c["name"], c["detail"]))
        shutil.rmtree(lab.work, ignore_errors=True)
        return 0 if all(c["passed"] for c in checks) else 1

    def interrupted(signum, _frame):
        raise KeyboardInterrupt(signum)

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)
    status = 0
    poller = None
    try:
        lab.sweep_stale()
        lab.build_vpc()
        poller = threading.Thread(target=lab.poller, daemon=True)
        poller.start()
        lab.start_delay()
        lab.start_cache()
        lab.apply_map()
        lab.prepare_apps()
        lab.measure_delay("start")
        drill_load(lab)
        drill_node_failure(lab)
        drill_metadata(lab)
        drill_replaced(lab)
        lab.step = "the end of the load"
        for name in [n for n in lab.procs if n.startswith(("load-", "writer-"))]:
            lab.stop(name)
        lab.measure_delay("end")
        lab.figures["duration_s"] = time.time() - lab.t_start
        lab.figures["t_end"] = lab.mark()
        lab.save_state()
        analyse(lab)
        lab.step = "the report"
        lab.figures["duration_s"] = time.time() - lab.t_start
        checks = report.write(lab.out, lab.figures, lab.phases, args, machine())
        failed = [c for c in checks if not c["passed"]]
        for c in checks:
            log("%s %s: %s" % ("ok  " if c["passed"] else "FAIL", c["name"], c["detail"]))
        log("report: %s (%.0f s)" % (os.path.join(lab.out, "report.md"), lab.figures["duration_s"]))
        status = 1 if failed else 0
    except StepFailed as e:
        log("failed at step «%s»: %s" % (lab.step, e))
        status = 1
    except KeyboardInterrupt:
        log("interrupted at step «%s»; cleaning up" % lab.step)
        status = 130
    except Exception as e:  # a fault of the lab itself: named, then everything torn down
        import traceback
        traceback.print_exc()
        log("failed at step «%s»: %s: %s" % (lab.step, type(e).__name__, e))
        status = 1
    finally:
        lab.stop_polling.set()
        if poller:
            poller.join(5)
        for name in list(lab.procs):
            if name.startswith("app-") or name.startswith("http-"):
                log_copy(lab, name)
        lab.cleanup()
    return status


def log_copy(lab, name):
    src = os.path.join(lab.work, name + ".log")
    if os.path.exists(src):
        os.makedirs(os.path.join(lab.out, "logs"), exist_ok=True)
        shutil.copy(src, os.path.join(lab.out, "logs", name + ".log"))


def machine():
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        mem = "%.1f GiB" % (int(open("/proc/meminfo").readline().split()[1]) / 1048576)
    except (OSError, ValueError, IndexError):
        pass
    return {"kernel": platform.release(), "cpus": os.cpu_count(), "cpu": model, "memory": mem,
            "load_average": os.getloadavg(), "python": platform.python_version()}


if __name__ == "__main__":
    sys.exit(main())
