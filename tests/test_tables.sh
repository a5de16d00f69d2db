#!/bin/sh
# test_tables.sh — memplan table, ladder, sweep and plot end to end: every row
# agrees with `memplan estimate` for the same settings (bytes compared exactly),
# Markdown and SVG parse back, bad input gives one error line and exit 2.
# Usage: tests/test_tables.sh [BIN]   (run from the repository root; needs python3, xmllint)
bin=${1:-build/bin}
. tests/lib.sh
mp="$bin/memplan"
# py DESCRIPTION [ARGS] <SCRIPT: a python3 check read from stdin, ok when it exits 0
py() {
    what=$1; shift
    if python3 - "$@" >"$tmp/py.out" 2>&1; then ok "$what${VERBOSE:+: $(tail -1 "$tmp/py.out")}"; else bad "$what"; sed 's/^/    /' "$tmp/py.out" | tail -8; fi
}
# usage_error DESCRIPTION 'QUOTED' -- command...: exit 2, one line "memplan: error: ..." naming 'QUOTED'
usage_error() {
    what=$1 quoted=$2; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    n=$(wc -l <"$tmp/err")
    if [ $rc -eq 2 ] && [ "$n" -eq 1 ] && grep -q "^memplan: error: " "$tmp/err" && grep -qF -- "$quoted" "$tmp/err" &&
        [ ! -s "$tmp/out" ]; then
        ok "$what: exit 2, one line naming $quoted"
    else
        bad "$what: exit $rc, $n lines, wanted one naming $quoted"; sed 's/^/    /' "$tmp/err" | head -3
    fi
}

GPUS=rtx3060-12g,rtx4090,a100-80g,h100-80g,6GB

# --- table: each row is what `memplan estimate` says for the row's settings
expect 0 "table json" -- "$mp" table --model llama-2-7b --gpus $GPUS --format json
cp "$tmp/out" "$tmp/table.json"
expect 0 "table lora json" -- "$mp" table --model llama-3.1-8b --task lora --gpus rtx3060-12g,rtx4090,t4,a100-40g --format json
cp "$tmp/out" "$tmp/table-lora.json"
cat >"$tmp/agree.py" <<'EOF'
import json, subprocess, sys
mp, files = sys.argv[1], sys.argv[2:]
checked = 0
for path in files:
    for r in json.load(open(path)):
        args = [mp, 'estimate', '--model', r['model'], '--gpu', r['gpu'], '--format', 'json',
                '--precision', r['precision'], '--optimizer', r['optimizer'], '--quant', r['quant'],
                '--lora-rank', str(r['lora-rank']), '--checkpointing', r['checkpointing'],
                '--attention', r['attention'], '--ce', r['ce'], '--batch', str(r['batch']),
                '--accum', str(r['accum']), '--seq', str(r['seq']), '--zero', str(r['zero']),
                '--offload', r['offload'], '--gpus', str(r['gpus'])]
        if r['lora-rank']:
            args += ['--lora-targets', r['lora-targets']]
        p = subprocess.run(args, capture_output=True, text=True)
        assert p.returncode in (0, 1), (args, p.stderr)
        e = json.loads(p.stdout)
        assert e['device_bytes'] == r['device_bytes'], (r['gpu'], e['device_bytes'], r['device_bytes'])
        assert e['budget_bytes'] == r['capacity_bytes'], (r['gpu'], e['budget_bytes'], r['capacity_bytes'])
        assert e['fits'] == r['fits'], (r['gpu'], e['fits'], r['fits'])
        assert e['tokens_per_s'] == r['tokens_per_s'], (r['gpu'], e['tokens_per_s'], r['tokens_per_s'])
        assert (r['gpus'] > 1) == (r['note'] is not None and 'memplan plan --gpus %d fits' % r['gpus'] in r['note']), r
        checked += 1
