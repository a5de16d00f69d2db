#!/bin/sh
# --checkpoint-every (issue 35 item 1): torchtitan's layer SAC as a setting; the
# measured check is measured_compare.py (make check: test-published).
bin=${1:-build/bin}
. tests/lib.sh
mp="$bin/memplan"
one="estimate --model llama-3.2-1b --batch 4 --seq 2048 --precision amp-bf16 --format json"
expect 0 "no checkpointing" -- "$mp" $one --checkpointing none
cp "$tmp/out" "$tmp/none.json"
expect 0 "every block" -- "$mp" $one --checkpointing full
cp "$tmp/out" "$tmp/full.json"
expect 0 "every block, said so" -- "$mp" $one --checkpointing full --checkpoint-every 1
cp "$tmp/out" "$tmp/one.json"
expect 0 "every 2nd block" -- "$mp" $one --checkpointing full --checkpoint-every 2
cp "$tmp/out" "$tmp/two.json"
expect 0 "no block of its 16 (N past the count)" -- "$mp" $one --checkpointing full --checkpoint-every 17
cp "$tmp/out" "$tmp/past.json"
if python3 - "$tmp" <<'PY'
import json, sys
d = {k: json.load(open(f"{sys.argv[1]}/{k}.json")) for k in ("none", "full", "one", "two", "past")}
a = {k: v["allocated_bytes"] for k, v in d.items()}
assert a["one"] == a["full"], a
assert a["full"] < a["two"] < a["none"], a
assert d["two"]["settings"]["checkpoint-every"] == 2 and d["full"]["settings"]["checkpoint-every"] == 1
# none checkpointed: what no checkpointing saves, without the recomputation
assert abs(a["past"] - a["none"]) / a["none"] < 0.01, a
PY
then ok "every 2nd block sits between all and none; past the count, none is checkpointed"
else bad "--checkpoint-every against all and none"; fi
expect 2 "without full checkpointing" -- "$mp" estimate --model gpt2 --checkpoint-every 2
has err "needs --checkpointing full"
expect 2 "with activation offloading" -- "$mp" estimate --model gpt2 --checkpointing full --checkpoint-every 2 --offload-activations --framework torchtune
expect 2 "no emitter writes it" -- "$mp" --model gpt2 --gpu 24GB --checkpointing full --checkpoint-every 2 --emit hf -o "$tmp/b"
has err "has no form in 'hf' yet"
expect 0 "a plan says it" -- "$mp" --model gpt2 --gpu 24GB --checkpointing full --checkpoint-every 2
has out "full checkpointing (one block in 2)"
echo "ckpt-every: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
