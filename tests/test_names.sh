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
gpu_is 3090 rtx3090
gpu_is h100 h100-80g
gpu_is a100-sxm4-80gb a100-80g
gpu_is A100_SXM4_80GB a100-80g
gpu_is RTX4090 rtx4090
gpu_is rtx_4090 rtx4090
gpu_is "NVIDIA GeForce RTX 3060" rtx3060-12g
expect 2 "--gpu a100 names three cards: listed, not guessed" -- "$mp" estimate --model gpt2 --gpu a100
has err "GPU 'a100' names 3 profiles: a100-40g (40 GiB), a100-80g (80 GiB), a100-80g-pcie (80 GiB)"
expect 2 "--gpu v100 names two" -- "$mp" estimate --model gpt2 --gpu v100
has err "v100-16g (16 GiB), v100-32g (32 GiB)"
expect 2 "a bare number that is no card is still a size without its unit" -- "$mp" estimate --model gpt2 --gpu 24
has err "GPU size '24' has no unit"
expect 2 "nvidia-smi's 'NVIDIA H100' names both H100s" -- "$mp" estimate --model gpt2 --gpu "NVIDIA H100"
has err "names 2 profiles: h100-80g (80 GiB), h100-pcie (80 GiB): give one of them"
one_line() { lines=$(wc -l <"$tmp/err"); [ "$lines" -eq 1 ] && ok "$1: one line" || bad "$1: $lines lines"; }
one_line "the candidates"
expect 2 "a card with no profile names the ones sharing its words" -- "$mp" estimate --model gpt2 --gpu "NVIDIA H100 NVL"
has err "unknown GPU 'NVIDIA H100 NVL'; nearest: 'h100-80g', 'h100-pcie'"
expect 2 "a variant with no profile names its base" -- "$mp" estimate --model gpt2 --gpu "rtx 4080 super"
has err "nearest: 'rtx4080' ("

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
model_is LLAMA_3.1_8B_INSTRUCT llama-3.1-8b
model_is meta-llama/Meta-Llama-3-8B-Instruct llama-3-8b
model_is unsloth/Meta-Llama-3.1-8B-Instruct llama-3.1-8b
model_is mistralai/Mistral-7B-Instruct-v0.3 mistral-7b-v0.3
model_is mistralai/Mistral-7B-Instruct-v0.1 mistral-7b
model_is mistralai/Mixtral-8x7B-Instruct-v0.1 mixtral-8x7b
model_is mistralai/Mistral-Nemo-Instruct-2407 mistral-nemo
model_is google/gemma-2-2b-it gemma-2-2b
model_is tiiuae/falcon-7b-instruct falcon-7b
model_is deepseek-moe-16b-base deepseek-moe-16b
# every profile's instruct variant is that profile (no two profiles share a name less the tuning words)
misses=""
for n in $(cut -d, -f1 profiles/models.csv | tail -n +2); do
    "$mp" estimate --model "$n-instruct" 2>/dev/null | grep -q "^model     $n " || misses="$misses $n"
done
[ -z "$misses" ] && ok "each of the $(($(wc -l <profiles/models.csv) - 1)) profiles' -instruct variant is that profile" \
    || bad "-instruct variants not their profile:$misses"
expect 2 "an unknown model still says so" -- "$mp" estimate --model llama-9-instruct
has err "unknown model 'llama-9-instruct'"
expect 2 "a checkpoint stored quantised is no variant of the 16-bit profile" -- "$mp" estimate --model TheBloke/Llama-2-7B-Chat-GPTQ
has err "unknown model 'TheBloke/Llama-2-7B-Chat-GPTQ'; nearest: 'llama-2-7b'"
expect 2 "a longer context is no variant either" -- "$mp" estimate --model microsoft/Phi-3-mini-128k-instruct
has err "unknown model 'microsoft/Phi-3-mini-128k-instruct'"

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
settings_are --optimizer adamw_hf -- "optimizer adamw,"
settings_are --optimizer lion_32bit -- "optimizer lion"
settings_are --optimizer adamw_torch_fused -- "optimizer adamw,"
settings_are --lora -- "task lora, lora-rank 16"
settings_are --qlora -- "task qlora, lora-rank 16, .* quant nf4-dq"
"$mp" estimate --model gpt2 --optimizer adamw_torch_fused --explain >"$tmp/fused" 2>&1
"$mp" estimate --model gpt2 --optimizer adamw --optimizer-impl fused --explain >"$tmp/fused2" 2>&1
"$mp" estimate --model gpt2 --optimizer adamw --explain >"$tmp/foreach" 2>&1
if cmp -s "$tmp/fused" "$tmp/fused2" && ! cmp -s "$tmp/fused" "$tmp/foreach"; then
    ok "adamw_torch_fused is adamw with --optimizer-impl fused (the estimate, every term)"
else bad "adamw_torch_fused differs from adamw --optimizer-impl fused"; fi
# every transformers optim word memplan takes is one OptimizerNames has
"$mp" --help >"$tmp/help" 2>&1
words=$(sed -n '/--optimizer O/,/--adam8-block/p' "$tmp/help" | tr ' ,;()|=' '\n\n\n\n\n\n\n' | grep '_' | sort -u)
unknown=""
# (adamw_hf: transformers' own AdamW, an OptimizerNames member before that commit, still in older configs)
for w in $words; do [ "$w" = adamw_hf ] || grep -qx "$w" tests/data/engines/transformers_optim.txt || unknown="$unknown $w"; done
[ -n "$words" ] && [ -z "$unknown" ] && ok "--help's $(echo $words | wc -w) transformers optim words are all OptimizerNames" \
    || bad "optim words not in transformers_optim.txt:$unknown"