print(checked, 'rows agree')
assert checked == 9, checked
EOF
py "table rows agree with memplan estimate (device bytes exactly, fits, tokens/s)" "$mp" "$tmp/table.json" "$tmp/table-lora.json" <"$tmp/agree.py"
py "the 6GB row needs several GPUs (a power of two) with ZeRO-3; one-GPU rows fit" "$tmp/table.json" <<'EOF'
import json, sys
rows = {r['gpu']: r for r in json.load(open(sys.argv[1]))}
g = rows['6GB']['gpus']
assert g >= 2 and g & (g - 1) == 0 and rows['6GB']['zero'] == 3 and rows['6GB']['fits'], rows['6GB']
assert all(r['gpus'] == 1 and r['fits'] and r['note'] is None for g, r in rows.items() if g != '6GB')
EOF

# --- the binary's CSV read back with libcsv (tests/test_table_csv.c FILE ROWS COLUMNS)
csvcheck="$bin/../tests/test_table_csv"
libcsv_reads() {
    what=$1; shift
    if [ ! -x "$csvcheck" ]; then echo "     ($what: $csvcheck not built; make test builds it)"; return; fi
    if "$csvcheck" "$@" >"$tmp/csvcheck.out" 2>&1; then ok "libcsv reads $what"; else bad "libcsv reads $what"; grep -v '^ok' "$tmp/csvcheck.out" | head -5; fi
}
"$mp" table --model llama-2-7b --gpus $GPUS --format csv >"$tmp/table.csv"
libcsv_reads "the table CSV: 5 rows x 24 fields" "$tmp/table.csv" 5 24
"$mp" table --models gpt2,llama-2-7b,mistral-7b,llama-3.1-70b --gpus rtx3060-12g,rtx4090,a100-80g,h100-80g --format csv >"$tmp/matrix.csv"
libcsv_reads "the matrix CSV: 4 rows x 5 fields" "$tmp/matrix.csv" 4 5
"$mp" ladder --model llama-2-7b --batch 8 --gpu rtx4090 --format csv >"$tmp/ladder.csv"
libcsv_reads "the ladder CSV: 7 rows x 25 fields" "$tmp/ladder.csv" 7 25
"$mp" sweep --model gpt2 --gpu 24GB --top 50 --format csv >"$tmp/sweep.csv"
libcsv_reads "the sweep CSV: 50 rows x 24 fields" "$tmp/sweep.csv" 50 24

# --- the matrix names, per cell, what the one-model table recommends
expect 0 "matrix json" -- "$mp" table --models gpt2,llama-2-7b,mistral-7b,llama-3.1-70b --gpus rtx3060-12g,rtx4090,a100-80g,h100-80g --format json
cp "$tmp/out" "$tmp/matrix.json"
for m in gpt2 llama-2-7b mistral-7b llama-3.1-70b; do
    "$mp" table --model $m --gpus rtx3060-12g,rtx4090,a100-80g,h100-80g --format json >"$tmp/one-$m.json"
done
py "matrix cells match the one-model tables" "$tmp/matrix.json" "$tmp" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r['model'] for r in rows] == ['gpt2', 'llama-2-7b', 'mistral-7b', 'llama-3.1-70b']
for r in rows:
    assert list(r) == ['model', 'rtx3060-12g', 'rtx4090', 'a100-80g', 'h100-80g'], list(r)
    for one in json.load(open('%s/one-%s.json' % (sys.argv[2], r['model']))):
        cell = r[one['gpu']]
        if not one['fits']:
            assert cell is None, cell
            continue
        name = {'full': 'full fine-tuning', 'lora': 'LoRA', 'qlora': 'QLoRA'}[one['task']]
        assert cell.startswith(name), (cell, one)
        assert (' on %d GPUs' % one['gpus'] in cell) == (one['gpus'] > 1), (cell, one)
        assert ('8-bit AdamW' in cell) == (one['optimizer'] in ('adamw-8bit', 'paged-adamw-8bit')), (cell, one)
        assert ('CPU offload' in cell) == (one['offload'] != 'none'), (cell, one)
