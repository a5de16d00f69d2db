#!/bin/sh
# Evaluation between steps (--eval-batch; issue 35, peaks outside the step):
# the phase's bytes checked by arithmetic on sizes computed here, the verdict
# taken at the largest phase, and what is refused. The measured check is
# eval_compare.py (make check: test-published).
bin=${1:-build/bin}
. tests/lib.sh
mp="$bin/memplan"
shape="estimate --framework pytorch-cpu --family llama --layers 4 --hidden 256 --heads 8 --ffn 688 --vocab 4000
       --seq 128 --precision fp32 --checkpointing none --attention eager --ce full --format json --batch 1"

expect 0 "no evaluation by default" -- "$mp" $shape
if python3 -c "
import json; d = json.load(open('$tmp/out'))
assert 'evaluation' not in [p['name'] for p in d['phases']] and 'eval-batch' not in d['settings']
"; then ok "transformers' eval_strategy is no by default: no evaluation phase"; else bad "a default evaluation"; fi

# 8 sequences x 128 tokens under no_grad: the fp32 logits and their fp32
# log-softmax (8 x 128 x 4000 x 4 each) and the last hidden state (8 x 128 x 256 x 4)
expect 0 "an evaluation batch of 8" -- "$mp" $shape --eval-batch 8
if python3 -c "
import json; d = json.load(open('$tmp/out'))
ph = {p['name']: p['allocated_bytes'] for p in d['phases']}
rise = ph['evaluation'] - d['resident_bytes']
assert rise == 2 * 8 * 128 * 4000 * 4 + 8 * 128 * 256 * 4, rise
assert d['peak_phase'] == 'evaluation' and d['settings']['eval-batch'] == 8
"; then ok "the evaluation holds the eval batch's logits, log-softmax and last hidden state, and sets the peak"
else bad "the evaluation's bytes"; fi

# on a card the training step fits, transformers' eval batch of 8 does not
one="estimate --model llama-3.2-1b --task lora --precision bf16 --batch 1 --seq 2048 --gpu 24GB --checkpointing full
     --attention flash"
expect 0 "llama-3.2-1b LoRA on 24 GB trains" -- "$mp" $one
has out "verdict   fits"
expect 1 "with an eval batch of 8 it does not" -- "$mp" $one --eval-batch 8
has out "peak during evaluation"
has out "at the evaluation: --eval-batch 8"
expect 0 "plans weigh it: JSON names the eval batch" -- "$mp" --model llama-3.2-1b --task lora --gpu 24GB --eval-batch 2 --format json
has out '"eval-batch": 2'

expect 2 "evaluation is modelled for SFT" -- "$mp" $shape --eval-batch 4 --method dpo
has err "evaluation is modelled for supervised fine-tuning"
expect 2 "memtrain does not evaluate" -- "$mp" estimate --model gpt2 --framework memtrain --eval-batch 4
has err "memtrain does not evaluate"

echo "eval: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
