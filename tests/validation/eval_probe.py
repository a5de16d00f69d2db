#!/usr/bin/env python3
"""What an evaluation between training steps allocates, on the CPU.

  eval_probe.py run --counter LIB [--out FILE]
  eval_probe.py measure CONFIG_JSON     (under LD_PRELOAD=LIB)

transformers' Trainer evaluates after an optimizer step and zero_grad (the
gradients set to None): prediction_step runs the model under torch.no_grad()
with the labels, keeps the loss and, when evaluate() is called without
compute_metrics, drops the logits (evaluate passes prediction_loss_only=True
then; transformers' src/transformers/trainer.py). Here: harness.py's models
(hfmodels.build), two AdamW steps at the training batch, the gradients set to
None, then one forward of the evaluation batch under no_grad with the labels
(autocast when the precision is amp-bf16), as prediction_step does. Recorded:
resident_bytes (allocated before the evaluation: weights and AdamW state),
eval_rise_bytes (the evaluation forward's peak above it), and the training
step's peak for reference (train_peak_bytes). Bytes are live relative to the
count before the model is built; counting is harness.py's (mpcount.c).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

BASE = {"kv_heads": 8, "max_pos": 1024, "accum": 1, "lora_rank": 0, "lora_targets": "", "dropout": 0.0,
        "checkpointing": "none", "checkpoint_every": 1, "optimizer": "adamw"}
SHAPES = {
    "llama-s2": {"family": "llama", "layers": 4, "hidden": 256, "heads": 8, "ffn": 688, "vocab": 4000},
    "llama-gqa": {"family": "llama", "layers": 2, "hidden": 256, "heads": 8, "kv_heads": 2, "ffn": 688,
                  "vocab": 8000},
    "gpt2-s2": {"family": "gpt2", "layers": 4, "hidden": 256, "heads": 8, "ffn": 1024, "vocab": 8192},
}
RUNS = [  # shape, train batch, eval batch, seq, precision, lora rank
    ("llama-s2", 1, 8, 128, "fp32", 0),
    ("llama-s2", 2, 2, 128, "fp32", 0),
    ("llama-s2", 1, 8, 128, "amp-bf16", 0),
    ("llama-s2", 1, 8, 128, "fp32", 8),
    ("llama-gqa", 1, 4, 256, "fp32", 0),
    ("gpt2-s2", 1, 8, 128, "fp32", 0),
    ("gpt2-s2", 1, 16, 64, "amp-bf16", 0),
]
COLS = ["name", "family", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "batch", "eval_batch", "seq",
        "precision", "lora_rank", "resident_bytes", "eval_rise_bytes", "train_peak_bytes", "torch"]


def configs():
    for shape, b, eb, t, prec, rank in RUNS:
        cfg = dict(BASE, **SHAPES[shape])
        cfg.update(name=f"{shape}-b{b}-eval{eb}-t{t}-{prec}" + (f"-lora{rank}" if rank else ""), batch=b,
                   eval_batch=eb, seq=t, precision=prec, lora_rank=rank, lora_targets="all" if rank else "")
        yield cfg


def measure(cfg):
    import torch
    import harness
    import hfmodels

    current, peak, reset = harness.counters("cpu")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    amp = cfg["precision"] == "amp-bf16"
    ids = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]))
    eval_ids = torch.randint(0, cfg["vocab"], (cfg["eval_batch"], cfg["seq"]))
    base = current()
    model = hfmodels.build(cfg)
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, foreach=True)
    train_peak = 0
    for _ in range(2):
        reset()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = model(ids, ids)[0]
        loss.backward()
        del loss
        opt.step()
        opt.zero_grad(set_to_none=True)
        train_peak = peak() - base
    model.eval()
    resident = current() - base
    reset()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        out = model(eval_ids, eval_ids)
        loss = out[0]
        del out  # prediction_loss_only: the logits go
    rise = peak() - base - resident
    del loss
    row = {k: cfg[k] for k in COLS if k in cfg}
    row.update(resident_bytes=resident, eval_rise_bytes=rise, train_peak_bytes=train_peak,
               torch=torch.__version__)
    return row


def line(r):
    return (f"{r['name']:36} resident {r['resident_bytes'] / 1048576:8.2f} MiB, evaluation +"
            f"{r['eval_rise_bytes'] / 1048576:7.2f} MiB (train peak {r['train_peak_bytes'] / 1048576:.2f})")


if __name__ == "__main__":
    import probe
    sys.exit(probe.main(__file__, __doc__, measure, configs, os.path.join(HERE, "eval_probe.csv"), COLS, line))
