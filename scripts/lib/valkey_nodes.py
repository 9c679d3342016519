"""Valkey nodes on loopback and a RESP client, for scripts/lib/bench_sidecar.py and
scripts/lib/bench_soak.py."""

import json
import os
import signal
import socket
import subprocess
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def command(sock, *args):
    sock.sendall(("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args)).encode())
    line = b""
    while not line.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise OSError("closed")
        line += chunk
    if line[:1] == b"$":
        n = int(line[1:-2])
        if n < 0:
            return b""
        body = b""
        while len(body) < n + 2:
            chunk = sock.recv(n + 2 - len(body))
            if not chunk:
                raise OSError("closed")
            body += chunk
        return body[:n]
    if line[:1] == b"-":
        raise OSError(line.decode())
    return line


class _Node:
    def __init__(self, zone, primary=None):
        self.port, self.zone, self.primary, self.proc = free_port(), zone, primary, None
        self.dir = os.path.join(self.work, "valkey-%d" % self.port)
        os.makedirs(self.dir, exist_ok=True)
        self.start()

    def start(self):
        args = [self.valkey, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--availability-zone", self.zone, "--dir", self.dir]
        if self.primary:
            args += ["--replicaof", "127.0.0.1", str(self.primary)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(500):
            try:
                with socket.create_connection(("127.0.0.1", self.port)) as s:
                    command(s, "PING")
                    return
            except OSError:
                time.sleep(0.01)
        raise SystemExit("valkey did not start")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def gets(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                info = command(s, "INFO", "commandstats").decode()
        except OSError:
            return 0
        for line in info.splitlines():
            if line.startswith("cmdstat_get:calls="):
                return int(line.split("=")[1].split(",")[0])
        return 0

    def endpoint(self):
        return "127.0.0.1:%d" % self.port




ZONE_A, ZONE_B = "ap-northeast-1a", "ap-northeast-1b"


class Group:
    """A primary and replicas a1, a2 in zone a, the reader in zone b (keys k and
    key:__rand_int__ set), and the sidecar's map at `map_path`, written atomically."""

    def __init__(self, valkey, work, map_path):
        node = nodes_in(valkey, work)
        self.primary = node(ZONE_A)
        self.a1, self.a2 = node(ZONE_A, self.primary.port), node(ZONE_A, self.primary.port)
        self.reader = node(ZONE_B, self.primary.port)
        self.map_path = map_path
        with socket.create_connection(("127.0.0.1", self.primary.port)) as s:
            command(s, "SET", "k", "x" * 64)
            command(s, "SET", "key:__rand_int__", "x" * 64)

    def write_map(self, replica):
        """Zone a reads from `replica`; the reader is the fallback."""
        doc = {"version": 1, "fallback": self.reader.endpoint(), "zones": {ZONE_A: replica.endpoint()}}
        with open(self.map_path + ".tmp", "w") as f:
            json.dump(doc, f)
        os.replace(self.map_path + ".tmp", self.map_path)


def nodes_in(valkey, work):
    """The Node class for this valkey-server binary and work directory."""
    return type("Node", (_Node,), {"valkey": valkey, "work": work})
