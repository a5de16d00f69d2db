#!/usr/bin/env python3
"""Compare memplan's prediction with published GPU-memory measurements.

  compare.py MEMPLAN [--framework F] [--csv OUT] [--summary] [--record-first-contact]

Each row is estimated under the framework profile of the stack it ran on (its
'framework' column: hf, torchtune, litgpt, deepspeed; other stacks: pytorch);
--framework F estimates every row under F instead; --summary prints only the
groups' lines (make test).

Reads measurements.csv beside this file (every row cites its source), asks
`memplan estimate --format json` for the same configuration, and compares the
figure the source reports with memplan's figure of the same kind:
allocated -> allocated_bytes, reserved -> reserved_bytes, device -> device_bytes.

A row whose run used something memplan cannot express (today only a model
without a profile) is left out with the reason; the summary gives the
expressible rows apart. The report ends with one line per group (all, expressible, per metric, per
source, per stack, and the issue's two groups, 16-bit LoRA and full fine-tuning
against QLoRA):
  "<group>: N rows, median |error| X%, worst Y%, underestimates K/N (Z beyond 5%)"
(error = predicted / published - 1; negative = memplan under-estimates; worst is
signed). The targets (issue 12: 16-bit and full median <= 3%, worst <= 8%;
QLoRA median <= 5%, worst <= 10%; no underestimate beyond 5%) are printed beside
the two groups. It never fails on the size of the errors: it is a measurement,
not a gate (the targets are not met yet).

First contact (issue 35): the column first_contact_error_pct holds memplan's error
on a row the first time memplan saw it, before anything was changed for it (empty
for the 83 rows of the first five sources: theirs was not recorded). Each source
line adds the first-contact figures beside today's when the source has any, and
a last line sums them up against the issue's targets (median |error| <= 6%, at
least 80% within 10%, at most 1 in 10 under by more than 5%).
--record-first-contact writes each estimated row's error into that column where
it is still empty; it never overwrites a recorded value. Rows may also state,
in other_settings, model_shape= (a model without a profile, read as
methods_compare.py reads it), zero=N (the ZeRO stage of a multi-GPU row; without
it a multi-GPU row is ZeRO-3 / FSDP full shard, as every row of the first five
sources is), offload=optimizer, and unmodelled= (what memplan cannot express:
the row is listed with the reason and not estimated).
"""
import csv
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
METRIC_FIELD = {"allocated": "allocated_bytes", "reserved": "reserved_bytes", "device": "device_bytes"}


def settings(row):
    """other_settings as a dict: 'key=value (comment)' items separated by ';'."""
    out = {}
    for item in row["other_settings"].split(";"):
        if "=" in item:
            k, v = item.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def flags_and_gaps(row, profiles):
    """The memplan flags for a row, and what the row used that memplan cannot express."""
    st, gaps = settings(row), []
    if st.get("unmodelled"):
        return None, ["cannot model: " + st["unmodelled"]]
    if row["model"] not in profiles and not st.get("model_shape"):
        return None, ["no profile for %s" % row["model"]]
    f = ["--model", row["model"], "--precision", row["precision"], "--optimizer", row["optimizer"],
         "--batch", row["batch"], "--seq", row["seq"], "--accum", row["accum"] or "1",
         "--checkpointing", row["checkpointing"] or "none"]
    attn = st.get("attention", "sdpa")
    f += ["--attention", "eager" if attn.startswith("eager") else "flash"]
    f += ["--ce", "chunked" if st.get("ce", "full").startswith("chunked") else "full"]
    if "chunk_size=128" in st.get("ce", "") or "chunk 128" in st.get("ce", ""):
        f += ["--ce-chunk", str(128 * int(row["batch"]))]  # LitGPT's chunks: 128 positions of every sequence
    if row["task"] in ("lora", "qlora"):
        targets = []
        for t in row["lora_targets"].split(","):
            if t == "mlp":
                targets += ["gate", "up", "down"]
            elif t:
                targets.append(t)
        f += ["--lora-rank", row["lora_rank"], "--lora-targets", ",".join(targets) or "all"]
        if row["quant"] not in ("", "none"):
            f += ["--quant", row["quant"]]
        if float(row["lora_dropout"] or 0) > 0:
            f += ["--lora-dropout", row["lora_dropout"]]
        if st.get("bitsandbytes"):
            f += ["--bitsandbytes", st["bitsandbytes"].split()[0]]
    if st.get("model_shape") and row["model"] not in profiles:
        from methods_compare import shape_flags  # a model without a profile: its dimensions
        f[0:2] = shape_flags(st["model_shape"])
    gpus = int(row["gpus"] or 1)
    if gpus > 1:
        # every multi-GPU row of the first five sources is ZeRO-3 or FSDP full shard; later rows state zero=N
        f += ["--gpus", str(gpus), "--zero", st.get("zero", "3").split()[0]]
    if st.get("offload", "").startswith("params"):
        f += ["--offload", "params"]
    elif st.get("offload", "").startswith("optimizer"):
        f += ["--offload", "optimizer"]
    if st.get("optimizer_in_bwd", "false").startswith("true"):
        f += ["--optimizer-in-backward"]
    if st.get("activation_offloading", "false").startswith("true"):
        f += ["--offload-activations"]
    if st.get("compile", "false").startswith("true"):
        f += ["--compile"]
    if st.get("optimizer_impl"):
        f += ["--optimizer-impl", st["optimizer_impl"].split()[0]]
    if st.get("previous_seq"):
        f += ["--previous-seq", st["previous_seq"].split()[0]]
    return f, gaps


