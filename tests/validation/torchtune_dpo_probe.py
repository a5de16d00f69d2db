#!/usr/bin/env python3
"""Bytes per logit of torchtune's DPO recipes' loss path, forward, reference
and backward, on the CPU (PyTorch 1.13, the counting allocator).

  torchtune_dpo_probe.py run --counter LIB [--out FILE]
  torchtune_dpo_probe.py measure CONFIG_JSON     (under LD_PRELOAD=LIB)

torchtune is not installed here: the ops are written as its code runs them at
pytorch/torchtune@bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1 (the rows of
tests/data/engines/torchtune_dpo.csv):

  the head       TransformerDecoder.unembed: output = self.output(h).float()
                 (torchtune/modules/transformer.py 687; the DPO recipes never
                 set num_output_chunks, so the whole logits, upcast to fp32;
                 .float() on fp32 logits returns them as they are)
  log-probs      rlhf.get_batch_log_probs (torchtune/rlhf/sequence_processing.py
                 167-178): labels[:, 1:].clone(), logits[:, :-1, :] (a view),
                 logits_to_logprobs (95-99): torch.gather(F.log_softmax(logits
                 / temperature, dim=-1), 2, ...), temperature 1.0 (the division
                 still makes a copy), (per_token_log_probs * loss_mask).sum(-1)
  variant all    lora_dpo_single_device.py 470-490 (and lora_dpo_distributed.py
                 605-625): get_batch_log_probs over all 2B rows at once
  variant halves full_dpo_distributed.py 763-793: get_batch_log_probs on the
                 chosen half, then on the rejected half (all_logits[:len_chosen])
  the step       the policy's concatenated_forward; the logits' means detached,
                 then `del` of the chosen and rejected logits (lora_dpo_single_
                 device.py 517-532); the reference's concatenated_forward under
                 torch.no_grad() (543-546: the adapter disabled; full_dpo 866-874:
                 the reference model, its logits deleted); DPOLoss.forward
                 (torchtune/rlhf/loss/dpo.py 98-120); loss.mean(), divided by the
                 accumulation, loss.backward() (lora_dpo_single_device.py 548-558)

The head is a leaf and the hidden state a constant (the blocks are not this
probe's);
the reference reads the same hidden state through the same head (a disabled
adapter's base; the reference model's head has the same shape).

What it records, each divided by R x T x V (the logits' element count):
  fwd_peak   the largest count from the head's output to the policy's
             log-probabilities, the logits included
  after      what stays once the recipe deletes the logits (the policy's graph)
  ref_peak   the largest count during the reference's forward, the policy's
             graph included
  bwd_peak   the largest count during the loss's backward down to the head's
             output gradient, the head's weight gradient excluded (as
             pairwise_loss_probe.py)
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
IGNORE = -100  # CROSS_ENTROPY_IGNORE_IDX


def configs():
    for dtype in ("fp32", "bf16"):
        for variant in ("all", "halves"):
            for r, t, v in SHAPES:
                yield {"rows": r, "seq": t, "vocab": v, "dtype": dtype, "variant": variant}


def get_batch_log_probs(logits, labels):
    """torchtune/rlhf/sequence_processing.py 162-178 and 95-99, op for op."""
    import torch
    import torch.nn.functional as F

    labels = labels[:, 1:].clone()
    logits = logits[:, :-1, :]
    loss_mask = labels != IGNORE
    labels[labels == IGNORE] = 0
    per_token_log_probs = torch.gather(F.log_softmax(logits / 1.0, dim=-1), 2, labels.unsqueeze(-1)).squeeze(-1)
    return (per_token_log_probs * loss_mask).sum(-1)


def concatenated_forward(hidden, head, labels, variant):
    """lora_dpo_single_device.py 470-490 (all); full_dpo_distributed.py 763-793 (halves)."""
    all_logits = (hidden @ head).float()  # transformer.py 687
    half = hidden.shape[0] // 2
    if variant == "all":
        all_log_probs = get_batch_log_probs(all_logits, labels)
        chosen, rejected = all_log_probs[:half], all_log_probs[half:]
    else:
        chosen = get_batch_log_probs(all_logits[:half], labels[:half])
        rejected = get_batch_log_probs(all_logits[half:], labels[half:])
    return [chosen, rejected, all_logits[:half], all_logits[half:]]


def measure(cfg):
    import torch
    import torch.nn.functional as F
    from harness import counters

    torch.manual_seed(0)
    torch.set_num_threads(1)
    current, peak, reset = counters("cpu")
    dt = torch.float32 if cfg["dtype"] == "fp32" else torch.bfloat16
    R, T, V, H = cfg["rows"], cfg["seq"], cfg["vocab"], 64
    hidden = torch.randn(R, T, H, dtype=dt)  # the blocks' output
    head = torch.randn(H, V, dtype=dt) * 0.1
    head.requires_grad_(True)
    labels = torch.randint(0, V, (R, T))
    labels[:, : T // 4] = IGNORE  # the prompt (padded_collate_dpo masks it)
    base = current()
    reset()
    policy = concatenated_forward(hidden, head, labels, cfg["variant"])
    fwd_peak = peak() - base
    means = (policy[2].detach().mean(), policy[3].detach().mean())
    policy[2] = policy[3] = None  # del policy_chosen_rejected_outputs.chosen_logits, .rejected_logits
    after = current() - base
    reset()
    with torch.no_grad():
        reference = concatenated_forward(hidden, head, labels, cfg["variant"])
        reference[2] = reference[3] = None
    ref_peak = peak() - base
    beta = 0.1  # DPOLoss defaults: beta 0.1, label_smoothing 0 (dpo.py 70-77)
    logits = (policy[0] - policy[1]) - (reference[0] - reference[1])
    losses = -F.logsigmoid(beta * logits) * (1 - 0.0) - F.logsigmoid(-beta * logits) * 0.0
    loss = losses.mean() / 1
    del logits, losses, reference, policy, means
    reset()
    loss.backward()
    bwd_peak = peak() - base - head.numel() * head.element_size()  # the head's gradient: the head's backward
    n = R * T * V
    return {**cfg, "logits": n, "elt": hidden.element_size(), "fwd_peak": fwd_peak / n, "after": after / n,
            "ref_peak": ref_peak / n, "bwd_peak": bwd_peak / n, "torch": torch.__version__}


COLUMNS = ["dtype", "variant", "rows", "seq", "vocab", "logits", "elt", "fwd_peak", "after", "ref_peak", "bwd_peak",
           "torch"]


def summary(r):
    return (f"{r['dtype']:5} {r['variant']:6} {r['rows']}x{r['seq']}x{r['vocab']}: fwd {r['fwd_peak']:.3f} "
            f"after {r['after']:.3f} ref {r['ref_peak']:.3f} bwd {r['bwd_peak']:.3f} bytes/logit")


if __name__ == "__main__":
    import probe

    sys.exit(probe.main(__file__, __doc__, measure, configs, os.path.join(HERE, "torchtune_dpo_probe.csv"),
                        COLUMNS, summary))
