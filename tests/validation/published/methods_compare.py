#!/usr/bin/env python3
"""Compare memplan with published memory figures of preference and RL fine-tuning runs.

  methods_compare.py MEMPLAN [--csv OUT] [--record-first-contact]

Reads methods.csv beside this file (DPO, SimPO, PPO and GRPO runs, every row citing its source),
builds the `memplan estimate` flags of each row the way compare.py does for measurements.csv
(its flags_and_gaps, predict, settings and METRIC_FIELD are imported, not copied) and adds the
method flags: --method, --reference, and for grpo --generations, --prompt-len, --completion-len,
--rollout, --rollout-memory. It then compares the figure the row states (allocated, reserved or
device) with memplan's figure of the same kind.

Differences from compare.py's argument building, all driven by the row:
  - sharding: compare.py passes --zero 3 for every multi-GPU row; here other_settings
    'sharding=DeepSpeed ZeRO-N' gives --zero N, and 'tp=N' gives --tp N (NeMo-RL's FSDP2 over a
    data-parallel size of 1 then shards nothing more: no --zero);
  - framework: ms-swift (TRL's trainers underneath) and hf rows use memplan's hf profile, or its
    deepspeed profile when the row names DeepSpeed; 'other' rows use pytorch;
  - a model without a memplan profile is given by its shape (other_settings model_shape=...).

Rows memplan cannot model (other_settings 'unmodelled=REASON': PPO, padding-free batches, rollouts
on another GPU, checkpointing patterns memplan has no mode for) are listed with the reason.
Rows whose stat is 'boundary' (the source only says the run fits a GPU of that size) are checked,
not scored: consistent when memplan's figure is at most the bound.

Prints one line per row, then per source and overall: median |error|, worst (signed), and how
many rows memplan underestimates by more than 5% (error = memplan / published - 1). Exits 0: a
report, not a gate. --record-first-contact writes each scored row's error into the
first_contact_error_pct column where it is still empty (it never overwrites a recorded value).
Needs no PyTorch.
"""
import csv
import re
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (flags_and_gaps, predict, settings, METRIC_FIELD)

HERE = os.path.dirname(os.path.abspath(__file__))
CSV = os.path.join(HERE, "methods.csv")

# model_shape text (other_settings) -> memplan dimension flags
SHAPE_KEYS = (("layers", "--layers"), ("hidden", "--hidden"), ("heads", "--heads"),
              ("head_dim", "--head-dim"), ("ffn", "--ffn"), ("vocab", "--vocab"))


def shape_flags(text):
    """'Qwen3-0.6B: 28 layers, hidden 1024, 16 heads, 8 KV heads, head_dim 128, ffn 3072, vocab 151936, tied'."""
    flags = ["--family", "llama", "--mlp", "swiglu", "--norm", "rmsnorm", "--pos", "rope", "--bias", "0"]
    parts = [p.strip() for p in text.split(":", 1)[-1].split(",")]
    for part in parts:
        words = part.split()
        if not words:
            continue
        if "KV" in words:  # '8 KV heads' is --kv-heads only, not --heads
            flags += ["--kv-heads", words[0]]
            continue
        for key, flag in SHAPE_KEYS:
            kw = key.split()
            if words[-len(kw):] == kw and words[0].isdigit():      # '28 layers', '8 KV heads'
                flags += [flag, words[0]]
            elif words[:len(kw)] == kw and words[-1].isdigit():    # 'hidden 1024'
                flags += [flag, words[-1]]
    flags += ["--tied", "1" if "tied" in parts else "0"]
    return flags


def method_flags(row, profiles):
    """(flags, framework profile, reason memplan cannot model it or None)."""
    st = compare.settings(row)
    if st.get("unmodelled"):
        return None, None, st["unmodelled"]
    shape = st.get("model_shape")
    known = profiles | ({row["model"]} if shape else set())
    flags, gaps = compare.flags_and_gaps(row, known)
    if flags is None:
        return None, None, "; ".join(gaps)
    if shape:
        i = flags.index("--model")
        flags[i:i + 2] = shape_flags(shape)
    # sharding from the row, not compare.py's blanket ZeRO-3
    if "--zero" in flags:
        i = flags.index("--zero")
        del flags[i:i + 2]
    sharding = st.get("sharding", "")
    stage = re.search(r"zero-?([0-3])", sharding, re.I)  # 'ZeRO-3' and ms-swift's 'zero3' alike
    if stage:
        flags += ["--zero", stage.group(1)]
    if st.get("tp"):
        flags += ["--tp", st["tp"].split()[0]]
    m = row["method"]
    flags += ["--method", m]
    if row["reference"] and m in ("dpo", "ipo", "kto", "grpo"):
        flags += ["--reference", row["reference"]]
    if st.get("value_lora", "").startswith("1"):
        flags += ["--value-lora"]
    if st.get("reward_profile"):
        flags += ["--reward-model", st["reward_profile"].split()[0]]
    if m in ("grpo", "online-dpo", "ppo"):
        if row["prompt_len"] and "--seq" in flags:  # the row's seq is a length cap; the rows are prompt + completion
            i = flags.index("--seq")
            del flags[i:i + 2]
        for col, flag in (("generations", "--generations"), ("prompt_len", "--prompt-len"),
                          ("completion_len", "--completion-len")):
            if row[col]:
                flags += [flag, row[col]]
        if row["rollout"] in ("generate", "vllm", "server"):
            flags += ["--rollout", row["rollout"]]
        if row["rollout"] == "vllm" and row["rollout_memory"]:
            flags += ["--rollout-memory", row["rollout_memory"]]
    if row["framework"] in ("hf", "ms-swift"):
        fw = "deepspeed" if "DeepSpeed" in sharding else "hf"
    else:
        fw = compare.PROFILE.get(row["framework"], "pytorch")
    return flags, fw, None


