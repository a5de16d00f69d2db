#!/usr/bin/env python3
"""Measure PyTorch data parallel per rank and compare it with memplan's per-rank prediction.

  ddp.py run CONFIGS.csv --memplan BIN --counter LIB [--quick] [--only NAME,...] [--out FILE]
      for every configuration, starts one process per rank (gloo on 127.0.0.1,
      env:// rendezvous on a free local port) with the counting allocator
      preloaded, asks `memplan estimate --framework pytorch-cpu --gpus N
      --zero Z --optimizer-impl foreach|for-loop` for the same configuration,
      prints every rank's peak, the highest, the prediction and the error,
      then the line "median abs error X%, worst Y% over N configs". Exit 1
      when a run failed, or when the median exceeds 1% or the worst 3% (the
      targets of the single-process validation).
  ddp.py rank CONFIG_JSON
      (run by `run`, once per rank, under LD_PRELOAD=LIB with RANK, WORLD_SIZE,
      MASTER_ADDR and MASTER_PORT set) one rank: two training steps, the second
      measured; prints one JSON object.

What a rank does is what a training script does: the model built, wrapped in
DistributedDataParallel with its defaults (bucket_cap_mb=25,
gradient_as_bucket_view=False), the optimizer torch.optim.AdamW, or with
zero=1 ZeroRedundancyOptimizer(AdamW) over the wrapped model's parameters.
Each rank counts its own allocations (mpcount.c, as harness.py does) relative
to what it holds just before the model is built, after every import and the
process group's first collective. Besides the per-phase peaks of the second
step (forward with the loss, backward with its all-reduces, optimizer step),
a rank records what wrapping allocated (DDP's flat gradient buckets), the
bucket sizes DDP reports, and the parameters its optimizer holds (under ZeRO,
its own partition).
"""
import csv
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402  (the configurations, the counter and memplan's command line)

# The columns ddp_configs.csv adds to configs.csv's.
DDP_KEYS = {"ranks": int, "zero": int, "foreach": int}
PHASES = ("forward", "backward", "optimizer step")
RANK_TIMEOUT_S = 300

# What the measurements file holds, one row per configuration and rank.
MEASUREMENT_COLUMNS = (
    "name", "family", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "max_pos",
    "batch", "seq", "precision", "optimizer", "foreach", "checkpointing", "ranks", "zero",
    "rank", "params", "held_params", "largest_held_params", "bucket_bytes", "model_bytes", "wrap_bytes",
    "wrap_peak_bytes", "step_base_bytes", "forward_peak_bytes", "backward_peak_bytes",
    "optimizer_step_peak_bytes", "allocated_peak_bytes", "peak_phase")

COLUMN_NOTES = """\
# Bytes are allocated bytes, counted at malloc level in each rank's own process
# (tests/validation/mpcount.c preloaded), relative to that rank's baseline: what it
# held after every import and the process group's first collective, just before
# the model was built. One row per configuration and rank.
#   name..checkpointing  the configuration (ddp_configs.csv); ranks: world size;
#                        zero: 1 = ZeroRedundancyOptimizer(AdamW) on top of DDP;
#                        foreach: 1 = AdamW(foreach=True), 0 = per-tensor AdamW
#   params               the model's parameters (tied ones once)
#   held_params          parameters this rank's optimizer steps (its ZeRO partition)
#   largest_held_params  the largest of those tensors (per-tensor AdamW's
#                        temporaries are about two of it)
#   bucket_bytes         DDP's gradient buckets, as DDP's logging data reports them
#                        after the measured step (bucket_sizes, summed)
#   model_bytes          held after the model was built, before wrapping
#   wrap_bytes           what DistributedDataParallel(model) left allocated (read
#                        after a barrier, once gloo has let go of the broadcast)
#   wrap_peak_bytes      the peak while wrapping, above model_bytes: the flat copy
#                        of the weights DDP broadcasts from rank 0, then the
#                        buckets; both at once (twice the buckets) on a rank whose
#                        gloo thread frees the copy late, which varies run to run
#   step_base_bytes      held before the second step (weights, optimizer state,
#                        DDP's buckets)
#   *_peak_bytes         the peak of each phase of the second step; forward
#                        includes the loss, backward DDP's all-reduces, the
#                        optimizer step ZeRO's parameter broadcasts
#   allocated_peak_bytes the largest of the three; peak_phase where it fell
"""


# ------------------------------------------------------------- one rank

def make_optimizer(cfg, params):
    """AdamW / SGD as harness.py makes them, under ZeRO partitioned by ZeroRedundancyOptimizer."""
    import torch
    from torch.distributed.optim import ZeroRedundancyOptimizer

    kinds = {"adamw": (torch.optim.AdamW, {"lr": 1e-4}),
             "sgd": (torch.optim.SGD, {"lr": 1e-3}),
             "sgd-momentum": (torch.optim.SGD, {"lr": 1e-3, "momentum": 0.9})}
    cls, kw = kinds[cfg["optimizer"]]
    kw = dict(kw, foreach=bool(cfg["foreach"]))
    if cfg["zero"]:
        opt = ZeroRedundancyOptimizer(params, optimizer_class=cls, **kw)
        held = [p for g in opt.optim.param_groups for p in g["params"]]  # this rank's partition
    else:
        opt = cls(params, **kw)
        held = params
    return opt, held


def bucket_bytes(ddp):
    sizes = ddp._get_ddp_logging_data().get("bucket_sizes", "")
    return sum(int(s) for s in sizes.replace(",", " ").split())


def measure_rank(cfg):
    import datetime as dt

    import torch
    import torch.distributed as dist
    import torch.distributed.optim  # noqa: F401  (imported before the baseline)
    from torch.nn.parallel import DistributedDataParallel
    import hfmodels

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=dt.timedelta(seconds=RANK_TIMEOUT_S))
    current, peak, reset = harness.counters("cpu")
    torch.manual_seed(0)  # the same initial weights everywhere (DDP broadcasts rank 0's anyway)
    torch.set_num_threads(1)
    ids = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]),
                        generator=torch.Generator().manual_seed(1 + rank))  # each rank its own batch
    dist.barrier()  # gloo's first collective: its buffers exist before the baseline

    base = current()
    model = hfmodels.build(cfg)
    model.train()
    model.checkpointing = cfg["checkpointing"] == "full"
    model_bytes = current() - base
    reset()
    ddp = DistributedDataParallel(model)  # defaults: bucket_cap_mb=25, gradient_as_bucket_view=False
    wrap_peak = peak() - base - model_bytes
    dist.barrier()  # gloo's worker thread may still hold the flat copy wrapping broadcast
    wrap_bytes = current() - base - model_bytes
    opt, held = make_optimizer(cfg, [p for p in ddp.parameters() if p.requires_grad])
    held_sizes = [p.numel() for p in held]

    def step():
        phases = {}
        reset()
        loss = ddp(ids, ids)[0]  # the logits are dropped, as the Trainer does
        phases["forward"] = peak() - base
        reset()
        loss.backward()
        del loss
        phases["backward"] = peak() - base
        reset()
        opt.step()
        phases["optimizer step"] = peak() - base
        opt.zero_grad(set_to_none=True)  # torch 2's default
        return phases

    step()  # the first step allocates the optimizer state and rebuilds DDP's buckets
    step_base = current() - base
    phases = step()
    at = max(phases, key=phases.get)
    dist.destroy_process_group()
    return {"rank": rank, "params": sum(p.numel() for p in model.parameters()),
            "held_params": sum(held_sizes), "largest_held_params": max(held_sizes),
            "bucket_bytes": bucket_bytes(ddp), "model_bytes": model_bytes, "wrap_bytes": wrap_bytes,
            "wrap_peak_bytes": wrap_peak, "step_base_bytes": step_base, "phases": phases,
            "allocated_peak_bytes": phases[at], "peak_phase": at, "torch": torch.__version__}


