#!/bin/sh
# The preference methods (--method, --reference; issue 34): each TRL trainer's
# batch and reference as settings, checked by arithmetic on sizes computed here
# and by what memplan refuses. The measured check is pairwise_compare.py
# (make check: test-published).
bin=${1:-build/bin}
. tests/lib.sh
mp="$bin/memplan"
one_line_err() { n=$(wc -l <"$tmp/err"); if [ "$n" -eq 1 ]; then ok "one-line error"; else bad "error has $n lines"; fi; }
shape="estimate --framework pytorch-cpu --family llama --layers 4 --hidden 256 --heads 8 --ffn 688 --vocab 4000
       --seq 128 --precision fp32 --checkpointing none --attention eager --ce full --format json"

# DPO with a reference copy holds the model twice: the copy is every parameter in
# fp32 (4 bytes each), here 5,212,416 parameters (the shape's count, read back)
expect 0 "dpo, reference copy" -- "$mp" $shape --batch 2 --method dpo --reference model
cp "$tmp/out" "$tmp/ref.json"
expect 0 "dpo, reference precomputed" -- "$mp" $shape --batch 2 --method dpo --reference precomputed
cp "$tmp/out" "$tmp/pre.json"
expect 0 "sft on the same rows (2 pairs = 4 rows)" -- "$mp" $shape --batch 4
cp "$tmp/out" "$tmp/sft.json"
if python3 - "$tmp/ref.json" "$tmp/pre.json" "$tmp/sft.json" <<'PY'
import json, sys
ref, pre, sft = (json.load(open(p)) for p in sys.argv[1:4])
P = ref["params"]
assert ref["reference_bytes"] == 4 * P, (ref["reference_bytes"], 4 * P)
assert pre["reference_bytes"] == 0 and sft["reference_bytes"] == 0
# the copy is in the weights of every phase: the resident state differs by it alone
assert ref["resident_bytes"] - pre["resident_bytes"] == 4 * P
assert ref["settings"]["method"] == "dpo" and ref["settings"]["reference"] == "model"
assert sft["settings"]["method"] == "sft" and sft["settings"]["reference"] == "none"
names = [p["name"] for p in ref["phases"]]
assert "reference forward" in names and "reference precompute" not in names, names
assert "reference precompute" in [p["name"] for p in pre["phases"]]
# the reference forward holds its own logits beside the policy's: 4 rows x 128 x 4000 in fp32
ph = {p["name"]: p for p in ref["phases"]}
rise = ph["reference forward"]["allocated_bytes"] - ph["forward end"]["allocated_bytes"]
assert rise >= 4 * 128 * 4000 * 4, rise
PY
then ok "the reference copy is 4 bytes a parameter, in every phase; its forward adds its logits"
else bad "the reference copy's bytes"; fi

# --reference defaults to TRL's: a copy for full fine-tuning, the disabled adapter under LoRA
expect 0 "dpo under LoRA: the adapter disabled, no second model" -- "$mp" $shape --batch 2 --method dpo --lora-rank 8
if python3 -c "
import json; d = json.load(open('$tmp/out'))
assert d['settings']['reference'] == 'adapter' and d['reference_bytes'] == 0
assert 'reference forward' in [p['name'] for p in d['phases']]
"; then ok "LoRA's default reference is the adapter disabled"; else bad "LoRA's default reference"; fi
expect 0 "cpo: no reference" -- "$mp" $shape --batch 2 --method cpo
if python3 -c "
import json; d = json.load(open('$tmp/out'))
assert d['settings']['reference'] == 'none' and d['reference_bytes'] == 0
assert 'reference forward' not in [p['name'] for p in d['phases']]
"; then ok "cpo has no reference forward"; else bad "cpo's reference"; fi

# what TRL cannot run is refused, one line each
expect 2 "--reference adapter without LoRA" -- "$mp" estimate --model gpt2 --method dpo --reference adapter
has err "needs --lora-rank"
one_line_err
expect 2 "cpo takes no reference" -- "$mp" estimate --model gpt2 --method cpo --reference model
has err "has no reference model"
expect 2 "dpo needs one" -- "$mp" estimate --model gpt2 --method dpo --reference none
has err "needs reference log-probabilities"
expect 2 "--reference without a preference method" -- "$mp" estimate --model gpt2 --reference precomputed
expect 2 "torchtune's loop is not TRL's" -- "$mp" estimate --model gpt2 --method dpo --framework torchtune
expect 2 "memtrain runs SFT only" -- "$mp" estimate --model gpt2 --method dpo --framework memtrain
expect 2 "a method memplan does not model" -- "$mp" estimate --model gpt2 --method grpo
has err "sft, dpo, ipo, simpo, cpo or orpo"
expect 2 "the emitters write SFT only" -- "$mp" --model gpt2 --gpu 24GB --method dpo --emit hf -o "$tmp/bundle"
has err "has no form in 'hf' yet"
[ -e "$tmp/bundle" ] && bad "a bundle was written" || ok "nothing written"

# the plan counts pairs, names the method and its reference, and weighs the
# reference: on 24 GB the disabled adapter leaves room for QLoRA only, while
# log-probabilities computed before training let LoRA fit (rule 4 ranks it first)
expect 0 "a DPO plan" -- "$mp" --model llama-3.1-8b --gpu 24GB --method dpo
has out "best plan: dpo (reference precomputed) with LoRA"
has out "pair per step"
expect 0 "a DPO plan, TRL's reference pinned" -- "$mp" --model llama-3.1-8b --gpu 24GB --method dpo --reference adapter
has out "best plan: dpo (reference adapter) with QLoRA"
expect 0 "table with --method dpo" -- "$mp" table --model gpt2 --gpus t4,a100-80g --method dpo --format csv
expect 0 "a DPO matrix names a precomputed reference" -- "$mp" table --models llama-3.1-8b,llama-3.2-1b --gpus rtx4090,h100-80g --method dpo
has out "full fine-tuning, 8-bit AdamW, bf16 weights, reference precomputed"
has out "reference precomputed  dpo's reference log-probabilities taken before training"

echo "methods: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
