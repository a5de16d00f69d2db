#!/usr/bin/env python3
"""Measure what one optimizer step of DPO, SimPO, CPO and reward-model training allocates on the CPU.

  pairwise.py run --counter LIB [--out FILE] [--only NAME,...]
      measures every configuration of CONFIGS below, each in a fresh process
      with the counting allocator (mpcount.c built as a shared library)
      preloaded, prints a table and the checks, and writes FILE (default:
      pairwise_measurements.csv beside this script); exit 1 when a check fails.
  pairwise.py measure CONFIG_JSON
      (run by `run`, under LD_PRELOAD=LIB) one configuration: two steps on the
      same batch, the second measured; prints one JSON object.

The models are harness.py's (hfmodels.build: GPT-2 and Llama written op for op
as Hugging Face builds them, with peft-style LoRA), the counter and its 64 MiB
self-test are harness.py's (harness.counters). What a step does is what TRL's
trainers do, read at huggingface/trl@f2cd57710ae345ea6428ae95363267fcf38a3dc8
(tests/data/engines/trl_methods.csv has the facts with their lines):

  dpo-ref          full fine-tuning with a frozen reference copy of the policy.
                   DataCollatorForPreference (dpo_trainer.py:152-213) stacks the
                   prompt+chosen rows over the prompt+rejected rows, padded to one
                   width: 2B rows. _compute_loss (1329-1435) runs the policy on
                   the 2B rows (1340), takes per-token log-probs of the completion
                   tokens with selective_log_softmax (1344-1350), then runs the
                   reference on the same rows under torch.no_grad (1373-1382) and
                   takes its log-probs the same way (1384-1394); the sigmoid loss
                   is -logsigmoid(beta * ((pc - rc) - (pr - rr))) (1396-1435),
                   beta 0.1 (dpo_config.py:283). In the last release that still
                   had them (v0.28.0) these steps were concatenated_forward and
                   dpo_loss; the memory they take is the same.
  dpo-precomputed  precompute_ref_log_probs=True: the reference pass runs before
                   training, with the policy itself as reference (dpo_trainer.py
                   957-978, 1137-1142), the four sums go to the host (1151-1152)
                   and the step reads them from the batch (1364-1365): no
                   reference model and no reference forward during the step.
  dpo-lora         a LoRA policy (rank 8 on every linear of the blocks); the
                   reference is the same model with the adapters disabled
                   (dpo_trainer.py:894-898 and 1374-1380; use_adapter(None) is
                   peft's disable_adapter, utils.py:1227-1229): no second model.
  simpo            CPOTrainer with loss_type="simpo" and cpo_alpha=0: no
                   reference, log-probs averaged over the completion tokens
                   (cpo_trainer.py:786-787, 849), loss -logsigmoid(beta * (c - r)
                   - gamma) (714-721), CPOConfig's beta 0.1 and simpo_gamma 0.5.
  cpo              CPOTrainer's default (loss_type sigmoid, cpo_alpha 1.0): the
                   sigmoid loss on the summed log-probs plus the chosen rows' NLL
                   taken from the same logits (cpo_trainer.py:825-844, 889).
  reward           RewardTrainer: AutoModelForSequenceClassification with one
                   label, so a hidden x 1 score head instead of the LM head
                   (reward_trainer.py:385-388); chosen and rejected in one batch of
                   2B rows (198-224); the score of each row's last token;
                   -logsigmoid(r_chosen - r_rejected) (747-753).

The reference forward runs with gradient checkpointing off, as TRL's
disable_gradient_checkpointing does (dpo_trainer.py:1373). Rows carry no
attention mask (the models take none): padding changes no tensor shape, so it
changes no byte. TRL's metrics (entropy in 128-row chunks, argmax accuracy)
are not run; they are small transients after the loss.

Each row also carries the byte sizes of the main tensors computed from the
shapes (weights, reference copy, gradients, AdamW state, the 2B x seq x vocab
logits), so the measured figures can be read against them.
"""
import contextlib
import csv
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402  (the counting allocator's counters and self-test)

BETA = 0.1          # DPOConfig.beta and CPOConfig.beta
SIMPO_GAMMA = 0.5   # CPOConfig.simpo_gamma
CPO_ALPHA = 1.0     # CPOConfig.cpo_alpha (the cpo mode; simpo uses 0)
LORA_RANK = 8

# Shapes: (layers, hidden, heads, kv_heads, ffn, vocab, pairs, seq)
SHAPES = {
    "s1": (2, 128, 4, 4, 344, 1000, 2, 64),
    "s2": (4, 256, 8, 8, 688, 4000, 2, 128),
    "s3": (2, 256, 8, 4, 688, 4000, 4, 64),
    "s4": (3, 192, 6, 6, 512, 2000, 1, 96),
}
MODES = ("dpo-ref", "dpo-precomputed", "dpo-lora", "simpo", "cpo", "reward")


def _configs():
    out = []

    def add(shape, mode, family="llama", precision="fp32", checkpointing="none", tag=""):
        layers, hidden, heads, kv, ffn, vocab, pairs, seq = SHAPES[shape]
        out.append({
            "name": f"{family}-{shape}-{mode}{tag}", "mode": mode, "family": family,
            "layers": layers, "hidden": hidden, "heads": heads,
            "kv_heads": kv if family == "llama" else heads, "ffn": ffn, "vocab": vocab,
            "max_pos": 1024, "pairs": pairs, "seq": seq, "prompt": seq // 4,
            "precision": precision, "checkpointing": checkpointing,
            "lora_rank": LORA_RANK if mode == "dpo-lora" else 0,
            "lora_targets": "all" if mode == "dpo-lora" else "", "dropout": 0.0})

    for shape in SHAPES:
        for mode in MODES:
            add(shape, mode)
    add("s2", "dpo-ref", checkpointing="full", tag="-ckpt")
    add("s2", "dpo-lora", checkpointing="full", tag="-ckpt")
    add("s2", "dpo-ref", precision="amp-bf16", tag="-bf16")
    add("s2", "dpo-precomputed", precision="amp-bf16", tag="-bf16")
    add("s2", "dpo-ref", family="gpt2")
    add("s2", "dpo-precomputed", family="gpt2")
    return out


CONFIGS = _configs()

COLUMNS = [
    "name", "mode", "family", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "pairs", "rows",
    "seq", "prompt", "precision", "checkpointing", "lora_rank", "lora_targets",
    "params", "trainable_params", "param_bytes", "ref_param_bytes", "grad_bytes", "adam_bytes",
    "logits_bytes", "step_base_bytes", "policy_forward_peak_bytes", "reference_forward_peak_bytes",
    "reference_forward_rise_bytes", "backward_peak_bytes", "optimizer_step_peak_bytes",
    "allocated_peak_bytes", "peak_phase", "first_loss", "torch",
]


# ------------------------------------------------------------- one step

def _no_lm_loss(logits, labels):
    """TRL calls the model without labels (dpo_trainer.py:1333-1340): no LM loss in the forward."""
    return None


def token_logps(logits, labels):
    """log p(label) at every position, the way TRL's selective_log_softmax spends memory
    (trainer/utils.py:506-518): for fp32 the picked logit minus a logsumexp taken one row
    (sequence) at a time, never a full log-softmax tensor; for half precision a log-softmax
    of one row at a time."""
    import torch
    import torch.nn.functional as F

    idx = labels.unsqueeze(-1)
    if logits.dtype in (torch.float32, torch.float64):
        picked = torch.gather(logits, -1, idx).squeeze(-1)
        norms = torch.stack([torch.logsumexp(row, dim=-1) for row in logits])
        return picked - norms
    return torch.stack([F.log_softmax(row, dim=-1).gather(-1, i).squeeze(-1) for row, i in zip(logits, idx)])


def completion_logps(logits, ids, mask, average=False):
    """Shifted log-probs of the completion tokens, summed (or averaged) per row."""
    lp = token_logps(logits[:, :-1, :], ids[:, 1:])
    m = mask[:, 1:]
    lp[m == 0] = 0.0  # in place, as dpo_trainer.py:1348 does
    s = lp.sum(dim=1)
    return s / m.sum(dim=1) if average else s


@contextlib.contextmanager
def adapters_disabled(model):
    """peft's disable_adapter for hfmodels.LoRA: every adapted layer runs its base layer only."""
    import hfmodels

    wrapped = [m for m in model.modules() if isinstance(m, hfmodels.LoRA)]
    for m in wrapped:
        m.forward = m.base.forward
    try:
        yield
    finally:
        for m in wrapped:
            del m.forward


@contextlib.contextmanager
def checkpointing_off(model):
    """TRL's disable_gradient_checkpointing around the reference forward."""
    was = model.checkpointing
    model.checkpointing = False
    try:
        yield
    finally:
        model.checkpointing = was


def make_batch(cfg):
    """2B rows: B prompt+chosen over B prompt+rejected (chosen first, as the collator stacks
    them), all seq wide; rejected completions are shorter and padded; the completion mask
    marks the completion tokens."""
    import torch

    b, t, p, v = cfg["pairs"], cfg["seq"], cfg["prompt"], cfg["vocab"]
    prompt = torch.randint(0, v, (b, p))
    chosen = torch.randint(0, v, (b, t - p))
    rejected = torch.randint(0, v, (b, t - p))
    rej_len = max(1, (t - p) * 3 // 4)
    rejected[:, rej_len:] = 0  # pad id
    ids = torch.cat([torch.cat([prompt, chosen], 1), torch.cat([prompt, rejected], 1)], 0)
    mask = torch.zeros(2 * b, t, dtype=torch.long)
    mask[:b, p:] = 1
    mask[b:, p:p + rej_len] = 1
    lengths = torch.tensor([t] * b + [p + rej_len] * b)
    return ids, mask, lengths


def build_models(cfg):
    """The policy (for reward, the score head in place of the LM head) in training mode and,
    for dpo-ref, its frozen reference copy (None otherwise)."""
    import copy
    import torch.nn as nn
    import hfmodels

    model = hfmodels.build(cfg)
    if cfg["mode"] == "reward":
        # LlamaForSequenceClassification: the backbone and score = Linear(hidden, 1, bias=False)
        model.lm_head = nn.Linear(cfg["hidden"], 1, bias=False)
    model.train()
    model.checkpointing = cfg["checkpointing"] == "full"
    ref = None
    if cfg["mode"] == "dpo-ref":
        # a second, frozen model with the policy's initial weights (dpo_trainer.py:900-908)
        ref = copy.deepcopy(model)
        ref.checkpointing = False
        ref.eval()
        for p in ref.parameters():
            p.requires_grad_(False)
    return model, ref


def make_step(cfg, model, ref, opt, batch, counters, base, policy=None):
    """One training step of CFG's mode as TRL runs it; returns step() -> (phases, loss value),
    the phases' peaks relative to BASE by COUNTERS (current, peak, reset). POLICY is what the
    trainer calls for the policy's forward: the model, or its DistributedDataParallel wrapper
    (pairwise_ddp.py); the reference forward calls REF or the unwrapped model with its adapters
    disabled, as dpo_trainer.py:1373-1382 does. For dpo-precomputed the reference sums are
    taken here, before training (dpo_trainer.py:957-978)."""
    import torch
    import torch.nn.functional as F

    current, peak, reset = counters
    ids, mask, lengths = batch
    policy = model if policy is None else policy
    mode = cfg["mode"]
    amp = cfg["precision"] == "amp-bf16"
    b = cfg["pairs"]

    def forward(m):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            return m(ids, ids)[1]

    def reference_sums():
        with torch.no_grad():
            if ref is not None:
                logits = forward(ref)
            else:  # the LoRA policy with adapters off, or the policy itself before training
                with adapters_disabled(model), checkpointing_off(model):
                    logits = forward(model)
            return completion_logps(logits, ids, mask).chunk(2)

    precomputed = reference_sums() if mode == "dpo-precomputed" else None

    def loss_and_phases(phases):
        reset()
        logits = forward(policy)
        if mode == "reward":
            scores = logits[..., 0].float()[torch.arange(2 * b), lengths - 1]
            chosen, rejected = scores.chunk(2)
            loss = -F.logsigmoid(chosen - rejected).mean()
        else:
            sums = completion_logps(logits, ids, mask, average=(mode == "simpo"))
            pc, pr = sums.chunk(2)
            if mode == "simpo":
                loss = -F.logsigmoid(BETA * ((pc - pr) - SIMPO_GAMMA / BETA)).mean()
            elif mode == "cpo":
                labels = ids.masked_fill(mask == 0, -100)
                shifted = logits[:b, :-1, :].contiguous()  # cpo_trainer.py:828
                nll = F.cross_entropy(shifted.view(-1, shifted.size(-1)), labels[:b, 1:].reshape(-1),
                                      ignore_index=-100)
                loss = -F.logsigmoid(BETA * (pc - pr)).mean() + CPO_ALPHA * nll
            else:
                phases["policy forward"] = peak() - base
                if precomputed is not None:
                    rc, rr = precomputed
                else:
                    at = current()
                    reset()
                    rc, rr = reference_sums()
                    phases["reference forward"] = peak() - base
                    phases["reference rise"] = peak() - at
                    reset()
                loss = -F.logsigmoid(BETA * ((pc - rc) - (pr - rr))).mean()
        phases["policy forward"] = max(phases.get("policy forward", 0), peak() - base)
        return loss

    def step():
        phases = {}
        loss = loss_and_phases(phases)
        value = float(loss)
        reset()
        loss.backward()
        del loss
        phases["backward"] = peak() - base
        reset()
        opt.step()
        phases["optimizer step"] = peak() - base
        opt.zero_grad(set_to_none=True)
        return phases, value

    return step


def summary(cfg, model, ref, trainable, step_base, phases, first_loss):
    """The JSON object a measurement prints: the parameter counts, the second step's phases, its peak."""
    import torch

    candidates = {k: v for k, v in phases.items() if k != "reference rise"}
    at = max(candidates, key=candidates.get)
    params = sum(p.numel() for n, p in model.named_parameters() if "lora_" not in n)
    return {"params": params, "trainable_params": sum(p.numel() for p in trainable),
            "ref_params": sum(p.numel() for p in ref.parameters()) if ref is not None else 0,
            "logits_elem_bytes": 2 if cfg["precision"] == "amp-bf16" else 4,
            "step_base_bytes": step_base, "phases": phases, "allocated_peak_bytes": candidates[at],
            "peak_phase": at, "first_loss": first_loss, "torch": torch.__version__}


def measure(cfg):
    import torch
    import hfmodels

    hfmodels.causal_lm_loss = _no_lm_loss
    current, peak, reset = harness.counters("cpu")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batch = make_batch(cfg)
    if cfg["mode"] == "reward" and cfg["family"] != "llama":
        sys.exit("pairwise: the reward mode swaps Llama's lm_head for the score head; use family llama")

    base = current()
    model, ref = build_models(cfg)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
    step = make_step(cfg, model, ref, opt, batch, (current, peak, reset), base)
    _, first_loss = step()  # allocates the AdamW state
    step_base = current() - base
    phases, _ = step()
    return summary(cfg, model, ref, trainable, step_base, phases, first_loss)


# ------------------------------------------------------------- running

def measure_in_child(cfg, counter):
    env = dict(os.environ, OMP_NUM_THREADS="1", LD_PRELOAD=counter)
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "measure", json.dumps(cfg)],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"pairwise: error: measuring '{cfg['name']}' failed:\n{p.stderr.strip()}")
    return json.loads(p.stdout)


