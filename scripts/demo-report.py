#!/usr/bin/env python3
"""demo-report.py OUT_DIR REPORT.html - the demo's report, one HTML file.

Reads what scripts/demo.sh left in OUT_DIR (every file optional):

  samples.jsonl           one sample a second or more: t, act, pods, claims,
                          nodes (total, by_type, by_capacity_type),
                          cost_per_hour
  acts.json               the acts: act, name, start, end, ok, launched,
                          removed, cost_before, cost_after, pdb_violations,
                          detail
  nodeclaims-watch.jsonl  NodeClaim watch events {t, type, object}
  nodes-watch.jsonl       Node watch events, same shape
  decisions.jsonl         disruption decisions {t, node, nodeclaim, reason,
                          message} (message: what `tailorctl explain` says)
  final.json              `kubectl get nodes,nodeclaims,pods -A -o json`
  prices.tsv              instance type <TAB> on-demand $/hour
  series.csv              the older demo's samples, used when samples.jsonl
                          is absent

and writes charts (matplotlib, SVG inline) of pods, nodes by instance type
and capacity type, and cost over the run with the acts marked; a timeline
of every NodeClaim and each disruption decision; and a table of the final
nodes.  A missing or empty file leaves its section with a note; a malformed
line is skipped with a warning on stderr.  Times are seconds since the
demo's start.  (The older form `demo-report.py SERIES.csv REPORT.html`
still works: OUT_DIR is then the CSV's folder.)
"""
import csv
import datetime
import html
import io
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

plt.rcParams["svg.fonttype"] = "none"  # text stays text: searchable, smaller
plt.rcParams["font.family"] = ["DejaVu Sans", "sans-serif"]

SPOT_FACTOR = 0.4  # the demo's cost model: spot at 40% of on-demand
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
CAPACITY_COLOURS = {"on-demand": "#4c72b0", "spot": "#dd8452", "reserved": "#55a868"}
PHASES = [  # (from milestone, to milestone, label, colour)
    ("created", "launched", "launching", "#c7c7c7"),
    ("launched", "registered", "registering", "#9ecae1"),
    ("registered", "initialized", "initializing", "#6baed6"),
    ("initialized", "drained", "serving", "#31a354"),
    ("drained", "terminated", "draining", "#fd8d3c"),
]
MILESTONES = ["created", "launched", "registered", "initialized", "drained", "terminated"]

warnings = []


def warn(msg):
    warnings.append(msg)
    print(f"demo-report: warning: {msg}", file=sys.stderr)


