#!/bin/sh
# side_by_side.sh BUILD [ROUNDS]: memtrain and PyTorch (python3-torch, 2 threads) on
# GPT-2 124M, B=4, T=64, fp32 AdamW, in alternation (the machine's speed drifts).
# PyTorch runs twice per round: as the issue measured it (OMP_WAIT_POLICY=PASSIVE)
# and with glibc's malloc kept from returning big blocks to the kernel (its best
# here: without it every step page-faults its activations in again).
# Medians over the rounds, and the median of each round's own ratio (the machine's
# speed drifts by tens of percent within minutes; a round's two runs are seconds apart,
# so its ratio is the steadier figure); "bench: NAME VALUE UNIT" lines.
build=${1:-build} rounds=${2:-5}
py=${PYTHON_TORCH:-/usr/bin/python3}
if ! "$py" -c 'import torch' 2>/dev/null; then
    echo "bench: side_by_side skipped (no python3-torch)" >&2
    exit 0
fi
here=$(dirname "$0")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
big=17179869184
for r in $(seq "$rounds"); do
    m=$("$build/bench/bench_trainer" gpt2_124m_b4_t64 | awk '/tokens_per_s/ {print $3}')
    p=$(OMP_WAIT_POLICY=PASSIVE "$py" "$here/pytorch_gpt2.py" --seq 64 --steps 3 | awk '{print $3}')
    b=$(OMP_WAIT_POLICY=PASSIVE MALLOC_MMAP_THRESHOLD_=$big MALLOC_TRIM_THRESHOLD_=$big MALLOC_TOP_PAD_=1073741824 \
        "$py" "$here/pytorch_gpt2.py" --seq 64 --steps 3 | awk '{print $3}')
    echo "$m" >> "$tmp/memtrain"
    echo "$p" >> "$tmp/pytorch"
    echo "$b" >> "$tmp/pytorch_best"
    echo "$m $p" | awk '{print $1 / $2}' >> "$tmp/ratio"
    echo "$m $b" | awk '{print $1 / $2}' >> "$tmp/ratio_best"
    echo "side_by_side round $r: memtrain $m, pytorch $p, pytorch tuned malloc $b tok/s" >&2
done
median() { sort -n "$1" | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
m=$(median "$tmp/memtrain") p=$(median "$tmp/pytorch") b=$(median "$tmp/pytorch_best")
echo "bench: side_by_side_t64_memtrain_tokens_per_s $m tok/s"
echo "bench: side_by_side_t64_pytorch_tokens_per_s $p tok/s"
echo "bench: side_by_side_t64_pytorch_tuned_malloc_tokens_per_s $b tok/s"
median "$tmp/ratio" | awk '{printf "bench: side_by_side_t64_speedup_vs_pytorch %.2f x\n", $1}'
median "$tmp/ratio_best" | awk '{printf "bench: side_by_side_t64_speedup_vs_pytorch_tuned %.2f x\n", $1}'
sort -n "$tmp/ratio_best" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "bench: side_by_side_t64_speedup_vs_pytorch_tuned_range %.2f-%.2f x\n", lo, hi}'
