#!/bin/sh
# tests/test_memtrain_dpo.sh BIN — memtrain runs the preference methods (issue 34): each
# plan is written by `memplan estimate --method M --framework memtrain --emit memtrain`,
# memtrain trains it, and what its allocator measured, component by component (--report),
# is compared with memplan's estimate of the same plan, as tests/validate.sh compares every
# run (each component within 1%, the total within 2%); memtrain's own prediction is
# memplan's, byte for byte. The first step's loss is the method's at a policy equal to its
# reference (dpo: -logsigmoid(0) = log 2; ipo: (0 - 1/(2 beta))^2 = 25 at beta 0.1); a reward
# model's (a C x 1 score head, --method reward) depends on its initial scores (its value is
# tests/validation/memtrain_dpo_loss.py's to check), and its logits are rows x T x 1. Then
# what is refused, in one line, by both programs alike.
bin=${1:-build/bin}
. tests/lib.sh
mp="$bin/memplan" mt="$bin/memtrain"
one_line_err() { n=$(wc -l <"$tmp/err"); if [ "$n" -eq 1 ]; then ok "$1: one line"; else bad "$1: $n lines"; fi; }

g="--family gpt2 --layers 2 --hidden 128 --heads 4 --vocab 2048 --max-pos 64 --seq 64 --batch 2"
l="--family llama --layers 2 --hidden 128 --heads 4 --kv-heads 2 --vocab 2048 --seq 64 --batch 2"
cat >"$tmp/configs" <<EOC
dpo-model|$g --method dpo --precision fp32
dpo-model-bf16-flash-chunked|$l --method dpo --reference model --precision mixed-bf16 --attention flash --ce chunked --ce-chunk 32
dpo-adapter|$l --method dpo --lora-rank 4 --lora-targets q,v --precision fp32
ipo-adapter-qlora|$l --method ipo --lora-rank 4 --quant nf4 --precision mixed-bf16 --checkpointing full
simpo|$g --method simpo --precision fp32 --checkpointing selective
cpo|$l --method cpo --precision mixed-bf16 --ce chunked --ce-chunk 32
orpo|$g --method orpo --precision fp32 --optimizer adamw-8bit
reward|$g --method reward --precision fp32
reward-bf16-flash-full|$l --method reward --precision mixed-bf16 --attention flash --checkpointing full
reward-fp16-chunked|$l --method reward --precision mixed-fp16 --ce chunked --ce-chunk 32 --optimizer sgd-momentum
EOC
while IFS='|' read -r name flags; do
    # shellcheck disable=SC2086
    if "$mp" estimate $flags --framework memtrain --emit memtrain -o "$tmp/$name.cfg" >/dev/null 2>"$tmp/err" &&
        "$mp" estimate $flags --framework memtrain --format json >"$tmp/$name.plan.json" 2>>"$tmp/err"; then
        ok "$name: planned and written"
    else bad "$name: $(head -1 "$tmp/err")"; continue; fi
    if "$mt" --config "$tmp/$name.cfg" --steps 2 --quiet --report "$tmp/$name.run.json" 2>"$tmp/err" </dev/null
    then ok "$name: memtrain runs it"; else bad "$name: memtrain: $(head -1 "$tmp/err")"; fi
done <"$tmp/configs"

python3 - "$tmp" "$tmp/configs" >"$tmp/checks" <<'PY'
import json, math, sys
tmp, configs = sys.argv[1], sys.argv[2]
comps = ["weights", "gradients", "optimizer", "activations", "overhead"]
failed = 0
def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    failed += not cond
for line in open(configs):
    name = line.split("|")[0]
    try:
        run = json.load(open("%s/%s.run.json" % (tmp, name)))
        plan = json.load(open("%s/%s.plan.json" % (tmp, name)))
    except (OSError, ValueError) as e:
        check(False, "%s: the report and the estimate are read (%s)" % (name, e))
        continue
    m, p = run["measured"], plan["components"]
    errs = {c: 100.0 * (m[c] - p[c]) / p[c] if p[c] else (0.0 if m[c] == 0 else 100.0) for c in comps}
    tot = 100.0 * (run["measured_peak_bytes"] - plan["allocated_bytes"]) / plan["allocated_bytes"]
    check(all(abs(e) <= 1.0 for e in errs.values()) and abs(tot) <= 2.0,
          "%s: measured against memplan: %s, total %+.2f%% (targets 1%%, 2%%)"
          % (name, ", ".join("%s %+.2f%%" % (c, errs[c]) for c in comps), tot))
    check(run["predicted"] == p and run["predicted_peak_bytes"] == plan["allocated_bytes"],
          "%s: memtrain's own prediction is memplan's, byte for byte" % name)
    method = run["settings"]["method"]
    first = run["losses"][0]
    if method == "dpo":
        check(abs(first - math.log(2)) < 1e-6, "%s: the first loss is log 2 (%.7f)" % (name, first))
    elif method == "ipo":
        beta = run["settings"]["beta"]
        want = (1 / (2 * beta)) ** 2
        check(abs(first - want) < 1e-5 * want, "%s: the first loss is (1/(2 beta))^2 = %g (%.5f)" % (name, want, first))
    elif method == "reward":
        check(math.isfinite(first) and first > 0, "%s: the first loss %.4f is finite" % (name, first))
        check(m["activations"] == p["activations"] and plan["logits_bytes"] == 4 * 4 * 64,
              "%s: the logits are rows x T x 1 fp32 (%d bytes)" % (name, plan["logits_bytes"]))
    else:
        check(math.isfinite(first) and first > 0, "%s: the first loss %.4f is finite" % (name, first))
    check(all(math.isfinite(x) for x in run["losses"]), "%s: the losses are finite (%s)"
          % (name, ", ".join("%.4f" % x for x in run["losses"])))
