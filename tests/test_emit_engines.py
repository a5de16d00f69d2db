#!/usr/bin/env python3
"""test_emit_engines.py - the engine configs and bundles memplan emits, checked
against the engines' own key lists (tests/data/engines/, each copied from the
engine's source at a cited commit) and read back against the plan's JSON.

usage: test_emit_engines.py BIN_DIR

For a matrix of plans (every model family in profiles/ x GPU classes from T4 to
8 x H100 x full/LoRA/QLoRA x one GPU, DeepSpeed ZeRO, FSDP, offload) it writes
the bundle (--emit hf -o DIR/) and the accelerate YAML, and checks: the JSON
parses, the YAML parses (PyYAML, Debian python3-yaml), every key and value is
in the extracted lists, every key transformers' Trainer fills is "auto",
launch.sh passes bash -n and uses the launcher and process count the plan
needs, and the settings read back (stage, offload, precision, micro-batch,
accumulation, sequence, processes) equal the plan's JSON."""
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "engines")
passed = failed = 0


def ok(what):
    global passed
    passed += 1


def bad(what):
    global failed
    failed += 1
    print("FAIL " + what)


def check(cond, what):
    (ok if cond else bad)(what)
    return cond


def sections(name):
    """A key list: '[section]' headers, one value a line, '#' comments."""
    out, cur = {}, None
    for line in open(os.path.join(DATA, name)):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            cur = out.setdefault(line[1:-1], set())
        else:
            cur.add(line)
    return out


DS = sections("deepspeed_keys.txt")
ACC = sections("accelerate_keys.txt")
TF = sections("transformers_deepspeed_auto.txt")

MODELS = ["gpt2-xl", "llama-3.1-8b", "mistral-7b", "mixtral-8x7b", "qwen2.5-7b", "qwen1.5-moe-a2.7b", "phi-2",
          "phi-3-mini", "gemma-7b", "gemma-2-9b", "opt-1.3b", "bloom-3b", "falcon-7b", "pythia-2.8b",
          "deepseek-moe-16b", "llama-3.1-70b"]
SCENARIOS = [
    ["--gpu", "t4"],
    ["--gpu", "t4", "--task", "full"],
    ["--gpu", "rtx4090", "--task", "lora"],
    ["--gpu", "a100-80g", "--gpus", "8", "--task", "full"],
    ["--gpu", "h100-80g", "--gpus", "8", "--task", "full", "--framework", "deepspeed"],
    ["--gpu", "a100-40g", "--gpus", "4", "--task", "qlora", "--zero", "3"],
    ["--gpu", "l4", "--gpus", "2", "--task", "lora", "--zero", "2"],
    ["--gpu", "v100-32g", "--task", "full", "--offload", "optimizer"],
    ["--gpu", "a10g", "--gpus", "4", "--task", "full", "--zero", "2", "--framework", "deepspeed"],
    ["--gpu", "h100-80g", "--gpus", "8", "--task", "full", "--zero", "3"],
    ["--gpu", "a100-80g", "--gpus", "2", "--task", "lora", "--zero", "0"],
    ["--gpu", "h100-80g", "--task", "qlora"],
]

# Given settings (memplan estimate), so each optimizer's DeepSpeed form and
# both offloads are covered whatever the search picks.
GIVEN = [["estimate", "--model", "gpt2-medium", "--gpus", "2", "--zero", "2", "--framework", "deepspeed",
          "--precision", "mixed-bf16", "--optimizer", o] for o in
         ("adamw", "adamw-8bit", "sgd", "sgd-momentum", "adafactor", "lion")] + \
        [["estimate", "--model", "gpt2-medium", "--gpus", "2", "--zero", "1", "--precision", "mixed-bf16",
          "--optimizer", "adamw", "--optimizer-impl", i] for i in ("foreach", "for-loop", "fused")] + \
        [["estimate", "--model", "qwen2.5-0.5b", "--gpus", "1" if z != "3" else "2", "--zero", z, "--offload", off, "--precision", pr, "--optimizer", o]
         for z, off, pr, o in (("2", "optimizer", "mixed-fp16", "adamw"), ("3", "params", "mixed-bf16", "adamw"),
                               ("1", "optimizer", "fp32", "sgd"), ("3", "optimizer", "mixed-bf16", "adafactor"))]


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def engine_of(p):
    """The engine the plan needs, from the plan's JSON alone (engine.c's rule)."""
    if p["tp"] > 1 or p["pp"] > 1:
        return None
    if p["offload"] != "none" or (p["gpus"] > 1 and p["zero"] == 1) or \
            (p["framework"] == "deepspeed" and (p["gpus"] > 1 or p["zero"] > 0)):
        return "deepspeed"
    if p["gpus"] > 1:
        return "fsdp" if p["zero"] >= 2 else "ddp"
    return "single"


