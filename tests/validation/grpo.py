#!/usr/bin/env python3
"""Measure what TRL's GRPOTrainer allocates on the CPU, phase by phase: the rollout with transformers'
generate, the no-grad log-prob pass, the training micro-batches and the AdamW step.

  grpo.py run --counter LIB [--out FILE] [--only NAME,...]
      checks that the cached (generation) forward reproduces the full forward, then measures every
      configuration of CONFIGS below, each in a fresh process with the counting allocator (mpcount.c
      built as a shared library) preloaded, prints a table and the checks, and writes FILE (default:
      grpo_measurements.csv beside this script); exit 1 when a check fails.
  grpo.py measure CONFIG_JSON
      (run by `run`, under LD_PRELOAD=LIB) one configuration: two generation cycles, the second
      measured; prints one JSON object.
  grpo.py selftest
      (run by `run`, without the counter) the cached forward against the full one.

The models are harness.py's (hfmodels.build: GPT-2 and Llama written op for op as Hugging Face builds
them, with peft-style LoRA); grpo_models.py adds the two forwards GRPO needs around their modules (the
LM head on the last logits_to_keep positions; one generate step with transformers' DynamicCache). The
counter and its 64 MiB self-test are harness.py's (harness.counters). What a cycle does is what TRL's
GRPOTrainer does, read at huggingface/trl@f2cd57710ae345ea6428ae95363267fcf38a3dc8 (trl/trainer/
grpo_trainer.py unless another file is named; tests/data/engines/trl_methods.csv has the facts):

  batches      per_device_train_batch_size B completions (rows) a micro-batch; the generation batch is
               G = B x steps_per_generation rows (grpo_config.py:1077-1079, steps_per_generation
               defaulting to gradient_accumulation_steps), G / num_generations prompts each repeated
               num_generations times (RepeatSampler, 1244-1271). Prompts are P tokens, completions C.
  rollout      use_vllm=False (grpo_config.py:577): unwrapped_model.generate under torch.no_grad
               (1850-1863) with gradient checkpointing off (trl/models/utils.py:133-135), do_sample=True
               at temperature 1.0, top_p 1.0, top_k 0, no min_p, repetition_penalty 1.0 (1108-1124), so
               transformers applies no logits processor and samples from softmax(next-token logits).
               The decode loop is transformers' _sample: prefill of the G x P prompts with
               logits_to_keep=1, then one token at a time; each step copies the last logits to fp32
               (`outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32)`), softmax, multinomial,
               and grows input_ids and the attention mask by torch.cat; the KV cache is a DynamicCache
               grown by torch.cat (grpo_models.py). C forward passes make C tokens: the cache ends
               holding P + C - 1 positions (the last sampled token is never fed back).
  advantages   one reward per completion (a reward function, no reward model), normalised per group of
               num_generations: (r - mean) / (std + 1e-4) (2681-2707, scale_rewards "group"); the
               generation batch is shuffled (shuffle_sequence_dict) and split into steps_per_generation
               slices of B rows that are kept (_prepare_inputs, 1569-1579).
  log-prob pass under torch.no_grad with gradient checkpointing disabled (2550-2655):
               old_per_token_logps when gradient_accumulation_steps % (steps_per_generation x
               num_iterations) != 0 (2561-2576; never with the defaults), ref_per_token_logps when
               beta != 0 (2626-2655): the reference copy, or the LoRA policy with its adapters disabled
               (use_adapter(None)). _get_per_token_logps_and_entropies (1434-1538) runs B rows of P + C
               tokens at a time with logits_to_keep = C + 1, takes logits[:, :-1] then [:, -C:],
               div_(temperature) in place, selective_log_softmax (trl/trainer/utils.py:479-518: the
               picked logit minus a logsumexp taken one row at a time, for fp32 logits). The previous
               chunk's logits stay referenced while the next chunk runs (the loop's `logits`).
  training     per micro-batch, _compute_loss (2991-3150): the same log-prob forward with grad and
               compute_entropy=True, the entropy under no_grad (1524-1533) by entropy_from_logits in
               chunks of 128 rows of the flattened logits (utils.py:526-561; flattening the sliced view
               copies it); the default loss_type "dapo" (grpo_config.py:791): ratio exp(logp - old) with
               old = logp.detach() when no old log-probs were computed, clipped to [1 - 0.2, 1 + 0.2]
               (epsilon 0.2, grpo_config.py:683), -min(ratio x A, clipped x A), plus beta x
               (exp(ref - logp) - (ref - logp) - 1) when beta != 0, summed over the completion tokens
               and divided by the generation batch's token count (3138-3141). The Trainer does not
               divide by the accumulation steps (compute_loss_func is set to disable it, 945-950).
               backward; after gradient_accumulation_steps micro-batches the AdamW step (foreach, the
               second cycle measured so the state exists) and zero_grad(set_to_none=True).
  references   beta 0.0 by default (grpo_config.py:671): no reference; with beta != 0 and full
               fine-tuning a second fp32 copy of the model (962-971), evaluation mode; with LoRA the
               adapters disabled (958-961).
  amp-bf16     bf16=True over fp32 weights: accelerate's prepare_model wraps the forward in autocast and
               converts its outputs to fp32 (huggingface/accelerate@16cb6eb8 src/accelerate/
               accelerator.py:1818-1829, utils/operations.py:889-945; the reference too, as
               prepare_model(evaluation_mode=True)); generate calls the same wrapped forward
               (unwrap_model keeps the fp32 wrapper by default). So TRL's log-prob code sees fp32
               logits in both precisions; under autocast the bf16 logits exist first, briefly.

Not run: TRL's metrics (clip ratios, entropy statistics, completion lengths: scalars), reward models,
vLLM. Rows carry no attention mask into the model (the training forward is hfmodels' own, which takes
none; padding changes no shape); the generation forward does build transformers' 4-D additive mask.

Each row also carries byte sizes computed from the shapes (weights, reference copy, gradients, AdamW
state, the KV cache at the end of generate, one micro-batch's logits), to read the measurements against.
"""
import csv
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402  (the counting allocator's counters and self-test)
# peft's disable_adapter and TRL's disable_gradient_checkpointing for hfmodels, as the pairwise steps use them
from pairwise import adapters_disabled, checkpointing_off, mib  # noqa: E402

TEMPERATURE = 1.0     # GRPOConfig.temperature (grpo_config.py:522)
EPSILON = 0.2         # GRPOConfig.epsilon (grpo_config.py:683); epsilon_high defaults to it
BETA = 0.04           # the KL coefficient of the beta variants (the default is 0.0, grpo_config.py:671)
NUM_ITERATIONS = 1    # GRPOConfig.num_iterations (grpo_config.py:679)
ENTROPY_CHUNK = 128   # entropy_from_logits' chunk_size (trl/trainer/utils.py:526)
LORA_RANK = 8

# Shapes (pairwise.py's): (layers, hidden, heads, kv_heads, ffn, vocab)
SHAPES = {
    "s1": (2, 128, 4, 4, 344, 1000),
    "s2": (4, 256, 8, 8, 688, 4000),
    "s3": (2, 256, 8, 4, 688, 4000),
    "s4": (3, 192, 6, 6, 512, 2000),
}


def _configs():
    out = []

    def add(shape, rows, prompt, completion, num_generations, accum=1, spg=None, family="llama",
            precision="fp32", checkpointing="none", lora_rank=0, beta=0.0, tag="", vs=""):
        """vs: the tag of the configuration this one is checked against (the same shape and batch)."""
        layers, hidden, heads, kv, ffn, vocab = SHAPES[shape]
        spg = spg or accum
        assert (rows * spg) % num_generations == 0 and spg % accum == 0
        stem = f"{family}-{shape}-b{rows}-p{prompt}c{completion}"
        out.append({
            "name": stem + tag, "vs": stem + vs if tag else "", "family": family,
            "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv if family == "llama" else heads,
            "ffn": ffn, "vocab": vocab, "max_pos": 1024, "rows": rows, "accum": accum,
            "steps_per_generation": spg, "generation_rows": rows * spg, "prompt": prompt,
            "completion": completion, "num_generations": num_generations, "precision": precision,
            "checkpointing": checkpointing, "lora_rank": lora_rank, "lora_targets": "all" if lora_rank else "",
            "beta": beta, "reference": ("adapters-disabled" if lora_rank else "copy") if beta else "none",
            "dropout": 0.0})

    add("s1", 4, 32, 64, 4)
    add("s2", 4, 32, 64, 4)
    add("s2", 2, 16, 128, 2)
    add("s3", 4, 32, 64, 2)
    add("s4", 3, 16, 128, 3)
    add("s2", 2, 32, 64, 2)
    add("s2", 2, 32, 64, 2, accum=2, tag="-accum2")
    add("s2", 2, 32, 64, 2, spg=2, tag="-spg2")              # old_per_token_logps computed (1 % 2 != 0)
    add("s2", 4, 32, 64, 4, checkpointing="full", tag="-ckpt")
    add("s2", 4, 32, 64, 4, beta=BETA, tag="-beta")
    add("s2", 4, 32, 64, 4, lora_rank=LORA_RANK, tag="-lora")
    add("s2", 4, 32, 64, 4, lora_rank=LORA_RANK, beta=BETA, tag="-lora-beta", vs="-lora")
    add("s2", 4, 32, 64, 4, precision="amp-bf16", tag="-bf16")
    add("s2", 4, 32, 64, 4, precision="amp-bf16", beta=BETA, tag="-beta-bf16", vs="-bf16")
    add("s2", 4, 32, 64, 4, family="gpt2")
    return out


CONFIGS = _configs()

SETTINGS = ["name", "family", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "rows", "accum",
            "steps_per_generation", "generation_rows", "prompt", "completion", "num_generations", "precision",
            "checkpointing", "lora_rank", "beta", "reference"]
COLUMNS = SETTINGS + [
    "params", "trainable_params", "param_bytes", "ref_param_bytes", "grad_bytes", "adam_bytes", "kv_cache_bytes",
    "train_logits_bytes",
    "resident_before_generation", "generation_peak_bytes", "generation_rise_bytes", "generation_end_rise_bytes",
    "logps_pass_peak_bytes", "logps_pass_rise_bytes", "train_forward_peak_bytes", "backward_peak_bytes",
    "optimizer_step_peak_bytes", "allocated_peak_bytes", "peak_phase", "first_loss", "torch",
]


# ------------------------------------------------------------- TRL's helpers, as written there

def selective_log_softmax(logits, index):
    """trl/trainer/utils.py:479-518."""
    import torch
    import torch.nn.functional as F

    squeeze = index.ndim == logits.ndim - 1
    if squeeze:
        index = index.unsqueeze(-1)
    if logits.dtype in [torch.float32, torch.float64]:
        selected_logits = torch.gather(logits, dim=-1, index=index)
        logsumexp_values = torch.stack([torch.logsumexp(lg, dim=-1) for lg in logits])  # one row at a time
        per_token_logps = selected_logits - logsumexp_values.unsqueeze(-1)
    else:
        per_token_logps = []
        for row_logits, row_labels in zip(logits, index):
            row_logps = F.log_softmax(row_logits, dim=-1)
            per_token_logps.append(row_logps.gather(dim=-1, index=row_labels))
        per_token_logps = torch.stack(per_token_logps)
    if squeeze:
        per_token_logps = per_token_logps.squeeze(-1)
    return per_token_logps


def entropy_from_logits(logits, chunk_size=ENTROPY_CHUNK):
    """trl/trainer/utils.py:526-561."""
    import torch
    import torch.nn.functional as F

    original_shape = logits.shape[:-1]
    flat_logits = logits.reshape(-1, logits.shape[-1])  # a copy when logits is the sliced view
    entropies = []
    for chunk in flat_logits.split(chunk_size, dim=0):
        logps = F.log_softmax(chunk, dim=-1)
        entropies.append(-(torch.exp(logps) * logps).sum(-1))
    return torch.cat(entropies, dim=0).reshape(original_shape)


def measure(cfg):
    import copy
    import torch
    import torch.nn.functional as F
    import hfmodels
    import grpo_models as gm

    current, peak, reset = harness.counters("cpu")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    amp = cfg["precision"] == "amp-bf16"
    B, accum, spg = cfg["rows"], cfg["accum"], cfg["steps_per_generation"]
    G, P, C, n, V = cfg["generation_rows"], cfg["prompt"], cfg["completion"], cfg["num_generations"], cfg["vocab"]
    beta = cfg["beta"]
    rewards_rng = torch.Generator().manual_seed(1)

    base = current()
    model = hfmodels.build(cfg)
    model.train()
    model.checkpointing = cfg["checkpointing"] == "full"
    ref = None
    if beta and not cfg["lora_rank"]:
        # the reference: a second model loaded from the same weights (grpo_trainer.py:962-971)
        ref = copy.deepcopy(model)
        ref.checkpointing = False
        ref.eval()
        for p in ref.parameters():
            p.requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)

    def run_model(m, ids, keep):
        """The prepared model's forward: autocast under amp, outputs converted to fp32 (accelerate)."""
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            logits = gm.forward(m, ids, keep)
        return logits.float() if amp else logits

    def per_token_logps(m, input_ids, logits_to_keep, batch_size=None, compute_entropy=False):
        """_get_per_token_logps_and_entropies (grpo_trainer.py:1434-1538)."""
        batch_size = batch_size or input_ids.size(0)
        all_logps, all_entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            input_ids_batch = input_ids[start:start + batch_size]
            logits = run_model(m, input_ids_batch, logits_to_keep + 1)
            logits = logits[:, :-1, :]
            logits = logits[:, -logits_to_keep:, :]
            logits.div_(TEMPERATURE)
            completion_ids = input_ids_batch[:, -logits_to_keep:]
            all_logps.append(selective_log_softmax(logits, completion_ids))
            if compute_entropy:
                with torch.no_grad():
                    all_entropies.append(entropy_from_logits(logits))
        logps = torch.cat(all_logps, dim=0)
        return logps, (torch.cat(all_entropies, dim=0) if compute_entropy else None)

    def generate(prompt_ids, prompt_mask, phases):
        """transformers' generate (_sample) with a DynamicCache, do_sample, no logits processors."""
        at = current()
        reset()
        rows = prompt_ids.size(0)
        cache = gm.DynamicCache(cfg["layers"])
        input_ids, attention_mask = prompt_ids, prompt_mask
        step_ids = input_ids
        next_token_logits = None
        for _ in range(C):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                logits = gm.forward_cached(model, step_ids, cache, attention_mask)
            if amp:
                logits = logits.float()  # accelerate's convert_outputs_to_fp32
            next_token_logits = logits[:, -1, :].to(copy=True, dtype=torch.float32)
            probs = F.softmax(next_token_logits, dim=-1)
            next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
            attention_mask = torch.cat([attention_mask, attention_mask.new_ones((rows, 1))], dim=-1)
            step_ids = next_tokens[:, None]
            del logits, probs
        phases["generation end rise"] = current() - at
        phases["kv cache held"] = cache.nbytes()
        phases["generation"] = peak() - base
        phases["generation rise"] = peak() - at
        del cache
        return input_ids

    def generate_and_score(phases):
        """_generate_and_score_completions: rollout, log-prob pass, advantages; the kept slices."""
        # G / n prompts, each repeated n times (RepeatSampler), P tokens, no padding
        prompt_ids = torch.randint(0, V, (G // n, P)).repeat_interleave(n, dim=0)
        prompt_mask = torch.ones_like(prompt_ids)
        phases["resident"] = current() - base
        with torch.no_grad(), checkpointing_off(model):
            prompt_completion_ids = generate(prompt_ids, prompt_mask, phases)
        completion_ids = prompt_completion_ids[:, P:].clone()  # re-padded from lists in TRL: a new tensor
        del prompt_completion_ids
        completion_mask = torch.ones_like(completion_ids, dtype=torch.int)  # no EOS: every completion is C long
        num_items_in_batch = completion_mask.sum()
        prompt_completion_ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)  # noqa: F841 (the model takes none)

        old_per_token_logps = ref_per_token_logps = None
        need_old = accum % (spg * NUM_ITERATIONS) != 0
        at = current()
        reset()
        with torch.no_grad(), checkpointing_off(model):
            if need_old:
                old_per_token_logps, _ = per_token_logps(model, prompt_completion_ids, C, B)
            if beta != 0.0:
                if ref is not None:
                    ref_per_token_logps, _ = per_token_logps(ref, prompt_completion_ids, C, B)
                else:
                    with adapters_disabled(model):
                        ref_per_token_logps, _ = per_token_logps(model, prompt_completion_ids, C, B)
        if need_old or beta != 0.0:
            phases["logps pass"] = peak() - base
            phases["logps pass rise"] = peak() - at

        rewards = torch.randn(G, generator=rewards_rng)  # one reward function's scores
        mean_grouped = rewards.view(-1, n).mean(dim=1).repeat_interleave(n, dim=0)
        std_grouped = rewards.view(-1, n).std(dim=1).repeat_interleave(n, dim=0)
        advantages = (rewards - mean_grouped) / (std_grouped + 1e-4)

        batch = {"prompt_ids": prompt_ids, "prompt_mask": prompt_mask, "completion_ids": completion_ids,
                 "completion_mask": completion_mask, "advantages": advantages,
                 "old_per_token_logps": old_per_token_logps, "ref_per_token_logps": ref_per_token_logps}
        permutation = torch.randperm(G)  # shuffle_sequence_dict
        batch = {k: (v[permutation] if v is not None else None) for k, v in batch.items()}
        return [dict({k: (v[i * B:(i + 1) * B] if v is not None else None) for k, v in batch.items()},
                     num_items_in_batch=num_items_in_batch) for i in range(spg)]  # split_tensor_dict

    def compute_loss(inputs):
        """_compute_loss (grpo_trainer.py:2991-3150), loss_type dapo, token-level importance sampling."""
        prompt_ids, prompt_mask = inputs["prompt_ids"], inputs["prompt_mask"]
        completion_ids, completion_mask = inputs["completion_ids"], inputs["completion_mask"]
        input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)  # noqa: F841
        logits_to_keep = completion_ids.size(1)
        mask = completion_mask
        logps, entropies = per_token_logps(model, input_ids, logits_to_keep, compute_entropy=True)
        advantages = inputs["advantages"].unsqueeze(1)
        old = inputs["old_per_token_logps"]
        old = logps.detach() if old is None else old
        log_ratio = logps - old
        coef_1 = torch.exp(log_ratio)
        if beta != 0.0:
            ref_logps = inputs["ref_per_token_logps"]
            per_token_kl = torch.exp(ref_logps - logps) - (ref_logps - logps) - 1
        coef_2 = torch.clamp(coef_1, 1 - EPSILON, 1 + EPSILON)
        per_token_loss1 = coef_1 * advantages
        per_token_loss2 = coef_2 * advantages
        per_token_loss = -torch.min(per_token_loss1, per_token_loss2)
        if beta != 0.0:
            per_token_loss = per_token_loss + beta * per_token_kl
        normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / 1  # / num_processes
        return (per_token_loss * mask).sum() / normalizer

    def cycle():
        """One generation and the steps_per_generation micro-batches it feeds."""
        phases = {"train forward": 0, "backward": 0, "optimizer step": 0}
        slices = generate_and_score(phases)
        losses, expected = [], []
        for i, inputs in enumerate(slices):
            reset()
            loss = compute_loss(inputs)
            phases["train forward"] = max(phases["train forward"], peak() - base)
            if i < accum:  # before the first update: ratio 1, reference == policy
                losses.append(float(loss))
                expected.append(-float(inputs["advantages"].sum()) / G)
            reset()
            loss.backward()  # no division by the accumulation steps (grpo_trainer.py:945-950)
            del loss
            phases["backward"] = max(phases["backward"], peak() - base)
            if (i + 1) % accum == 0:
                reset()
                opt.step()
                phases["optimizer step"] = max(phases["optimizer step"], peak() - base)
                opt.zero_grad(set_to_none=True)
        return phases, sum(losses), sum(expected)

    _, first_loss, first_expected = cycle()  # allocates the AdamW state
    phases, _, _ = cycle()
    candidates = {k: phases[k] for k in ("generation", "logps pass", "train forward", "backward", "optimizer step")
                  if k in phases}
    at = max(candidates, key=candidates.get)
    params = sum(p.numel() for nm, p in model.named_parameters() if "lora_" not in nm)
    return {"params": params, "trainable_params": sum(p.numel() for p in trainable),
            "ref_params": sum(p.numel() for p in ref.parameters()) if ref is not None else 0,
            "phases": phases, "allocated_peak_bytes": candidates[at], "peak_phase": at,
            "first_loss": first_loss, "first_loss_expected": first_expected, "torch": torch.__version__}


