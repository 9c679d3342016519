"""The lab's report: report.json (the figures), report.md (the table a platform team shows its
manager) and report.png (cross-zone bytes per second through the run, the drills marked, drawn
with matplotlib), and the checks the run must pass."""

import json
import os
import time

SEED = {
    "reduction": "about 92 % less cross-AZ transfer in production; 79 GB of load, cross-AZ transfer for ElastiCache to $0",
    "latency": "15-19 % lower response time at low to mid load",
    "node_failure": "a node failure drill without errors",
    "metadata_outage": "an instance-metadata outage without errors",
    "silent": "replicas replaced, the secret not updated: the savings vanish silently",
}


def pct(x):
    return "n/a" if x is None else "%.2f %%" % (100 * x)


def mb(x):
    return "n/a" if x is None else "{:,.2f} MB".format(x / 1e6)


def phase_of(figures, name):
    return next((p for p in figures["phases"] if p["name"] == name), None)


def write(out, figures, phases, args, machine):
    base, loc = phase_of(figures, "a-baseline"), phase_of(figures, "a-locality")
    kb, kl = base["kernel"], loc["kernel"]
    ab, al = base["audit"], loc["audit"]
    reduction_kernel = 1 - kl["cross_zone"] / kb["cross_zone"] if kb["cross_zone"] else None
    reduction_audit = (1 - al["cross_zone_bytes"] / ab["cross_zone_bytes"]) if ab["cross_zone_bytes"] else None
    lb, ll = figures["load"]["baseline"], figures["load"]["locality"]
    p50_gain = 1 - ll["p50_ms"] / lb["p50_ms"] if lb["p50_ms"] and ll["p50_ms"] else None
    p99_gain = 1 - ll["p99_ms"] / lb["p99_ms"] if lb["p99_ms"] and ll["p99_ms"] else None
    nf, mo, rp = figures["node_failure"], figures["metadata_outage"], figures["replaced"]
    stale, applied = phase_of(figures, "d-stale-map"), phase_of(figures, "d-applied")
    price = 0.01
    doc = {
        "machine": machine,
        "short": args.short,
        "duration_s": figures["duration_s"],
        "delay": {"configured_ms_each_way": args.delay_ms, "how": "a TUN device in the router namespace holds routed (cross-zone) packets in user space; policy routing (ip rule iif <zone bridge> lookup 100) sends only those through it", "measured": figures["delay"]},
        "cross_zone_read_bytes": {"baseline": kb["cross_zone"], "locality": kl["cross_zone"]},
        "cross_zone_read_bytes_audit": {"baseline": ab["cross_zone_bytes"], "locality": al["cross_zone_bytes"]},
        "cross_zone_read_reduction": {"kernel": reduction_kernel, "audit": reduction_audit},
        "cross_zone_remaining_bytes": {"writes_to_primary": kl["cross_zone_writes"], "replication": kl["cross_zone_replication"]},
        "cost_usd_per_gb": price,
        "kernel_share": kl["share"],
        "audit_share": al["share"],
        "shares": [{"phase": p["name"], "kernel": p["kernel"]["share"], "audit": p["audit"]["share"],
                    "audit_custom_format": p["audit_custom"]["share"], "kernel_in_zone_bytes": p["kernel"]["in_zone"],
                    "kernel_cross_zone_bytes": p["kernel"]["cross_zone"], "audit_in_zone_bytes": p["audit"]["in_zone_bytes"],
                    "audit_cross_zone_bytes": p["audit"]["cross_zone_bytes"], "records": p["records"], "map": p["map"]}
                   for p in figures["phases"]],
        "athena": figures["athena"],
        "latency_ms": {"baseline": {"p50": lb["p50_ms"], "p99": lb["p99_ms"]}, "locality": {"p50": ll["p50_ms"], "p99": ll["p99_ms"]},
                       "p50_lower_by": p50_gain, "p99_lower_by": p99_gain},
        "load": figures["load"],
        "failed_requests": {"node_failure": nf["requests"]["failed"],
                            "metadata_outage": mo["requests"]["failed"] + mo["sidecar"]["reads"]["failed"]},
        "node_failure": nf,
        "metadata_outage": mo,
        "replaced_replica": {
            "share_stale_map": stale["audit"]["share"], "kernel_share_stale_map": stale["kernel"]["share"],
            "min_share": stale.get("min_share"), "plan_exit": rp["plan_exit"], "plan": rp["plan"],
            "share_after_apply": applied["audit"]["share"], "kernel_share_after_apply": applied["kernel"]["share"],
            "plan_after_apply_exit": rp["plan_after_apply_exit"],
            "requests_stale": rp["requests_stale"], "requests_applied": rp["requests_applied"]},
        "clock_skew": figures["clock_skew"],
        "flow_logs": figures["flow_logs"],
        "flow_logs_custom_format": os.path.join(out, "flow-logs-custom"),
        "replica_map": os.path.join(out, "replica-map.json"),
        "subnets": os.path.join(out, "subnets.json"),
        "phases": [{"name": p["name"], "start": p["t0"], "end": p["t1"]} for p in phases],
        "map_document": figures["map"],
    }
    checks = [
        {"name": "read bytes across zones fall by at least 90 % with the map (kernel)",
         "passed": reduction_kernel is not None and reduction_kernel >= 0.90, "detail": pct(reduction_kernel)},
        {"name": "0 failed requests in the node failure drill", "passed": nf["requests"]["failed"] == 0,
         "detail": "%d answered, %d failed" % (nf["requests"]["answered"], nf["requests"]["failed"])},
        {"name": "0 failed requests in the metadata outage drill", "passed": mo["requests"]["failed"] == 0,
         "detail": "%d answered, %d failed" % (mo["requests"]["answered"], mo["requests"]["failed"])},
        {"name": "the sidecar back in its zone within --failure-ttl and one map read of the metadata's return, no read failed",
         "passed": mo["sidecar"]["zone_after_metadata_s"] is not None and mo["sidecar"]["zone_after_metadata_s"] <= mo["sidecar"]["bound_s"] + 2
         and mo["sidecar"]["reads"]["failed"] == 0 and mo["sidecar"]["route_at_start"] == "reader",
         "detail": "started on %s, in the zone %s s after the metadata returned (bound %s s), reads %s" % (
             mo["sidecar"]["route_at_start"], None if mo["sidecar"]["zone_after_metadata_s"] is None else round(mo["sidecar"]["zone_after_metadata_s"], 1),
             mo["sidecar"]["bound_s"], mo["sidecar"]["reads"])},
        {"name": "zone b back in its zone after the replica's restart", "passed": nf["back_at"] is not None,
         "detail": "%s s after the kill" % (None if nf["back_in_zone_after_kill_s"] is None else round(nf["back_in_zone_after_kill_s"], 1))},
        {"name": "zone c back in its zone at the entrypoint's next start", "passed": mo["back_at"] is not None,
         "detail": "%s s after the metadata returned" % (None if mo["back_in_zone_after_metadata_s"] is None else round(mo["back_in_zone_after_metadata_s"], 1))},
        {"name": "the audit's share equals the kernel's, every phase, both formats",
         "passed": all(p["audit"]["share"] == p["kernel"]["share"] and p["audit_custom"]["share"] == p["kernel"]["share"]
                       and p["audit"]["in_zone_bytes"] == p["kernel"]["in_zone"] and p["audit"]["cross_zone_bytes"] == p["kernel"]["cross_zone"]
                       for p in figures["phases"]),
         "detail": "; ".join("%s %s/%s" % (p["name"], p["audit"]["share"], p["kernel"]["share"]) for p in figures["phases"])},
        {"name": "--min-share fails with the stale map (exit 3)", "passed": (stale.get("min_share") or {}).get("exit") == 3,
         "detail": "exit %s, share %s" % ((stale.get("min_share") or {}).get("exit"), (stale.get("min_share") or {}).get("share"))},
        {"name": "terraform plan shows the drift (exit 2, the zone's endpoint)", "passed": rp["plan_exit"] == 2 and "10.0.3.21" in rp["plan"],
         "detail": "exit %s" % rp["plan_exit"]},
        {"name": "after the apply the share returns", "passed": applied["audit"]["share"] is not None and applied["audit"]["share"] >= 0.95
         and rp["plan_after_apply_exit"] == 0, "detail": "share %s, plan after apply exit %s" % (applied["audit"]["share"], rp["plan_after_apply_exit"])},
        {"name": "the delay line delayed from start to end", "passed": all(d["added_rtt_ms"] >= args.delay_ms and d["delay_line_alive"] for d in figures["delay"]),
         "detail": ", ".join("%s +%.3f ms RTT" % (d["label"], d["added_rtt_ms"]) for d in figures["delay"])},
    ]
    if figures["athena"]:
        checks.append({"name": "--athena (stand-in, DuckDB) gives the files' share",
                       "passed": figures["athena"]["share"] == al["share"] and figures["athena"]["share"] is not None,
                       "detail": "%s against %s" % (figures["athena"]["share"], al["share"])})
    doc["checks"] = checks
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    plot(out, figures, phases)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(markdown(doc, figures, args, machine, reduction_kernel, reduction_audit, p50_gain, p99_gain))
    return checks


