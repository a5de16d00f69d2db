#!/bin/sh
# Hostile preference keys for memplan check: TRL's loss_type and GRPO's, KTO's and the
# reward model's keys, axolotl's rl and
# dpo_loss_type, LLaMA-Factory's pref_loss, given what a stranger's file can
# hold (a map, a list of junk, a number, a huge string, escapes). Each case:
# exit 2, one line on stderr, nothing written in the working folder.
bin=${1:-build/bin}
. tests/lib.sh
mp="$(pwd)/$bin/memplan"
case "$bin" in /*) mp="$bin/memplan" ;; esac
one_line_err() { lines=$(wc -l <"$tmp/err"); if [ "$lines" -eq 1 ]; then ok "$1: one line on stderr"; else bad "$1: $lines lines on stderr"; fi; }
state() { (cd "$1" && find . -print0 | sort -z | xargs -0 stat -c '%n %F %a' && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }

mkdir -p "$tmp/cfg" "$tmp/work"
python3 - "$tmp/cfg" <<'PY'
import json, sys
d = sys.argv[1]
trl = "model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\n"
ax = "base_model: Qwen/Qwen2.5-0.5B\nmicro_batch_size: 2\nsequence_len: 512\n"
lf = "model_name_or_path: Qwen/Qwen2.5-0.5B\nstage: dpo\nfinetuning_type: lora\ncutoff_len: 512\n"
huge = "x" * 100000
cases = {
    "trl-loss-map.yaml": trl + "loss_type: {sigmoid: 1}\n",
    "trl-loss-junk.yaml": trl + "loss_type: [sigmoid, [1, 2], null]\n",
    "trl-loss-number.yaml": trl + "loss_type: [7]\n",
    "trl-loss-huge.yaml": trl + "loss_type: " + huge + "\n",
    "trl-loss-escape.yaml": trl + 'loss_type: "\\e[2J\\x07bad\\nline"\n',
    "trl-loss-empty.yaml": trl + "loss_type: []\n",
    "axolotl-rl-list.yaml": ax + "rl: [dpo]\n",
    "axolotl-rl-map.yaml": ax + "rl: {dpo: true}\n",
    "axolotl-rl-huge.yaml": ax + "rl: " + huge + "\n",
    "axolotl-rl-escape.yaml": ax + 'rl: "dpo\\e]0;title\\x07"\n',
    "axolotl-dpo-loss-junk.yaml": ax + "rl: dpo\ndpo_loss_type: [[sigmoid], 3]\n",
    "axolotl-dpo-loss-string.yaml": ax + "rl: dpo\ndpo_loss_type: sigmoid\n",
    "lf-pref-loss-list.yaml": lf + "pref_loss: [sigmoid]\n",
    "lf-pref-loss-huge.yaml": lf + "pref_loss: " + huge + "\n",
    "lf-ref-model-map.yaml": lf + "ref_model: {path: x}\n",
    "trl-loss.json": json.dumps({"model_name_or_path": "Qwen/Qwen2.5-0.5B", "per_device_train_batch_size": 2,
                                 "loss_type": [{"a": 1}]}),
}
# GRPOConfig, KTOConfig and RewardConfig keys (trl@f2cd5771) with what a stranger's file can hold
grpo = trl.replace("per_device_train_batch_size: 2", "per_device_train_batch_size: 8") + "num_generations: 8\n"
hostile = {
    "grpo-generations-huge.yaml": trl + "num_generations: 99999999999999999999999\n",
    "grpo-generations-one.yaml": trl + "num_generations: 1\n",
    "grpo-generations-text.yaml": trl + "num_generations: eight\n",
    "grpo-generations-map.yaml": trl + "num_generations: {a: 1}\n",
    "grpo-vllm-memory-2.yaml": grpo + "use_vllm: true\nvllm_gpu_memory_utilization: 2\n",
    "grpo-vllm-memory-neg.yaml": grpo + "use_vllm: true\nvllm_gpu_memory_utilization: -0.1\n",
    "grpo-vllm-memory-nan.yaml": grpo + "use_vllm: true\nvllm_gpu_memory_utilization: .nan\n",
    "grpo-vllm-mode-escape.yaml": grpo + 'vllm_mode: "\\e[2J\\x07colocate"\n',
    "grpo-vllm-mode-list.yaml": grpo + "vllm_mode: [colocate]\n",
    "grpo-vllm-mode-huge.yaml": grpo + "vllm_mode: " + huge + "\n",
    "grpo-use-vllm-maybe.yaml": grpo + "use_vllm: maybe\n",
    "grpo-completion-zero.yaml": grpo + "max_completion_length: 0\n",
    "grpo-completion-huge.yaml": grpo + "max_completion_length: 1e30\n",
    "grpo-beta-negative.yaml": grpo + "beta: -1\n",
    "grpo-beta-inf.yaml": grpo + "beta: .inf\n",
    "grpo-max-model-len.yaml": grpo + "use_vllm: true\nvllm_max_model_length: -5\n",
    "grpo-reward-funcs-map.yaml": grpo + "reward_funcs: {a: 1}\n",
    "grpo-reward-funcs-nested.yaml": grpo + "reward_funcs: [[1]]\n",
    "grpo-reward-model.yaml": grpo + "reward_funcs: [accuracy, org/reward-model]\n",
    "grpo-not-dividing.yaml": trl + "num_generations: 3\n",
    "kto-weight-negative.yaml": trl + "desirable_weight: -1\n",
    "kto-weight-text.yaml": trl + "undesirable_weight: heavy\n",
    "kto-apo-unpaired.yaml": trl + "loss_type: apo_zero_unpaired\n",
    "reward-center-map.yaml": trl + "center_rewards_coefficient: {a: 1}\n",
    "reward-beside-grpo.yaml": grpo + "center_rewards_coefficient: 0.01\n",
    # OnlineDPOConfig and PPOConfig keys (trl@f2cd5771 online_dpo_config.py, ppo_config.py)
    "odpo-max-new-tokens-map.yaml": trl + "max_new_tokens: {a: 1}\n",
    "odpo-max-new-tokens-zero.yaml": trl + "max_new_tokens: 0\n",
    "odpo-beta-junk.yaml": trl + "max_new_tokens: 64\nbeta: [a, 1]\n",
    "odpo-beta-empty.yaml": trl + "max_new_tokens: 64\nbeta: []\n",
    "odpo-beside-ppo.yaml": trl + "max_new_tokens: 64\nresponse_length: 53\n",
    "odpo-beside-grpo.yaml": grpo + "max_new_tokens: 64\n",
    "odpo-reward-path-huge.yaml": trl + "max_new_tokens: 64\nreward_model_path: " + huge + "\n",
    "odpo-reward-path-escape.yaml": trl + 'reward_model_path: "\\e[2J\\x07org/rm"\n',
    "ppo-response-text.yaml": trl + "response_length: long\n",
    "ppo-response-huge.yaml": trl + "response_length: 1e30\n",
    "ppo-reward-path-map.yaml": trl + "num_ppo_epochs: 1\nreward_model_path: {a: 1}\n",
    "ppo-sft-path-list.yaml": trl + "response_length: 53\nsft_model_path: [a]\n",
    "ppo-mini-batches-zero.yaml": trl + "num_mini_batches: 0\n",
    "ppo-mini-batches-odd.yaml": trl + "num_mini_batches: 3\n",
    "ppo-chunk-negative.yaml": trl + "local_rollout_forward_batch_size: -1\n",
    "ppo-chunk-one.yaml": trl + "local_rollout_forward_batch_size: 1\n",
    "ppo-ref-adapter.yaml": trl + "use_peft: true\nref_adapter_name: ref\n",
    "ppo-beside-kto.yaml": trl + "desirable_weight: 1.0\nnum_ppo_epochs: 4\n",
}
cases.update(hostile)
for name, text in cases.items():
    open("%s/%s" % (d, name), "w").write(text)
PY
state "$tmp/work" >"$tmp/before"
for f in "$tmp"/cfg/*; do
    n=$(basename "$f")
    (cd "$tmp/work" && "$mp" check "$f" --gpu 24GB >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/rc")
    rc=$(cat "$tmp/rc")
    if [ "$rc" -eq 2 ]; then ok "$n: refused (exit 2)"; else bad "$n: exit $rc, wanted 2"; head -c 300 "$tmp/err"; fi
    one_line_err "$n"
    if [ "$(wc -c <"$tmp/err")" -lt 400 ]; then ok "$n: the message is short"; else bad "$n: $(wc -c <"$tmp/err") bytes"; fi
    if LC_ALL=C grep -q "$(printf '\033')" "$tmp/err"; then bad "$n: an escape reached stderr"; else ok "$n: no escape on stderr"; fi
    if [ -s "$tmp/out" ]; then bad "$n: stdout not empty"; else ok "$n: nothing on stdout"; fi
done
state "$tmp/work" >"$tmp/after"
if cmp -s "$tmp/before" "$tmp/after"; then ok "nothing written or changed"; else bad "something written"; fi
echo "check_preference: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
