#!/usr/bin/env python3
"""test_check.py BIN — memplan check on the real configuration files under
tests/data/configs/ (each copied from its tool's repository; INDEX.csv names the
repository, path and commit), against tests/data/configs/expected/<file>.json,
written by reading each file and its tool's documented defaults (not memplan's
output):

    {"args": ["--gpu", "24GB"],          extra flags (the files name the model)
     "exit": 0,                          0 fits, 1 does not (each from a published run on that
                                         GPU), "verdict" either (nothing published), 2 refused
     "settings": {"batch": "2", ...},    each setting's value, as memplan names it
     "keys": {"batch": "micro_batch_size", ...},   the key each came from
     "refused": "text",                  for exit 2: a piece of the one-line message
     "notes": "text",                    a piece of one of the report's notes
     "with": ["dir/file"],               files read with it (a YAML and the DeepSpeed JSON it names)
     "why": "text"}                      where the expectation comes from

Every file in INDEX.csv must have an expectation. Prints one line per failure and
a summary; exit 1 on any failure."""
import csv
import json
import os
import subprocess
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "configs")
failures = []
passed = 0


def check(ok, what):
    global passed
    if ok:
        passed += 1
    else:
        failures.append(what)


def main():
    memplan = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build/bin", "memplan")
    rows = list(csv.DictReader(open(os.path.join(HERE, "INDEX.csv"))))
    # a YAML and the DeepSpeed JSON it names are one run: the JSON alone is read with its YAML
    named = {r["names"] for r in rows if r["names"]}
    checked = 0
    for r in rows:
        f = r["file"]
        exp_path = os.path.join(HERE, "expected", f + ".json")
        if not os.path.exists(exp_path):
            check(f in named, f"{f}: no expectation in expected/")
            continue
        exp = json.load(open(exp_path))
        files = [os.path.join(HERE, f)] + [os.path.join(HERE, n) for n in exp.get("with", [])]
        p = subprocess.run([memplan, "check", *files, *exp.get("args", []), "--format", "json"],
                           capture_output=True, text=True)
        checked += 1
        want_exit = exp.get("exit", 0)
        ok = p.returncode in (0, 1) if want_exit == "verdict" else p.returncode == want_exit
        check(ok, f"{f}: exit {p.returncode}, wanted {want_exit}: {p.stderr.strip()[:200]}")
        if want_exit == 2:
            check(exp.get("refused", "") in p.stderr and p.stderr.count("\n") == 1,
                  f"{f}: the refusal says {p.stderr.strip()[:200]!r}, wanted {exp.get('refused')!r}")
            continue
        if p.returncode not in (0, 1):
            continue
        got = json.loads(p.stdout)
        if "notes" in exp:
            check(any(exp["notes"] in n for n in got["notes"]), f"{f}: no note says {exp['notes']!r}: {got['notes']}")
        origins = {o["setting"]: o for o in got["settings"]}
        for setting, value in exp.get("settings", {}).items():
            o = origins.get(setting)
            check(o is not None and o["value"] == str(value),
                  f"{f}: {setting} is {o['value'] if o else None!r}, wanted {value!r}")
        for setting, key in exp.get("keys", {}).items():
            o = origins.get(setting)
            check(o is not None and o["key"] == key, f"{f}: {setting} from {o['key'] if o else None!r}, wanted {key!r}")
    check(checked >= 40, f"{checked} files checked, wanted at least 40")
    for x in failures:
        print("FAIL " + x)
    print(f"check: {checked} real configs; {passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
