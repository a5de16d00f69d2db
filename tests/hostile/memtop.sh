#!/bin/sh
# tests/hostile/memtop.sh BIN — memtop against what a stranger's metrics file or command can
# hold (issue 36): escape sequences in a header, a file's or a command's name (never raw on
# the terminal: --once text, CSV, JSON, the screen), a same-size rewrite and a directory in
# the file's place (followed, the error gone once the file is back), counts out of range
# (refused by name), and every row of memtop(1)'s EXIT STATUS that can be produced, the
# temporary directory of '-- COMMAND' gone each time. The screen's cases run in tmux
# (skipped without it). Prints "hostile memtop: N passed, M failed"; exits 1 on a failure.
bin=${1:-build/bin}
case $bin in /*) ;; *) bin="$(pwd)/$bin" ;; esac
. tests/lib.sh
memtop="$bin/memtop"
root=$(pwd)
# memtop -- COMMAND makes its directory here: what is left after each case is seen
mkdir -p "$tmp/td"
export TMPDIR="$tmp/td"
ESC=$(printf '\033')

# ascii out|err: only printable ASCII and newlines (each input below is ASCII but for its
# control bytes, so an escaped output is ASCII): no raw control byte reached the terminal
ascii() {
    if LC_ALL=C grep -qaP '[^\x0a\x20-\x7e]' "$tmp/$1"; then
        bad "$1 has a raw control byte: $(LC_ALL=C grep -naP '[^\x0a\x20-\x7e]' "$tmp/$1" | head -2 | od -c | head -3)"
    else ok "$1: no raw control byte"; fi
}
one_line() { n=$(wc -l <"$tmp/err"); if [ "$n" -eq 1 ]; then ok "one line on stderr"; else bad "stderr has $n lines: $(head -3 "$tmp/err")"; fi; }
empty() { if [ -s "$tmp/$1" ]; then bad "$1 is not empty: $(head -2 "$tmp/$1")"; else ok "$1 is empty"; fi; }
no_tmpdir() { if [ -n "$(ls -A "$tmp/td")" ]; then bad "$1: left $(ls -A "$tmp/td")"; rm -rf "$tmp/td"/*; else ok "$1: no temporary directory left"; fi; }

H="step,time_s,loss,cur_total,peak_total,pred_total"
# good FILE MODEL [SETTINGS]: a small valid metrics file with 3 rows
good() {
    printf '# memtrain metrics v1\n# model: %s\n# settings: %s\n# steps: 10\n# budget_bytes: 0\n# device: cpu\n%s\n' \
        "$2" "${3:-batch=2 seq=32}" "$H" >"$1"
    printf '1,0.1,5.5,1000,1200,1100\n2,0.2,5.1,1000,1300,1100\n3,0.3,4.9,1000,1400,1100\n' >>"$1"
}

# ------------------------------------------------ 1. escape sequences never reach the terminal
evil="$tmp/evil.csv"
printf '# memtrain metrics v1\n# model: m\033]2;PWNED\007\233[2J\177\302\233x\n# settings: batch=8 k\033[31m=v\033[0m seq=4\n# device: cuda\033[2J\n# steps: 10\nstep,cur_total,peak_total,bad\033[5mcol\n1,100,150,x\n2,200,250,y\n3,1\033[6n,300,z\n' >"$evil"
expect 0 "--once --format text of a header full of escape sequences" -- "$memtop" --once --format text "$evil"
ascii out
has out 'model m\x1b]2;PWNED\x07\x9b[2J\x7f\u{009b}x'
has out 'settings batch=8 k\x1b[31m=v\x1b[0m seq=4'
has out "skipped 1 (cur_total '1\\x1b[6n': not a byte count"
expect 0 "--once --format csv of the same" -- "$memtop" --once --format csv "$evil"
ascii out
if python3 -c "
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))
assert len(r) == 1 and r[0]['device'] == 'cuda\\\\x1b[2J' and r[0]['settings'] == 'batch=8 k\\\\x1b[31m=v\\\\x1b[0m seq=4', r
" "$tmp/out"; then ok "CSV: one record, fields quoted and escaped"; else bad "CSV of the hostile file: $(cat "$tmp/out")"; fi
expect 0 "--once --format json of the same" -- "$memtop" --once --format json "$evil"
ascii out
if python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['device'] == 'cuda\x1b[2J', d['device']                      # valid UTF-8: the data, JSON-escaped
assert d['model'] == 'm\\\\x1b]2;PWNED\\\\x07\\\\x9b[2J\\\\x7f\\\\u{009b}x', d['model']   # malformed: cleaned
assert d['settings']['k\x1b[31m'] == 'v\x1b[0m', d['settings']
" "$tmp/out"; then ok "JSON: parses; valid text kept as data, malformed UTF-8 cleaned, the model not dropped"; else bad "JSON of the hostile file: $(head -8 "$tmp/out")"; fi

# a file's name and a command's name are text from outside too
expect 1 "a missing file named with an escape sequence" -- "$memtop" --once "$tmp/a${ESC}[2Jb.csv"
one_line
ascii err
has err "cannot read '$tmp/a\\x1b[2Jb.csv'"
expect 127 "a command named with an escape sequence that is not there" -- "$memtop" --once -- "$tmp/ev${ESC}]2;X"
one_line
ascii err
has err "cannot run '$tmp/ev\\x1b]2;X': No such file"
no_tmpdir "a command that is not there"
# a command's log (its last line is shown) is the command's to write
expect 5 "a failing command whose last line is an escape sequence" -- "$memtop" --once -- sh -c 'printf "boom\033]2;OWNED\007\n"; exit 5' sh
one_line
ascii err
has err 'its last line: boom\x1b]2;OWNED\x07'
no_tmpdir "a failing command"

# a config's name (--plan --hf-config): the model is named by the file
python3 -c "
import json, sys
d = json.load(open('tests/data/gpt2-config.json'))
d['_name_or_path'] = 'evil\x1b]2;PWNED\x07\u009b[2J\x7fname'
json.dump(d, open(sys.argv[1], 'w'))
" "$tmp/hf.json"
expect 0 "--plan --once --format csv of a config whose name has escape sequences" -- "$memtop" --once --plan --hf-config "$tmp/hf.json" --format csv
ascii out
expect 0 "--plan --once --format json of the same" -- "$memtop" --once --plan --hf-config "$tmp/hf.json"
ascii out

# ------------------------------------------------ 4. counts read back: range-checked, named when bad
mkdir -p "$tmp/big"
for k in 0 1; do good "$tmp/big/run.rank$k.csv" gpt2 "zero=1 rank=$k ranks=4294967298"; done
expect 2 "ranks=4294967298 (2^32 + 2, which an int makes 2): refused" -- "$memtop" --once "$tmp/big/run.csv"
one_line
has err "run.rank0.csv': ranks=4294967298: not a number of ranks"
empty out
expect 2 "the same for the screen: refused before it starts" -- "$memtop" "$tmp/big/run.csv"
one_line
has err "ranks=4294967298"
good "$tmp/zero.csv" gpt2 "batch=2 zero=4294967296"
expect 2 "zero=4294967296 (0 as an int) in one file: refused" -- "$memtop" --once --format text "$tmp/zero.csv"
one_line
has err "zero.csv': zero=4294967296: not a ZeRO stage (0 to 3)"
empty out
good "$tmp/steps.csv" gpt2
sed -i 's/^# steps: 10$/# steps: 18446744073709551626/' "$tmp/steps.csv"
expect 2 "steps 2^64 + 10 (10 as a uint64): refused" -- "$memtop" --once "$tmp/steps.csv"
one_line
has err "steps '18446744073709551626': not a number of steps"
good "$tmp/bytes.csv" gpt2
echo "4,0.4,4.5,9007199254740993,1500,1100" >>"$tmp/bytes.csv"
expect 0 "a row's byte count of 2^53 + 1: the row skipped, the rest shown" -- "$memtop" --once --format text "$tmp/bytes.csv"
has out "rows 3  skipped 1 (cur_total '9007199254740993': not a byte count (a whole number, 0 to 9007199254740992))"

# ------------------------------------------------ 3. exit statuses (memtop(1), EXIT STATUS)
good "$tmp/ok.csv" gpt2
expect 0 "0: a snapshot printed" -- "$memtop" --once "$tmp/ok.csv"
expect 0 "0: -- COMMAND that wrote its metrics and exited 0" -- "$memtop" --once -- sh -c 'cp "$0" "$2"' "$tmp/ok.csv"
has out '"step": 3'
empty err
no_tmpdir "0: -- COMMAND"
# what a command leaves in its directory goes with it; a link is removed, never followed
echo keep >"$tmp/outside"
expect 0 "0: -- COMMAND that leaves a tree and links out of its directory" -- "$memtop" --once -- sh -c \
    'cp "$0" "$3"; d=${3%/*}; mkdir -p "$d/a/b/c"; echo x >"$d/a/b/c/f"; ln -s "$1" "$d/link"; ln -s "${1%/*}" "$d/a/up"' \
    "$tmp/ok.csv" "$tmp/outside"
no_tmpdir "a tree and links"
if [ "$(cat "$tmp/outside" 2>/dev/null)" = keep ] && [ -f "$tmp/ok.csv" ]; then ok "the files the links named are untouched"; else bad "a link was followed: $(ls "$tmp")"; fi
expect 1 "1: a file that cannot be read" -- "$memtop" --once "$tmp/none.csv"
one_line
expect 1 "1: -- COMMAND exited 0 but wrote no metrics" -- "$memtop" --once -- true
one_line
has err "cannot read '$tmp/td/memtop."
no_tmpdir "1: -- COMMAND without metrics"
expect 2 "2: bad usage" -- "$memtop" --once --frobnicate "$tmp/ok.csv"
one_line
printf '#!/bin/sh\nexit 0\n' >"$tmp/not-executable"
expect 126 "126: -- COMMAND that is there but cannot be run" -- "$memtop" --once -- "$tmp/not-executable"
one_line
has err "cannot run '$tmp/not-executable': Permission denied"
no_tmpdir "126"
expect 127 "127: -- COMMAND not found" -- "$memtop" --once -- no-such-command-anywhere
one_line
has err "cannot run 'no-such-command-anywhere': No such file or directory"
no_tmpdir "127"
expect 127 "127 on the screen's path too (refused before it starts)" -- "$memtop" -- no-such-command-anywhere
no_tmpdir "127, screen"
expect 3 "N: -- COMMAND exited 3: its status, its metrics still printed" -- "$memtop" --once -- sh -c 'cp "$0" "$2"; echo last-words; exit 3' "$tmp/ok.csv"
one_line
has err "memtop: error: sh exited with status 3; its last line: last-words"
has out '"step": 3'
no_tmpdir "3"
expect 4 "N: -- COMMAND exited 4 without metrics: its status, not memtop's 1" -- "$memtop" --once -- sh -c 'exit 4'
one_line
has err "sh exited with status 4"
no_tmpdir "4"
expect 137 "128+9: -- COMMAND killed by SIGKILL" -- "$memtop" --once -- sh -c 'kill -KILL $$'
one_line
has err "sh killed by signal 9"
no_tmpdir "137"
# memtop itself ended by a signal while its command runs: the command stopped, the directory removed
for sig in INT:130 TERM:143 HUP:129; do
    name=${sig%:*} want=${sig#*:}
    "$memtop" --once -- sh -c 'echo $$ >"$0"; exec sleep 60' "$tmp/cmd.pid" >"$tmp/out" 2>"$tmp/err" &
    mpid=$!
    n=0; while [ ! -s "$tmp/cmd.pid" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
    sleep 0.2
    kill -"$name" "$mpid"
    wait "$mpid"; rc=$?
    cpid=$(cat "$tmp/cmd.pid" 2>/dev/null); rm -f "$tmp/cmd.pid"
    if [ $rc -eq "$want" ]; then ok "$want: memtop --once got SIG$name (exit $rc)"; else bad "SIG$name: exit $rc, wanted $want"; fi
    one_line
    has err "stopped sh (pid"
    if [ -n "$cpid" ] && ! kill -0 "$cpid" 2>/dev/null; then ok "SIG$name: the command is gone"; else bad "SIG$name: the command $cpid still runs"; kill "$cpid" 2>/dev/null; fi
    no_tmpdir "SIG$name"
done

# ------------------------------------------------ the screen (tmux): 1, 2 and 3 interactively
if ! command -v tmux >/dev/null 2>&1; then
    echo "skip the screen's cases: no tmux"
else
    sock="$tmp/tmux.sock"
    T() { tmux -S "$sock" "$@"; }
    T new-session -d -s keep -x 120 -y 40 "sleep 86400"
    screen() { T capture-pane -p -t mt 2>/dev/null; }
    start() {
        T kill-session -t mt 2>/dev/null
        rm -f "$tmp/rc" "$tmp/err"
        T new-session -d -s mt -x 120 -y 40 "cd '$root' && TMPDIR='$TMPDIR' $* 2>'$tmp/err'; echo \$? >'$tmp/rc'; sleep 30"
    }
    wait_for() {
        n=$(( ${2:-10} * 10 ))
        while [ $n -gt 0 ]; do screen | grep -qF -- "$1" && return 0; sleep 0.1; n=$((n - 1)); done
        return 1
    }
    on_screen() { if wait_for "$1" "${3:-10}"; then ok "$2"; else bad "$2: '$1' not on screen"; screen | sed 's/^/    | /' | head -12; fi; }
    gone() {
        n=30
        while [ $n -gt 0 ] && screen | grep -qF -- "$1"; do sleep 0.1; n=$((n - 1)); done
        if screen | grep -qF -- "$1"; then bad "$2: '$1' still on screen"; else ok "$2"; fi
    }
    status() { n=100; while [ ! -s "$tmp/rc" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done; cat "$tmp/rc" 2>/dev/null || echo none; }

    # 1: the header's escape sequences drawn as text; the pane's title untouched
    T select-pane -t keep -T clean-title 2>/dev/null
    start "'$memtop' --no-color --interval 200 '$evil'"
    on_screen 'm\x1b]2;PWNED\x07\x9b[2J' "screen: the model drawn escaped"
    on_screen 'k\x1b[31m=v\x1b[0m' "screen: the settings drawn escaped"
    if [ "$(T display-message -p -t mt '#{pane_title}')" != PWNED ]; then ok "screen: the title was not set by the file"; else bad "the file set the terminal's title"; fi
    T send-keys -t mt q
    rc=$(status)
    if [ "$rc" = 0 ]; then ok "0: q quits"; else bad "q: exit $rc"; fi

    # 2: a same-size rewrite that leaves the last 64 bytes alone is followed
    good "$tmp/same.csv" gpt2
    start "'$memtop' --no-color --interval 200 '$tmp/same.csv'"
    on_screen "model gpt2" "rewrite: the first model"
    python3 -c "
import sys
p = sys.argv[1]
t = open(p, 'rb').read()
with open(p, 'r+b') as f: f.write(t.replace(b'gpt2', b'gpt3'))
" "$tmp/same.csv"
    on_screen "model gpt3" "rewrite: the same size, only the header changed: reread"
    on_screen "resets 1 (rewritten)" "rewrite: counted as a reset"
    T send-keys -t mt q
    status >/dev/null

    # 2: a directory in the file's place: the error goes as soon as the file is back, no key pressed
    mkdir "$tmp/flip.csv"
    start "'$memtop' --no-color --interval 200 '$tmp/flip.csv'"
    on_screen "cannot read '$tmp/flip.csv': Is a directory" "a directory: the error on screen"
    rmdir "$tmp/flip.csv"
    good "$tmp/flip.csv" gpt2
    on_screen "step 3/10" "the file in its place: read"
    gone "Is a directory" "the file in its place: the error gone without a key"
    T send-keys -t mt q
    rc=$(status)
    if [ "$rc" = 0 ] && [ ! -s "$tmp/err" ]; then ok "0: quit after the file came back, no error"; else bad "after the file came back: exit $rc, $(cat "$tmp/err")"; fi

    # 3: -- COMMAND on the screen: its failure is memtop's status; SIGTERM stops it, 143
    start "'$memtop' --no-color --interval 200 -- sh -c 'echo bye; exit 6'"
    on_screen "sh exited with status 6" "screen: the command's status shown"
    T send-keys -t mt q
    rc=$(status)
    if [ "$rc" = 6 ]; then ok "6: the failed command's status after q"; else bad "failed command: exit $rc"; fi
    if grep -q "^memtop: error: sh exited with status 6; its last line: bye$" "$tmp/err" && [ "$(wc -l <"$tmp/err")" = 1 ]; then
        ok "one line naming the command's status"; else bad "stderr: $(cat "$tmp/err")"; fi
    no_tmpdir "screen, failed command"
    start "'$memtop' --no-color --interval 200 -- sh -c 'exec sleep 60'"
    on_screen "sh running (pid" "screen: a long command runs"
    cpid=$(screen | sed -n 's/.*sh running (pid \([0-9]*\)).*/\1/p' | head -1)
    mpid=$(pgrep -f "$memtop --no-color --interval 200 -- sh" | head -1)
    [ -n "$mpid" ] && kill -TERM "$mpid"
    rc=$(status)
    if [ "$rc" = 143 ]; then ok "143: SIGTERM on the screen"; else bad "SIGTERM on the screen: exit $rc"; fi
    if [ -n "$cpid" ] && ! kill -0 "$cpid" 2>/dev/null; then ok "SIGTERM: the command is gone"; else bad "SIGTERM: the command '$cpid' still runs"; fi
    has err "memtop: Terminated; stopped sh (pid"
    no_tmpdir "screen, SIGTERM"
    T kill-server 2>/dev/null
fi

echo "hostile memtop: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
