#!/bin/sh
# compare_outputs.sh BASE_BIN NEW_BIN [JOBS]: run a wide corpus of memplan
# commands (estimates over every model profile and many techniques, plans,
# tables, --explain, explicit and MoE shapes, Hugging Face configs) with two
# builds and compare stdout, stderr and the exit status byte for byte.
# Prints "compare: N outputs, D differences" and the first differing commands;
# exits 1 on any difference. MEMPLAN_PROFILES defaults to ./profiles.
base=${1:?usage: compare_outputs.sh BASE_BIN NEW_BIN [JOBS]} new=${2:?usage: compare_outputs.sh BASE_BIN NEW_BIN [JOBS]}
jobs=${3:-2}
export MEMPLAN_PROFILES="${MEMPLAN_PROFILES:-$(pwd)/profiles}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
data=$(cd "$(dirname "$0")/../tests/data" && pwd)

models=$("$base" list models | tr '\n' ' ')
gpus=$("$base" list gpus | tr '\n' ' ')
allm=$("$base" list models | paste -sd, -)
allg=$("$base" list gpus | paste -sd, -)

# One command per line: the arguments after the binary.
{
    # every model, estimated under many techniques (json: every figure)
    for m in $models; do
        for v in "" "--precision fp32" "--precision amp-fp16" "--precision pure-bf16" "--precision mixed-fp16" \
                 "--optimizer adamw-8bit" "--optimizer sgd" "--optimizer adafactor" "--optimizer paged-adamw-8bit" \
                 "--checkpointing none" "--checkpointing selective" "--checkpointing full --batch 8" \
                 "--zero 2 --gpus 4" "--zero 3 --gpus 8" "--zero 3 --gpus 4 --framework deepspeed" \
                 "--zero 3 --gpus 2 --accum 4" "--offload optimizer --zero 2 --gpus 2" "--offload params --zero 3 --gpus 2" \
                 "--lora-rank 16" "--lora-rank 64 --lora-targets all" "--quant nf4 --lora-rank 16" \
                 "--quant int8 --lora-rank 8 --framework hf" "--expandable-segments" \
                 "--expandable-segments --zero 3 --gpus 4" "--optimizer-impl for-loop" "--optimizer-impl fused" \
                 "--optimizer-in-backward --framework torchtune" "--framework hf --batch 2 --seq 1024" \
                 "--framework litgpt" "--framework torchtune --offload-activations" "--framework megatron --tp 2 --pp 2 --gpus 4" \
                 "--accum 8 --batch 2" "--ce chunked" "--dropout --attention eager --seq 512" "--compile"; do
            echo "estimate --model $m --gpu a100-80g $v --format json"
        done
        echo "estimate --model $m --gpu rtx4090 --explain"
        echo "estimate --model $m --gpu h100-80g --quant nf4 --lora-rank 16 --expandable-segments --explain"
    done
    # plans: every model on a spread of GPUs, as JSON and as text
    for m in $models; do
        for g in rtx3060-12g t4 a10g l40s a100-40g h100-80g 12GB 48GB; do
            echo "--model $m --gpu $g --format json"
        done
        echo "--model $m --gpu rtx4090"
        echo "--model $m --gpu a100-80g --gpus 8 --task full"
        echo "--model $m --gpu 24GB --task qlora --expandable-segments --format json"
        echo "--model $m --gpu 80GB --prefer speed --format json"
    done
    for p in 1.1e9 3e9 7e9 13e9 34e9 70e9; do
        for g in 8GB 12GB 16GB 24GB 40GB 80GB; do echo "--params $p --gpu $g --format json"; done
        echo "--params $p --gpu 24GB --explain"
    done
    # explicit shapes, MoE, Hugging Face configs
    for v in "--layers 2 --hidden 1024 --heads 8 --vocab 32000" "--layers 48 --hidden 6144 --heads 48 --vocab 50000" \
             "--layers 24 --hidden 2048 --heads 16 --vocab 32000 --experts 8 --top-k 2" \
             "--layers 16 --hidden 2048 --heads 16 --vocab 32000 --experts 64 --top-k 6 --shared-experts 2 --expert-ffn 1408" \
             "--family gpt2 --layers 12 --hidden 768 --heads 12 --vocab 50257"; do
        echo "estimate --family llama $v --gpu a100-80g --format json"
        echo "estimate --family llama $v --gpu a100-80g --lora-rank 16 --expandable-segments --format json"
        echo "estimate --family llama $v --gpu a100-80g --zero 3 --gpus 8 --format json"
        echo "--family llama $v --gpu 24GB --format json"
    done
    for f in "$data"/*config.json; do
        case "$f" in *broken*|*partial*) continue ;; esac
        echo "estimate --hf-config $f --gpu a100-80g --format json"
        echo "--hf-config $f --gpu 24GB --format json"
    done
    # tables: every model on a few GPUs, a few models on every GPU, the full matrix
    echo "table --models $allm --gpus rtx4090,a100-80g,h100-80g --format csv"
    echo "table --models llama-2-7b,mistral-7b,gpt2 --gpus $allg --format csv"
    echo "table --models $allm --gpus $allg --format csv"
    echo "table --models $allm --gpus $allg --format json"
    echo "table --model llama-2-7b --format json"
    echo "table --model gpt2 --expandable-segments"
} > "$tmp/corpus"

n=$(wc -l < "$tmp/corpus")
export base new tmp
i=0
while IFS= read -r line; do
    i=$((i + 1))
    echo "$i $line"
done < "$tmp/corpus" > "$tmp/numbered"
# The base build's outputs may be kept between runs: COMPARE_CACHE=DIR (made
# for one BASE_BIN and corpus; remove it when either changes).
cache=${COMPARE_CACHE:-}
[ -n "$cache" ] && mkdir -p "$cache"
export cache
# Timings are masked: "search took N ms" (text) and "search_ms" (json).
# shellcheck disable=SC2016
xargs -P "$jobs" -L 1 sh -c '
i=$1; shift
mask() { sed -e "s/^search took [0-9.]* ms/search took (masked) ms/" -e "s/\"search_ms\": *[0-9.e+-]*/\"search_ms\": 0/" "$1"; }
for side in base new; do
    eval "bin=\$$side"
    if [ "$side" = base ] && [ -n "$cache" ] && [ -f "$cache/$i.out" ]; then
        cp "$cache/$i.out" "$tmp/$i.base.out"; cp "$cache/$i.err" "$tmp/$i.base.err"; continue
    fi
    "$bin" "$@" > "$tmp/$i.$side.raw" 2> "$tmp/$i.$side.err"
    echo "rc $?" >> "$tmp/$i.$side.raw"
    mask "$tmp/$i.$side.raw" > "$tmp/$i.$side.out"
    rm -f "$tmp/$i.$side.raw"
    if [ "$side" = base ] && [ -n "$cache" ]; then
        cp "$tmp/$i.base.out" "$cache/$i.out"; cp "$tmp/$i.base.err" "$cache/$i.err"
    fi
done
if cmp -s "$tmp/$i.base.out" "$tmp/$i.new.out" && cmp -s "$tmp/$i.base.err" "$tmp/$i.new.err"; then
    rm -f "$tmp/$i".*
else
    : > "$tmp/diff.$i"
fi' sh < "$tmp/numbered"
d=$(ls "$tmp" | grep -c '^diff\.')
echo "compare: $n outputs, $d differences"
if [ "$d" -gt 0 ]; then
    for f in $(ls "$tmp" | grep '^diff\.' | sed 's/diff\.//' | sort -n | head -10); do
        echo "--- differs: $(sed -n "${f}p" "$tmp/corpus")"
        diff "$tmp/$f.base.out" "$tmp/$f.new.out" | head -8
        diff "$tmp/$f.base.err" "$tmp/$f.new.err" | head -4
    done
    exit 1
fi
exit 0
