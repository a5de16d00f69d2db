#!/bin/sh
# memtrain data parallel over MPI (OpenMPI), on 2 and 4 ranks: the same model as one
# process with the same global batch (losses within 1e-5 relative, fp32), ZeRO-0,
# ZeRO-1, ZeRO-2 and ZeRO-3, both loaders; every rank's measured memory against the planner's per-rank
# prediction (components within 1%, total within 0.5%); the report's `ranks` array;
# one metrics file per rank; bad input refused with exit 2.
# usage: tests/test_memtrain_mpi.sh [BINDIR]  (skipped when mpirun or an MPI build is missing)
bin=${1:-build/bin}
. tests/lib.sh
mt="$bin/memtrain" mp="$bin/memplan"
if ! command -v mpirun >/dev/null || ! ldd "$mt" 2>/dev/null | grep -q libmpi; then
    echo "skip memtrain over MPI: no mpirun, or memtrain built without MPI"
    exit 0
fi
run="mpirun --oversubscribe"
# The sanitizer build: OpenMPI keeps allocations until exit, in components it has already
# unloaded (no symbols to suppress by), so leaks are looked for once, below, in memtrain's own
# frames; ASan's and UBSan's other checks stay on everywhere.
sanitized=no
if ldd "$mt" | grep -q libasan; then
    sanitized=yes
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
[ "$(id -u)" = 0 ] && run="$run --allow-run-as-root"

# losses_equal A.json B.json: the same number of losses, each within 1e-5 relative
losses_equal() {
    python3 - "$1" "$2" <<'EOP'
import json, sys
a = json.load(open(sys.argv[1]))["losses"]; b = json.load(open(sys.argv[2]))["losses"]
assert len(a) == len(b) and len(a) > 0, (len(a), len(b))
worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
assert worst <= 1e-5, worst
EOP
}

"$mp" estimate --family gpt2 --layers 2 --hidden 64 --heads 4 --vocab 256 --max-pos 64 --seq 32 --batch 2 \
    --framework memtrain --emit memtrain -o "$tmp/small.cfg" >/dev/null
for np in 2 4; do
    for loader in memory stream; do
        "$mt" --config "$tmp/small.cfg" --batch $((2 * np)) --accum 2 --loader $loader --steps 6 --quiet \
            --report "$tmp/one.json" || bad "one process, batch $((2 * np))"
        for zero in 0 1 2 3; do
            what="$np ranks, ZeRO-$zero, $loader loader"
            expect 0 "$what runs" -- $run -np $np "$mt" --config "$tmp/small.cfg" --accum 2 --loader $loader \
                --zero $zero --steps 6 --quiet --report "$tmp/dp.json"
            if losses_equal "$tmp/one.json" "$tmp/dp.json" 2>"$tmp/err"; then
                ok "$what: losses equal one process with the global batch (1e-5)"
            else bad "$what: losses differ: $(tail -1 "$tmp/err")"; fi
        done
    done
done

# llama (untied head, no learned positions, grouped-query attention)
for extra in "--checkpointing full" "--attention flash --zero 1 --accum 2" "--zero 2 --accum 2" \
    "--zero 3 --accum 2 --checkpointing full"; do
    "$mt" --config "$tmp/small.cfg" --family llama --kv-heads 2 --tied 0 $extra --zero 0 --batch 4 --steps 4 \
        --quiet --report "$tmp/one.json" || bad "llama, one process"
    expect 0 "2 ranks, llama $extra runs" -- $run -np 2 "$mt" --config "$tmp/small.cfg" --family llama --kv-heads 2 \
        --tied 0 $extra --steps 4 --quiet --report "$tmp/dp.json"
    if losses_equal "$tmp/one.json" "$tmp/dp.json" 2>"$tmp/err"; then ok "2 ranks, llama $extra: losses equal one process"
    else bad "2 ranks, llama $extra: losses differ: $(tail -1 "$tmp/err")"; fi
done

# every rank's memory against the prediction, and the report's ranks
"$mp" estimate --family gpt2 --layers 2 --hidden 128 --heads 4 --vocab 2048 --max-pos 64 --seq 64 --batch 2 \
    --framework memtrain --emit memtrain -o "$tmp/mid.cfg" >/dev/null