EOF
expect 0 "the issue's matrix as text" -- "$mp" table --models gpt2,llama-2-7b,mistral-7b,llama-3.1-70b --gpus rtx3060-12g,rtx4090,a100-80g,h100-80g
has out "gpu          gpt2"
has out "rtx3060-12g  full fine-tuning"
has out "QLoRA on 2 GPUs"
if awk 'length($0) > 120 { bad = 1 } END { exit bad }' "$tmp/out"; then ok "the matrix fits 120 columns"; else bad "a matrix line is over 120 columns"; fi
expect 0 "the matrix --wide: a row per model" -- "$mp" table --models gpt2,llama-2-7b,mistral-7b,llama-3.1-70b --gpus rtx3060-12g,rtx4090,a100-80g,h100-80g --wide
has out "model          rtx3060-12g"

# --- text states its units; default GPUs are every profile
expect 0 "table text, every GPU profile" -- "$mp" table --model llama-3.1-8b --task lora
has out "GiB (2^30 bytes)"
n=$(grep -c "  LoRA" "$tmp/out"); g=$("$mp" list gpus | wc -l)
if awk 'length($0) > 120 { bad = 1 } END { exit bad }' "$tmp/out"; then ok "the one-model table fits 120 columns"; else bad "a table line is over 120 columns"; fi
if [ "$n" -eq "$g" ]; then ok "one row per GPU profile ($n)"; else bad "$n rows for $g GPU profiles"; fi

# --- Markdown parses back: a header, a rule, a row per GPU, the JSON keys as columns
expect 0 "table markdown" -- "$mp" table --model llama-2-7b --gpus $GPUS --format markdown
cp "$tmp/out" "$tmp/table.md"
cat >"$tmp/md.py" <<'EOF'
import json, re, sys
lines = [l for l in open(sys.argv[1]).read().splitlines() if l.strip()]
def cells(line):
    assert line.startswith('|') and line.endswith('|'), line
    return [c.strip().replace('\\|', '|') for c in re.split(r'(?<!\\)\|', line[1:-1])]
head = cells(lines[0])
want = list(json.load(open(sys.argv[2]))[0].keys()) if sys.argv[2] != '-' else None
if want: assert head == want, (head, want)
assert all(re.fullmatch(r'-{3,}:?', c) for c in cells(lines[1])), lines[1]
body = [cells(l) for l in lines[2:]]
assert len(body) == int(sys.argv[3]), (len(body), sys.argv[3])
assert all(len(b) == len(head) for b in body), [len(b) for b in body]
print(len(body), 'rows x', len(head), 'columns')
EOF
py "markdown table: 5 rows x the JSON's columns" "$tmp/table.md" "$tmp/table.json" 5 <"$tmp/md.py"
expect 0 "matrix markdown" -- "$mp" table --models gpt2,llama-2-7b,mistral-7b,llama-3.1-70b --gpus rtx3060-12g,rtx4090,a100-80g,h100-80g --format markdown
cp "$tmp/out" "$tmp/matrix.md"
py "markdown matrix: 4 rows x 5 columns" "$tmp/matrix.md" "$tmp/matrix.json" 4 <"$tmp/md.py"
expect 0 "ladder markdown" -- "$mp" ladder --model llama-2-7b --batch 8 --seq 2048 --format markdown
cp "$tmp/out" "$tmp/ladder.md"

