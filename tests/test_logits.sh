#!/bin/sh
# --logits (issue 35 item 2): what the loss keeps per logit, memplan's term
# against the bytes measured at the allocator for the same kind of loss
# (tests/validation/logits_loss_probe.csv: PyTorch 1.13 on the CPU, 4 rows x
# 128 positions x 4000 entries), bf16 logits (mixed-bf16: no autocast) and fp32.
bin=${1:-build/bin}
. tests/lib.sh
mp="$bin/memplan"
if python3 - "$mp" tests/validation/logits_loss_probe.csv <<'PY'
import csv, json, subprocess, sys
mp, probe = sys.argv[1], sys.argv[2]
rows = [r for r in csv.DictReader(open(probe)) if (r["rows"], r["seq"], r["vocab"]) == ("4", "128", "4000")]
assert len(rows) == 6, len(rows)
bad = []
for r in rows:
    prec = "mixed-bf16" if r["dtype"] == "bf16" else "fp32"
    out = subprocess.run([mp, "estimate", "--framework", "pytorch-cpu", "--family", "llama", "--layers", "2",
                          "--hidden", "128", "--heads", "4", "--ffn", "344", "--vocab", "4000", "--batch", "4",
                          "--seq", "128", "--precision", prec, "--checkpointing", "none", "--attention", "eager",
                          "--ce", "full", "--logits", r["kind"], "--explain", "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    n = 4 * 128 * 4000
    fwd = [t for t in d["terms"] if t["name"] == "logits and loss"][0]["bytes"] / n
    ph = {p["name"]: p["allocated_bytes"] for p in d["phases"]}
    total = fwd + max(0.0, (ph["loss backward"] - ph["forward end"]) / n)
    want_fwd, want_bwd = float(r["fwd_peak"]), float(r["bwd_peak"])
    # the loss's own peak within 2%; its backward's, where it is above the forward's, within 5%
    if abs(fwd - want_fwd) > 0.02 * want_fwd:
        bad.append(f"{r['dtype']} {r['kind']}: forward {fwd:.2f} bytes a logit, measured {want_fwd:.2f}")
    if want_bwd > want_fwd and abs(total - want_bwd) > 0.05 * want_bwd:
        bad.append(f"{r['dtype']} {r['kind']}: backward {total:.2f} bytes a logit, measured {want_bwd:.2f}")
    print(f"  {r['dtype']:5} {r['kind']:13} forward {fwd:5.2f} (measured {want_fwd:5.2f})  "
          f"backward {total:5.2f} (measured {want_bwd:5.2f}) bytes a logit")
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY
then ok "--logits: the loss's bytes a logit are the measured ones (forward 2%, backward 5%)"
else bad "--logits against the measured bytes"; fi

expect 2 "--logits under torchtune's own loss" -- "$mp" estimate --model gpt2 --framework torchtune --logits fp32
has err "takes the logits its own way"
expect 2 "--logits with a preference method" -- "$mp" estimate --model gpt2 --method dpo --logits model
expect 0 "--logits stack is the profile's" -- "$mp" estimate --model gpt2 --logits stack --format json
cp "$tmp/out" "$tmp/stack.json"
expect 0 "--logits fp32 is the hf profile's on the pytorch profile" -- "$mp" estimate --model gpt2 --logits fp32 --format json
if python3 -c "
import json
a, b = json.load(open('$tmp/stack.json')), json.load(open('$tmp/out'))
assert a['allocated_bytes'] == b['allocated_bytes']
"; then ok "the pytorch profile takes the logits as transformers' loss does (fp32 copy)"; else bad "stack vs fp32"; fi

echo "logits: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
