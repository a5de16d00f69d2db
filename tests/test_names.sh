#!/bin/sh
# The names people already use (issue 33): GPUs as nvidia-smi prints them, bare model
# numbers, names with their memory; instruct and chat variants of a model profile and
# Hub ids; transformers' TrainingArguments words for precisions and optimizers; a Hub id
# given to --hf-config. Ambiguous names are listed, never guessed between.
bin=${1:-build/bin}
. tests/lib.sh
mp="$bin/memplan"
gpu_is() { # NAME PROFILE: --gpu NAME reads the profile PROFILE
    if "$mp" estimate --model gpt2 --gpu "$1" >"$tmp/out" 2>"$tmp/err" && grep -q "^budget    $2:" "$tmp/out"
    then ok "--gpu '$1' is $2"; else bad "--gpu '$1' is not $2: $(head -c 200 "$tmp/err")"; fi
}
gpu_is 4090 rtx4090
gpu_is "NVIDIA GeForce RTX 4090" rtx4090
gpu_is "NVIDIA GeForce RTX 4090 24GB" rtx4090
gpu_is t4-16g t4
gpu_is "Tesla T4" t4
gpu_is "NVIDIA A100-SXM4-80GB" a100-80g
gpu_is "NVIDIA A100-SXM4-40GB" a100-40g
gpu_is "NVIDIA A100 80GB PCIe" a100-80g-pcie
gpu_is "NVIDIA H100 80GB HBM3" h100-80g
gpu_is "NVIDIA H100 PCIe" h100-pcie
gpu_is "NVIDIA A10G" a10g
gpu_is "NVIDIA RTX A6000" a6000
gpu_is "rtx 4060 ti" rtx4060ti-16g
gpu_is "AMD Instinct MI300X" mi300x
expect 2 "--gpu a100 names three cards: listed, not guessed" -- "$mp" estimate --model gpt2 --gpu a100
has err "GPU 'a100' names 3 profiles: a100-40g (40 GiB), a100-80g (80 GiB), a100-80g-pcie (80 GiB)"
expect 2 "--gpu v100 names two" -- "$mp" estimate --model gpt2 --gpu v100
has err "v100-16g (16 GiB), v100-32g (32 GiB)"
expect 2 "a bare number that is no card is still a size without its unit" -- "$mp" estimate --model gpt2 --gpu 24
has err "GPU size '24' has no unit"

model_is() { # NAME PROFILE
    if "$mp" estimate --model "$1" >"$tmp/out" 2>"$tmp/err" && grep -q "^model     $2 " "$tmp/out"
    then ok "--model '$1' has the shapes of $2"; else bad "--model '$1': $(head -c 200 "$tmp/err")"; fi
}
model_is llama-3.1-8b-instruct llama-3.1-8b
model_is gemma-2-9b-it gemma-2-9b
model_is qwen2.5-7b-instruct qwen2.5-7b
model_is llama-2-7b-chat-hf llama-2-7b
model_is meta-llama/Llama-3.1-8B-Instruct llama-3.1-8b
has out "for 'meta-llama/Llama-3.1-8B-Instruct': the same shapes"
"$mp" estimate --model meta-llama/Llama-3.1-8B-Instruct --emit hf >"$tmp/train.py" 2>/dev/null
if grep -q '^MODEL = "meta-llama/Llama-3.1-8B-Instruct"' "$tmp/train.py"; then ok "the variant's Hub id is what train.py loads"
else bad "train.py loads another model"; fi
expect 2 "an unknown model still says so" -- "$mp" estimate --model llama-9-instruct
has err "unknown model 'llama-9-instruct'"

settings_are() { # FLAGS... -- WORDS: the settings line holds WORDS
    want=$(echo "$*" | sed 's/.* -- //'); args=$(echo "$*" | sed 's/ -- .*//')
    if "$mp" estimate --model gpt2 $args >"$tmp/out" 2>"$tmp/err" && grep -q "$want" "$tmp/out"
    then ok "$args reads as '$want'"; else bad "$args: $(head -c 200 "$tmp/err")"; fi
}
settings_are --precision bf16 -- "precision amp-bf16"
settings_are --precision fp16 -- "precision amp-fp16"
settings_are --optimizer adamw_torch -- "optimizer adamw,"
settings_are --optimizer adamw_8bit -- "optimizer adamw-8bit"
settings_are --optimizer adamw_bnb_8bit -- "optimizer adamw-8bit"
settings_are --optimizer paged_adamw_8bit -- "optimizer paged-adamw-8bit"
settings_are --optimizer paged_adamw_32bit -- "optimizer paged-adamw,"
settings_are --optimizer adamw_torch_8bit -- "optimizer adamw-8bit-torchao"

expect 2 "--hf-config ORG/NAME that is no file says how to get the config" -- "$mp" estimate --hf-config meta-llama/Llama-3.1-8B
has err "huggingface-cli download meta-llama/Llama-3.1-8B config.json"
lines=$(wc -l <"$tmp/err")
[ "$lines" -eq 1 ] && ok "one line, not cut mid-word" || bad "$lines lines"

echo "names: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
