"""From the kernel's per-flow counters to VPC Flow Logs records, and the kernel's own figures.

The counters (nft dynamic sets, one counter per 5-tuple and direction, in the input and output
hooks of every host's one interface) are polled about once a second. A series is, per host and
key `(direction, saddr, daddr, proto, sport, dport)`, the cumulative `(t, packets, bytes)` at
each poll that saw it change. An increment between two polls is stamped with the second of the
poll that saw it (AWS stamps `start`/`end` with a packet's second).

Records are built as AWS delivers them: per interface, per aggregation window (60 s, on the
interface's own clock, which may run `skew` seconds late), one record per 5-tuple and direction,
`start`/`end` the first and last second with packets, `bytes` at the IP level. Flows with the
router's own addresses (the VPC's DNS and health checks) are not logged, as AWS logs no traffic
to its DNS server.

The kernel's figures use the same increments and the audit's definition: bytes between a
replica and a client, both directions, each flow (5-tuple) once: at the replica's end, or at the
client's end when the replica's end never counted it (a replica gone); in-zone when the
client's subnet is the replica's zone. The truth is per 5-tuple and never looks at windows,
so it does not share the audit's counting rule.
"""

import collections
import gzip
import hashlib
import ipaddress
import os
import time

ACCOUNT = "123456789012"
REGION = "ap-northeast-1"
PROTOCOLS = {"tcp": 6, "udp": 17}

DEFAULT_FIELDS = ("version account-id interface-id srcaddr dstaddr srcport dstport protocol "
                  "packets bytes start end action log-status").split()
CUSTOM_FIELDS = ("version account-id interface-id az-id flow-direction srcaddr dstaddr srcport "
                 "dstport protocol packets bytes start end action log-status").split()


def increments(series, t0, t1):
    """Yields (host, key, t, packets, bytes) for every increment seen by a poll in (t0, t1]."""
    for host, keys in series.items():
        for key, samples in keys.items():
            prev_p = prev_b = 0
            for t, p, b in samples:
                if t0 < t <= t1 and (p > prev_p or b > prev_b):
                    yield host, key, t, p - prev_p, b - prev_b
                prev_p, prev_b = p, b


