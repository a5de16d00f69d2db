#!/usr/bin/env python3
"""Measure what a PyTorch training step allocates and compare it with memplan.

  harness.py run CONFIGS.csv --memplan BIN --counter LIB [--quick] [--out FILE]
             [--device cpu|cuda] [--framework F]
      measures every configuration in a fresh process with the counting
      allocator preloaded, asks `memplan estimate --framework F` for the same
      configuration, prints the table and, last, the line
      "median abs error X%, worst Y% over N configs"; exit 1 if the median
      exceeds 3% or the worst 8%.
  harness.py measure CONFIG_JSON
      (run by `run`, under LD_PRELOAD=LIB) one configuration: two training
      steps, the second measured; prints one JSON object.

On a GPU (--device cuda) the caching allocator's own counters replace the
interposer (torch.cuda.memory_allocated / max_memory_allocated), and the
reserved and device peaks are recorded too, for `memplan calibrate`.

What is measured: the bytes live in the process, counted by the interposed
allocator (mpcount.c), relative to the count just before the model is built.
The peak of the second step (optimizer state already allocated, as in every
step after the first) is what torch.cuda.max_memory_allocated reports on a
GPU. Each phase is measured apart (forward with the loss, backward, optimizer
step) to tell where the peak falls.

The measurements file is the format `memplan calibrate` reads (see
memplan(1), CALIBRATION), and the one tools/memplan_callback.py writes.
"""
import csv
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

# The measurements format is the callback's (one definition for both).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from memplan_callback import MEASUREMENT_COLUMNS as COLUMNS, write_measurements  # noqa: E402

CONFIG_KEYS = {"name": str, "family": str, "layers": int, "hidden": int, "heads": int,
               "kv_heads": int, "ffn": int, "vocab": int, "max_pos": int, "batch": int,
               "seq": int, "accum": int, "precision": str, "optimizer": str,
               "checkpointing": str, "lora_rank": int, "lora_targets": str, "dropout": float,
               "quick": int, "checkpoint_every": int}


def read_configs(path, extra_keys=None, extra_defaults=None):
    """The configurations in PATH; extra_keys (name: type) are columns another
    harness adds (ddp.py's ranks), extra_defaults what an empty one means."""
    keys = dict(CONFIG_KEYS, **(extra_keys or {}))
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    out = []
    for r in rows:
        cfg = {}
        for k, conv in keys.items():
            v = (r.get(k) or "").strip()
            if v == "":
                v = {"kv_heads": r["heads"], "max_pos": "1024", "accum": "1", "lora_rank": "0",
                     "lora_targets": "", "dropout": "0", "quick": "0", "checkpoint_every": "1",
                     **(extra_defaults or {})}.get(k, v)
            if v == "" and k != "lora_targets":
                sys.exit(f"harness: error: {path}: configuration '{r.get('name')}' has no '{k}'")
            cfg[k] = conv(v)
        out.append(cfg)
    return out


# ------------------------------------------------------------- measuring

def counters(device):
    """(current, peak, reset): the interposer's counters on the CPU, the caching
    allocator's on a GPU; checked to see a 64 MiB tensor come and go."""
    import torch

    if device == "cuda":
        # the caching allocator's own counters: what max_memory_allocated reports
        current, peak = torch.cuda.memory_allocated, torch.cuda.max_memory_allocated
        reset = torch.cuda.reset_peak_memory_stats
    else:
        counter = ctypes.CDLL(None)
        try:
            current, peak, reset = counter.mpcount_current, counter.mpcount_peak, counter.mpcount_reset
        except AttributeError:
            sys.exit("harness: error: the counting allocator is not preloaded (LD_PRELOAD=libmpcount.so)")
        current.restype = peak.restype = ctypes.c_longlong

    # The counter must see a tensor's bytes: 64 MiB in, 64 MiB out.
    before = current()
    probe = torch.empty(16 << 20, dtype=torch.float32)
    grew = current() - before
    del probe
    if not (64 << 20) <= grew <= (64 << 20) + 65536 or abs(current() - before) > 65536:
        sys.exit(f"harness: error: the allocation counter saw {grew} bytes for a 67108864-byte tensor")
    return current, peak, reset