for case in "2 1 mixed-bf16 adamw" "4 0 fp32 adamw" "4 1 fp32 adamw" "2 1 mixed-fp16 adamw-8bit" \
    "2 2 fp32 adamw" "4 2 mixed-bf16 adamw" "2 2 mixed-fp16 adamw-8bit" "2 3 fp32 adamw" "4 3 fp32 adamw" \
    "4 3 fp32 sgd-momentum" "2 3 mixed-bf16 adamw" "4 3 mixed-fp16 adamw-8bit"; do
    set -- $case
    what="$1 ranks, ZeRO-$2, $3, $4"
    expect 0 "$what runs" -- $run -np "$1" "$mt" --config "$tmp/mid.cfg" --zero "$2" --precision "$3" \
        --optimizer "$4" --steps 3 --quiet --report "$tmp/r.json" --metrics "$tmp/m.csv"
    if python3 - "$tmp/r.json" "$1" "$3" "$2" <<'EOP' 2>"$tmp/err"
import json, sys
r = json.load(open(sys.argv[1])); n = int(sys.argv[2]); mixed = sys.argv[3].startswith("mixed")
zero2 = sys.argv[4] in ("2", "3")
ranks = r["ranks"]
assert [e["rank"] for e in ranks] == list(range(n)), "ranks"
for e in ranks:
    missing = [k for k in r if k != "ranks" and k not in e]
    assert not missing, missing
    for k, want in e["predicted"].items():
        got = e["measured"][k]
        assert abs(got - want) <= 0.01 * want, (e["rank"], k, got, want)
    assert abs(e["measured_peak_bytes"] - e["predicted_peak_bytes"]) <= 0.005 * e["predicted_peak_bytes"], e["rank"]
    # 16-bit gradients go through an fp32 bucket of min(n, 2^20) elements: here the
    # master copy's size (n < 2^20); fp32 gradients are all-reduced in place. ZeRO-2 and 3
    # reduce-scatter at most 2^18 elements at a time (fp32 in place), through 2^18 here.
    # ZeRO-0 and 1 sum by a ring whose exchanges receive ceil(min(n, 2^20)/ranks) floats.
    tags = e["measured_tags"]
    want = (4 << 18 if zero2 else tags["master"]) if mixed else 0
    if not zero2:
        grads = tags["gradients"] // (2 if mixed else 4)
        want += 4 * -(-min(grads, 1 << 20) // n)
    assert tags["comm"] == want, ("comm", tags["comm"], want)
EOP
    then ok "$what: every rank within 1% per component, 0.5% total"; else bad "$what: $(tail -1 "$tmp/err")"; fi
    k=0 files=0
    while [ $k -lt "$1" ]; do
        [ "$(grep -cv '^#' "$tmp/m.rank$k.csv" 2>/dev/null)" = 4 ] &&
            grep -q "^# settings: .* zero=$2 rank=$k ranks=$1\$" "$tmp/m.rank$k.csv" && files=$((files + 1))
        k=$((k + 1))
    done
    if [ $files = "$1" ]; then ok "$what: one metrics file per rank, saying which"; else bad "$what: $files metrics files of $1"; fi
    last=$(($1 - 1))
    if "$bin/memtop" --once "$tmp/m.rank$last.csv" 2>/dev/null | grep -q "\"rank\": \"$last\""; then
        ok "$what: memtop reads rank $last's file"; else bad "$what: memtop on rank $last's file"; fi
    rm -f "$tmp"/m.rank*.csv
done

# ZeRO-1 shards the optimizer state: each of 4 ranks holds a quarter of one process's
"$mt" --config "$tmp/mid.cfg" --steps 1 --quiet --report "$tmp/one.json"
$run -np 4 "$mt" --config "$tmp/mid.cfg" --zero 1 --steps 1 --quiet --report "$tmp/z1.json"
if python3 -c "
import json
a = json.load(open('$tmp/one.json'))['measured_tags']['optimizer']
for e in json.load(open('$tmp/z1.json'))['ranks']:
    assert abs(e['measured_tags']['optimizer'] - a / 4) <= 8, (e['rank'], e['measured_tags']['optimizer'], a)
"; then ok "ZeRO-1 on 4 ranks: each holds a quarter of the optimizer state"; else bad "ZeRO-1 optimizer shard"; fi

# ZeRO-2 shards the gradients: each of 4 ranks holds one layer's (n_layer = 12 C^2 + 13 C), the
# embeddings' and final norm's (n_outer = V C + 64 C + 2 C) and a quarter of all of them in fp32
$run -np 4 "$mt" --config "$tmp/mid.cfg" --zero 2 --steps 1 --quiet --report "$tmp/z2.json"
if python3 -c "
import json
C, V, L = 128, 2048, 2
n_layer, n_outer = 12 * C * C + 13 * C, V * C + 64 * C + 2 * C
n = L * n_layer + n_outer
z1 = json.load(open('$tmp/z1.json'))['ranks']; z2 = json.load(open('$tmp/z2.json'))['ranks']
for a, b in zip(z1, z2):
    assert a['measured_tags']['gradients'] == 4 * n, (a['rank'], a['measured_tags']['gradients'], 4 * n)
    assert b['measured_tags']['gradients'] == 4 * (n_layer + n_outer) + 4 * n // 4, (b['rank'], b['measured_tags']['gradients'])
    assert b['measured_tags']['gradients'] < a['measured_tags']['gradients']
"; then ok "ZeRO-2 on 4 ranks: each holds one layer's gradients, the others' and a quarter of all in fp32"
else bad "ZeRO-2 gradient shard"; fi

# ZeRO-3 shards the parameters: with 8 layers each rank holds its shard of all of them, two
# layer slots (the layer in use and the one gathered ahead, n_layer each) and the embeddings'
# and final norm's (n_outer), against every parameter under ZeRO-2; the gradients as ZeRO-2
"$mp" estimate --family gpt2 --layers 8 --hidden 128 --heads 4 --vocab 256 --max-pos 64 --seq 64 --batch 2 \
    --framework memtrain --emit memtrain -o "$tmp/deep.cfg" >/dev/null
for np in 2 4; do
    $run -np $np "$mt" --config "$tmp/deep.cfg" --zero 2 --steps 1 --quiet --report "$tmp/d2.json"
    $run -np $np "$mt" --config "$tmp/deep.cfg" --zero 3 --steps 1 --quiet --report "$tmp/d3.json"
    if python3 -c "
import json
C, V, L, np = 128, 256, 8, $np
n_layer, n_outer = 12 * C * C + 13 * C, V * C + 64 * C + 2 * C
n = L * n_layer + n_outer
z2 = json.load(open('$tmp/d2.json'))['ranks']; z3 = json.load(open('$tmp/d3.json'))['ranks']
for a, b in zip(z2, z3):
    assert a['measured_tags']['weights'] == 4 * n, (a['rank'], a['measured_tags']['weights'], 4 * n)
    want = 4 * (-(-n // np) + 2 * n_layer + n_outer)
    assert b['measured_tags']['weights'] == want, (b['rank'], b['measured_tags']['weights'], want)
    assert b['measured_tags']['gradients'] == a['measured_tags']['gradients']
    for k, w in b['predicted'].items():
        assert abs(b['measured'][k] - w) <= 0.01 * w, (b['rank'], k)
"; then ok "ZeRO-3 on $np ranks: each holds its shard of the parameters, two layer slots and the embeddings'"
    else bad "ZeRO-3 parameter shard on $np ranks"; fi
done

# the plan memplan writes for N GPUs and a ZeRO stage runs as it is under mpirun
expect 0 "memplan --gpus 2 --zero 1 --emit memtrain" -- "$mp" estimate --family gpt2 --layers 2 --hidden 128 \
    --heads 4 --vocab 2048 --max-pos 64 --seq 64 --batch 2 --framework memtrain --gpus 2 --zero 1 \
    --emit memtrain -o "$tmp/z1.cfg"
if grep -q '^zero = 1$' "$tmp/z1.cfg" && grep -q 'mpirun -np 2' "$tmp/z1.cfg"; then ok "the plan says zero = 1 and how to launch it"
else bad "the emitted plan lacks zero or the launch line"; fi
expect 0 "the emitted ZeRO-1 plan runs on 2 ranks" -- $run -np 2 "$mt" --config "$tmp/z1.cfg" --steps 2 --quiet \
    --report "$tmp/z1e.json"
if python3 -c "
import json
for e in json.load(open('$tmp/z1e.json'))['ranks']:
    assert abs(e['measured']['optimizer'] - e['predicted']['optimizer']) <= 0.01 * e['predicted']['optimizer']
"; then ok "its optimizer shard is what memplan predicted, on each rank"; else bad "emitted plan's shard"; fi
expect 0 "memplan --gpus 2 --zero 2 --emit memtrain" -- "$mp" estimate --family gpt2 --layers 2 --hidden 128 \
    --heads 4 --vocab 2048 --max-pos 64 --seq 64 --batch 2 --framework memtrain --gpus 2 --zero 2 \
    --emit memtrain -o "$tmp/z2.cfg"
if grep -q '^zero = 2$' "$tmp/z2.cfg"; then ok "the plan says zero = 2"; else bad "the emitted plan lacks zero = 2"; fi
expect 0 "memplan --gpus 2 --zero 3 --emit memtrain" -- "$mp" estimate --family gpt2 --layers 2 --hidden 128 \
    --heads 4 --vocab 2048 --max-pos 64 --seq 64 --batch 2 --framework memtrain --gpus 2 --zero 3 \
    --emit memtrain -o "$tmp/z3.cfg"
if grep -q '^zero = 3$' "$tmp/z3.cfg"; then ok "the plan says zero = 3"; else bad "the emitted plan lacks zero = 3"; fi
expect 0 "the emitted ZeRO-3 plan runs on 2 ranks" -- $run -np 2 "$mt" --config "$tmp/z3.cfg" --steps 2 --quiet \
    --report "$tmp/z3e.json"
if python3 -c "
import json
for e in json.load(open('$tmp/z3e.json'))['ranks']:
    for k in ('weights', 'gradients', 'optimizer'):
        assert abs(e['measured'][k] - e['predicted'][k]) <= 0.01 * e['predicted'][k], (k, e)
"; then ok "its parameter, gradient and optimizer shards are what memplan predicted, on each rank"; else bad "emitted ZeRO-3 plan"; fi
# mixed precision: ZeRO-3 steps the same master shards as ZeRO-2 and gathers the same 16-bit
# weights, so its losses are ZeRO-2's exactly (fp16: with loss scaling)
for case in "2 mixed-bf16" "4 mixed-bf16" "2 mixed-fp16" "4 mixed-fp16"; do
    set -- $case
    $run -np $1 "$mt" --config "$tmp/small.cfg" --precision $2 --accum 2 --zero 2 --steps 6 --quiet \
        --report "$tmp/m2.json" || bad "$1 ranks, ZeRO-2, $2"
    $run -np $1 "$mt" --config "$tmp/small.cfg" --precision $2 --accum 2 --zero 3 --steps 6 --quiet \
        --report "$tmp/m3.json" || bad "$1 ranks, ZeRO-3, $2"
    if python3 -c "
import json
a = json.load(open('$tmp/m2.json'))['losses']; b = json.load(open('$tmp/m3.json'))['losses']
assert len(a) == 6 and a == b, (a, b)
"; then ok "$1 ranks, $2: ZeRO-3's losses equal ZeRO-2's exactly"; else bad "$1 ranks, $2: ZeRO-3's losses differ from ZeRO-2's"; fi
done
expect 0 "the emitted ZeRO-2 plan runs on 2 ranks" -- $run -np 2 "$mt" --config "$tmp/z2.cfg" --steps 2 --quiet \
    --report "$tmp/z2e.json"
if python3 -c "
import json
for e in json.load(open('$tmp/z2e.json'))['ranks']:
    for k in ('gradients', 'optimizer'):
        assert abs(e['measured'][k] - e['predicted'][k]) <= 0.01 * e['predicted'][k], (k, e)
"; then ok "its gradient and optimizer shards are what memplan predicted, on each rank"; else bad "emitted ZeRO-2 plan"; fi

if [ $sanitized = yes ]; then
    ASAN_OPTIONS=detect_leaks=1 $run -np 2 "$mt" --config "$tmp/small.cfg" --zero 1 --steps 2 --quiet \
        --precision mixed-bf16 >/dev/null 2>"$tmp/err"
    if grep -qE "(trainer|planner)/[a-z_]+\.c" "$tmp/err"; then bad "a leak from memtrain's code"; grep -E "(trainer|planner)/" "$tmp/err" | head -5
    else ok "no leak with a frame in memtrain's code (2 ranks, ZeRO-1, bf16)"; fi
fi

# bad input: one line from memtrain, exit 2
expect 2 "zero = 3 with LoRA is refused" -- $run -np 2 "$mt" --config "$tmp/small.cfg" --zero 3 --lora-rank 4 --steps 1
if [ "$(grep -c '^memtrain: error' "$tmp/err")" = 1 ]; then ok "one error line, from rank 0"; else bad "error lines"; fi
has err "zero = 3 with LoRA or QLoRA is not implemented in memtrain"
expect 2 "zero = 3 with QLoRA is refused" -- $run -np 2 "$mt" --config "$tmp/small.cfg" --zero 3 --lora-rank 4 \
    --quant nf4 --precision mixed-bf16 --steps 1
if [ "$(grep -c '^memtrain: error' "$tmp/err")" = 1 ]; then ok "one error line, from rank 0"; else bad "error lines"; fi
has err "zero = 3 with LoRA or QLoRA is not implemented in memtrain"
expect 2 "zero = 2 with LoRA is refused" -- $run -np 2 "$mt" --config "$tmp/small.cfg" --zero 2 --lora-rank 4 --steps 1
if [ "$(grep -c '^memtrain: error' "$tmp/err")" = 1 ]; then ok "one error line, from rank 0"; else bad "error lines"; fi
has err "zero = 2 with LoRA is not implemented in memtrain"

# a plan for 2 ranks launched on another count would change its global batch
"$mp" estimate --family gpt2 --layers 2 --hidden 64 --heads 4 --vocab 256 --max-pos 64 --seq 32 --batch 2 --gpus 2 \
    --zero 1 --global-batch 8 --framework memtrain --emit memtrain -o "$tmp/two.cfg" >/dev/null
expect 2 "a 2-rank plan launched on 4 ranks is refused" -- $run -np 4 "$mt" --config "$tmp/two.cfg" --steps 1 --quiet
has err "planned for ranks = '2' (global batch 2 x 2 x 2), launched as 4: use mpirun -np 2"
if [ "$(grep -c '^memtrain: error' "$tmp/err")" = 1 ]; then ok "one error line, from rank 0"; else bad "error lines"; fi
expect 2 "and on one process" -- "$mt" --config "$tmp/two.cfg" --steps 1 --quiet
has err "launched as 1"

# checkpoints of a data-parallel run: one shard per rank and a manifest; resume on the same
# rank count continues bit-identically; a damaged, missing or foreign checkpoint is refused
for zero in 0 1 2 3; do
    $run -np 2 "$mt" --config "$tmp/small.cfg" --zero $zero --steps 6 --quiet --report "$tmp/full.json" \
        || bad "ZeRO-$zero: 6 steps"
    expect 0 "ZeRO-$zero: 3 steps with a checkpoint" -- $run -np 2 "$mt" --config "$tmp/small.cfg" --zero $zero \
        --steps 3 --quiet --save "$tmp/ck$zero" --report "$tmp/a.json"
    expect 0 "ZeRO-$zero: resumed to 6" -- $run -np 2 "$mt" --config "$tmp/small.cfg" --zero $zero --steps 6 \
        --quiet --resume "$tmp/ck$zero" --report "$tmp/b.json"
    if python3 -c "
import json
full = json.load(open('$tmp/full.json'))['losses']
a = json.load(open('$tmp/a.json'))['losses']; b = json.load(open('$tmp/b.json'))['losses']
assert a + b == full, (a, b, full)
m = json.load(open('$tmp/ck$zero/manifest.json'))
assert m['ranks'] == 2 and m['step'] == 3 and [s['file'] for s in m['shards']] == ['step00000003.rank0-of-2.bin', 'step00000003.rank1-of-2.bin'], m
"; then ok "ZeRO-$zero, 2 ranks: resumed losses equal the uninterrupted run exactly; the manifest names both shards"
    else bad "ZeRO-$zero: resume of a 2-rank run is not bit-identical"; fi
done
# ZeRO-3 in fp16: each rank's state holds its 16-bit and master shards and the loss scaler
$run -np 2 "$mt" --config "$tmp/small.cfg" --zero 3 --precision mixed-fp16 --steps 6 --quiet --report "$tmp/full.json" \
    || bad "ZeRO-3 fp16: 6 steps"
expect 0 "ZeRO-3 fp16: 3 steps with a checkpoint" -- $run -np 2 "$mt" --config "$tmp/small.cfg" --zero 3 \
    --precision mixed-fp16 --steps 3 --quiet --save "$tmp/ck3h" --report "$tmp/a.json"
expect 0 "ZeRO-3 fp16: resumed to 6" -- $run -np 2 "$mt" --config "$tmp/small.cfg" --zero 3 --precision mixed-fp16 \
    --steps 6 --quiet --resume "$tmp/ck3h" --report "$tmp/b.json"
if python3 -c "
import json
full = json.load(open('$tmp/full.json'))['losses']
a = json.load(open('$tmp/a.json'))['losses']; b = json.load(open('$tmp/b.json'))['losses']
assert a + b == full, (a, b, full)
"; then ok "ZeRO-3 fp16, 2 ranks: resumed losses equal the uninterrupted run exactly"
else bad "ZeRO-3 fp16: resume is not bit-identical"; fi
expect 0 "--save-every keeps the newest checkpoint's shards only" -- $run -np 2 "$mt" --config "$tmp/small.cfg" \
    --steps 4 --save-every 2 --quiet --save "$tmp/cke"
if [ "$(ls "$tmp/cke" | grep -c '\.bin$')" = 2 ] && ls "$tmp/cke" | grep -q step00000004.rank1-of-2.bin; then
    ok "step 2's shards removed once step 4's manifest landed"; else bad "stale shards: $(ls "$tmp/cke" | tr '\n' ' ')"; fi
expect 2 "another rank count is refused" -- $run -np 4 "$mt" --config "$tmp/small.cfg" --zero 1 --steps 6 --quiet \
    --resume "$tmp/ck1"
has err "was written by 2 ranks; this run has 4"
if [ "$(grep -c '^memtrain: error' "$tmp/err")" = 1 ]; then ok "one error line, from rank 0"; else bad "error lines"; fi
expect 2 "one process cannot resume a 2-rank checkpoint" -- "$mt" --config "$tmp/small.cfg" --zero 0 --steps 6 \
    --quiet --resume "$tmp/ck0"
has err "was written by 2 ranks; this run has 1"
cp -r "$tmp/ck1" "$tmp/bad"
printf 'X' | dd of="$tmp/bad/step00000003.rank1-of-2.bin" bs=1 seek=100 conv=notrunc 2>/dev/null
expect 2 "a corrupt shard is refused" -- $run -np 2 "$mt" --config "$tmp/small.cfg" --zero 1 --steps 6 --quiet \
    --resume "$tmp/bad"
has err "step00000003.rank1-of-2.bin' fails its checksum"
rm "$tmp/bad/step00000003.rank1-of-2.bin"
expect 2 "a missing shard is refused" -- $run -np 2 "$mt" --config "$tmp/small.cfg" --zero 1 --steps 6 --quiet \
    --resume "$tmp/bad"
has err "lacks rank 1's shard 'step00000003.rank1-of-2.bin'"
expect 2 "another zero stage is refused" -- $run -np 2 "$mt" --config "$tmp/small.cfg" --zero 0 --steps 6 --quiet \
    --resume "$tmp/ck1"
has err "different configuration (another zero stage)"

# SIGKILL of one rank: mpirun stops the job and says which rank died; the newest
# checkpoint on disk resumes, losing only the steps after it
$run -np 2 "$mt" --config "$tmp/small.cfg" --steps 100000 --save-every 2 --quiet --save "$tmp/ckk" \
    >"$tmp/kill.out" 2>&1 &
job=$!
i=0; while [ ! -f "$tmp/ckk/manifest.json" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
victim=$(pgrep -f "memtrain --config $tmp/small.cfg --steps 100000" | while read p; do
    [ "$(ps -o comm= -p "$p")" = memtrain ] && echo "$p"; done | tail -1)
[ -n "$victim" ] && kill -9 "$victim"
wait $job; status=$?
if [ $status -ne 0 ] && grep -qiE "signal 9|killed" "$tmp/kill.out"; then
    ok "a killed rank stops the job (exit $status) and mpirun names the signal"
else bad "killed rank: exit $status, $(tail -2 "$tmp/kill.out")"; fi
step=$(python3 -c "import json; print(json.load(open('$tmp/ckk/manifest.json'))['step'])")
expect 0 "the newest checkpoint resumes after the kill" -- $run -np 2 "$mt" --config "$tmp/small.cfg" \
    --steps $((step + 2)) --quiet --resume "$tmp/ckk" --report "$tmp/k.json"
if python3 -c "
import json; d = json.load(open('$tmp/k.json')); assert d['steps'] == $step + 2 and len(d['losses']) == 2, d['steps']
"; then ok "resumed at step $step: only the steps after the last checkpoint were lost"; else bad "resume after kill"; fi

# SIGTERM to one rank only, mid-step: the ranks agree on the stop between layers (a
# collective every rank asks at the same points), all stop at the same layer, save the last
# completed step's shards, and end with 143; resumed, the run goes on from that step
"$mp" estimate --family gpt2 --layers 4 --hidden 256 --heads 4 --vocab 256 --max-pos 256 --seq 256 --batch 4 \
    --gpus 2 --framework memtrain --emit memtrain -o "$tmp/stop.cfg" >/dev/null
for zero in 0 3; do
    rm -rf "$tmp/cks" "$tmp/stop.rank"*.csv && mkdir "$tmp/cks"
    $run -np 2 "$mt" --config "$tmp/stop.cfg" --zero $zero --steps 100000 --cpu-gflops 1e6 --quiet --save "$tmp/cks" \
        --metrics "$tmp/stop.csv" --report "$tmp/stop.json" >"$tmp/stop.out" 2>"$tmp/stop.err" &
    job=$!
    i=0
    while :; do
        n=$(grep -c '^"[0-9]' "$tmp/stop.rank1.csv" 2>/dev/null)
        [ "${n:-0}" -lt 2 ] && [ $i -lt 1200 ] || break
        sleep 0.1; i=$((i + 1))
    done
    sleep 0.3
    victim=$(pgrep -f "memtrain --config $tmp/stop.cfg --zero $zero" | while read p; do
        [ "$(ps -o comm= -p "$p")" = memtrain ] && echo "$p"; done | tail -1)
    t0=$(date +%s.%N)
    [ -n "$victim" ] && kill -TERM "$victim"
    wait $job; status=$?
    latency=$(echo "$(date +%s.%N) - $t0" | bc)
    echo "     ZeRO-$zero, SIGTERM to one of 2 ranks: exit $status after $latency s (checkpoint included)"
    if [ $status -eq 143 ]; then ok "ZeRO-$zero: SIGTERM to one rank: the job ends with 143"
    else bad "ZeRO-$zero: SIGTERM to one rank: exit $status: $(tail -3 "$tmp/stop.err")"; fi
    if [ "$(grep -c '^memtrain: SIGTERM: stopped' "$tmp/stop.err")" = 1 ]; then ok "ZeRO-$zero: one line says so (rank 0)"
    else bad "ZeRO-$zero: stderr: $(cat "$tmp/stop.err")"; fi
    k=$(python3 -c "import json; print(json.load(open('$tmp/cks/manifest.json'))['step'])" 2>/dev/null)
    r0=$(grep -c '^"[0-9]' "$tmp/stop.rank0.csv") r1=$(grep -c '^"[0-9]' "$tmp/stop.rank1.csv")
    if [ -n "$k" ] && [ "$k" = "$r0" ] && [ "$k" = "$r1" ]; then
        ok "ZeRO-$zero: both ranks stopped after the same step ($k), its shards saved"
    else bad "ZeRO-$zero: checkpoint step '$k', rank 0 took $r0 steps, rank 1 $r1"; fi
    if [ -n "$k" ]; then
        expect 0 "ZeRO-$zero: the stopped run resumes" -- $run -np 2 "$mt" --config "$tmp/stop.cfg" --zero $zero \
            --steps $((k + 1)) --quiet --resume "$tmp/cks" --report "$tmp/sr.json"
    fi
done

echo "memtrain over MPI: $pass passed, $fail failed"
[ $fail -eq 0 ]
