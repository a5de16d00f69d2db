#!/bin/sh
# data_parallel.sh BUILD [ROUNDS]: memtrain's data parallel on this machine's cores,
# 2 ranks x 1 BLAS thread (mpirun) against 1 rank x 2 threads, on the same global
# batch (8 sequences of 128 tokens, a 4 x 256 GPT-2, fp32 AdamW), in alternation
# (the machine's speed drifts); the median of each round's ratio. The gradients
# are all-reduced after the backward, not during it: no all-reduce time is hidden.
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
median() { sort -n "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "bench: data_parallel_1x2_tokens_per_s $(median "$tmp/one") tok/s"
echo "bench: data_parallel_2x1_tokens_per_s $(median "$tmp/two") tok/s"
echo "bench: data_parallel_2x1_vs_1x2 $(median "$tmp/ratio") x"
echo "bench: data_parallel_allreduce_hidden_share 0 % (all-reduce after the backward)"
