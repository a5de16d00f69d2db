"""What the loss probes share (pairwise_loss_probe.py, logits_loss_probe.py):
`run --counter LIB [--out FILE]` measures each configuration in a child process
with the counting allocator preloaded and writes one CSV row each;
`measure CONFIG_JSON` is that child."""
import json
import os
import subprocess
import sys


def main(script, doc, measure, configs, default_out, cols, line):
    """The probe's command line: measure(cfg) -> dict of the cols, configs() the
    configurations, line(row) the printed summary of one."""
    if len(sys.argv) >= 3 and sys.argv[1] == "measure":
        print(json.dumps(measure(json.loads(sys.argv[2]))))
        return 0
    if len(sys.argv) < 2 or sys.argv[1] != "run":
        print(doc)
        return 2
    import argparse

    ap = argparse.ArgumentParser(prog=f"{os.path.basename(script)} run")
    ap.add_argument("--counter", required=True)
    ap.add_argument("--out", default=default_out)
    a = ap.parse_args(sys.argv[2:])
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(a.counter))
    rows = []
    for cfg in configs():
        out = subprocess.run([sys.executable, script, "measure", json.dumps(cfg)], env=env, check=True,
                             capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    with open(a.out, "w") as f:
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join(f"{r[c]:.4f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + "\n")
    for r in rows:
        print(line(r))
    return 0


def run_args(prog, default_out, configs, argv, extra=()):
    """A harness's `run` options (pairwise.py, grpo.py, pairwise_ddp.py): --counter,
    --out, --only NAMES, and extra (flag, argparse keywords) pairs; returns the
    options, the counter's path made absolute, and the configurations chosen."""
    import argparse

    ap = argparse.ArgumentParser(prog=f"{prog} run")
    ap.add_argument("--counter", required=True, help="libmpcount.so built from mpcount.c")
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--only", help="comma-separated configuration names")
    for flag, kw in extra:
        ap.add_argument(flag, **kw)
    o = ap.parse_args(argv)
    cfgs = configs
    if o.only:
        wanted = set(o.only.split(","))
        cfgs = [c for c in configs if c["name"] in wanted]
    if not cfgs:
        sys.exit(f"{prog.rsplit('.', 1)[0]}: error: no configurations to run")
    o.counter = os.path.abspath(o.counter)
    return o, cfgs
