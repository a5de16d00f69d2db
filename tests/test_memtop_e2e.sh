#!/bin/sh
# End-to-end tests of memtop: the real build/bin/memtop in a fixed-size tmux terminal
# (120x40), against a metrics file written here and appended to over time, against the
# Python callback's self-test, and against a real memtrain run when build/bin/memtrain
# exists. Checks what is on screen: values, live following, garbage, truncation,
# replacement, staleness, selection, help, resize, too-small, quit, colours, the what-if
# view reacting to keys, --once snapshots and exit codes, a multi-rank run's files (the
# rank table, the heaviest rank, files of two runs, a missing rank; a live mpirun run).
# Usage: tests/test_memtop_e2e.sh [BINDIR]   (default build/bin); prints ok/FAIL lines and
# "N passed, N failed"; exits non-zero on failure.
cd "$(dirname "$0")/.." || exit 2
bin=${1:-build/bin}
case $bin in /*) ;; *) bin="$(pwd)/$bin" ;; esac
root=$(pwd)
memtop="$bin/memtop"
export MEMPLAN_PROFILES="$root/profiles"
unset TMUX NO_COLOR
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtop_e2e.XXXXXX")
export TMPDIR="$tmp"            # memtop -- CMD puts its directory here
sock="$tmp/tmux.sock"
pass=0 fail=0

cleanup() {
    tmux -S "$sock" kill-server 2>/dev/null
    [ -n "${bgpid:-}" ] && kill "$bgpid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [ "$1" = 0 ]; then ok "$2"; else bad "$2"; fi; }

if ! command -v tmux >/dev/null 2>&1; then
    echo "FAIL tmux is not installed"
    echo "0 passed, 1 failed"
    exit 1
fi
if [ ! -x "$memtop" ]; then
    echo "FAIL no $memtop (run make first)"
    echo "0 passed, 1 failed"
    exit 1
fi

T() { tmux -S "$sock" "$@"; }
# A session that lives for the whole script, so that killing the test's session never
# leaves the server empty: an empty tmux server exits, and a new-session racing with that
# exit fails with "server exited unexpectedly" (seen in CI under load).
T new-session -d -s keep -x 120 -y 40 "sleep 86400" || { echo "FAIL tmux cannot start"; echo "0 passed, 1 failed"; exit 1; }
screen() { T capture-pane -p -t mt 2>/dev/null; }
# start CMD...: run a shell command line in a fresh 120x40 terminal; its exit status
# lands in $tmp/rc and its stderr in $tmp/err
start() {
    T kill-session -t mt 2>/dev/null
    rm -f "$tmp/rc" "$tmp/err"
    T new-session -d -s mt -x 120 -y 40 "cd '$root' && $* 2>'$tmp/err'; echo \$? >'$tmp/rc'; sleep 30" ||
        echo "note: tmux new-session failed for: $*"
}
# wait_for TEXT [SECONDS]: until TEXT is on screen (polled every 0.1 s, default 10 s: a
# loaded CI machine can be slow to start a program, and a pass returns at once)
wait_for() {
    n=$(( ${2:-10} * 10 ))
    while [ "$n" -gt 0 ]; do
        screen | grep -qF -- "$1" && return 0
        sleep 0.1
        n=$((n - 1))
    done
    return 1
}
# expect TEXT DESCRIPTION [SECONDS]
expect() {
    if wait_for "$1" "${3:-10}"; then ok "$2"; else bad "$2: '$1' not on screen"; screen | sed 's/^/    | /' | head -40; fi
}
# expect_not TEXT DESCRIPTION: TEXT is not on screen now
expect_not() {
    if screen | grep -qF -- "$1"; then bad "$2: '$1' on screen"; else ok "$2"; fi
}
# the exit status of the command started last, once it has ended (waits up to 10 s)
exit_status() {
    n=100
    while [ ! -s "$tmp/rc" ] && [ "$n" -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
    cat "$tmp/rc" 2>/dev/null || echo none
}
keys() { T send-keys -t mt "$@"; sleep 0.2; }
line_of() { screen | grep -F -- "$1" | head -1; }
table_row() { screen | grep -E "^[ >][#=%+.] $1 " | head -1; }   # a table row, not the legend

H="step,time_s,loss,tokens_per_s,lr,cur_weights,cur_gradients,cur_optimizer,cur_activations,cur_overhead,cur_total,peak_weights,peak_gradients,peak_optimizer,peak_activations,peak_overhead,peak_total,pred_weights,pred_gradients,pred_optimizer,pred_activations,pred_overhead,pred_total,rss_bytes"
# row STEP: a row of a GPT-2-sized run (weights 474.6 MiB, optimizer 949.2 MiB, ...)
row() {
    s=$1
    act=$((200000000 + s * 1000000))
    cur=$((497664000 + 497664000 + 995328000 + act + 10000000))
    echo "$s,$(awk "BEGIN{printf \"%.1f,%.4f\", $s*0.5, 10/($s+1)}"),4096.0,0.0003,497664000,497664000,995328000,$act,10000000,$cur,497664000,497664000,995328000,300000000,10000000,2300656000,497664000,497664000,995328000,310000000,12000000,2312656000,2500000000"
}
rows() { i=$1; while [ "$i" -le "$2" ]; do row "$i"; i=$((i + 1)); done; }
head_of() { printf '# memtrain metrics v1\n# model: %s\n# settings: precision=fp32 optimizer=adamw batch=8 seq=1024\n# steps: 50\n# budget_bytes: 2147483648\n# device: cuda:0\n%s\n' "$1" "$H"; }

run="$tmp/run.csv"

# ---------------------------------------------------------------- follow a recorded file
{ head_of gpt2; rows 1 10; } >"$run"
start "'$memtop' --interval 200 --stale 2 '$run'"
expect "step 10/50" "run view: step 10 of 50 on screen"
expect "model gpt2" "run view: the model from the comments"
expect "[live]" "run view: live badge"
expect "GiB = 2^30 bytes" "run view: binary units stated"
expect "budget 2.00 GiB" "run view: the budget from budget_bytes"
expect "headroom 1.80 GiB" "run view: the headroom line 10% below"
expect "precision=fp32 optimizer=adamw batch=8 seq=1024" "run view: the settings line"
expect "# weights  = gradients  % optimizer  + activations  . overhead" "run view: the legend with a glyph per segment"
l=$(table_row weights)
case $l in *"474.6 MiB"*"474.6 MiB"*"474.6 MiB"*"+0.0%"*) ok "table: weights current, peak, predicted, error";; *) bad "table weights row: $l";; esac
l=$(table_row activations)
case $l in *"200.3 MiB"*"286.1 MiB"*"295.6 MiB"*"-3.2%"*) ok "table: activations 200.3/286.1/295.6 MiB, error -3.2%";; *) bad "table activations row: $l";; esac
l=$(line_of "   total ")
case $l in *"2.06 GiB"*"2.14 GiB"*"2.15 GiB"*"-0.5%"*) ok "table: totals and their error";; *) bad "table total row: $l";; esac
l=$(screen | grep -E '^peak +\[' | head -1)
case $l in *"|"*"]"*"2.14 GiB") ok "bars: the peak bar crosses the out-of-memory mark, total at its end";; *) bad "peak bar: $l";; esac
expect "loss" "run view: loss chart"
expect "cur_total over time, '-' predicted peak 2.15 GiB" "run view: memory chart with the predicted peak"
expect "elapsed 5s" "run view: elapsed from time_s"
expect "tokens_per_s 4,096" "run view: tokens/s"
expect "eta 20s" "run view: ETA from the step rate (40 steps x 0.5 s)"

# live following: rows appended while memtop runs
rows 11 15 >>"$run"
expect "step 15/50" "following: appended rows appear"
echo "this is not a row" >>"$run"
expect "skipped 1" "following: a garbage line is skipped and counted"
row 16 | tr -d '\n' | head -c 40 >>"$run"
sleep 0.6
expect_not "step 16/50" "following: a half-written line waits for its newline"
expect_not "skipped 2" "following: the half line is not counted as garbage"
row 16 | tail -c +41 >>"$run"
expect "step 16/50" "following: the completed line is read"
echo "17,8.5,,,,,,,,,,,,,,,,,,,," >>"$run"
expect "skipped 2 (" "following: a row with too few fields is skipped with its reason"
expect "[stale: no row for" "stale: marked after --stale 2 seconds without a row" 12
rows 17 17 >>"$run"
expect "[live]" "stale: live again when a row arrives"

# truncated and regrown; replaced by a new file
: >"$run"
{ head_of gpt2; rows 1 3; } >>"$run"
expect "step 3/50" "truncated and regrown: reread from the start"
expect "resets 1" "truncated: counted in resets"
{ head_of llama-test; rows 1 7; } >"$run.new"
mv "$run.new" "$run"
expect "model llama-test" "replaced (rename over it): the new file is followed"
expect "step 7/50" "replaced: its rows"

# selection and detail
keys Tab
expect "detail: gradients" "Tab selects the next component for the detail window"
keys Down Down
expect "detail: activations" "Down moves the selection"
expect "peak_activations" "detail names the columns behind its numbers"
keys Up
expect "detail: optimizer" "Up moves it back"

# help and back
keys h
expect "memtop keys (run view)" "h shows the help"
expect "select the next component" "help lists the keys"
expect "GiB = 2^30 bytes" "help states the units"
keys Space
expect "component          current" "any key returns from help"
keys '?'
expect "memtop keys" "? shows the help too"
keys Escape
expect "component          current" "Esc returns from help"

# resize at any time
T resize-window -t mt -x 80 -y 24
expect "cur_total over time" "resized to 80x24: memory chart kept"
if screen | sed 's/─/-/g' | awk 'length > 80 { bad = 1 } END { exit bad }'; then ok "80x24: nothing wider than the terminal"; else bad "80x24: a line wider than 80"; fi
expect_not "detail:" "80x24: no room for the detail window"
T resize-window -t mt -x 50 -y 12
expect "terminal too small: 50x12" "resized to 50x12: says the terminal is too small"
T resize-window -t mt -x 120 -y 40
expect "detail: optimizer" "resized back to 120x40: full layout, selection kept"
keys x
expect "unknown key 'x'" "an unknown key is answered, not ignored"

# quit
keys q
rc=$(exit_status)
check "$([ "$rc" = 0 ]; echo $?)" "q quits with status 0 ($rc)"
[ -s "$tmp/err" ] && bad "quit: stderr not empty: $(head -1 "$tmp/err")" || ok "quit: nothing on stderr"

# ---------------------------------------------------------------- colours
{ head_of gpt2; rows 1 3; } >"$run"
# coloured CMD: start CMD on the 3-row run and say whether its screen has colour codes
coloured() {
    start "$1"
    wait_for "step 3/50" >/dev/null
    T capture-pane -e -p -t mt >"$tmp/colours.txt"
    grep -q "$(printf '\033')\[[0-9;]*3[1-7]m" "$tmp/colours.txt" || grep -q "38;5;" "$tmp/colours.txt"
}
if coloured "'$memtop' '$run'"; then ok "colours by default"; else bad "no colour codes by default"; fi
keys q
if coloured "'$memtop' --no-color '$run'"; then bad "--no-color still has colour codes"; else ok "--no-color: no colour codes"; fi
screen | grep -qF '[#########' && ok "--no-color: segments keep their glyphs" || bad "--no-color: glyphs missing"
keys q
if coloured "NO_COLOR=1 '$memtop' '$run'"; then bad "NO_COLOR still has colour codes"; else ok "NO_COLOR=1: no colour codes"; fi
keys q

# ---------------------------------------------------------------- what-if view
start "'$memtop' --plan --model gpt2 --gpu 24GB --batch 2 --seq 512 --attention flash --precision mixed-bf16"
expect "memtop what-if" "what-if view starts"
expect "params 124,439,808" "what-if: the model's parameters"
expect "fits: device" "what-if: the verdict"
expect "batch 2" "what-if: knobs with their keys"
a1=$(line_of "   allocated" | awk '{print $2, $3}')
keys +
expect "batch 3" "'+' raises the batch to 3"
a2=$(line_of "   allocated" | awk '{print $2, $3}')
check "$([ -n "$a1" ] && [ "$a1" != "$a2" ]; echo $?)" "'+' changes the allocated total ($a1 -> $a2)"
want=$("$memtop" --once --plan --model gpt2 --gpu 24GB --batch 3 --seq 512 --attention flash --precision mixed-bf16 | python3 -c "
import json, sys
b = json.load(sys.stdin)['allocated']
print('%.2f GiB' % (b / 2**30) if b >= 2**30 else '%.1f MiB' % (b / 2**20))")
check "$([ "$a2" = "$want" ]; echo $?)" "the screen's allocated equals --once's for batch 3 ($a2 = $want)"
keys -
expect "batch 2" "'-' lowers it again"
keys s s
expect "invalid:" "s s: seq 2048 on gpt2 is rejected"
expect "exceeds the model's 1024 learned positions" "the planner's message is shown instead of numbers"
keys S
expect "seq 1024" "S halves the sequence"
expect "fits: device" "valid again"
keys w
expect "cannot be fully fine-tuned" "w: quantization without LoRA shows the library's error"
keys l
expect "lora-rank 8" "l: LoRA rank 8"
expect "fits: device" "int8 + LoRA is valid"
keys Tab
expect "terms behind gradients" "Tab: the terms behind the selected component"
keys Tab Tab
expect "terms behind activations" "terms of activations"
expect "saved activations" "a term with its name"
keys g
expect "gpu rtx3060-12g" "g: the first GPU profile"
keys G
expect "gpu " "G: the previous profile"
keys r
expect "[g/G] gpu 24GB" "r: back to the command line's settings"
expect "batch 2" "r: batch back to 2"
keys h
expect "micro-batch + 1" "help in the what-if view lists its keys"
keys Space
T resize-window -t mt -x 60 -y 16
expect "memtop what-if" "what-if at the minimum size 60x16"
T resize-window -t mt -x 120 -y 40
keys q
rc=$(exit_status)
check "$([ "$rc" = 0 ]; echo $?)" "what-if: q quits with status 0"

# ---------------------------------------------------------------- the Python callback
python3 tools/memplan_callback.py --selftest "$tmp/selftest.csv" --steps 20 >/dev/null
check $? "memplan_callback.py --selftest writes a file without torch"
"$memtop" --once --format csv "$tmp/selftest.csv" >"$tmp/st.csv"
check $? "memtop --once reads the self-test file"
if python3 - "$tmp/st.csv" <<'EOF'
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))
assert len(r) == 1, r
r = r[0]
assert r["step"] == "20" and r["steps"] == "20", r
assert r["model"] == "selftest-7b" and r["device"] == "cuda:0", r
assert r["total_predicted"] == str(int(8.2 * 2**30)), r["total_predicted"]
assert r["weights_current"] == "" and r["weights_predicted"] == str(2 * 2**30), r
assert r["overhead_current"] == str(512 * 2**20), r["overhead_current"]
assert r["skipped"] == "0" and r["budget"] == str(24 * 2**30), r
EOF
then ok "self-test snapshot: steps, prediction, N/A components, reserve as overhead"; else bad "self-test snapshot values"; fi
"$memtop" --once --format json "$tmp/selftest.csv" | python3 -c "import json,sys; d=json.load(sys.stdin); assert d['components']['weights']['current'] is None" 2>/dev/null
check $? "self-test JSON: N/A is null"

# memtop -- COMMAND: the callback's self-test as a slow fake trainer
start "'$memtop' --interval 200 -- python3 tools/memplan_callback.py --selftest --steps 12 --delay 0.15"
expect "model selftest-7b" "memtop -- CMD: follows the metrics it passed with --metrics"
expect "python3 running (pid" "memtop -- CMD: the child's state on screen"
expect "step 12/12" "memtop -- CMD: every step arrives" 16
expect "python3 exited with status 0" "memtop -- CMD: the exit status is shown"
expect "log $tmp/memtop." "memtop -- CMD: the log's path is shown"
keys q
rc=$(exit_status)
check "$([ "$rc" = 0 ]; echo $?)" "memtop -- CMD: exits with the command's status 0"
# the temporary directory (metrics and log) goes with memtop (issue 36)
if ls -d "$tmp"/memtop.* >/dev/null 2>&1; then bad "memtop -- CMD: its directory is left: $(ls -d "$tmp"/memtop.*)"; else ok "memtop -- CMD: its temporary directory is removed on exit"; fi
[ -s "$tmp/err" ] && bad "memtop -- CMD that succeeded: stderr says $(cat "$tmp/err")" || ok "memtop -- CMD that succeeded: nothing on stderr"

start "'$memtop' -- sh -c 'echo boom-from-child >&2; exit 3'"
expect "exited with status 3" "a failing command: its status"
expect "boom-from-child" "a failing command: the log's last line"
keys q
rc=$(exit_status)
check "$([ "$rc" = 3 ]; echo $?)" "memtop exits with the command's status 3 ($rc)"
check "$([ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "^memtop: error: sh exited with status 3; its last line: boom-from-child$" "$tmp/err"; echo $?)" \
    "a failing command: one line naming its status and its last line"

# a command that cannot run is refused before the screen starts: 127 (not found), as a shell says
"$memtop" -- ./no-such-trainer </dev/null >/dev/null 2>"$tmp/e1"; rc=$?
check "$([ $rc = 127 ] && [ "$(wc -l <"$tmp/e1")" = 1 ] && grep -q "^memtop: error: cannot run './no-such-trainer': No such file" "$tmp/e1"; echo $?)" \
    "a command that cannot run: exit 127, one line with the reason"

start "'$memtop' -- sh -c 'sleep 60'"
expect "sh running (pid" "a long command runs"
cpid=$(screen | sed -n 's/.*sh running (pid \([0-9]*\)).*/\1/p' | head -1)
keys q
rc=$(exit_status)
check "$([ "$rc" = 0 ]; echo $?)" "quitting stops the command and exits 0"
grep -q "stopped sh (pid" "$tmp/err" && ok "quitting says it stopped the command" || bad "no stop note: $(cat "$tmp/err")"
if [ -n "$cpid" ] && ! kill -0 "$cpid" 2>/dev/null; then ok "the command ($cpid) is gone"; else bad "the command '$cpid' is still running"; fi