def measure(cfg):
    import torch
    import hfmodels

    device = cfg.get("device", "cpu")
    current, peak, reset = counters(device)
    torch.manual_seed(0)
    torch.set_num_threads(1)  # per-thread library scratch would make counts vary by machine
    b, t, k = cfg["batch"], cfg["seq"], cfg["accum"]
    batches = [torch.randint(0, cfg["vocab"], (b, t)).to(device) for _ in range(k)]
    amp = cfg["precision"] == "amp-bf16"

    base = current()
    model = hfmodels.build(cfg).to(device)
    model.train()
    model.checkpointing = cfg["checkpointing"] == "full"
    model.checkpoint_every = cfg["checkpoint_every"]  # torchtitan's layer SAC: blocks N, 2N, ... (1-based)
    trainable = [p for p in model.parameters() if p.requires_grad]
    if cfg["optimizer"] == "adamw":
        # foreach: the multi-tensor step that torch 2 uses by default on GPUs
        opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
    elif cfg["optimizer"] == "sgd-momentum":
        opt = torch.optim.SGD(trainable, lr=1e-3, momentum=0.9, foreach=True)
    else:
        opt = torch.optim.SGD(trainable, lr=1e-3, foreach=True)

    def step():
        phases = {"forward": 0, "backward": 0, "optimizer step": 0}
        for ids in batches:
            reset()
            with torch.autocast(device, dtype=torch.bfloat16, enabled=amp):
                loss = model(ids, ids)[0]  # the logits are dropped, as the Trainer does
            phases["forward"] = max(phases["forward"], peak() - base)
            reset()
            (loss / k).backward()
            del loss
            phases["backward"] = max(phases["backward"], peak() - base)
        reset()
        opt.step()
        phases["optimizer step"] = peak() - base
        opt.zero_grad(set_to_none=True)  # torch 2's default
        return phases

    step()  # the first step allocates the optimizer state
    step_base = current() - base
    phases = step()
    at = max(phases, key=phases.get)
    extra = {}
    if device == "cuda":
        free, total = torch.cuda.mem_get_info()
        extra = {"reserved_peak_bytes": torch.cuda.max_memory_reserved(),
                 "device_peak_bytes": torch.cuda.max_memory_reserved() +
                 max(0, total - free - torch.cuda.memory_reserved()),
                 "device_name": torch.cuda.get_device_name()}
    base_params = sum(p.numel() for n, p in model.named_parameters() if "lora_" not in n)
    return {"params": base_params, "step_base_bytes": step_base,
            "allocated_peak_bytes": phases[at], "peak_phase": at, "phases": phases,
            "torch": torch.__version__, **extra}


# ------------------------------------------------------------- comparing

def memplan_args(cfg, framework):
    a = ["estimate", "--framework", framework, "--family", cfg["family"],
         "--layers", cfg["layers"], "--hidden", cfg["hidden"], "--heads", cfg["heads"],
         "--kv-heads", cfg["kv_heads"], "--ffn", cfg["ffn"], "--vocab", cfg["vocab"],
         "--batch", cfg["batch"], "--seq", cfg["seq"], "--accum", cfg["accum"],
         "--precision", cfg["precision"], "--optimizer", cfg["optimizer"],
         "--checkpointing", cfg["checkpointing"], "--attention", "eager", "--ce", "full",
         "--optimizer-impl", "foreach",  # the step run_config builds (foreach=True)
         "--format", "json"]
    if cfg["family"] == "gpt2":
        a += ["--max-pos", cfg["max_pos"]]
    if cfg["lora_rank"] > 0:
        a += ["--lora-rank", cfg["lora_rank"], "--lora-targets", cfg["lora_targets"]]
    if cfg["dropout"] > 0:
        a += ["--dropout"]
    if cfg["checkpoint_every"] > 1:
        a += ["--checkpoint-every", cfg["checkpoint_every"]]
    return [str(x) for x in a]


def predict(memplan, cfg, framework, extra_args=()):
    p = subprocess.run([memplan] + memplan_args(cfg, framework) + [str(a) for a in extra_args],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"harness: error: memplan failed for '{cfg['name']}': {p.stderr.strip()}")
    return json.loads(p.stdout)


