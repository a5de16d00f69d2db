#!/bin/sh
# data_parallel.sh BUILD [ROUNDS]: memtrain's data parallel on this machine's cores,
# 2 ranks x 1 BLAS thread (mpirun) against 1 rank x 2 threads, on the same global
# batch (8 sequences of 128 tokens, a 4 x 256 GPT-2, fp32 AdamW), in alternation
# (the machine's speed drifts); the median of each round's ratio. Then the share of
# the gradient all-reduce the backward hides: the 2-rank run with `overlap = 0` (the
# ring all-reduce after the backward) and `overlap = 1` (started during it, ring.c),
# each rank's wait for the sums after its backward (the report's allreduce_wait_s;
# the rank that finishes its backward last waits for the all-reduce alone, so the
# smallest wait is the all-reduce time the backward left exposed).
build=${1:-build} rounds=${2:-3}
mt="$build/bin/memtrain" mp="$build/bin/memplan"
if ! command -v mpirun >/dev/null || ! ldd "$mt" 2>/dev/null | grep -q libmpi; then
    echo "bench: data_parallel skipped (no mpirun, or memtrain without MPI)" >&2
    exit 0
fi
run="mpirun --oversubscribe"
[ "$(id -u)" = 0 ] && run="$run --allow-run-as-root"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$mp" estimate --family gpt2 --layers 4 --hidden 256 --heads 4 --vocab 4096 --max-pos 128 --seq 128 --batch 8 \
    --framework memtrain --emit memtrain -o "$tmp/dp.cfg" >/dev/null || exit 1
tps() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['tokens_per_s'])" "$1"; }
for r in $(seq "$rounds"); do
    OPENBLAS_NUM_THREADS=2 "$mt" --config "$tmp/dp.cfg" --steps 8 --quiet --report "$tmp/one.json" || exit 1
    OPENBLAS_NUM_THREADS=1 $run -np 2 -x OPENBLAS_NUM_THREADS "$mt" --config "$tmp/dp.cfg" --batch 4 --steps 8 \
        --quiet --report "$tmp/two.json" || exit 1
    one=$(tps "$tmp/one.json") two=$(tps "$tmp/two.json")
    echo "$one" >> "$tmp/one"; echo "$two" >> "$tmp/two"
    echo "$two $one" | awk '{print $1 / $2}' >> "$tmp/ratio"
    echo "data_parallel round $r: 1 rank x 2 threads $one, 2 ranks x 1 thread $two tok/s" >&2
done
# exposed_ms REPORT: the smallest rank's wait for the all-reduce, per step, in ms
exposed_ms() {
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(1e3 * min(e['allreduce_wait_s'] for e in r['ranks']) / r['steps'])" "$1"
}
for r in $(seq "$rounds"); do
    for ov in 0 1; do
        OPENBLAS_NUM_THREADS=1 $run -np 2 -x OPENBLAS_NUM_THREADS "$mt" --config "$tmp/dp.cfg" --batch 4 --steps 8 \
            --overlap $ov --quiet --report "$tmp/ov$ov.json" || exit 1
        exposed_ms "$tmp/ov$ov.json" >> "$tmp/exposed$ov"
        tps "$tmp/ov$ov.json" >> "$tmp/tps$ov"
    done
    echo "data_parallel round $r: all-reduce exposed $(tail -1 "$tmp/exposed0") ms/step after the backward," \
         "$(tail -1 "$tmp/exposed1") ms/step overlapped" >&2
done
median() { sort -n "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "bench: data_parallel_1x2_tokens_per_s $(median "$tmp/one") tok/s"
echo "bench: data_parallel_2x1_tokens_per_s $(median "$tmp/two") tok/s"
echo "bench: data_parallel_2x1_vs_1x2 $(median "$tmp/ratio") x"
e0=$(median "$tmp/exposed0") e1=$(median "$tmp/exposed1")
echo "bench: data_parallel_allreduce_exposed_after_backward_ms $e0 ms/step ($(median "$tmp/tps0") tok/s)"
echo "bench: data_parallel_allreduce_exposed_overlapped_ms $e1 ms/step ($(median "$tmp/tps1") tok/s)"
echo "bench: data_parallel_allreduce_hidden_share $(echo "$e0 $e1" | awk '{printf "%.0f", ($1 > 0 ? 100 * (1 - $2 / $1) : 0)}') %"
