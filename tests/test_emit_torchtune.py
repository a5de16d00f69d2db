#!/usr/bin/env python3
"""test_emit_torchtune.py - emit torchtune.yaml (memplan --emit torchtune) for a matrix of
plans and check each against torchtune's own source, as tabulated with commits under
tests/data/engines/, and against the plan itself:

  * the file is YAML; every top-level key, and every nested key a recipe reads, is one the
    plan's recipe reads (torchtune_config_keys.csv); the keys a recipe requires are all there;
  * the model builder, its LoRA arguments, the checkpointer's model_type and the tokenizer are
    the ones torchtune has for that profile (torchtune_models.csv), and the builder's and the
    tokenizer's arguments are the ones torchtune's functions take;
  * what the config sets reads back equal to the plan's JSON (--format json): dtype, optimizer,
    micro-batch, accumulation, sequence, checkpointing, offloading, the step in the backward,
    compile, loss, LoRA rank and targets, FSDP's resharding and offload, the predicted peak;
  * the recipes' own constraints hold (torchtune_config_keys.csv's constraint column):
    activation offloading only with checkpointing, the step in the backward only without
    accumulation, no fp16;
  * the bundle (-o DIR/) holds torchtune.yaml, an executable launch.sh that passes bash -n and,
    run against a stub `tune`, starts the plan's recipe with the checkpoint's files listed;
  * what torchtune cannot run is refused with the reason, exit status 2, and nothing written;
  * the round trip: `memplan check` on every emitted torchtune.yaml (with the plan's --gpu and
    --gpus) reads back the plan's settings, each from its key, and predicts the plan's allocated,
    reserved and device bytes exactly. Gemma 2 is the exception torchtune's source makes: its
    Gemma2Attention computes the scores itself, so check reads eager attention where the plan
    assumed SDPA; with --attention flash the rest must match.

Usage: test_emit_torchtune.py BIN_DIR. Prints one line per failure and "emit-torchtune: ...".
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import yaml

from emit_checks import NOT_A_SETTING, Tally, check_back, csv_rows, emit, same_value

ENGINES = "tests/data/engines"
# Arguments of the components the config builds, from torchtune's source (README.txt beside
# the CSVs, sections 5 to 7, each with its commit): FullModelHFCheckpointer.__init__,
# text_completion_dataset, CEWithChunkedOutputLoss / torch.nn.CrossEntropyLoss, DiskLogger,
# get_cosine_schedule_with_warmup. The recipe passes the optimizer its parameters; the rest
# are the optimizer class's own keywords (torch.optim.AdamW/SGD: lr, foreach, fused, momentum;
# bitsandbytes and torchao: lr, and torchao's block_size).
COMPONENT_ARGS = {
    "checkpointer": {"_component_", "checkpoint_dir", "checkpoint_files", "model_type", "output_dir",
                     "recipe_checkpoint", "adapter_checkpoint", "resume_from_checkpoint"},
    "dataset": {"_component_", "source", "column", "packed", "split", "data_files", "add_eos"},
    "loss": {"_component_", "num_output_chunks", "ignore_index"},
    "metric_logger": {"_component_", "log_dir"},
    "lr_scheduler": {"_component_", "num_warmup_steps"},
    "optimizer": {"_component_", "lr", "foreach", "fused", "momentum", "block_size"},
    "tokenizer": {"_component_", "path", "merges_file", "max_seq_len"},
}
# torchtune's dtype strings (torchtune/training/precision.py via the keys README, section 4)
DTYPE = {"pure-bf16": "bf16", "fp32": "fp32"}
OPTIMIZER = {"adamw": "torch.optim.AdamW", "adamw-8bit": "bitsandbytes.optim.AdamW8bit",
             "paged-adamw": "bitsandbytes.optim.PagedAdamW32bit",
             "paged-adamw-8bit": "bitsandbytes.optim.PagedAdamW8bit", "sgd": "torch.optim.SGD",
             "sgd-momentum": "torch.optim.SGD", "lion": "bitsandbytes.optim.Lion32bit",
             "adamw-8bit-torchao": "torchao.prototype.low_bit_optim.AdamW8bit",
             "adamw-4bit-torchao": "torchao.prototype.low_bit_optim.AdamW4bit"}
# bitsandbytes/optim/__init__.py exports (bitsandbytes-foundation/bitsandbytes@1b8772a8f33f)
BNB_EXPORTS = {"AdamW", "AdamW8bit", "AdamW32bit", "PagedAdamW", "PagedAdamW8bit", "PagedAdamW32bit", "Lion",
               "Lion8bit", "Lion32bit", "PagedLion", "PagedLion8bit", "PagedLion32bit", "SGD", "SGD8bit", "SGD32bit"}
ATTN = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "output_proj"}

TALLY = Tally()
check = TALLY.check


def recipe_keys():
    keys, required = {}, {}
    for r in csv_rows(f"{ENGINES}/torchtune_config_keys.csv"):
        keys.setdefault(r["recipe"], set()).add(r["key"])
        if r["required"] == "1":
            required.setdefault(r["recipe"], set()).add(r["key"])
    return keys, required


def recipe_of(s):
    kind = "lora" if s["lora-rank"] else "full"
    return f"{kind}_finetune_{'distributed' if s['gpus'] > 1 else 'single_device'}"


def check_keys(tag, cfg, recipe, keys, required):
    for k, v in cfg.items():
        if k in COMPONENT_ARGS or k == "model" or k.startswith("_"):
            continue
        check(k in keys[recipe], f"{tag}: top-level key '{k}' is read by {recipe}")
    for block, allowed in COMPONENT_ARGS.items():
        for k in cfg.get(block, {}) or {}:
            check(k in allowed, f"{tag}: '{block}.{k}' is an argument of its component")
    for k in required[recipe]:
        head, _, sub = k.partition(".")
        present = head in cfg and (not sub or (isinstance(cfg[head], dict) and sub.split(".")[0] in cfg[head]))
        # profiler keys are required only inside an enabled profiler block
        if head == "profiler":
            continue
        check(present, f"{tag}: key '{k}', which {recipe} requires, is set")


def check_model(tag, cfg, s, model_row):
    m = cfg["model"]
    comp = m["_component_"]
    pkg = model_row["builder"].rsplit(".", 1)[0]
    if not s["lora-rank"]:
        check(comp == model_row["builder"], f"{tag}: builder {comp} is {model_row['builder']}")
        check(set(m) == {"_component_"}, f"{tag}: a full model's builder takes no LoRA arguments")
        return
    quant = s["quant"] != "none"
    want = model_row["qlora_builder"] if quant and model_row["qlora_builder"] else model_row["lora_builder"]
    check(comp == want and comp.startswith(pkg), f"{tag}: builder {comp} is {want}")
    lora_args = set(model_row["lora_args"].split("|"))
    for k in m:
        check(k == "_component_" or k in lora_args, f"{tag}: '{k}' is an argument of {comp}")
    check(m.get("quantize_base", False) == (quant and not model_row["qlora_builder"]),
          f"{tag}: quantize_base only where there is no QLoRA builder")
    targets = s["lora-targets"].split(",")
    want_attn = [ATTN[t] for t in targets if t in ATTN]
    check(m["lora_attn_modules"] == want_attn, f"{tag}: lora_attn_modules {m['lora_attn_modules']} = {want_attn}")
    check(set(m["lora_attn_modules"]) <= set(model_row["lora_attn_module_names"].split("|")),
          f"{tag}: attention module names are the builder's")
    check(m["apply_lora_to_mlp"] == ("gate" in targets), f"{tag}: apply_lora_to_mlp")
    check(m.get("apply_lora_to_output", False) == ("head" in targets), f"{tag}: apply_lora_to_output")
    check(m["lora_rank"] == s["lora-rank"], f"{tag}: lora_rank {m['lora_rank']}")
    check(isinstance(m["lora_dropout"], float) and abs(m["lora_dropout"] - s["lora-dropout"]) < 1e-6,
          f"{tag}: lora_dropout {m['lora_dropout']} is the plan's, as a float")


def check_plan(tag, cfg, plan, model_row, keys, required):
    s = plan["settings"]
    recipe = recipe_of(s)
    check_keys(tag, cfg, recipe, keys, required)
    check_model(tag, cfg, s, model_row)
    ck = cfg["checkpointer"]
    check(ck["model_type"] == model_row["model_type"], f"{tag}: model_type {ck['model_type']}")
    check(ck["_component_"] == "torchtune.training.FullModelHFCheckpointer", f"{tag}: the HF checkpointer")
    tok = cfg["tokenizer"]
    check(tok["_component_"] == model_row["tokenizer"], f"{tag}: tokenizer {tok['_component_']}")
    check(tok["path"].endswith("/" + model_row["tokenizer_path"]), f"{tag}: tokenizer file {tok['path']}")
    check(("merges_file" in tok) == bool(model_row["tokenizer_merges"]), f"{tag}: merges_file where BPE needs it")
    check(tok["max_seq_len"] == s["seq"], f"{tag}: max_seq_len = plan seq {s['seq']}")
    check(cfg["dataset"]["packed"] is True, f"{tag}: packed to max_seq_len (B x T every step)")
    check(cfg["batch_size"] == s["batch"], f"{tag}: batch_size {s['batch']}")
    check(cfg["gradient_accumulation_steps"] == s["accum"], f"{tag}: accumulation {s['accum']}")
    check(cfg["dtype"] == DTYPE[s["precision"]], f"{tag}: dtype {cfg['dtype']} for {s['precision']}")
    opt = cfg["optimizer"]
    check(opt["_component_"] == OPTIMIZER[s["optimizer"]], f"{tag}: optimizer {opt['_component_']}")
    if opt["_component_"].startswith("bitsandbytes."):
        check(opt["_component_"].rsplit(".", 1)[1] in BNB_EXPORTS, f"{tag}: bitsandbytes exports it")
    if opt["_component_"].startswith("torch.optim."):
        impl = s["optimizer-impl"]
        check(opt.get("fused") is (True if impl == "fused" else None), f"{tag}: fused iff the plan's step is")
        if impl != "fused":
            check(opt.get("foreach") == (impl == "foreach"), f"{tag}: foreach for {impl}")
    check(cfg["compile"] == s["compile"], f"{tag}: compile")
    check(cfg["enable_activation_checkpointing"] == (s["checkpointing"] == "full"), f"{tag}: checkpointing")
    check(cfg["enable_activation_offloading"] == s["offload-activations"], f"{tag}: offloading")
    if not s["lora-rank"]:
        check(cfg["optimizer_in_bwd"] == s["optimizer-in-backward"], f"{tag}: optimizer_in_bwd")
    else:
        check("optimizer_in_bwd" not in cfg, f"{tag}: no optimizer_in_bwd in a LoRA recipe")
    loss = cfg["loss"]["_component_"]
    check(loss == ("torchtune.modules.loss.CEWithChunkedOutputLoss" if s["ce"] == "chunked"
                   else "torch.nn.CrossEntropyLoss"), f"{tag}: loss {loss} for ce {s['ce']}")
    if s["gpus"] > 1:
        check(cfg["fsdp_reshard_after_forward"] == (s["zero"] == 3), f"{tag}: reshard after forward iff ZeRO-3")
        check(cfg["fsdp_cpu_offload"] == (s["offload"] == "params"), f"{tag}: fsdp_cpu_offload")
    # the recipes' raises (torchtune_config_keys.csv, constraint column)
    if cfg["enable_activation_offloading"]:
        check(cfg["enable_activation_checkpointing"], f"{tag}: offloading only with checkpointing")
    if cfg.get("optimizer_in_bwd"):
        check(cfg["gradient_accumulation_steps"] == 1, f"{tag}: in-backward step only without accumulation")
    check(cfg["dtype"] != "fp16", f"{tag}: no fp16")
    peak = f"{plan['allocated_bytes'] / 2**30:.2f} GiB allocated"
    check(peak in cfg["_text"], f"{tag}: the header states the predicted peak ({peak})")


def run_memplan(memplan, args):
    return subprocess.run([memplan, *args], capture_output=True, text=True)


def check_bundle(memplan, tmp, keys, required):
    out = os.path.join(tmp, "bundle") + "/"
    p = run_memplan(memplan, ["--model", "llama-3.1-8b", "--gpu", "12GB", "--task", "qlora", "--emit",
                              "torchtune", "-o", out])
    check(p.returncode == 0, f"bundle: exit {p.returncode}: {p.stderr.strip()}")
    if p.returncode:
        return
    files = sorted(os.listdir(out))
    check(files == ["README.txt", "launch.sh", "torchtune.yaml"], f"bundle: files {files}")
    launch = os.path.join(out, "launch.sh")
    check(os.stat(launch).st_mode & stat.S_IXUSR, "bundle: launch.sh is executable")
    check(subprocess.run(["bash", "-n", launch]).returncode == 0, "bundle: launch.sh parses (bash -n)")
    # run it against a stub `tune` and a checkpoint folder of two shards
    model = os.path.join(tmp, "ckpt")
    os.makedirs(model)
    for f in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "config.json"):
        open(os.path.join(model, f), "w").close()
    stub = os.path.join(tmp, "stubbin")
    os.makedirs(stub)
    with open(os.path.join(stub, "tune"), "w") as f:
        f.write('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > "$TUNE_ARGS"\n')
    os.chmod(os.path.join(stub, "tune"), 0o755)
    argv_file = os.path.join(tmp, "argv")
    env = dict(os.environ, PATH=stub + os.pathsep + os.environ["PATH"], TUNE_ARGS=argv_file)
    r = subprocess.run(["bash", launch, "data.txt", model], env=env, capture_output=True, text=True)
    check(r.returncode == 0, f"bundle: launch.sh ran the stub: {r.stderr.strip()}")
    argv = open(argv_file).read().split("\n") if os.path.exists(argv_file) else []
    check(argv[:4] == ["run", "lora_finetune_single_device", "--config", os.path.join(out, "torchtune.yaml")],
          f"bundle: tune run's recipe and config {argv[:4]}")
    check(all("=" in a for a in argv[4:] if a), "bundle: every override is key=value")
    # as tune run reads them: OmegaConf.from_dotlist loads each value as YAML
    over = {k: yaml.safe_load(v) for k, v in (a.split("=", 1) for a in argv[4:] if a)}
    check(sorted(over.get("checkpointer.checkpoint_files", [])) ==
          ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"],
          "bundle: the checkpoint's shards listed for FullModelHFCheckpointer")
    check(over.get("checkpointer.checkpoint_dir") == model and over.get("dataset.data_files") == "data.txt",
          "bundle: the checkpoint folder and the data file passed as overrides")
    chunked = "CEWithChunkedOutputLoss" in open(os.path.join(out, "torchtune.yaml")).read()
    check(("written for torchtune 0.6" in r.stderr) == chunked,
          "bundle: launch.sh warns of a torchtune other than 0.6 where the loss is chunked")
    r = subprocess.run(["bash", launch, "data.txt", tmp], env=env, capture_output=True, text=True)
    check(r.returncode == 2 and "no .safetensors files" in r.stderr, "bundle: a folder without weights is refused")


def check_readme_row(memplan, tmp):
    """The published QLoRA row, planned with its own settings, is the config torchtune ran."""
    want = {}
    for line in open(f"{ENGINES}/torchtune_readme_qlora.txt"):
        if line.strip() and not line.startswith("#"):
            k, v = (x.strip() for x in line.split("=", 1))
            want[k] = yaml.safe_load(v)
    path = os.path.join(tmp, "readme-qlora.yaml")
    flags = ["estimate", "--model", "llama-3.2-3b", "--precision", "pure-bf16", "--batch", "2", "--seq", "4096",
             "--checkpointing", "full", "--ce", "chunked", "--compile", "--optimizer-impl", "fused",
             "--attention", "flash", "--lora-rank", "64", "--lora-targets", "q,v,o,gate,up,down", "--quant",
             "nf4-dq", "--offload-activations", "--emit", "torchtune"]
    plan = emit(TALLY, memplan, flags, path, "README QLoRA row")
    if plan is None:
        return
    cfg = yaml.safe_load(open(path))
    check(recipe_of(plan["settings"]) == want.pop("recipe"), "README QLoRA row: the recipe")
    for k, v in want.items():
        got = cfg
        for part in k.split("."):
            got = got.get(part) if isinstance(got, dict) else None
        check(got == v, f"README QLoRA row: {k} = {got!r}, torchtune ran {v!r}")


REFUSALS = [
    # (extra arguments, what the message must say)
    (["--model", "gpt2", "--precision", "pure-bf16"], "no torchtune builder memplan knows has the shape of 'gpt2'"),
    (["--model", "llama-3.2-1b", "--precision", "mixed-bf16"], "precision 'mixed-bf16' has no torchtune form"),
    (["--model", "llama-3.2-1b", "--precision", "pure-bf16", "--attention", "eager"], "attention 'eager'"),
    (["--model", "llama-3.2-1b", "--precision", "pure-bf16", "--offload-activations"],
     "offloads activations only with activation checkpointing"),
    (["--model", "llama-3.2-1b", "--precision", "pure-bf16", "--lora-rank", "8", "--optimizer-in-backward"],
     "LoRA recipes have no optimizer_in_bwd"),
    (["--model", "llama-3.2-1b", "--precision", "pure-bf16", "--lora-rank", "8", "--lora-targets", "q,v,gate"],
     "all of the MLP or none of it"),
    (["--model", "llama-3.2-1b", "--precision", "pure-bf16", "--lora-rank", "8", "--lora-targets", "q,v,head"],
     "no LoRA on the output head"),
    (["--model", "llama-3.2-1b", "--precision", "pure-bf16", "--gpus", "2", "--zero", "1"], "not 1"),
    (["--model", "llama-3.2-1b", "--precision", "pure-bf16", "--framework", "pytorch"], "--framework torchtune"),
    (["--model", "llama-3.2-1b", "--precision", "pure-bf16", "--optimizer", "adafactor"],
     "optimizer 'adafactor' has no torchtune config"),
]


def check_refusals(memplan, tmp):
    for extra, says in REFUSALS:
        out = os.path.join(tmp, "refused.yaml")
        p = run_memplan(memplan, ["estimate", "--attention", "flash", *extra, "--emit", "torchtune", "-o", out])
        tag = "refuse " + " ".join(extra)
        check(p.returncode == 2 and says in p.stderr, f"{tag}: exit {p.returncode}, message {p.stderr.strip()!r}")
        check(not os.path.exists(out), f"{tag}: nothing written")




def compare_round_trip(tag, plan, p):
    check(p.returncode in (0, 1), f"{tag}: check exit {p.returncode}: {p.stderr.strip()[:300]}")
    if p.returncode not in (0, 1):
        return
    got = json.loads(p.stdout)
    origins = {o["setting"]: o for o in got["settings"]}
    s = plan["settings"]
    want = ["framework", "precision", "optimizer", "batch", "accum", "seq", "checkpointing", "attention", "ce",
            "lora-rank", "compile", "offload-activations", "zero", "expandable-segments"]
    if s["lora-rank"]:
        want += ["lora-targets", "lora-dropout"]
    else:
        want.append("optimizer-in-backward")
    if s["optimizer"] in ("adamw", "sgd", "sgd-momentum"):
        want.append("optimizer-impl")
    for k in want:
        check(k in origins, f"{tag}: check says where {k} came from")
    for k, o in origins.items():
        if k in s and k not in NOT_A_SETTING:
            check(same_value(s[k], o["value"]), f"{tag}: check reads {k} {o['value']!r} from {o['key']}, "
                                                 f"the plan has {s[k]!r}")
        check(o["key"] != "(not in the files)" or k == "gpus", f"{tag}: {k} is not left to memplan's default")
    for b in ("allocated_bytes", "reserved_bytes", "device_bytes"):  # the plan's JSON has whole bytes
        check(round(got[b]) == round(plan[b]), f"{tag}: check's {b} {got[b]!r}, the plan's {plan[b]!r}")
    check(got["unknown_keys"] == [], f"{tag}: every key of the emitted file is known: {got['unknown_keys']}")


def round_trip(memplan, trip):
    """memplan check on an emitted file (run beside the emits, in threads: ~130 runs)."""
    tag, path, plan, gemma2 = trip
    p = check_back(memplan, path, plan, [])
    flash = check_back(memplan, path, plan, ["--attention", "flash"]) if gemma2 else None
    return trip, p, flash


def check_round_trips(futures):
    """Each emitted file's check reproduces its plan."""
    for future in futures:
        (tag, _, plan, gemma2), p, flash = future.result()
        if not gemma2:
            compare_round_trip(f"round trip {tag}", plan, p)
            continue
        # torchtune/models/gemma2/_attention.py (v0.6.1 and pytorch/torchtune@bd2a0fc7c314): no SDPA
        att = [o for o in json.loads(p.stdout)["settings"] if o["setting"] == "attention"] if p.returncode < 2 else []
        check(att and att[0]["value"] == "eager", f"round trip {tag}: Gemma 2's attention read as eager")
        compare_round_trip(f"round trip {tag} --attention flash", plan, flash)


