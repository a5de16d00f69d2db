#!/usr/bin/env python3
"""PyTorch on the same GPT-2 shapes as bench_trainer, for the side-by-side comparison.

  pytorch_gpt2.py [--seq T] [--steps N] [--threads K]

GPT-2 124M (12 layers, 768 wide, 12 heads, vocab 50257), B=4, fp32, AdamW,
the Hugging Face-style model of tests/validation/hfmodels.py without dropout.
Prints "bench: pytorch_gpt2_124m_T<T>_tokens_per_s VALUE tok/s" (best of
foreach and single-tensor AdamW, median step time of N after one warm-up).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "validation"))
import torch  # noqa: E402
import hfmodels  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--name", default="gpt2_124m")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cfg = dict(family="gpt2", layers=a.layers, hidden=a.hidden, heads=a.heads, kv_heads=a.heads,
               ffn=4 * a.hidden, vocab=50257, max_pos=1024, lora_rank=0, lora_targets="", dropout=0.0)
    model = hfmodels.build(cfg)
    model.train()
    ids = torch.randint(0, 50257, (4, a.seq))
    best = 0.0
    for foreach in (False, True):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=foreach)
        times = []
        for s in range(a.steps + 1):
            t0 = time.perf_counter()
            loss = model(ids, ids)[0]
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if s:  # the first step allocates the optimizer state
                times.append(time.perf_counter() - t0)
        best = max(best, 4 * a.seq / statistics.median(times))
    print(f"bench: pytorch_{a.name}_T{a.seq}_tokens_per_s {best:.1f} tok/s")


if __name__ == "__main__":
    main()
