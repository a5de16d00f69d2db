#!/usr/bin/env python3
"""test_emit_trl.py - the hf bundle for the preference and RL methods (memplan --method M --emit hf):
train.py trains with TRL's trainer for the method, and trl.yaml states its config's keys. For a
matrix of models, GPUs, tasks, methods and references, each bundle is checked against TRL's own
vocabulary and against the plan:

  * train.py compiles (py_compile) and trl.yaml parses;
  * the trainer and config classes are the method's, imported from where they live at the commit
    (tests/data/engines/trl_methods.csv: trainer_class, config_class and the trainer's file);
  * every keyword given to the config class is a field of it: TRL's own
    (tests/data/engines/trl_config_keys.csv) or TrainingArguments' (transformers_training_args.txt);
  * what the keys say reads back equal to the plan's JSON (--format json): micro-batch,
    accumulation, precision flags, checkpointing, optimizer, max_length, the reference
    (precompute_ref_log_probs, ref_model, GRPO's beta), the rollout's keys;
  * the reference is passed as TRL takes it: ref_model= for a copy, peft_config= where the
    trainer makes the adapter (a PeftModel given to DPO/KTO without it gets a reference adapter);
  * trl.yaml states the same config keys with the same values, and train.py the plan's peak;
  * `memplan check trl.yaml` reads back the plan's settings and predicts its bytes exactly (the
    flags a file cannot say are given: --prompt-len for GRPO, --method orpo, --reference model
    beside LoRA);
  * plans TRL has no form for are refused with one line.

Usage: test_emit_trl.py BIN_DIR. Prints one line per failure and "emit-trl: N passed, N failed".
"""
import ast
import json
import os
import py_compile
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import yaml

from emit_checks import NOT_A_SETTING, Tally, check_back, csv_rows, names, same_value

ENGINES = "tests/data/engines"
# VERSION at huggingface/trl@f2cd57710ae345ea6428ae95363267fcf38a3dc8, the commit trl_config_keys.csv was read at
TRL_VERSION = "1.10.0.dev0"
BF16 = {"amp-bf16", "mixed-bf16", "pure-bf16"}
FP16 = {"amp-fp16", "mixed-fp16"}
OPTIM = {"adamw": "adamw_torch", "adamw-8bit": "adamw_bnb_8bit", "paged-adamw": "paged_adamw_32bit",
         "paged-adamw-8bit": "paged_adamw_8bit", "sgd": "sgd", "sgd-momentum": "sgd",
         "adafactor": "adafactor", "lion": "lion_32bit",
         "adamw-8bit-torchao": "adamw_torch_8bit", "adamw-4bit-torchao": "adamw_torch_4bit"}
# TRL ModelConfig's keys (trl/trainer/model_config.py at the commit) and the run's, in trl.yaml beside the config's
MODEL_KEYS = {"model_name_or_path", "dtype", "attn_implementation", "use_peft", "lora_r", "lora_alpha",
              "lora_dropout", "lora_target_modules", "lora_task_type", "load_in_4bit", "load_in_8bit",
              "bnb_4bit_quant_type", "use_bnb_nested_quant"}
RUN_KEYS = {"output_dir", "max_steps", "learning_rate", "deepspeed"}
# where the trainer makes the adapter itself (peft_config=): the methods with a reference
PEFT_IN_TRAINER = {"dpo", "ipo", "kto", "grpo", "online-dpo", "ppo"}
METHODS = ["dpo", "ipo", "simpo", "cpo", "orpo", "kto", "reward", "grpo", "online-dpo", "ppo"]
# the completion's key of each generating method's config (grpo_config.py 488, online_dpo_config.py 180,
# ppo_config.py 151), and which configs have vLLM's keys (grpo_config.py 577-646, online_dpo_config.py 266-340)
COMPLETION_KEY = {"grpo": "max_completion_length", "online-dpo": "max_new_tokens", "ppo": "response_length"}
VLLM = {"grpo", "online-dpo"}
# the config keys train.py gives as its variables: what trl.yaml states in their place
VARIABLES = {"sft_model_path": "MODEL", "reward_model_path": "REWARD", "total_episodes": "EPISODES"}
REWARD_PLACEHOLDER = "path/to/reward-model"

TALLY = Tally()
check = TALLY.check


