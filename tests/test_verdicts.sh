#!/bin/sh
# Verdicts say everything that matters (issue 33, items 2 and 4): host RAM per
# node against the GPU's typical machine, hints that are true when followed,
# the stack the verdict assumed, one screen for the default plan, tables within
# 120 columns, alternatives that differ, a plot subtitle true to its bars.
bin=${1:-build/bin}
. tests/lib.sh
mp="$bin/memplan"

# --- the default plan fits one 80 x 30 screen
expect 0 "the newcomer's plan" -- "$mp" --params 7e9 --gpu 12GB
lines=$(wc -l <"$tmp/out"); cols=$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$tmp/out")
if [ "$lines" -le 30 ] && [ "$cols" -le 80 ]; then ok "default plan: $lines lines, $cols columns"; else bad "default plan is $lines lines x $cols columns, over 80 x 30"; fi
has out "(pytorch profile)"
lacks out "why this plan:"
expect 0 "--explain keeps the details" -- "$mp" --params 7e9 --gpu 12GB --explain
has out "why this plan:"
has out "shape     33 layers"
has out "host/node"

# --- hints: every "fits with --gpus N --task T" is the search the user runs with those flags added
hint_check() { # WHAT -- the user's command's flags
    what=$1; shift 2
    "$mp" "$@" >"$tmp/h.out" 2>&1
    n=0
    for hint in $(grep -o 'fits with --gpus [0-9]* --task [a-z]*' "$tmp/h.out" | sed 's/fits with //; s/ /_/g'); do
        flags=$(echo "$hint" | tr '_' ' ')
        n=$((n + 1))
        # shellcheck disable=SC2086
        if "$mp" "$@" $flags >"$tmp/h2.out" 2>&1; then ok "$what: following '$flags' fits (exit 0)"
        else bad "$what: '$flags' was hinted but exits $?"; sed 's/^/    /' "$tmp/h2.out" | head -8; fi
    done
    if [ "$n" -gt 0 ]; then ok "$what: $n hint(s) followed"; else bad "$what: no hint to follow"; cat "$tmp/h.out"; fi
}
hint_check "7B on 12GB" -- --params 7e9 --gpu 12GB
hint_check "7B full, 2 GPUs, no offload" -- --params 7e9 --gpu 12GB --gpus 2 --task full --offload none
hint_check "8B on a T4" -- --model llama-3.1-8b --gpu t4
hint_check "70B on a 4090" -- --model llama-3.1-70b --gpu rtx4090
hint_check "70B, --explain" -- --model llama-3.1-70b --gpu rtx3060-12g --explain
# JSON's misses carry the same hint: fits_with_gpus
expect 0 "7B on 12GB, json" -- "$mp" --params 7e9 --gpu 12GB --format json
if python3 - "$mp" "$tmp/out" <<'EOF'
import json, subprocess, sys
mp, path = sys.argv[1], sys.argv[2]
misses = json.load(open(path))['misses']
assert misses and all(m['fits_with_gpus'] for m in misses), misses
for m in misses:
    p = subprocess.run([mp, '--params', '7e9', '--gpu', '12GB', '--gpus', str(m['fits_with_gpus']), '--task', m['task']],
                       capture_output=True, text=True)
    assert p.returncode == 0, (m, p.stdout[-400:])
EOF
then ok "json: each miss's fits_with_gpus, followed, fits"; else bad "json fits_with_gpus"; fi
# the issue's contradiction: the hint said ZeRO-3 on 2 GPUs; with --offload none nothing fits on 2
expect 1 "7B full on 2 x 12GB without offload: nothing fits" -- "$mp" --params 7e9 --gpu 12GB --gpus 2 --task full --offload none
lacks out "fits with --gpus 2 "