def measure_in_child(cfg, counter):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if cfg.get("device", "cpu") == "cpu":
        env["LD_PRELOAD"] = counter
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([sys.executable, os.path.join(here, "harness.py"), "measure", json.dumps(cfg)],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"harness: error: measuring '{cfg['name']}' failed:\n{p.stderr.strip()}")
    return json.loads(p.stdout)


def mib(x):
    return f"{x / 1048576:9.2f}"


def run(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="harness.py run")
    ap.add_argument("configs")
    ap.add_argument("--memplan", required=True)
    ap.add_argument("--counter", help="libmpcount.so (needed on the CPU)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="cuda: measure with torch.cuda.max_memory_allocated on the GPU")
    ap.add_argument("--framework", help="memplan's profile (default: pytorch-cpu, or pytorch on cuda)")
    ap.add_argument("--quick", action="store_true", help="only the configurations marked quick")
    ap.add_argument("--out", help="write the measurements (calibrate's format) here")
    ap.add_argument("--median-target", type=float, default=3.0)
    ap.add_argument("--worst-target", type=float, default=8.0)
    o = ap.parse_args(argv)
    cfgs = [dict(c, device=o.device) for c in read_configs(o.configs) if c["quick"] or not o.quick]
    o.framework = o.framework or ("pytorch" if o.device == "cuda" else "pytorch-cpu")
    if o.device == "cpu" and not o.counter:
        sys.exit("harness: error: measuring on the CPU needs --counter libmpcount.so")
    if not cfgs:
        sys.exit("harness: error: no configurations to run")

    print(f"{'':<28} {'':<32} {'peak (MiB)':^27}   {'the step alone (MiB)':^27}")
    print(f"{'config':<28} {'peak phase (meas/pred)':<32} {'predicted':>9} {'measured':>9} "
          f"{'error':>7}   {'predicted':>9} {'measured':>9} {'error':>7}")
    errors, rise_errors, rows = [], [], []
    t0 = time.time()
    for cfg in cfgs:
        m = measure_in_child(cfg, o.counter)
        e = predict(o.memplan, cfg, o.framework)
        if e["params"] != m["params"]:
            sys.exit(f"harness: error: '{cfg['name']}': memplan counts {e['params']} parameters, "
                     f"the PyTorch model has {m['params']}")
        pred, meas = e["allocated_bytes"], m["allocated_peak_bytes"]
        err = (pred - meas) / meas * 100
        errors.append(abs(err))
        rise_meas = meas - m["step_base_bytes"]
        rise_pred = pred - e["resident_bytes"]
        rise_err = (rise_pred - rise_meas) / rise_meas * 100
        rise_errors.append(abs(rise_err))
        phase = f"{m['peak_phase']} / {e['peak_phase']}"
        print(f"{cfg['name']:<28} {phase:<32} {mib(pred)} {mib(meas)} {err:+6.2f}%   "
              f"{mib(rise_pred)} {mib(rise_meas)} {rise_err:+6.2f}%")
        row = {k: "" for k in COLUMNS}
        row.update({k: cfg[k] for k in cfg if k in row})
        row.update(name=cfg["name"], framework=o.framework, torch=m["torch"],
                   device=m.get("device_name", "cpu"),
                   reserved_peak_bytes=m.get("reserved_peak_bytes", ""),
                   device_peak_bytes=m.get("device_peak_bytes", ""),
                   attention="eager", quant="none", ce="full", optimizer_impl="foreach",
                   dropout=1 if cfg["dropout"] > 0 else 0,
                   lora_targets=cfg["lora_targets"] if cfg["lora_rank"] else "",
                   params=m["params"], step_base_bytes=m["step_base_bytes"],
                   allocated_peak_bytes=meas, peak_phase=m["peak_phase"])
        rows.append(row)
    if o.out:
        write_measurements(o.out, rows)
    med, worst = statistics.median(errors), max(errors)
    print(f"({len(cfgs)} configurations measured in {time.time() - t0:.0f} s; the step alone, its peak "
          f"minus what was allocated before it: median abs error {statistics.median(rise_errors):.2f}%, "
          f"worst {max(rise_errors):.2f}%)")
    print(f"median abs error {med:.2f}%, worst {worst:.2f}% over {len(cfgs)} configs")
    return 0 if med <= o.median_target and worst <= o.worst_target else 1


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "measure":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        print(json.dumps(measure(json.loads(sys.argv[2]))))
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "run":
        return run(sys.argv[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