def main():
    memplan = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build/bin", "memplan")
    keys, required = recipe_keys()
    models = {r["profile"]: r for r in csv_rows(f"{ENGINES}/torchtune_models.csv")}
    runs = [(name, gpu, task, []) for name in ("llama-3.2-1b", "llama-3.1-8b", "qwen2.5-1.5b", "gemma-2-2b",
                                                "mistral-7b", "phi-3-mini")
            for gpu in ("rtx4090", "a100-80g") for task in ("full", "lora", "qlora")]
    # the torchtune README's rows, as published (tests/validation/published/measurements.csv)
    row = ["--precision", "pure-bf16", "--batch", "2", "--seq", "4096", "--checkpointing", "full", "--ce",
           "chunked", "--compile", "--optimizer-impl", "fused", "--attention", "flash"]
    runs += [("llama-3.2-3b", "a100-80g", "full", row + ["--optimizer-in-backward", "--offload-activations"]),
             ("llama-3.2-3b", "a100-80g", "qlora", row + ["--lora-rank", "64", "--lora-targets",
                                                          "q,v,o,gate,up,down", "--offload-activations"]),
             ("llama-3.1-8b", "rtx4090", "lora", ["--lora-targets", "q,v,head", "--lora-dropout", "0.05"]),
             ("qwen2.5-7b", "a100-80g", "qlora", ["--optimizer", "adamw-8bit-torchao"]),
             ("llama-3.1-70b", "h100", "full", ["--gpus", "8"]),
             ("llama-3.1-70b", "h100", "lora", ["--gpus", "8", "--zero", "2"]),
             ("llama-3.1-70b", "a100-40g", "full", ["--gpus", "4", "--offload", "params", "--zero", "3"])]
    # every row of memplan's builder table, full, LoRA and QLoRA, estimated as pinned
    estimates = [(name, None, task, ["--precision", "pure-bf16", "--attention", "flash", "--lora-rank",
                                     "0" if task == "full" else "8", *(["--quant", "nf4-dq"] if task == "qlora" else [])])
                 for name in models for task in ("full", "lora", "qlora")]
    emitted = 0
    trips = []
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=4) as pool:
        for name, gpu, task, extra in runs + estimates:
            tag = f"{name} {gpu} {task}{' ' + ' '.join(extra) if extra else ''}"
            path = os.path.join(tmp, "torchtune.yaml")
            how = ["--gpu", gpu, "--task", task] if gpu else ["estimate"]
            plan = emit(TALLY, memplan, [*how, "--model", name, *extra, "--emit", "torchtune"], path, tag)
            if plan is None:
                continue
            emitted += 1
            text = open(path).read()
            try:
                cfg = yaml.safe_load(text)
            except yaml.YAMLError as e:
                check(False, f"{tag}: YAML: {e}")
                continue
            cfg["_text"] = text
            check(plan["settings"]["framework"] == "torchtune", f"{tag}: estimated with the torchtune profile")
            check_plan(tag, {k: v for k, v in cfg.items()}, plan, models[name], keys, required)
            kept = os.path.join(tmp, f"trip{len(trips)}.yaml")
            shutil.copyfile(path, kept)
            trips.append(pool.submit(round_trip, memplan, (tag, kept, plan, ".gemma2." in models[name]["builder"])))
        check_round_trips(trips)
        check_bundle(memplan, tmp, keys, required)
        check_refusals(memplan, tmp)
        check_readme_row(memplan, tmp)
    check(emitted >= 30 + 3 * len(models), f"the matrix emitted {emitted} configs (want >= {30 + 3 * len(models)})")
    check(len(trips) == emitted, f"{len(trips)} round trips for {emitted} configs")
    print(f"emit-torchtune: {emitted} configs, each read back by memplan check; {TALLY.passed} passed, "
          f"{TALLY.failed} failed")
    return 1 if TALLY.failed else 0


if __name__ == "__main__":
    sys.exit(main())