# ---------------------------------------------------------------- --once and the screen's names
{ head_of gpt2; rows 1 10; } >"$run"
"$memtop" --once --format json "$run" >"$tmp/once.json"
check $? "--once --format json exits 0"
start "'$memtop' '$run'"
wait_for "step 10/50" >/dev/null
screen >"$tmp/screen.txt"
keys q
if python3 - "$tmp/once.json" "$tmp/screen.txt" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
screen = open(sys.argv[2]).read()
words = set(re.findall(r"[A-Za-z_/]+", screen))
# shown as the path, the badge, "step N/steps", the settings line
skip = {"file", "state", "settings", "components", "stale", "steps"}
missing = [k for k in d if k not in skip and k not in words]
for row, cols in d["components"].items():
    if row not in words: missing.append(row)
    missing += [c for c in cols if c not in words]
assert not missing, "names not on screen: %s" % sorted(set(missing))
assert d["step"] == 10 and d["steps"] == 50 and d["rows"] == 10 and d["state"] in ("live", "stale")
assert d["components"]["weights"]["current"] == 497664000
assert d["components"]["activations"]["error"] == -3.23
assert d["budget"] == 2147483648 and d["headroom"] == 1932735283
EOF
then ok "--once JSON names are the screen's labels, values match the file"; else bad "--once JSON names/values"; fi
"$memtop" --once --format csv "$run" >"$tmp/once.csv"
python3 -c "
import csv, json, sys
r = list(csv.DictReader(open('$tmp/once.csv')))[0]
d = json.load(open('$tmp/once.json'))
for k in ('step', 'steps', 'loss', 'rows', 'budget'):
    assert str(d[k]) == r[k], (k, d[k], r[k])
