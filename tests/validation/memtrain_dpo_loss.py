#!/usr/bin/python3
"""memtrain's preference losses against TRL's formulas in PyTorch, on the same model and batch.

usage: /usr/bin/python3 tests/validation/memtrain_dpo_loss.py BIN   (BIN: memtrain's folder)

For dpo and ipo (reference model), simpo, cpo, orpo and reward, memtrain trains a 2-layer GPT-2 in
fp32 on a data file written here, with loader memory, and saves its parameters before
training (the reference) and after 3 steps. This script rebuilds the model in PyTorch from
those checkpoints, rebuilds the batches of steps 1 and 4 from the data file as memtrain
documents them (step k's window starts at k x 2B x T tokens; loader row 2j is pair j's
chosen sequence, 2j+1 its rejected one; a sequence is T + 1 tokens, the first the prompt,
the T after it the completion), and computes the loss as TRL's code does at
huggingface/trl@f2cd577 (trl/trainer/dpo_trainer.py 1342-1351, 1392-1447;
trl/experimental/cpo/cpo_trainer.py 706-729, 775-789, 825-856, 879;
trl/experimental/orpo/orpo_trainer.py 88-92, 693-701, 782-810, 850; the reward model's:
trl/trainer/reward_trainer.py 744-753, its (1, C) score head applied to every position and
pooled at the last as transformers' LlamaForSequenceClassification.forward does, the row's
input being its T tokens before the last target). Each must equal the loss memtrain
reported for that step within 1e-4 relative. Without torch: skipped.
"""
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("memtrain-dpo-loss: skipped (no torch: run with /usr/bin/python3 and python3-torch)")
    sys.exit(0)

L, C, NH, V, T, MAXPOS, PAIRS = 2, 64, 4, 256, 16, 32, 2
HD, FF = C // NH, 4 * C
BETA, CPO_ALPHA, SIMPO_GAMMA = 0.1, 1.0, 0.5  # TRL's defaults (DPOConfig, CPOConfig, ORPOConfig)


def params_of(path, score=False):
    """The fp32 parameters of a one-process checkpoint (trainer/checkpoint.h, train.c's state);
    a reward model's end with its score head (trainer/model.h's MT_P_HEAD, (1, C))."""
    blob = open(path, "rb").read()
    settings_len, = struct.unpack_from("<Q", blob, 48)
    state = 72 + settings_len + 8 * 8  # the header, the settings, the state's 8 words
    model_len, = struct.unpack_from("<Q", blob, state)
    flat = torch.frombuffer(bytearray(blob[state + 8:state + 8 + model_len]), dtype=torch.float32)
    shapes = [("wte", (V, C)), ("wpe", (MAXPOS, C)), ("ln1_w", (L, C)), ("ln1_b", (L, C)),
              ("w_qkv", (L, 3 * C, C)), ("b_qkv", (L, 3 * C)), ("w_o", (L, C, C)), ("b_o", (L, C)),
              ("ln2_w", (L, C)), ("ln2_b", (L, C)), ("w_fc", (L, FF, C)), ("b_fc", (L, FF)),
              ("w_proj", (L, C, FF)), ("b_proj", (L, C)), ("lnf_w", (C,)), ("lnf_b", (C,))]
    if score:
        shapes.append(("head", (1, C)))
    p, off = {}, 0
    for name, shape in shapes:
        n = math.prod(shape)
        p[name] = flat[off:off + n].reshape(shape)
        off += n
    assert off == flat.numel(), (off, flat.numel())
    return p


def hidden_of(p, ids):
    """memtrain's GPT-2 (trainer/model.h): pre-norm, fused qkv, causal attention, tanh GELU; the final norm's output."""
    R, S = ids.shape
    x = p["wte"][ids] + p["wpe"][:S]
    mask = torch.full((S, S), float("-inf")).triu(1)
    for l in range(L):
        h = F.layer_norm(x, (C,), p["ln1_w"][l], p["ln1_b"][l], eps=1e-5)
        q, k, v = (h @ p["w_qkv"][l].T + p["b_qkv"][l]).split(C, dim=-1)
        q, k, v = (t.reshape(R, S, NH, HD).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(HD) + mask, dim=-1)
        x = x + (att @ v).transpose(1, 2).reshape(R, S, C) @ p["w_o"][l].T + p["b_o"][l]
        h = F.layer_norm(x, (C,), p["ln2_w"][l], p["ln2_b"][l], eps=1e-5)
        f = F.gelu(h @ p["w_fc"][l].T + p["b_fc"][l], approximate="tanh")
        x = x + f @ p["w_proj"][l].T + p["b_proj"][l]
    return F.layer_norm(x, (C,), p["lnf_w"], p["lnf_b"], eps=1e-5)