def row_for(cfg, m):
    rows = 2 * cfg["pairs"]
    fp32 = 4
    vocab_out = 1 if cfg["mode"] == "reward" else cfg["vocab"]
    ph = m["phases"]
    return {
        **{k: cfg[k] for k in ("name", "mode", "family", "layers", "hidden", "heads", "kv_heads", "ffn",
                               "vocab", "pairs", "seq", "prompt", "precision", "checkpointing",
                               "lora_rank", "lora_targets")},
        "rows": rows, "params": m["params"], "trainable_params": m["trainable_params"],
        "param_bytes": m["params"] * fp32 + (m["trainable_params"] * fp32 if cfg["lora_rank"] else 0),
        "ref_param_bytes": m["ref_params"] * fp32,
        "grad_bytes": m["trainable_params"] * fp32,
        "adam_bytes": 2 * m["trainable_params"] * fp32,
        "logits_bytes": rows * cfg["seq"] * vocab_out * m["logits_elem_bytes"],
        "step_base_bytes": m["step_base_bytes"],
        "policy_forward_peak_bytes": ph.get("policy forward", ""),
        "reference_forward_peak_bytes": ph.get("reference forward", ""),
        "reference_forward_rise_bytes": ph.get("reference rise", ""),
        "backward_peak_bytes": ph["backward"], "optimizer_step_peak_bytes": ph["optimizer step"],
        "allocated_peak_bytes": m["allocated_peak_bytes"], "peak_phase": m["peak_phase"],
        "first_loss": f"{m['first_loss']:.6f}", "torch": m["torch"],
    }