for g, cols in d['components'].items():
    for c, v in cols.items():
        key = g + '_' + c
        assert key in r, key
        assert (r[key] == '' and v is None) or abs(float(r[key]) - v) < 1e-6, (key, r[key], v)
" 2>"$tmp/py.err"
check $? "--once CSV: the same names, flattened, the same values"
# with a budget the view opens on memplan's best plan (issue 13): it fits
"$memtop" --once --plan --model llama-3.1-8b --gpu 24GB --format json | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['verdict'] == 'fits' and d['params'] == 8030261248 and set(d['components']) == {'weights','gradients','optimizer','activations','overhead'}
" 2>/dev/null
check $? "--once --plan: the what-if snapshot"

# ---------------------------------------------------------------- a multi-rank run (issue 14)
# tests/data/memtop_ranks: memtrain's files of a 2-rank run (rank 1 made the heaviest, see its
# README) and rank 1 of a 3-rank run
fx="$root/tests/data/memtop_ranks"
"$memtop" --once --format json "$fx/run.csv" >"$tmp/ranks.json"
check $? "--once run.csv: run.csv absent, its rank files are read"
if python3 - "$tmp/ranks.json" "$tmp/once.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
one = set(json.load(open(sys.argv[2])))
assert d["heaviest_rank"] == 1 and d["rank"] == 1, (d["heaviest_rank"], d["rank"])
assert [r["rank"] for r in d["ranks"]] == [0, 1] and [r["heaviest"] for r in d["ranks"]] == [False, True]
for r in d["ranks"]:
    assert set(r) - {"rank", "heaviest"} == one, set(r) ^ one