# and every OptimizerNames member is taken, or refused by name as not modelled (never matched to a near one)
taken=0 refused=0 other=""
for w in $(grep -v '^#' tests/data/engines/transformers_optim.txt); do
    if "$mp" estimate --model gpt2 --optimizer "$w" >/dev/null 2>"$tmp/oerr"; then taken=$((taken + 1))
    elif grep -q "for --optimizer: transformers' optim is not modelled (" "$tmp/oerr" && ! grep -q "did you mean" "$tmp/oerr"
    then refused=$((refused + 1)); else other="$other $w"; fi
done
[ -z "$other" ] && ok "transformers' $((taken + refused)) optim names: $taken taken, $refused refused as not modelled" \
    || bad "optim names neither taken nor refused by name:$other"
grep -q "bf16=amp-bf16, fp16=amp-fp16" "$tmp/help" && ok "--help lists bf16 and fp16 with their regimes" \
    || bad "--help lacks bf16=amp-bf16"
grep -q "adamw8bit|adamw8|adamw_8bit|adamw_bnb_8bit=adamw-8bit" "$tmp/help" && ok "--help lists adamw_8bit with its row" \
    || bad "--help lacks the optimizer aliases"
grep -q "^  --lora  .*--task lora" "$tmp/help" && grep -q "^  --qlora  .*--task qlora" "$tmp/help" \
    && ok "--help has --lora and --qlora" || bad "--help lacks --lora or --qlora"
# memplan(1) is reference: an entry (a .TP item naming it) for every flag --help lists
missing=$(python3 - "$tmp/help" <<'EOP'
import re, sys
man = open("man/memplan.1").read().split("\n")
entries = {m for i, l in enumerate(man[:-1]) if l == ".TP"
           for m in re.findall(r"--[a-z0-9-]+", man[i + 1].replace("\\-", "-"))}
flags = set(re.findall(r"^  (?:-., )?(--[a-z0-9-]+)", open(sys.argv[1]).read(), re.M))
print(len(flags), " ".join(sorted(flags - entries)))
EOP
)
[ -n "$missing" ] && [ "${missing#* }" = "" ] && ok "memplan(1) has an entry for each of --help's ${missing% *} flags" \
    || bad "flags --help lists without a memplan(1) entry: $missing"
expect 2 "--lora with --task: the kind of training once" -- "$mp" estimate --model gpt2 --lora --task full
has err "give the kind of training once: --task, --lora or --qlora"

# did you mean: unknown options and values, one line, exit 2
mean() { # WHAT WANT ARGS...: exit 2, one line, saying WANT
    what=$1 want=$2; shift 2
    expect 2 "$what" -- "$mp" estimate --model gpt2 "$@"
    has err "$want"
    one_line "$what"
}
mean "--optim: the rows it begins" "unknown option '--optim'; did you mean --optimizer, --optimizer-impl or --optimizer-in-backward?" --optim adamw
mean "--precison: one edit" "unknown option '--precison'; did you mean --precision?" --precison bf16
mean "--lora_rank: transformers' underscore" "unknown option '--lora_rank'; did you mean --lora-rank?" --lora_rank 8
mean "--gradient_checkpointing: a row's name as its last word" "unknown option '--gradient_checkpointing'; did you mean --checkpointing?" --gradient_checkpointing
mean "--zero_stage: a row's name as its first word" "did you mean --zero?" --zero_stage 2
mean "--qlora_rank: one edit before a word" "did you mean --lora-rank?" --qlora_rank 8
mean "--bf16: a value's row" "unknown option '--bf16'; did you mean --precision bf16?" --bf16
mean "--flash: a value's row" "did you mean --attention flash?" --flash
mean "--precision bf17" "invalid value 'bf17' for --precision (fp32, amp-bf16, amp-fp16, mixed-bf16, mixed-fp16, pure-bf16); did you mean bf16 (amp-bf16)?" --precision bf17
mean "--precision BF16: case" "did you mean bf16 (amp-bf16)?" --precision BF16
mean "--optimizer adam: the shortest it begins" "; did you mean adamw?" --optimizer adam
mean "--precision amp: the two it begins" "did you mean amp-bf16 or amp-fp16?" --precision amp
mean "--attention flsh" "did you mean flash?" --attention flsh
expect 2 "a flag far from every row gets no guess" -- "$mp" estimate --model gpt2 --zzzzzz
has err "unknown option '--zzzzzz' (memplan --help)"
expect 2 "a hostile flag is quoted, still one line" -- "$mp" estimate --model gpt2 "$(printf -- '--opt\033[2Jim')"
has err "unknown option '--opt\x1b[2Jim'"
one_line "hostile flag"

expect 2 "--hf-config ORG/NAME that is no file says how to get the config" -- "$mp" estimate --hf-config meta-llama/Llama-3.1-8B
has err "huggingface-cli download meta-llama/Llama-3.1-8B config.json"
has err "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json"
has err "; or --model llama-3.1-8b, a profile with its shapes"
lines=$(wc -l <"$tmp/err")
[ "$lines" -eq 1 ] && ok "one line, not cut mid-word" || bad "$lines lines"
expect 2 "a Hub id no profile has: no --model hint" -- "$mp" estimate --hf-config someone/unknown-model
has err "fetch it with huggingface-cli download someone/unknown-model config.json"
lacks err "--model"
long="/nonexistent/$(printf 'a%.0s' $(seq 200))/config.json"
expect 2 "a long path that is no file says why, whole" -- "$mp" estimate --hf-config "$long"
has err "...': No such file or directory"
expect 2 "a path that is no file" -- "$mp" estimate --hf-config ./no/such/config.json
has err "cannot read config './no/such/config.json': No such file or directory"

echo "names: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