sys.exit(1 if failed else 0)
PY
cat "$tmp/checks"
pass=$((pass + $(grep -c '^ok ' "$tmp/checks"))); fail=$((fail + $(grep -c '^FAIL' "$tmp/checks")))
[ -s "$tmp/checks" ] || bad "the comparison did not run"

# refused alike by memplan's memtrain prediction and by memtrain, one line each
sed -e 's/^lora-rank = .*/lora-rank = 4/' -e 's/^reference = .*/reference = model/' "$tmp/dpo-model.cfg" >"$tmp/bad.cfg"
expect 2 "memtrain: reference model with LoRA" -- "$mt" --config "$tmp/bad.cfg" --steps 1
has err "runs reference = adapter"
one_line_err "memtrain: reference model with LoRA"
# shellcheck disable=SC2086
expect 2 "memplan: the same plan" -- "$mp" estimate $l --method dpo --reference model --lora-rank 4 --framework memtrain
has err "runs reference = adapter"
one_line_err "memplan: reference model with LoRA"
# shellcheck disable=SC2086
expect 2 "memplan: dpo precomputed under memtrain" -- "$mp" estimate $g --method dpo --reference precomputed --framework memtrain
has err "precomputed"
one_line_err "memplan: precomputed"
sed 's/^method = .*/method = simpo/' "$tmp/dpo-model.cfg" >"$tmp/bad.cfg"
expect 2 "memtrain: simpo with a reference model" -- "$mt" --config "$tmp/bad.cfg" --steps 1
has err "takes no reference"
one_line_err "memtrain: simpo with a reference"
sed 's/^reference = .*/reference = model/' "$tmp/reward.cfg" >"$tmp/bad.cfg"
expect 2 "memtrain: reward with a reference model" -- "$mt" --config "$tmp/bad.cfg" --steps 1
has err "method reward takes no reference"
one_line_err "memtrain: reward with a reference"
# shellcheck disable=SC2086
expect 2 "memplan: reward with a reference" -- "$mp" estimate $g --method reward --reference model --framework memtrain
has err "method reward takes no reference"
one_line_err "memplan: reward with a reference"
sed 's/^lora-rank = .*/lora-rank = 4/' "$tmp/reward.cfg" >"$tmp/bad.cfg"
expect 2 "memtrain: reward under LoRA" -- "$mt" --config "$tmp/bad.cfg" --steps 1
has err "score head"
one_line_err "memtrain: reward under LoRA"
# shellcheck disable=SC2086
expect 2 "memplan: reward under LoRA" -- "$mp" estimate $l --method reward --lora-rank 4 --framework memtrain
has err "score head"
one_line_err "memplan: reward under LoRA"
# torchtune has no form for a preference plan (the hf bundle writes TRL's trainers)
# shellcheck disable=SC2086
expect 2 "memplan: --emit torchtune of a dpo plan" -- "$mp" estimate $g --method dpo --emit torchtune -o "$tmp/tt"
has err "torchtune"

# data parallel: 2 ranks of 1 pair train as one process of 2 pairs (a rank holds whole pairs)
if command -v mpirun >/dev/null && ldd "$mt" 2>/dev/null | grep -q libmpi && ! ldd "$mt" | grep -q libasan; then
    mpi="mpirun --oversubscribe"
    [ "$(id -u)" = 0 ] && mpi="$mpi --allow-run-as-root"
    # shellcheck disable=SC2086
    "$mp" estimate $g --method dpo --batch 1 --gpus 2 --zero 1 --framework memtrain --emit memtrain -o "$tmp/dp.cfg" >/dev/null
    # shellcheck disable=SC2086
    $mpi -np 2 "$mt" --config "$tmp/dp.cfg" --steps 3 --quiet --report "$tmp/dp.json" >/dev/null 2>"$tmp/err" </dev/null
    "$mt" --config "$tmp/dpo-model.cfg" --steps 3 --quiet --report "$tmp/one.json" >/dev/null 2>>"$tmp/err" </dev/null
    if python3 - "$tmp/dp.json" "$tmp/one.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["losses"] for p in sys.argv[1:3])
sys.exit(0 if len(a) == 3 and all(abs(x - y) <= 1e-5 * abs(y) for x, y in zip(a, b)) else 1)
PY
    then ok "dpo on 2 ranks x 1 pair, ZeRO-1: the losses of one process with 2 pairs"
    else bad "dpo data parallel: $(head -1 "$tmp/err")"; fi
    # the reward model's score head among ZeRO-2's reduce-scattered outer gradients
    # shellcheck disable=SC2086
    "$mp" estimate $g --method reward --batch 1 --gpus 2 --zero 2 --framework memtrain --emit memtrain -o "$tmp/dp.cfg" >/dev/null
    # shellcheck disable=SC2086
    $mpi -np 2 "$mt" --config "$tmp/dp.cfg" --steps 3 --quiet --report "$tmp/dp.json" >/dev/null 2>"$tmp/err" </dev/null
    "$mt" --config "$tmp/reward.cfg" --steps 3 --quiet --report "$tmp/one.json" >/dev/null 2>>"$tmp/err" </dev/null
    if python3 - "$tmp/dp.json" "$tmp/one.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["losses"] for p in sys.argv[1:3])
sys.exit(0 if len(a) == 3 and all(abs(x - y) <= 1e-5 * abs(y) for x, y in zip(a, b)) else 1)
PY
    then ok "reward on 2 ranks x 1 pair, ZeRO-2: the losses of one process with 2 pairs"
    else bad "reward data parallel: $(head -1 "$tmp/err")"; fi
fi
echo "memtrain-dpo: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