def summary_of(text):
    """The plan summary's settings, from any artifact's comment lines."""
    pat = {"precision": r"precision: (\S+)", "optimizer": r"optimizer: (\S+)", "zero": r"ZeRO stage: (\d+)",
           "offload": r"offload: (\S+)", "batch": r"micro-batch: (\d+) per GPU", "accum": r"accumulation: (\d+)",
           "seq": r"sequence: (\d+) tokens", "checkpointing": r"checkpointing: (\S+),",
           "attention": r"attention: (\S+) ", "procs": r"engine: .*?, (\d+) process"}
    out = {}
    for k, rx in pat.items():
        m = re.search(rx, text)
        out[k] = m.group(1) if m else None
    return out


def check_summary(text, p, where):
    s = summary_of(text)
    want = {"precision": p["precision"], "optimizer": p["optimizer"], "zero": str(p["zero"]),
            "offload": p["offload"], "batch": str(p["batch"]), "accum": str(p["accum"]), "seq": str(p["seq"]),
            "checkpointing": p["checkpointing"], "attention": p["attention"], "procs": str(p["gpus"])}
    for k, v in want.items():
        check(s[k] == v, "%s: summary %s %r, plan %r" % (where, k, s[k], v))
    check("predicted peak per GPU: " + p["peak_gib"] in text, "%s: predicted peak %s" % (where, p["peak_gib"]))


def walk_auto(cfg, prefix=""):
    for k, v in cfg.items():
        key = prefix + k
        if isinstance(v, dict):
            yield from walk_auto(v, key + ".")
        else:
            yield key, v


def check_deepspeed(path, p, where):
    try:
        cfg = json.load(open(path))
    except ValueError as e:
        return bad("%s: ds_config.json does not parse: %s" % (where, e))
    for k in cfg:
        check(k in DS["top"] or k in DS["top_ignored"], "%s: DeepSpeed top-level key %r" % (where, k))
    z = cfg.get("zero_optimization", {})
    for k in z:
        check(k in DS["zero_optimization"], "%s: zero_optimization key %r" % (where, k))
    check(str(z.get("stage")) in DS["zero_stage"], "%s: stage %r" % (where, z.get("stage")))
    for block in ("offload_optimizer", "offload_param"):
        for k, v in z.get(block, {}).items():
            check(k in DS[block], "%s: %s key %r" % (where, block, k))
        if block in z:
            check(z[block].get("device") in DS["offload_device"], "%s: %s device" % (where, block))
    opt = cfg.get("optimizer")
    if opt:
        for k in opt:
            check(k in DS["optimizer"], "%s: optimizer key %r" % (where, k))
        check(opt["type"] in DS["optimizer_type"], "%s: optimizer type %r" % (where, opt["type"]))
        for k in opt.get("params", {}):
            check(k in DS["optimizer_params"], "%s: optimizer param %r" % (where, k))
    for blk in ("bf16", "fp16"):
        for k in cfg.get(blk, {}):
            check(k in DS[blk], "%s: %s key %r" % (where, blk, k))
    # every value the Trainer fills is "auto": a concrete one could contradict TrainingArguments
    for key, v in walk_auto(cfg):
        if key in TF["auto"]:
            check(v == "auto", "%s: %s is %r, not auto" % (where, key, v))
    # read back against the plan
    check(z.get("stage") == p["zero"], "%s: stage %r, plan zero %r" % (where, z.get("stage"), p["zero"]))
    check(("offload_optimizer" in z) == (p["offload"] in ("optimizer", "params")), where + ": offload_optimizer")
    check(("offload_param" in z) == (p["offload"] == "params"), where + ": offload_param")
    check(cfg["bf16"]["enabled"] == (p["precision"] == "mixed-bf16"), where + ": bf16.enabled")
    check(cfg["fp16"]["enabled"] == (p["precision"] == "mixed-fp16"), where + ": fp16.enabled")
    ds_type = {"adamw": "adamw", "lion": "lion", "sgd": "SGD", "sgd-momentum": "SGD"}.get(p["optimizer"])
    if ds_type == "adamw":  # torch's AdamW with the plan's step on the GPU, DeepSpeed's CPU Adam under offload
        prm = opt["params"]
        if p["offload"] == "none":
            impl = {"foreach": ("foreach", True), "for-loop": ("foreach", False), "fused": ("fused", True)}
            k, v = impl[p["optimizer-impl"]]
            check(prm.get("torch_adam") is True and prm.get(k) is v, "%s: AdamW step %r" % (where, prm))
        else:
            check("torch_adam" not in prm, where + ": DeepSpeed's CPU Adam under offload")
    check((opt or {}).get("type") == ds_type, "%s: optimizer %r for plan %r" % (where, opt, p["optimizer"]))
    check_summary("\n".join(cfg.get("_comment", [])), p, where + " ds_config.json")


