#!/usr/bin/env python3
"""check_metrics.py [--not-caused NAME,...] LIST PAGE... - the Karpenter metrics parity check.

LIST is karpenter_metrics.txt; each PAGE is one service's /metrics text
(file name = service name).  Checks, printing PASS/FAIL lines:
  * every metric marked "exposed" is on some page, with that type and
    exactly those label names on each of its series (a metric whose series
    have not appeared yet - a counter nothing has counted - is reported
    as present by its # TYPE line, label names unchecked);
  * every metric named by a dashboard is exposed or listed as n/a / gap;
  * no page exposes a karpenter_* name the list does not mark exposed
    (so nothing Karpenter-named can drift from Karpenter's definition).
--not-caused names counters of events the run did not cause: absent, they
are reported SKIP instead of FAIL (a labelled family has no lines before
its first series, as in Karpenter).  Exit 1 when any check fails."""
import os
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"')


def parse_list(path):
    metrics, dashboards = {}, []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        if line.startswith('dashboard '):
            dashboards.append([f.strip() for f in line[len('dashboard '):].split('|')])
            continue
        name, typ, labels, status, why = [f.strip() for f in line.split('|', 4)]
        metrics[name] = (typ, set() if labels == '-' else set(labels.split(',')), status, why)
    return metrics, dashboards


def parse_page(path):
    types, labels = {}, {}
    for line in open(path):
        if line.startswith('# TYPE '):
            _, _, name, typ = line.split()
            types[name] = typ
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        name = m.group(1)
        base = re.sub(r'_(bucket|sum|count)$', '', name)
        if base not in types:
            base = name
        got = set(LABEL.findall(m.group(3) or '')) - {'le', 'quantile'}
        labels.setdefault(base, []).append(got)
    return types, labels


def main():
    args = sys.argv[1:]
    not_caused = set()
    if args and args[0] == '--not-caused':
        not_caused = set(args[1].split(','))
        args = args[2:]
    metrics, dashboards = parse_list(args[0])
    pages = {os.path.basename(p).split('.')[0]: parse_page(p) for p in args[1:]}
    failed = 0

    def check(ok, msg):
        nonlocal failed
        print(('PASS: ' if ok else 'FAIL: ') + msg)
        failed += not ok

    karp = [n for n in metrics if n.startswith('karpenter_')]
    counts = {s: sum(1 for n in karp if metrics[n][2] == s) for s in ('exposed', 'gap', 'n/a')}
    print(f'Karpenter metrics: {len(karp)} karpenter_* ({counts["exposed"]} exposed, '
          f'{counts["gap"]} gap, {counts["n/a"]} n/a); {len(metrics)} with framework metrics')
    for name, (typ, want, status, where) in sorted(metrics.items()):
        if status != 'exposed':
            continue
        found = [(svc, t, l) for svc, (t, l) in pages.items() if name in t]
        if not found and name in not_caused:
            print(f'SKIP: {name}: no event of its kind in this run (list says {where})')
            continue
        if not found:
            check(False, f'{name} exposed (list says {where})')
            continue
        for svc, types, labels in found:
            check(types[name] == typ, f'{name} on {svc} is a {typ} (got {types[name]})')
            bad = [sorted(g) for g in labels.get(name, []) if g != want]
            n = len(labels.get(name, []))
            check(not bad, f'{name} on {svc}: {n} series, label names {sorted(want)}'
                  + (f' (got {bad[0]})' if bad else ''))
    for name in sorted(not_caused):
        check(metrics.get(name, ('', '', ''))[2] == 'exposed', f'--not-caused {name} is marked exposed')
    for d in dashboards:
        name = d[0]
        if len(d) > 1:
            print(f'  dashboard metric {name}: {d[1]} - {d[2]}')
            continue
        st = metrics.get(name, (None, None, 'missing', ''))[2]
        check(st != 'missing', f'dashboard metric {name} is in the list ({st})')
        if st != 'exposed':
            print(f'  dashboard metric {name} not exposed: {st} - {metrics[name][3]}')
    for svc, (types, _) in pages.items():
        for name in sorted(types):
            if name.startswith('karpenter_'):
                check(metrics.get(name, ('', '', ''))[2] == 'exposed',
                      f'{svc} exposes {name}, which the list marks exposed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
