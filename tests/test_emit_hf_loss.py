#!/usr/bin/env python3
"""test_emit_hf_loss.py - run the chunked loss that `memplan --emit hf` writes (its CE_CHUNK ..
ChunkedLossTrainer code, executed as emitted, with a stand-in Trainer base class) on a small
random model and check that its loss and every parameter's gradient equal the full
cross-entropy's, with and without Gemma-2-style logit soft-capping. Needs torch (CPU).
Usage: test_emit_hf_loss.py BIN_DIR"""
import os
import subprocess
import sys

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

passed = failed = 0


def check(cond, what):
    global passed, failed
    passed, failed = passed + bool(cond), failed + (not cond)
    print(("ok   " if cond else "FAIL ") + what)


class Out:
    def __init__(self, logits):
        self.logits = logits


class Config:
    final_logit_softcapping = None


class TinyLM(torch.nn.Module):
    """A causal LM's shape: a body, then an output head whose result the model returns as logits."""

    def __init__(self, softcap):
        super().__init__()
        self.body, self.lm_head, self.config = torch.nn.Linear(16, 16), torch.nn.Linear(16, 50), Config()
        self.config.final_logit_softcapping = softcap

    def get_output_embeddings(self):
        return self.lm_head

    def forward(self, input_ids, attention_mask=None):
        logits = self.lm_head(torch.tanh(self.body(input_ids)))
        cap = self.config.final_logit_softcapping
        return Out(torch.tanh(logits / cap) * cap if cap else logits)


def emitted_loss_code(memplan):
    p = subprocess.run([memplan, "estimate", "--model", "qwen2.5-0.5b", "--lora-rank", "8", "--ce", "chunked",
                        "--ce-chunk", "5", "--emit", "hf"], capture_output=True, text=True, check=True)
    text = p.stdout
    start, end = text.index("CE_CHUNK ="), text.index("\ntok = AutoTokenizer")
    return text[start:end]


def run(code, softcap):
    torch.manual_seed(0)
    model = TinyLM(softcap)
    x, labels = torch.randn(2, 9, 16), torch.randint(0, 50, (2, 9))
    labels[0, 3] = -100
    ref = model(x).logits[:, :-1].reshape(-1, 50)
    ref = F.cross_entropy(ref.float(), labels[:, 1:].reshape(-1), ignore_index=-100)
    ref.backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    scope = {"torch": torch, "F": F, "checkpoint": torch.utils.checkpoint.checkpoint, "Trainer": object,
             "model": model}
    exec(code, scope)
    loss = scope["ChunkedLossTrainer"]().compute_loss(model, {"input_ids": x, "labels": labels.clone()})
    loss.backward()
    tag = f"softcap {softcap}"
    check(abs(float(loss) - float(ref)) < 1e-5, f"{tag}: chunked loss {float(loss):.6f} = full {float(ref):.6f}")
    same = all(torch.allclose(w, p.grad, atol=1e-6) for w, p in zip(want, model.parameters()))
    check(same, f"{tag}: every gradient equals the full cross-entropy's")


def main():
    memplan = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build/bin", "memplan")
    code = emitted_loss_code(memplan)
    check("CE_CHUNK = 5" in code, "the emitted chunk size is the plan's --ce-chunk")
    run(code, None)
    run(code, 30.0)
    print(f"emit-hf loss: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