def selftest():
    """The cached (generation) forward against the full forward: the same last-position logits for
    every prefix, for Llama with grouped KV heads, GPT-2 and a LoRA model; returns the failures."""
    import torch
    import hfmodels
    import grpo_models as gm

    torch.manual_seed(0)
    bad = []
    for family, shape, lora in (("llama", "s3", 0), ("gpt2", "s1", 0), ("llama", "s1", LORA_RANK)):
        layers, hidden, heads, kv, ffn, vocab = SHAPES[shape]
        cfg = {"family": family, "layers": layers, "hidden": hidden, "heads": heads,
               "kv_heads": kv if family == "llama" else heads, "ffn": ffn, "vocab": vocab, "max_pos": 1024,
               "lora_rank": lora, "lora_targets": "all", "dropout": 0.0}
        model = hfmodels.build(cfg)
        if lora:  # make the adapters do something
            for nm, p in model.named_parameters():
                if "lora_B" in nm:
                    torch.nn.init.normal_(p, std=0.02)
        ids = torch.randint(0, vocab, (3, 20))
        with torch.no_grad():
            full = gm.forward(model, ids)
            cache = gm.DynamicCache(layers)
            mask = torch.ones(3, 12, dtype=torch.long)
            got = [gm.forward_cached(model, ids[:, :12], cache, mask)[:, -1]]
            for t in range(12, 20):
                mask = torch.cat([mask, mask.new_ones((3, 1))], dim=-1)
                got.append(gm.forward_cached(model, ids[:, t:t + 1], cache, mask)[:, -1])
            want = full[:, 11:20]
            err = (torch.stack(got, dim=1) - want).abs().max().item()
            tail = gm.forward(model, ids, logits_to_keep=5)
            err_keep = (tail - full[:, -5:]).abs().max().item()
            length = cache.length()
        name = f"{family}-{shape}{'-lora' if lora else ''}"
        if err > 1e-4:
            bad.append(f"selftest {name}: the cached forward's logits differ from the full forward's by {err:.2e}")
        if err_keep > 1e-5:
            bad.append(f"selftest {name}: logits_to_keep=5 differs from the full forward's tail by {err_keep:.2e}")
        if length != 20:
            bad.append(f"selftest {name}: the cache holds {length} positions after 20 tokens")
    return bad


