#!/bin/sh
# test_man5.sh BIN — the section-5 pages (man/*.5) against what the programs read and write:
# every key, column and format line a page lists is one the sources have, and every one the
# sources have is listed; the pages render without warnings; their examples read back.
set -u
bin=${1:-build/bin}
cd "$(dirname "$0")/.." || exit 2
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
fails=0
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok: $*"; }
# same NAME A B: the sorted word lists in files A and B are equal (a diff otherwise)
same() {
    sort -u "$2" >"$tmp/a" && sort -u "$3" >"$tmp/b"
    if cmp -s "$tmp/a" "$tmp/b"; then pass "$1"; else fail "$1 (< page, > source)"; diff "$tmp/a" "$tmp/b"; fi
}
# the words a page lists after .TP lines under one .SH or .SS heading (first word of the .B/.BR
# line, man escapes undone)
listed() { # PAGE SECTION-REGEX
    awk -v sec="$2" '
        /^\.S[HS] / { on = ($0 ~ sec) ; next }
        on && tp { n = split($0, w, " "); if (w[1] == ".B" || w[1] == ".BR") { x = w[2]; gsub(/"/, "", x); print x } }
        { tp = on && $0 == ".TP" }' "$1" | sed 's/\\-/-/g; s/,$//'
}
# the .EX block number N of a page, escapes undone
example() { # PAGE N
    awk -v n="$2" '/^\.EX/ { k++; on = (k == n); next } /^\.EE/ { on = 0 } on' "$1" | sed 's/\\-/-/g; s/\\e/\\/g'
}

for page in man/*.5; do
    if groff -man -Tutf8 -ww -z "$page" 2>"$tmp/warn" && [ ! -s "$tmp/warn" ]; then pass "$page renders"
    else fail "$page renders"; cat "$tmp/warn"; fi
    if command -v man >/dev/null 2>&1; then
        man -l "$page" >/dev/null 2>&1 || fail "man -l $page"
    fi
done

# --- memtrain.conf(5): its keys are memtrain's (--help lists every config key from the rows)
page=man/memtrain.conf.5
listed "$page" '^\.(SH KEYS|SS )' | sed 's/ .*//' >"$tmp/page-keys"
"$bin/memtrain" --help 2>&1 | sed -n '/^config keys/,/^exit status/{/^config keys/d;p;}' | tr ' ' '\n' | sed -n 's/^--//p' >"$tmp/help-keys"
same "memtrain.conf(5) lists exactly memtrain's config keys (memtrain --help)" "$tmp/page-keys" "$tmp/help-keys"
# and the rows in the sources: the shape, the settings memtrain reads, zero and ranks, its own
{
    sed -n '/^const mp_opt memtrain_shape_opts/,/{0}/s/^ *{"\([a-z0-9-]*\)".*/\1/p' planner/memtrain/shape.c
    sed -n '/memtrain_setting_keys\[\] = {/,/};/p; /memtrain_own_keys\[\] = {/,/};/p' planner/memtrain/memtrain_keys.c |
        grep -o '"[a-z0-9-]*"' | tr -d '"'
    echo zero; echo ranks
} >"$tmp/src-keys"
same "memtrain.conf(5) lists exactly the key rows of the sources" "$tmp/page-keys" "$tmp/src-keys"
"$bin/memplan" --model gpt2 --gpu 24GB --emit memtrain 2>&1 | sed -n 's/^\([a-z0-9-]*\) = .*/\1/p' >"$tmp/emitted"
if [ -s "$tmp/emitted" ] && [ -z "$(sort -u "$tmp/emitted" | comm -23 - "$tmp/a")" ]; then
    pass "every key memplan --emit memtrain writes is in memtrain.conf(5)"
else fail "every key memplan --emit memtrain writes is in memtrain.conf(5)"; fi
# the example is a config memtrain and memplan check read
example "$page" 1 >"$tmp/plan.cfg"
: >"$tmp/my corpus #1.txt"; head -c 4096 README >"$tmp/my corpus #1.txt"
if (cd "$tmp" && "$bin/memtrain" --config plan.cfg --steps 1 --quiet >out 2>&1); then
    pass "memtrain.conf(5)'s example runs"
else fail "memtrain.conf(5)'s example runs"; cat "$tmp/out"; fi
"$bin/memplan" check "$tmp/plan.cfg" >"$tmp/out" 2>&1 && pass "memplan check reads memtrain.conf(5)'s example" ||
    { fail "memplan check reads memtrain.conf(5)'s example"; cat "$tmp/out"; }

echo "test_man5: $fails failed"
[ "$fails" -eq 0 ]
