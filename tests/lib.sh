# lib.sh — the checks shared by the shell test scripts (sourced, not run).
# Sets $tmp (removed on exit), the pass/fail counters and MEMPLAN_PROFILES.
export MEMPLAN_PROFILES="$(pwd)/profiles"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# expect CODE DESCRIPTION -- command...: exit status CODE; output in $tmp/out and $tmp/err
expect() {
    code=$1 what=$2; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -eq "$code" ]; then ok "$what (exit $rc)"; else bad "$what: exit $rc, wanted $code"; sed 's/^/    /' "$tmp/err" | head -5; fi
}
# has out|err TEXT: the last command's stdout or stderr contains TEXT
has() { if grep -qF -- "$2" "$tmp/$1"; then ok "$1 says '$2'"; else bad "$1 lacks '$2'"; sed 's/^/    /' "$tmp/$1" | head -5; fi; }
lacks() { if grep -qF -- "$2" "$tmp/$1"; then bad "$1 says '$2'"; else ok "$1 does not say '$2'"; fi; }
