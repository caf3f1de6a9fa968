#!/usr/bin/python3
"""demo-decisions.py OUT_DIR T0 - every disruption decision of a demo run,
with its reason, as JSON lines on stdout (scripts/demo.sh writes them to
OUT_DIR/decisions.jsonl).

Two sources, both tailor's own output:
  * Kubernetes Events on Nodes and NodeClaims whose reason is a
    disruption's (DisruptionTerminating, DisruptionLaunching,
    DisruptionBlocked, Unconsolidatable, SpotInterrupted, ...): the ones
    the demo's watch saw (events-watch.jsonl, kept even when the API
    server later folds them) and the ones still listed at the end
    (events-final.json);
  * the disruptor's log lines about decisions (proposed, executed,
    aborted, failed; interruption handling), which carry the decision id,
    the method and the why, but not the node names.
Each record: {"t", "source", "node", "nodeclaim", "reason", "message"}
(t in seconds since T0, the demo's start), sorted by t.
"""
import datetime
import json
import os
import sys

REASONS = ("Disruption", "Unconsolidatable", "SpotInterrupted", "ScheduledChange",
           "InstanceStopping", "RebalanceRecommendation", "Drift", "Expir", "Interrupt")
LOG_MSGS = ("disruption decision", "interruption:", "drifted nodes")


def ts(s):
    if not s:
        return None
    s = s.replace("Z", "+00:00")
    try:
        return datetime.datetime.fromisoformat(s).timestamp()
    except ValueError:
        return None


def main():
    out, t0 = sys.argv[1], float(sys.argv[2])
    recs, seen = [], set()

    def event(ev, t):
        inv = ev.get("involvedObject") or {}
        reason = ev.get("reason") or ""
        if inv.get("kind") not in ("Node", "NodeClaim") or not reason.startswith(REASONS):
            return
        key = (ev["metadata"].get("uid"), ev.get("count"), ev.get("message"))
        if key in seen:
            return
        seen.add(key)
        if t is None:
            w = ts(ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("firstTimestamp"))
            t = round(w - t0, 2) if w else None
        recs.append({"t": t, "source": "event", "type": ev.get("type"),
                     "node": inv["name"] if inv.get("kind") == "Node" else None,
                     "nodeclaim": inv["name"] if inv.get("kind") == "NodeClaim" else None,
                     "reason": reason, "message": ev.get("message")})

    path = os.path.join(out, "events-watch.jsonl")
    if os.path.exists(path):
        for line in open(path):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("type") in ("ADDED", "MODIFIED"):
                event(r["object"], r["t"])
    path = os.path.join(out, "events-final.json")
    if os.path.exists(path):
        try:
            for ev in json.load(open(path)).get("items", []):
                event(ev, None)
        except ValueError:
            pass
    path = os.path.join(out, "disruptor.log")
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            msg = d.get("msg") or ""
            if not msg.startswith(LOG_MSGS):
                continue
            w = ts(d.get("ts"))
            recs.append({"t": round(w - t0, 2) if w else None, "source": "disruptor-log",
                         "node": d.get("node"), "nodeclaim": d.get("nodeclaim"),
                         "reason": d.get("method") or d.get("kind") or msg, "message": msg,
                         "decision": d.get("decision"), "why": d.get("why"),
                         "savings_per_hour": d.get("savings_per_hour"),
                         "instance": d.get("instance")})
    recs.sort(key=lambda r: (r["t"] is None, r["t"] or 0))
    for r in recs:
        print(json.dumps({k: v for k, v in r.items() if v is not None}))


if __name__ == "__main__":
    main()
