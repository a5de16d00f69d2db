#!/usr/bin/env python3
"""What torchtune's chunked output and chunked cross-entropy hold, on a CUDA GPU.

  chunked_ce_probe.py OUT.json

torchtune is not installed on the GPU machines this project is lent, so this
file runs the loss path of its recipes in a few lines, as read in
pytorch/torchtune: TransformerDecoder.chunked_output (the final hidden state
split with tensor_split into num_output_chunks pieces, the output projection
applied to each, every chunk returned in a list), CEWithChunkedOutputLoss
(torchtune/modules/loss/ce_chunked_output_loss.py: labels chunked alike, one
compute_cross_entropy per chunk, F.cross_entropy(logits.float(), labels,
reduction="sum")), the recipe deleting its own reference to the list before
the backward, and training.compile_loss compiling compute_cross_entropy when
compile is on. Llama 3.2 3B's head (hidden 3072, vocab 128256, tied and frozen
as under LoRA), batch 2 x 4096, 8 chunks, bf16. For eager and compiled loss it
reads torch.cuda's allocated bytes: before the head, after the loss (the head
and the loss's forward), the forward's peak and the backward's peak, each less
what was there before the head. Nothing here reads memplan.
"""
import json
import sys

import torch
import torch.nn.functional as F

H, V, B, T, CHUNKS = 3072, 128256, 2, 4096, 8


def compute_cross_entropy(logits, labels):
    return F.cross_entropy(logits.float(), labels, ignore_index=-100, reduction="sum")


def chunked_loss(ce, logits, labels):
    """CEWithChunkedOutputLoss.forward: labels split as the logits are, one ce per chunk, summed."""
    total = (labels != -100).sum()
    lab = [c.reshape(-1) for c in labels.tensor_split(len(logits), dim=1)]
    flat = [c.reshape(-1, c.size(-1)) for c in logits]
    loss = 0.0
    for lc, tc in zip(flat, lab):
        loss = loss + ce(lc, tc)
    return loss / total


def run(ce):
    torch.manual_seed(0)
    weight = torch.randn(V, H, device="cuda", dtype=torch.bfloat16) * 0.02
    hidden = torch.randn(B, T, H, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, V, (B, T), device="cuda")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    logits = [F.linear(chunk, weight) for chunk in hidden.tensor_split(CHUNKS, dim=1)]
    after_head = torch.cuda.memory_allocated() - base
    loss = chunked_loss(ce, logits, labels)
    del logits
    torch.cuda.synchronize()
    after_loss = torch.cuda.memory_allocated() - base
    fwd_peak = torch.cuda.max_memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    loss.backward()
    torch.cuda.synchronize()
    bwd_peak = torch.cuda.max_memory_allocated() - base
    out = dict(after_head=after_head, after_loss=after_loss, forward_peak=fwd_peak, backward_peak=bwd_peak,
               logit_entries=B * T * V, hidden_grad=hidden.grad.numel() * hidden.grad.element_size())
    del loss, hidden, weight
    torch.cuda.empty_cache()
    return out


def main():
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "shape": dict(hidden=H, vocab=V, batch=B, seq=T, chunks=CHUNKS), "cases": {}}
    torch.ones(8, 8, device="cuda") @ torch.ones(8, 8, device="cuda")  # cuBLAS workspace first
    res["cases"]["eager"] = run(compute_cross_entropy)
    res["cases"]["eager_again"] = run(compute_cross_entropy)
    compiled = torch.compile(compute_cross_entropy)
    run(compiled)  # compile and warm up
    res["cases"]["compiled"] = run(compiled)
    n = B * T * V
    for k, v in res["cases"].items():
        print("%-12s after head %6.2f B/logit, after loss %6.2f, forward peak %6.2f, backward peak %6.2f"
              % (k, v["after_head"] / n, v["after_loss"] / n, v["forward_peak"] / n, v["backward_peak"] / n))
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
