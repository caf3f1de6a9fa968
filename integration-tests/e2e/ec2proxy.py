#!/usr/bin/python3
"""ec2proxy.py - a fault-injecting proxy in front of moto, for the e2e tests.

    ec2proxy.py LISTEN_PORT MOTO_URL CREDENTIALS_FILE

Every request is forwarded to moto unchanged, except:

  * CreateFleet whose overrides name an instance type listed as out of
    capacity: those overrides are taken out of the request (which is then
    signed again with the key from CREDENTIALS_FILE, as the launcher
    signed it), and moto's answer gets one errorSet item per removed
    override -- InsufficientInstanceCapacity, with the override's type,
    subnet and zone, as EC2 reports an instant fleet's failed overrides.
    When no override is left, moto is not called: the answer is a 200
    CreateFleetResponse with an empty fleetInstanceSet and the errors,
    exactly what EC2 answers when no offering has capacity;
  * with fleet_delay_ms set, CreateFleet is held that long before it is
    forwarded (a slow EC2, to stop a launcher in the middle of a burst);
  * in "expired" mode every EC2 request is answered 400 ExpiredToken
    ("The security token included in the request is expired"), as EC2
    answers for expired session credentials;
  * with "chaos" set, seeded random failures of EC2 calls (see CHAOS below).

Control and counters on the same port, under /__proxy/ (never forwarded):
    POST /__proxy/config  {"ice": ["c5.large", ...], "expired": false,
                           "fleet_delay_ms": 0}
    GET  /__proxy/stats   {"actions": {"CreateFleet": 3, ...},
                           "ice_injected": 2, "fleet_requests": [...]}
    POST /__proxy/reset   counters to zero
Loopback only; one thread per connection.

CHAOS: random failures, as a flaky network or an overloaded EC2 gives them.
    POST /__proxy/config {"chaos": {"rate": 0.15, "seed": 1, "lost": 0.5,
                                    "actions": {"CreateFleet": 0.3, "Describe*": 0.1}}}
    POST /__proxy/config {"chaos": {..., "script": {"CreateFleet": ["ok", "lost-reset"]}}}
    POST /__proxy/config {"chaos": null}                      (off)
Each EC2 call (SigV4 credential scope .../ec2/...; IAM, SSM, EKS, pricing
are never touched) fails with the probability of the first "actions"
pattern (fnmatch) that matches its Action, else "rate".  A failure is, by
a draw from the same seeded generator:
  * with probability 1 - "lost": an error BEFORE EC2 acts -- moto is not
    called; the answer is HTTP 500 InternalError, HTTP 503 Unavailable
    (EC2's <Response><Errors><Error> shape) or a connection reset;
  * with probability "lost": a reply LOST AFTER EC2 acted -- the request
    is forwarded to moto (which does what it asks: launches, terminates,
    tags), then its answer is thrown away and the caller gets a
    connection reset or a 500 InternalError instead.
"script" fixes the fates of an action's next calls, in order, before the
draws take over: "ok", "error500", "error503", "reset", "timeout" (before
EC2 acts), "lost-reset", "lost-error500", "lost-timeout" (after) -- so a
test can count on a lost CreateFleet reply however the draws fall.  A
timeout holds the connection "hold_ms" (default 15000, past the caller's
timeout) and then resets it; the draws pick one only when "kinds" (the
fates a draw picks from, default every one but the timeouts) names it.
moto ignores CreateFleet's ClientToken, and the proxy does not make up
for it: a retried CreateFleet whose first reply was lost launches a
second instance, as it would on EC2 once the token's idempotency window
has passed -- the launcher's GC is what must collect it.
Counters in /__proxy/stats under "chaos": {"calls", "failed", "lost",
"by_action": {Action: {"calls", "failed", "lost"}}, "kinds": {kind: n}}.
"""
import fnmatch
import json
import random
import socket
import struct
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import botocore.auth
import botocore.awsrequest
import botocore.credentials

NS = "http://ec2.amazonaws.com/doc/2016-11-15/"
PREFIX = "LaunchTemplateConfigs.1.Overrides."

