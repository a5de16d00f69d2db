#!/bin/sh
# make validate: memtrain's measured memory against memplan's prediction.
# Each configuration is written by `memplan estimate --framework memtrain --emit memtrain`
# and run by memtrain; the table shows the error per component, of the total peak, and of
# the peak RSS above the process baseline (read from /proc/self/status) against the
# predicted total. Targets: each component within 1%, total within 2%, RSS within 5%
# (RSS is checked where the prediction is at least 256 MiB, since OpenBLAS's thread
# buffers and the C library's arenas are a fixed few tens of MiB).
# Data-parallel configurations (memtrain under mpirun) give one row per rank against the
# planner's per-rank prediction.
# usage: tests/validate.sh BIN quick|full
bin=${1:-build/bin}
set_=${2:-full}
export MEMPLAN_PROFILES="$(pwd)/profiles"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# data parallel (configs ending in MPI): run under mpirun with the plan's --gpus ranks, each
# rank a row; skipped where mpirun or an MPI build of memtrain is missing
mpi_run="mpirun --oversubscribe"
[ "$(id -u)" = 0 ] && mpi_run="$mpi_run --allow-run-as-root"
have_mpi=no
command -v mpirun >/dev/null && ldd "$bin/memtrain" 2>/dev/null | grep -q libmpi && have_mpi=yes
# The sanitizer build: OpenMPI keeps allocations until exit in components it has already
# unloaded, which LeakSanitizer would report; tests/test_memtrain_mpi.sh checks memtrain's
# own leaks under MPI, so here leaks are not looked for.
if ldd "$bin/memtrain" 2>/dev/null | grep -q libasan; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
head -c 3000000 /dev/urandom | od -An -tx1 | tr -d ' \n' | fold -w 80 > "$tmp/data.txt"

G="--family gpt2 --layers 6 --hidden 512 --heads 8 --vocab 8192 --max-pos 128 --seq 128 --batch 4"
Lm="--family llama --layers 6 --hidden 512 --heads 8 --kv-heads 2 --vocab 8192 --seq 128 --batch 4"
g="--family gpt2 --layers 2 --hidden 128 --heads 4 --vocab 2048 --max-pos 64 --seq 64 --batch 2"
l="--family llama --layers 2 --hidden 128 --heads 4 --kv-heads 2 --vocab 2048 --seq 64 --batch 2"

if [ "$set_" = quick ]; then
cat > "$tmp/configs" <<EOC
gpt2-fp32|$g --precision fp32 --optimizer adamw
gpt2-full-ckpt-bf16|$g --precision mixed-bf16 --checkpointing full --optimizer adamw
llama-lora-flash|$l --precision fp32 --lora-rank 4 --lora-targets q,v --attention flash --optimizer adamw
llama-qlora-8bit|$l --precision mixed-bf16 --lora-rank 4 --quant nf4-dq --optimizer adamw-8bit --ce chunked --ce-chunk 16
gpt2-dp2-zero1-bf16|$g --precision mixed-bf16 --optimizer adamw --gpus 2 --zero 1 MPI
gpt2-dp2-zero2-fp32|$g --precision fp32 --optimizer adamw --gpus 2 --zero 2 MPI
gpt2-dp2-zero3-fp32|$g --precision fp32 --optimizer adamw --gpus 2 --zero 3 MPI
EOC
else
cat > "$tmp/configs" <<EOC
gpt2-fp32-adamw|$G --precision fp32 --optimizer adamw
gpt2-mixed-bf16|$G --precision mixed-bf16 --optimizer adamw
gpt2-mixed-fp16|$G --precision mixed-fp16 --optimizer adamw
gpt2-ckpt-full|$G --precision fp32 --optimizer adamw --checkpointing full
gpt2-ckpt-selective|$G --precision fp32 --optimizer adamw --checkpointing selective
gpt2-flash|$G --precision fp32 --optimizer adamw --attention flash
gpt2-chunked-ce|$G --precision fp32 --optimizer adamw --ce chunked --ce-chunk 128
gpt2-adamw-8bit|$G --precision fp32 --optimizer adamw-8bit
gpt2-adamw-8bit-2048|$G --precision fp32 --optimizer adamw-8bit --adam8-block 2048
gpt2-sgd-momentum|$G --precision fp32 --optimizer sgd-momentum
gpt2-accum-4|$G --precision fp32 --optimizer adamw --accum 4
gpt2-lora-all|$G --precision fp32 --optimizer adamw --lora-rank 8 --lora-targets all
gpt2-data-memory|$G --precision fp32 --optimizer adamw --loader memory --dataset-size 2400000B DATA
gpt2-data-stream|$G --precision fp32 --optimizer adamw --loader stream --shuffle-buffer 512 --dataset-size 2400000B DATA
llama-fp32-adamw|$Lm --precision fp32 --optimizer adamw
llama-lora-qv|$Lm --precision fp32 --optimizer adamw --lora-rank 8 --lora-targets q,v
llama-qlora-nf4-dq|$Lm --precision mixed-bf16 --optimizer adamw --lora-rank 8 --quant nf4-dq
llama-qlora-nf4|$Lm --precision mixed-bf16 --optimizer adamw --lora-rank 8 --quant nf4
llama-bf16-8bit-selective-chunked|$Lm --precision mixed-bf16 --optimizer adamw-8bit --checkpointing selective --ce chunked --ce-chunk 256
llama-flash-full-ckpt-fp16|$Lm --precision mixed-fp16 --optimizer adamw --attention flash --checkpointing full
gpt2-dp2-zero0-fp32|$G --precision fp32 --optimizer adamw --gpus 2 --zero 0 MPI
gpt2-dp4-zero1-fp32|$G --precision fp32 --optimizer adamw --gpus 4 --zero 1 MPI
gpt2-dp2-zero1-bf16|$G --precision mixed-bf16 --optimizer adamw --gpus 2 --zero 1 MPI
llama-dp4-zero1-8bit-fp16|$Lm --precision mixed-fp16 --optimizer adamw-8bit --gpus 4 --zero 1 MPI
llama-dp2-zero1-lora|$Lm --precision fp32 --optimizer adamw --lora-rank 8 --lora-targets q,v --gpus 2 --zero 1 MPI
gpt2-dp2-zero2-fp32|$G --precision fp32 --optimizer adamw --gpus 2 --zero 2 MPI
gpt2-dp4-zero2-bf16|$G --precision mixed-bf16 --optimizer adamw --gpus 4 --zero 2 MPI
llama-dp4-zero2-fp16-accum|$Lm --precision mixed-fp16 --optimizer adamw --accum 2 --gpus 4 --zero 2 MPI
gpt2-dp2-zero3-fp32|$G --precision fp32 --optimizer adamw --gpus 2 --zero 3 MPI
gpt2-dp4-zero3-fp32|$G --precision fp32 --optimizer adamw --gpus 4 --zero 3 MPI
gpt2-dp2-zero3-bf16|$G --precision mixed-bf16 --optimizer adamw --gpus 2 --zero 3 MPI
llama-dp4-zero3-ckpt-accum|$Lm --precision fp32 --optimizer adamw --checkpointing full --accum 2 --gpus 4 --zero 3 MPI
EOC
fi