peaks = [r["components"]["total"]["peak"] for r in d["ranks"]]
assert peaks == [2376272, 2638416], peaks
assert d["components"]["total"]["peak"] == 2638416 and d["ranks"][1]["components"]["activations"]["predicted"] == 690944
assert d["ranks"][0]["settings"]["ranks"] == "2" and d["ranks"][0]["file"].endswith("run.rank0.csv")
EOF
then ok "--once JSON: a ranks array with the one-file fields, heaviest_rank 1, the top level its snapshot"; else bad "--once JSON of a multi-rank run"; fi
"$memtop" --once --format text "$fx/run.rank0.csv" >"$tmp/ranks.txt"
if grep -q "^memtop $fx/run.csv: 2 ranks, heaviest rank 1 (\*, peak total 2.5 MiB)" "$tmp/ranks.txt" &&
    grep -Eq '^\*   1  [a-z]+ +3/3 +1\.6 MiB +2\.5 MiB +2\.3 MiB +\+11\.2%' "$tmp/ranks.txt" &&
    grep -Eq '^    0  [a-z]+ +3/3 +1\.6 MiB +2\.3 MiB' "$tmp/ranks.txt" &&
    grep -Eq '^\*   1 weights ' "$tmp/ranks.txt"; then
    ok "--once text of run.rank0.csv: the rank table, rank 1 marked '*' as the heaviest"
