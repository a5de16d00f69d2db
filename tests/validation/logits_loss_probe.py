#!/usr/bin/env python3
"""Bytes per logit of a causal LM's next-token loss, three ways, on the CPU.

  logits_loss_probe.py run --counter LIB [--out FILE]
  logits_loss_probe.py measure CONFIG_JSON     (under LD_PRELOAD=LIB)

The logits of R rows x T positions x V entries come out of a head (a matmul of
the last hidden state) in the model's dtype, then the loss as each kind of code
takes it (memplan --logits):
  model         cross_entropy on the logits as they are, the targets shifted
                instead (a plain loop on a 16-bit model without autocast)
  fp32          an fp32 copy, then cross_entropy with the labels shifted by
                padding (transformers' ForCausalLMLoss,
                huggingface/transformers@0114da07 src/transformers/loss/loss_utils.py)
  fp32-shifted  an fp32 copy, then a shifted .contiguous() copy of it, then
                cross_entropy (transformers' DefaultCrossEntropyLoss,
                huggingface/transformers@07478e04 src/transformers/loss_utils.py,
                and the modeling code before it, still in remote-code models)
Recorded, each divided by R x T x V: fwd_peak (the largest count from the
head's output to the loss, the logits included), after_loss (alive once the
loss is computed and the caller's references dropped: what the backward
starts from), bwd_peak (the largest count during the loss's backward down to
the head's output gradient; the head is a leaf here). Counting is harness.py's.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
SHAPES = [(4, 128, 4000), (2, 256, 8000), (8, 64, 32000)]
KINDS = ["model", "fp32", "fp32-shifted"]


def configs():
    for dtype in ("bf16", "fp32"):
        for kind in KINDS:
            for r, t, v in SHAPES:
                yield {"rows": r, "seq": t, "vocab": v, "dtype": dtype, "kind": kind}


def measure(cfg):
    import torch
    import torch.nn.functional as F
    from harness import counters

    torch.manual_seed(0)
    torch.set_num_threads(1)
    current, peak, reset = counters("cpu")
    dt = torch.float32 if cfg["dtype"] == "fp32" else torch.bfloat16
    R, T, V, H = cfg["rows"], cfg["seq"], cfg["vocab"], 64
    hidden = torch.randn(R, T, H, dtype=dt)
    head = torch.randn(H, V, dtype=dt, requires_grad=True)
    labels = torch.randint(0, V, (R, T))
    base = current()
    reset()
    logits = hidden @ head
    if cfg["kind"] == "model":
        shifted = F.pad(labels, (0, 1), value=-100)[:, 1:].contiguous()  # the targets shifted, not the logits
        loss = F.cross_entropy(logits.view(-1, V), shifted.view(-1), ignore_index=-100)
    elif cfg["kind"] == "fp32":
        up = logits.float()
        shifted = F.pad(labels, (0, 1), value=-100)[:, 1:].contiguous()
        loss = F.cross_entropy(up.view(-1, V), shifted.view(-1), ignore_index=-100)
        del up
    else:
        up = logits.float()
        shift = up[..., :-1, :].contiguous()
        loss = F.cross_entropy(shift.view(-1, V), labels[..., 1:].contiguous().view(-1))
        del up, shift
    fwd_peak = peak() - base
    del logits
    after = current() - base
    reset()
    loss.backward()
    bwd_peak = peak() - base - head.numel() * head.element_size()
    n = R * T * V
    return {**cfg, "logits": n, "elt": hidden.element_size(), "fwd_peak": fwd_peak / n, "after_loss": after / n,
            "bwd_peak": bwd_peak / n, "torch": torch.__version__}


COLUMNS = ["dtype", "kind", "rows", "seq", "vocab", "logits", "elt", "fwd_peak", "after_loss", "bwd_peak", "torch"]


def summary(r):
    return (f"{r['dtype']:5} {r['kind']:13} {r['rows']}x{r['seq']}x{r['vocab']}: fwd {r['fwd_peak']:.3f} "
            f"after {r['after_loss']:.3f} bwd {r['bwd_peak']:.3f} bytes/logit")


if __name__ == "__main__":
    import probe

    sys.exit(probe.main(__file__, __doc__, measure, configs, os.path.join(HERE, "logits_loss_probe.csv"),
                        COLUMNS, summary))