def logits_of(p, ids):
    """The language model's logits: the head tied to the embedding."""
    return hidden_of(p, ids) @ p["wte"].T


def selective_log_softmax(logits, index):  # trl/trainer/utils.py 506-510 (fp32)
    return torch.gather(logits.log_softmax(-1), dim=-1, index=index.unsqueeze(-1)).squeeze(-1)


def batch_of(data, step):
    """TRL's concatenated batch of memtrain's step (0-based): chosen rows, then rejected rows."""
    rows = [data[step * 2 * PAIRS * T + b * T:step * 2 * PAIRS * T + b * T + T + 1] for b in range(2 * PAIRS)]
    order = [2 * j for j in range(PAIRS)] + [2 * j + 1 for j in range(PAIRS)]
    ids = torch.tensor([list(rows[b]) for b in order], dtype=torch.long)  # (2P, T+1)
    completion_mask = torch.ones_like(ids)
    completion_mask[:, 0] = 0  # the first token is the prompt
    return ids, completion_mask


def dpo_loss(policy, ref, ids, completion_mask, ipo):
    """DPOTrainer._compute_loss: sums over the completion; sigmoid, or ipo on length-averaged ratios."""
    def logps_of(p):
        shift_logits = logits_of(p, ids)[..., :-1, :]
        per_token = selective_log_softmax(shift_logits, ids[..., 1:])
        per_token[completion_mask[..., 1:] == 0] = 0.0
        return per_token.sum(dim=1).chunk(2, dim=0)
    (chosen_logps, rejected_logps), (ref_chosen, ref_rejected) = logps_of(policy), logps_of(ref)
    chosen_scores, rejected_scores = chosen_logps - ref_chosen, rejected_logps - ref_rejected
    if not ipo:
        return (-F.logsigmoid(BETA * (chosen_scores - rejected_scores))).mean()
    chosen_mask, rejected_mask = completion_mask.chunk(2, dim=0)
    ipo_delta = (chosen_scores / chosen_mask.sum(dim=1).clamp(min=1.0)
                 - rejected_scores / rejected_mask.sum(dim=1).clamp(min=1.0))
    return ((ipo_delta - 1 / (2 * BETA)) ** 2).mean()


def get_batch_logps(logits, labels, average_log_prob):  # cpo_trainer.py 775-789
    labels = labels[:, 1:].clone()
    logits = logits[:, :-1, :]
    loss_mask = labels != -100
    labels[labels == -100] = 0
    per_token_logps = selective_log_softmax(logits, labels)
    if average_log_prob:
        return (per_token_logps * loss_mask).sum(-1) / loss_mask.sum(-1)
    return (per_token_logps * loss_mask).sum(-1)


def cross_entropy_loss(logits, labels):  # cpo_trainer.py 825-835, orpo_trainer.py 782-792
    logits = logits[..., :-1, :].contiguous()
    labels = labels[..., 1:].contiguous()
    return torch.nn.CrossEntropyLoss()(logits.view(-1, logits.shape[-1]), labels.view(-1))


def cpo_loss(policy, ids, simpo):
    labels = ids.clone()
    labels[:, 0] = -100  # the prompt
    all_logits = logits_of(policy, ids)
    nll_loss = cross_entropy_loss(all_logits[:PAIRS], labels[:PAIRS])
    all_logps = get_batch_logps(all_logits, labels, average_log_prob=simpo)
    logits = all_logps[:PAIRS] - all_logps[PAIRS:]
    if simpo:
        logits = logits - SIMPO_GAMMA / BETA
    losses = -F.logsigmoid(BETA * logits)  # label_smoothing 0
    return losses.mean() + CPO_ALPHA * nll_loss


def log1mexp(x):  # orpo_trainer.py 88-92
    t = -0.6931471805599453
    return torch.where(x < t, torch.log1p(-torch.exp(x)), torch.log(-torch.expm1(x)))


