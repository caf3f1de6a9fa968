#!/usr/bin/env python3
"""demo-report.py SERIES.csv REPORT.html - the demo's HTML report.

Three plots over time as inline SVG (no libraries, opens anywhere):
pending vs running pods, nodes by instance type, and cost per hour.
"""
import csv
import html
import sys


def polyline(points, w, h, xmax, ymax, colour):
    if not points:
        return ""
    pts = " ".join(f"{40 + x / xmax * (w - 60):.1f},{h - 25 - y / ymax * (h - 45):.1f}"
                   for x, y in points)
    return f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{pts}"/>'


def chart(title, series, ylabel):
    w, h = 640, 240
    xmax = max([x for s in series.values() for x, _ in s] + [1])
    ymax = max([y for s in series.values() for _, y in s] + [1]) * 1.1
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
               "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
    body = [f'<svg width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">',
            f'<line x1="40" y1="{h-25}" x2="{w-20}" y2="{h-25}" stroke="#444"/>',
            f'<line x1="40" y1="20" x2="40" y2="{h-25}" stroke="#444"/>',
            f'<text x="{w/2}" y="{h-5}" font-size="11" text-anchor="middle">seconds (0 .. {xmax:.0f})</text>',
            f'<text x="5" y="15" font-size="11">{html.escape(ylabel)} (max {ymax/1.1:.4g})</text>']
    legend = []
    for i, (name, pts) in enumerate(sorted(series.items())):
        c = colours[i % len(colours)]
        body.append(polyline(pts, w, h, xmax, ymax, c))
        legend.append(f'<span style="color:{c}">&#9632; {html.escape(name)}</span>')
    body.append("</svg>")
    return f"<h2>{html.escape(title)}</h2>{''.join(body)}<p>{' &nbsp; '.join(legend)}</p>"


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    t = [float(r["t"]) for r in rows]
    pods = {"pending": [(x, int(r["pending"])) for x, r in zip(t, rows)],
            "running": [(x, int(r["running"])) for x, r in zip(t, rows)]}
    types = {}
    for x, r in zip(t, rows):
        for kv in (r["types"] or "-").split(";"):
            if "=" in kv:
                name, n = kv.split("=")
                types.setdefault(name, [])
    for x, r in zip(t, rows):
        counts = dict(kv.split("=") for kv in (r["types"] or "").split(";") if "=" in kv)
        for name in types:
            types[name].append((x, int(counts.get(name, 0))))
    cost = {"USD per hour": [(x, float(r["cost"])) for x, r in zip(t, rows)]}
    last = rows[-1] if rows else {}
    summary = (f"<p>{len(rows)} samples; at the end: {last.get('running', 0)} pods running, "
               f"{last.get('pending', 0)} pending, {last.get('ready_nodes', 0)} nodes, "
               f"${float(last.get('cost', 0)):.4f} per hour.</p>")
    with open(sys.argv[2], "w") as f:
        f.write("<!doctype html><html><head><meta charset='utf-8'><title>tailor demo</title>"
                "<style>body{font-family:sans-serif;margin:2em}</style></head><body>"
                "<h1>tailor local demo</h1>" + summary +
                chart("Pods", pods, "pods") + chart("Nodes by instance type", types, "nodes") +
                chart("Cost", cost, "USD/hour") + "</body></html>\n")


if __name__ == "__main__":
    main()
