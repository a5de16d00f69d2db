#!/bin/sh
# tests/hostile/run.sh BIN — the hostile-input suite: every tests/hostile/*.sh but this
# one, each a set of cases (tests/lib.sh's expect/has/lacks) that feed the commands what a
# stranger's file or a planted path can hold, and assert the exit status, the one-line
# message, and that nothing was written or changed. Exit 1 when any case fails.
bin=${1:-build/bin}
fail=0
for t in tests/hostile/*.sh; do
    [ "$(basename "$t")" = run.sh ] && continue
    sh "$t" "$bin" || fail=1
done
exit $fail
