#!/usr/bin/env python3
"""Turns run-report.sh's results.csv into REPORT.md and SVG plots (gnuplot).

Ratios are computed pair by pair at each size: for bandwidth ours / peer,
for latency peer / ours, so that above 1 always means librma did better.
"""
import argparse
import collections
import csv
import os
import statistics
import subprocess
import sys

OURS = "softroce-memif"
METRICS = {
    "write_bw": ("RDMA WRITE bandwidth", "MiB/s", True),
    "read_bw": ("RDMA READ bandwidth", "MiB/s", True),
    "write_lat": ("RDMA WRITE latency (typical / median, half round trip)", "usec", False),
}
PEERS = [("ucx-shm", "UCX ucx_perftest, shared memory (posix,cma,self)"),
         ("ucx-tcp", "UCX ucx_perftest, TCP on loopback")]


def load(path):
    data = collections.defaultdict(dict)  # (transport, metric) -> size -> (tool, value)
    with open(path) as f:
        for row in csv.DictReader(f):
            try:
                data[(row["transport"], row["metric"])][int(row["size"])] = (row["tool"], float(row["value"]))
            except (KeyError, ValueError):
                print(f"make_report: skipping malformed row {row}", file=sys.stderr)
    return data


def ratio(ours, peer, higher_better):
    if ours is None or peer is None or ours <= 0 or peer <= 0:
        return "n/a"
    r = ours / peer if higher_better else peer / ours
    return f"{r:.2f}"


def fmt(v):
    if v is None:
        return "n/a"
    return f"{v:.2f}" if v < 1000 else f"{v:.0f}"


def table(data, metric, ours_key, peers):
    title, unit, higher = METRICS[metric]
    ours = data.get((ours_key, metric), {})
    sizes = sorted(set(ours) | {s for p, _ in peers for s in data.get((p, metric), {})})
    if not sizes:
        return ""
    head = f"| size (B) | librma {ours_key} ({unit}) |"
    sep = "| ---: | ---: |"
    for p, _ in peers:
        head += f" {p} ({unit}) | librma vs {p} |"
        sep += " ---: | ---: |"
    lines = [head, sep]
    for s in sizes:
        o = ours.get(s, (None, None))[1]
        line = f"| {s} | {fmt(o)} |"
        for p, _ in peers:
            v = data.get((p, metric), {}).get(s, (None, None))[1]
            line += f" {fmt(v)} | {ratio(o, v, higher)} |"
        lines.append(line)
    return f"### {title}\n\n" + "\n".join(lines) + "\n"


def plot(data, out, name, metrics, ylabel, series):
    gp = ["set terminal svg size 800,480 dynamic font 'sans,11'",
          f"set output '{os.path.join(out, name)}'",
          "set logscale xy", "set grid", "set key left top",
          "set xlabel 'message size (bytes)'", f"set ylabel '{ylabel}'"]
    plots, blocks = [], []
    for metric in metrics:
        for transport, label in series:
            pts = sorted(data.get((transport, metric), {}).items())
            pts = [(s, v) for s, (_, v) in pts if v > 0]
            if not pts:
                continue
            blocks.append("\n".join(f"{s} {v}" for s, v in pts) + "\ne\n")
            plots.append(f"'-' using 1:2 with linespoints title '{label} {metric}'")
    if not plots:
        return False
    script = "\n".join(gp) + "\nplot " + ", ".join(plots) + "\n" + "".join(blocks)
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    return True


TWOHOST = [("ours", "librma af_packet"), ("ours-afxdp", "librma af_xdp"),
           ("ucx-tcp", "UCX tcp"), ("libfabric-tcp", "libfabric tcp")]


def load_twohost(path):
    """run-twohost.sh's results.csv (one row per round) as medians in load()'s shape."""
    rounds = collections.defaultdict(list)
    with open(path) as f:
        for row in csv.DictReader(f):
            try:
                rounds[(row["impl"], row["metric"], int(row["size"]))].append(float(row["value"]))
            except (KeyError, ValueError):
                print(f"make_report: skipping malformed two-host row {row}", file=sys.stderr)
    data = collections.defaultdict(dict)
    for (impl, metric, size), v in rounds.items():
        data[(impl, metric)][size] = (impl, statistics.median(v))
    return data


