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
expect 2 "torchtune has no IPO recipe" -- "$mp" estimate --model gpt2 --method ipo --framework torchtune
has err "has no torchtune recipe"
one_line_err
expect 2 "torchtune runs no precomputed reference" -- "$mp" estimate --model gpt2 --method dpo --framework torchtune --reference precomputed
has err "run the reference every step"
expect 2 "torchtune's LoRA DPO disables the adapter" -- "$mp" estimate --model gpt2 --method dpo --framework torchtune --lora-rank 8 --reference model
has err "disable_adapter"
expect 2 "torchtune's DPO takes the whole logits" -- "$mp" estimate --model gpt2 --method dpo --framework torchtune --ce chunked
has err "get_batch_log_probs"
expect 2 "LitGPT's loop is not TRL's" -- "$mp" estimate --model gpt2 --method dpo --framework litgpt
has err "Trainer's stacks"

# torchtune's DPO recipes (activations.c torchtune_dpo_logits): the loss's
# bytes per logit of the 2B x T x V logits against the CPU probe's measurements
# (tests/validation/torchtune_dpo_probe.csv, the shapes of 2,048,000 logits or
# more), LoRA (all rows at once, the adapter disabled) and full (halves, a
# reference model): the forward's peak, the reference's with what the policy
# keeps, the backward's
tt="estimate --framework torchtune --family llama --layers 4 --hidden 256 --heads 8 --ffn 688 --vocab 4000
    --seq 128 --checkpointing none --attention flash --ce full --batch 2 --method dpo --format json --explain"
for prec in fp32 pure-bf16; do
    expect 0 "torchtune LoRA DPO, $prec" -- "$mp" $tt --precision $prec --lora-rank 8
    cp "$tmp/out" "$tmp/tt-lora-$prec.json"
    expect 0 "torchtune full DPO, $prec" -- "$mp" $tt --precision $prec
    cp "$tmp/out" "$tmp/tt-full-$prec.json"
done
if python3 - "$tmp" <<'PY'
import csv, json, sys
tmp = sys.argv[1]
rows = [r for r in csv.DictReader(open("tests/validation/torchtune_dpo_probe.csv")) if int(r["logits"]) >= 2048000]
n = 4 * 128 * 4000  # 2 pairs = 4 rows x T x V
for task, variant in (("lora", "all"), ("full", "halves")):
    for prec, dtype in (("fp32", "fp32"), ("pure-bf16", "bf16")):
        d = json.load(open(f"{tmp}/tt-{task}-{prec}.json"))
        assert d["settings"]["method"] == "dpo"
        assert d["settings"]["reference"] == ("adapter" if task == "lora" else "model")
        assert (d["reference_bytes"] == 0) == (task == "lora"), d["reference_bytes"]
        terms = {t["name"]: t["bytes"] for t in d["terms"]}
        ph = {p["name"]: p["allocated_bytes"] for p in d["phases"]}
        fwd = terms["logits and loss"] / n
        ref = terms["reference forward (no grad)"] / n
        meas = [r for r in rows if r["dtype"] == dtype and r["variant"] == variant]
        lo = lambda k: min(float(r[k]) for r in meas)
        hi = lambda k: max(float(r[k]) for r in meas)
        # within 2% of the measured range (the model counts T positions where the log-softmax has T - 1)
        assert lo("fwd_peak") * 0.98 <= fwd <= hi("fwd_peak") * 1.02, (task, prec, fwd)
        kept = lo("after") * 0.98, hi("after") * 1.02
        assert lo("ref_peak") * 0.98 <= kept[0] + ref and ref + kept[1] <= hi("ref_peak") * 1.03, (task, prec, ref)
        # the reference phase rises above the forward's end by what the reference adds over the forward's peak
        rise = (ph["reference forward"] - ph["forward end"]) / n
        assert abs(rise - (float(meas[-1]["ref_peak"]) - float(meas[-1]["fwd_peak"]))) < 0.2, (task, prec, rise)