else
    bad "--once text of the ranks: $(cat "$tmp/ranks.txt")"
fi
"$memtop" --once --format csv "$fx/run.rank0.csv" "$fx/run.rank1.csv" >"$tmp/ranks.csv"
python3 -c "
import csv
r = list(csv.DictReader(open('$tmp/ranks.csv')))
assert [(x['rank'], x['heaviest']) for x in r] == [('0', 'false'), ('1', 'true')], r
assert r[1]['total_peak'] == '2638416'
" 2>/dev/null
check $? "--once CSV of both files named: a row per rank, rank and heaviest first"
"$memtop" --once "$fx/run.rank0.csv" "$fx/three.rank1.csv" >/dev/null 2>"$tmp/e1"; rc=$?
if [ $rc = 2 ] && [ "$(wc -l <"$tmp/e1")" -eq 1 ] &&
    grep -q "^memtop: error: '$fx/three.rank1.csv' is from another run: ranks=3, not 2 as in '$fx/run.rank0.csv'" "$tmp/e1"; then
    ok "files of two runs: one line naming the file, exit 2"
else
    bad "files of two runs: exit $rc, $(cat "$tmp/e1")"
fi
"$memtop" "$fx/run.rank0.csv" "$fx/three.rank1.csv" </dev/null >/dev/null 2>"$tmp/e1"; rc=$?
check "$([ $rc = 2 ] && grep -q "three.rank1.csv' is from another run" "$tmp/e1"; echo $?)" "the same before the screen starts: exit 2"
mkdir -p "$tmp/gap"
sed 's/ rank=1 ranks=3/ rank=0 ranks=3/' "$fx/three.rank1.csv" >"$tmp/gap/run.rank0.csv"
sed 's/ rank=1 ranks=3/ rank=2 ranks=3/' "$fx/three.rank1.csv" >"$tmp/gap/run.rank2.csv"
"$memtop" --once "$tmp/gap/run.csv" >/dev/null 2>"$tmp/e1"; rc=$?
check "$([ $rc = 2 ] && grep -q "^memtop: error: '$tmp/gap/run.rank1.csv' is missing: rank 1 of 3$" "$tmp/e1"; echo $?)" \
    "a rank file missing in the middle: --once names it, exit 2"