state = {"ice": set(), "expired": False, "fleet_delay_ms": 0}
stats = {"actions": {}, "ice_injected": 0, "fleet_requests": []}
lock = threading.Lock()


def read_key(path):
    ak = sk = None
    with open(path) as f:
        for line in f:
            k, _, v = line.partition("=")
            k, v = k.strip(), v.strip()
            if k == "aws_access_key_id":
                ak = v
            elif k == "aws_secret_access_key":
                sk = v
    return botocore.credentials.Credentials(ak, sk)


def overrides(params):
    """{index: {field: value}} of the CreateFleet overrides."""
    out = {}
    for k, v in params:
        if k.startswith(PREFIX):
            idx, _, field = k[len(PREFIX):].partition(".")
            out.setdefault(int(idx), {})[field] = v
    return out


def error_items(removed, spot):
    items = []
    for o in removed:
        items.append(
            "<item><launchTemplateAndOverrides><overrides>"
            "<instanceType>%s</instanceType><subnetId>%s</subnetId>"
            "<availabilityZone>%s</availabilityZone>%s</overrides>"
            "</launchTemplateAndOverrides><lifecycle>%s</lifecycle>"
            "<errorCode>InsufficientInstanceCapacity</errorCode>"
            "<errorMessage>We currently do not have sufficient %s capacity in the "
            "Availability Zone you requested (%s).</errorMessage></item>"
            % (o.get("InstanceType", ""), o.get("SubnetId", ""), o.get("AvailabilityZone", ""),
               "<priority>%s</priority>" % o["Priority"] if "Priority" in o else "",
               "spot" if spot else "on-demand", o.get("InstanceType", ""),
               o.get("AvailabilityZone", "")))
    return "".join(items)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, code, body, ctype="text/xml;charset=UTF-8"):
        if getattr(self, "chaos_lost", None):
            kind, self.chaos_lost = self.chaos_lost, None
            chaos_fail(self, kind)
            return
        data = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/__proxy/stats"):
            with lock:
                self.reply(200, json.dumps(stats), "application/json")
            return
        self.forward(b"")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.path.startswith("/__proxy/config"):
            cfg = json.loads(body or b"{}")
            with lock:
                if "ice" in cfg:
                    state["ice"] = set(cfg["ice"])
                if "expired" in cfg:
                    state["expired"] = bool(cfg["expired"])
                if "fleet_delay_ms" in cfg:
                    state["fleet_delay_ms"] = int(cfg["fleet_delay_ms"])
                bad = chaos_configure(cfg["chaos"]) if "chaos" in cfg else None
            if bad:
                self.reply(400, json.dumps({"error": bad}), "application/json")
                return
            self.reply(200, "{}", "application/json")
            return
        if self.path.startswith("/__proxy/reset"):
            with lock:
                stats["actions"].clear()
                stats["ice_injected"] = 0
                stats["fleet_requests"].clear()
                chaos_reset()
            self.reply(200, "{}", "application/json")
            return
        params = []
        ctype = self.headers.get("Content-Type", "")
        if "x-www-form-urlencoded" in ctype:
            params = urllib.parse.parse_qsl(body.decode(), keep_blank_values=True)
        action = dict(params).get("Action") or self.headers.get("X-Amz-Target", "?")
        with lock:
            stats["actions"][action] = stats["actions"].get(action, 0) + 1
            expired, ice = state["expired"], set(state["ice"])
            delay = state["fleet_delay_ms"] if action == "CreateFleet" else 0
        if delay:
            time.sleep(delay / 1000.0)
        fate = chaos_draw(self, action)
        if fate and fate[0] == "before":
            chaos_fail(self, fate[1])
            return
        if fate:
            self.chaos_lost = fate[1]     # forwarded; reply() throws the answer away
        if expired and "x-www-form-urlencoded" in ctype:
            self.reply(400, "<Response><Errors><Error><Code>ExpiredToken</Code><Message>The "
                       "security token included in the request is expired</Message></Error>"
                       "</Errors><RequestID>proxy</RequestID></Response>")
            return
        if action != "CreateFleet" or not ice:
            if action == "CreateFleet":
                self.note_fleet(params, 0)
            self.forward(body)
            return
        ovs = overrides(params)
        removed = [ovs[i] for i in sorted(ovs) if ovs[i].get("InstanceType") in ice]
        kept = [ovs[i] for i in sorted(ovs) if ovs[i].get("InstanceType") not in ice]
        spot = dict(params).get("TargetCapacitySpecification.DefaultTargetCapacityType") == "spot"
        self.note_fleet(params, len(removed))
        with lock:
            stats["ice_injected"] += len(removed)
        if not removed:
            self.forward(body)
            return
        errors = error_items(removed, spot)
        if not kept:
            self.reply(200, '<?xml version="1.0" encoding="UTF-8"?><CreateFleetResponse '
                       'xmlns="%s"><requestId>proxy</requestId><fleetId>fleet-proxy</fleetId>'
                       '<errorSet>%s</errorSet><fleetInstanceSet/></CreateFleetResponse>'
                       % (NS, errors))
            return
        rest = [(k, v) for k, v in params if not k.startswith(PREFIX)]
        for j, o in enumerate(kept, 1):
            for field, v in o.items():
                rest.append(("%s%d.%s" % (PREFIX, j, field), v))
        new_body = urllib.parse.urlencode(rest).encode()
        status, headers, data = self.forward_raw(new_body, resign=True)
        text = data.decode()
        # moto answers <errorSet/> or no errorSet: put ours in.
        if "<errorSet/>" in text:
            text = text.replace("<errorSet/>", "<errorSet>%s</errorSet>" % errors, 1)
        elif "<errorSet>" in text:
            text = text.replace("<errorSet>", "<errorSet>" + errors, 1)
        else:
            text = text.replace("</CreateFleetResponse>",
                                "<errorSet>%s</errorSet></CreateFleetResponse>" % errors, 1)
        self.reply(status, text, headers.get("Content-Type", "text/xml"))

    def note_fleet(self, params, removed):
        d = dict(params)
        ovs = overrides(params)
        with lock:
            stats["fleet_requests"].append({
                "target": int(d.get("TargetCapacitySpecification.TotalTargetCapacity", "0")),
                "types": sorted({o.get("InstanceType", "") for o in ovs.values()}),
                "first": ovs[min(ovs)].get("InstanceType", "") if ovs else "",
                "removed": removed})

    def forward(self, body):
        status, headers, data = self.forward_raw(body, resign=False)
        self.reply(status, data, headers.get("Content-Type", "text/xml"))

    def forward_raw(self, body, resign):
        url = MOTO + self.path
        # Unchanged requests keep the Host they were signed with (the
        # proxy's); changed ones are signed again for moto's.
        hdrs = {k: v for k, v in self.headers.items()
                if k.lower() not in ("content-length", "connection")}
        if resign:
            for k in list(hdrs):
                if k.lower() in ("authorization", "x-amz-date", "x-amz-content-sha256", "host"):
                    del hdrs[k]
            req = botocore.awsrequest.AWSRequest(method="POST", url=url, data=body,
                                                 headers={"Content-Type": self.headers.get(
                                                     "Content-Type")})
            botocore.auth.SigV4Auth(CREDS, "ec2", REGION).add_auth(req)
            hdrs = dict(req.headers.items())
        r = urllib.request.Request(url, data=body if self.command == "POST" else None,
                                   headers=hdrs, method=self.command)
        try:
            with urllib.request.urlopen(r, timeout=60) as resp:
                return resp.status, dict(resp.headers.items()), resp.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers.items()), e.read()


