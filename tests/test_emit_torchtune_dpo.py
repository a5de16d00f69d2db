#!/usr/bin/env python3
"""test_emit_torchtune_dpo.py - `--method dpo --emit torchtune`: torchtune's DPO recipes
(pytorch/torchtune@bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1, tests/data/engines/torchtune_dpo.csv)
written for a matrix of plans and read back by `memplan check`:

  * the recipe: lora_dpo_single_device, lora_dpo_distributed or full_dpo_distributed, in the
    header and in launch.sh's `tune run`; every top-level key one the recipe reads (RECIPE_KEYS);
  * the loss torchtune.rlhf.loss.DPOLoss (beta, label_smoothing: its arguments, dpo.py 70-77),
    the dataset torchtune.datasets.preference_dataset with a placeholder the user sets, the
    plan's batch (pairs), accumulation, max_seq_len, checkpointing and offloading;
    ref_checkpointer exactly where the recipe loads a reference model (full_dpo_distributed);
  * the round trip: check reads method dpo, the recipe's reference and the plan's settings, and
    predicts the plan's allocated, reserved and device bytes exactly;
  * hostile configs: what the recipes cannot run, or memplan does not model, refused in one line.

Usage: test_emit_torchtune_dpo.py BIN_DIR. Prints one line per failure and a summary.
"""
import json
import os
import subprocess
import sys
import tempfile

import yaml

from emit_checks import NOT_A_SETTING, Tally, check_back, emit, same_value

TALLY = Tally()
check = TALLY.check

# The top-level keys each recipe reads (cfg.KEY and cfg.get("KEY") in recipes/*.py at the
# commit above, and cfg.checkpointer through CheckpointClient)
COMMON = {"batch_size", "cudnn_deterministic_mode", "dataset", "device", "dtype", "enable_activation_checkpointing",
          "enable_activation_offloading", "enable_async_checkpointing", "epochs", "gradient_accumulation_steps",
          "log_every_n_steps", "log_level", "log_peak_memory_stats", "loss", "lr_scheduler", "max_steps_per_epoch",
          "metric_logger", "model", "optimizer", "output_dir", "resume_from_checkpoint", "save_every_n_steps", "seed",
          "shuffle", "tokenizer", "checkpointer"}
RECIPE_KEYS = {
    "lora_dpo_single_device": COMMON | {"compile", "save_adapter_weights_only"},
    "lora_dpo_distributed": COMMON | {"custom_sharded_layers", "fsdp_cpu_offload", "fsdp_reshard_after_forward",
                                      "save_adapter_weights_only"},
    "full_dpo_distributed": COMMON | {"clip_grad_norm", "compile", "custom_sharded_layers", "fsdp_cpu_offload",
                                      "fsdp_reshard_after_forward", "optimizer_in_bwd", "profile_memory", "profiler",
                                      "ref_checkpointer"},
}
# the plans: (tag, memplan arguments)
BASE = ["--framework", "torchtune", "--method", "dpo", "--precision", "pure-bf16", "--attention", "flash"]
PLANS = [
    ("lora 1 GPU", ["estimate", "--model", "llama-3.1-8b", "--lora-rank", "8", "--batch", "4", "--seq", "1024",
                    "--accum", "8", "--checkpointing", "full"]),
    ("lora offloaded", ["estimate", "--model", "llama-3.2-3b", "--lora-rank", "16", "--lora-targets", "q,v",
                        "--batch", "2", "--seq", "2048", "--checkpointing", "full", "--offload-activations"]),
    ("qlora", ["estimate", "--model", "llama-3.1-8b", "--lora-rank", "8", "--quant", "nf4-dq", "--batch", "2",
               "--seq", "1024", "--checkpointing", "full"]),
    ("lora compiled", ["estimate", "--model", "llama-3.2-1b", "--lora-rank", "8", "--compile", "--batch", "2"]),
    ("lora 4 GPUs", ["estimate", "--model", "llama-3.1-8b", "--lora-rank", "8", "--gpus", "4", "--zero", "3",
                     "--batch", "4", "--seq", "1024", "--checkpointing", "full"]),
    ("full 8 GPUs", ["estimate", "--model", "llama-3.1-8b", "--gpus", "8", "--zero", "3", "--batch", "4",
                     "--seq", "1024", "--checkpointing", "full"]),
    ("full 2 GPUs zero 2", ["estimate", "--model", "llama-3.2-1b", "--gpus", "2", "--zero", "2", "--batch", "2"]),
    ("searched", ["--model", "llama-3.1-8b", "--gpu", "80GB", "--task", "lora"]),
]


def recipe_of(s):
    if s["lora-rank"]:
        return "lora_dpo_distributed" if s["gpus"] > 1 else "lora_dpo_single_device"
    return "full_dpo_distributed"


