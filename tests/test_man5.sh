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
# the words a page lists after .TP lines under a .SH heading matching SH and (when given) a
# .SS heading matching SS: the first word of the .B/.BR line, man escapes undone
listed() { # PAGE SH-REGEX [SS-REGEX]
    awk -v sh="$2" -v ss="${3:-}" '
        /^\.SH / { insh = ($0 ~ sh); on = insh && ss == ""; tp = 0; next }
        /^\.SS / { on = insh && (ss == "" || $0 ~ ss); tp = 0; next }
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
listed "$page" '^\.SH KEYS' | sed 's/ .*//' >"$tmp/page-keys"
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

# --- memtrain-metrics(5): the metrics columns are metrics_format.c's, tools/memplan_callback.py's
# COLUMNS and (in order) what memtrain writes; the measurements columns MEASUREMENT_COLUMNS
page=man/memtrain-metrics.5
listed "$page" '^\.SH METRICS FILE' '^\.SS Columns' >"$tmp/page-metrics"
sed -n '/names\[MP_NMETRIC\] = {/,/};/p' planner/memtrain/metrics_format.c | grep -o '"[a-z_0-9]*"' | tr -d '"' >"$tmp/src-metrics"
if cmp -s "$tmp/page-metrics" "$tmp/src-metrics"; then pass "memtrain-metrics(5)'s columns are metrics_format.c's, in order"
else fail "memtrain-metrics(5)'s columns are metrics_format.c's, in order"; diff "$tmp/page-metrics" "$tmp/src-metrics"; fi
PYTHONPATH=tools python3 -c 'import memplan_callback as m; print("\n".join(m.COLUMNS))' >"$tmp/py-metrics" 2>"$tmp/err" ||
    { fail "tools/memplan_callback.py imports"; cat "$tmp/err"; }
cmp -s "$tmp/page-metrics" "$tmp/py-metrics" && pass "memtrain-metrics(5)'s columns are memplan_callback.py's COLUMNS" ||
    fail "memtrain-metrics(5)'s columns are memplan_callback.py's COLUMNS"
PYTHONPATH=tools python3 -c 'import memplan_callback as m; print(m.FORMAT_LINE)' >"$tmp/py-format" 2>/dev/null
grep -qxF "$(cat "$tmp/py-format")" "$page" && pass "memtrain-metrics(5) states the format line" ||
    fail "memtrain-metrics(5) states the format line"
# what memtrain writes: its format line and its header, as the page's example shows them
printf 'family = gpt2\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 256\nseq = 32\nbatch = 2\n' >"$tmp/m.cfg"
if "$bin/memtrain" --config "$tmp/m.cfg" --steps 1 --quiet --metrics "$tmp/run.csv" >"$tmp/out" 2>&1; then
    head -1 "$tmp/run.csv" >"$tmp/got-format"; grep -v '^#' "$tmp/run.csv" | head -1 >"$tmp/got-header"
    cmp -s "$tmp/got-format" "$tmp/py-format" && pass "memtrain writes the format line the page states" ||
        fail "memtrain writes the format line the page states"
    tr -d '"' <"$tmp/got-header" | tr ',' '\n' | cmp -s - "$tmp/page-metrics" &&
        pass "memtrain writes the page's columns, in order" || fail "memtrain writes the page's columns, in order"
    example "$page" 1 | grep -v '^#' | head -1 | cmp -s - "$tmp/got-header" &&
        pass "memtrain-metrics(5)'s example header is memtrain's" || fail "memtrain-metrics(5)'s example header is memtrain's"
else fail "memtrain writes a metrics file"; cat "$tmp/out"; fi
listed "$page" '^\.SH MEASUREMENTS FILE' '^\.SS Columns' >"$tmp/page-meas"
PYTHONPATH=tools python3 -c 'import memplan_callback as m; print("\n".join(m.MEASUREMENT_COLUMNS))' >"$tmp/py-meas" 2>/dev/null
if cmp -s "$tmp/page-meas" "$tmp/py-meas"; then pass "memtrain-metrics(5)'s measurement columns are MEASUREMENT_COLUMNS, in order"
else fail "memtrain-metrics(5)'s measurement columns are MEASUREMENT_COLUMNS, in order"; diff "$tmp/page-meas" "$tmp/py-meas"; fi
# every column memplan calibrate reads is one of them
grep -o '{"[a-z_]*", "--\|{"dropout", NULL\|csv_table_col(t, "[a-z_]*")' planner/cmd/calibrate.c | grep -o '"[a-z_]*"' | tr -d '"' | sort -u |
    comm -23 - "$(sort -u "$tmp/py-meas" >"$tmp/m2"; echo "$tmp/m2")" >"$tmp/extra"
[ -s "$tmp/extra" ] && { fail "memplan calibrate reads columns the page lacks"; cat "$tmp/extra"; } ||
    pass "every column memplan calibrate reads is in memtrain-metrics(5)"
example "$page" 2 | head -1 | tr ',' '\n' | sort -u | comm -23 - "$tmp/m2" | grep -q . &&
    fail "memtrain-metrics(5)'s measurements example has columns of its own" ||
    pass "memtrain-metrics(5)'s measurements example has only listed columns"

# --- memplan-profiles(5): each file's columns are the shipped CSV's header, and the framework
# columns fw_columns' rows (with name and source)
page=man/memplan-profiles.5
for f in models gpus frameworks; do
    sec=$(echo "$f" | tr a-z A-Z)
    listed "$page" "^\\.SH $sec\\.CSV" >"$tmp/page-$f"
    head -1 "profiles/$f.csv" | tr -d '\r' | tr ',' '\n' >"$tmp/csv-$f"
    same "memplan-profiles(5) lists exactly profiles/$f.csv's columns" "$tmp/page-$f" "$tmp/csv-$f"
done
{ echo name; echo source; sed -n 's/^ *COL("\([a-z_0-9]*\)".*/\1/p' planner/profiles/framework.c; } >"$tmp/src-fw"
same "memplan-profiles(5) lists exactly framework.c's fw_columns" "$tmp/page-frameworks" "$tmp/src-fw"
# every column profiles.c reads from models.csv and gpus.csv is in the page (hf_id: in its prose)
grep -o '[CF]("[a-z_0-9]*"\|(t, row, "[a-z_0-9]*"' planner/profiles/profiles.c | grep -o '"[a-z_0-9]*"' | tr -d '"' | sort -u |
    comm -23 - "$(cat "$tmp/page-models" "$tmp/page-gpus" | sort -u >"$tmp/mg"; echo "$tmp/mg")" >"$tmp/extra"
if [ "$(cat "$tmp/extra")" = hf_id ] && grep -q '^\.B hf_id$' "$page"; then pass "every column profiles.c reads is in memplan-profiles(5)"
else fail "every column profiles.c reads is in memplan-profiles(5)"; cat "$tmp/extra"; fi
# the example profile loads, and its columns are listed ones
mkdir "$tmp/ex" && example "$page" 1 >"$tmp/ex/mystack.csv"
if "$bin/memplan" --model gpt2 --gpu 24GB --framework "$tmp/ex/mystack.csv" >"$tmp/out" 2>&1; then
    pass "memplan-profiles(5)'s example profile loads"
else fail "memplan-profiles(5)'s example profile loads"; cat "$tmp/out"; fi
head -1 "$tmp/ex/mystack.csv" | tr ',' '\n' | sort -u | comm -23 - "$(sort -u "$tmp/src-fw" >"$tmp/fw2"; echo "$tmp/fw2")" | grep -q . &&
    fail "memplan-profiles(5)'s example has columns of its own" || pass "memplan-profiles(5)'s example has only listed columns"

echo "test_man5: $fails failed"
[ "$fails" -eq 0 ]
