#!/bin/sh
# The recommendation table (issue 13): memplan's best plan in each situation of
# tests/data/recommendations.csv against the choice its source expects. Prints
# every disagreement and the agreement; fails below the floor.
bin=${1:-build/bin}
floor=${2:-80}
python3 - "$bin/memplan" tests/data/recommendations.csv "$floor" <<'PY'
import csv, json, shlex, subprocess, sys
memplan, table, floor = sys.argv[1], sys.argv[2], float(sys.argv[3])
rows = list(csv.DictReader(l for l in open(table, encoding="utf-8") if not l.startswith("#")))
agree, plans = 0, {}
for r in rows:
    args = r["args"]
    if args not in plans:
        p = subprocess.run([memplan] + shlex.split(args) + ["--format", "json"], capture_output=True, text=True)
        plans[args] = json.loads(p.stdout)["settings"] if p.returncode == 0 else {}
    got = str(plans[args].get(r["field"], "(nothing fits)"))
    want = r["expected"]
    ok = got not in want[1:].split("|") if want.startswith("!") else got in want.split("|")
    agree += ok
    if not ok:
        print("disagree %s: memplan %s -> %s %s, expected %s (%s)" % (r["id"], args, r["field"], got, want, r["source"]))
pct = 100.0 * agree / len(rows)
print("recommendations: %d of %d agree (%.0f%%; floor %.0f%%)" % (agree, len(rows), pct, floor))
sys.exit(0 if pct >= floor else 1)
PY