# --- table and plan agree: each "on N GPUs" row is what plan --gpus N finds
expect 0 "70B table, json" -- "$mp" table --model llama-3.1-70b --gpus rtx3060-12g,rtx4090,a100-40g,p100 --format json
cp "$tmp/out" "$tmp/t70.json"
python3 - "$mp" "$tmp/t70.json" <<'EOF' >"$tmp/agree.out" 2>&1
import json, subprocess, sys
mp, path = sys.argv[1], sys.argv[2]
rows = json.load(open(path))
for r in rows:
    gpus = r['gpus'] if r['fits'] else 64
    p = subprocess.run([mp, '--model', 'llama-3.1-70b', '--gpu', r['gpu'], '--gpus', str(gpus), '--format', 'json'],
                       capture_output=True, text=True)
    assert p.returncode == (0 if r['fits'] else 1), (r['gpu'], gpus, p.returncode, p.stderr)
    if r['fits']:
        d = json.loads(p.stdout)
        assert d['device_bytes'] == r['device_bytes'] and d['settings']['gpus'] == r['gpus'], (r['gpu'], d['device_bytes'], r)
    print('ok', r['gpu'], gpus)
EOF
if [ $? -eq 0 ]; then ok "table rows are plan --gpus N's plans ($(grep -c '^ok' "$tmp/agree.out") GPUs; nothing-fits rows exit 1 on 64)"; else bad "table and plan disagree"; cat "$tmp/agree.out"; fi

# --- host RAM: the GPU's typical machine is the default limit, --host-ram overrides
expect 0 "70B on 8 x rtx3060: fits, within a desktop's host RAM" -- "$mp" --model llama-3.1-70b --gpu rtx3060-12g --gpus 8
has out "host RAM ruled out"
has out "the 64.00 GiB of a desktop"
lacks out "best plan: full fine-tuning"
expect 0 "the same with a server's host RAM: full fine-tuning" -- "$mp" --model llama-3.1-70b --gpu rtx3060-12g --gpus 8 --host-ram 2TiB
has out "best plan: full fine-tuning"
has out "within --host-ram 2048.00 GiB"
expect 0 "8B full on 2 x 4090: the verdict states the node's host RAM" -- "$mp" --model llama-3.1-8b --gpu rtx4090 --gpus 2 --task full
has out "host RAM "
has out "per node, 2 processes"
has out "within the 64.00 GiB of a desktop"
expect 1 "estimate over a desktop's host RAM: does not fit" -- "$mp" estimate --model llama-3.1-8b --gpu rtx4090 --gpus 2 --task full --zero 3 --offload optimizer --precision mixed-bf16
has out "over the 64.00 GiB of a desktop"
expect 0 "an H100's limit is the p5.48xlarge's" -- "$mp" estimate --model gpt2 --gpu h100-80g --format json
if python3 -c "
import json
d = json.load(open('$tmp/out'))
assert d['host_ram_limit_bytes'] == 2048 * 2**30 and 'p5.48xlarge' in d['host_ram_limit_from'], d['host_ram_limit_from']
"; then ok "json: host_ram_limit_bytes 2048 GiB, from AWS p5.48xlarge"; else bad "json host RAM limit"; fi
if python3 - profiles/gpus.csv <<'EOF'
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#')))
missing = [r['name'] for r in rows if not r['host_ram_gib'] or float(r['host_ram_gib']) <= 0 or not r['host_ram_source']]
assert not missing, missing
EOF
then ok "every GPU profile has host_ram_gib and its source"; else bad "a GPU profile lacks host_ram_gib or host_ram_source"; fi

# --- the stack: named in the verdict; hf's disagreement said in one line when no --framework
qlora_t4="--model llama-3.1-8b --gpu t4 --task qlora --batch 4 --checkpointing full --attention flash --ce chunked --precision mixed-fp16"
# shellcheck disable=SC2086
expect 0 "8B QLoRA on a T4, batch 4: fits the generic profile" -- "$mp" estimate $qlora_t4
has out "(pytorch profile)"
has out "under --framework hf (Trainer + PEFT, most run):"
has out "does not fit"
# shellcheck disable=SC2086
expect 1 "the same under hf: does not fit" -- "$mp" estimate $qlora_t4 --framework hf
has out "(hf profile)"
lacks out "under --framework hf"
# shellcheck disable=SC2086
expect 0 "a stack named: no other stack's line" -- "$mp" estimate $qlora_t4 --framework pytorch
lacks out "under --framework hf"

