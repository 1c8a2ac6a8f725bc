#!/usr/bin/env python3
"""bench_report.py - turns the outputs of the benchmark scripts into the figures of
BENCHMARKS.md and its SVG charts (written by hand: no plotting library).

Usage: bench_report.py RESULTS_DIR BENCHMARKS_MD CHART_DIR

RESULTS_DIR holds what tests/bench/run_all.sh saved: load_table.N.txt, miss.N.txt (the same
with an 8 MB cache: pure misses), commit.N.txt, ingest.N.txt and ingest2.N.txt (`--threads 2`)
(N = run) and clients.C.txt (load_table_bench.sh at C connections). The text
between the "figures:begin" and "figures:end" markers of BENCHMARKS_MD is replaced; every
figure is a ratio to a ceiling measured in the same run, given as min-max over the runs,
with the load average of each run beside it."""
import glob
import html
import os
import re
import sys


def num(s):
    return float(s.replace(",", ""))


def runs(results, name):
    out = []
    for path in sorted(glob.glob(os.path.join(results, f"{name}.*.txt"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            out.append(f.read())
    return out


def load_avg(text):
    m = re.findall(r"load average(?: now)?: ([\d.]+) ([\d.]+) ([\d.]+)", text)
    return m[-1][0] if m else "?"


def row(text, label):
    """Numbers after a row label in a figures table."""
    for line in text.splitlines():
        if line.startswith(label):
            return [num(x) for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?", line[len(label):])]
    return None


def ratio(text, prefix):
    m = re.search(re.escape(prefix) + r"[^\d]*([\d.]+)", text)
    return float(m.group(1)) if m else None


def span(vals, fmt="{:.2f}"):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "n/a"
    lo, hi = min(vals), max(vals)
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}-{fmt.format(hi)}"


# --- SVG ---------------------------------------------------------------------------

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
W, H, L, R, T, B = 640, 360, 70, 170, 40, 50


def svg_open(title):
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{html.escape(title)}</text>',
    ]


def axes(out, ymax, ylabel, ticks=5):
    pw, ph = W - L - R, H - T - B
    out.append(f'<line x1="{L}" y1="{T + ph}" x2="{L + pw}" y2="{T + ph}" stroke="black"/>')
    out.append(f'<line x1="{L}" y1="{T}" x2="{L}" y2="{T + ph}" stroke="black"/>')
    for i in range(ticks + 1):
        v = ymax * i / ticks
        y = T + ph - ph * i / ticks
        out.append(f'<line x1="{L - 4}" y1="{y:.1f}" x2="{L + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{v:,.0f}</text>')
    out.append(
        f'<text x="16" y="{T + ph / 2}" transform="rotate(-90 16 {T + ph / 2})" text-anchor="middle">{html.escape(ylabel)}</text>'
    )


def legend(out, names):
    for i, n in enumerate(names):
        y = T + 10 + 18 * i
        out.append(f'<rect x="{W - R + 12}" y="{y - 9}" width="12" height="12" fill="{COLORS[i % len(COLORS)]}"/>')
        out.append(f'<text x="{W - R + 30}" y="{y + 1}">{html.escape(n)}</text>')


def nice_max(v):
    if v <= 0:
        return 1
    p = 10 ** len(str(int(v))) / 10
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * p >= v:
            return m * p
    return v


def line_chart(path, title, xs, series, xlabel, ylabel):
    out = svg_open(title)
    ymax = nice_max(max((v for _, vals in series for v in vals if v is not None), default=1))
    axes(out, ymax, ylabel)
    pw, ph = W - L - R, H - T - B
    xpos = {x: L + pw * (i + 0.5) / len(xs) for i, x in enumerate(xs)}
    for x in xs:
        out.append(f'<text x="{xpos[x]:.1f}" y="{T + ph + 16}" text-anchor="middle">{x}</text>')
    out.append(f'<text x="{L + pw / 2}" y="{H - 10}" text-anchor="middle">{html.escape(xlabel)}</text>')
    for i, (name, vals) in enumerate(series):
        pts = [(xpos[x], T + ph - ph * v / ymax) for x, v in zip(xs, vals) if v is not None]
        c = COLORS[i % len(COLORS)]
        out.append(
            f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in pts)}"/>'
        )
        for a, b in pts:
            out.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{c}"/>')
    legend(out, [n for n, _ in series])
    out.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def bar_chart(path, title, groups, names, values, ylabel):
    """values[g][s]: bar of series s in group g."""
    out = svg_open(title)
    ymax = nice_max(max((v for g in values for v in g if v is not None), default=1))
    axes(out, ymax, ylabel)
    pw, ph = W - L - R, H - T - B
    gw = pw / max(1, len(groups))
    bw = gw * 0.8 / max(1, len(names))
    for gi, g in enumerate(groups):
        x0 = L + gw * gi + gw * 0.1
        out.append(f'<text x="{L + gw * (gi + 0.5):.1f}" y="{T + ph + 16}" text-anchor="middle">{html.escape(g)}</text>')
        for si, v in enumerate(values[gi]):
            if v is None:
                continue
            h = ph * v / ymax
            out.append(
                f'<rect x="{x0 + bw * si:.1f}" y="{T + ph - h:.1f}" width="{bw - 2:.1f}" height="{h:.1f}" fill="{COLORS[si % len(COLORS)]}"/>'
            )
            out.append(
                f'<text x="{x0 + bw * si + bw / 2 - 1:.1f}" y="{T + ph - h - 3:.1f}" text-anchor="middle" font-size="10">{v:,.0f}</text>'
            )
    legend(out, names)
    out.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


