#!/bin/sh
# test_speed.sh — the speed model against published throughput (tests/data/throughput.csv):
# each row is estimated with memplan at its published configuration and the ratio
# estimate / published printed; the median ratio must lie within 25% of 1 and the
# worst within a factor of 2.
# Usage: tests/test_speed.sh [BIN]   (run from the repository root; needs python3)
bin=${1:-build/bin}
. tests/lib.sh
python3 - "$bin/memplan" tests/data/throughput.csv >"$tmp/speed.out" 2>&1 <<'PY'
import csv, json, math, subprocess, sys
mp, path = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(l for l in open(path) if not l.startswith('#')))
ratios = []
for r in rows:
    args = [mp, 'estimate', '--model', r['model'], '--gpu', r['gpu'], '--gpus', r['gpus'],
            '--precision', r['precision'], '--optimizer', r['optimizer'], '--batch', r['batch'],
            '--seq', r['seq'], '--checkpointing', r['checkpointing'], '--zero', r['zero'],
            '--offload', r['offload'], '--format', 'json']
    if r['task'] != 'full':
        args += ['--lora-rank', r['lora_rank'], '--lora-targets', r['lora_targets'].replace(';', ',')]
    if r['task'] == 'qlora':
        args += ['--quant', 'nf4']
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        print('FAIL %s: memplan exit %d: %s' % (r['id'], p.returncode, p.stderr.strip()))
        continue
    est = json.loads(p.stdout)['tokens_per_s']
    if r['per'] == 'gpu':
        est /= float(r['gpus'])
    ratio = est / float(r['tokens_per_s'])
    ratios.append(ratio)
    print('row  %-26s published %7.0f tokens/s per %-3s  estimated %7.0f  ratio %.2f' % (r['id'], float(r['tokens_per_s']), r['per'], est, ratio))
ratios.sort()
n = len(ratios)
median = (ratios[(n - 1) // 2] + ratios[n // 2]) / 2
worst = max(ratios, key=lambda x: abs(math.log(x)))
print('median ratio %.2f, worst %.2f over %d rows' % (median, worst, n))
ok = n == len(rows) and n >= 15 and 0.8 <= median <= 1.25 and 0.5 <= worst <= 2.0
sys.exit(0 if ok else 1)
PY
rc=$?
cat "$tmp/speed.out"
if [ $rc -eq 0 ]; then ok "speed model: $(tail -1 "$tmp/speed.out")"; else bad "speed model outside its bounds: $(tail -1 "$tmp/speed.out")"; fi
# Each traffic term points the right way (same model and GPU, one thing changed).
tps() { "$bin/memplan" estimate --model llama-3.1-8b --precision mixed-bf16 --checkpointing full --format json "$@" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s"])'; }
faster() { # faster DESCRIPTION "ARGS A" "ARGS B": A estimates more tokens/s than B
    a=$(tps $2) b=$(tps $3)
    if python3 -c "import sys; sys.exit(0 if $a > $b else 1)"; then ok "$1 ($a > $b tokens/s)"; else bad "$1: $a vs $b tokens/s"; fi
}
faster "ZeRO-3 over NVLink beats PCIe" "--gpu a100-80g --gpus 8 --zero 3 --batch 1 --seq 512" "--gpu a100-80g-pcie --gpus 8 --zero 3 --batch 1 --seq 512"
faster "ZeRO-3 within a node beats across nodes, per GPU" "--gpu h100-80g --gpus 8 --zero 3 --batch 1 --seq 512" "--gpu h100-80g --gpus 16 --zero 3 --batch 1 --seq 512 --accum 1"
faster "no offload beats CPU offload" "--gpu a100-80g --batch 4 --seq 2048" "--gpu a100-80g --batch 4 --seq 2048 --zero 2 --offload optimizer"
faster "LoRA beats QLoRA (dequantisation)" "--gpu rtx4090 --batch 2 --seq 2048 --lora-rank 16" "--gpu rtx4090 --batch 2 --seq 2048 --lora-rank 16 --quant nf4"
faster "a fused optimizer step beats foreach" "--gpu a100-80g --batch 1 --seq 512 --optimizer-impl fused" "--gpu a100-80g --batch 1 --seq 512"
echo "speed: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
