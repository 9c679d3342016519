"""The lab's small servers and clients, each run inside one network namespace by lab.py
(`ip netns exec NS python3 agents.py ROLE ...`). Python's standard library only.

- `delay`: the delay line. A TUN device in the router namespace; every packet the router sends
  into it (policy routing sends only routed, cross-zone packets there) is held D ms in user space
  and written back unchanged, so every address and port stays as it was.
- `dns`: the reader endpoint as ElastiCache serves it: one DNS name, answered with one healthy
  replica's address at a time, picked at random (TTL 1 s). Health: a connection held to each
  synced replica; a replica that dies closes it and leaves the answers within a millisecond
  (quicker than ElastiCache's DNS: see docs/guides/lab.md).
- `metadata`: an EC2 instance metadata fake (IMDSv2 and v1) that answers one zone's name and ID.
- `load`: HTTP requests to the zone's own app at a steady rate; one line a request (time, latency,
  status, route) into a file.
- `redisload`: GETs through the sidecar's local listener at a steady rate; one line each.
- `writer`: SETs to the primary at a steady rate (what stays across zones: writes and replication).
"""

import argparse
import collections
import fcntl
import http.client
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def stop_on_term():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))


# ---------------------------------------------------------------------------------------------
# delay
TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def delay(args):
    """Holds every packet read from the TUN device `args.name` for `args.ms` ms, then writes it
    back. FIFO: a constant delay keeps the order. Writes its counters to `args.stats` each second."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", args.name.encode(), IFF_TUN | IFF_NO_PI))
    with open(args.ready, "w") as f:
        f.write(str(os.getpid()))
    held = collections.deque()
    hold = args.ms / 1000.0
    packets = octets = 0
    last_stats = 0.0
    while True:
        now = time.monotonic()
        timeout = max(0.0, held[0][0] - now) if held else 0.5
        readable, _, _ = select.select([fd], [], [], timeout)
        if readable:
            while True:
                try:
                    packet = os.read(fd, 65536)
                except BlockingIOError:
                    break
                held.append((time.monotonic() + hold, packet))
        now = time.monotonic()
        while held and held[0][0] <= now:
            _, packet = held.popleft()
            try:
                os.write(fd, packet)
            except OSError:
                pass
            packets += 1
            octets += len(packet)
        if now - last_stats >= 1.0:
            last_stats = now
            tmp = args.stats + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"packets": packets, "bytes": octets, "held": len(held), "at": time.time()}, f)
            os.replace(tmp, args.stats)


# ---------------------------------------------------------------------------------------------
# dns
def dns(args):
    """The reader endpoint: `args.name` answers one healthy replica (from `args.replicas`, a JSON
    list of "ip:port", re-read when it changes) per query, at random."""
    name = args.name.lower().rstrip(".")
    state = {"replicas": [], "healthy": [], "mtime": 0.0}
    rng = random.Random()
    lock = threading.Lock()

    def load_replicas():
        try:
            mtime = os.stat(args.replicas).st_mtime
        except OSError:
            return
        if mtime != state["mtime"]:
            with open(args.replicas) as f:
                replicas = json.load(f)
            with lock:
                state["replicas"], state["mtime"] = replicas, mtime

    def synced(sock):
        """Whether the replica behind `sock` has its primary's data (INFO replication)."""
        sock.sendall(b"*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n")
        reply = b""
        while b"\r\n" not in reply or len(reply) < int(reply[1:reply.index(b"\r\n")]) + reply.index(b"\r\n") + 4:
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("closed")
            reply += chunk
            if not reply.startswith(b"$"):
                raise OSError("not a bulk reply")
        return b"master_link_status:up" in reply

    def health():
        # One connection held to each replica: a replica that dies closes it, and leaves the
        # answers at once. One that does not answer, or has not synced, is tried again every
        # check_interval.
        held = {}
        while True:
            load_replicas()
            with lock:
                replicas = list(state["replicas"])
            for endpoint in list(held):
                if endpoint not in replicas:
                    held.pop(endpoint).close()
            for endpoint in replicas:
                if endpoint in held:
                    continue
                host, port = endpoint.rsplit(":", 1)
                try:
                    sock = socket.create_connection((host, int(port)), timeout=0.2)
                    sock.settimeout(1.0)
                    if synced(sock):
                        held[endpoint] = sock
                    else:
                        sock.close()
                except (OSError, ValueError):
                    pass
            with lock:
                state["healthy"] = [e.rsplit(":", 1)[0] for e in replicas if e in held]
            deadline = time.monotonic() + args.check_interval
            while held and time.monotonic() < deadline:
                readable, _, _ = select.select(list(held.values()), [], [], max(0.0, deadline - time.monotonic()))
                for sock in readable:
                    try:
                        gone = sock.recv(1) == b""
                    except OSError:
                        gone = True
                    if gone:
                        endpoint = next(e for e, s in held.items() if s is sock)
                        held.pop(endpoint).close()
                        with lock:
                            state["healthy"] = [h for h in state["healthy"] if h != endpoint.rsplit(":", 1)[0]]
            if not held:
                time.sleep(max(0.0, deadline - time.monotonic()))

    load_replicas()
    threading.Thread(target=health, daemon=True).start()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((args.bind, 53))
    with open(args.ready, "w") as f:
        f.write(str(os.getpid()))
    while True:
        query, peer = sock.recvfrom(512)
        if len(query) < 12:
            continue
        ident, flags = struct.unpack("!HH", query[:4])
        labels, at = [], 12
        try:
            while query[at] != 0:
                n = query[at]
                labels.append(query[at + 1 : at + 1 + n].decode("ascii", "replace"))
                at += n + 1
            qtype, _qclass = struct.unpack("!HH", query[at + 1 : at + 5])
        except (IndexError, struct.error):
            continue
        question = query[12 : at + 5]
        qname = ".".join(labels).lower()
        answers = b""
        rcode = 0
        if qname != name:
            rcode = 3  # NXDOMAIN: the lab's DNS knows one name
        elif qtype == 1:
            with lock:
                healthy = state["healthy"] or [e.rsplit(":", 1)[0] for e in state["replicas"]]
                address = rng.choice(healthy) if healthy else None
            if address:
                answers = struct.pack("!HHHIH", 0xC00C, 1, 1, 1, 4) + socket.inet_aton(address)
        reply_flags = 0x8000 | (flags & 0x0100) | 0x0080 | 0x0400 | rcode
        count = 1 if answers else 0
        header = struct.pack("!HHHHHH", ident, reply_flags, 1, count, 0, 0)
        sock.sendto(header + question + answers, peer)