# ------------------------------------------------------------- the ranks of one configuration

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(cfg, counter):
    """Every rank of CFG in its own process; (list of per-rank results, None) or (None, error)."""
    n = cfg["ranks"]
    env = dict(os.environ, OMP_NUM_THREADS="1", LD_PRELOAD=counter, MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), WORLD_SIZE=str(n), GLOO_SOCKET_IFNAME="lo")
    with tempfile.TemporaryDirectory(prefix="memplan-ddp-") as tmp:
        procs, logs = [], []
        for r in range(n):
            out, err = (open(os.path.join(tmp, f"{r}.{x}"), "w+") for x in ("out", "err"))
            logs.append((out, err))
            procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "ddp.py"), "rank",
                                           json.dumps(cfg)], stdout=out, stderr=err,
                                          env=dict(env, RANK=str(r))))
        error = wait_all(procs, logs)
        results = None if error else [json.loads(read(out)) for out, _ in logs]
        for out, err in logs:
            out.close()
            err.close()
    return results, error


def read(f):
    f.seek(0)
    return f.read()


def wait_all(procs, logs):
    """Waits for every rank; the first to fail (or the clock) ends the others, which would wait forever."""
    deadline = time.time() + RANK_TIMEOUT_S
    while any(p.poll() is None for p in procs):
        failed = [r for r, p in enumerate(procs) if p.poll() not in (None, 0)]
        if failed or time.time() > deadline:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            if not failed:
                return f"timed out after {RANK_TIMEOUT_S} s"
            return f"rank {failed[0]} failed:\n{read(logs[failed[0]][1]).strip()}"
        time.sleep(0.05)
    failed = [r for r, p in enumerate(procs) if p.returncode != 0]
    return f"rank {failed[0]} failed:\n{read(logs[failed[0]][1]).strip()}" if failed else None