: > "$tmp/rows"
while IFS='|' read -r name flags; do
    data="" launch=""
    case "$flags" in *DATA) flags=${flags% DATA}; data="--data $tmp/data.txt" ;; esac
    case "$flags" in *MPI)
        flags=${flags% MPI}
        [ $have_mpi = yes ] || { echo "$name|SKIP|no mpirun or no MPI build" >> "$tmp/rows"; continue; }
        launch="$mpi_run -np $(echo "$flags" | sed 's/.*--gpus \([0-9]*\).*/\1/')" ;;
    esac
    # shellcheck disable=SC2086
    if ! "$bin/memplan" estimate $flags --framework memtrain --emit memtrain -o "$tmp/$name.cfg" >/dev/null 2>"$tmp/err"; then
        echo "$name|PLANFAIL|$(cat "$tmp/err")" >> "$tmp/rows"; continue
    fi
    # shellcheck disable=SC2086
    if ! $launch "$bin/memtrain" --config "$tmp/$name.cfg" --steps 2 --quiet $data --report "$tmp/$name.json" 2>"$tmp/err" </dev/null; then
        echo "$name|RUNFAIL|$(cat "$tmp/err")" >> "$tmp/rows"; continue
    fi
    echo "$name|$tmp/$name.json" >> "$tmp/rows"
done < "$tmp/configs"

python3 - "$tmp/rows" <<'PY'
import json, sys
comps = ["weights", "gradients", "optimizer", "activations", "overhead"]
rows = [l.rstrip("\n").split("|", 2) for l in open(sys.argv[1]) if l.strip()]
print("%-34s %8s %8s %8s %8s %8s %9s %9s %8s" % ("config", *[c[:8] for c in comps], "pred MiB", "total", "RSS"))
passed = failed = 0
worst = {"comp": 0, "total": 0, "rss": 0}
def each_rank(rows):
    """A multi-rank report gives one row per rank (its `ranks` entries)."""
    for r in rows:
        if r[1] in ("PLANFAIL", "RUNFAIL", "SKIP"):
            yield r[0], r[1], r[2] if len(r) > 2 else ""
            continue
        d = json.load(open(r[1]))
        for e in d.get("ranks", [d]):
            yield (r[0] + (" r%d" % e["rank"] if "rank" in e else "")), "ok", e
skipped = 0
for name, status, d in each_rank(rows):
    if status == "SKIP":
        print("%-34s skipped: %s" % (name, d)); skipped += 1; continue
    if status != "ok":
        print("%-34s %s: %s" % (name, status, d)); failed += 1; continue
    m, p = d["measured"], d["predicted"]
    errs = [100.0 * (m[c] - p[c]) / p[c] if p[c] else (0.0 if m[c] == 0 else 100.0) for c in comps]
    tot = 100.0 * (d["measured_peak_bytes"] - d["predicted_peak_bytes"]) / d["predicted_peak_bytes"]
    pred = d["predicted_peak_bytes"]
    rss_above = d["peak_rss_bytes"] - d["baseline_rss_bytes"]
    rss = 100.0 * (rss_above - pred) / pred
    check_rss = pred >= 256 * 2**20
    ok = all(abs(e) <= 1.0 for e in errs) and abs(tot) <= 2.0 and (not check_rss or abs(rss) <= 5.0)
    worst["comp"] = max(worst["comp"], max(abs(e) for e in errs)); worst["total"] = max(worst["total"], abs(tot))
    if check_rss: worst["rss"] = max(worst["rss"], abs(rss))
    print("%-34s %+7.2f%% %+7.2f%% %+7.2f%% %+7.2f%% %+7.2f%% %9.1f %+8.2f%% %s %s" % (
        name, *errs, pred / 2**20, tot, ("%+7.2f%%" % rss) if check_rss else "    n/a ", "ok" if ok else "FAIL"))
    passed += ok; failed += not ok
print("worst: component %.2f%%, total %.2f%%, RSS %.2f%% (targets 1%%, 2%%, 5%%)" % (worst["comp"], worst["total"], worst["rss"]))
print("validate: %d passed, %d failed%s" % (passed, failed, ", %d skipped" % skipped if skipped else ""))
sys.exit(1 if failed else 0)
PY
