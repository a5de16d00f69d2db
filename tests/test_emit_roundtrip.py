#!/usr/bin/env python3
"""test_emit_roundtrip.py - the plan printed is the plan that runs, for the targets whose files
`memplan check` reads besides torchtune (test_emit_torchtune.py has its own): axolotl's
config.yml, LLaMA-Factory's llamafactory.yaml (with the DeepSpeed JSON its bundle writes beside
it), memtrain's config, and the engines' files alone: the DeepSpeed JSON and the accelerate YAML
(with the DeepSpeed JSON its plugin names). An engine's file leaves the micro-batch, sequence,
optimizer, the weights' dtype and the stack to the script it launches: those are given as the
flags a user would state them with (hf's train.py itself is Python, which check does not read;
test_emit_hf.py and test_emit_engines.py hold it to the plan).

For a matrix of models, GPUs, tasks and GPU counts, each plan is emitted as a bundle with
--format json (the plan's own figures), then `memplan check` reads the emitted file back with the
plan's --gpu and --gpus, and must
  * say where every setting came from, each a key of the file (only the GPU count and the ZeRO
    stage of a one-GPU plan may be left to memplan's default: the launcher states them);
  * read each setting as the plan has it;
  * know every key of the file;
  * predict the plan's allocated, reserved and device bytes exactly (the emitted target's
    framework is the one the plan was estimated with).

Usage: test_emit_roundtrip.py BIN_DIR. Prints one line per failure and "emit-roundtrip: ...".
"""
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from emit_checks import NOT_A_SETTING, Tally, check_back, same_value

TALLY = Tally()
check = TALLY.check

# the file of each bundle that check is given
MAIN = {"axolotl": "config.yml", "llamafactory": "llamafactory.yaml", "memtrain": "memtrain.conf"}
# settings a file may leave to the launcher
LAUNCHER = {"gpus", "zero"}
# targets that write an engine's file alone: the script it launches states the rest (given as flags)
ENGINE_FILES = ("deepspeed", "accelerate")
MAIN.update({"deepspeed": "ds_config.json", "accelerate": "accelerate.yaml"})


def emit(memplan, target, args, out):
    """The plan's JSON, or None when nothing fits or the target cannot write any plan that fits."""
    os.makedirs(out)
    # memtrain's and the engines' files are one file each; the others write a bundle
    dest = os.path.join(out, MAIN[target]) if target in ("memtrain",) + ENGINE_FILES else out + "/"
    p = subprocess.run([memplan, *args, "--emit", target, "-o", dest, "--format", "json"],
                       capture_output=True, text=True)
    if p.returncode == 1 and "nothing fits" in p.stderr:
        return None
    check(p.returncode == 0, f"{target} {' '.join(args)}: memplan exit {p.returncode}: {p.stderr.strip()[:300]}")
    return json.loads(p.stdout) if p.returncode == 0 else None


def flags_beyond(plan, p):
    """What an engine's file leaves to the script it launches (micro-batch, sequence, optimizer...):
    the plan's settings that no key of the file gave, as the flags a user states them with."""
    if p.returncode not in (0, 1):
        return None
    from_file = {o["setting"] for o in json.loads(p.stdout)["settings"] if not o["key"].startswith("(")
                 and not o["key"].startswith("--")}
    # the weights' dtype and the stack are the launched script's: an accelerate YAML's mixed_precision is
    # the same key for a script that loads fp32 weights (amp) and one that loads 16-bit ones (mixed)
    flags = ["--precision", plan["settings"]["precision"], "--framework", plan["settings"]["framework"]]
    from_file -= {"precision"}
    for k, v in plan["settings"].items():
        if k in from_file or k in NOT_A_SETTING or v is None or v is False or k in ("framework", "precision") or \
                (k == "dataset-size" and not v):  # 0: no dataset size stated
            continue
        flags += [f"--{k}"] if v is True else [f"--{k}", str(v)]
    return flags


def compare(tag, plan, p):
    check(p.returncode in (0, 1), f"{tag}: check exit {p.returncode}: {p.stderr.strip()[:300]}")
    if p.returncode not in (0, 1):
        return
    try:
        got = json.loads(p.stdout)
    except ValueError:  # a sanitizer's report exits 1 with nothing on standard output
        check(False, f"{tag}: check printed no JSON (exit {p.returncode}): {p.stderr.strip()[:400]}")
        return
    s = plan["settings"]
    origins = {o["setting"]: o for o in got["settings"]}
    for k in ("framework", "precision", "optimizer", "batch", "accum", "seq", "checkpointing", "attention"):
        check(k in origins, f"{tag}: check says where {k} came from")
    if s["lora-rank"]:
        check("lora-rank" in origins, f"{tag}: check reads the LoRA rank")
    for k, o in origins.items():
        if k in s and k not in NOT_A_SETTING:
            check(same_value(s[k], o["value"]),
                  f"{tag}: check reads {k} {o['value']!r} from {o['key']}, the plan has {s[k]!r}")
        check(o["key"] != "(not in the files)" or k in LAUNCHER or tag.startswith(ENGINE_FILES),
              f"{tag}: {k} is left to memplan's default")
    for b in ("allocated_bytes", "reserved_bytes", "device_bytes"):  # the plan's JSON has whole bytes
        check(round(got[b]) == round(plan[b]), f"{tag}: check's {b} {got[b]!r}, the plan's {plan[b]!r}")
    check(got["unknown_keys"] == [], f"{tag}: every key of the emitted file is known: {got['unknown_keys']}")


