#!/usr/bin/env python3
"""test_emit_hf.py - emit train.py (memplan --emit hf) for a matrix of plans and check each
against the real projects' vocabularies and against the plan itself:

  * the file compiles (py_compile);
  * every keyword given to TrainingArguments, LoraConfig and BitsAndBytesConfig is a field of
    that class (tests/data/engines/*.txt, each citing repository, path and commit);
  * every LoRA target module is a Linear/Conv1D of that architecture (hf_modules.csv);
  * attention is sdpa only where the architecture declares it (hf_attention_support.csv);
  * what the script sets reads back equal to the plan's JSON (--format json): precision flags,
    optimizer, micro-batch, accumulation, sequence, checkpointing, loss, rank, quantisation,
    model id, predicted peak.

Usage: test_emit_hf.py BIN_DIR. Prints one line per failure and "emit-hf: N passed, N failed".
"""
import ast
import os
import py_compile
import subprocess
import sys
import tempfile

from emit_checks import Tally, csv_rows, emit, names

ENGINES = "tests/data/engines"
GPUS = ["t4", "rtx4090", "a100-80g"]
TASKS = ["full", "lora", "qlora"]
# Multi-GPU plans: ZeRO-3 shards a quantised base, which needs bnb_4bit_quant_storage.
SHARDED = [("llama-3.2-1b", "a100-80g", "qlora"), ("qwen2.5-0.5b", "a100-80g", "qlora")]
BF16 = {"amp-bf16", "mixed-bf16", "pure-bf16"}
FP16 = {"amp-fp16", "mixed-fp16"}
# memplan's optimizer names -> TrainingArguments optim (OptimizerNames, transformers_optim.txt)
OPTIM = {"adamw": "adamw_torch", "adamw-8bit": "adamw_bnb_8bit", "paged-adamw": "paged_adamw_32bit",
         "paged-adamw-8bit": "paged_adamw_8bit", "sgd": "sgd", "sgd-momentum": "sgd",
         "adafactor": "adafactor", "lion": "lion_32bit",
         # huggingface/transformers@fe2596e9 src/transformers/trainer_optimizer.py _get_torchao_optimizer
         "adamw-8bit-torchao": "adamw_torch_8bit", "adamw-4bit-torchao": "adamw_torch_4bit"}

TALLY = Tally()
check = TALLY.check


def smallest_per_family():
    """One profile per family (the first listed), with its repo id: the first alias naming a repo."""
    out = {}
    for row in csv_rows("profiles/models.csv"):
        if row["family"] in out:
            continue
        repo = next((a for a in row["aliases"].split("|") if "/" in a), "")
        out[row["family"]] = (row["name"], repo)
    return out