def safe(what, fn, *args, default=None):
    """fn(*args); an unexpected failure becomes a warning, never a crash."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - a report with a hole beats none
        warn(f"{what}: {type(e).__name__}: {e}")
        plt.close("all")
        return default


def esc(x):
    return html.escape("" if x is None else str(x))


# ---------------------------------------------------------------- inputs --

def read_jsonl(path):
    """Records of a JSON-lines file: None when the file is missing."""
    if not os.path.exists(path):
        return None
    out = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for i, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    warn(f"{os.path.basename(path)}:{i}: skipped, not JSON ({e})")
                    continue
                if not isinstance(rec, dict):
                    warn(f"{os.path.basename(path)}:{i}: skipped, not an object")
                    continue
                out.append(rec)
    except OSError as e:
        warn(f"{path}: {e}")
        return None
    return out


def read_json(path):
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        return json.loads(text) if text.strip() else None
    except (OSError, ValueError) as e:
        warn(f"{os.path.basename(path)}: skipped, unreadable ({e})")
        return None


def num(x, default=None):
    try:
        if x is None or isinstance(x, bool):
            return default
        v = float(x)
        return v if v == v else default  # NaN
    except (TypeError, ValueError):
        return default


def as_int(x):
    v = num(x)
    return int(v) if v is not None else 0


def count_map(x):
    """{"m5.large": 2, ...} with numeric values only."""
    if not isinstance(x, dict):
        return {}
    return {str(k): as_int(v) for k, v in x.items() if num(v) is not None}


def wall(ts):
    """Epoch seconds of an RFC 3339 time (or of a number), else None."""
    if ts is None or isinstance(ts, bool):
        return None
    if isinstance(ts, (int, float)):
        return float(ts)
    try:
        s = str(ts).strip()
        if s.endswith("Z"):
            s = s[:-1] + "+00:00"
        d = datetime.datetime.fromisoformat(s)
        if d.tzinfo is None:
            d = d.replace(tzinfo=datetime.timezone.utc)
        return d.timestamp()
    except ValueError:
        return None


def load_samples(out):
    recs = read_jsonl(os.path.join(out, "samples.jsonl"))
    samples = []
    for r in recs or []:
        t = num(r.get("t"))
        if t is None:
            warn("samples.jsonl: a sample without t skipped")
            continue
        pods = r.get("pods") if isinstance(r.get("pods"), dict) else {}
        nodes = r.get("nodes") if isinstance(r.get("nodes"), dict) else {}
        samples.append({
            "t": t, "act": as_int(r.get("act")),
            "pending": as_int(pods.get("pending")), "running": as_int(pods.get("running")),
            "total": as_int(pods.get("total")), "claims": as_int(r.get("claims")),
            "nodes": as_int(nodes.get("total")),
            "by_type": count_map(nodes.get("by_type")),
            "by_cap": count_map(nodes.get("by_capacity_type")),
            "cost": num(r.get("cost_per_hour"), 0.0),
            "wall": wall(r.get("wall", r.get("time", r.get("ts")))),
        })
    source = "samples.jsonl"
    if recs is None and os.path.exists(os.path.join(out, "series.csv")):
        source = "series.csv (the older demo's samples)"
        try:
            with open(os.path.join(out, "series.csv")) as f:
                for r in csv.DictReader(f):
                    t = num(r.get("t"))
                    if t is None:
                        continue
                    types = {}
                    for kv in (r.get("types") or "").split(";"):
                        if "=" in kv:
                            k, v = kv.split("=", 1)
                            types[k] = as_int(v)
                    pend, run = as_int(r.get("pending")), as_int(r.get("running"))
                    samples.append({"t": t, "act": 0, "pending": pend, "running": run,
                                    "total": pend + run, "claims": as_int(r.get("claims")),
                                    "nodes": as_int(r.get("ready_nodes")), "by_type": types,
                                    "by_cap": {}, "cost": num(r.get("cost"), 0.0), "wall": None})
        except (OSError, csv.Error) as e:
            warn(f"series.csv: {e}")
    elif recs is None:
        source = None
    samples.sort(key=lambda s: s["t"])
    return samples, source


def load_acts(out, samples):
    data = read_json(os.path.join(out, "acts.json"))
    if isinstance(data, dict):
        data = data.get("acts", [])
    acts = []
    for a in data if isinstance(data, list) else []:
        if not isinstance(a, dict) or num(a.get("act")) is None:
            warn("acts.json: an act without a number skipped")
            continue
        acts.append(dict(a, act=as_int(a.get("act")),
                         start=num(a.get("start")), end=num(a.get("end"))))
    # Acts the samples name but acts.json does not (or whose times it lacks).
    spans = {}
    for s in samples:
        if s["act"] > 0:
            lo, hi = spans.get(s["act"], (s["t"], s["t"]))
            spans[s["act"]] = (min(lo, s["t"]), max(hi, s["t"]))
    # With acts.json, a number it does not list is the time after the acts
    # (the summary and the stop), not an act.
    known = {a["act"] for a in acts}
    for n, (lo, hi) in spans.items():
        if n not in known and not acts:
            acts.append({"act": n, "name": "", "start": lo, "end": hi})
    for a in acts:
        if a["start"] is None and a["act"] in spans:
            a["start"] = spans[a["act"]][0]
        if a["end"] is None and a["act"] in spans:
            a["end"] = spans[a["act"]][1]
    acts.sort(key=lambda a: a["act"])
    return acts, data is not None


def load_prices(out):
    prices = {}
    path = os.path.join(out, "prices.tsv")
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 2 and num(parts[1]) is not None:
                    prices[parts[0]] = float(parts[1])
    return prices


def act_at(acts, t):
    if t is None:
        return ""
    for a in acts:
        if a.get("start") is not None and a["start"] <= t and (a.get("end") is None or t <= a["end"]):
            return a["act"]
    before = [a for a in acts if a.get("start") is not None and a["start"] <= t]
    return before[-1]["act"] if before else 0


# ------------------------------------------------------------- timeline --

def meta(obj):
    return obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}


def labels(obj):
    lab = meta(obj).get("labels")
    return lab if isinstance(lab, dict) else {}


def conditions(obj):
    st = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    cs = st.get("conditions") if isinstance(st.get("conditions"), list) else []
    return {c.get("type"): c for c in cs if isinstance(c, dict)}


def disrupted_taint(obj):
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    for t in spec.get("taints") or []:
        if isinstance(t, dict) and t.get("key") == "karpenter.sh/disrupted":
            return True
    return False


def latest_wall(obj):
    ws = [wall(meta(obj).get("creationTimestamp")), wall(meta(obj).get("deletionTimestamp"))]
    ws += [wall(c.get("lastTransitionTime")) for c in conditions(obj).values()]
    ws = [w for w in ws if w is not None]
    return max(ws) if ws else None


def watch_events(recs, name):
    events = []
    for r in recs or []:
        t, obj = num(r.get("t")), r.get("object")
        if t is None or not isinstance(obj, dict) or not meta(obj).get("name"):
            warn(f"{name}: an event without t or object.metadata.name skipped")
            continue
        events.append((t, str(r.get("type", "")), obj))
    events.sort(key=lambda e: e[0])
    return events


def start_wall(samples, events):
    """The demo's start as epoch seconds, to turn Kubernetes times into demo
    seconds: from a sample's wall time, else the latest bound the watch
    events give (an event at demo time t carries no time later than t)."""
    for s in samples:
        if s["wall"] is not None:
            return s["wall"] - s["t"]
    best = None
    for t, _, obj in events:
        w = latest_wall(obj)
        if w is not None and (best is None or w - t > best):
            best = w - t
    return best


def build_claims(claim_events, node_events, final_items, t0):
    """name -> {milestones, instance type, capacity type, node, ...}."""
    def demo(ts):
        w = wall(ts)
        return None if w is None or t0 is None else round(w - t0, 3)

    claims = {}

    def entry(name):
        return claims.setdefault(name, {"name": name, "first": None, "ms": {}, "type": "",
                                        "cap": "", "pool": "", "node": "", "provider": ""})

    def note(c, key, t):
        if t is not None and (c["ms"].get(key) is None or t < c["ms"][key]):
            c["ms"][key] = t

    def absorb(c, obj, t, first_event):
        lab = labels(obj)
        c["type"] = lab.get("node.kubernetes.io/instance-type") or c["type"]
        c["cap"] = lab.get("karpenter.sh/capacity-type") or c["cap"]
        c["pool"] = lab.get("karpenter.sh/nodepool") or c["pool"]
        st = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        c["node"] = st.get("nodeName") or c["node"]
        c["provider"] = st.get("providerID") or c["provider"]
        ct = demo(meta(obj).get("creationTimestamp"))
        if "created" not in c["ms"]:
            note(c, "created", ct if ct is not None else t)
        conds = conditions(obj)
        for key, ctype in (("launched", "Launched"), ("registered", "Registered"),
                           ("initialized", "Initialized")):
            cond = conds.get(ctype)
            if cond and str(cond.get("status")) == "True" and key not in c["ms"]:
                lt = demo(cond.get("lastTransitionTime"))
                # Seen turning True: the watch time; already True when first
                # seen (or without a watch time): its transition time.
                note(c, key, lt if (first_event or t is None) and lt is not None else t)
        if "drained" not in c["ms"]:
            dt = demo(meta(obj).get("deletionTimestamp"))
            if meta(obj).get("deletionTimestamp") or disrupted_taint(obj):
                note(c, "drained", dt if (first_event or t is None) and dt is not None else t)
            cond = conds.get("Drained")  # Unknown (Draining) while pods are evicted
            if cond and str(cond.get("status")) == "Unknown":
                lt = demo(cond.get("lastTransitionTime"))
                note(c, "drained", lt if (first_event or t is None) and lt is not None else t)

    for t, typ, obj in claim_events:
        c = entry(meta(obj)["name"])
        first = c["first"] is None
        if first:
            c["first"] = t
        absorb(c, obj, t, first)
        if typ == "DELETED":
            note(c, "terminated", t)
    for obj in final_items:
        if obj.get("kind") == "NodeClaim" and meta(obj).get("name"):
            c = entry(meta(obj)["name"])
            absorb(c, obj, None, c["first"] is None)
    # Nodes: the disruption taint or deletion on a claim's node drains it.
    by_node = {c["node"]: c for c in claims.values() if c["node"]}
    by_provider = {c["provider"]: c for c in claims.values() if c["provider"]}
    for t, typ, obj in node_events:
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        c = by_node.get(meta(obj)["name"]) or by_provider.get(spec.get("providerID", ""))
        if c is None:
            continue
        if disrupted_taint(obj) or meta(obj).get("deletionTimestamp") or typ == "DELETED":
            note(c, "drained", t)
    for c in claims.values():  # a drain never before the node served
        ms = c["ms"]
        if ms.get("drained") is not None and ms.get("terminated") is not None:
            ms["drained"] = min(ms["drained"], ms["terminated"])
    return sorted(claims.values(), key=lambda c: (c["ms"].get("created") or 0, c["name"]))


# ---------------------------------------------------------------- charts --

LEFT_IN, RIGHT_IN = 1.3, 1.9  # margins in inches: every chart's x axis lines up


def layout(fig, top_in=0.35, bottom_in=0.55, hspace=None):
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=LEFT_IN / w, right=1 - RIGHT_IN / w, top=1 - top_in / h,
                        bottom=bottom_in / h, hspace=hspace)


def svg_of(fig, salt):
    plt.rcParams["svg.hashsalt"] = f"tailor-{salt}"  # unique ids per chart
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.find("<svg"):]
    return text.replace("<svg ", f'<svg role="img" data-chart="{salt}" ', 1)


def mark_acts(ax, acts, top=True):
    """Acts as shaded bands with a boundary line and, on top, their number."""
    for i, a in enumerate(acts):
        if a.get("start") is None:
            continue
        end = a["end"] if a.get("end") is not None else ax.get_xlim()[1]
        if i % 2 == 0:
            ax.axvspan(a["start"], end, color="#000000", alpha=0.04, lw=0, zorder=0)
        ax.axvline(a["start"], color="#555555", ls="--", lw=0.8, zorder=1)
        if top:
            ax.text((a["start"] + end) / 2, 1.01, f"act {a['act']}", transform=ax.get_xaxis_transform(),
                    ha="center", va="bottom", fontsize=8, color="#333333", clip_on=False)
    ends = [a["end"] for a in acts if a.get("end") is not None]
    if ends:
        ax.axvline(max(ends), color="#555555", ls="--", lw=0.8, zorder=1)


def setup_axes(ax, ylabel, integer=True):
    ax.set_ylabel(ylabel)
    ax.grid(True, color="#dddddd", lw=0.6)
    ax.set_axisbelow(True)
    if integer:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)


def legend_right(ax):
    handles, names = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  fontsize=8, frameon=False, borderaxespad=0)


def step_stack(ax, t, layers, colours):
    if not layers:
        return
    base = [0] * len(t)
    for (name, ys), col in zip(layers, colours):
        top = [b + y for b, y in zip(base, ys)]
        ax.fill_between(t, base, top, step="post", color=col, alpha=0.85, lw=0, label=name)
        base = top


def charts(samples, acts):
    t = [s["t"] for s in samples]
    xmax = max(t + [a["end"] for a in acts if a.get("end") is not None] + [1])
    out = []

    fig, ax = plt.subplots(figsize=(10, 3.0))
    ax.step(t, [s["pending"] for s in samples], where="post", color="#d62728", label="pending")
    ax.step(t, [s["running"] for s in samples], where="post", color="#2ca02c", label="running")
    ax.step(t, [s["total"] for s in samples], where="post", color="#555555", lw=0.9, ls=":",
            label="total")
    ax.set_xlim(0, xmax)
    setup_axes(ax, "pods")
    ax.set_xlabel("time since the demo started (s)")
    mark_acts(ax, acts)
    legend_right(ax)
    layout(fig)
    out.append(("Pods", svg_of(fig, "pods")))

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 4.6), sharex=True)
    ax1.set_xlim(0, xmax)
    types = sorted({k for s in samples for k in s["by_type"]})
    step_stack(ax1, t, [(k, [s["by_type"].get(k, 0) for s in samples]) for k in types],
               [COLOURS[i % len(COLOURS)] for i in range(len(types))])
    ax1.step(t, [s["claims"] for s in samples], where="post", color="#000000", lw=1.0, ls="--",
             label="NodeClaims")
    setup_axes(ax1, "nodes")
    ax1.set_title("by instance type", fontsize=9, loc="left", pad=14)
    mark_acts(ax1, acts)
    legend_right(ax1)
    caps = sorted({k for s in samples for k in s["by_cap"]})
    step_stack(ax2, t, [(k, [s["by_cap"].get(k, 0) for s in samples]) for k in caps],
               [CAPACITY_COLOURS.get(k, COLOURS[(i + 4) % len(COLOURS)]) for i, k in enumerate(caps)])
    ax2.step(t, [s["nodes"] for s in samples], where="post", color="#000000", lw=1.0,
             label="all nodes")
    setup_axes(ax2, "nodes")
    ax2.set_title("by capacity type", fontsize=9, loc="left", pad=6)
    ax2.set_xlim(0, xmax)
    ax2.set_xlabel("time since the demo started (s)")
    mark_acts(ax2, acts, top=False)
    legend_right(ax2)
    layout(fig, top_in=0.5, hspace=0.35)
    out.append(("Nodes", svg_of(fig, "nodes")))

    fig, ax = plt.subplots(figsize=(10, 2.6))
    ax.step(t, [s["cost"] for s in samples], where="post", color="#9467bd", label="cost of the nodes")
    ax.set_xlim(0, xmax)
    setup_axes(ax, "$ / hour", integer=False)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"${v:,.2f}"))
    ax.set_xlabel("time since the demo started (s)")
    mark_acts(ax, acts)
    legend_right(ax)
    layout(fig)
    out.append(("Cost", svg_of(fig, "cost")))
    return out


def gantt(claims, decisions, acts, tend):
    rows = len(claims)
    fig, ax = plt.subplots(figsize=(10, max(1.8, 0.36 * rows + 0.9)))
    for i, c in enumerate(claims):
        ms = c["ms"]
        for a, b, _, col in PHASES:
            if ms.get(a) is None:
                continue
            nxt = [ms.get(k) for k in MILESTONES[MILESTONES.index(b):] if ms.get(k) is not None]
            stop = nxt[0] if nxt else tend
            if stop > ms[a]:
                ax.broken_barh([(ms[a], stop - ms[a])], (i - 0.35, 0.7), facecolors=col)
        if ms.get("terminated") is not None:
            ax.plot([ms["terminated"]], [i], marker="|", color="#000000", ms=9)
    index = {c["name"]: i for i, c in enumerate(claims)}
    node_index = {c["node"]: i for i, c in enumerate(claims) if c["node"]}
    for d in decisions:
        i = index.get(d["nodeclaim"], node_index.get(d["node"]))
        if i is not None and d["t"] is not None:
            ax.plot([d["t"]], [i], marker="v", color="#d62728", ms=7, ls="none",
                    label="disruption decision")
    for _, _, name, col in PHASES:
        ax.broken_barh([(0, 0)], (0, 0), facecolors=col, label=name)
    ax.set_yticks(range(rows))
    ax.set_yticklabels([f"{c['name']}\n{c['type'] or '?'} {c['cap'] or '?'}" for c in claims],
                       fontsize=7, linespacing=1.0)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_xlim(0, tend)
    ax.set_xlabel("time since the demo started (s)")
    ax.grid(True, axis="x", color="#dddddd", lw=0.6)
    ax.set_axisbelow(True)
    mark_acts(ax, acts)
    handles, names = ax.get_legend_handles_labels()
    seen = {}
    for h, n in zip(handles, names):
        seen.setdefault(n, h)
    ax.legend(seen.values(), seen.keys(), loc="upper left", bbox_to_anchor=(1.01, 1.0),
              fontsize=8, frameon=False, borderaxespad=0)
    layout(fig)
    return svg_of(fig, "nodeclaims")


# ---------------------------------------------------------------- tables --

def fmt_t(t):
    return "" if t is None else f"{t:.1f}"


def table(tid, head, rows, numeric=()):
    h = "".join(f"<th>{esc(x)}</th>" for x in head)
    body = []
    for r in rows:
        body.append("<tr>" + "".join(
            f'<td class="num">{esc(x)}</td>' if i in numeric else f"<td>{x if isinstance(x, Markup) else esc(x)}</td>"
            for i, x in enumerate(r)) + "</tr>")
    return (f'<table id="{tid}" data-testid="{tid}" class="sortable"><thead><tr>{h}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


class Markup(str):
    pass


def note(text):
    return f'<p class="note">{esc(text)}</p>'


def final_nodes(items, prices):
    pods = {}
    for p in items:
        if p.get("kind") != "Pod":
            continue
        phase = (p.get("status") or {}).get("phase", "")
        node = (p.get("spec") or {}).get("nodeName")
        if node and phase not in ("Succeeded", "Failed"):
            pods[node] = pods.get(node, 0) + 1
    rows, total = [], 0.0
    for n in sorted((i for i in items if i.get("kind") == "Node"), key=lambda i: meta(i).get("name", "")):
        lab = labels(n)
        it = lab.get("node.kubernetes.io/instance-type", "")
        cap = lab.get("karpenter.sh/capacity-type", "")
        price = prices.get(it)
        if price is not None and cap == "spot":
            price *= SPOT_FACTOR
        total += price or 0.0
        rows.append([meta(n).get("name", ""), it, lab.get("topology.kubernetes.io/zone", ""), cap,
                     lab.get("karpenter.sh/nodepool", ""), pods.get(meta(n).get("name"), 0),
                     "" if price is None else f"${price:.4f}"])
    return rows, total


# ------------------------------------------------------------------ page --

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5em 2em;color:#222;max-width:1200px}
h1{margin-bottom:.2em} h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.note{color:#777;font-style:italic} .warn{color:#a15c00}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4;cursor:pointer;user-select:none} td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.fail td{background:#fde8e8} .ok{color:#1a7f37;font-weight:600} .bad{color:#c0392b;font-weight:600}
.chart svg{width:100%;height:auto;display:block}
.summary span{display:inline-block;margin-right:1.5em}
"""

