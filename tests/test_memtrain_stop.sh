#!/bin/sh
# memtrain stopped by SIGINT/SIGTERM (issue 33): the stop is asked between layers, so it
# comes within a second even mid-step; one line on stderr says so; exit 128 + the signal;
# with --save the checkpoint is the last completed step's (an abandoned step leaves nothing:
# resumed, the run's losses equal an uninterrupted run's, bit for bit); the report says
# stopped_by. Also: a plan estimated past a few minutes says so before it starts, and
# memtrain(1)'s examples run in under a minute each.
# (The same over MPI, every rank stopping together: tests/test_memtrain_mpi.sh.)
# usage: tests/test_memtrain_stop.sh [BINDIR]
bin=${1:-build/bin}
. tests/lib.sh
mt="$bin/memtrain" mp="$bin/memplan"
if [ ! -x "$mt" ]; then echo "skip: $mt not built"; echo "stop: 0 passed, 0 failed"; exit 0; fi

# a step of about a second (4 layers, hidden 256, 8 x 256 tokens), its layers a tenth of that
"$mp" estimate --family gpt2 --layers 4 --hidden 256 --heads 4 --vocab 256 --max-pos 256 --seq 256 --batch 8 \
    --framework memtrain --emit memtrain -o "$tmp/m.cfg" >/dev/null || bad "memplan --emit memtrain"

now() { date +%s.%N; }
# stop_run SIGNAL ROWS NAME ARGS...: start memtrain, wait for ROWS metrics rows (steps done)
# and a third of a step more (mid-step), send SIGNAL; $rc, $latency (seconds from the signal
# to the exit), $tmp/NAME.err
stop_run() {
    sig=$1 rows=$2 name=$3; shift 3
    rm -f "$tmp/$name.csv"
    # (a stated fast CPU: no long-run line for the 100000 steps)
    "$mt" --config "$tmp/m.cfg" --steps 100000 --cpu-gflops 1e6 --quiet --metrics "$tmp/$name.csv" "$@" >"$tmp/$name.out" \
        2>"$tmp/$name.err" &
    pid=$!
    i=0
    while :; do
        n=$(grep -c '^"[0-9]' "$tmp/$name.csv" 2>/dev/null)
        [ "${n:-0}" -lt "$rows" ] && [ $i -lt 1200 ] || break
        sleep 0.1; i=$((i + 1))
    done
    sleep 0.3
    t0=$(now)
    kill -"$sig" $pid
    wait $pid
    rc=$?
    latency=$(echo "$(now) - $t0" | bc)
}

stop_run INT 2 nosave --report "$tmp/nosave.json"
echo "     SIGINT mid-step, no --save: exit $rc after $latency s"
if [ $rc -eq 130 ]; then ok "SIGINT: exit 130 (128 + 2)"; else bad "SIGINT: exit $rc, wanted 130"; fi
if [ "$(echo "$latency < 2" | bc)" = 1 ]; then ok "stopped ${latency} s after SIGINT, mid-step (asked between layers)"
else bad "SIGINT took $latency s to stop"; fi
if [ "$(wc -l <"$tmp/nosave.err")" -eq 1 ] && grep -q "^memtrain: SIGINT: stopped .*no checkpoint (--save DIR keeps one); exit status 130$" "$tmp/nosave.err"
then ok "one line on stderr says so"; else bad "stderr: $(cat "$tmp/nosave.err")"; fi
if python3 -c "
import json; d = json.load(open('$tmp/nosave.json'))
assert d['stopped_by'] == 'SIGINT' and d['exit_status'] == 130 and d['steps'] == len(d['losses']) >= 2, d
"; then ok "the report: stopped_by SIGINT, exit_status 130, the completed steps' losses"; else bad "report after SIGINT"; fi

stop_run TERM 3 save --save "$tmp/ck" --report "$tmp/save.json"
echo "     SIGTERM mid-step, --save: exit $rc after $latency s (the checkpoint written included)"
if [ $rc -eq 143 ]; then ok "SIGTERM: exit 143 (128 + 15)"; else bad "SIGTERM: exit $rc, wanted 143"; fi
k=$(python3 -c "import json; print(json.load(open('$tmp/save.json'))['steps'])" 2>/dev/null)
if grep -q "^memtrain: SIGTERM: stopped .*saving the checkpoint of step $k in '$tmp/ck'" "$tmp/save.err"
then ok "says which step the checkpoint holds ($k)"; else bad "stderr: $(cat "$tmp/save.err")"; fi
if [ -n "$k" ] && [ "$k" -ge 3 ]; then
    # the checkpoint is the last completed step's: resumed, bit-identical to a run never stopped
    expect 0 "resume the stopped run for 2 more steps" -- "$mt" --config "$tmp/m.cfg" --steps $((k + 2)) --quiet \
        --resume "$tmp/ck" --report "$tmp/resumed.json"
    expect 0 "the same run, never stopped" -- "$mt" --config "$tmp/m.cfg" --steps $((k + 2)) --quiet \
        --report "$tmp/whole.json"
    if python3 -c "
