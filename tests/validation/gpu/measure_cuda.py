#!/usr/bin/env python3
"""Measure real transformers + PEFT training steps on a CUDA GPU.

  measure_cuda.py run CONFIGS.csv --out DIR [--only NAME,...] [--timeout S]
      every configuration in a fresh process (the allocator, the CUDA context
      and the peak counters start clean, as in a real run); writes
      DIR/measurements.csv (one row per run) and DIR/measurements.json (the
      same, with every phase, the allocator's segments and the versions), and
      DIR/probe.json (the CUDA context and cuBLAS workspace alone).
  measure_cuda.py one CONFIG_JSON     (run by `run`) one configuration
  measure_cuda.py probe               (run by `run`) the context alone

Each run builds the model from models/MODEL.json with random weights on the
GPU (transformers AutoModelForCausalLM.from_config), wraps it with PEFT's
get_peft_model when lora_rank > 0, and trains three steps on random token ids
of the configured shape (labels = the ids; no padding mask), clipping the
gradient norm to 1.0 as the Trainer does by default. What is read:
  allocated  torch.cuda.max_memory_allocated(), per phase (load, then forward,
             backward and optimizer step of each step) and over the run;
  reserved   torch.cuda.max_memory_reserved(), likewise;
  device     NVML's used memory (what nvidia-smi shows) at the end of each
             phase, minus what was used before this process touched the GPU;
             its peak is the reserved peak plus what the process held outside
             the allocator (context, cuBLAS/cuDNN handles, kernels' modules).
Nothing here reads memplan: tests/validation/gpu/compare.py compares the
table with memplan's predictions on the CPU, from the committed files.
CI never runs this file; it needs a CUDA GPU, torch, transformers and peft.
"""
import csv
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ["name", "model", "batch", "seq", "precision", "optim", "ckpt", "attention",
           "lora_rank", "lora_targets", "lora_dropout", "expandable", "params", "trainable",
           "load_allocated_bytes", "load_reserved_bytes",
           "allocated_peak_bytes", "reserved_peak_bytes", "device_peak_bytes",
           "step_allocated_peak_bytes", "step_reserved_peak_bytes", "peak_phase",
           "context_bytes", "device", "torch", "transformers", "peft", "error"]
TARGETS = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj",
           "gate": "gate_proj", "up": "up_proj", "down": "down_proj", "head": "lm_head"}
GROUPS = {"attn": "q,k,v,o", "mlp": "gate,up,down", "all": "q,k,v,o,gate,up,down"}


def nvml_used():
    """Bytes NVML reports used on GPU 0 (nvidia-smi's figure), or None."""
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return int(pynvml.nvmlDeviceGetMemoryInfo(h).used)
    except Exception:
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                  "-i", "0"], capture_output=True, text=True, timeout=20).stdout
            return int(out.split()[0]) << 20
        except Exception:
            return None