def checks(rows):
    """What must hold between the modes; returns the failures."""
    import math

    by = {r["name"]: r for r in rows}
    bad = []
    for r in rows:
        # before the first update the policy is its own reference: delta = 0, loss = ln 2 (to bf16's
        # precision when the sums are taken under autocast)
        tol = 4e-3 if r["precision"] == "amp-bf16" else 1e-4
        if r["mode"].startswith("dpo") and abs(float(r["first_loss"]) - math.log(2)) > tol:
            bad.append(f"{r['name']}: first DPO loss {r['first_loss']} is not ln 2 (policy == reference)")
        if r["reference_forward_rise_bytes"] != "" and r["reference_forward_rise_bytes"] < r["logits_bytes"]:
            bad.append(f"{r['name']}: the reference forward rose {r['reference_forward_rise_bytes']} bytes, "
                       f"less than its own logits ({r['logits_bytes']})")
        if r["mode"] == "dpo-ref":
            other = by.get(r["name"].replace("dpo-ref", "dpo-precomputed"))
            if not other:
                continue
            if not r["allocated_peak_bytes"] > other["allocated_peak_bytes"]:
                bad.append(f"{r['name']}: peak not above {other['name']}'s")
            held = r["step_base_bytes"] - other["step_base_bytes"]
            if abs(held - r["ref_param_bytes"]) > 0.02 * r["ref_param_bytes"] + 65536:
                bad.append(f"{r['name']}: holds {held} bytes more than {other['name']} before the step, "
                           f"the reference's weights are {r['ref_param_bytes']}")
    return bad