import json
s = json.load(open('$tmp/save.json'))['losses']; r = json.load(open('$tmp/resumed.json'))['losses']
w = json.load(open('$tmp/whole.json'))['losses']
assert s + r == w, (s, r, w)
"; then ok "stopped at step $k + resumed = never stopped, loss for loss (the abandoned step left nothing)"
    else bad "the losses of the stopped and resumed run differ from the whole run's"; fi
else bad "no completed step before SIGTERM ($k)"; fi

# a signal before the first step: nothing to save, the same status (SIGTERM: a script's
# background job ignores SIGINT until memtrain's handler is set)
"$mt" --config "$tmp/m.cfg" --steps 3 --quiet --save "$tmp/ck0" >"$tmp/out" 2>"$tmp/err" &
pid=$!
kill -TERM $pid
{ wait $pid; } 2>/dev/null
rc=$?
# the signal may land before memtrain's handler is set (then the default: 143 too)
if [ $rc -eq 143 ]; then ok "SIGTERM at once: exit 143"; else bad "SIGTERM at once: exit $rc"; fi
if [ ! -e "$tmp/ck0/manifest.json" ]; then ok "no step taken: no checkpoint written"; else bad "a checkpoint of step 0"; fi

# a long plan says so before it starts, with how to shorten it
expect 0 "a plan past a few minutes (stated rate)" -- "$mt" --config "$tmp/m.cfg" --steps 2 --quiet --cpu-gflops 0.01
has err "memtrain: a long run: "
has err "for 2 steps; to shorten it: fewer --steps, a smaller --batch (8) or --seq (256)"
expect 0 "a short plan is quiet" -- "$mt" --config "$tmp/m.cfg" --steps 1 --quiet
lacks err "a long run"
expect 2 "--cpu-gflops 0 refused" -- "$mt" --config "$tmp/m.cfg" --cpu-gflops 0

# memtrain(1)'s EXAMPLES run as shown, each in under a minute (memplan and memtrain lines;
# mpirun with --oversubscribe where MPI is built)
bin_abs=$(cd "$bin" && pwd)
mkdir "$tmp/ex"
python3 - man/memtrain.1 >"$tmp/ex/cmds" <<'EOP'
import re, sys
text = open(sys.argv[1]).read()
block = text.split(".SH EXAMPLES", 1)[1].split(".EX", 1)[1].split(".EE", 1)[0]
block = block.replace("\\e\n", " ").replace("\\-", "-")
for line in block.splitlines():
    line = " ".join(line.split())
    if line.startswith(("memplan ", "memtrain ", "mpirun ")):
        print(line)
EOP
mpi=no
command -v mpirun >/dev/null && ldd "$mt" 2>/dev/null | grep -q libmpi && mpi=yes
asroot=""; [ "$(id -u)" = 0 ] && asroot="--allow-run-as-root"
nex=0
while IFS= read -r cmd; do
    # under ASan, OpenMPI's allocations kept in components it has unloaded read as leaks at exit
    # (test_memtrain_mpi.sh looks for leaks in memtrain's own frames instead)
    leaks=""; ldd "$mt" 2>/dev/null | grep -q libasan && leaks="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "
    case $cmd in mpirun*) [ $mpi = yes ] || continue; cmd="${leaks}mpirun --oversubscribe $asroot ${cmd#mpirun }" ;; esac
    nex=$((nex + 1))
    t0=$(now)
    (cd "$tmp/ex" && PATH="$bin_abs:$PATH" timeout 60 sh -c "$cmd" >/dev/null 2>"$tmp/ex/err"); rc=$?
    took=$(echo "$(now) - $t0" | bc)
    if [ $rc -eq 0 ]; then ok "memtrain(1) example in $took s: $cmd"; else bad "memtrain(1) example (exit $rc, $took s): $cmd: $(tail -1 "$tmp/ex/err")"; fi
done <"$tmp/ex/cmds"
[ $nex -ge 5 ] || bad "memtrain(1)'s EXAMPLES: $nex commands found"

echo "stop: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