def check_accelerate(path, p, eng, where):
    try:
        cfg = yaml.safe_load(open(path))
    except yaml.YAMLError as e:
        return bad("%s: accelerate.yaml does not parse: %s" % (where, e))
    for k in cfg:
        check(k in ACC["config"], "%s: accelerate key %r" % (where, k))
    check(cfg["distributed_type"] in ACC["distributed_type"], "%s: distributed_type %r" % (where, cfg["distributed_type"]))
    check(cfg["compute_environment"] in ACC["compute_environment"], where + ": compute_environment")
    want = {"single": "NO", "ddp": "MULTI_GPU", "deepspeed": "DEEPSPEED", "fsdp": "FSDP"}[eng]
    check(cfg["distributed_type"] == want, "%s: distributed_type %r, want %r" % (where, cfg["distributed_type"], want))
    check(cfg["num_processes"] == p["gpus"], "%s: num_processes %r" % (where, cfg["num_processes"]))
    if "mixed_precision" in cfg:
        mp = cfg["mixed_precision"]
        check(mp in ACC["mixed_precision"], "%s: mixed_precision %r" % (where, mp))
        want_mp = "bf16" if "bf16" in p["precision"] else "fp16" if "fp16" in p["precision"] else "no"
        check(mp == want_mp, "%s: mixed_precision %r for %r" % (where, mp, p["precision"]))
    for k, v in (cfg.get("fsdp_config") or {}).items():
        check(k in ACC["fsdp_config"], "%s: fsdp_config key %r" % (where, k))
        if k in ACC:
            check(v in ACC[k], "%s: %s %r" % (where, k, v))
    for k in (cfg.get("deepspeed_config") or {}):
        check(k in ACC["deepspeed_config"], "%s: deepspeed_config key %r" % (where, k))
    if eng == "fsdp":
        f = cfg["fsdp_config"]
        check(f["fsdp_sharding_strategy"] == ("FULL_SHARD" if p["zero"] >= 3 else "SHARD_GRAD_OP"),
              where + ": sharding strategy")
        check(f["fsdp_activation_checkpointing"] is False, where + ": activation checkpointing left to the script")
        check(f["fsdp_offload_params"] is False, where + ": no FSDP offload")
        check(f["fsdp_use_orig_params"] == (p["lora-rank"] == 0), where + ": use_orig_params")
    check_summary(open(path).read(), p, where + " accelerate.yaml")


def check_launch(path, p, eng, where):
    text = open(path).read()
    check(os.access(path, os.X_OK), where + ": launch.sh is executable")
    check(run(["bash", "-n", path]).returncode == 0, where + ": bash -n launch.sh")
    check("\nset -eu\n" in text and '"${1:?' in text, where + ": set -eu and the data file as $1")
    n = p["gpus"]
    want = {"single": "exec python3 ", "ddp": "torchrun --standalone --nproc_per_node %d " % n,
            "deepspeed": "deepspeed --no_local_rank --num_gpus %d " % n,
            "fsdp": 'accelerate launch --config_file "$HERE/accelerate.yaml"'}[eng]
    check(want in text, "%s: launcher %r" % (where, want))
    check(('--deepspeed "$HERE/ds_config.json"' in text) == (eng == "deepspeed"), where + ": --deepspeed")
    check_summary(text, p, where + " launch.sh")