# ---------------------------------------------------------------------------------------------
# metadata
def metadata(args):
    """IMDSv2 (token) and v1 on `args.bind`: the zone's name and ID, nothing else."""
    token = "lab-token-%d" % random.randrange(1 << 30)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def answer(self, code, body):
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_PUT(self):
            if self.path == "/latest/api/token":
                self.answer(200, token)
            else:
                self.answer(404, "")

        def do_GET(self):
            given = self.headers.get("X-aws-ec2-metadata-token")
            if given is not None and given != token:
                return self.answer(401, "")
            if self.path == "/latest/meta-data/placement/availability-zone":
                return self.answer(200, args.zone)
            if self.path == "/latest/meta-data/placement/availability-zone-id":
                return self.answer(200, args.zone_id)
            self.answer(404, "")

    host, port = args.bind.rsplit(":", 1)
    server = ThreadingHTTPServer((host, int(port)), Handler)
    with open(args.ready, "w") as f:
        f.write(str(os.getpid()))
    server.serve_forever()


# ---------------------------------------------------------------------------------------------
# load
def load(args):
    """`args.threads` keep-alive connections to the app, each paced at rate/threads requests a
    second, until SIGTERM; each request: `epoch_ms latency_us status route` into `args.out`."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    out = open(args.out, "a", buffering=1)
    lock = threading.Lock()
    host, port = args.target.rsplit(":", 1)
    period = args.threads / args.rate
    rng = random.Random(args.seed)

    def worker(n):
        conn = None
        next_at = time.monotonic() + period * n / args.threads
        while not stop.is_set():
            now = time.monotonic()
            if next_at > now:
                stop.wait(next_at - now)
                if stop.is_set():
                    break
            next_at += period
            key = "lab:%d" % rng.randrange(args.keys)
            started = time.monotonic()
            status, route = 0, "-"
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(host, int(port), timeout=10)
                conn.request("GET", "/read.php?key=" + key)
                response = conn.getresponse()
                response.read()
                status = response.status
                route = response.getheader("X-Locality-Route") or "-"
            except (OSError, http.client.HTTPException):
                status = 0
                if conn is not None:
                    conn.close()
                conn = None
            took = int((time.monotonic() - started) * 1e6)
            with lock:
                out.write("%d %d %d %s\n" % (int(time.time() * 1000), took, status, route))
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# ---------------------------------------------------------------------------------------------
# redisload
def read_reply(sock, buf):
    """One RESP reply (a bulk string, nil, or a one-line reply) from `sock`; the rest of the
    bytes read. Raises OSError when the connection ends."""
    while b"\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n")
    if head[:1] != b"$" or head == b"$-1":
        return head, rest
    size = int(head[1:])
    while len(rest) < size + 2:
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("connection closed")
        rest += chunk
    return rest[:size], rest[size + 2:]


def redisload(args):
    """GETs through a local endpoint (the sidecar) at `args.rate` a second, one connection kept
    and opened again when it ends, each GET tried once more on a new connection (as Redis
    clients retry after a reconnect); each: `epoch_ms latency_us ok|failed` into `args.out`."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    out = open(args.out, "a", buffering=1)
    host, port = args.target.rsplit(":", 1)
    rng = random.Random(args.seed)
    sock, buf = None, b""
    next_at = time.monotonic()
    while not stop.is_set():
        next_at += 1.0 / args.rate
        stop.wait(max(0.0, next_at - time.monotonic()))
        key = "lab:%d" % rng.randrange(args.keys)
        started = time.monotonic()
        ok = False
        for _attempt in range(2):
            try:
                if sock is None:
                    sock, buf = socket.create_connection((host, int(port)), timeout=2), b""
                sock.sendall(resp("GET", key))
                value, buf = read_reply(sock, buf)
                ok = len(value) > 100
                break
            except OSError:
                if sock is not None:
                    sock.close()
                sock = None
        out.write("%d %d %s\n" % (int(time.time() * 1000), int((time.monotonic() - started) * 1e6), "ok" if ok else "failed"))