def versions():
    import torch
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    for mod in ("transformers", "peft"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:
            out[mod] = ""
    return out


def probe():
    """The CUDA context and the first matmul's cuBLAS workspace, alone."""
    before = nvml_used()
    import torch
    torch.cuda.init()
    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    after_ctx = nvml_used()
    res_ctx = torch.cuda.memory_reserved()
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    held = torch.cuda.memory_allocated()
    b = a @ a
    torch.cuda.synchronize()
    after_mm = nvml_used()
    ws = torch.cuda.memory_allocated() - held - b.numel() * b.element_size()
    del x, a, b
    out = {"nvml_before": before, "nvml_after_context": after_ctx, "reserved_after_context": res_ctx,
           "context_bytes": None if before is None else after_ctx - before - res_ctx,
           "nvml_after_matmul": after_mm, "reserved_after_matmul": torch.cuda.memory_reserved(),
           "cublas_workspace_allocated": ws, **versions()}
    props = torch.cuda.get_device_properties(0)
    out["total_memory"] = props.total_memory
    out["capability"] = "%d.%d" % (props.major, props.minor)
    return out


def segments_summary(torch):
    """The allocator's segments at the end of the run, per pool: count, bytes, bytes in use."""
    out = {}
    for s in torch.cuda.memory_snapshot():
        pool = out.setdefault(s.get("segment_type", "?"), {"segments": 0, "total": 0, "allocated": 0})
        pool["segments"] += 1
        pool["total"] += s["total_size"]
        pool["allocated"] += s["allocated_size"]
    return out


def one(cfg):
    before = nvml_used()
    import torch
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    context = None if before is None else nvml_used() - before - torch.cuda.memory_reserved()
    import transformers
    dt = torch.bfloat16 if cfg["precision"] == "pure-bf16" else torch.float32
    amp = cfg["precision"] == "amp-bf16"

    with open(os.path.join(HERE, "models", cfg["model"] + ".json")) as f:
        conf = {k: v for k, v in json.load(f).items() if not k.startswith("_")}
    hf = transformers.AutoConfig.for_model(conf.pop("model_type"), **conf)
    hf.use_cache = False
    impl = cfg["attention"]
    torch.manual_seed(0)
    with torch.device("cuda"):
        try:
            model = transformers.AutoModelForCausalLM.from_config(hf, dtype=dt, attn_implementation=impl)
        except TypeError:
            model = transformers.AutoModelForCausalLM.from_config(hf, torch_dtype=dt, attn_implementation=impl)
    if any(p.dtype != dt for p in model.parameters()):
        model.to(dt)
    params = sum(p.numel() for p in model.parameters())
    rank = int(cfg["lora_rank"])
    if cfg["ckpt"] == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
        if rank:
            model.enable_input_require_grads()  # the frozen embedding's output must require grad
    if rank:
        import peft
        names = ",".join(GROUPS.get(t, t) for t in cfg["lora_targets"].split(","))
        lc = peft.LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=float(cfg["lora_dropout"]),
                             target_modules=[TARGETS[t] for t in names.split(",")], bias="none",
                             task_type="CAUSAL_LM")
        model = peft.get_peft_model(model, lc)
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    n_trainable = sum(p.numel() for p in trainable)
    fused = cfg["optim"] == "adamw-fused"
    opt = torch.optim.AdamW(trainable, lr=1e-5, fused=fused, foreach=not fused)

    b, t = int(cfg["batch"]), int(cfg["seq"])
    ids = torch.randint(0, hf.vocab_size, (b, t), device="cuda")
    torch.cuda.synchronize()
    phases = []

    def phase(name):
        torch.cuda.synchronize()
        used = nvml_used()
        phases.append({"phase": name, "allocated": torch.cuda.max_memory_allocated(),
                       "reserved": torch.cuda.max_memory_reserved(),
                       "allocated_end": torch.cuda.memory_allocated(),
                       "reserved_end": torch.cuda.memory_reserved(),
                       "nvml_end": used})
        torch.cuda.reset_peak_memory_stats()

    phase("load")
    for step in (1, 2, 3):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = model(input_ids=ids, labels=ids).loss  # the logits are dropped, as the Trainer does
        phase("step%d forward" % step)
        loss.backward()
        del loss
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)  # the Trainer's max_grad_norm default
        phase("step%d backward" % step)
        opt.step()
        phase("step%d optimizer step" % step)
        opt.zero_grad(set_to_none=True)
    stats = torch.cuda.memory_stats()

    def devpeak(p):
        if before is None or p["nvml_end"] is None:
            return None
        return p["reserved"] + (p["nvml_end"] - before - p["reserved_end"])

    top = max(phases, key=lambda p: p["allocated"])
    steps = [p for p in phases if not p["phase"].startswith(("load", "step1"))]
    dev = [devpeak(p) for p in phases]
    return {**cfg, "params": params, "trainable": n_trainable,
            "load_allocated_bytes": phases[0]["allocated"], "load_reserved_bytes": phases[0]["reserved"],
            "allocated_peak_bytes": top["allocated"],
            "reserved_peak_bytes": max(p["reserved"] for p in phases),
            "device_peak_bytes": None if None in dev else max(dev),
            "step_allocated_peak_bytes": max(p["allocated"] for p in steps),
            "step_reserved_peak_bytes": max(p["reserved"] for p in steps),
            "peak_phase": top["phase"], "context_bytes": context, "phases": phases,
            "segments": segments_summary(torch),
            "stats": {k: stats.get(k) for k in ("num_alloc_retries", "num_device_alloc", "num_device_free",
                                                 "segment.all.peak", "requested_bytes.all.peak",
                                                 "inactive_split_bytes.all.peak", "active_bytes.all.peak")},
            "nvml_before": before, **versions()}


def run(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="measure_cuda.py run")
    ap.add_argument("configs")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", help="names, comma-separated")
    ap.add_argument("--timeout", type=int, default=240, help="seconds per run")
    o = ap.parse_args(argv)
    with open(o.configs, newline="") as f:
        cfgs = list(csv.DictReader(line for line in f if not line.startswith("#")))
    if o.only:
        wanted = set(o.only.split(","))
        cfgs = [c for c in cfgs if c["name"] in wanted]
    os.makedirs(o.out, exist_ok=True)

    def child(args, env_extra=None):
        env = dict(os.environ, PYTHONUNBUFFERED="1", **(env_extra or {}))
        p = subprocess.run([sys.executable, os.path.abspath(__file__)] + args, capture_output=True,
                           text=True, env=env, timeout=o.timeout)
        if p.returncode != 0:
            raise RuntimeError(p.stderr.strip()[-1500:])
        return json.loads(p.stdout.strip().splitlines()[-1])

    t0 = time.time()
    try:
        pr = child(["probe"])
    except Exception as e:  # noqa: BLE001 - the runs still go on
        pr = {"error": str(e)}
    with open(os.path.join(o.out, "probe.json"), "w") as f:
        json.dump(pr, f, indent=1)
    print("probe:", json.dumps(pr), flush=True)
    results = []
    for c in cfgs:
        t1 = time.time()
        env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"} if c["expandable"] == "1" else {}
        try:
            r = child(["one", json.dumps(c)], env)
        except Exception as e:  # noqa: BLE001 - one failed run must not lose the others
            r = {**c, "error": str(e).replace("\n", " | ")[-600:]}
        results.append(r)
        gib = lambda k: "%.3f" % (r[k] / 2**30) if r.get(k) is not None else "-"  # noqa: E731
        print("%-26s alloc %s GiB  reserved %s GiB  device %s GiB  (%s, %.0f s)%s" % (
            c["name"], gib("allocated_peak_bytes"), gib("reserved_peak_bytes"), gib("device_peak_bytes"),
            r.get("peak_phase", "-"), time.time() - t1, "  ERROR " + r["error"][:300] if r.get("error") else ""),
            flush=True)
        with open(os.path.join(o.out, "measurements.json"), "w") as f:
            json.dump({"probe": pr, "runs": results}, f, indent=1)
        with open(os.path.join(o.out, "measurements.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
            w.writeheader()
            w.writerows(results)
    print("%d runs in %.0f s" % (len(results), time.time() - t0))
    return 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "one":
        print(json.dumps(one(json.loads(sys.argv[2]))))
        return 0
    if len(sys.argv) == 2 and sys.argv[1] == "probe":
        print(json.dumps(probe()))
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "run":
        return run(sys.argv[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
