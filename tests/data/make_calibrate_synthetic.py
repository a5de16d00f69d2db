#!/usr/bin/env python3
"""Print synthetic measurements whose constants are known (tests/run-cli.sh runs it).

  python3 tests/data/make_calibrate_synthetic.py build/bin/memplan > synthetic.csv

Each row is a configuration estimated by `memplan estimate --framework
tests/data/calibrate_known.csv`, a pytorch profile with act_scale 1.25, 300 MiB of
fixed allocations (8 MiB workspace + 292 MiB fixed), frag 0.07 and a 700 MiB context;
its total, reserved and device bytes are written as the measured peaks, in the format of
tests/validation/harness.py. `memplan calibrate --framework pytorch` must recover those
constants. This tests the fitting routine (the model states and activations come from
the same estimator), not the estimator itself: tests/data/pytorch_cpu_measurements.csv,
real PyTorch runs, does that. The rows are made when the test runs, so that they follow
the estimator as its terms change.
"""
import csv
import io
import json
import subprocess
import sys

COLUMNS = ["name", "framework", "device", "torch", "model", "family", "layers", "hidden",
           "heads", "kv_heads", "ffn", "vocab", "max_pos", "batch", "seq", "accum",
           "precision", "optimizer", "checkpointing", "attention", "lora_rank",
           "lora_targets", "quant", "dropout", "ce", "params", "step_base_bytes",
           "allocated_peak_bytes", "reserved_peak_bytes", "device_peak_bytes", "peak_phase"]

L = dict(family="llama", layers=8, hidden=1024, heads=16, kv_heads=4, ffn=2816, vocab=32000)
G = dict(family="gpt2", layers=6, hidden=512, heads=8, ffn=2048, vocab=8192, max_pos=1024)
RUNS = [
    dict(name="gpt2-fp32-b1", model="gpt2", batch=1, seq=512, precision="fp32", optimizer="adamw"),
    dict(name="gpt2-fp32-b8", model="gpt2", batch=8, seq=1024, precision="fp32", optimizer="adamw"),
    dict(name="gpt2-amp-ckpt", model="gpt2", batch=16, seq=1024, precision="amp-bf16",
         optimizer="adamw", checkpointing="full"),
    dict(name="small-gpt2-dropout", **G, batch=4, seq=256, precision="fp32", optimizer="sgd", dropout=1),
    dict(name="llama-gqa-mixed", **L, batch=2, seq=2048, precision="mixed-bf16", optimizer="adamw-8bit",
         attention="flash"),
    dict(name="llama-gqa-accum", **L, batch=4, seq=1024, accum=4, precision="amp-bf16", optimizer="adamw",
         ce="chunked"),
    dict(name="llama-2-7b-qlora", model="llama-2-7b", batch=2, seq=2048, precision="mixed-bf16",
         optimizer="paged-adamw-8bit", checkpointing="full", lora_rank=16, lora_targets="q,k,v,o",
         quant="nf4-dq"),
    # no reserved or device peak: this run takes part only in the allocation fit
    dict(name="llama-lora-selective", **L, batch=8, seq=512, precision="fp32", optimizer="adamw",
         checkpointing="selective", lora_rank=8, lora_targets="all", no_allocator=1),
]
FLAGS = {"model": "--model", "family": "--family", "layers": "--layers", "hidden": "--hidden",
         "heads": "--heads", "kv_heads": "--kv-heads", "ffn": "--ffn", "vocab": "--vocab",
         "max_pos": "--max-pos", "batch": "--batch", "seq": "--seq", "accum": "--accum",
         "precision": "--precision", "optimizer": "--optimizer", "checkpointing": "--checkpointing",
         "attention": "--attention", "lora_rank": "--lora-rank", "lora_targets": "--lora-targets",
         "quant": "--quant", "ce": "--ce"}


def estimate(memplan, framework, run):
    """memplan's JSON estimate of a run (a dict of measurement columns; empty ones are
    left out) under the given framework profile."""
    args = [memplan, "estimate", "--framework", framework, "--format", "json"]
    for k, flag in FLAGS.items():
        if run.get(k) not in (None, ""):
            args += [flag, str(run[k])]
    if run.get("dropout") not in (None, "", "0", 0):
        args.append("--dropout")
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


def main():
    memplan = sys.argv[1] if len(sys.argv) > 1 else "build/bin/memplan"
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in RUNS:
        e = estimate(memplan, "tests/data/calibrate_known.csv", r)
        row = {k: r.get(k, "") for k in COLUMNS}
        row.update(framework="pytorch-known", device="synthetic", params=e["params"],
                   allocated_peak_bytes=e["allocated_bytes"], peak_phase=e["peak_phase"])
        if not r.get("no_allocator"):
            row.update(reserved_peak_bytes=e["reserved_bytes"], device_peak_bytes=e["device_bytes"])
        w.writerow(row)
    sys.stdout.write("# Synthetic measurements with known constants (act_scale 1.25, fixed 300 MiB, frag 0.07,\n"
                     "# context 700 MiB), made by tests/data/make_calibrate_synthetic.py, which says how.\n")
    sys.stdout.write(out.getvalue())


if __name__ == "__main__":
    main()