# --- alternatives differ by more than the speed model's tie (MP_SPEED_TIE, 5%) in memory or speed
for args in "--params 7e9 --gpu 12GB" "--model llama-3.1-8b --gpu rtx4090 --gpus 2 --task full" "--model llama-3.1-8b --gpu 24GB"; do
    # shellcheck disable=SC2086
    "$mp" $args --format json >"$tmp/alt.json"
    if python3 - "$tmp/alt.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
plans = [(d['device_bytes'], d['tokens_per_s'])] + [(a['device_bytes'], a['tokens_per_s']) for a in d['alternatives']]
for i in range(len(plans)):
    for j in range(i):
        (m1, s1), (m2, s2) = plans[i], plans[j]
        assert abs(m1 - m2) > 0.05 * max(m1, m2) or abs(s1 - s2) > 0.05 * max(s1, s2), (i, j, plans)
EOF
    then ok "$args: no near-duplicate alternatives"; else bad "$args: alternatives within the tie"; fi
done

# --- tables within 120 columns unless --wide, in a buyer's words
width() { awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$tmp/out"; }
expect 0 "one-model table" -- "$mp" table --model llama-3.1-8b
w=$(width); if [ "$w" -le 120 ]; then ok "table: $w columns"; else bad "table: $w columns, over 120"; fi
lacks out "_bytes"
has out "device_gib"
has out "full fine-tuning, 8-bit AdamW"
expect 0 "the same --wide" -- "$mp" table --model llama-3.1-8b --wide
w=$(width); if [ "$w" -gt 120 ]; then ok "table --wide: $w columns, every setting"; else bad "table --wide is only $w columns"; fi
has out "lora-targets"
expect 0 "matrix of three models on every GPU" -- "$mp" table --models llama-3.1-8b,llama-3.1-70b,gpt2
w=$(width); if [ "$w" -le 120 ]; then ok "matrix: $w columns"; else bad "matrix: $w columns, over 120"; fi
lacks out "pure bf16"
lacks out "x ZeRO-3"
expect 0 "ladder" -- "$mp" ladder --model llama-3.1-8b --gpu 24GB
w=$(width); if [ "$w" -le 120 ]; then ok "ladder: $w columns"; else bad "ladder: $w columns, over 120"; fi
expect 0 "sweep" -- "$mp" sweep --model llama-3.1-8b --gpu 24GB --top 20
w=$(width); if [ "$w" -le 120 ]; then ok "sweep: $w columns"; else bad "sweep: $w columns, over 120"; fi
expect 2 "--wide is for tables" -- "$mp" --model gpt2 --gpu 24GB --wide
has err "--wide is for memplan table, ladder and sweep"

# --- the plot's subtitle names what is drawn
expect 0 "plot of 8B on 24GB" -- "$mp" plot --model llama-3.1-8b --gpu 24GB -o "$tmp/p.svg"
sub=$(grep -o '<desc>[^<]*' "$tmp/p.svg")
for kind in QLoRA LoRA "full fine-tuning"; do
    drawn=$(grep -c "[0-9]\. $kind" "$tmp/p.svg")
    case "$sub" in *"$kind"*) said=1 ;; *) said=0 ;; esac
    if [ "$drawn" -eq 0 ] || [ "$said" -eq 1 ] || grep -q "1\. $kind" "$tmp/p.svg"; then ok "plot: $kind drawn $drawn time(s), the subtitle agrees"
    else bad "plot draws $kind but the subtitle does not say it: $sub"; fi
done

echo "verdicts: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