start "'$memtop' --no-color --interval 200 '$tmp/gap/run.csv'"
expect "waiting for rank 1: '$tmp/gap/run.rank1.csv' is not there yet" "interactive: a missing rank is waited for"
cp "$fx/three.rank1.csv" "$tmp/gap/run.rank1.csv"
sleep 0.6
expect_not "waiting for rank 1" "interactive: the missing rank is read when it appears"
keys q
# the screen: a rank column, the heaviest marked, r/R choose the rank shown
start "'$memtop' --no-color '$fx/run.csv'"
expect " rank  state     current       peak  predicted   error     weights   gradients   optimizer activations" \
    "rank table: the rank column, totals, each component's peak"
expect "ranks 2, heaviest * rank 1" "rank table: its title names the heaviest"
if screen | grep -Eq '^>\*  1  live +1\.6 MiB +2\.5 MiB +2\.3 MiB +\+11\.2% .* 930\.8 KiB' &&
    screen | grep -Eq '^    0  live +1\.6 MiB +2\.3 MiB'; then
    ok "rank 1 marked '*' (the heaviest) and shown first ('>')"
else
    bad "rank rows: $(screen | grep -E '^[ >][ *] +[01]  ')"
fi
expect "rank 1 of 2 (heaviest)" "the header names the rank the panels show"
keys r
expect "rank 0 of 2  " "r: rank 0's panels"
if screen | grep -Eq '^>   0  live' && table_row activations | grep -q "674.8 KiB"; then
    ok "r: rank 0 selected, its component table"