# ------------------------------------------------------------- running

def measure_in_child(cfg, counter):
    # oneDNN's primitive cache and ideep's LRU cache keep a few KiB per matmul shape for the life of the
    # process (bf16 matmuls on the CPU go through them; fp32 ones do not): decoding makes a new shape at
    # every token, so under amp-bf16 they would grow by megabytes and stay. No GPU allocator holds such
    # bytes; with the caches off, what is counted is the tensors.
    env = dict(os.environ, OMP_NUM_THREADS="1", LD_PRELOAD=counter, ONEDNN_PRIMITIVE_CACHE_CAPACITY="0",
               LRU_CACHE_CAPACITY="1")
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "measure", json.dumps(cfg)],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"grpo: error: measuring '{cfg['name']}' failed:\n{p.stderr.strip()}")
    return json.loads(p.stdout)


def row_for(cfg, m):
    fp32 = 4
    amp = cfg["precision"] == "amp-bf16"
    head_dim = cfg["hidden"] // cfg["heads"]
    ph = m["phases"]
    kv_elt = 2 if amp else fp32  # K and V come out of linears under autocast (and hfmodels' bf16 rotary)
    return {
        **{k: cfg[k] for k in SETTINGS},
        "params": m["params"], "trainable_params": m["trainable_params"],
        "param_bytes": m["params"] * fp32 + (m["trainable_params"] * fp32 if cfg["lora_rank"] else 0),
        "ref_param_bytes": m["ref_params"] * fp32,
        "grad_bytes": m["trainable_params"] * fp32,
        "adam_bytes": 2 * m["trainable_params"] * fp32,
        "kv_cache_bytes": 2 * cfg["layers"] * cfg["generation_rows"] * cfg["kv_heads"]
        * (cfg["prompt"] + cfg["completion"] - 1) * head_dim * kv_elt,
        "train_logits_bytes": cfg["rows"] * (cfg["completion"] + 1) * cfg["vocab"] * fp32,
        "resident_before_generation": ph["resident"],
        "generation_peak_bytes": ph["generation"], "generation_rise_bytes": ph["generation rise"],
        "generation_end_rise_bytes": ph["generation end rise"],
        "logps_pass_peak_bytes": ph.get("logps pass", ""), "logps_pass_rise_bytes": ph.get("logps pass rise", ""),
        "train_forward_peak_bytes": ph["train forward"], "backward_peak_bytes": ph["backward"],
        "optimizer_step_peak_bytes": ph["optimizer step"],
        "allocated_peak_bytes": m["allocated_peak_bytes"], "peak_phase": m["peak_phase"],
        "first_loss": f"{m['first_loss']:.6f}", "torch": m["torch"],
        "vs": cfg["vs"], "_kv_held": ph["kv cache held"], "_expected": m["first_loss_expected"],
    }