def build_records(series, hosts, t0, t1, skews=None, window=60, excluded=()):
    """Records per interface (`hosts[host]`: interface id, AZ ID, address) and window; `skews`
    gives each host's clock offset in seconds (default 0)."""
    skews = skews or {}
    excluded = set(excluded)
    agg = {}
    for host, key, t, packets, octets in increments(series, t0, t1):
        direction, saddr, daddr, proto, sport, dport = key
        if saddr in excluded or daddr in excluded:
            continue
        stamp = int(t) + int(skews.get(host, 0))
        slot = (host, key, stamp // window)
        rec = agg.get(slot)
        if rec is None:
            agg[slot] = [packets, octets, stamp, stamp]
        else:
            rec[0] += packets
            rec[1] += octets
            rec[2] = min(rec[2], stamp)
            rec[3] = max(rec[3], stamp)
    records = []
    for (host, key, _), (packets, octets, start, end) in agg.items():
        direction, saddr, daddr, proto, sport, dport = key
        info = hosts[host]
        records.append({
            "interface-id": info["eni"], "az-id": info["zone_id"],
            "flow-direction": "ingress" if direction == "in" else "egress",
            "srcaddr": saddr, "dstaddr": daddr, "srcport": sport, "dstport": dport,
            "protocol": PROTOCOLS[proto], "packets": packets, "bytes": octets,
            "start": start, "end": end,
        })
    records.sort(key=lambda r: (r["start"], r["interface-id"], r["srcaddr"], r["srcport"]))
    return records


def line(record, fields, version):
    values = {"version": version, "account-id": ACCOUNT, "action": "ACCEPT", "log-status": "OK"}
    values.update(record)
    return " ".join(str(values[f]) for f in fields)


def write_logs(records, root, custom=False, flow_log_id="fl-0lab"):
    """Gzip files under root/AWSLogs/<account>/vpcflowlogs/<region>/yyyy/MM/dd/, one per
    5-minute delivery, header line first. Returns the folder of the records (root)."""
    fields, version = (CUSTOM_FIELDS, 5) if custom else (DEFAULT_FIELDS, 2)
    files = collections.defaultdict(list)
    for record in records:
        slot = record["start"] // 300 * 300
        files[slot].append(line(record, fields, version))
    for slot, lines in sorted(files.items()):
        stamp = time.gmtime(slot)
        day = os.path.join(root, "AWSLogs", ACCOUNT, "vpcflowlogs", REGION, time.strftime("%Y/%m/%d", stamp))
        os.makedirs(day, exist_ok=True)
        text = " ".join(fields) + "\n" + "\n".join(lines) + "\n"
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        name = "%s_vpcflowlogs_%s_%s_%s_%s.log.gz" % (
            ACCOUNT, REGION, flow_log_id, time.strftime("%Y%m%dT%H%MZ", stamp), digest)
        with gzip.open(os.path.join(day, name), "wt") as f:
            f.write(text)
    return root


class Topology:
    """Addresses and their roles and zones: nodes (replicas, primary), clients, router."""

    def __init__(self, subnets, nodes, router):
        self.subnets = [(ipaddress.ip_network(cidr), zone) for cidr, zone in subnets]
        self.nodes = dict(nodes)  # address -> role ("replica" | "primary")
        self.router = set(router)

    def zone(self, address):
        ip = ipaddress.ip_address(address)
        for net, zone in self.subnets:
            if ip in net:
                return zone
        return None

    def kind(self, address):
        if address in self.router:
            return "router"
        return self.nodes.get(address, "client")


def flow_of(local, key):
    """(client-side address and port, node-side address and port, protocol) of an increment at
    `local`, with `local`'s side first: a 5-tuple whichever direction and end counted it."""
    direction, saddr, daddr, proto, sport, dport = key
    if direction == "in":
        return (local, dport, saddr, sport, proto)
    return (local, sport, daddr, dport, proto)


def kernel_figures(series, hosts, topology, t0, t1):
    """The kernel's figures over (t0, t1]: replica bytes with clients, in-zone and across, each
    flow once: at the replica's end, or at the client's end for a flow the replica's end never
    counted (a replica gone: connection attempts to its address); and the other cross-zone
    bytes by kind (writes to the primary, replication, at the primary's end)."""
    fig = {"in_zone": 0, "cross_zone": 0, "cross_zone_writes": 0, "cross_zone_replication": 0,
           "per_client": collections.Counter()}
    seen = []
    at_replica = set()
    for host, key, _t, _p, octets in increments(series, t0, t1):
        local = hosts[host]["address"]
        flow = flow_of(local, key)
        remote = flow[2]
        here, there = topology.kind(local), topology.kind(remote)
        seen.append((local, remote, here, there, flow, octets))
        if here == "replica" and there == "client":
            at_replica.add(flow)
    for local, remote, here, there, flow, octets in seen:
        across = topology.zone(local) != topology.zone(remote)
        if here == "replica" and there == "client":
            client = remote
        elif here == "client" and there == "replica" and (flow[2], flow[3], flow[0], flow[1], flow[4]) not in at_replica:
            client = local
        else:
            client = None
        if client is not None:
            fig["cross_zone" if across else "in_zone"] += octets
            if across:
                fig["per_client"][client] += octets
        elif here == "primary" and there == "client" and across:
            fig["cross_zone_writes"] += octets
        elif here == "primary" and there == "replica" and across:
            fig["cross_zone_replication"] += octets
    total = fig["in_zone"] + fig["cross_zone"]
    fig["share"] = fig["in_zone"] / total if total else None
    fig["per_client"] = dict(fig["per_client"])
    return fig


def cross_zone_per_second(series, hosts, topology, t0, t1):
    """Per second since t0: cross-zone bytes of reads (at the replica), writes and replication
    (at the primary)."""
    out = collections.defaultdict(lambda: [0, 0, 0])
    for host, key, t, _p, octets in increments(series, t0, t1):
        local = hosts[host]["address"]
        direction, saddr, daddr = key[0], key[1], key[2]
        remote = saddr if direction == "in" else daddr
        here, there = topology.kind(local), topology.kind(remote)
        if topology.zone(local) == topology.zone(remote):
            continue
        second = int(t - t0)
        if here == "replica" and there == "client":
            out[second][0] += octets
        elif here == "primary" and there == "client":
            out[second][1] += octets
        elif here == "primary" and there == "replica":
            out[second][2] += octets
    return out