def trl_facts():
    """method -> (trainer class, config class, module) from trl_methods.csv."""
    rows = csv_rows(f"{ENGINES}/trl_methods.csv")
    out = {}
    for m in METHODS:
        fact = {r["fact"]: r for r in rows if r["method"] == m}
        trainer = fact["trainer_class"]
        config = fact["config_class"]["value"] if "config_class" in fact else None
        path = trainer["trl_file"].split("/")
        module = "trl" if path[1] == "trainer" else ".".join(path[:-1])  # trl/experimental/cpo/x.py
        out[m] = (trainer["value"], config, module)
    out["ipo"] = (out["ipo"][0], out["dpo"][1], out["dpo"][2])  # IPO is DPOConfig's loss_type (trl_methods.csv)
    return out


def config_keys():
    keys = {}
    for r in csv_rows(f"{ENGINES}/trl_config_keys.csv"):
        keys.setdefault(r["config"], set()).add(r["key"])
    return keys


def calls(tree):
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            fn = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            found.setdefault(fn, []).append({k.arg: k.value for k in node.keywords})
    return found


def imports(tree):
    return {a.name: n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}


def value(node):
    if isinstance(node, ast.Attribute):
        return value(node.value) + "." + node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ast.literal_eval(node)


def reference_flags(s):
    """The flags check needs beside trl.yaml: what no key of the file says."""
    flags = []
    if s["method"] == "orpo":
        flags += ["--method", "orpo"]  # ORPOConfig has no key of its own
    if s["method"] in ("grpo", "ppo"):
        flags += ["--prompt-len", str(s["prompt-len"])]  # GRPOConfig and PPOConfig have no prompt length
    if s["reference"] == "model" and s["lora-rank"] and s["method"] != "grpo":
        flags += ["--reference", "model"]  # an explicit ref_model: no key
    return flags


