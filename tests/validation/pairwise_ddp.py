#!/usr/bin/env python3
"""Measure DPO and CPO steps per rank under DistributedDataParallel on the CPU (issue 34, requirement 4).

  pairwise_ddp.py run --counter LIB [--only NAME,...] [--out FILE]
      for every configuration of CONFIGS below, starts one process per rank
      (gloo on 127.0.0.1, as ddp.py does) with the counting allocator
      preloaded, prints every rank's peak and the highest, runs the checks,
      and writes FILE (default: pairwise_ddp_measurements.csv beside this
      script); exit 1 when a rank failed or a check fails. No memplan here:
      pairwise_ddp_compare.py compares the CSV with it, without PyTorch.
  pairwise_ddp.py rank CONFIG_JSON
      (run by `run`, once per rank, under LD_PRELOAD=LIB with RANK,
      WORLD_SIZE, MASTER_ADDR and MASTER_PORT set) one rank: two steps, the
      second measured; prints one JSON object.

A rank is pairwise.py's step (its build_models, make_step and summary,
imported: the batch of B pairs = 2B rows, the policy forward, the reference
forward under no_grad, TRL's losses, the per-phase peaks) run the way TRL runs
it on several processes, read at huggingface/trl@f2cd57710ae345ea6428ae95363267fcf38a3dc8
and huggingface/accelerate@16cb6eb80dd9aa8b4df1a63ef57863e455d53b83:
  - the policy is wrapped in DistributedDataParallel with its defaults
    (bucket_cap_mb=25, gradient_as_bucket_view=False), as ddp.py wraps it:
    the Trainer prepares the model with accelerator.prepare, whose
    prepare_model wraps a model with trainable parameters in DDP on a
    multi-process run (accelerator.py:1876-1894, MULTI_CPU: 2051-2053);
    the policy's forward goes through the wrapper (dpo_trainer.py:1340,
    `outputs = model(**model_kwargs)`, model being the wrapped one);
  - the reference copy (dpo-ref) is NOT wrapped: dpo_trainer.py:936 prepares
    it with accelerator.prepare_model(ref_model, evaluation_mode=True), and
    prepare_model's DDP wrap sits under `if not evaluation_mode:`
    (accelerator.py:1876); evaluation mode only places it and applies mixed
    precision / torch.compile. Each rank holds the whole reference (with
    DeepSpeed below ZeRO-3 as well: trl/models/utils.py:236-277 initializes
    it with stage 0). It runs under torch.no_grad on the rank's own rows
    (dpo_trainer.py:1373-1382, self.ref_model(...));
  - dpo-lora's reference is the unwrapped policy with its adapters disabled
    (dpo_trainer.py:1374-1380: accelerator.unwrap_model(model), then
    self.model(...)): no second model, no trip through DDP;
  - dpo-precomputed takes the reference sums with the unwrapped policy before
    training (dpo_trainer.py:1137-1142, self.ref_model or self.model);
  - cpo (CPOTrainer's defaults) has no reference;
  - the optimizer is AdamW(lr=1e-4, foreach=True) as in pairwise.py, or with
    zero=1 ZeroRedundancyOptimizer(AdamW) over the policy's parameters
    (ddp.make_optimizer), torch's ZeRO-1: each rank steps its partition.
Each rank gets its own B pairs (the batch drawn with seed 1 + rank) and the
same initial weights (seed 0 before the build; DDP broadcasts rank 0's
anyway), so every DPO rank's first loss is ln 2. Counting is ddp.py's: each
rank relative to what it holds after the process group's first collective,
just before the models are built; one thread.

The checks (exit 1): every DPO rank's first loss is ln 2; dpo-ref's ranks
hold the reference unsharded, rank by rank before the step, its weights' bytes
more than dpo-precomputed's of the same shape, ranks and zero (within 2% +
64 KiB), and peak above it; the reference forward rises by at least its own
logits; DDP's buckets hold every trainable parameter once (the LoRA adapters
only, not the frozen base nor the reference); under ZeRO the ranks' partitions
add up to the trainable parameters; and without ZeRO each rank holds before
the step what the single-process measurement (pairwise_measurements.csv)
held, plus the buckets (within 2% of them + 256 KiB).
"""
import csv
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ddp  # noqa: E402  (the rank machinery: free_port, wait_all, make_optimizer, bucket_bytes)
import harness  # noqa: E402  (the counter)
import pairwise  # noqa: E402  (the step: build_models, make_step, make_batch, summary, row_for)