# ---------------------------------------------------------------------------------------------
# writer
def resp(*parts):
    out = b"*%d\r\n" % len(parts)
    for p in parts:
        p = p if isinstance(p, bytes) else str(p).encode()
        out += b"$%d\r\n%s\r\n" % (len(p), p)
    return out


def writer(args):
    """SET lab:<n> (random keys, `args.size` bytes) on the primary at `args.rate` a second."""
    stop_on_term()
    rng = random.Random(args.seed)
    host, port = args.primary.rsplit(":", 1)
    sock = None
    while True:
        try:
            if sock is None:
                sock = socket.create_connection((host, int(port)), timeout=2)
            value = bytes(rng.randrange(97, 123) for _ in range(16)) * (args.size // 16)
            sock.sendall(resp("SET", "lab:%d" % rng.randrange(args.keys), value))
            sock.recv(64)
        except OSError:
            if sock is not None:
                sock.close()
            sock = None
        time.sleep(1.0 / args.rate)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="role", required=True)
    p = sub.add_parser("delay")
    p.add_argument("--name", required=True)
    p.add_argument("--ms", type=float, required=True)
    p.add_argument("--stats", required=True)
    p.add_argument("--ready", required=True)
    p = sub.add_parser("dns")
    p.add_argument("--name", required=True)
    p.add_argument("--bind", default="0.0.0.0")
    p.add_argument("--replicas", required=True)
    p.add_argument("--check-interval", type=float, default=0.25)
    p.add_argument("--ready", required=True)
    p = sub.add_parser("metadata")
    p.add_argument("--bind", required=True)
    p.add_argument("--zone", required=True)
    p.add_argument("--zone-id", required=True)
    p.add_argument("--ready", required=True)
    p = sub.add_parser("load")
    p.add_argument("--target", required=True)
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--keys", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True)
    p = sub.add_parser("redisload")
    p.add_argument("--target", required=True)
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--keys", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True)
    p = sub.add_parser("writer")
    p.add_argument("--primary", required=True)
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--keys", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.role not in ("load", "redisload"):
        stop_on_term()
    {"delay": delay, "dns": dns, "metadata": metadata, "load": load, "redisload": redisload, "writer": writer}[args.role](args)


if __name__ == "__main__":
    main()