def mib(x):
    return f"{x / 1048576:8.2f}" if x != "" else f"{'':>8}"


def run(argv):
    import probe
    o, cfgs = probe.run_args("pairwise.py", os.path.join(HERE, "pairwise_measurements.csv"), CONFIGS, argv)
    counter = o.counter
    print(f"{'config':<30} {'peak':>8} {'phase':<18} {'base':>8} {'ref fwd':>8} {'weights':>8} "
          f"{'ref wts':>8} {'adam':>8} {'logits':>8}   (MiB)")
    t0, rows = time.time(), []
    for cfg in cfgs:
        r = row_for(cfg, measure_in_child(cfg, counter))
        rows.append(r)
        print(f"{r['name']:<30} {mib(r['allocated_peak_bytes'])} {r['peak_phase']:<18} "
              f"{mib(r['step_base_bytes'])} {mib(r['reference_forward_rise_bytes'])} "
              f"{mib(r['param_bytes'])} {mib(r['ref_param_bytes'])} {mib(r['adam_bytes'])} "
              f"{mib(r['logits_bytes'])}")
    tmp = f"{o.out}.tmp.{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, o.out)
    bad = checks(rows)
    for line in bad:
        print("CHECK FAILED: " + line)
    print(f"({len(rows)} configurations in {time.time() - t0:.0f} s; {len(bad)} checks failed)")
    return 1 if bad else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "measure":
        print(json.dumps(measure(json.loads(sys.argv[2]))))
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "run":
        return run(sys.argv[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