PY
then ok "torchtune's DPO logits: forward, reference and kept bytes per logit within the CPU probe's"
else bad "torchtune's DPO logits against the probe"; fi
expect 2 "memtrain does not generate" -- "$mp" estimate --model gpt2 --method grpo --batch 8 --framework memtrain
expect 2 "a method memplan does not model" -- "$mp" estimate --model gpt2 --method rloo
has err "sft, dpo, ipo, simpo, cpo, orpo, kto, reward, grpo, online-dpo or ppo"
expect 2 "no torchtune DPO plan for gpt2 (no builder)" -- "$mp" --model gpt2 --gpu 24GB --method dpo --emit torchtune -o "$tmp/bundle"
has err "torchtune"
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

# a reward model: AutoModelForSequenceClassification's hidden x 1 score head in
# place of the LM head (4000 x 256 here), the pairs as 2B rows, no reference
expect 0 "sft, the same shape" -- "$mp" $shape --batch 2
cp "$tmp/out" "$tmp/lm.json"
expect 0 "reward model" -- "$mp" $shape --batch 2 --method reward
if python3 - "$tmp/lm.json" "$tmp/out" <<'PY'
import json, sys
lm, rw = (json.load(open(p)) for p in sys.argv[1:3])
assert rw["params"] == lm["params"] - 4000 * 256 + 256, (rw["params"], lm["params"])
assert rw["reference_bytes"] == 0 and rw["settings"]["reference"] == "none"
assert rw["logits_bytes"] <= 2 * 2 * 128 * 1 * 4 * 4, rw["logits_bytes"]  # 2B x T scores, not 2B x T x vocab
PY
then ok "the score head replaces the LM head: 4000 x 256 weights fewer, 256 more; no vocabulary logits"
else bad "the reward model's head"; fi

# GRPO: rows of prompt + completion, the head on the completion only, a
# generation batch of batch x accum completions with transformers' generate
# (its KV cache: 2 x layers x kv heads x head dim x rows x tokens x 4 bytes)
shape_noseq=$(echo "$shape" | sed 's/--seq 128//')
expect 2 "grpo: --seq is prompt plus completion" -- "$mp" $shape_noseq --seq 200 --method grpo --batch 4 \
    --generations 4 --prompt-len 32 --completion-len 96
has err "is not --prompt-len 32 plus --completion-len 96"
expect 0 "grpo: a given --seq less the completion is the prompt" -- "$mp" $shape --method grpo --batch 4 \
    --generations 4 --completion-len 96
has out '"prompt-len": 32'
grpo="$shape_noseq --method grpo --generations 4 --prompt-len 32 --completion-len 96"
expect 0 "grpo with generate" -- "$mp" $grpo --batch 2 --accum 2 --explain
if python3 - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["settings"]["seq"] == 128 and d["settings"]["prompt-len"] == 32, d["settings"]
r = d["rollout"]
assert r["engine"] == "generate" and r["generation_rows"] == 4, r
assert r["kv_cache_bytes"] == 2 * 4 * 8 * 32 * 4 * 128 * 4, r["kv_cache_bytes"]
names = [p["name"] for p in d["phases"]]
assert "rollout generation" in names and "rollout log-probabilities" not in names, names
terms = {t["name"]: t for t in d["terms"]}
# the head runs on the completion and one more position: 2 rows x 97 x 4000 fp32
# logits, and the entropy's copy of the 96 positions read (2 x 96 x 4000 x 4) with
# its 128-row chunks' log-softmax, exp and product (3 x 128 x 4000 x 4)
lg = terms["logits and loss"]["bytes"]
assert lg >= 2 * 97 * 4000 * 4 + 2 * 96 * 4000 * 4 + 3 * 128 * 4000 * 4, lg
assert lg <= 2 * 97 * 4000 * 4 + 2 * 96 * 4000 * 4 + 3 * 128 * 4000 * 4 + 2 * 97 * 4 + 4 * 97 * 4000, lg
PY
then ok "grpo: generation batch, KV cache, the completion's logits"
else bad "grpo's rollout and logits"; fi
expect 0 "grpo with a reference (beta above 0)" -- "$mp" $grpo --batch 2 --accum 2 --reference model
has out '"rollout log-probabilities"'
expect 2 "grpo: the generation batch divides by --generations" -- "$mp" $grpo --batch 3
has err "does not divide the generation batch"
one_line_err
expect 2 "grpo cannot precompute its reference" -- "$mp" $grpo --batch 4 --reference precomputed
has err "generates its completions each step"
expect 2 "rollout settings need grpo" -- "$mp" $shape --batch 2 --method dpo --completion-len 64
has err "applies to a method that generates"
expect 2 "a vLLM rollout needs the GPU" -- "$mp" $grpo --batch 4 --rollout vllm
has err "name the GPU with --gpu"

