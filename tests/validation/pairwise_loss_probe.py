#!/usr/bin/env python3
"""Bytes per logit of TRL's preference loss, forward and backward, on the CPU.

  pairwise_loss_probe.py run --counter LIB [--out FILE]
  pairwise_loss_probe.py measure CONFIG_JSON     (under LD_PRELOAD=LIB)

The logits of R rows x T positions x V entries come out of a head (a matmul of
the last hidden state), as a causal LM returns them without labels. Then the
loss of one preference step as TRL's DPOTrainer takes it at
huggingface/trl@f2cd57710ae345ea6428ae95363267fcf38a3dc8: the shifted logits (a
view, dpo_trainer.py 1343), per-token log-probs by selective_log_softmax
(trainer/utils.py 479-518: fp32, the picked logit minus a logsumexp taken row by
row; 16-bit, a log-softmax row by row, gathered), masked and summed per row
(1345-1350), the chosen and rejected halves (1367), and the sigmoid loss on the
differences (1396-1435). With --nll (CPOTrainer, ORPOTrainer: cpo_trainer.py
825-844, orpo_trainer.py 782-803) the chosen half's NLL is added the way they
take it: cross_entropy over a shifted .contiguous() copy of the chosen logits.

What it records, each divided by R x T x V (the logits' element count):
  fwd_peak   the largest count from the head's output to the loss, the
             logits included (what estimate.c's logits_fwd holds)
  after_loss what the loss leaves alive with the logits still referenced (TRL
             keeps `outputs` until _compute_loss returns)
  saved      what stays once the caller's reference to the logits is dropped
             (the backward's start: the saved tensors)
  bwd_peak   the largest count during the loss's backward down to the head's
             output gradient (the head's own backward excluded: the head is a
             leaf here), above the hidden state and the head
Counting is harness.py's (mpcount.c preloaded; harness.counters).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SHAPES = [  # rows (2B), positions, vocabulary
    (4, 64, 1000),
    (4, 128, 4000),
    (2, 256, 8000),
    (8, 64, 32000),
]


def configs():
    for dtype in ("fp32", "bf16"):
        for nll in (False, True):
            for r, t, v in SHAPES:
                yield {"rows": r, "seq": t, "vocab": v, "dtype": dtype, "nll": nll}


def token_logps(logits, labels):
    import torch
    import torch.nn.functional as F

    idx = labels.unsqueeze(-1)
    if logits.dtype == torch.float32:
        picked = torch.gather(logits, -1, idx).squeeze(-1)
        norms = torch.stack([torch.logsumexp(row, dim=-1) for row in logits])
        return picked - norms
    return torch.stack([F.log_softmax(row, dim=-1).gather(-1, i).squeeze(-1) for row, i in zip(logits, idx)])


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
    ids = torch.randint(0, V, (R, T))
    mask = torch.ones(R, T, dtype=torch.long)
    mask[:, : T // 4] = 0  # the prompt
    base = current()
    reset()
    logits = hidden @ head  # the head's output, as the model returns it
    shift = logits[..., :-1, :]
    lp = token_logps(shift, ids[..., 1:])
    lp = lp.masked_fill(mask[..., 1:] == 0, 0.0)
    sums = lp.sum(dim=1)
    chosen, rejected = sums.float().chunk(2, dim=0)
    loss = -F.logsigmoid(0.1 * (chosen - rejected)).mean()
    if cfg["nll"]:
        half = R // 2
        c_logits = logits[:half, :-1, :].contiguous()
        c_labels = ids[:half, 1:].masked_fill(mask[:half, 1:] == 0, -100)
        loss = loss + F.cross_entropy(c_logits.view(-1, V), c_labels.reshape(-1), ignore_index=-100)
        del c_logits
    fwd_peak = peak() - base
    after_loss = current() - base
    del shift, lp, sums, chosen, rejected, logits
    saved = current() - base
    reset()
    loss.backward()
    bwd_peak = peak() - base - head.numel() * head.element_size()  # the head's gradient: the head's backward
    n = R * T * V
    return {**cfg, "logits": n, "elt": hidden.element_size(), "fwd_peak": fwd_peak / n,
            "after_loss": after_loss / n, "saved": saved / n, "bwd_peak": bwd_peak / n, "torch": torch.__version__}


COLUMNS = ["dtype", "nll", "rows", "seq", "vocab", "logits", "elt", "fwd_peak", "after_loss", "saved", "bwd_peak", "torch"]


def summary(r):
    return (f"{r['dtype']:5} nll={int(r['nll'])} {r['rows']}x{r['seq']}x{r['vocab']}: fwd {r['fwd_peak']:.3f} "
            f"after {r['after_loss']:.3f} saved {r['saved']:.3f} bwd {r['bwd_peak']:.3f} bytes/logit")


if __name__ == "__main__":
    import probe

    sys.exit(probe.main(__file__, __doc__, measure, configs, os.path.join(HERE, "pairwise_loss_probe.csv"),
                        COLUMNS, summary))