def one_plan(binary, args, tmp, i):
    where = " ".join(args)
    # the plan as the bundle's target estimates it (--emit hf plans with the hf profile), and the bundle
    d = os.path.join(tmp, "b%d" % i) + "/"
    r = run([binary] + args + ["--emit", "hf", "-o", d, "--format", "json"])
    if r.returncode == 1:
        return "nofit"
    if not check(r.returncode == 0, "%s: bundle exit %d %s" % (where, r.returncode, r.stderr.strip())):
        return "error"
    plan = json.loads(r.stdout)
    p = plan["settings"]
    p["peak_gib"] = "%.2f GiB allocated" % (plan["allocated_bytes"] / 2**30)
    eng = engine_of(p)
    files = sorted(os.listdir(d))
    want = {"train.py", "launch.sh", "README.txt"} | {"deepspeed": {"ds_config.json"},
                                                      "fsdp": {"accelerate.yaml"}}.get(eng, set())
    check(set(files) == want, "%s: bundle files %s, want %s" % (where, files, sorted(want)))
    check(run([sys.executable, "-m", "py_compile", d + "train.py"]).returncode == 0, where + ": train.py compiles")
    if eng == "deepspeed":
        check_deepspeed(d + "ds_config.json", p, where)
    if eng == "fsdp":
        check_accelerate(d + "accelerate.yaml", p, eng, where)
    check_launch(d + "launch.sh", p, eng, where)
    check_summary(open(d + "README.txt").read(), p, where + " README.txt")
    # the accelerate target alone, for every engine
    r = run([binary] + args + ["--emit", "accelerate", "-o", d + "alone.yaml"])
    if check(r.returncode == 0, where + ": --emit accelerate"):
        check_accelerate(d + "alone.yaml", p, eng, where + " (--emit accelerate)")
    return eng


def bad_paths(binary, tmp):
    base = [binary, "--model", "gpt2", "--gpu", "t4"]
    r = run(base + ["--emit", "hf", "-o", "/nonexistent-memplan/x/"])
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "'/nonexistent-memplan/x/'" in r.stderr,
          "bad bundle path: one line, exit 2")
    r = run(base + ["--emit", "deepspeed", "-o", tmp + "/nd/"])
    check(r.returncode == 2 and not os.path.exists(tmp + "/nd"), "a directory for --emit deepspeed: exit 2, nothing left")
    r = run([binary, "--model", "llama-3.1-8b", "--gpu", "a100-80g", "--gpus", "8", "--tp", "2",
             "--emit", "hf", "-o", tmp + "/tp/"])
    check(r.returncode == 2 and not os.path.exists(tmp + "/tp"), "a tensor-parallel bundle: exit 2, nothing left")
    # a precision DeepSpeed has no block for (autocast) is refused, not silently run in bf16
    r = run([binary, "--model", "gpt2", "--gpu", "a100-80g", "--gpus", "2", "--framework", "deepspeed",
             "--precision", "amp-bf16", "--emit", "hf", "-o", tmp + "/amp/"])
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "'amp-bf16'" in r.stderr
          and not os.path.exists(tmp + "/amp"), "an autocast plan under DeepSpeed: one line, exit 2, nothing left")
    r = run(base + ["--emit", "launch", "-o", tmp + "/one.sh"])
    check(r.returncode == 0 and os.path.isfile(tmp + "/one.sh") and os.access(tmp + "/one.sh", os.X_OK),
          "--emit launch -o FILE writes that one file, executable")


def main():
    binary = os.path.join(sys.argv[1], "memplan")
    os.environ.setdefault("MEMPLAN_PROFILES", os.path.join(os.path.dirname(HERE), "profiles"))
    engines, plans = {}, 0
    with tempfile.TemporaryDirectory() as tmp:
        i = 0
        for mi, model in enumerate(MODELS):
            for k in range(4):  # four scenarios a model, rotating through all of them
                args = ["--model", model] + SCENARIOS[(mi * 4 + k) % len(SCENARIOS)]
                eng = one_plan(binary, args, tmp, i)
                i += 1
                engines[eng] = engines.get(eng, 0) + 1
                plans += eng not in ("nofit", "error")
        for args in GIVEN:
            eng = one_plan(binary, args, tmp, i)
            i += 1
            check(eng == "deepspeed", "%s: a DeepSpeed plan (%s)" % (" ".join(args), eng))
        bad_paths(binary, tmp)
    check(plans >= 40, "at least 40 plans emitted (%d)" % plans)
    for e in ("single", "deepspeed", "fsdp", "ddp"):
        check(engines.get(e, 0) > 0, "the matrix has %s plans" % e)
    print("engines: " + ", ".join("%s %d" % kv for kv in sorted(engines.items())))
    print("emit engines: %d passed, %d failed (%d searched plans, %d given settings)"
          % (passed, failed, plans, len(GIVEN)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