# --- ladder: each step is `memplan estimate` of its settings, components and all
expect 0 "ladder json" -- "$mp" ladder --model llama-2-7b --batch 8 --seq 2048 --gpu rtx4090 --format json
cp "$tmp/out" "$tmp/ladder.json"
py "markdown ladder: 7 steps x the JSON's columns" "$tmp/ladder.md" "$tmp/ladder.json" 7 <"$tmp/md.py"
py "ladder steps agree with memplan estimate (each component, device bytes)" "$mp" "$tmp/ladder.json" <<'EOF'
import json, subprocess, sys
mp, rows = sys.argv[1], json.load(open(sys.argv[2]))
assert [r['step'] for r in rows] == list(range(7)), [r['step'] for r in rows]
assert rows[0]['precision'] == 'fp32' and rows[0]['optimizer'] == 'adamw' and rows[0]['from'] is None
assert [r['from'] for r in rows[1:]] == [0, 1, 2, 3, 4, 3]
assert rows[5]['quant'] == 'nf4-dq' and rows[4]['lora-rank'] == 16 and rows[6]['offload'] == 'optimizer'
comp = ['weights', 'gradients', 'optimizer', 'activations', 'overhead']
for r in rows:
    args = [mp, 'estimate', '--model', 'llama-2-7b', '--batch', '8', '--seq', '2048', '--gpu', 'rtx4090',
            '--format', 'json', '--precision', r['precision'], '--optimizer', r['optimizer'],
            '--checkpointing', r['checkpointing'], '--lora-rank', str(r['lora-rank']),
            '--quant', r['quant'], '--zero', str(r['zero']), '--offload', r['offload']]
    p = subprocess.run(args, capture_output=True, text=True)
    e = json.loads(p.stdout)
    for c in comp:
        assert e['at_peak'][c] == r[c + '_bytes'], (r['step'], c, e['at_peak'][c], r[c + '_bytes'])
    assert e['device_bytes'] == r['device_bytes'] and e['host_bytes'] == r['host_bytes'], r['step']
    assert e['tokens_per_s'] == r['tokens_per_s'] and e['fits'] == r['fits'], r['step']
    if r['from'] is not None:
        prev = rows[r['from']]
        assert r['saving_prev_bytes'] == prev['device_bytes'] - r['device_bytes'], r['step']
        assert r['saving_base_bytes'] == rows[0]['device_bytes'] - r['device_bytes'], r['step']
EOF
expect 0 "ladder text without a GPU" -- "$mp" ladder --model llama-2-7b --batch 8 --seq 2048
has out "baseline: fp32 weights, AdamW"
has out "+ 4-bit base (nf4-dq)"
has out "+ CPU offload (ZeRO-2, CPU AdamW), from 3"
has out "GiB (2^30 bytes)"
expect 0 "ladder --task full stops before LoRA" -- "$mp" ladder --model gpt2 --task full --format csv
n=$(($(wc -l <"$tmp/out") - 1))
if [ "$n" -eq 5 ]; then ok "4 rungs and the offload branch"; else bad "$n rows, wanted 5"; fi

# --- sweep: every estimated combination, best first
expect 0 "sweep csv" -- "$mp" sweep --model llama-2-7b --gpu 24GB --format csv
py "sweep csv: thousands of rows, fits first, bytes add up" "$tmp/out" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) > 5000, len(rows)
fits = [r['fits'] for r in rows]
assert fits == sorted(fits, reverse=True), 'fits first'
assert {'paged-adamw', 'adamw-8bit'} <= {r['optimizer'] for r in rows}, 'exhaustive: paged twins too'
for r in rows:
    s = sum(int(r[c + '_bytes']) for c in ['weights', 'gradients', 'optimizer', 'activations', 'overhead'])
    assert abs(s - int(r['device_bytes'])) <= 3, r
EOF
expect 0 "sweep json --top 3" -- "$mp" sweep --model llama-2-7b --gpu 24GB --format json --top 3
py "sweep json: 3 rows, rank 1 is the plan" "$tmp/out" "$mp" <<'EOF'
import json, subprocess, sys
rows = json.load(open(sys.argv[1]))
assert [r['rank'] for r in rows] == [1, 2, 3]
plan = json.loads(subprocess.run([sys.argv[2], '--model', 'llama-2-7b', '--gpu', '24GB', '--format', 'json'],
                                 capture_output=True, text=True).stdout)
assert plan['device_bytes'] == rows[0]['device_bytes'], (plan['device_bytes'], rows[0]['device_bytes'])
EOF