# ---- chaos: seeded random failures (CHAOS in the docstring) ---------------

CHAOS_BEFORE = ("error500", "error503", "reset", "timeout")
CHAOS_LOST = ("lost-reset", "lost-error500", "lost-timeout")
CHAOS_DRAWN = ("error500", "error503", "reset", "lost-reset", "lost-error500")
chaos = {"on": False, "rate": 0.0, "lost": 0.5, "actions": [], "script": {},
         "kinds": CHAOS_DRAWN, "hold_ms": 15000, "rng": random.Random(0)}
stats["chaos"] = {"calls": 0, "failed": 0, "lost": 0, "by_action": {}, "kinds": {}}


def chaos_configure(cfg):
    """Under lock.  cfg: None (off) or {"rate", "seed", "lost", "actions",
    "script"}.  None, or what is wrong with cfg (then nothing changes)."""
    if not cfg:
        chaos["on"] = False
        return None
    for kinds in list((cfg.get("script") or {}).values()) + [cfg.get("kinds") or []]:
        for k in kinds:
            if k != "ok" and k not in CHAOS_BEFORE + CHAOS_LOST:
                return "chaos: unknown fate %r" % k
    kinds = tuple(cfg.get("kinds") or CHAOS_DRAWN)
    if not [k for k in kinds if k in CHAOS_BEFORE] or not [k for k in kinds if k in CHAOS_LOST]:
        return "chaos: kinds needs a fate before EC2 acts and one after"
    chaos["on"] = True
    chaos["rate"] = float(cfg.get("rate", 0.0))
    chaos["lost"] = float(cfg.get("lost", 0.5))
    chaos["actions"] = list((cfg.get("actions") or {}).items())
    chaos["script"] = {a: list(k) for a, k in (cfg.get("script") or {}).items()}
    chaos["kinds"] = kinds
    chaos["hold_ms"] = int(cfg.get("hold_ms", 15000))
    chaos["rng"] = random.Random(cfg.get("seed", 0))
    return None