RANK_TIMEOUT_S = 60  # a configuration's ranks take under 10 s here
MODES = ("dpo-ref", "dpo-precomputed", "dpo-lora", "cpo")
SHAPES = ("s2", "s3", "s4")


def _configs():
    single = {c["name"]: c for c in pairwise.CONFIGS}
    out = []

    def add(shape, mode, ranks, zero):
        c = dict(single[f"llama-{shape}-{mode}"])
        c.update(name=f"llama-{shape}-{mode}-{'zero' if zero else 'ddp'}{ranks}", single=c["name"],
                 ranks=ranks, zero=zero, optimizer="adamw", foreach=1)
        out.append(c)

    for shape in SHAPES:
        for mode in MODES:
            add(shape, mode, 2, 0)
    add("s2", "dpo-ref", 2, 1)          # ZeRO-1: the optimizer state sharded, the reference whole
    add("s2", "dpo-precomputed", 2, 1)
    add("s3", "dpo-ref", 4, 0)          # 4 ranks, one shape
    add("s3", "dpo-precomputed", 4, 0)
    return out


CONFIGS = _configs()

SETTINGS = pairwise.COLUMNS[:pairwise.COLUMNS.index("lora_targets") + 1] + ["ranks", "zero"]
COLUMNS = SETTINGS + [
    "params", "trainable_params", "held_params", "param_bytes", "ref_param_bytes", "grad_bytes", "adam_bytes",
    "logits_bytes", "bucket_bytes", "wrap_bytes", "step_base_bytes", "policy_forward_peak_bytes",
    "reference_forward_peak_bytes", "reference_forward_rise_bytes", "backward_peak_bytes",
    "optimizer_step_peak_bytes", "allocated_peak_bytes", "peak_phase", "peak_rank", "rank_peak_bytes",
    "rank_step_base_bytes", "rank_held_params", "rank_first_loss", "first_loss", "torch",
]

COLUMN_NOTES = """\
# One row per configuration. Bytes are counted at malloc level in each rank's own
# process (mpcount.c preloaded), relative to what that rank held after the process
# group's first collective, just before the models were built.
#   name..lora_targets  pairwise_measurements.csv's settings, per rank (pairs = B per rank)
#   ranks, zero         world size; zero 1 = ZeroRedundancyOptimizer(AdamW) over the policy
#   params..logits_bytes as in pairwise_measurements.csv, except held_params (what the
#                       highest rank's optimizer steps: its ZeRO partition) and adam_bytes
#                       (8 bytes per held parameter)
#   bucket_bytes        DDP's gradient buckets (its logging data's bucket_sizes, summed)
#   wrap_bytes          what DistributedDataParallel(policy) left allocated
#   step_base_bytes..peak_phase  the highest rank's, as pairwise.py records them
#   peak_rank           the rank with the highest peak (allocated_peak_bytes is its peak)
#   rank_*              every rank's figure, rank 0 first, space-separated
"""


# ------------------------------------------------------------- one rank

def measure_rank(cfg):
    import datetime as dt

    import torch
    import torch.distributed as dist
    import torch.distributed.optim  # noqa: F401  (imported before the baseline)
    from torch.nn.parallel import DistributedDataParallel
    import hfmodels

    hfmodels.causal_lm_loss = pairwise._no_lm_loss  # TRL calls the model without labels
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=dt.timedelta(seconds=ddp.RANK_TIMEOUT_S))
    counters = harness.counters("cpu")
    current, peak, reset = counters
    torch.set_num_threads(1)
    torch.manual_seed(1 + rank)
    batch = pairwise.make_batch(cfg)  # each rank its own B pairs
    torch.manual_seed(0)  # the same initial weights everywhere: policy == reference on every rank
    dist.barrier()  # gloo's first collective: its buffers exist before the baseline

    base = current()
    model, ref = pairwise.build_models(cfg)
    model_bytes = current() - base
    reset()
    policy = DistributedDataParallel(model)  # defaults: bucket_cap_mb=25, gradient_as_bucket_view=False
    wrap_peak = peak() - base - model_bytes
    dist.barrier()  # gloo's worker thread may still hold the flat copy wrapping broadcast
    wrap_bytes = current() - base - model_bytes
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt, held = ddp.make_optimizer(cfg, trainable)
    step = pairwise.make_step(cfg, model, ref, opt, batch, counters, base, policy=policy)
    _, first_loss = step()  # allocates the optimizer state and rebuilds DDP's buckets
    step_base = current() - base
    phases, _ = step()
    out = pairwise.summary(cfg, model, ref, trainable, step_base, phases, first_loss)
    out.update(rank=rank, held_params=sum(p.numel() for p in held), bucket_bytes=ddp.bucket_bytes(policy),
               model_bytes=model_bytes, wrap_bytes=wrap_bytes, wrap_peak_bytes=wrap_peak)
    dist.barrier()  # every rank is past its last collective; main() then exits without tearing down
    return out


