#!/usr/bin/env python3
"""test_check.py BIN — memplan check on the real configuration files under
tests/data/configs/ (each copied from its tool's repository; INDEX.csv names the
repository, path and commit), against tests/data/configs/expected/<file>.json,
written by reading each file and its tool's documented defaults (not memplan's
output):

    {"args": ["--gpu", "24GB"],          extra flags (the files name the model)
     "exit": 0,                          0 fits, 1 does not (each from a published run on that
                                         GPU), "verdict" either (nothing published), 2 refused
     "settings": {"batch": "2", ...},    each setting's value, as memplan names it
     "keys": {"batch": "micro_batch_size", ...},   the key each came from
     "refused": "text",                  for exit 2: a piece of the one-line message
     "notes": "text",                    a piece of one of the report's notes
     "with": ["dir/file"],               files read with it (a YAML and the DeepSpeed JSON it names)
     "why": "text"}                      where the expectation comes from

Every file in INDEX.csv must have an expectation. Prints one line per failure and
a summary; exit 1 on any failure."""
import csv
import json
import os
import subprocess
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "configs")
failures = []
passed = 0


def check(ok, what):
    global passed
    if ok:
        passed += 1
    else:
        failures.append(what)


# TRL's preference and RL configs, written here (TRL ships no YAML of them): which keys
# name which trainer (trl@f2cd5771 dpo_config.py, experimental/cpo/cpo_config.py, kto_config.py,
# grpo_config.py, reward_config.py),
# and --method on a file of Trainer keys alone. Each: YAML, flags, exit, settings.
SYNTHETIC = [
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nbeta: 0.1\n"
     "precompute_ref_log_probs: true\nloss_type: [ipo]\n", [], 0,
     {"method": ("ipo", "loss_type"), "reference": ("precomputed", "precompute_ref_log_probs"),
      "seq": ("1024", "(default)"), "batch": ("2", "per_device_train_batch_size")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nsync_ref_model: false\n"
     "use_peft: true\n", [], 0, {"method": ("dpo", "sync_ref_model"), "reference": ("adapter", "(default)")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nloss_type: simpo\n"
     "simpo_gamma: 0.5\nmax_length: 512\n", [], 0,
     {"method": ("simpo", "loss_type"), "reference": ("none", "(default)"), "seq": ("512", "max_length")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\ncpo_alpha: 1.0\n", [], 0,
     {"method": ("cpo", "cpo_alpha")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 4\nmax_length: 2048\n",
     ["--method", "dpo"], 0, {"method": ("dpo", "--method"), "reference": ("model", "(default)"),
                              "batch": ("4", "per_device_train_batch_size")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nbeta: 0.1\n",
     ["--method", "orpo"], 0, {"method": ("orpo", "--method"), "reference": ("none", "(default)")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nprecompute_ref_log_probs: true\n",
     ["--method", "simpo"], 2, "'precompute_ref_log_probs': a reference for simpo"),
    # KTOConfig's own keys (kto_config.py:192-213), GRPOConfig's (grpo_config.py:474-671), RewardConfig's (:155)
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nbeta: 0.1\ndesirable_weight: 1.0\n",
     [], 0, {"method": ("kto", "desirable_weight"), "reference": ("model", "(default)")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nloss_type: kto\nuse_peft: true\n"
     "precompute_ref_log_probs: true\n", [], 0,
     {"method": ("kto", "loss_type"), "reference": ("precomputed", "precompute_ref_log_probs")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nnum_generations: 8\n", [], 2,
     "does not divide the generation batch"),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 8\nnum_generations: 8\n"
     "max_completion_length: 256\nuse_vllm: true\nvllm_gpu_memory_utilization: 0.4\n", [], 0,
     {"method": ("grpo", "num_generations"), "reference": ("none", "(default)"), "rollout": ("vllm", "use_vllm"),
      "rollout-memory": ("0.4", "vllm_gpu_memory_utilization"), "completion-len": ("256", "max_completion_length"),
      "seq": ("768", "(prompt and completion)")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 8\nnum_generations: 4\nbeta: 0.04\n"
     "use_vllm: true\nvllm_mode: server\n", ["--prompt-len", "256"], 0,
     {"reference": ("model", "beta"), "rollout": ("server", "vllm_mode"), "seq": ("768", "(prompt and completion)"),
      "generations": ("4", "num_generations")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 8\nnum_generations: 8\n"
     "steps_per_generation: 4\n", [], 2, "'steps_per_generation': a generation batch other than"),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 8\nreward_funcs: [my/reward-model]\n",
     [], 2, "'reward_funcs': a reward model loaded beside the policy"),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 4\ncenter_rewards_coefficient: null\n"
     "max_length: 512\n", [], 0, {"method": ("reward", "center_rewards_coefficient"), "reference": ("none", "(default)")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 4\ndesirable_weight: 1.0\n"
     "num_generations: 8\n", [], 2, "a GRPOConfig key beside the KTOConfig key"),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\ncpo_alpha: 1.0\n"
     "precompute_ref_log_probs: false\n", [], 2, "'precompute_ref_log_probs': precompute_ref_log_probs (DPOConfig's and "
     "KTOConfig's) beside 'cpo_alpha'"),
    # OnlineDPOConfig's own key (online_dpo_config.py:180), PPOConfig's (ppo_config.py:124-273)
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 4\nmax_new_tokens: 128\nmax_length: 640\n"
     "use_vllm: true\nvllm_gpu_memory_utilization: 0.5\nbeta: [0.1]\n", [], 0,
     {"method": ("online-dpo", "max_new_tokens"), "reference": ("model", "(default)"),
      "completion-len": ("128", "max_new_tokens"), "seq": ("640", "max_length"), "prompt-len": ("512", "(default)"),
      "rollout": ("vllm", "use_vllm"), "rollout-memory": ("0.5", "vllm_gpu_memory_utilization")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 4\nuse_vllm: true\nvllm_mode: server\n"
     "max_new_tokens: 64\nuse_peft: true\n", [], 0,
     {"method": ("online-dpo", "max_new_tokens"), "reference": ("adapter", "(default)"), "rollout": ("server", "vllm_mode"),
      "seq": ("512", "(default)")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 4\nresponse_length: 100\nnum_ppo_epochs: 2\n"
     "sft_model_path: Qwen/Qwen2.5-0.5B\nreward_model_path: Qwen/Qwen2.5-0.5B\n", ["--prompt-len", "256"], 0,
     {"method": ("ppo", "response_length"), "reference": ("model", "(default)"), "completion-len": ("100", "response_length"),
      "seq": ("356", "(prompt and completion)"), "reward-model": ("qwen2.5-0.5b", "reward_model_path"),
      "rollout": ("generate", "(default)")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nreward_model_path: Qwen/Qwen2.5-0.5B\n",
     ["--method", "ppo"], 0, {"method": ("ppo", "--method"), "completion-len": ("53", "(default)")}),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nreward_model_path: Qwen/Qwen2.5-0.5B\n",
     [], 2, "'reward_model_path': a key of OnlineDPOConfig and PPOConfig alike"),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 8\nnum_generations: 8\nmax_new_tokens: 64\n",
     [], 2, "'max_new_tokens': a key of OnlineDPOConfig beside 'num_generations'"),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nnum_ppo_epochs: 1\nnum_mini_batches: 3\n",
     ["--prompt-len", "128"], 2, "'num_mini_batches': 3 mini-batches do not divide the local batch of 2"),
    ("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\nuse_peft: true\nref_adapter_name: ref\n",
     [], 2, "'ref_adapter_name': a second adapter loaded as the reference"),
]


def synthetic(memplan):
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for i, (text, args, want, exp) in enumerate(SYNTHETIC):
            path = os.path.join(d, f"trl{i}.yaml")
            open(path, "w").write(text)
            p = subprocess.run([memplan, "check", path, "--gpu", "80GB", *args, "--format", "json"],
                               capture_output=True, text=True)
            what = f"synthetic TRL config {i} ({' '.join(args) or 'no flags'})"
            if want == 2:
                check(p.returncode == 2 and exp in p.stderr and p.stderr.count("\n") == 1,
                      f"{what}: exit {p.returncode}, said {p.stderr.strip()[:200]!r}, wanted {exp!r}")
                continue
            check(p.returncode in (0, 1), f"{what}: exit {p.returncode}: {p.stderr.strip()[:200]}")
            if p.returncode not in (0, 1):
                continue
            origins = {o["setting"]: o for o in json.loads(p.stdout)["settings"]}
            for setting, (value, key) in exp.items():
                o = origins.get(setting)
                check(o is not None and (o["value"], o["key"]) == (value, key),
                      f"{what}: {setting} is {(o['value'], o['key']) if o else None}, wanted {(value, key)}")


def main():
    memplan = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build/bin", "memplan")
    rows = list(csv.DictReader(open(os.path.join(HERE, "INDEX.csv"))))
    # a YAML and the DeepSpeed JSON it names are one run: the JSON alone is read with its YAML
    named = {r["names"] for r in rows if r["names"]}
    checked = 0
    for r in rows:
        f = r["file"]
        exp_path = os.path.join(HERE, "expected", f + ".json")
        if not os.path.exists(exp_path):
            check(f in named, f"{f}: no expectation in expected/")
            continue
        exp = json.load(open(exp_path))
        files = [os.path.join(HERE, f)] + [os.path.join(HERE, n) for n in exp.get("with", [])]
        p = subprocess.run([memplan, "check", *files, *exp.get("args", []), "--format", "json"],
                           capture_output=True, text=True)
        checked += 1
        want_exit = exp.get("exit", 0)
        ok = p.returncode in (0, 1) if want_exit == "verdict" else p.returncode == want_exit
        check(ok, f"{f}: exit {p.returncode}, wanted {want_exit}: {p.stderr.strip()[:200]}")
        if want_exit == 2:
            check(exp.get("refused", "") in p.stderr and p.stderr.count("\n") == 1,
                  f"{f}: the refusal says {p.stderr.strip()[:200]!r}, wanted {exp.get('refused')!r}")
            continue
        if p.returncode not in (0, 1):
            continue
        got = json.loads(p.stdout)
        if "notes" in exp:
            check(any(exp["notes"] in n for n in got["notes"]), f"{f}: no note says {exp['notes']!r}: {got['notes']}")
        origins = {o["setting"]: o for o in got["settings"]}
        for setting, value in exp.get("settings", {}).items():
            o = origins.get(setting)
            check(o is not None and o["value"] == str(value),
                  f"{f}: {setting} is {o['value'] if o else None!r}, wanted {value!r}")
        for setting, key in exp.get("keys", {}).items():
            o = origins.get(setting)
            check(o is not None and o["key"] == key, f"{f}: {setting} from {o['key'] if o else None!r}, wanted {key!r}")
    check(checked >= 40, f"{checked} files checked, wanted at least 40")
    synthetic(memplan)
    for x in failures:
        print("FAIL " + x)
    print(f"check: {checked} real configs; {passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