def plot(out, figures, phases):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = figures["per_second_t0"]
    end = int(phases[-1]["t1"] - t0) + 1
    xs = list(range(end))
    series = figures["per_second"]
    def smooth(kind):
        # Polls land about once a second, not on the second: a 3-second mean.
        raw = [series.get(str(x), [0, 0, 0])[kind] / 1e6 for x in xs]
        return [sum(raw[max(0, x - 1):x + 2]) / len(raw[max(0, x - 1):x + 2]) for x in xs]

    reads, writes, repl = smooth(0), smooth(1), smooth(2)
    fig, ax = plt.subplots(figsize=(12, 5), dpi=110)
    ax.stackplot(xs, reads, writes, repl, labels=["reads (client - replica)", "writes (client - primary)", "replication (primary - replica)"],
                 colors=["#d62728", "#1f77b4", "#7f7f7f"], alpha=0.8)
    colors = ["#fff2cc", "#d9ead3", "#f4cccc", "#cfe2f3", "#ead1dc", "#d9d2e9"]
    for n, p in enumerate(phases):
        a, b = p["t0"] - t0, p["t1"] - t0
        ax.axvspan(a, b, color=colors[n % len(colors)], alpha=0.35, zorder=0)
        ax.text((a + b) / 2, 0.98, p["name"], transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=8, rotation=0)
    nf = figures["node_failure"]
    for label, t in (("replica-b killed", nf["killed_at"]), ("replica-b restarted", nf["restarted_at"]),
                     ("zone c metadata back", figures["metadata_outage"]["metadata_back_at"])):
        ax.axvline(t - t0, color="black", linestyle="--", linewidth=0.8)
        ax.text(t - t0, 0.85, " " + label, transform=ax.get_xaxis_transform(), fontsize=7, rotation=90, va="top")
    ax.set_xlabel("seconds since the first drill")
    ax.set_ylabel("cross-zone MB/s (kernel counters, 3 s mean)")
    ax.set_title("Cross-zone bytes per second through the lab run")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, fontsize=8)
    ax.set_xlim(0, end)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "report.png"))
    plt.close(fig)