# ------------------------------------------------------------- comparing

def read_ddp_configs(path):
    cfgs = harness.read_configs(path, DDP_KEYS)
    for c in cfgs:
        if c["ranks"] < 2 or c["accum"] != 1 or c["zero"] not in (0, 1):
            sys.exit(f"ddp: error: {path}: '{c['name']}': ranks must be 2 or more, accum 1, zero 0 or 1")
    return cfgs


def mib(x):
    return f"{x / 1048576:7.1f}"


def print_comparison(cfg, ranks, e, seconds):
    top = max(ranks, key=lambda m: m["allocated_peak_bytes"])
    meas, pred = top["allocated_peak_bytes"], e["allocated_bytes"]
    err = (pred - meas) / meas * 100
    peaks = " ".join(mib(m["allocated_peak_bytes"]) for m in ranks)
    impl = "foreach" if cfg["foreach"] else "per-tensor"
    print(f"{cfg['name']:<24} {cfg['ranks']:>2} {cfg['zero']:>4} {impl:<10} {peaks:<31} "
          f"{mib(meas)} {mib(pred)} {err:+7.2f}%  {top['peak_phase']} / {e['peak_phase']}  {seconds:4.1f}")
    return err


def print_facts(cfg, ranks):
    """What the stack does per rank: the partition, the buckets, when they appear, the phases."""
    for m in ranks:
        ph = m["phases"]
        share = m["held_params"] / m["params"] * 100
        print(f"  {cfg['name']:<24} r{m['rank']} held {m['held_params']:>8} ({share:5.1f}%) "
              f"buckets {mib(m['bucket_bytes'])} model {mib(m['model_bytes'])} "
              f"wrap {mib(m['wrap_bytes'])} (peak {mib(m['wrap_peak_bytes'])}) "
              f"step base {mib(m['step_base_bytes'])} fwd {mib(ph['forward'])} "
              f"bwd {mib(ph['backward'])} opt {mib(ph['optimizer step'])}")


