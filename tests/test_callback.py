#!/usr/bin/env python3
"""tools/memplan_callback.py: one metrics file per rank, named as memtrain names them,
and the precision labelled from the run itself (the Trainer's flags and the trainable
weights' dtype). Needs torch only for the dtypes (Debian's python3-torch)."""
import os
import sys
import tempfile
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import memplan_callback as cb  # noqa: E402

failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    failed += not cond


check(cb.rank_path("run.csv", 0, 1) == "run.csv", "one process: the file as given")
check(cb.rank_path("out/run.csv", 3, 4) == "out/run.rank3.csv", "rank 3 of 4: out/run.rank3.csv (memtrain's naming)")
os.environ.update(RANK="1", WORLD_SIZE="2")
check(cb.rank_and_ranks() == (1, 2), "rank and world size from the launcher's environment")
os.environ["WORLD_SIZE"] = "x"
check(cb.rank_and_ranks() == (0, 1), "a malformed WORLD_SIZE: one process")
del os.environ["RANK"], os.environ["WORLD_SIZE"]

try:
    import torch
except ImportError:
    print("skipped: no torch for the dtype checks")
    torch = None
if torch is not None:
    def model(dtype):
        m = torch.nn.Linear(4, 4).to(dtype)
        return m

    args = types.SimpleNamespace
    cases = [
        (args(bf16=True, fp16=False), torch.float32, "amp-bf16"),
        (args(bf16=False, fp16=True), torch.float32, "amp-fp16"),
        (args(bf16=False, fp16=False), torch.float32, "fp32"),
        (args(bf16=True, fp16=False), torch.bfloat16, "pure-bf16"),
        (args(bf16=True, fp16=False, deepspeed="ds.json"), torch.bfloat16, "mixed-bf16"),
        (args(bf16=False, fp16=False), torch.bfloat16, "pure-bf16"),
    ]
    for a, dtype, want in cases:
        got = cb.precision_label(a, model(dtype))
        check(got == want, "precision of %s weights with %s: %s (got %s)" % (dtype, vars(a), want, got))
    frozen = model(torch.bfloat16)
    frozen.weight.requires_grad_(False)
    frozen.bias.requires_grad_(False)
    adapter = torch.nn.Linear(4, 2)  # an fp32 adapter on a frozen 16-bit base (PEFT's default)
    both = torch.nn.Sequential(frozen, adapter)
    check(cb.precision_label(args(bf16=True, fp16=False), both) == "amp-bf16",
          "a frozen bf16 base with fp32 adapters under bf16=True: amp-bf16 (the trainable weights decide)")

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "run.csv")
    w = cb.MetricsWriter(cb.rank_path(path, 1, 2), memory=lambda: (10, 20, 30), model="m",
                         settings={"rank": 1, "ranks": 2})
    w.step(1)
    w.close()
    text = open(os.path.join(tmp, "run.rank1.csv")).read()
    check("rank=1 ranks=2" in text and "\n1," in text, "rank 1's file carries its rank and its rows")

print("callback: %d failed" % failed)
sys.exit(1 if failed else 0)