def calls(tree):
    """name -> list of {keyword: ast value} for every call of a name or an attribute (x.from_pretrained)."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            fn = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            found.setdefault(fn, []).append({k.arg: k.value for k in node.keywords})
    return found


def value(node):
    """A literal, or a dotted name such as torch.bfloat16 as a string."""
    if isinstance(node, ast.Attribute):
        return value(node.value) + "." + node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ast.literal_eval(node)


def assignments(tree):
    return {t.id: n.value for n in tree.body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name)}


def check_keys(tag, kind, kw, valid):
    for k in kw:
        check(k in valid, f"{tag}: {kind} keyword '{k}' is not a field of {kind}")


def check_plan(tag, family, repo, text, plan, vocab):
    s = plan["settings"]
    tree = ast.parse(text)
    c, a = calls(tree), assignments(tree)
    ta = c.get("TrainingArguments", [])
    check(len(ta) == 1, f"{tag}: one TrainingArguments call")
    if len(ta) != 1:
        return
    ta = ta[0]
    check_keys(tag, "TrainingArguments", ta, vocab["ta"])
    check(value(a["MODEL"]) == repo, f"{tag}: MODEL is the repo id {repo}")
    check(value(a["SEQ"]) == s["seq"], f"{tag}: SEQ = plan seq {s['seq']}")
    check(value(ta["per_device_train_batch_size"]) == s["batch"], f"{tag}: micro-batch {s['batch']}")
    check(value(ta["gradient_accumulation_steps"]) == s["accum"], f"{tag}: accumulation {s['accum']}")
    check(value(ta["bf16"]) == (s["precision"] in BF16), f"{tag}: bf16 flag for {s['precision']}")
    check(value(ta["fp16"]) == (s["precision"] in FP16), f"{tag}: fp16 flag for {s['precision']}")
    check(value(ta["optim"]) == OPTIM[s["optimizer"]] and value(ta["optim"]) in vocab["optim"],
          f"{tag}: optim for {s['optimizer']}")
    ckpt = s["checkpointing"] != "none"
    check(value(ta["gradient_checkpointing"]) == ckpt, f"{tag}: gradient_checkpointing for {s['checkpointing']}")
    if ckpt:
        check(value(ta["gradient_checkpointing_kwargs"]) == {"use_reentrant": False}, f"{tag}: non-reentrant")
    compiled = "torch_compile" in ta and value(ta["torch_compile"]) is True
    check(compiled == s["compile"], f"{tag}: torch_compile=True iff the plan is compiled")
    check(text.count("learning_rate") == 1, f"{tag}: the learning rate appears once")
    chunked = s["ce"] == "chunked"
    check(("ChunkedLossTrainer(model" in text) == chunked, f"{tag}: chunked loss iff the plan's ce is chunked")
    if chunked:
        check(value(a["CE_CHUNK"]) == s["ce-chunk"], f"{tag}: CE_CHUNK = {s['ce-chunk']}")
    check("prepare_model_for_kbit_training" not in text, f"{tag}: no fp32 upcast the plan did not count")
    # the plan printed is the plan that runs: no full fine-tuning with fp32 masters outside DeepSpeed
    # and FSDP (the Trainer would train the amp twin), and no second prediction
    masters = s["lora-rank"] == 0 and s["precision"].startswith("mixed")
    check(not masters or s["zero"] > 0 or s["offload"] != "none" or plan["settings"]["framework"] == "deepspeed",
          f"{tag}: {s['precision']} full fine-tuning only under DeepSpeed or FSDP")
    check(text.count("Predicted peak per GPU") == 1, f"{tag}: one prediction, the plan's")
    check_load(tag, family, c, s, vocab)
    guard = 'Version(package_version("bitsandbytes")) < Version("0.43.2")' in text
    check(guard == (s["quant"].startswith("nf4") and s["bitsandbytes"] is None),
          f"{tag}: the bitsandbytes >= 0.43.2 guard iff a 4-bit base planned for a current release")
    check_lora(tag, family, c, s, vocab)
    peak = f"{plan['allocated_bytes'] / 2**30:.2f} GiB allocated, {plan['device_bytes'] / 2**30:.2f} GiB on the device"
    check(peak in text, f"{tag}: summary states the predicted peak ({peak})")


def check_load(tag, family, c, s, vocab):
    load = [k for k in c.get("from_pretrained", []) if "attn_implementation" in k]
    check(len(load) == 1, f"{tag}: one model load")
    if not load:
        return
    load = load[0]
    sdpa = vocab["sdpa"][family]
    want_attn = "sdpa" if s["attention"] == "flash" and sdpa else "eager"
    check(value(load["attn_implementation"]) == want_attn, f"{tag}: attn_implementation {want_attn}")
    dtype = value(load["torch_dtype"])
    if s["lora-rank"] == 0:
        want = "torch.bfloat16" if s["precision"] == "pure-bf16" else "torch.float32"
        check(dtype == want, f"{tag}: full fine-tuning loads {want} (got {dtype})")
    bnb = c.get("BitsAndBytesConfig", [])
    check(bool(bnb) == (s["quant"] != "none"), f"{tag}: BitsAndBytesConfig iff quantised")
    for kw in bnb:
        check_keys(tag, "BitsAndBytesConfig", kw, vocab["bnb"])
        if s["quant"].startswith("nf4"):
            check(value(kw["bnb_4bit_quant_type"]) == "nf4", f"{tag}: nf4")
            check(value(kw["bnb_4bit_use_double_quant"]) == (s["quant"] == "nf4-dq"), f"{tag}: double quant")
            want = "torch.bfloat16" if s["precision"] in BF16 else "torch.float16"
            check(value(kw["bnb_4bit_compute_dtype"]) == want, f"{tag}: compute dtype {want}")
            sharded = s["gpus"] > 1 and s["zero"] >= 3
            check(("bnb_4bit_quant_storage" in kw) == sharded, f"{tag}: quant storage iff sharded")
        else:
            check(value(kw["load_in_8bit"]) is True, f"{tag}: int8")


def check_lora(tag, family, c, s, vocab):
    lc = c.get("LoraConfig", [])
    check(len(lc) == (1 if s["lora-rank"] else 0), f"{tag}: LoraConfig iff LoRA")
    for kw in lc:
        check_keys(tag, "LoraConfig", kw, vocab["lora"])
        check(value(kw["r"]) == s["lora-rank"], f"{tag}: rank {s['lora-rank']}")
        check(abs(value(kw["lora_dropout"]) - s["lora-dropout"]) < 1e-6, f"{tag}: LoRA dropout {s['lora-dropout']}")
        mods = value(kw["target_modules"])
        check(len(mods) == len(set(mods)) and mods, f"{tag}: target modules distinct, not empty")
        for m in mods:
            check(m.split(".")[-1] in vocab["modules"][family], f"{tag}: '{m}' is a {family} Linear/Conv1D")


def load_vocab():
    modules = {}
    for r in csv_rows(f"{ENGINES}/hf_modules.csv"):
        if r["kind"] != "Parameter":
            modules.setdefault(r["model_type"], set()).add(r["module"])
    sdpa = {r["model_type"]: r["sdpa"] == "_supports_sdpa=True"
            for r in csv_rows(f"{ENGINES}/hf_attention_support.csv")}
    return {"ta": names(f"{ENGINES}/transformers_training_args.txt"),
            "lora": names(f"{ENGINES}/peft_lora_config.txt"),
            "bnb": names(f"{ENGINES}/transformers_bnb_config.txt"),
            "optim": names(f"{ENGINES}/transformers_optim.txt"), "modules": modules, "sdpa": sdpa}


def main():
    memplan = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build/bin", "memplan")
    vocab, fams = load_vocab(), smallest_per_family()
    runs = [(fam, name, repo, gpu, task, []) for fam, (name, repo) in fams.items() for gpu in GPUS for task in TASKS]
    runs += [(f, n, r, g, t, ["--gpus", "8", "--zero", "3"]) for f, (n, r) in fams.items()
             for (m, g, t) in SHARDED if m == n]
    runs += [(f, n, r, "rtx4090", t, ["--compile"]) for f, (n, r) in fams.items() for t in ("full", "qlora")
             if f in ("qwen2", "gemma2")]
    emitted = 0
    with tempfile.TemporaryDirectory() as tmp:
        for fam, name, repo, gpu, task, extra in runs:
            tag = f"{name} {gpu} {task}{' ' + ' '.join(extra) if extra else ''}"
            path = os.path.join(tmp, "train.py")
            plan = emit(TALLY, memplan, ["--model", name, "--gpu", gpu, "--task", task, *extra, "--emit", "hf"],
                        path, tag)
            if plan is None:
                continue
            emitted += 1
            try:
                py_compile.compile(path, doraise=True)
                check(True, "")
            except py_compile.PyCompileError as e:
                check(False, f"{tag}: py_compile: {e}")
                continue
            check_plan(tag, fam, repo, open(path).read(), plan, vocab)
    check(emitted >= 40, f"the matrix emitted {emitted} scripts (want >= 40)")
    # fp32 masters on one GPU: the Trainer alone would train another plan, so no script
    r = subprocess.run([memplan, "estimate", "--model", "gpt2", "--precision", "mixed-bf16", "--emit", "hf"],
                       capture_output=True, text=True)
    check(r.returncode == 2 and r.stdout == "" and "runs in the Trainer only under DeepSpeed or FSDP" in r.stderr
          and r.stderr.count("\n") == 1, "mixed-bf16 full fine-tuning on one process is refused, not rewritten")
    check(set(fams) <= set(vocab["modules"]), "every profiled family is in hf_modules.csv")
    print(f"emit-hf: {emitted} scripts; {TALLY.passed} passed, {TALLY.failed} failed")
    return 1 if TALLY.failed else 0


if __name__ == "__main__":
    sys.exit(main())