def checks(rows):
    """What must hold within and between the configurations; returns the failures."""
    by = {r["name"]: r for r in rows}
    bad = []
    for r in rows:
        if r["_kv_held"] != r["kv_cache_bytes"]:
            bad.append(f"{r['name']}: the cache's tensors hold {r['_kv_held']} bytes, the shapes say "
                       f"{r['kv_cache_bytes']}")
        for col in ("generation_rise_bytes", "generation_end_rise_bytes"):
            if r[col] < r["kv_cache_bytes"]:
                bad.append(f"{r['name']}: {col} {r[col]} is below the KV cache's {r['kv_cache_bytes']} bytes")
        # before the first update the ratio is 1 and the reference is the policy: the loss is
        # -sum(advantages of the step's rows) / G (0 when the step covers the whole generation batch)
        tol = 4e-3 if r["precision"] == "amp-bf16" else 1e-4
        if abs(float(r["first_loss"]) - r["_expected"]) > tol:
            bad.append(f"{r['name']}: first loss {r['first_loss']}, expected {r['_expected']:.6f} "
                       f"(ratio 1, no KL before the first update)")
        has_pass = r["beta"] != 0 or r["accum"] % r["steps_per_generation"] != 0
        if has_pass != (r["logps_pass_peak_bytes"] != ""):
            bad.append(f"{r['name']}: a log-prob pass {'missing' if has_pass else 'where none is due'}")
        elif has_pass and r["logps_pass_rise_bytes"] < r["train_logits_bytes"]:
            bad.append(f"{r['name']}: the log-prob pass rose {r['logps_pass_rise_bytes']} bytes, less than one "
                       f"chunk's logits ({r['train_logits_bytes']})")
        if r["train_forward_peak_bytes"] - r["resident_before_generation"] < r["train_logits_bytes"]:
            bad.append(f"{r['name']}: the training forward rose less than its logits")
        plain = r["vs"]
        other = by.get(plain)
        if other is None:
            continue
        if r["reference"] == "copy":
            held = r["resident_before_generation"] - other["resident_before_generation"]
            if abs(held - r["ref_param_bytes"]) > 0.02 * r["ref_param_bytes"] + 65536:
                bad.append(f"{r['name']}: holds {held} bytes more than {plain} before generating, "
                           f"the reference's weights are {r['ref_param_bytes']}")
            if not r["logps_pass_peak_bytes"] > other["resident_before_generation"] + r["ref_param_bytes"]:
                bad.append(f"{r['name']}: the log-prob pass does not hold the reference's weights")
        if r["accum"] == 2 and r["steps_per_generation"] == 2:
            # the second micro-batch's forward runs with the first one's gradients held
            more = r["train_forward_peak_bytes"] - other["train_forward_peak_bytes"]
            if abs(more - r["grad_bytes"]) > 0.02 * r["grad_bytes"] + 262144:
                bad.append(f"{r['name']}: the forward peak is {more} bytes above {plain}'s, the gradients are "
                           f"{r['grad_bytes']}")
        if r["lora_rank"] and not other["lora_rank"] and \
                not r["resident_before_generation"] < other["resident_before_generation"]:
            bad.append(f"{r['name']}: LoRA holds no less than full fine-tuning before generating")
    return bad


