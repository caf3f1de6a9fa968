#!/usr/bin/python3
"""report_browser_it.py - the demo's HTML report, drawn by a real browser.

Builds a demo output folder (report_fixture.py: four acts, seven
NodeClaims, four of them disrupted and deleted, their decisions, a
final.json with N nodes), runs scripts/demo-report.py on it and renders the
report in headless Chromium (Debian's `chromium`, scripts/deps.sh):

  - no script error and no console message: a probe added at the top of a
    copy of the page records `error` / `unhandledrejection` events and
    console.error/warn calls into the DOM, which --dump-dom shows after
    the scripts ran; Chromium's own log (--enable-logging=stderr) must
    have no CONSOLE line either;
  - the final-nodes table has exactly N rows, as the report's own script
    counted them (it ran) and as the DOM holds them;
  - every chart is an <svg> drawn with a nonzero size, with axes text;
  - a screenshot is a 1280x2400 PNG that is not blank.

It fails on purpose once: a copy of the report with a `throw` in a
<script> must be flagged by both error detectors.  And the script survives
what a demo may leave: an empty folder, malformed lines, the older
series.csv alone.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
REPORT = os.path.join(REPO, "scripts", "demo-report.py")
PY = "/usr/bin/python3"
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS: {name}")
    else:
        failed += 1
        print(f"FAIL: {name}" + (f"\n  {detail}" if detail else ""))
    sys.stdout.flush()
    return ok


PROBE = """<script>
(function () {
  var errs = [];
  window.addEventListener("error", function (e) { errs.push("error: " + e.message); });
  window.addEventListener("unhandledrejection", function (e) { errs.push("rejection: " + e.reason); });
  ["error", "warn"].forEach(function (k) {
    var f = console[k];
    console[k] = function () { errs.push("console." + k + ": " + [].join.call(arguments, " ")); f.apply(console, arguments); };
  });
  window.addEventListener("load", function () {
    var d = document.documentElement, sizes = [];
    document.querySelectorAll(".chart svg").forEach(function (s) {
      var r = s.getBoundingClientRect();
      sizes.push(Math.round(r.width) + "x" + Math.round(r.height));
    });
    var t = document.getElementById("final-nodes");
    d.setAttribute("data-probe-svgs", sizes.join(","));
    d.setAttribute("data-probe-rows", t ? t.tBodies[0].rows.length : -1);
    d.setAttribute("data-probe-errors", JSON.stringify(errs));
    d.setAttribute("data-probe-done", "1");
  });
})();
</script>"""


def chromium(tmp, url, *args):
    """Runs headless Chromium; returns (rc, stdout, stderr, seconds)."""
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
    cmd = ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--no-default-browser-check", "--disable-extensions",
           "--hide-scrollbars", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           *args, url]
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=90,
                           env=dict(os.environ, HOME=tmp))
    except subprocess.TimeoutExpired as e:
        return 124, e.stdout or "", (e.stderr or "") + "\ntimeout", time.monotonic() - t
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t


def console_lines(stderr):
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


class Dom(HTMLParser):
    """The <html> element's attributes, the final-nodes table's body rows,
    the <svg> elements in .chart blocks and their text."""

    def __init__(self):
        super().__init__()
        self.root, self.rows, self.svgs, self.svg_text = {}, 0, 0, 0
        self.stack = []  # ("table-final" | "tbody" | "chart" | other)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.root = a
        kind = tag
        if tag == "table" and a.get("id") == "final-nodes":
            kind = "table-final"
        elif "chart" in (a.get("class") or "").split():
            kind = "chart"
        in_final = "table-final" in self.stack and "tbody" in self.stack
        if tag == "tr" and in_final:
            self.rows += 1
        if tag == "svg" and "chart" in self.stack:
            self.svgs += 1
        if tag == "text" and "chart" in self.stack:
            self.svg_text += 1
        if tag not in ("meta", "br", "img", "input", "link", "hr", "col"):
            self.stack.append(kind)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if self.stack and tag not in ("meta", "br", "img", "input", "link", "hr", "col"):
            self.stack.pop()

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):  # pop to the matching tag
            k = self.stack[i]
            if k == tag or (tag == "table" and k == "table-final") or k == "chart" and tag == "div":
                del self.stack[i:]
                break


def render(tmp, html_path, label):
    """A probed copy of the page through --dump-dom: (Dom, probe errors,
    console lines, seconds)."""
    with open(html_path, encoding="utf-8") as f:
        page = f.read()
    probed = os.path.join(tmp, label + "-probed.html")
    with open(probed, "w", encoding="utf-8") as f:
        f.write(page.replace("<head>", "<head>" + PROBE, 1))
    rc, out, err, secs = chromium(tmp, "file://" + probed, "--window-size=1280,2400",
                                  "--virtual-time-budget=5000", "--dump-dom")
    if rc != 0:
        print(err[-2000:])
    dom = Dom()
    dom.feed(out)
    try:
        errs = json.loads(dom.root.get("data-probe-errors", "null"))
    except ValueError:
        errs = None
    return rc, dom, errs, console_lines(err), secs


def png_info(path):
    from PIL import Image
    with Image.open(path) as im:
        im = im.convert("RGB")
        w, h = im.size
        small = im.resize((w // 4, h // 4))
        px = list(small.getdata())
        nonwhite = sum(1 for p in px if sum(p) < 720) / len(px)
        colours = len(set(px))
    return w, h, nonwhite, colours


def run_report(out, html_path):
    p = subprocess.run([PY, REPORT, out, html_path], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stderr


def main():
    if not shutil.which("chromium"):
        check("chromium is installed (scripts/deps.sh)", False, "no chromium on PATH")
        return 1
    tmp = tempfile.mkdtemp(prefix="report-it.")
    t_start = time.monotonic()
    try:
        return body(tmp, t_start)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def body(tmp, t_start):
    out = os.path.join(tmp, "out")
    n = int(subprocess.run([PY, os.path.join(HERE, "report_fixture.py"), out], check=True,
                           capture_output=True, text=True).stdout.strip())
    report = os.path.join(tmp, "report.html")
    rc, err = run_report(out, report)
    check("demo-report.py builds the report from a four-act demo's output", rc == 0, err[-2000:])
    check("... without a warning", "warning" not in err, err[-2000:])
    if rc != 0:
        return 1
    page = open(report, encoding="utf-8").read()
    check("the report is one self-contained file (no external src/href)",
          not re.search(r'(src|href)\s*=\s*["\']?(https?:|//|file:)', page),
          re.findall(r'(?:src|href)\s*=\s*\S+', page)[:5])
    check("it holds every decision's message, as tailorctl explain gives it",
          all(html.escape(json.loads(line)["message"]) in page
              for line in open(os.path.join(out, "decisions.jsonl"))))
    check("it has a NodeClaims timeline row per NodeClaim (7) and a milestone table",
          page.count('data-chart="nodeclaims"') == 1 and
          len(re.findall(r"<tr><td>default-[a-z0-9]{5}</td>", page)) == 7)

    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    sys.path.insert(0, HERE)
    import report_fixture
    got = {}
    for row in re.findall(r"<tr><td>(default-[a-z0-9]{5})</td>(.*?)</tr>", page):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row[1])
        got[row[0]] = [float(x) if x else None for x in cells[-6:]]
    bad = []
    for c in report_fixture.CLAIMS:
        want = list(c[4:10])
        have = got.get(c[0], [])
        if len(have) != 6 or any((w is None) != (h is None) or (w is not None and abs(w - h) > 1.05)
                                 for w, h in zip(want, have)):
            bad.append(f"{c[0]}: want {want}, have {have}")
    check("every NodeClaim's created, launched, registered, initialized, drained, terminated "
          "times are right (within 1 s)", not bad, "\n  ".join(bad))

    rc, dom, errs, logs, secs = render(tmp, report, "report")
    print(f"  (chromium --dump-dom: {secs:.1f} s)")
    check("chromium renders the report (exit 0, the probe ran)",
          rc == 0 and dom.root.get("data-probe-done") == "1", f"rc={rc} root={dom.root}")
    check("no script error or console message in the page", errs == [], f"probe: {errs}")
    check("no CONSOLE line in chromium's log", logs == [], "\n  ".join(logs))
    check(f"the report's script ran and counted {n} final nodes",
          dom.root.get("data-final-nodes") == str(n), f"data-final-nodes={dom.root.get('data-final-nodes')}")
    check(f"the final-nodes table shows exactly {n} rows (DOM after scripts)",
          dom.rows == n and dom.root.get("data-probe-rows") == str(n),
          f"parsed {dom.rows}, probe {dom.root.get('data-probe-rows')}")
    sizes = [s for s in (dom.root.get("data-probe-svgs") or "").split(",") if s]
    check("four charts (pods, nodes, cost, NodeClaims) are drawn as <svg> with a nonzero size",
          len(sizes) == 4 and dom.svgs == 4 and
          all(int(w) > 300 and int(h) > 100 for w, h in (s.split("x") for s in sizes)),
          f"sizes {sizes}, svgs in DOM {dom.svgs}")
    check("the charts carry their text (axes, ticks, legends) as text",
          dom.svg_text > 100 and all(u in page for u in ("time since the demo started (s)", ">pods<",
                                                         ">nodes<", "$ / hour", ">act 4<")),
          f"{dom.svg_text} <text> elements")

    shot = os.path.join(tmp, "report.png")
    rc, _, err, secs = chromium(tmp, "file://" + report, "--window-size=1280,2400",
                                "--virtual-time-budget=5000", f"--screenshot={shot}")
    print(f"  (chromium --screenshot: {secs:.1f} s)")
    ok = rc == 0 and os.path.exists(shot)
    info = png_info(shot) if ok else None
    check("the screenshot is a 1280x2400 PNG that is not blank",
          ok and info[0] == 1280 and info[1] == 2400 and info[2] > 0.05 and info[3] > 50,
          f"rc={rc} info={info}")
    check("no CONSOLE line in chromium's log for the screenshot", console_lines(err) == [],
          "\n  ".join(console_lines(err)))
    keep = os.environ.get("REPORT_SCREENSHOT")
    if ok and keep:
        shutil.copy(shot, keep)

    # The detectors can fail: a deliberately broken copy.
    broken = os.path.join(tmp, "broken.html")
    with open(broken, "w", encoding="utf-8") as f:
        f.write(page.replace("</body>", "<script>throw new Error('deliberately broken');</script></body>", 1))
    rc, dom, errs, logs, secs = render(tmp, broken, "broken")
    check("negative: a throw in a <script> is caught by the probe",
          bool(errs) and any("deliberately broken" in e for e in errs), f"probe: {errs}")
    check("negative: ... and shows in chromium's log",
          any("Uncaught Error: deliberately broken" in line for line in logs), "\n  ".join(logs))

    # What a demo may leave: nothing, malformed lines, the older series.csv.
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    rc, err = run_report(empty, os.path.join(tmp, "empty.html"))
    text = open(os.path.join(tmp, "empty.html")).read() if rc == 0 else ""
    check("an empty output folder gives a report of notes, no crash",
          rc == 0 and "No samples" in text and "No acts.json" in text and "No final.json" in text,
          err[-2000:])
    rc, dom, errs, logs, _ = render(tmp, os.path.join(tmp, "empty.html"), "empty")
    check("... which renders without script errors, with 0 final nodes",
          rc == 0 and errs == [] and logs == [] and dom.root.get("data-final-nodes") == "0",
          f"rc={rc} probe={errs} log={logs} root={dom.root}")

    bad = os.path.join(tmp, "bad")
    shutil.copytree(out, bad)
    for name in ("samples.jsonl", "nodeclaims-watch.jsonl", "decisions.jsonl"):
        with open(os.path.join(bad, name), "a") as f:
            f.write('{"t": 12, "truncated\n[1, 2]\n{"no": "t"}\n')
    with open(os.path.join(bad, "acts.json"), "w") as f:
        f.write("{not json")
    rc, err = run_report(bad, os.path.join(tmp, "bad.html"))
    check("malformed lines are skipped with a warning on stderr, no crash",
          rc == 0 and err.count("warning") >= 5 and "samples.jsonl" in err, err[-2000:])

    old = os.path.join(tmp, "old")
    os.makedirs(old)
    with open(os.path.join(old, "series.csv"), "w") as f:
        f.write("t,pending,running,claims,ready_nodes,cost,types\n0.5,54,0,0,0,0.0000,-\n"
                "20.1,0,54,4,4,0.4800,m5.large=2;m5.xlarge=2\n")
    rc, err = run_report(os.path.join(old, "series.csv"), os.path.join(tmp, "old.html"))
    check("the older call (SERIES.csv REPORT.html) still gives charts",
          rc == 0 and open(os.path.join(tmp, "old.html")).read().count('data-chart="') == 3, err[-2000:])

    print(f"  (whole test: {time.monotonic() - t_start:.1f} s)")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