else
    bad "after r: $(table_row activations)"
fi
keys R
expect "rank 1 of 2 (heaviest)" "R: back to rank 1"
keys h
expect "select the next rank" "help lists r/R"
keys q
rc=$(exit_status)
check "$([ "$rc" = 0 ]; echo $?)" "ranks: q quits with status 0"

# ---------------------------------------------------------------- errors and exit codes
"$memtop" --once >/dev/null 2>"$tmp/e1"; rc=$?
check "$([ $rc = 2 ] && grep -q "^memtop: error: no metrics FILE" "$tmp/e1"; echo $?)" "options but nothing to follow: usage error, exit 2"
"$memtop" --frobnicate x.csv >/dev/null 2>"$tmp/e1"; rc=$?
check "$([ $rc = 2 ] && grep -q "unknown option '--frobnicate'" "$tmp/e1"; echo $?)" "unknown option: exit 2, quoted"
"$memtop" --stale abc x.csv >/dev/null 2>"$tmp/e1"; rc=$?
check "$([ $rc = 2 ] && grep -q "invalid value 'abc' for --stale" "$tmp/e1"; echo $?)" "bad --stale: exit 2, value quoted"
"$memtop" --once "$tmp/missing.csv" >/dev/null 2>"$tmp/e1"; rc=$?
check "$([ $rc = 1 ] && grep -q "cannot read '$tmp/missing.csv': No such file" "$tmp/e1"; echo $?)" "--once on a missing file: exit 1"
"$memtop" "$run" </dev/null >"$tmp/o1" 2>"$tmp/e1"; rc=$?
check "$([ $rc = 1 ] && grep -q "must be a terminal" "$tmp/e1"; echo $?)" "no terminal: exit 1 with a hint at --once"
"$memtop" --plan --model llama-2-7x >/dev/null 2>"$tmp/e1"; rc=$?
check "$([ $rc = 2 ] && grep -q "unknown model 'llama-2-7x'" "$tmp/e1"; echo $?)" "--plan unknown model: exit 2"
"$memtop" --gpu 12XB "$run" >/dev/null 2>"$tmp/e1"; rc=$?
check "$([ $rc = 2 ] && grep -q "'12XB'" "$tmp/e1"; echo $?)" "bad --gpu size: exit 2"
"$memtop" --once --plan --model gpt2 --seq 4096 >/dev/null 2>"$tmp/e1"; rc=$?
check "$([ $rc = 2 ] && grep -q "exceeds" "$tmp/e1"; echo $?)" "--once --plan with an invalid combination: exit 2 and the message"
"$memtop" --help | grep -q "^usage: memtop"
check $? "--help prints usage to stdout"
# a runtime error after the screen started: the terminal is restored first
mkdir -p "$tmp/adir"
start "'$memtop' '$tmp/adir'"
expect "cannot read '$tmp/adir'" "a directory: the error on screen, no crash"
keys q
rc=$(exit_status)
check "$([ "$rc" = 1 ]; echo $?)" "a directory: exit 1 after quitting"
if [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^memtop: error: cannot read" "$tmp/err" && ! grep -q "$(printf '\033')" "$tmp/err"; then
    ok "the error is one plain line after the terminal is restored"
else
    bad "error output: $(cat -v "$tmp/err")"
fi

# ---------------------------------------------------------------- a real memtrain run
if [ -x "$bin/memtrain" ]; then
    "$bin/memplan" estimate --family gpt2 --layers 2 --hidden 64 --heads 2 --vocab 256 --max-pos 64 \
        --seq 32 --batch 2 --framework memtrain --emit memtrain -o "$tmp/plan.cfg" >/dev/null 2>&1 ||
        "$bin/memplan" estimate --family gpt2 --layers 2 --hidden 64 --heads 2 --vocab 256 --max-pos 64 \
            --seq 32 --batch 2 --emit memtrain -o "$tmp/plan.cfg" >/dev/null 2>&1
    check $? "memplan writes a small memtrain config"
    # memtrain --metrics FILE & memtop FILE
    "$bin/memtrain" --config "$tmp/plan.cfg" --steps 300 --metrics "$tmp/live.csv" --quiet >"$tmp/memtrain.log" 2>&1 &
    bgpid=$!
    start "'$memtop' --interval 200 '$tmp/live.csv'"
    wait "$bgpid"
    check $? "memtrain ran to the end"
    bgpid=
    expect "step 300/300" "memtrain & memtop: the last step"
    l=$(table_row weights)
    want=$("$memtop" --once --format json "$tmp/live.csv" | python3 -c "
import json, sys
v = json.load(sys.stdin)['components']['weights']
def f(b):
    return '%.2f GiB' % (b / 2**30) if b >= 2**30 else '%.1f MiB' % (b / 2**20) if b >= 2**20 else '%.1f KiB' % (b / 2**10) if b >= 1024 else '%d B' % b
print(f(v['current']), f(v['peak']), f(v['predicted']) if v['predicted'] is not None else 'N/A')")
    set -- $want
    case $l in *"$1 $2"*"$3 $4"*"$5 $6"*) ok "memtrain: weights on screen match the file ($want)";; *) bad "memtrain weights: '$l' vs '$want'";; esac
    # W: the what-if view on the run's plan, read from its header; W again: back
    keys W
    expect "memtop what-if" "W: the what-if view opens on the run"
    expect "memtrain-gpt2-2x64" "W: the run's model, from its header"
    keys W
    expect "step 300/300" "W again: back to the run"
    keys q
    # memtop -- memtrain
    start "'$memtop' --interval 200 -- '$bin/memtrain' --config '$tmp/plan.cfg' --steps 200 --quiet"
    expect "memtrain exited with status 0" "memtop -- memtrain: ran and exited 0" 20
    expect "step 200/200" "memtop -- memtrain: every step followed"
    expect "+ activations" "memtop -- memtrain: per-component rows"
    expect "skipped 0" "memtop -- memtrain: memtrain's file has no bad lines"
    keys q
    rc=$(exit_status)
    check "$([ "$rc" = 0 ]; echo $?)" "memtop -- memtrain: exit 0"
    # mpirun: memtop run.csv, started before the ranks' files exist, picks them up
    if command -v mpirun >/dev/null && ldd "$bin/memtrain" 2>/dev/null | grep -q libmpi; then
        mpi="mpirun --oversubscribe"
        [ "$(id -u)" = 0 ] && mpi="$mpi --allow-run-as-root"
        mkdir -p "$tmp/dp"
        start "'$memtop' --no-color --interval 200 '$tmp/dp/run.csv'"
        expect "waiting for $tmp/dp/run.csv" "mpirun: memtop waits for the run"
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" $mpi -np 2 "$bin/memtrain" --config "$tmp/plan.cfg" \
            --zero 1 --steps 200 --quiet --metrics "$tmp/dp/run.csv" >"$tmp/mpi.log" 2>&1
        check $? "mpirun -np 2 memtrain --metrics run.csv ran"
        expect "ranks 2, heaviest * rank 0" "mpirun: both ranks' files followed, the heaviest named (a tie: the first)"
        expect "rank 0 of 2 (heaviest)" "mpirun: rank 0's panels"
        if screen | grep -Eq '^ +1  live'; then ok "mpirun: rank 1's row"; else bad "mpirun: no row for rank 1"; fi
        expect "step 200/200" "mpirun: every step"
        keys q
    else
        echo "note: no mpirun or memtrain without MPI: the mpirun part is skipped"
    fi