def measurement_rows(cfg, ranks):
    for m in ranks:
        row = {k: cfg.get(k, "") for k in MEASUREMENT_COLUMNS}
        row.update({k: m[k] for k in MEASUREMENT_COLUMNS if k in m})
        row.update({f"{p.split()[0]}{'_step' if p == 'optimizer step' else ''}_peak_bytes": m["phases"][p]
                    for p in PHASES})
        yield row


def write_measurements(path, rows, torch_version):
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    with open(path, "w", newline="") as f:
        f.write("# PyTorch data parallel measured per rank (tests/validation/ddp.py on ddp_configs.csv;\n"
                "# make validate-ddp writes build/ddp-measurements.csv).\n"
                f"# Machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
                f"glibc {platform.libc_ver()[1]}; Python {platform.python_version()}, torch {torch_version} "
                f"(CPU, gloo); measured {datetime.date.today().isoformat()}.\n")
        f.write(COLUMN_NOTES)
        w = csv.DictWriter(f, fieldnames=MEASUREMENT_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def run(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="ddp.py run")
    ap.add_argument("configs")
    ap.add_argument("--memplan", required=True)
    ap.add_argument("--counter", required=True, help="libmpcount.so")
    ap.add_argument("--quick", action="store_true", help="only the configurations marked quick")
    ap.add_argument("--only", help="only these configurations (comma-separated names)")
    ap.add_argument("--out", help="write the per-rank measurements here")
    o = ap.parse_args(argv)
    only = set(o.only.split(",")) if o.only else None
    cfgs = [c for c in read_ddp_configs(o.configs)
            if (c["quick"] or not o.quick) and (only is None or c["name"] in only)]
    if not cfgs:
        sys.exit("ddp: error: no configurations to run")

    print(f"{'config':<24} {'N':>2} {'zero':>4} {'optimizer':<10} {'peak per rank r0.. (MiB)':<31} "
          f"{'max rank':>7} {'memplan':>7} {'error':>8}  peak phase (max rank / memplan)  s")
    errors, rows, facts, failures, torch_version = [], [], [], [], ""
    t0 = time.time()
    for cfg in cfgs:
        t = time.time()
        ranks, error = run_ranks(cfg, o.counter)
        if error:
            failures.append(cfg["name"])
            print(f"{cfg['name']:<24} FAILED: {error}")
            continue
        e = harness.predict(o.memplan, cfg, "pytorch-cpu", ["--gpus", cfg["ranks"], "--zero", cfg["zero"],
                                                           "--optimizer-impl", "foreach" if cfg["foreach"] else "for-loop"])
        if e["params"] != ranks[0]["params"]:
            sys.exit(f"ddp: error: '{cfg['name']}': memplan counts {e['params']} parameters, "
                     f"the PyTorch model has {ranks[0]['params']}")
        errors.append(abs(print_comparison(cfg, ranks, e, time.time() - t)))
        facts.append((cfg, ranks))
        rows += measurement_rows(cfg, ranks)
        torch_version = ranks[0]["torch"]
    print("per rank: parameters its optimizer holds, DDP's buckets, what the model and the wrap "
          "allocated, then the second step (MiB)")
    for cfg, ranks in facts:
        print_facts(cfg, ranks)
    if o.out and rows:
        write_measurements(o.out, rows, torch_version)
    print(f"({len(cfgs)} configurations in {time.time() - t0:.0f} s)")
    if errors:
        print(f"median abs error {statistics.median(errors):.2f}%, worst {max(errors):.2f}% "
              f"over {len(errors)} configs")
    if failures:
        print(f"ddp: error: failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    if errors and (statistics.median(errors) > 1 or max(errors) > 3):
        print("ddp: error: the per-rank prediction misses its targets (median 1%, worst 3%)", file=sys.stderr)
        return 1
    return 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "rank":
        print(json.dumps(measure_rank(json.loads(sys.argv[2]))))
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "run":
        return run(sys.argv[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