def markdown(doc, figures, args, machine, red_k, red_a, p50_gain, p99_gain):
    lb, ll = figures["load"]["baseline"], figures["load"]["locality"]
    nf, mo = figures["node_failure"], figures["metadata_outage"]
    rr = doc["replaced_replica"]
    loc = phase_of(figures, "a-locality")
    lines = [
        "# The lab: the replica map on real packets",
        "",
        "Run %s on %s (%s CPUs, %s, Linux %s, load average %s at the end), %s run, %.0f s. Absolute times are loose on a shared machine; the ratios are the result."
        % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(figures.get("t_end", time.time()))), machine["cpu"] or "?", machine["cpus"], machine["memory"], machine["kernel"],
           "/".join("%.2f" % x for x in machine["load_average"]), "short" if args.short else "default", doc["duration_s"]),
        "",
        "Three zones (%s) as network namespaces behind a router namespace; Debian's redis-server: a primary in the first zone and a replica in each; "
        "in each zone PHP-FPM with `examples/php/read.php`, started by the guide's entrypoint (`locality resolve`), behind an HTTP front, "
        "a metadata fake, and a load generator (%.0f requests/s a zone, %d B values). The reader endpoint is a DNS name answered with one healthy replica per query, at random (spreading connections as the reader endpoint does). "
        "The map is written by `terraform apply` with this provider (a file target)." % (", ".join(z for z in ("ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d")), args.rate, 16384),
        "",
        "**Delay between zones**: %s. Measured (TCP connect round trip from zone a): %s." % (
            doc["delay"]["how"] + ", %.2f ms each way" % args.delay_ms,
            "; ".join("%s: same zone %.3f ms, across %.3f ms (+%.3f ms)" % (d["label"], d["same"], d["across"], d["added_rtt_ms"]) for d in figures["delay"])),
        "",
        "![cross-zone bytes per second](report.png)",
        "",
        "## The claims",
        "",
        "| claim | the seed | ours (`locality audit` on flow logs built from the counters) | the kernel's counters |",
        "|---|---|---|---|",
        "| cross-zone read bytes fall with the map | %s | %s → %s: %s less | %s → %s: %s less |" % (
            SEED["reduction"], mb(doc["cross_zone_read_bytes_audit"]["baseline"]), mb(doc["cross_zone_read_bytes_audit"]["locality"]), pct(red_a),
            mb(doc["cross_zone_read_bytes"]["baseline"]), mb(doc["cross_zone_read_bytes"]["locality"]), pct(red_k)),
        "| what still crosses zones with the map | writes to the primary and replication | — | writes %s, replication %s |" % (
            mb(doc["cross_zone_remaining_bytes"]["writes_to_primary"]), mb(doc["cross_zone_remaining_bytes"]["replication"])),
        "| response time falls | %s | p50 %.2f → %.2f ms (%s lower), p99 %.2f → %.2f ms (%s lower) | delay line +%.3f ms a round trip |" % (
            SEED["latency"], lb["p50_ms"] or 0, ll["p50_ms"] or 0, pct(p50_gain), lb["p99_ms"] or 0, ll["p99_ms"] or 0, pct(p99_gain), figures["delay"][0]["added_rtt_ms"]),
        "| in-zone share with the map | — | %s (default format), %s (custom, `flow-direction`), %s (`--athena`, stand-in) | %s |" % (
            loc["audit"]["share"], loc["audit_custom"]["share"], (figures["athena"] or {}).get("share"), loc["kernel"]["share"]),
        "| node failure: replica of %s killed under load | %s | %d answered, %d failed; first fallback read %.2f s after the kill; back in the zone %.1f s after the kill (%.1f s after the restart) | %s across zones during the outage |" % (
            nf["zone"], SEED["node_failure"], nf["requests"]["answered"], nf["requests"]["failed"], nf["first_fallback_after_s"] or -1,
            nf["back_in_zone_after_kill_s"] or -1, nf["back_in_zone_after_restart_s"] or -1, mb(figures.get("node_failure_cross_bytes"))),
        "| metadata outage: %s's app starts without it | %s | %d answered, %d failed; on the reader during the outage (%s); back in the zone %.1f s after the metadata returned, at the entrypoint's next start (`--failure-ttl %d`). The sidecar: on the reader, in the zone %s s after the metadata returned (bound: `--failure-ttl` + `--interval` = %d s), %d reads through it, %d failed | — |" % (
            mo["zone"], SEED["metadata_outage"], mo["requests"]["answered"], mo["requests"]["failed"], mo["during_outage"]["routes"],
            mo["back_in_zone_after_metadata_s"] or -1, mo["failure_ttl_s"],
            None if mo["sidecar"]["zone_after_metadata_s"] is None else round(mo["sidecar"]["zone_after_metadata_s"], 1),
            mo["sidecar"]["bound_s"], mo["sidecar"]["reads"]["reads"], mo["sidecar"]["reads"]["failed"]),
        "| a replica replaced, the map not updated | %s | share %s; `--min-share %s` exit %s; `terraform plan` exit %s (drift); after apply share %s | share %s, after apply %s |" % (
            SEED["silent"], rr["share_stale_map"], (rr["min_share"] or {}).get("threshold"), (rr["min_share"] or {}).get("exit"), rr["plan_exit"],
            rr["share_after_apply"], rr["kernel_share_stale_map"], rr["kernel_share_after_apply"]),
        "",
        "## Every phase: the audit against the kernel",
        "",
        "| phase | records | kernel in-zone B | kernel cross-zone B | kernel share | audit share (default) | audit share (custom) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in doc["shares"]:
        lines.append("| %s | %d | %s | %s | %s | %s | %s |" % (s["phase"], s["records"], "{:,}".format(s["kernel_in_zone_bytes"]),
                                                            "{:,}".format(s["kernel_cross_zone_bytes"]), s["kernel"], s["audit"], s["audit_custom_format"]))
    skew = figures["clock_skew"]
    lines += ["", "## AWS's clock: records stamped up to N s late, per interface", "",
              "The records of %s to %s (%.0f s, one continuous span and one map), rebuilt with each interface's records stamped a random 0 to N s late, "
              "as AWS allows (up to 60 s), then audited." % (skew[0]["span"][0], skew[0]["span"][1], skew[0]["span_s"]) if skew else "", "",
              "| max lateness | audit share | kernel share | audit bytes − kernel bytes | cross-zone bytes: audit − kernel |", "|---|---|---|---|---|"]
    for s in skew:
        lines.append("| %d s | %s | %s | %s | %s |" % (s["max_skew_s"], s["audit_share"], s["kernel_share"],
                                                   pct(s["bytes_error"]), pct(s["cross_zone_error"])))
    lines += ["", "## Load", "", "| run | requests | failed | p50 ms | p99 ms | routes |", "|---|---|---|---|---|---|"]
    for name, s in (("reader endpoint", lb), ("the map", ll)):
        lines.append("| %s | %d | %d | %s | %s | %s |" % (name, s["requests"], s["failed"], s["p50_ms"], s["p99_ms"], s["routes"]))
    lines += ["", "## Checks", ""]
    for c in doc["checks"]:
        lines.append("- %s %s: %s" % ("✅" if c["passed"] else "❌", c["name"], c["detail"]))
    lines += ["", "The records: `%s` (default format) and `%s` (custom format); the map and subnets the audit read: `replica-map.json`, "
              "`replica-map-before-drill-d.json`, `subnets.json`. Run the audit again: `locality audit --map replica-map.json --subnets subnets.json "
              "--flow-logs flow-logs/d-applied`." % (doc["flow_logs"], doc["flow_logs_custom_format"]), ""]
    return "\n".join(lines)
