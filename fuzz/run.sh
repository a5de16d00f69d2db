#!/bin/sh
# fuzz/run.sh BUILD SECONDS [NAME...] — run the libFuzzer harnesses BUILD/bin/fuzz_NAME
# (default: every fuzz/fuzz_*.c) for SECONDS each, on a scratch copy of the seed corpus
# fuzz/corpus/NAME (the committed corpus is never written), with fuzz/NAME.dict when there
# is one. One line per harness: "ok   fuzz NAME: N runs, 0 crashes", or "FAIL fuzz NAME: ..."
# with the input that broke it under BUILD/crashes/. Exit status 1 on any failure.
# FUZZ_JOBS harnesses run at once (default 2); FUZZ_RATE=1 adds runs per second.
build=${1:?usage: fuzz/run.sh BUILD SECONDS [NAME...]}
secs=${2:?usage: fuzz/run.sh BUILD SECONDS [NAME...]}
shift 2
names="$*"
[ -n "$names" ] || names=$(for f in fuzz/fuzz_*.c; do basename "$f" .c | sed 's/^fuzz_//'; done)
jobs=${FUZZ_JOBS:-2}
mkdir -p "$build/corpus" "$build/crashes" "$build/log"

one() {
    name=$1
    bin="$build/bin/fuzz_$name" corpus="$build/corpus/$name" log="$build/log/$name.log"
    rm -rf "$corpus" && mkdir -p "$corpus"
    [ -d "fuzz/corpus/$name" ] && cp fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null
    dict=""
    [ -f "fuzz/$name.dict" ] && dict="-dict=fuzz/$name.dict"
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -detect_leaks=1 -print_final_stats=1 \
        -artifact_prefix="$build/crashes/$name-" $dict "$corpus" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [ $rc -eq 0 ] && [ -n "$runs" ]; then
        rate=""
        [ "${FUZZ_RATE:-0}" = 1 ] && rate=" ($((runs / (secs > 0 ? secs : 1)))/s, corpus $(ls "$corpus" | wc -l) files)"
        echo "ok   fuzz $name: $runs runs, 0 crashes$rate"
    else
        why=$(grep -m1 -E 'fuzz contract broken|runtime error|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|ALARM|SUMMARY' "$log")
        input=$(sed -n 's/.*Test unit written to \([^ ]*\).*/\1/p' "$log" | tail -n 1)
        echo "FAIL fuzz $name: ${why:-exit status $rc} (input: ${input:-none}; log: $log)"
    fi
}

# at most $jobs at once; the lines come out in the harnesses' order
running=0
for n in $names; do
    one "$n" >"$build/log/$n.result" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait; running=0; fi
done
wait
fail=0
for n in $names; do
    cat "$build/log/$n.result"
    grep -q '^ok ' "$build/log/$n.result" || fail=1
done
exit $fail