# --- plot: well-formed SVG whose bars are the bytes, to one scale
expect 0 "plot the plan to a file" -- "$mp" plot --model llama-2-7b --gpu 24GB -o "$tmp/plan.svg"
if [ -s "$tmp/plan.svg" ] && [ ! -s "$tmp/out" ] && ! ls "$tmp" | grep -q '\.tmp\.'; then
    ok "-o wrote the SVG, nothing on stdout, no temporary left"
else bad "-o FILE"; ls "$tmp"; fi
if xmllint --noout "$tmp/plan.svg" 2>"$tmp/xml.err"; then ok "plan SVG is well-formed XML"; else bad "plan SVG"; head -3 "$tmp/xml.err"; fi
expect 0 "plan json" -- "$mp" --model llama-2-7b --gpu 24GB --format json
cp "$tmp/out" "$tmp/plan.json"
cat >"$tmp/svg.py" <<'EOF'
import json, sys
import xml.etree.ElementTree as ET
NS = '{http://www.w3.org/2000/svg}'
root = ET.parse(sys.argv[1]).getroot()
want = sys.argv[2:]  # JSON files: a ladder (a list of rows) or a plan (at_peak)
segs = [r for r in root.iter(NS + 'rect') if r.get('class') == 'seg']
bars = {}
for r in segs:
    bars.setdefault(int(r.get('data-bar')), {})[r.get('data-component')] = (float(r.get('y')), float(r.get('height')))
comp = ['weights', 'gradients', 'optimizer', 'activations', 'overhead']
data = json.load(open(want[0]))
rows = [{c: r[c + '_bytes'] for c in comp} for r in data] if isinstance(data, list) else [data['at_peak']]
assert len(bars) >= len(rows), (len(bars), len(rows))
# one scale: take it from the tallest segment, then every segment must follow it
h, b = max(((bars[i][c][1], rows[i][c]) for i in range(len(rows)) for c in comp))
k = h / b
assert abs(k * 2**30 - float(root.get('data-px-per-gib'))) < 1e-5, (k * 2**30, root.get('data-px-per-gib'))
worst = 0
for i, row in enumerate(rows):
    for c in comp:
        worst = max(worst, abs(bars[i][c][1] - row[c] * k))
    # stacked: each segment sits on the one below
    for lo, hi in zip(comp, comp[1:]):
        assert abs(bars[i][hi][0] + bars[i][hi][1] - bars[i][lo][0]) < 1e-3, (i, lo, hi)
assert worst < 1e-3, worst  # heights are written to 1e-4 px
# the capacity line sits at the GPU's bytes on the same scale
cap = [l for l in root.iter(NS + 'line') if l.get('class') == 'capacity']
if len(sys.argv) > 3:
    base = bars[0]['weights'][0] + bars[0]['weights'][1]
    assert abs((base - float(cap[0].get('y1'))) - float(sys.argv[3]) * k) < 1e-3, 'capacity line'
texts = ''.join(t.text or '' for t in root.iter(NS + 'text'))
assert 'GiB' in texts and root.find(NS + 'title') is not None
for c in comp:
    assert c in texts, c  # the legend
print(len(rows), 'bars; largest height error', worst, 'px')
EOF
py "plan SVG: bar 1 is the plan's components, heights proportional to bytes" "$tmp/plan.svg" "$tmp/plan.json" 24000000000 <"$tmp/svg.py"
expect 0 "plot the ladder to stdout" -- "$mp" plot --ladder --model llama-2-7b --batch 8 --seq 2048 --gpu rtx4090
cp "$tmp/out" "$tmp/ladder.svg"
if xmllint --noout "$tmp/ladder.svg" 2>"$tmp/xml.err"; then ok "ladder SVG is well-formed XML"; else bad "ladder SVG"; head -3 "$tmp/xml.err"; fi
py "ladder SVG: 7 bars, heights proportional to the ladder's bytes" "$tmp/ladder.svg" "$tmp/ladder.json" "$(awk 'BEGIN{printf "%.0f", 24564*1048576}')" <"$tmp/svg.py"
expect 0 "plot the ladder without a GPU" -- "$mp" plot --ladder --model gpt2
if xmllint --noout "$tmp/out" 2>/dev/null && ! grep -q 'class="capacity"' "$tmp/out"; then ok "no capacity line without --gpu"; else bad "ladder without GPU"; fi