def matrix():
    runs = []
    for target in ("axolotl", "llamafactory"):
        for name in ("llama-3.2-1b", "llama-3.1-8b", "qwen2.5-1.5b", "mistral-7b", "phi-3-mini", "gemma-2-2b"):
            for gpu in ("t4", "rtx4090", "a100-80g"):
                for task in ("full", "lora", "qlora"):
                    runs.append((target, ["--model", name, "--gpu", gpu, "--task", task]))
        runs += [(target, ["--model", "llama-3.1-8b", "--gpu", "a100-40g", "--gpus", "4", "--task", "full"]),
                 (target, ["--model", "llama-3.1-8b", "--gpu", "rtx4090", "--gpus", "2", "--task", "lora"]),
                 (target, ["--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--task", "lora"]),
                 (target, ["--model", "llama-3.1-70b", "--gpu", "a100-80g", "--gpus", "8", "--task", "full"])]
    for name in ("gpt2", "llama-3.2-1b", "qwen2.5-0.5b"):
        for gpu in ("8GB", "24GB"):
            runs.append(("memtrain", ["--model", name, "--gpu", gpu]))
    runs.append(("memtrain", ["--model", "gpt2", "--gpu", "8GB", "--gpus", "2", "--zero", "2"]))
    for name in ("llama-3.2-1b", "llama-3.1-8b", "mistral-7b", "qwen2.5-7b"):
        for gpu, n in (("a100-40g", "4"), ("rtx4090", "2"), ("h100-80g", "8"), ("t4", "1")):
            for task in ("full", "lora"):
                runs.append(("deepspeed", ["--model", name, "--gpu", gpu, "--gpus", n, "--task", task]))
        for gpu, n, z in (("a100-40g", "4", "3"), ("l4", "2", "2"), ("h100-80g", "8", "3")):
            for task in ("full", "lora", "qlora"):
                runs.append(("accelerate", ["--model", name, "--gpu", gpu, "--gpus", n, "--zero", z, "--task", task]))
    return runs


def one(memplan, tmp, i, target, args):
    out = os.path.join(tmp, f"b{i}")
    plan = emit(memplan, target, args, out)
    if plan is None:
        return None
    tag = f"{target} {' '.join(args)}"
    path = os.path.join(out, MAIN[target])
    p = check_back(memplan, path, plan)
    if target in ENGINE_FILES:  # the model and what the launched script states, as flags
        model = args[args.index("--model") + 1]
        if target == "accelerate" and plan["settings"]["framework"] == "deepspeed" or \
                os.path.exists(path) and "deepspeed_config_file" in open(path).read():
            # accelerate's DeepSpeed plugin names the JSON: written beside it, as the hf bundle does
            subprocess.run([memplan, *args, "--emit", "deepspeed", "-o", os.path.join(out, "ds_config.json")],
                           capture_output=True)
        p = check_back(memplan, path, plan, ["--model", model])
        flags = flags_beyond(plan, p)
        if flags is not None:
            p = check_back(memplan, path, plan, ["--model", model, *flags])
    return tag, plan, p


def main():
    memplan = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build/bin", "memplan")
    runs = matrix()
    trips = {t: 0 for t in MAIN}
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=4) as pool:
        futures = [(target, pool.submit(one, memplan, tmp, i, target, args)) for i, (target, args) in enumerate(runs)]
        for target, f in futures:
            r = f.result()
            if r is None:
                continue
            trips[target] += 1
            compare(*r)
    for target, n in trips.items():
        want = {"memtrain": 7, "deepspeed": 20, "accelerate": 20}.get(target, 40)
        check(n >= want, f"{target}: {n} plans emitted and read back (want >= {want})")
    print(f"emit-roundtrip: {', '.join(f'{n} {t}' for t, n in trips.items())} plans read back by memplan check; "
          f"{TALLY.passed} passed, {TALLY.failed} failed")
    return 1 if TALLY.failed else 0


if __name__ == "__main__":
    sys.exit(main())