def predict(memplan, flags, framework):
    out = subprocess.run([memplan, "estimate", "--framework", framework, "--format", "json"] + flags,
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip()
    return json.loads(out.stdout), None


PROFILE = {"hf": "hf", "torchtune": "torchtune", "litgpt": "litgpt", "deepspeed": "deepspeed"}
# issue 12's targets: (median |error|, worst |error|) per group; no underestimate beyond 5% anywhere
TARGETS = {"16-bit LoRA and full": (0.03, 0.08), "QLoRA": (0.05, 0.10)}


def is_peak(row):
    """A row whose value is a peak of the run. PEFT's '99th percentile' rows are not: they are the
    99th percentile of memory_reserved() sampled after each step (huggingface/peft
    method_comparison/MetaMathQA run.py train(), utils.py log_results: np.percentile(log, 99)), so
    they follow the lengths of the run's padded batches, which memplan is not given; memplan's
    figures are peaks. They are printed and summarised apart from the target groups."""
    return not settings(row).get("stat", "").startswith("99th percentile")


def first_contact(rows):
    """The recorded first-contact errors (fractions) of rows that have one."""
    return [float(r["first_contact_error_pct"]) / 100 for r in rows if (r.get("first_contact_error_pct") or "").strip()]


def first_line(errs):
    """First-contact figures: median |error|, share within 10%, share under by more than 5%."""
    n = len(errs)
    med = statistics.median([abs(e) for e in errs])
    within = sum(1 for e in errs if abs(e) <= 0.10)
    under = sum(1 for e in errs if e < -0.05)
    return med, within, under, "first contact %d rows, median |error| %.1f%%, worst %+.1f%%, within 10%% %d/%d, under by >5%% %d/%d" % (
        n, 100 * med, 100 * max(errs, key=abs), within, n, under, n)


# The first five sources' rows were compared with memplan, and memplan changed for them, before first contact was
# kept: their cells stay empty, and --record-first-contact never fills them (a figure recorded now would not be a first).
UNRECORDED_SOURCES = {"peft-metamathqa", "peft-accelerate-docs", "litgpt-config-hub", "litgpt-resource-tables", "torchtune-readme"}


def record(path, errors):
    """Fill first_contact_error_pct where empty; never overwrite. Comment lines kept as they are."""
    with open(path, newline="") as fh:
        text = fh.read()
    comments = [l for l in text.splitlines(True) if l.startswith("#")]
    reader = csv.DictReader(l for l in text.splitlines(True) if not l.startswith("#"))
    fields, rows, changed = reader.fieldnames, list(reader), 0
    for r in rows:
        if r["id"] in errors and r["source"] not in UNRECORDED_SOURCES and not (r.get("first_contact_error_pct") or "").strip():
            r["first_contact_error_pct"] = "%+.2f" % (100 * errors[r["id"]])
            changed += 1
    with open(path, "w", newline="") as fh:
        fh.writelines(comments)
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print("recorded first-contact errors for %d rows" % changed)


def summary(name, errs):
    if not errs:
        return "%s: 0 rows" % name
    under = sum(1 for e in errs if e < 0)
    beyond = sum(1 for e in errs if e < -0.05)
    worst = max(errs, key=abs)
    line = "%s: %d rows, median |error| %.1f%%, worst %+.1f%%, underestimates %d/%d (%d beyond 5%%)" % (
        name, len(errs), 100 * statistics.median([abs(e) for e in errs]), 100 * worst, under, len(errs), beyond)
    if name in TARGETS:
        med, wst = TARGETS[name]
        met = statistics.median([abs(e) for e in errs]) <= med and abs(worst) <= wst and beyond == 0
        line += "  [target: median <= %.0f%%, worst <= %.0f%%, none beyond -5%%: %s]" % (
            100 * med, 100 * wst, "met" if met else "not met")
    return line


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    memplan, framework, out_csv, quiet, rec = sys.argv[1], None, None, False, False
    args = sys.argv[2:]
    while args:
        a = args.pop(0)
        if a == "--framework" and args:
            framework = args.pop(0)
        elif a == "--csv" and args:
            out_csv = args.pop(0)
        elif a == "--summary":
            quiet = True
        elif a == "--record-first-contact":
            rec = True
        else:
            sys.exit("compare.py: unknown argument '%s'" % a)
    profiles = set(subprocess.run([memplan, "list", "models"], capture_output=True, text=True,
                                  check=True).stdout.split())
    with open(os.path.join(HERE, "measurements.csv"), newline="") as fh:
        rows = list(csv.DictReader(line for line in fh if not line.startswith("#")))
    results, failed, left_out = [], 0, []
    say = (lambda *a: None) if quiet else print
    say("%-34s %-9s %10s %10s %8s  %s" % ("row", "metric", "published", "memplan", "error", "notes"))
    for row in rows:
        flags, gaps = flags_and_gaps(row, profiles)
        fw = framework or PROFILE.get(row["framework"], "pytorch")
        est, why = predict(memplan, flags, fw) if flags else (None, "; ".join(gaps))
        if est is None:
            failed += flags is not None
            if flags is None:
                left_out.append((row, why))
            say("%-34s %-9s %10.2f %10s %8s  %s" % (row["id"][:34], row["metric"],
                                                    int(row["value_bytes"]) / 2**30, "-", "-", why))
            continue
        pub, pred = int(row["value_bytes"]), est[METRIC_FIELD[row["metric"]]]
        err = pred / pub - 1
        results.append((row, pred, err, gaps))
        notes = gaps + ([] if is_peak(row) else ["not a peak: p99 of post-step samples"])
        if (row.get("first_contact_error_pct") or "").strip():
            notes.append("first contact %+.1f%%" % float(row["first_contact_error_pct"]))
        say("%-34s %-9s %10.2f %10.2f %+7.1f%%  %s" % (row["id"][:34], row["metric"], pub / 2**30,
                                                       pred / 2**30, 100 * err, "; ".join(notes)))
    say("(GiB; error = memplan / published - 1)")
    print(summary("all estimated", [e for _, _, e, _ in results]))
    print(summary("expressible", [e for _, _, e, g in results if not g]))
    for metric in ("allocated", "reserved", "device"):
        print(summary("metric " + metric, [e for r, _, e, g in results if r["metric"] == metric]))
    for key, label in (("source", "source"), ("framework", "stack")):
        for v in sorted({r[key] for r, _, _, _ in results}):
            line = summary("%s %s" % (label, v), [e for r, _, e, g in results if r[key] == v])
            first = first_contact([r for r in rows if r[key] == v]) if key == "source" else []
            print(line + ("  | " + first_line(first)[3] if first else ""))
    print(summary("not peaks (p99 of post-step samples, kept out of the groups below)",
                  [e for r, _, e, g in results if not is_peak(r)]))
    peaks = [(r, e) for r, _, e, g in results if is_peak(r)]
    print(summary("16-bit LoRA and full", [e for r, e in peaks if r["task"] != "qlora"]))
    print(summary("QLoRA", [e for r, e in peaks if r["task"] == "qlora"]))
    first = first_contact(rows)
    if first:
        med, within, under, text = first_line(first)
        n = len(first)
        print("all sources with a recorded first contact: %s  [issue 35 targets: median <= 6%%: %s; >= 80%% within 10%%: %s; "
              "<= 1 in 10 under by >5%%: %s]" % (text, "met" if med <= 0.06 else "not met",
                                                 "met" if within >= 0.8 * n else "not met",
                                                 "met" if under <= 0.1 * n else "not met"))
    for r, why in left_out:
        if why.startswith("cannot model"):
            say("left out %s (%s): %s" % (r["id"], r["source"], why))
    if out_csv:
        with open(out_csv, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["id", "metric", "published_bytes", "predicted_bytes", "error", "left_out"])
            for r, pred, err, gaps in results:
                w.writerow([r["id"], r["metric"], r["value_bytes"], int(pred), "%.4f" % err, "; ".join(gaps)])
    if rec:
        record(os.path.join(HERE, "measurements.csv"), {r["id"]: e for r, _, e, _ in results})
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