else
    echo "note: $bin/memtrain not built yet: the real-run part is skipped"
fi

# memtop with no arguments: what it can follow here, and how to start (exit 0)
mkdir -p "$tmp/guide" && cp tests/data/memtop_ranks/run.rank0.csv "$tmp/guide/" && : >"$tmp/guide/other.csv"
top_abs=$(cd "$(dirname "$memtop")" && pwd)/memtop
(cd "$tmp/guide" && "$top_abs" >"$tmp/out" 2>"$tmp/err"); rc=$?
if [ $rc -eq 0 ] && grep -q "memtop run.rank0.csv" "$tmp/out" && ! grep -q "other.csv" "$tmp/out" &&
   grep -q "memtop -- memtrain --config plan.cfg" "$tmp/out"
then ok "memtop alone lists the metrics files here and how to start"; else bad "memtop alone (exit $rc)"; fi
# a FIFO named *.csv is not waited on (no writer would ever come)
if command -v mkfifo >/dev/null 2>&1 && mkfifo "$tmp/guide/pipe.csv" 2>/dev/null; then
    (cd "$tmp/guide" && timeout 10 "$top_abs" >"$tmp/out" 2>"$tmp/err"); rc=$?
    if [ $rc -eq 0 ] && grep -q "memtop run.rank0.csv" "$tmp/out" && ! grep -q "pipe.csv" "$tmp/out"
    then ok "memtop alone skips a FIFO named *.csv without waiting"; else bad "memtop alone with a FIFO (exit $rc)"; fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
