"""emit_checks.py - what the emit tests (test_emit_hf.py, test_emit_torchtune.py, test_emit_roundtrip.py) share: a
tally of checks that prints each failure, and the tables under tests/data/engines read past
their '#' comment lines."""
import csv
import json
import math
import os
import shutil
import subprocess


class Tally:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL " + what)


def csv_rows(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def names(path):
    with open(path) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def emit(tally, memplan, args, path, tag):
    """Run memplan ARGS --emit ... -o PATH --format json; the plan's JSON, or None when
    nothing fits (not a failure) or memplan failed (a failure, tallied)."""
    if os.path.exists(path):
        os.remove(path)
    # hf and torchtune write a bundle folder: its main file is the one checked
    target = args[args.index("--emit") + 1] if "--emit" in args else ""
    main = {"hf": "train.py", "torchtune": "torchtune.yaml"}.get(target)
    out = path + ".bundle" if main else path
    if main:
        shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([memplan, *args, "-o", out, "--format", "json"], capture_output=True, text=True)
    if main and p.returncode == 0:
        shutil.copyfile(os.path.join(out, main), path)
    if p.returncode == 1 and "nothing fits" in p.stderr:
        return None
    tally.check(p.returncode == 0, f"{tag}: memplan exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout) if p.returncode == 0 else None


def same_value(plan_value, check_value):
    """A plan's JSON value and check's text for it: flags as on/off, numbers by value."""
    if isinstance(plan_value, bool):
        return check_value == ("on" if plan_value else "off")
    if isinstance(plan_value, (int, float)):
        try:  # lora-dropout is a float32 in the plan (0.05 prints 0.05000000075)
            return math.isclose(float(check_value), float(plan_value), rel_tol=1e-7)
        except ValueError:
            return False
    return check_value == str(plan_value)


# plan settings that are the search's, not the run's: no file states them
NOT_A_SETTING = {"gpu", "task", "headroom", "global-batch"}


def check_back(memplan, path, plan, extra=()):
    """memplan check on an emitted file, with the plan's --gpu and --gpus (and EXTRA), as JSON."""
    s = plan["settings"]
    args = [memplan, "check", path, "--format", "json", *extra]
    if s.get("gpu"):
        args += ["--gpu", s["gpu"]]
    if s["gpus"] > 1:
        args += ["--gpus", str(s["gpus"])]
    return subprocess.run(args, capture_output=True, text=True)