# a colocated vLLM keeps --rollout-memory x the GPU: 0.25 x 24 GB on the device
expect 0 "grpo with vLLM" -- "$mp" $grpo --batch 4 --rollout vllm --rollout-memory 0.25 --gpu 24GB
if python3 - "$tmp/out" "$tmp/lm.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["rollout"]
assert r["engine_bytes"] == 6000000000 and r["engine_at_peak_bytes"] == 6000000000, r
assert d["device_bytes"] - d["reserved_bytes"] >= 6000000000, d["device_bytes"]
# its KV cache: what its weights and activations leave, 2 x 4 layers x 8 x 32 x 2 bytes a token
assert r["kv_cache_tokens"] == int((6000000000 - r["weights_and_activations_bytes"]) // (2 * 4 * 8 * 32 * 2)), r
assert 0.25 < r["largest_fraction"] <= 0.9, r
assert "rollout log-probabilities" in [p["name"] for p in d["phases"]]  # old log-probs with vLLM
PY
then ok "vLLM's share is on the device; its KV cache in tokens; the largest fraction the step leaves"
else bad "vLLM's share"; fi
expect 0 "grpo with vLLM asleep" -- "$mp" $grpo --batch 4 --rollout vllm --rollout-memory 0.25 --rollout-sleep --gpu 24GB
if python3 -c "
import json; d = json.load(open('$tmp/out'))
assert d['rollout']['engine_bytes'] == 6000000000
assert d['peak_phase'] != 'rollout generation' or d['rollout']['engine_at_peak_bytes'] == 6000000000
"; then ok "asleep, vLLM counts during the generation only"; else bad "vLLM asleep"; fi
expect 2 "vLLM must hold one sequence of its max length" -- "$mp" --model llama-3.1-8b --gpu 24GB --method grpo --rollout vllm
has err "one 131072-token sequence's KV cache"
one_line_err
expect 0 "a GRPO plan with vLLM on 24 GB" -- "$mp" --model llama-3.1-8b --gpu 24GB --method grpo --rollout vllm --rollout-max-len 1024
has out "vLLM colocated, 0.30 of the GPU"
has out "the step leaves room up to"

# KTO: B unpaired examples, a no-grad policy forward on the KL batch before the
# step (its logits: 4 rows x 128 x 4000 fp32), the reference on both batches
expect 0 "kto" -- "$mp" $shape --batch 4 --method kto
if python3 -c "
import json; d = json.load(open('$tmp/out'))
ph = {p['name']: p['allocated_bytes'] for p in d['phases']}
assert d['settings']['reference'] == 'model' and 'reference forward' in ph, ph
assert ph['KL batch forward'] - d['resident_bytes'] >= 4 * 128 * 4000 * 4, ph
"; then ok "kto: the KL batch's no-grad forward holds its logits, a reference copy by default"
else bad "kto's KL batch"; fi
expect 2 "kto refuses a batch of 1" -- "$mp" $shape --batch 1 --method kto
has err "refuses a batch of 1"

# online DPO: two completions per prompt (--batch counts prompts), a reward
# model (the policy's shape with a one-output score head, frozen), the reference
# in the step; PPO: a value model trained (the reward model's shape), the
# reference and the reward model frozen, generate's fp32 scores kept through the
# update (rows x completion x vocab x 4 bytes)
expect 0 "online-dpo" -- "$mp" $shape_noseq --method online-dpo --batch 2 --prompt-len 64 --completion-len 32
if python3 - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["settings"]["seq"] == 96 and d["rollout"]["generation_rows"] == 4, (d["settings"]["seq"], d["rollout"])
names = [p["name"] for p in d["phases"]]
assert "reference forward" in names and "rollout generation" in names, names
PY
then ok "online-dpo: 2 completions a prompt, the reference in the step, a rollout"
else bad "online-dpo's rows and phases"; fi
expect 0 "ppo" -- "$mp" $shape_noseq --method ppo --batch 2 --accum 2 --prompt-len 64 --completion-len 32 --explain
if python3 - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
terms = {t["name"]: t["bytes"] for t in d["terms"]}
P = d["params"]
reward = P - 4000 * 256 + 256          # the score head in place of the LM head
assert terms["reward model (frozen)"] == reward * 4, terms["reward model (frozen)"]
assert terms["value model (trained)"] == reward * 4, terms["value model (trained)"]
assert d["trainable_params"] == P + reward, d["trainable_params"]
assert terms["rollout logits kept (PPO)"] == 4 * 32 * 4000 * 4, terms["rollout logits kept (PPO)"]
assert d["reward_model_bytes"] == reward * 4, d["reward_model_bytes"]
assert d["value_model_bytes"] >= reward * 4 * 4, d["value_model_bytes"]  # weights, gradients, AdamW's two states
assert "update statistics" in [p["name"] for p in d["phases"]]
PY
then ok "ppo: reward and value models of the policy's shape with a score head; generate's scores kept"
else bad "ppo's models"; fi
expect 2 "ppo generates with transformers only" -- "$mp" $shape_noseq --method ppo --batch 2 --rollout vllm --gpu 24GB
has err "generates with transformers only"
expect 2 "--value-lora needs ppo with LoRA" -- "$mp" $shape_noseq --method ppo --batch 2 --value-lora
has err "needs --method ppo with LoRA"
expect 2 "a reward model that is neither profile nor config" -- "$mp" $shape_noseq --method ppo --batch 2 --reward-model ./nope.json
has err "--reward-model './nope.json' is neither a profile"
one_line_err

# under autocast the Trainer's stacks hand TRL fp32 logits (accelerate's
# convert_outputs_to_fp32, frameworks.csv fp32_outputs); 4 rows x 128 x 4000 logits
amp="estimate --family llama --layers 4 --hidden 256 --heads 8 --ffn 688 --vocab 4000 --seq 128 --precision amp-bf16
     --checkpointing none --attention eager --ce full --format json --explain --batch 2 --method dpo"
expect 0 "dpo under autocast, hf" -- "$mp" $amp --framework hf
cp "$tmp/out" "$tmp/hf.json"
expect 0 "dpo under autocast, pytorch" -- "$mp" $amp --framework pytorch
if python3 - "$tmp/hf.json" "$tmp/out" <<'PY'
import json, sys
hf, pt = ({t["name"]: t["bytes"] for t in json.load(open(p))["terms"]} for p in sys.argv[1:3])
n = 4 * 128 * 4000
# hf: the 16-bit logits and their fp32 copy meet (2 + 4 bytes each); pytorch: the
# 16-bit logits and each row's 16-bit log-softmax (2 + 2)
assert hf["logits and loss"] == 6 * n, hf["logits and loss"]
assert pt["logits and loss"] == 4 * n, pt["logits and loss"]
PY
then ok "accelerate's fp32 outputs: TRL's logits are fp32 under the hf profile"
else bad "fp32 outputs"; fi

# a vLLM server on other GPUs (vllm_mode server): nothing of it on the training
# GPU, the old log-probabilities still taken for its correction
if python3 -c "
import json, subprocess, sys
d = json.loads(subprocess.run(sys.argv[1:], capture_output=True, text=True).stdout)
assert d['rollout']['engine'] == 'server' and d['rollout']['kv_cache_bytes'] == 0, d['rollout']
assert d['rollout'].get('engine_bytes') is None
assert 'rollout log-probabilities' in [p['name'] for p in d['phases']]
" "$mp" $grpo --batch 4 --rollout server --gpu 24GB --format json; then ok "a server holds nothing here; the old log-probabilities are taken"
else bad "the vLLM server's rollout"; fi
expect 2 "--rollout-memory is a colocated engine's" -- "$mp" $grpo --batch 4 --rollout server --rollout-memory 0.4
has err "sets a colocated vLLM up"

echo "methods: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