def run(argv):
    import probe
    o, cfgs = probe.run_args("grpo.py", os.path.join(HERE, "grpo_measurements.csv"), CONFIGS, argv)
    counter = o.counter
    t0 = time.time()
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "selftest"], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    if p.returncode not in (0, 1):
        sys.exit(f"grpo: error: the selftest failed:\n{p.stderr.strip()}")
    bad = [line for line in p.stdout.splitlines() if line]
    print(f"{'config':<34} {'peak':>8} {'phase':<15} {'resident':>8} {'gen rise':>8} {'kv':>8} {'logps':>8} "
          f"{'train fw':>8} {'backward':>8} {'opt':>8}   (MiB)")
    rows = []
    for cfg in cfgs:
        r = row_for(cfg, measure_in_child(cfg, counter))
        rows.append(r)
        print(f"{r['name']:<34} {mib(r['allocated_peak_bytes'])} {r['peak_phase']:<15} "
              f"{mib(r['resident_before_generation'])} {mib(r['generation_rise_bytes'])} "
              f"{mib(r['kv_cache_bytes'])} {mib(r['logps_pass_peak_bytes'])} {mib(r['train_forward_peak_bytes'])} "
              f"{mib(r['backward_peak_bytes'])} {mib(r['optimizer_step_peak_bytes'])}")
    tmp = f"{o.out}.tmp.{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, o.out)
    bad += checks(rows)
    for line in bad:
        print("CHECK FAILED: " + line)
    print(f"({len(rows)} configurations in {time.time() - t0:.0f} s; {len(bad)} checks failed)")
    return 1 if bad else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "measure":
        print(json.dumps(measure(json.loads(sys.argv[2]))))
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "selftest":
        bad = selftest()
        for line in bad:
            print(line)
        return 1 if bad else 0
    if len(sys.argv) >= 2 and sys.argv[1] == "run":
        return run(sys.argv[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