def is_boundary(row):
    return compare.settings(row).get("stat", "").startswith("boundary")


def line(name, errs):
    if not errs:
        return "%s: 0 rows scored" % name
    worst = max(errs, key=abs)
    return "%s: %d rows, median |error| %.1f%%, worst %+.1f%%, under by more than 5%%: %d" % (
        name, len(errs), 100 * statistics.median(abs(e) for e in errs), 100 * worst,
        sum(1 for e in errs if e < -0.05))


def read_rows():
    with open(CSV, newline="") as fh:
        text = fh.read()
    comments = [l for l in text.splitlines(True) if l.startswith("#")]
    reader = csv.DictReader(l for l in text.splitlines(True) if not l.startswith("#"))
    return comments, reader.fieldnames, list(reader)


def record(comments, fields, rows, errors):
    """Fill first_contact_error_pct where empty; never overwrite."""
    changed = 0
    for r in rows:
        if r["id"] in errors and not r["first_contact_error_pct"].strip():
            r["first_contact_error_pct"] = "%+.2f" % (100 * errors[r["id"]])
            changed += 1
    with open(CSV, "w", newline="") as fh:
        fh.writelines(comments)
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print("recorded first-contact errors for %d rows" % changed)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    memplan, out_csv, rec = sys.argv[1], None, False
    args = sys.argv[2:]
    while args:
        a = args.pop(0)
        if a == "--csv" and args:
            out_csv = args.pop(0)
        elif a == "--record-first-contact":
            rec = True
        else:
            sys.exit("methods_compare.py: unknown argument '%s'" % a)
    profiles = set(subprocess.run([memplan, "list", "models"], capture_output=True, text=True,
                                  check=True).stdout.split())
    comments, fields, rows = read_rows()
    scored, bounds, unmodelled, results = {}, [], [], []
    print("%-52s %-9s %9s %9s %8s %8s  %s" % ("row", "metric", "published", "memplan", "error", "first", "notes"))
    for row in rows:
        flags, fw, why = method_flags(row, profiles)
        pub = int(row["value_bytes"])
        first = row["first_contact_error_pct"] or "-"
        if flags is None:
            unmodelled.append((row, why))
            print("%-52s %-9s %9.2f %9s %8s %8s  cannot model: %s" % (row["id"][:52], row["metric"], pub / 2**30,
                                                                      "-", "-", first, why))
            continue
        est, err_text = compare.predict(memplan, flags, fw)
        if est is None:
            unmodelled.append((row, "memplan refused: " + err_text))
            print("%-52s %-9s %9.2f %9s %8s %8s  memplan refused: %s" % (row["id"][:52], row["metric"],
                                                                         pub / 2**30, "-", "-", first, err_text))
            continue
        pred = est[compare.METRIC_FIELD[row["metric"]]]
        err = pred / pub - 1
        results.append((row, pred, err, fw, est.get("peak_phase", "")))
        if is_boundary(row):
            bounds.append((row, pred, err))
            note = "boundary (fits %.0f GiB): %s" % (pub / 2**30, "consistent" if pred <= pub else "INCONSISTENT")
        else:
            scored[row["id"]] = err
            note = "profile %s, peak: %s" % (fw, est.get("peak_phase", ""))
        print("%-52s %-9s %9.2f %9.2f %+7.1f%% %8s  %s" % (row["id"][:52], row["metric"], pub / 2**30,
                                                           pred / 2**30, 100 * err, first, note))
    print("(GiB; error = memplan / published - 1; 'first' = first_contact_error_pct as recorded in methods.csv)")
    errs = [(r, scored[r["id"]]) for r in rows if r["id"] in scored]
    for src in sorted({r["source"] for r in rows}):
        print(line("source " + src, [e for r, e in errs if r["source"] == src]))
    for m in sorted({r["method"] for r, _ in errs}):
        print(line("method " + m, [e for r, e in errs if r["method"] == m]))
    for metric in ("allocated", "reserved", "device"):
        print(line("metric " + metric, [e for r, e in errs if r["metric"] == metric]))
    print(line("all scored", [e for _, e in errs]))
    for r, pred, err in bounds:
        print("boundary %s: memplan %.2f GiB against the stated %.0f GiB: %s" % (
            r["id"], pred / 2**30, int(r["value_bytes"]) / 2**30, "consistent" if pred <= int(r["value_bytes"]) else "inconsistent"))
    print("cannot model (%d rows):" % len(unmodelled))
    for r, why in unmodelled:
        print("  %s (%s): %s" % (r["id"], r["source"], why))
    if out_csv:
        with open(out_csv, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["id", "metric", "published_bytes", "predicted_bytes", "error", "framework_profile", "peak_phase"])
            for r, pred, err, fw, phase in results:
                w.writerow([r["id"], r["metric"], r["value_bytes"], int(pred), "%.4f" % err, fw, phase])
    if rec:
        record(comments, fields, rows, {k: v for k, v in scored.items()} | {r["id"]: e for r, _, e in bounds})
    sys.exit(0)


if __name__ == "__main__":
    main()