def chaos_reset():
    """Under lock."""
    stats["chaos"] = {"calls": 0, "failed": 0, "lost": 0, "by_action": {}, "kinds": {}}


def chaos_is_ec2(handler):
    auth = handler.headers.get("Authorization", "")
    return "/ec2/aws4_request" in auth


def chaos_draw(handler, action):
    """None, or ("before" | "lost", kind) for this call; counts it."""
    if not chaos_is_ec2(handler):
        return None
    with lock:
        if not chaos["on"]:
            return None
        rate = chaos["rate"]
        for pat, r in chaos["actions"]:
            if fnmatch.fnmatchcase(action, pat):
                rate = float(r)
                break
        rng = chaos["rng"]
        st = stats["chaos"]
        per = st["by_action"].setdefault(action, {"calls": 0, "failed": 0, "lost": 0})
        st["calls"] += 1
        per["calls"] += 1
        script = chaos["script"].get(action)
        if script:
            kind = script.pop(0)
            if kind == "ok":
                return None
            lost = kind in CHAOS_LOST
        else:
            if rng.random() >= rate:
                return None
            lost = rng.random() < chaos["lost"]
            kind = rng.choice([k for k in chaos["kinds"] if (k in CHAOS_LOST) == lost])
        st["failed"] += 1
        per["failed"] += 1
        if lost:
            st["lost"] += 1
            per["lost"] += 1
        st["kinds"][kind] = st["kinds"].get(kind, 0) + 1
    return ("lost" if lost else "before", kind)


def chaos_fail(handler, kind):
    """Answer the call as failure `kind` says (the request body is read)."""
    if kind.endswith("timeout"):
        with lock:
            hold = chaos["hold_ms"]
        time.sleep(hold / 1000.0)
    if kind.endswith("reset") or kind.endswith("timeout"):
        # RST, not FIN: the caller sees "connection reset by peer".
        handler.close_connection = True
        try:
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                          struct.pack("ii", 1, 0))
            handler.connection.close()
        except OSError:
            pass
        return
    code, err, msg = ((503, "Unavailable", "The server is overloaded and can't handle the "
                       "request.") if kind == "error503" else
                      (500, "InternalError", "An internal error has occurred. Retry your "
                       "request, but if the problem persists, contact us with details by "
                       "posting a message on the AWS forums."))
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code>'
            '<Message>%s</Message></Error></Errors><RequestID>chaos-proxy</RequestID>'
            '</Response>' % (err, msg)).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "text/xml;charset=UTF-8")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


if __name__ == "__main__":
    port, MOTO, cred_file = int(sys.argv[1]), sys.argv[2].rstrip("/"), sys.argv[3]
    REGION = "us-east-1"
    CREDS = read_key(cred_file)
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    srv.serve_forever()