def check_bundle(tag, d, plan, facts, ckeys, ta):
    s = plan["settings"]
    method = s["method"]
    trainer, config, module = facts[method]
    text = open(os.path.join(d, "train.py")).read()
    try:
        py_compile.compile(os.path.join(d, "train.py"), doraise=True)
    except py_compile.PyCompileError as e:
        check(False, f"{tag}: py_compile: {e}")
        return
    tree = ast.parse(text)
    c, imp = calls(tree), imports(tree)
    check(imp.get(trainer) == module and imp.get(config) == module,
          f"{tag}: {trainer} and {config} imported from {module} (got {imp.get(trainer)}, {imp.get(config)})")
    cfg = c.get(config, [])
    check(len(cfg) == 1, f"{tag}: one {config} call")
    if len(cfg) != 1:
        return
    cfg = cfg[0]
    for k in cfg:
        check(k in ckeys[config] or k in ta, f"{tag}: '{k}' is no field of {config} nor of TrainingArguments")
    v = {k: value(x) if not isinstance(x, ast.Attribute) or not value(x).startswith("ARGS.") else value(x)
         for k, x in cfg.items()}
    check(v["per_device_train_batch_size"] == s["batch"], f"{tag}: micro-batch {s['batch']}")
    check(v["gradient_accumulation_steps"] == s["accum"], f"{tag}: accumulation {s['accum']}")
    check(v["bf16"] == (s["precision"] in BF16) and v["fp16"] == (s["precision"] in FP16),
          f"{tag}: the 16-bit flags for {s['precision']} (TRL turns bf16 on unless told)")
    ckpt = s["checkpointing"] != "none"
    check(v["gradient_checkpointing"] == ckpt, f"{tag}: gradient_checkpointing for {s['checkpointing']} (TRL's "
          "default is on: written either way)")
    check(v["optim"] == OPTIM[s["optimizer"]], f"{tag}: optim for {s['optimizer']}")
    ref = s["reference"]
    if method == "grpo":
        check("max_length" not in v and "max_prompt_length" not in v, f"{tag}: GRPOConfig has no max_length")
        check(v["num_generations"] == s["generations"], f"{tag}: num_generations {s['generations']}")
        check(v["max_completion_length"] == s["completion-len"], f"{tag}: max_completion_length")
        check((v["beta"] == 0.0) == (ref == "none") and v["beta"] in (0.0, 0.04),
              f"{tag}: beta {v['beta']} for reference {ref}")
        check(value(next(a for a in ast.walk(tree) if isinstance(a, ast.Assign) and
                         getattr(a.targets[0], "id", "") == "PROMPT_LEN").value) == s["prompt-len"],
              f"{tag}: prompts cut at {s['prompt-len']} tokens")
    if method in COMPLETION_KEY:
        ck = COMPLETION_KEY[method]
        check(v.get(ck) == s["completion-len"], f"{tag}: {ck} = the completion {s['completion-len']}")
    if method in VLLM:
        vllm = s["rollout"] in ("vllm", "server")
        check(v["use_vllm"] == vllm, f"{tag}: use_vllm for rollout {s['rollout']}")
        if s["rollout"] == "server":
            check(v["vllm_mode"] == "server" and "vllm_gpu_memory_utilization" not in v,
                  f"{tag}: vllm_mode server, nothing of a colocated engine")
        elif vllm:
            check(v["vllm_mode"] == "colocate", f"{tag}: vllm_mode colocate")
            check(abs(v["vllm_gpu_memory_utilization"] - s["rollout-memory"]) < 1e-9, f"{tag}: vLLM's fraction")
            check(v["vllm_enable_sleep_mode"] == s["rollout-sleep"], f"{tag}: sleep mode")
            if "vllm_max_model_length" in ckeys[config]:
                check(v.get("vllm_max_model_length") == s["rollout-max-len"], f"{tag}: vllm_max_model_length")
    elif method in COMPLETION_KEY:
        check("use_vllm" not in v, f"{tag}: {config} has no use_vllm")
    if method == "ppo":
        check("max_length" not in v, f"{tag}: PPOConfig has no max_length")
        check(v["num_mini_batches"] == 1 and v["local_rollout_forward_batch_size"] == 64,
              f"{tag}: PPO's mini-batches 1 and rollout chunks of 64, as planned")
        check(v["sft_model_path"] == "MODEL" and v["reward_model_path"] == "REWARD" and v["total_episodes"] == "EPISODES",
              f"{tag}: sft_model_path, reward_model_path and total_episodes are train.py's MODEL, REWARD, EPISODES")
        check(value(next(a for a in ast.walk(tree) if isinstance(a, ast.Assign) and
                         getattr(a.targets[0], "id", "") == "PROMPT_LEN").value) == s["prompt-len"],
              f"{tag}: prompts cut at {s['prompt-len']} tokens")
    if method == "online-dpo":
        check(v["max_length"] == s["seq"] == s["prompt-len"] + s["completion-len"],
              f"{tag}: max_length = prompt and completion {s['seq']}")
        check(v["beta"] == 0.1 and v.get("reward_model_path") == "REWARD", f"{tag}: beta 0.1, reward_model_path REWARD")
    elif method not in ("ppo", "grpo"):
        check(v["max_length"] == s["seq"], f"{tag}: max_length = the plan's sequence {s['seq']}")
    if "precompute_ref_log_probs" in ckeys[config]:
        check(v["precompute_ref_log_probs"] == (ref == "precomputed"), f"{tag}: precompute_ref_log_probs for {ref}")
    want_loss = {"dpo": ["sigmoid"], "ipo": ["ipo"], "simpo": "simpo", "cpo": "sigmoid", "kto": "kto",
                 "online-dpo": "sigmoid"}.get(method)
    check(v.get("loss_type") == want_loss, f"{tag}: loss_type {v.get('loss_type')!r}, want {want_loss!r}")
    tr = c.get(trainer, [])
    check(len(tr) == 1, f"{tag}: one {trainer} call")
    if tr:
        tr = tr[0]
        if method == "ppo":  # every argument but ref_model required (ppo_trainer.py 349-357): None under PEFT
            check(value(tr["ref_model"]) == ("ref_model" if ref == "model" else None), f"{tag}: ref_model for {ref}")
            check(value(tr.get("reward_model", ast.Constant(None))) == "reward_model" and
                  value(tr.get("value_model", ast.Constant(None))) == "value_model" and
                  value(tr.get("processing_class", ast.Constant(None))) == "tok",
                  f"{tag}: PPOTrainer takes reward_model, value_model and processing_class")
        else:
            check(("ref_model" in tr) == (ref == "model" and method != "grpo"), f"{tag}: ref_model= iff a reference copy")
        in_trainer = s["lora-rank"] > 0 and method in PEFT_IN_TRAINER
        check(("peft_config" in tr) == in_trainer, f"{tag}: peft_config= iff the trainer makes the adapter")
        check(("get_peft_model" in c) == (s["lora-rank"] > 0 and not in_trainer),
              f"{tag}: get_peft_model iff LoRA and the trainer takes a PeftModel")
        check(("reward_funcs" in tr) == (method in ("grpo", "online-dpo")), f"{tag}: reward_funcs for grpo, online-dpo")
        if method == "online-dpo":
            check(value(tr["reward_funcs"]) == "reward_model", f"{tag}: the reward model as reward_funcs")
    loads = c.get("from_pretrained", [])
    cls = "AutoModelForSequenceClassification" if method == "reward" else "AutoModelForCausalLM"
    check(cls in imp and (method != "reward" or any("num_labels" in k and value(k["num_labels"]) == 1 for k in loads)),
          f"{tag}: the policy is a {cls}")
    if method in ("online-dpo", "ppo"):
        scorers = [k for k in loads if "num_labels" in k and value(k["num_labels"]) == 1]
        check(len(scorers) == (2 if method == "ppo" else 1) and "AutoModelForSequenceClassification" in imp,
              f"{tag}: the reward model{' and the value model' if method == 'ppo' else ''} loaded with one output")
    check(f'Version("{TRL_VERSION}")' in text, f"{tag}: train.py stops under a TRL older than {TRL_VERSION}")
    peak = f"{plan['allocated_bytes'] / 2**30:.2f} GiB allocated, {plan['device_bytes'] / 2**30:.2f} GiB on the device"
    check(text.count("Predicted peak per GPU") == 1 and peak in text, f"{tag}: the plan's peak ({peak})")
    # trl.yaml: the same keys, the same values
    y = yaml.safe_load(open(os.path.join(d, "trl.yaml")))
    ykeys = set(y) - MODEL_KEYS - RUN_KEYS
    pkeys = set(cfg) - RUN_KEYS
    check(ykeys == pkeys, f"{tag}: trl.yaml's config keys {sorted(ykeys ^ pkeys)} differ from train.py's")
    for k in ykeys & pkeys:
        if k in VARIABLES and v[k] == VARIABLES[k]:
            continue
        check(y[k] == v[k], f"{tag}: trl.yaml {k}={y[k]!r}, train.py {v[k]!r}")
    if method == "ppo":
        dp = max(1, s["gpus"] // (s["tp"] * s["pp"]))
        check(y["total_episodes"] == 1000 * s["batch"] * s["accum"] * dp and
              y["sft_model_path"] == y.get("model_name_or_path", "path/to/model"),
              f"{tag}: trl.yaml's total_episodes (1000 updates) and sft_model_path (the policy)")
    if "reward_model_path" in y:
        check(isinstance(y["reward_model_path"], str) and y["reward_model_path"],
              f"{tag}: reward_model_path a Hub id, a folder or {REWARD_PLACEHOLDER}")
    readme = open(os.path.join(d, "README.txt")).read()
    check(TRL_VERSION in readme and "f2cd57710ae345ea6428ae95363267fcf38a3dc8" in readme,
          f"{tag}: README names the TRL version and commit")


def compare_back(tag, plan, p):
    check(p.returncode in (0, 1), f"{tag}: check exit {p.returncode}: {p.stderr.strip()[:300]}")
    if p.returncode not in (0, 1):
        return
    got = json.loads(p.stdout)
    s = plan["settings"]
    origins = {o["setting"]: o for o in got["settings"]}
    for k in ("method", "reference", "batch", "accum", "precision", "optimizer", "checkpointing", "attention"):
        check(k in origins, f"{tag}: check says where {k} came from")
    if s["method"] in COMPLETION_KEY:
        for k in ("generations", "completion-len", "rollout")[0 if s["method"] == "grpo" else 1:]:
            check(k in origins, f"{tag}: check says where {k} came from")
    for k, o in origins.items():
        if k in s and k not in NOT_A_SETTING:
            check(same_value(s[k], o["value"]), f"{tag}: check reads {k} {o['value']!r} from {o['key']}, "
                  f"the plan has {s[k]!r}")
    for b in ("allocated_bytes", "reserved_bytes", "device_bytes"):
        check(round(got[b]) == round(plan[b]), f"{tag}: check's {b} {got[b]!r}, the plan's {plan[b]!r}")
    check(got["unknown_keys"] == [], f"{tag}: every key of trl.yaml is known: {got['unknown_keys']}")


def matrix():
    runs = []
    for model in ("llama-3.2-1b", "qwen2.5-0.5b", "gemma-2-2b"):
        for gpu in ("t4", "rtx4090", "a100-80g"):
            for task in ("full", "lora", "qlora"):
                for method in METHODS:
                    runs.append(["--model", model, "--gpu", gpu, "--task", task, "--method", method])
    for model in ("llama-3.2-1b", "qwen2.5-0.5b"):
        for extra in (["--method", "dpo", "--reference", "precomputed"], ["--method", "kto", "--reference", "precomputed"],
                      ["--method", "dpo", "--task", "lora", "--reference", "model"],
                      ["--method", "kto", "--task", "full", "--reference", "model"],
                      ["--method", "grpo", "--rollout", "vllm"],
                      ["--method", "grpo", "--rollout", "vllm", "--rollout-sleep", "--rollout-memory", "0.45",
                       "--rollout-max-len", "2048"],
                      ["--method", "grpo", "--task", "lora", "--reference", "adapter"],
                      ["--method", "grpo", "--task", "full", "--reference", "model", "--generations", "4",
                       "--completion-len", "256"],
                      ["--method", "ipo", "--compile"],
                      ["--method", "online-dpo", "--rollout", "vllm", "--rollout-sleep", "--rollout-memory", "0.4",
                       "--completion-len", "128", "--prompt-len", "384"],
                      ["--method", "online-dpo", "--task", "lora", "--reference", "model"],
                      ["--method", "online-dpo", "--rollout", "server"],
                      ["--method", "grpo", "--rollout", "server", "--task", "lora", "--reference", "adapter"],
                      ["--method", "ppo", "--task", "lora", "--batch", "8", "--accum", "2", "--completion-len", "128"],
                      ["--method", "ppo", "--task", "full", "--reward-model", "qwen2.5-0.5b", "--gpus", "2",
                       "--zero", "2"]):
            runs.append(["--model", model, "--gpu", "a100-80g", *extra])
    return runs


def one(memplan, tmp, i, args):
    d = os.path.join(tmp, f"b{i}")
    os.makedirs(d)
    p = subprocess.run([memplan, *args, "--emit", "hf", "-o", d + "/", "--format", "json"],
                       capture_output=True, text=True)
    if p.returncode == 1 and "nothing fits" in p.stderr:
        return None
    tag = " ".join(args)
    if p.returncode != 0:
        return tag, None, p, None
    plan = json.loads(p.stdout)
    # an FSDP bundle's accelerate.yaml is part of the run: check reads it beside trl.yaml
    engine = [os.path.join(d, "accelerate.yaml")] if os.path.exists(os.path.join(d, "accelerate.yaml")) else []
    back = check_back(memplan, os.path.join(d, "trl.yaml"), plan, reference_flags(plan["settings"]) + engine)
    return tag, plan, d, back


REFUSED = [
    (["--method", "grpo", "--task", "lora", "--reference", "model", "--batch", "8"], "GRPOTrainer takes no ref_model"),
    (["--method", "dpo", "--task", "lora", "--precision", "pure-bf16"], "upcasts the adapters to fp32"),
    (["--method", "dpo", "--loader", "stream"], "--loader stream has no form in TRL's DPOTrainer"),
    (["--method", "dpo", "--emit", "axolotl"], "has no form in 'axolotl' yet"),
    (["--method", "ppo", "--task", "lora", "--value-lora"], "--value-lora has no form in TRL's PPOTrainer"),
    (["--method", "ppo", "--reference", "precomputed"], "PPOConfig has no precompute_ref_log_probs"),
    (["--method", "online-dpo", "--rollout", "vllm", "--rollout-max-len", "2048"],
     "--rollout-max-len has no form in TRL's OnlineDPOTrainer"),
    (["--method", "ppo", "--task", "lora", "--precision", "mixed-bf16"], "TRL trains the value model whole"),
]


def main():
    memplan = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build/bin", "memplan")
    facts, ckeys = trl_facts(), config_keys()
    ta = names(f"{ENGINES}/transformers_training_args.txt")
    runs = matrix()
    emitted, per_method = 0, {m: 0 for m in METHODS}
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=2) as pool:
        for r in pool.map(lambda a: one(memplan, tmp, *a), enumerate(runs)):
            if r is None:
                continue
            tag, plan, d, back = r
            if plan is None:
                check(False, f"{tag}: memplan exit {d.returncode}: {d.stderr.strip()[:300]}")
                continue
            emitted += 1
            per_method[plan["settings"]["method"]] += 1
            check_bundle(tag, d, plan, facts, ckeys, ta)
            compare_back(tag, plan, back)
        for args, why in REFUSED:
            if "--emit" not in args:
                args = args + ["--emit", "hf"]
            out = os.path.join(tmp, "refused")
            p = subprocess.run([memplan, "estimate", "--model", "qwen2.5-0.5b", "--gpu", "a100-80g", *args,
                                "-o", out + "/"], capture_output=True, text=True)
            check(p.returncode == 2 and why in p.stderr and p.stderr.count("\n") == 1 and p.stdout == ""
                  and not os.path.exists(out), f"{' '.join(args)}: refused in one line ({p.returncode}: "
                  f"{p.stderr.strip()[:200]!r}), nothing written")
    for m, n in per_method.items():
        check(n >= 8, f"{m}: {n} bundles emitted (want >= 8)")
    print(f"emit-trl: {emitted} bundles ({', '.join(f'{n} {m}' for m, n in per_method.items())}); "
          f"{TALLY.passed} passed, {TALLY.failed} failed")
    return 1 if TALLY.failed else 0


if __name__ == "__main__":
    sys.exit(main())