# --- bad input: one line, the offending value in quotes, exit 2
usage_error "unknown GPU in the list" "'rtx4900'" -- "$mp" table --model gpt2 --gpus rtx4090,rtx4900
usage_error "empty GPU list" "''" -- "$mp" table --model gpt2 --gpus ''
usage_error "list of commas" "','" -- "$mp" table --model gpt2 --gpus ,
usage_error "empty item" "'gpt2,,llama-2-7b'" -- "$mp" table --models gpt2,,llama-2-7b
usage_error "unknown model in the list" "'llama-2-7x'" -- "$mp" table --models gpt2,llama-2-7x
usage_error "a model twice" "'gpt2'" -- "$mp" table --models gpt2,gpt2
usage_error "--ladder with --models" "'gpt2,llama-2-7b'" -- "$mp" plot --ladder --models gpt2,llama-2-7b --gpu 24GB
usage_error "--models outside table" "'gpt2,llama-2-7b'" -- "$mp" ladder --models gpt2,llama-2-7b
usage_error "--models with --model" "'gpt2,mistral-7b'" -- "$mp" table --model gpt2 --models gpt2,mistral-7b
usage_error "--gpu with --gpus LIST" "'a100-80g,h100-80g'" -- "$mp" table --model gpt2 --gpu rtx4090 --gpus a100-80g,h100-80g
usage_error "a GPU list outside table" "'rtx4090,h100'" -- "$mp" --model gpt2 --gpu 24GB --gpus rtx4090,h100
usage_error "markdown outside the tables" "'markdown'" -- "$mp" estimate --model gpt2 --format markdown
usage_error "bad table format" "'xml'" -- "$mp" table --model gpt2 --format xml
usage_error "plot is SVG only" "'csv'" -- "$mp" plot --model gpt2 --gpu 24GB --format csv
usage_error "emit with table" "'hf'" -- "$mp" table --model gpt2 --emit hf
usage_error "seq beyond positions" "'4096'" -- "$mp" table --model gpt2 --seq 4096
expect 2 "sweep needs a GPU" -- "$mp" sweep --model gpt2
has err "needs --gpu"
echo keep >"$tmp/keep.svg"
expect 2 "a failed plot keeps the old file" -- "$mp" plot --model gpt2 --gpu rtx4900 -o "$tmp/keep.svg"
if [ "$(cat "$tmp/keep.svg")" = keep ]; then ok "old file untouched"; else bad "old file clobbered"; fi

# --- the whole matrix: 20 models x 20 GPUs
models=$("$mp" list models | head -20 | paste -sd, -)
gpus=$("$mp" list gpus | head -20 | paste -sd, -)
# Its speed is a benchmark (make bench: table_20x20_ms), not a test.
"$mp" table --models "$models" --gpus "$gpus" --format csv >"$tmp/20x20.csv"
if [ "$(wc -l <"$tmp/20x20.csv")" -eq 21 ]; then ok "20 x 20 matrix: 20 rows"; else bad "20 x 20 matrix rows"; fi

# speed beside memory, with the model's error and generic-speed sizes named (issue 13)
expect 0 "table with a bare size" -- "$mp" table --model gpt2 --gpus rtx4090,24GB
has out "step_seconds"
has out "typically within"
has out "24GB is a size, not a profile"
expect 0 "ladder on a profile" -- "$mp" ladder --model gpt2 --gpu rtx4090
has out "step_seconds"
has out "typically within"

echo "tables: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