# ------------------------------------------------------------- the ranks of one configuration

def run_ranks(cfg, counter):
    """Every rank of CFG in its own process (ddp.py's run_ranks, this script's rank)."""
    n = cfg["ranks"]
    env = dict(os.environ, OMP_NUM_THREADS="1", LD_PRELOAD=counter, MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(ddp.free_port()), WORLD_SIZE=str(n), GLOO_SOCKET_IFNAME="lo")
    with tempfile.TemporaryDirectory(prefix="memplan-pairwise-ddp-") as tmp:
        procs, logs = [], []
        for r in range(n):
            out, err = (open(os.path.join(tmp, f"{r}.{x}"), "w+") for x in ("out", "err"))
            logs.append((out, err))
            procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "rank", json.dumps(cfg)],
                                          stdout=out, stderr=err, env=dict(env, RANK=str(r))))
        error = wait_all(procs, logs)
        results = None if error else [json.loads(ddp.read(out)) for out, _ in logs]
        for out, err in logs:
            out.close()
            err.close()
    return results, error


def wait_all(procs, logs):
    """ddp.wait_all with a shorter clock (a configuration takes seconds); on time out every rank
    still running dumps its Python stacks (faulthandler on SIGUSR1) into the error first."""
    import signal

    deadline = time.time() + RANK_TIMEOUT_S
    while any(p.poll() is None for p in procs):
        failed = [r for r, p in enumerate(procs) if p.poll() not in (None, 0)]
        if failed:
            break
        if time.time() > deadline:
            hung = [r for r, p in enumerate(procs) if p.poll() is None]
            for r in hung:
                procs[r].send_signal(signal.SIGUSR1)
            time.sleep(1)
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            stacks = "\n".join(f"rank {r}:\n{ddp.read(logs[r][1]).strip()}" for r in hung)
            return f"timed out after {RANK_TIMEOUT_S} s; ranks {hung} were still running:\n{stacks}"
        time.sleep(0.05)
    return ddp.wait_all(procs, logs)


def row_for(cfg, ranks):
    top = max(ranks, key=lambda m: m["allocated_peak_bytes"])
    row = {k: v for k, v in pairwise.row_for(cfg, top).items() if k in COLUMNS}
    joined = lambda key, fmt=str: " ".join(fmt(m[key]) for m in ranks)  # noqa: E731
    row.update(ranks=cfg["ranks"], zero=cfg["zero"], held_params=top["held_params"],
               adam_bytes=8 * top["held_params"], bucket_bytes=top["bucket_bytes"], wrap_bytes=top["wrap_bytes"],
               peak_rank=top["rank"], rank_peak_bytes=joined("allocated_peak_bytes"),
               rank_step_base_bytes=joined("step_base_bytes"), rank_held_params=joined("held_params"),
               rank_first_loss=joined("first_loss", lambda x: f"{x:.6f}"))
    return row


# ------------------------------------------------------------- checks

def ints(s):
    return [int(x) for x in str(s).split()]