def check_config(tag, cfg, text, plan, launch):
    s = plan["settings"]
    recipe = recipe_of(s)
    check(f"(recipe {recipe})" in text, f"{tag}: the header names {recipe}")
    check(f"tune run {'--nproc_per_node ' + str(s['gpus']) + ' ' if s['gpus'] > 1 else ''}{recipe} " in launch,
          f"{tag}: launch.sh runs {recipe}")
    for k in cfg:
        check(k in RECIPE_KEYS[recipe], f"{tag}: top-level key '{k}' is read by {recipe}")
    check(cfg["loss"] == {"_component_": "torchtune.rlhf.loss.DPOLoss", "beta": 0.1, "label_smoothing": 0.0},
          f"{tag}: loss {cfg['loss']}")
    ds = cfg["dataset"]
    check(ds["_component_"] == "torchtune.datasets.preference_dataset" and ds["data_files"] == "DATA_FILE"
          and "packed" not in ds, f"{tag}: the preference dataset, a placeholder the user sets: {ds}")
    check("YOUR preference data" in text, f"{tag}: the placeholder says it is the user's")
    check(cfg["batch_size"] == s["batch"], f"{tag}: batch_size {cfg['batch_size']} pairs")
    check(cfg["gradient_accumulation_steps"] == s["accum"], f"{tag}: accumulation")
    check(cfg["tokenizer"]["max_seq_len"] == s["seq"], f"{tag}: max_seq_len")
    check(cfg["enable_activation_checkpointing"] == (s["checkpointing"] == "full"), f"{tag}: checkpointing")
    check(cfg["enable_activation_offloading"] == s["offload-activations"], f"{tag}: offloading")
    check(("ref_checkpointer" in cfg) == (recipe == "full_dpo_distributed"), f"{tag}: ref_checkpointer iff a model")
    if "ref_checkpointer" in cfg:
        check(cfg["ref_checkpointer"]["checkpoint_dir"] == "${checkpointer.checkpoint_dir}",
              f"{tag}: the reference is the policy's starting checkpoint")
    check("lr_scheduler" in cfg, f"{tag}: lr_scheduler (the distributed recipes read cfg.lr_scheduler)")
    peak = f"{plan['allocated_bytes'] / 2**30:.2f} GiB allocated"
    check(peak in text, f"{tag}: the header states the predicted peak")


def check_round_trip(tag, path, plan):
    p = check_back(memplan_bin, path, plan)
    check(p.returncode in (0, 1), f"{tag}: check exit {p.returncode}: {p.stderr.strip()[:300]}")
    if p.returncode not in (0, 1):
        return
    got = json.loads(p.stdout)
    origins = {o["setting"]: o for o in got["settings"]}
    s = plan["settings"]
    for k in ("method", "reference", "batch", "accum", "seq", "checkpointing", "ce", "lora-rank", "zero"):
        check(k in origins, f"{tag}: check says where {k} came from")
    check(origins.get("method", {}).get("key") == "loss._component_", f"{tag}: the method from the loss")
    for k, o in origins.items():
        if k in s and k not in NOT_A_SETTING:
            check(same_value(s[k], o["value"]), f"{tag}: check reads {k} {o['value']!r} from {o['key']}, "
                                                 f"the plan has {s[k]!r}")
    for b in ("allocated_bytes", "reserved_bytes", "device_bytes"):
        check(round(got[b]) == round(plan[b]), f"{tag}: check's {b} {got[b]!r}, the plan's {plan[b]!r}")
    check(got["unknown_keys"] == [], f"{tag}: every key is known: {got['unknown_keys']}")


def run(args):
    return subprocess.run([memplan_bin, *args], capture_output=True, text=True)


EMIT_REFUSALS = [
    (["--model", "llama-3.1-8b", "--method", "ipo"], "has no torchtune recipe"),
    (["--model", "llama-3.1-8b", "--method", "dpo"], "full_dpo_distributed (FSDP, no single-device one)"),
    (["--model", "llama-3.1-8b", "--method", "dpo", "--lora-rank", "8", "--gpus", "2", "--zero", "3", "--compile"],
     "distributed DPO recipes do not compile the model"),
    (["--model", "llama-3.1-8b", "--method", "dpo", "--gpus", "4", "--zero", "3", "--offload", "params"],
     "reference model to the host"),
    (["--model", "llama-3.1-8b", "--method", "dpo", "--lora-rank", "8", "--reference", "model"], "disable_adapter"),
]


def check_emit_refusals(tmp):
    for extra, says in EMIT_REFUSALS:
        out = os.path.join(tmp, "refused")
        p = run(["estimate", "--framework", "torchtune", "--precision", "pure-bf16", "--attention", "flash", *extra,
                 "--emit", "torchtune", "-o", out])
        tag = "refuse " + " ".join(extra)
        check(p.returncode == 2 and says in p.stderr and p.stderr.count("\n") == 1,
              f"{tag}: exit {p.returncode}, message {p.stderr.strip()!r}")
        check(not os.path.exists(out), f"{tag}: nothing written")


