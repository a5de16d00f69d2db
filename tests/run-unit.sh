#!/bin/sh
# Run every unit-test program in BUILD/tests; print one summary line at the end.
build=${1:-build}
pass=0 fail=0 failed=""
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    out=$(MEMPLAN_PROFILES="$(pwd)/profiles" "$t" 2>&1)
    rc=$?
    line=$(printf '%s\n' "$out" | tail -n 1)
    p=$(printf '%s' "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(printf '%s' "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    if [ -z "$p" ]; then p=0; f=1; fi
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    pass=$((pass + p)); fail=$((fail + f))
    if [ "$f" -ne 0 ]; then
        failed="$failed $(basename "$t")"
        printf '%s\n' "$out" | grep -v '^ok ' | tail -n 30
    fi
    echo "$(basename "$t"): $line"
done
[ -n "$failed" ] && echo "failing:$failed"
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
