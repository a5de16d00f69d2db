#!/usr/bin/env python3
"""Full checkpointing, reentrant or not: what each holds at the step's peaks, on the CPU.

  reentrant_probe.py run --counter LIB [--out FILE]
  reentrant_probe.py measure CONFIG_JSON     (under LD_PRELOAD=LIB)

transformers' gradient_checkpointing runs each decoder layer under
torch.utils.checkpoint, reentrant or not as gradient_checkpointing_kwargs
says (TRL's configs pass use_reentrant False; PyTorch 1.13's default is
True). memplan has one --checkpointing full for both; this measures the two
with harness.py's models (hfmodels.build, every block checkpointed) and the
counting allocator: the forward's and the backward's peaks of the second of
two AdamW steps, bytes live above the count before the model is built. The
difference between the variants is what a separate setting would model.
"""
import functools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SHAPES = {
    "llama-s2": {"family": "llama", "layers": 4, "hidden": 256, "heads": 8, "kv_heads": 8, "ffn": 688, "vocab": 4000},
    "gpt2-s2": {"family": "gpt2", "layers": 4, "hidden": 256, "heads": 8, "kv_heads": 8, "ffn": 1024, "vocab": 8192},
}
RUNS = [("llama-s2", 4, 256, 0), ("llama-s2", 4, 256, 8), ("gpt2-s2", 4, 256, 0), ("llama-s2", 2, 512, 0)]
COLS = ["name", "family", "batch", "seq", "lora_rank", "reentrant", "forward_peak_bytes", "backward_peak_bytes",
        "torch"]


def configs():
    for shape, b, t, rank in RUNS:
        for reentrant in (1, 0):
            cfg = dict(SHAPES[shape], max_pos=1024, lora_rank=rank, lora_targets="all" if rank else "",
                       dropout=0.0, batch=b, seq=t, reentrant=reentrant)
            cfg["name"] = f"{shape}-b{b}-t{t}" + (f"-lora{rank}" if rank else "") + ("-reentrant" if reentrant else
                                                                                     "-nonreentrant")
            yield cfg


def measure(cfg):
    import torch
    import harness
    import hfmodels

    torch.utils.checkpoint.checkpoint = functools.partial(torch.utils.checkpoint.checkpoint,
                                                          use_reentrant=bool(cfg["reentrant"]))
    current, peak, reset = harness.counters("cpu")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ids = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]))
    base = current()
    model = hfmodels.build(cfg)
    model.train()
    model.checkpointing, model.checkpoint_every = True, 1
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, foreach=True)
    for _ in range(2):
        reset()
        loss = model(ids, ids)[0]
        fwd = peak() - base
        reset()
        loss.backward()
        del loss
        bwd = peak() - base
        opt.step()
        opt.zero_grad(set_to_none=True)
    row = {k: cfg[k] for k in ("name", "family", "batch", "seq", "lora_rank", "reentrant")}
    row.update(forward_peak_bytes=fwd, backward_peak_bytes=bwd, torch=torch.__version__)
    return row


def line(r):
    return f"{r['name']:40} forward {r['forward_peak_bytes'] / 1048576:8.2f} MiB, backward {r['backward_peak_bytes'] / 1048576:8.2f} MiB"


if __name__ == "__main__":
    import probe
    sys.exit(probe.main(__file__, __doc__, measure, configs, os.path.join(HERE, "reentrant_probe.csv"), COLS, line))