def check_hostile(tmp, lora_yaml, full_yaml):
    """Configs edited from emitted ones: each refused (exit 2, one line) or read as said."""
    def edit(base, change, drop=()):
        cfg = yaml.safe_load(open(base))
        for k in drop:
            cfg.pop(k, None)
        for k, v in change.items():
            node = cfg
            *head, last = k.split(".")
            for h in head:
                node = node[h]
            node[last] = v
        path = os.path.join(tmp, "hostile.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        return path

    cases = [
        ("full without ref_checkpointer", full_yaml, {}, ("ref_checkpointer",), ["--gpus", "8"], "no ref_checkpointer"),
        ("full on one process", full_yaml, {}, (), [], "full DPO on one process"),
        ("packed pairs", lora_yaml, {"dataset.packed": True}, (), [], "packed preference pairs"),
        ("PPO's loss", lora_yaml, {"loss": {"_component_": "torchtune.rlhf.loss.PPOLoss"}}, (), [], "an RL loss"),
        ("beta not a number", lora_yaml, {"loss.beta": "high"}, (), [], "want a number"),
        ("ref_checkpointer with the SFT loss", lora_yaml,
         {"loss": {"_component_": "torch.nn.CrossEntropyLoss"},
          "ref_checkpointer": {"_component_": "torchtune.training.FullModelHFCheckpointer"}}, (), [],
         "a reference model without torchtune's DPO loss"),
        ("ref_checkpointer a string", full_yaml, {"ref_checkpointer": "x"}, (), ["--gpus", "8"], "want a checkpointer"),
        ("full with fsdp_cpu_offload", full_yaml, {"fsdp_cpu_offload": True}, (), ["--gpus", "8"],
         "the reference model offloaded"),
    ]
    for tag, base, change, drop, flags, says in cases:
        path = edit(base, change, drop)
        p = run(["check", path, "--format", "json", *flags])
        check(p.returncode == 2 and says in p.stderr and p.stderr.count("\n") == 1,
              f"hostile {tag}: exit {p.returncode}, {p.stderr.strip()!r}")
    # read as said: RSOLoss (the same inputs: DPO's memory), an unknown loss argument noted,
    # a LoRA config's ref_checkpointer (never read), compile over processes (not the model's)
    path = edit(lora_yaml, {"loss": {"_component_": "torchtune.rlhf.loss.RSOLoss", "gamma": 0.1}})
    p = run(["check", path, "--format", "json"])
    ok = p.returncode in (0, 1) and {o["setting"]: o["value"] for o in json.loads(p.stdout)["settings"]}.get("method") == "dpo"
    check(ok, f"RSOLoss read as dpo: {p.stderr.strip()!r}")
    path = edit(lora_yaml, {"loss.delta": 1.0})
    p = run(["check", path, "--format", "json"])
    check(p.returncode in (0, 1) and any(k.endswith("loss.delta") for k in json.loads(p.stdout)["unknown_keys"]),
          "loss.delta: unknown, listed")
    path = edit(lora_yaml, {"ref_checkpointer": {"_component_": "torchtune.training.FullModelHFCheckpointer"}})
    p = run(["check", path, "--format", "json"])
    ref = [o for o in json.loads(p.stdout)["settings"] if o["setting"] == "reference"] if p.returncode < 2 else []
    check(ref and ref[0]["value"] == "adapter" and "never read" in ref[0]["how"],
          f"a LoRA config's ref_checkpointer: the adapter still ({ref})")
    path = edit(lora_yaml, {"compile": True})
    p = run(["check", path, "--format", "json", "--gpus", "2"])
    comp = [o for o in json.loads(p.stdout)["settings"] if o["setting"] == "compile"] if p.returncode < 2 else []
    check(comp and comp[0]["value"] == "off", f"compile over processes: off ({comp})")


def main():
    global memplan_bin
    memplan_bin = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build/bin", "memplan")
    with tempfile.TemporaryDirectory() as tmp:
        kept = {}
        for tag, args in PLANS:
            path = os.path.join(tmp, "torchtune.yaml")
            plan = emit(TALLY, memplan_bin, [*args, *BASE, "--emit", "torchtune"], path, tag)
            if plan is None:
                check(False, f"{tag}: no plan")
                continue
            check(plan["settings"]["method"] == "dpo", f"{tag}: a DPO plan")
            text = open(path).read()
            launch = open(path + ".bundle/launch.sh").read()
            readme = open(path + ".bundle/README.txt").read()
            check("YOUR preference data" in readme, f"{tag}: README says the data is the user's to give")
            check_config(tag, yaml.safe_load(text), text, plan, launch)
            check_round_trip(tag, path, plan)
            keep = os.path.join(tmp, f"{len(kept)}.yaml")
            os.replace(path, keep)
            kept[tag] = keep
        check_emit_refusals(tmp)
        if "lora 1 GPU" in kept and "full 8 GPUs" in kept:
            check_hostile(tmp, kept["lora 1 GPU"], kept["full 8 GPUs"])
    print(f"emit-torchtune-dpo: {len(PLANS)} plans; {TALLY.passed} passed, {TALLY.failed} failed")
    return 1 if TALLY.failed else 0


if __name__ == "__main__":
    sys.exit(main())
