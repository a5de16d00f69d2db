#!/usr/bin/env python3
"""memplan against measurements harness.py already made, without PyTorch.

  measured_compare.py CONFIGS.csv MEASUREMENTS.csv --memplan BIN [--worst-target PCT]

Each configuration of CONFIGS (harness.py's columns) is asked of `memplan
estimate --framework pytorch-cpu` with harness.py's own arguments, and its
allocated peak compared with the one MEASUREMENTS (harness.py run --out)
recorded under the same name. Exit 1 past the worst target.
"""
import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402  (its comparing half needs no PyTorch)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("configs")
    ap.add_argument("measurements")
    ap.add_argument("--memplan", required=True)
    ap.add_argument("--worst-target", type=float, default=3.0)
    o = ap.parse_args()
    with open(o.measurements) as f:
        measured = {r["name"]: r for r in csv.DictReader(line for line in f if not line.startswith("#"))}
    errors = []
    for cfg in harness.read_configs(o.configs):
        if cfg["name"] not in measured:
            sys.exit(f"measured_compare: {cfg['name']} has no measurement in {o.measurements}")
        got = harness.predict(o.memplan, cfg, "pytorch-cpu")["allocated_bytes"]
        want = float(measured[cfg["name"]]["allocated_peak_bytes"])
        errors.append(100 * (got - want) / want)
        print(f"{cfg['name']:28} measured {want / 1048576:9.2f} MiB  memplan {got / 1048576:9.2f} MiB  "
              f"{errors[-1]:+6.2f}%")
    a = sorted(abs(e) for e in errors)
    print(f"{os.path.basename(o.configs)}: {len(a)} configurations, median |error| {a[len(a) // 2]:.2f}%, "
          f"worst {a[-1]:.2f}% (target {o.worst_target:.1f}%)")
    return 0 if a and a[-1] <= o.worst_target else 1


if __name__ == "__main__":
    sys.exit(main())