# --- the figures ---------------------------------------------------------------------


def main():
    results, md, charts = sys.argv[1:4]
    os.makedirs(charts, exist_ok=True)
    rel = os.path.relpath(charts, os.path.dirname(os.path.abspath(md)))
    lines = []

    lt = runs(results, "load_table")
    miss = runs(results, "miss")
    if lt:
        lines += [
            "### loadTable (`load_table_bench.sh`, wrk -t2 -c64, ~20 KB body)",
            "",
            "| figure | ratio to `mhd_hello` (ceiling) | Floe req/s | ceiling req/s | Floe p99 ms | ceiling p99 ms | load avg (1 min) |",
            "|---|---|---|---|---|---|---|",
        ]
        for label, key, texts in (
            ("one table (cache hits)", "floe loadTable, 1 table", lt),
            ("one view (loadView, cache hits)", "floe loadView, 1 view", lt),
            ("cycling 200 tables", "floe loadTable, cycling 200 tables", lt),
            ("cycling 4,096 tables (they fit the default cache)", "floe loadTable, cycling 4096 tables", lt),
            ("cycling 4,096 tables, pure misses (`--table-cache-bytes 8000000`)",
             "floe loadTable, cycling 4096 tables", miss),
        ):
            ceil = [row(t, "mhd_hello GET /meta (ceiling)") for t in texts]
            loads = ", ".join(load_avg(t) for t in texts)
            f = [row(t, key) for t in texts]
            if not any(f):
                continue
            rat = [a[0] / c[0] if a and c and c[0] else None for a, c in zip(f, ceil)]
            lines.append(
                f"| {label} | **{span(rat)}** | {span([a[0] for a in f if a], '{:,.0f}')} | "
                f"{span([c[0] for c in ceil if c], '{:,.0f}')} | {span([a[2] for a in f if a], '{:.1f}')} | "
                f"{span([c[2] for c in ceil if c], '{:.1f}')} | {loads} |"
            )
        lines.append("")

    cl = {}
    for path in glob.glob(os.path.join(results, "clients.*.txt")):
        c = int(re.search(r"clients\.(\d+)\.txt$", path).group(1))
        with open(path, encoding="utf-8", errors="replace") as f:
            cl[c] = f.read()
    if cl:
        xs = sorted(cl)
        series = [
            ("mhd_hello (ceiling)", [(row(cl[x], "mhd_hello GET /meta (ceiling)") or [None])[0] for x in xs]),
            ("Floe, 1 table", [(row(cl[x], "floe loadTable, 1 table") or [None])[0] for x in xs]),
            ("Floe, 200 tables", [(row(cl[x], "floe loadTable, cycling 200 tables") or [None])[0] for x in xs]),
        ]
        line_chart(os.path.join(charts, "loadtable_clients.svg"), "loadTable throughput vs connections (one run each)",
                   xs, series, "wrk connections", "requests/s")
        lines += [f"![loadTable throughput against connections]({rel}/loadtable_clients.svg)", ""]

    cm = runs(results, "commit")
    if cm:
        lines += [
            "### Commits (`commit_bench.sh`, 16 PyIceberg-style writers, durable)",
            "",
            "| figure | ratio | Floe commits/s | ceiling | Floe p50 / p99 ms | file create µs | load avg (1 min) |",
            "|---|---|---|---|---|---|---|",
        ]
        loads = ", ".join(load_avg(t) for t in cm)
        # create_probe's figure, printed before the runs: high when many files were deleted
        # in the minutes before (see tests/bench/create_probe.c).
        creates = ", ".join(
            (re.findall(r"^filesystem: \d+ creates, ([\d.]+) us each", t, re.M) or ["?"])[0] for t in cm
        )
        def commit_row(label, ratio_prefix, floe_label, ceiling_label, col, unit):
            f = [row(t, floe_label) for t in cm]
            ceil = [row(t, ceiling_label) for t in cm]
            return (
                f"| {label} | **{span([ratio(t, ratio_prefix) for t in cm], '{:.3f}')}** | "
                f"{span([m[0] for m in f if m], '{:,.0f}')} | {span([x[col] for x in ceil if x], '{:,.0f}')} {unit} | "
                f"{span([m[3] for m in f if m], '{:.0f}')} / {span([m[4] for m in f if m], '{:.0f}')} | {creates} | {loads} |"
            )

        lines.append(commit_row("1,000 tables ÷ `txn.sql`", "ratio floe/txn.sql", "floe, 1000 table(s), 16 clients",
                                "txn.sql (read + CAS + idem row)", 0, "tps"))
        lines.append(commit_row("one hot table ÷ `hot.sql` won CAS/s", "ratio floe-hot/hot.sql (won CAS)",
                                "floe, 1 table(s), 16 clients", "hot.sql (read + CAS, one row)", 1, "won/s"))
        for t in cm[-1:]:
            for m in re.findall(r"^mean per commit stage, .*$", t, re.M):
                lines += ["", f"Last run, {m.strip()}"]
        lines.append("")
        last = cm[-1]
        m1, h1 = row(last, "floe, 1000 table(s), 16 clients"), row(last, "floe, 1 table(s), 16 clients")
        if m1 and h1:
            bar_chart(os.path.join(charts, "commit_latency.svg"), "Commit latency, first attempt to acknowledgement (last run)",
                      ["1,000 tables", "one hot table"], ["p50 ms", "p99 ms"], [[m1[3], m1[4]], [h1[3], h1[4]]], "milliseconds")
            lines += [f"![commit latency percentiles]({rel}/commit_latency.svg)", ""]

    ing = runs(results, "ingest")
    ing2 = runs(results, "ingest2")
    if ing:
        lines += [
            "### Ingest (`ingest_bench.sh`, CSV → zstd Parquet; one thread each, and `--threads 2` against DuckDB's two)",
            "",
            "| figure | ratio (wall) | CPU-time ratio | Floe rows/s | DuckDB rows/s | Floe peak RSS | cold start 1,000 rows (in process; through the catalog) | load avg (1 min) |",
            "|---|---|---|---|---|---|---|---|",
        ]

        def ingest_row(texts, threads):
            fl = [row(t, f"floe ingest (--threads {threads}, committed)") for t in texts]
            dk = []
            for t in texts:
                m = re.search(rf"^DuckDB \S+ COPY, threads={threads}(.*)$", t, re.M)
                dk.append([num(x) for x in re.findall(r"(?<![\w.])\d+(?:\.\d+)?", m.group(1))] if m else None)
            cold = [re.search(r"median ([\d.]+) ms", t) for t in texts]
            cold_rest = [re.search(r"^through a running catalog .*?median ([\d.]+) ms", t, re.M) for t in texts]
            rest = [float(c.group(1)) for c in cold_rest if c]
            loads = ", ".join(load_avg(t) for t in texts)
            lines.append(
                f"| rows/s ÷ DuckDB, {threads} thread{'s' if threads > 1 else ''} each | "
                f"**{span([ratio(t, 'ratio floe/DuckDB: rows/s') for t in texts])}** | "
                f"{span([ratio(t, 'CPU time') for t in texts])} | "
                f"{span([f[1] for f in fl if f], '{:,.0f}')} | {span([d[1] for d in dk if d], '{:,.0f}')} | "
                f"{span([f[3] for f in fl if f], '{:.0f}')} MB | {span([float(c.group(1)) for c in cold if c], '{:.0f}')} ms; {span(rest, '{:.0f}') + ' ms' if rest else '—'} | {loads} |"
            )
            return fl, dk

        fl, dk = ingest_row(ing, 1)
        fl2, dk2 = ingest_row(ing2, 2) if ing2 else ([None], [None])
        lines.append("")
        if fl[-1] and dk[-1]:
            groups, values = ["one thread"], [[fl[-1][1], dk[-1][1]]]
            if fl2[-1] and dk2[-1]:
                groups.append("two threads")
                values.append([fl2[-1][1], dk2[-1][1]])
            bar_chart(os.path.join(charts, "ingest.svg"), "Ingest rows/s, CSV → Parquet zstd (last run)", groups,
                      ["floe ingest", "DuckDB COPY"], values, "rows/s")
            lines += [f"![ingest rows/s against DuckDB]({rel}/ingest.svg)", ""]

    with open(md, encoding="utf-8") as f:
        doc = f.read()
    begin, end = "<!-- figures:begin -->", "<!-- figures:end -->"
    if begin not in doc or end not in doc:
        sys.exit(f"{md}: no {begin} ... {end} markers")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(md, "w", encoding="utf-8") as f:
        f.write(head + begin + "\n" + "\n".join(lines) + "\n" + end + tail)


if __name__ == "__main__":
    main()