# Sortable tables: click a header to sort its column (numbers numerically).
SCRIPT = """
(function () {
  function key(td) {
    var s = td ? td.textContent.trim() : "";
    var n = parseFloat(s.replace(/^\\$/, ""));
    return isNaN(n) ? s.toLowerCase() : n;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th, col) {
      th.addEventListener("click", function () {
        var body = table.tBodies[0], asc = th.dataset.sort !== "asc";
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[col]), y = key(b.cells[col]);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
        table.querySelectorAll("th").forEach(function (h) { delete h.dataset.sort; });
        th.dataset.sort = asc ? "asc" : "desc";
      });
    });
  });
  var final = document.getElementById("final-nodes");
  document.documentElement.dataset.finalNodes = final ? final.tBodies[0].rows.length : 0;
  document.documentElement.dataset.charts = document.querySelectorAll(".chart svg").length;
})();
"""


def main(argv):
    if len(argv) != 3:
        print("usage: demo-report.py OUT_DIR REPORT.html", file=sys.stderr)
        return 2
    out, report = argv[1], argv[2]
    if os.path.isfile(out):  # the older form: SERIES.csv REPORT.html
        out = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(out):
        warn(f"{out}: no such folder; the report is empty")

    samples, sample_source = safe("samples", load_samples, out, default=([], None))
    acts, have_acts = safe("acts.json", load_acts, out, samples, default=([], False))
    claim_recs = read_jsonl(os.path.join(out, "nodeclaims-watch.jsonl"))
    node_recs = read_jsonl(os.path.join(out, "nodes-watch.jsonl"))
    claim_events = watch_events(claim_recs, "nodeclaims-watch.jsonl")
    node_events = watch_events(node_recs, "nodes-watch.jsonl")
    final = read_json(os.path.join(out, "final.json"))
    items = final.get("items", []) if isinstance(final, dict) else []
    items = [i for i in items if isinstance(i, dict)]
    prices = safe("prices.tsv", load_prices, out, default={})

    t0 = start_wall(samples, claim_events + node_events)
    claims = safe("the NodeClaims' timeline", build_claims, claim_events, node_events, items, t0,
                  default=[])

    decisions = []
    dec_recs = read_jsonl(os.path.join(out, "decisions.jsonl"))
    for r in dec_recs or []:
        decisions.append({"t": num(r.get("t")), "node": str(r.get("node") or ""),
                          "nodeclaim": str(r.get("nodeclaim") or ""),
                          "reason": str(r.get("reason") or ""), "message": str(r.get("message") or "")})
    decisions.sort(key=lambda d: (d["t"] is None, d["t"] or 0))

    tend = max([s["t"] for s in samples] + [e[0] for e in claim_events + node_events]
               + [a["end"] for a in acts if a.get("end") is not None]
               + [d["t"] for d in decisions if d["t"] is not None] + [1.0])

    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>"
             "<meta name='viewport' content='width=device-width,initial-scale=1'>"
             f"<title>tailor demo report</title><style>{CSS}</style></head><body>",
             "<h1>tailor demo report</h1>"]

    # --- summary and acts
    if samples:
        last = samples[-1]
        parts.append(
            '<p class="summary">'
            f"<span>run: <b>{last['t']:.0f} s</b>, {len(samples)} samples</span>"
            f"<span>at the end: <b>{last['running']}</b> of {last['total']} pods running, "
            f"{last['pending']} pending</span>"
            f"<span><b>{last['nodes']}</b> nodes, {last['claims']} NodeClaims</span>"
            f"<span><b>${last['cost']:.4f}</b> per hour</span></p>")
    parts.append("<h2>Acts</h2>")
    if acts and have_acts:
        rows = []
        for a in acts:
            ok = a.get("ok")
            okm = Markup('<span class="ok">ok</span>' if ok is True else
                         '<span class="bad">FAILED</span>' if ok is False else "")
            cb, ca = num(a.get("cost_before")), num(a.get("cost_after"))
            rows.append([a["act"], a.get("name", ""), okm, fmt_t(a.get("start")), fmt_t(a.get("end")),
                         a.get("launched", ""), a.get("removed", ""),
                         "" if cb is None else f"${cb:.4f}", "" if ca is None else f"${ca:.4f}",
                         a.get("pdb_violations", ""), a.get("detail", "")])
        parts.append(table("acts", ["act", "name", "result", "start (s)", "end (s)", "launched",
                                    "removed", "cost before ($/h)", "cost after ($/h)",
                                    "PDB violations", "detail"], rows, numeric=(0, 3, 4, 5, 6, 7, 8, 9)))
    else:
        parts.append(note("No acts.json in the demo's output: no per-act summary."))

    # --- charts
    parts.append("<h2>Over the run</h2>")
    if samples:
        if sample_source != "samples.jsonl":
            parts.append(note(f"Samples from {sample_source}."))
        for title, svg in safe("charts", charts, samples, acts, default=[]):
            parts.append(f'<h3>{esc(title)}</h3><div class="chart" id="chart-{title.lower()}">{svg}</div>')
    else:
        parts.append(note("No samples (samples.jsonl missing or empty): no charts."))

    # --- NodeClaims
    parts.append("<h2>NodeClaims</h2>")
    if claims:
        if claim_recs is None:
            parts.append(note("No nodeclaims-watch.jsonl: the NodeClaims of final.json only, "
                              "their times from their own timestamps."))
        svg = safe("the NodeClaims' chart", gantt, claims, decisions, acts, tend, default="")
        parts.append(f'<div class="chart" id="chart-nodeclaims">{svg}</div>' if svg else
                     note("The NodeClaims' chart could not be drawn (see the warnings)."))
        rows = [[c["name"], c["type"], c["cap"], c["pool"], c["node"]] +
                [fmt_t(c["ms"].get(k)) for k in MILESTONES] for c in claims]
        parts.append(table("nodeclaims", ["NodeClaim", "instance type", "capacity", "NodePool", "node"] +
                           [f"{k} (s)" for k in MILESTONES], rows, numeric=tuple(range(5, 11))))
        if t0 is None:
            parts.append(note("No wall-clock start known: milestones are the watch events' times."))
    else:
        parts.append(note("No NodeClaims (nodeclaims-watch.jsonl and final.json have none)."))

    # --- decisions
    parts.append("<h2>Disruption decisions</h2>")
    if decisions:
        rows = [[fmt_t(d["t"]), act_at(acts, d["t"]), d["node"], d["nodeclaim"], d["reason"],
                 d["message"]] for d in decisions]
        parts.append(table("decisions", ["time (s)", "act", "node", "NodeClaim", "reason",
                                         "decision (as tailorctl explain)"], rows, numeric=(0, 1)))
    else:
        parts.append(note("No disruption decisions were recorded (decisions.jsonl "
                          + ("empty)." if dec_recs is not None else "missing).")))

    # --- final nodes
    parts.append("<h2>Final nodes</h2>")
    rows, total = safe("final.json", final_nodes, items, prices, default=([], 0.0))
    if final is None:
        parts.append(note("No final.json: the final nodes are unknown."))
    parts.append(table("final-nodes", ["node", "instance type", "zone", "capacity type", "NodePool",
                                       "pods", "price ($/h)"], rows, numeric=(5, 6)))
    if final is not None:
        parts.append(f'<p>{len(rows)} nodes'
                     + (f", ${total:.4f} per hour (on-demand list prices; spot at "
                        f"{SPOT_FACTOR:.0%} of them)" if prices else "; no prices.tsv, no prices")
                     + ".</p>")
    if warnings:
        parts.append("<h2>Warnings</h2><ul class='warn'>"
                     + "".join(f"<li>{esc(w)}</li>" for w in warnings[:50])
                     + (f"<li>and {len(warnings) - 50} more</li>" if len(warnings) > 50 else "")
                     + "</ul>")
    parts.append(f"<script>{SCRIPT}</script></body></html>\n")
    tmp = report + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join(parts))
    os.replace(tmp, report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