def checks(rows, single_csv):
    """What must hold; returns the failures."""
    by = {r["name"]: r for r in rows}
    single = {}
    if single_csv and os.path.exists(single_csv):
        with open(single_csv) as f:
            single = {r["name"]: r for r in csv.DictReader(f)}
    bad = []
    for r in rows:
        name = r["name"]
        if r["mode"].startswith("dpo"):
            for i, x in enumerate(r["rank_first_loss"].split()):
                if abs(float(x) - math.log(2)) > 1e-4:
                    bad.append(f"{name}: rank {i}'s first DPO loss {x} is not ln 2 (policy == reference)")
        if r["reference_forward_rise_bytes"] != "" and r["reference_forward_rise_bytes"] < r["logits_bytes"]:
            bad.append(f"{name}: the reference forward rose {r['reference_forward_rise_bytes']} bytes, "
                       f"less than its own logits ({r['logits_bytes']})")
        want = 4 * r["trainable_params"]
        if abs(r["bucket_bytes"] - want) > 0.01 * want:
            bad.append(f"{name}: DDP's buckets are {r['bucket_bytes']} bytes, the trainable parameters {want}")
        held = ints(r["rank_held_params"])
        if sum(held) != (r["trainable_params"] * (r["ranks"] if not r["zero"] else 1)):
            bad.append(f"{name}: the ranks' optimizers hold {held} parameters of {r['trainable_params']}")
        if r["mode"] == "dpo-ref":
            other = by.get(name.replace("dpo-ref", "dpo-precomputed"))
            if other:
                if not r["allocated_peak_bytes"] > other["allocated_peak_bytes"]:
                    bad.append(f"{name}: peak not above {other['name']}'s")
                for i, (a, b) in enumerate(zip(ints(r["rank_step_base_bytes"]), ints(other["rank_step_base_bytes"]))):
                    if abs(a - b - r["ref_param_bytes"]) > 0.02 * r["ref_param_bytes"] + 65536:
                        bad.append(f"{name}: rank {i} holds {a - b} bytes more than {other['name']} before the "
                                   f"step, the reference's weights are {r['ref_param_bytes']} (sharded?)")
        s = single.get(name.rsplit("-", 1)[0])
        if s and not r["zero"]:
            for i, a in enumerate(ints(r["rank_step_base_bytes"])):
                extra = a - int(s["step_base_bytes"])
                if abs(extra - r["bucket_bytes"]) > 0.02 * r["bucket_bytes"] + 262144:
                    bad.append(f"{name}: rank {i} holds {extra} bytes more than one process "
                               f"({s['name']}) before the step; DDP's buckets are {r['bucket_bytes']}")
    return bad


# ------------------------------------------------------------- running

def write_csv(path, rows, torch_version):
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        f.write("# DPO and CPO steps measured per rank under DistributedDataParallel (tests/validation/"
                "pairwise_ddp.py;\n# make validate-pairwise-ddp writes build/pairwise-ddp-measurements.csv).\n"
                f"# Machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
                f"glibc {platform.libc_ver()[1]}; Python {platform.python_version()}, torch {torch_version} "
                f"(CPU, gloo); measured {datetime.date.today().isoformat()}.\n")
        f.write(COLUMN_NOTES)
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def run(argv):
    import probe
    o, cfgs = probe.run_args("pairwise_ddp.py", os.path.join(HERE, "pairwise_ddp_measurements.csv"), CONFIGS, argv,
                             [("--single", {"default": os.path.join(HERE, "pairwise_measurements.csv"),
                                            "help": "the single-process measurements the zero-0 ranks are "
                                                    "checked against"})])
    counter = o.counter
    print(f"{'config':<30} {'N':>2} {'zero':>4}  {'peak per rank r0.. (MiB)':<36} {'highest':>8} "
          f"{'phase':<18} {'base':>8} {'ref fwd':>8} {'buckets':>8} {'s':>5}")
    t0, rows, failures, torch_version = time.time(), [], [], ""
    for cfg in cfgs:
        t = time.time()
        ranks, error = run_ranks(cfg, counter)
        if error:
            failures.append(cfg["name"])
            print(f"{cfg['name']:<30} FAILED: {error}")
            continue
        r = row_for(cfg, ranks)
        rows.append(r)
        torch_version = r["torch"]
        peaks = " ".join(pairwise.mib(x).strip() for x in ints(r["rank_peak_bytes"]))
        print(f"{r['name']:<30} {r['ranks']:>2} {r['zero']:>4}  {peaks:<36} {pairwise.mib(r['allocated_peak_bytes'])} "
              f"{r['peak_phase']:<18} {pairwise.mib(r['step_base_bytes'])} {pairwise.mib(r['reference_forward_rise_bytes'])} "
              f"{pairwise.mib(r['bucket_bytes'])} {time.time() - t:5.1f}")
    if rows:
        write_csv(o.out, rows, torch_version)
    bad = checks(rows, o.single)
    for line in bad:
        print("CHECK FAILED: " + line)
    print(f"({len(rows)} configurations in {time.time() - t0:.0f} s; {len(bad)} checks failed)")
    if failures:
        print(f"pairwise_ddp: error: failed: {', '.join(failures)}", file=sys.stderr)
    return 1 if bad or failures else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "rank":
        import faulthandler
        import signal
        faulthandler.register(signal.SIGUSR1)  # run's time out asks for the stacks
        print(json.dumps(measure_rank(json.loads(sys.argv[2]))), flush=True)
        # Out at once: torn down (destroy_process_group, then the wrapper's and ZeRO's destructors as
        # measure_rank's locals went), a rank hung now and then with no Python frame left, 3 of 6
        # runs of llama-s2-dpo-precomputed-zero2 here. The measurement is complete by then.
        os._exit(0)
    if len(sys.argv) >= 2 and sys.argv[1] == "run":
        return run(sys.argv[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