def twohost_section(directory, note, out):
    """The two-host part: run-twohost.sh's TABLE.md (medians, ratios, load)
    and plots of the medians."""
    md = ["## Two hosts over a veth pair (`bench/twohost/run-twohost.sh`)", ""]
    table_path = os.path.join(directory, "TABLE.md") if directory else ""
    csv_path = os.path.join(directory, "results.csv") if directory else ""
    if note or not os.path.exists(table_path) or not os.path.exists(csv_path):
        md += [f"Not measured in this run: {note or 'bench/twohost/run-twohost.sh wrote no table'}.", ""]
        return md
    md += ["Two network namespaces joined by a veth pair stand for two hosts: our NIC on DPDK's "
           "`net_af_packet` and `net_af_xdp` against UCX (`UCX_TLS=tcp`) and libfabric's `tcp` "
           "provider across the same pair, interleaved round by round. Ratios above 1 mean librma "
           "did better. Load before each of these pairs: `twohost/load.csv`.", ""]
    with open(table_path) as f:
        md += [f.read(), ""]
    data = load_twohost(csv_path)
    if plot(data, out, "twohost_bandwidth.svg", ["write_bw", "read_bw"], "MiB/s", TWOHOST):
        md += ["![two hosts: bandwidth](twohost_bandwidth.svg)", ""]
    lat_sizes = {size for (_, metric), by_size in data.items() if metric == "write_lat" for size in by_size}
    # One size (the script measures 8 B) is a table, not a plot.
    if len(lat_sizes) > 1 and plot(data, out, "twohost_latency.svg", ["write_lat"], "usec", TWOHOST):
        md += ["![two hosts: 8 B WRITE latency](twohost_latency.svg)", ""]
    return md


def load_summary(path):
    """Markdown lines: the 1-minute load before each pair, summarised, and
    the pairs that started on a busy machine (load1 above 1.5 on 2 vCPUs)."""
    if not path or not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("load1")]
    if not rows:
        return []
    loads = sorted(float(r["load1"]) for r in rows)
    busy = [r for r in rows if float(r["load1"]) > 1.5]
    md = [f"Load average (1 min) just before each of the {len(rows)} pairs: min {loads[0]:.2f}, "
          f"median {loads[len(loads) // 2]:.2f}, max {loads[-1]:.2f} (every value in `load.csv`).", ""]
    if busy:
        md += [f"{len(busy)} pair(s) started with load above 1.5, so their figures are less reliable:", ""]
        md += [f"- {r['time']} load {r['load1']}: `{r['command']}`" for r in busy[:20]]
        md += [""]
    return md


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--loadavg", default="?")
    ap.add_argument("--command", default="bench/report/run-report.sh")
    ap.add_argument("--failures", type=int, default=0)
    ap.add_argument("--load-csv", default="", help="load.csv: the load average before each pair")
    ap.add_argument("--twohost-dir", default="", help="run-twohost.sh's output directory")
    ap.add_argument("--twohost-note", default="", help="why the two-host pairs did not run")
    a = ap.parse_args()
    data = load(a.csv)
    series = [(OURS, "librma softroce/memif"), ("ucx-shm", "UCX shm"), ("ucx-tcp", "UCX tcp")]
    vm_series = [("vm-softroce-memif", "guest: librma softroce/memif"), ("vm-rxe", "guest: perftest on rxe")]
    have_bw = plot(data, a.out, "bandwidth.svg", ["write_bw", "read_bw"], "MiB/s", series)
    have_lat = plot(data, a.out, "latency.svg", ["write_lat"], "usec", series)
    have_vm = plot(data, a.out, "guest.svg", ["write_bw"], "MiB/s", vm_series)
    md = ["# librma performance report", "",
          f"Generated by `{a.command}` (load average at the start: {a.loadavg}). "
          "Every pair ran side by side in this one run on the same machine; ratios are computed "
          "size by size, ours / peer for bandwidth and peer / ours for latency, so above 1 means "
          "librma did better. librma's figures come from its perftest-style tools over its "
          "software RoCE v2 NIC between two processes on a DPDK memif link (no RDMA hardware); "
          "UCX's from `ucx_perftest` (`ucp_put_bw`, `ucp_get`, `ucp_put_lat`) between two "
          "processes on loopback.", "",
          "Caveats: 2 shared vCPUs, so runs vary by 2x or more; UCX's put bandwidth over shared "
          "memory counts a put done when its copy is, with no acknowledgement from the target, "
          "while an RDMA WRITE completes when the target acknowledged it.", ""]
    md += load_summary(a.load_csv)
    if a.failures:
        md += [f"{a.failures} measurement(s) of this run failed (see the script's output); their cells say n/a.", ""]
    for metric in METRICS:
        t = table(data, metric, OURS, PEERS)
        if t:
            md += [t]
    if have_bw:
        md += ["![bandwidth](bandwidth.svg)", ""]
    if have_lat:
        md += ["![latency](latency.svg)", ""]
    vm_peer = [("vm-rxe", "")]
    vm_tables = [table(data, m, "vm-softroce-memif", vm_peer) for m in ("write_bw", "write_lat")]
    if any(vm_tables):
        md += ["## In the soft-RoCE QEMU guest (TCG, emulated CPUs)", "",
               "Both in the same guest: librma's NIC between two processes over memif, and Debian's "
               "perftest (`ib_write_bw`, `ib_write_lat`) on the kernel's rxe over the guest's loopback "
               "of eth0. Emulation makes both slow; only the ratio means something.", ""]
        md += [t for t in vm_tables if t]
        if have_vm:
            md += ["![guest bandwidth](guest.svg)", ""]
    md += twohost_section(a.twohost_dir, a.twohost_note, a.out)
    with open(os.path.join(a.out, "REPORT.md"), "w") as f:
        f.write("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
