#!/usr/bin/env python3
"""Turns run-twohost.sh's results.csv (one row per round and measurement)
into TABLE.md: medians per size and implementation, and ratios that read the
same way everywhere: above 1 means librma did better (bandwidth ours / peer,
latency peer / ours)."""
import argparse
import collections
import csv
import statistics
import sys

OURS = [("ours", "librma af_packet"), ("ours-afxdp", "librma af_xdp")]
PEERS = [("ucx-tcp", "UCX tcp"), ("libfabric-tcp", "libfabric tcp")]
IMPLS = OURS + PEERS
SHORT = {"ours": "af_packet", "ours-afxdp": "af_xdp", "ucx-tcp": "UCX", "libfabric-tcp": "libfabric"}
# rma_frame_pump on the port each of ours uses: the link with no NIC.
LINKS = [("link-afpacket", "ours", "af_packet"), ("link-afxdp", "ours-afxdp", "af_xdp")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--load-csv", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="")
    ap.add_argument("--setup", default="")
    ap.add_argument("--failures", type=int, default=0)
    a = ap.parse_args()

    vals = collections.defaultdict(list)  # (metric, impl, size) -> [values]
    rounds = set()
    with open(a.csv) as f:
        for row in csv.DictReader(f):
            try:
                vals[(row["metric"], row["impl"], int(row["size"]))].append(float(row["value"]))
                rounds.add(row["round"])
            except (KeyError, ValueError):
                print(f"make_table: skipping malformed row {row}", file=sys.stderr)
    loads = []
    with open(a.load_csv) as f:
        for row in csv.DictReader(f):
            try:
                loads.append(float(row["load1"]))
            except (KeyError, ValueError):
                pass

    def med(metric, impl, size):
        v = vals.get((metric, impl, size))
        return statistics.median(v) if v else None

    def n(metric, impl, size):
        return len(vals.get((metric, impl, size), []))

    def fmt(v):
        if v is None:
            return "n/a"
        return f"{v:.2f}" if v < 100 else f"{v:.0f}"

    def ratio(ours, peer, higher_better):
        if not ours or not peer:
            return "n/a"
        return f"{(ours / peer if higher_better else peer / ours):.2f}"

    lines = []
    if a.command:
        lines.append(f"Command: `{a.command}`  ")
    if a.setup:
        lines.append(f"Setup: {a.setup}  ")
    if loads:
        lines.append(f"Load average (1 min) before each pair: min {min(loads):.2f}, "
                     f"median {statistics.median(loads):.2f}, max {max(loads):.2f} "
                     f"over {len(loads)} pairs; rounds: {len(rounds)}; failed measurements: {a.failures}")
    lines.append("")
    for metric, title in (("write_bw", "RDMA WRITE / put bandwidth (MiB/s, median of rounds)"),
                          ("read_bw", "RDMA READ / get bandwidth (MiB/s, median of rounds)")):
        sizes = sorted({k[2] for k in vals if k[0] == metric})
        if not sizes:
            continue
        lines.append(f"### {title}\n")
        head = "| size (B) |" + "".join(f" {label} |" for _, label in IMPLS)
        head += "".join(f" {SHORT[o]} / {SHORT[p]} |" for o, _ in OURS for p, _ in PEERS)
        lines.append(head)
        lines.append("| ---: |" + " ---: |" * (len(IMPLS) + len(OURS) * len(PEERS)))
        for s in sizes:
            row = f"| {s} |" + "".join(f" {fmt(med(metric, i, s))} |" for i, _ in IMPLS)
            row += "".join(f" {ratio(med(metric, o, s), med(metric, p, s), True)} |" for o, _ in OURS for p, _ in PEERS)
            lines.append(row)
        lines.append("")
    lat_sizes = sorted({k[2] for k in vals if k[0] == "write_lat"})
    if lat_sizes:
        lines.append("### WRITE / put latency (µs, half round trip, median per run, median of rounds)\n")
        head = "| size (B) |" + "".join(f" {label} |" for _, label in IMPLS)
        head += "".join(f" {SHORT[p]} / {SHORT[o]} |" for o, _ in OURS for p, _ in PEERS)
        lines.append(head)
        lines.append("| ---: |" + " ---: |" * (len(IMPLS) + len(OURS) * len(PEERS)))
        for s in lat_sizes:
            row = f"| {s} |" + "".join(f" {fmt(med('write_lat', i, s))} |" for i, _ in IMPLS)
            row += "".join(f" {ratio(med('write_lat', o, s), med('write_lat', p, s), False)} |"
                           for o, _ in OURS for p, _ in PEERS)
            lines.append(row)
        lines.append("")
    link_rows = [(li, o, port) for li, o, port in LINKS
                 if any(k[1] == li for k in vals)]
    if link_rows:
        lines.append("### The link alone (rma_frame_pump on the same ports, no NIC; median of rounds)\n")
        lines.append("| port | frame payload (B) | link payload MiB/s | our WRITE MiB/s, largest size | of the link "
                     "| link 8 B half round trip (µs) | the same behind an ACK frame each way (µs) "
                     "| our 8 B WRITE latency (µs) | ours / link | ours / link with ACK |")
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        wsizes = sorted({k[2] for k in vals if k[0] == "write_bw"})
        for li, o, port in link_rows:
            payloads = sorted({k[2] for k in vals if k[0] == "link_bw" and k[1] == li})
            payload = payloads[-1] if payloads else None
            lbw = med("link_bw", li, payload) if payload else None
            obw = med("write_bw", o, wsizes[-1]) if wsizes else None
            llat, olat = med("link_lat", li, 8), med("write_lat", o, 8)
            llat_ack = med("link_lat_ack", li, 8)
            share = f"{100 * obw / lbw:.0f} %" if obw and lbw else "n/a"
            lat_ratio = f"{olat / llat:.2f}" if olat and llat else "n/a"
            ack_ratio = f"{olat / llat_ack:.2f}" if olat and llat_ack else "n/a"
            lines.append(f"| {port} | {payload or 'n/a'} | {fmt(lbw)} | {fmt(obw)} | {share} | {fmt(llat)} "
                         f"| {fmt(llat_ack)} | {fmt(olat)} | {lat_ratio} | {ack_ratio} |")
        lines.append("")
    spreads = {i: [max(v) / min(v) for (m, j, _), v in vals.items() if j == i and len(v) > 1 and min(v) > 0]
               for i, _ in IMPLS}
    parts = [f"{label} median {statistics.median(spreads[i]):.2f}, worst {max(spreads[i]):.2f}"
             for i, label in IMPLS if spreads[i]]
    if parts:
        lines.append("Spread across rounds (max / min of one cell): " + "; ".join(parts) + "\n")
    short = sorted({f"{m} {i} {s}: {n(m, i, s)}" for (m, i, s) in vals if n(m, i, s) < len(rounds)})
    if short:
        lines.append("Cells with fewer values than rounds: " + "; ".join(short) + "\n")
    with open(a.out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