def orpo_loss(policy, ids):
    labels = ids.clone()
    labels[:, 0] = -100
    all_logits = logits_of(policy, ids)
    chosen_nll_loss = cross_entropy_loss(all_logits[:PAIRS], ids[:PAIRS])  # the full sequence
    all_logps = get_batch_logps(all_logits, labels, average_log_prob=True)
    pc, pr = all_logps[:PAIRS], all_logps[PAIRS:]
    log_odds = (pc - pr) - (log1mexp(pc) - log1mexp(pr))
    return chosen_nll_loss - (BETA * F.logsigmoid(log_odds)).mean()


def reward_loss(policy, ids):
    """RewardTrainer.compute_loss (reward_trainer.py 744-753) on AutoModelForSequenceClassification's output.

    The model reads each row's T input tokens (memtrain's inputs: the T + 1 tokens but the last);
    the score is computed at every position, `logits = self.score(hidden_states)`, then pooled at
    the last non-pad token (huggingface/transformers@5dd4a635, models/llama/modeling_llama.py,
    LlamaForSequenceClassification.forward): these rows have no padding, so the last position.
    """
    inputs = ids[:, :-1]
    logits = hidden_of(policy, inputs) @ policy["head"].T  # (2P, T, 1)
    pooled_logits = logits[torch.arange(inputs.shape[0]), inputs.shape[1] - 1]  # (2P, 1)
    rewards_chosen, rewards_rejected = torch.chunk(pooled_logits.squeeze(-1), chunks=2)
    return -F.logsigmoid(rewards_chosen - rewards_rejected).mean()  # no margin, no centring


def main():
    bin_dir = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
    memtrain = os.path.join(bin_dir, "memtrain")
    tmp = tempfile.mkdtemp()
    data = random.Random(34).randbytes(16 * 2 * PAIRS * T + 64)
    with open(os.path.join(tmp, "data.bin"), "wb") as f:
        f.write(data)
    torch.set_grad_enabled(False)
    passed = failed = 0
    for method, reference in [("dpo", "model"), ("ipo", "model"), ("simpo", "none"), ("cpo", "none"),
                              ("orpo", "none"), ("reward", "none")]:
        cfg = os.path.join(tmp, method + ".cfg")
        with open(cfg, "w") as f:
            f.write("family = gpt2\nlayers = %d\nhidden = %d\nheads = %d\nvocab = %d\nmax-pos = %d\nseq = %d\n"
                    "batch = %d\nprecision = fp32\noptimizer = adamw\nlr = 0.01\nloader = memory\ndata = %s\n"
                    "method = %s\nreference = %s\n" % (L, C, NH, V, MAXPOS, T, PAIRS, os.path.join(tmp, "data.bin"),
                                                       method, reference))
        runs = [(0, "--save", os.path.join(tmp, method + "0")), (3, "--save", os.path.join(tmp, method + "3")),
                (4, "--report", os.path.join(tmp, method + ".json"))]
        for steps, flag, out in runs:
            subprocess.run([memtrain, "--config", cfg, "--steps", str(steps), "--quiet", flag, out], check=True,
                           stdout=subprocess.DEVNULL)
        losses = json.load(open(os.path.join(tmp, method + ".json")))["losses"]
        score = method == "reward"
        start = params_of(os.path.join(tmp, method + "0", "checkpoint.bin"), score)
        later = params_of(os.path.join(tmp, method + "3", "checkpoint.bin"), score)
        for step, policy in ((0, start), (3, later)):
            ids, mask = batch_of(data, step)
            if method in ("dpo", "ipo"):
                want = dpo_loss(policy, start, ids, mask, method == "ipo").item()
            elif method == "orpo":
                want = orpo_loss(policy, ids).item()
            elif score:
                want = reward_loss(policy, ids).item()
            else:
                want = cpo_loss(policy, ids, method == "simpo").item()
            got = losses[step]
            rel = abs(got - want) / abs(want)
            good = rel <= 1e-4
            passed, failed = passed + good, failed + (not good)
            print("%s %s step %d: memtrain %.7f, TRL's formula in PyTorch %.7f (rel. %.1e)"
                  % ("ok  " if good else "FAIL", method, step + 1, got, want, rel))
    print("memtrain-dpo-loss: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
