#!/bin/sh
# make bench: every benchmark, one "bench: NAME VALUE UNIT" line per figure.
build=${1:-build}
export MEMPLAN_PROFILES="$(pwd)/profiles"
"$build/bench/bench_planner" || exit 1
# Whole-command wall time of the newcomer's query, median of 21 runs.
for i in $(seq 21); do
    s=$(date +%s%N); "$build/bin/memplan" --params 7e9 --gpu 12GB >/dev/null; e=$(date +%s%N)
    echo $(( (e - s) / 1000 ))
done | sort -n | sed -n 11p | awk '{printf "bench: memplan_7b_12gb_wall_ms %.2f ms\n", $1 / 1000}'
for b in "$build"/bench/bench_*; do
    case "$b" in *bench_planner) ;; *) [ -x "$b" ] && "$b" ;; esac
done
# memplan table: the matrix of the first 20 model and 20 GPU profiles, median of 5 runs.
models=$("$build/bin/memplan" list models | head -20 | paste -sd, -)
gpus=$("$build/bin/memplan" list gpus | head -20 | paste -sd, -)
for i in 1 2 3 4 5; do
    s=$(date +%s%N); "$build/bin/memplan" table --models "$models" --gpus "$gpus" >/dev/null; e=$(date +%s%N)
    echo $(( (e - s) / 1000 ))
done | sort -n | sed -n 3p | awk '{printf "bench: table_20x20_ms %.1f ms\n", $1 / 1000}'
# memplan table: every model profile on every GPU profile, median of 3 runs.
models=$("$build/bin/memplan" list models | paste -sd, -)
gpus=$("$build/bin/memplan" list gpus | paste -sd, -)
for i in 1 2 3; do
    s=$(date +%s%N); "$build/bin/memplan" table --models "$models" --gpus "$gpus" >/dev/null; e=$(date +%s%N)
    echo $(( (e - s) / 1000 ))
done | sort -n | sed -n 2p | awk '{printf "bench: table_all_models_x_gpus_ms %.1f ms\n", $1 / 1000}'
bench/side_by_side.sh "$build"
bench/data_parallel.sh "$build"
exit 0
