#!/bin/sh
# Hostile input to memplan (issue 36): model names from a stranger's config.json in
# every emitted file, profile tables, planted links and special files at the output,
# bundles that cannot be written whole, sizes, quantisation configs, calibration
# measurements, torchtune's launcher. Each case: exit status, one line on stderr,
# nothing written or changed.
bin=${1:-build/bin}
. tests/lib.sh
mp="$bin/memplan"
one_line_err() { lines=$(wc -l <"$tmp/err"); if [ "$lines" -eq 1 ]; then ok "$1: one line on stderr"; else bad "$1: $lines lines on stderr"; fi; }
# state DIR: every path under DIR with its type, mode and content checksum
state() { (cd "$1" && find . -print0 | sort -z | xargs -0 stat -c '%n %F %a' && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }
unchanged() { state "$1" >"$tmp/after"; if cmp -s "$2" "$tmp/after"; then ok "$3: nothing written or changed"; else bad "$3: something changed"; diff "$2" "$tmp/after" | head -5; fi; }

# ---- 1. a model's name in every emitted file: read back exactly, or comments only
# config.json files named NAME.json whose _name_or_path is a hostile string
python3 - "$tmp" <<'EOF'
import json, sys
d = sys.argv[1]
shape = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
         "vocab_size": 32000, "intermediate_size": 1376, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5}
names = {
    "plain": "org/plain-model",
    "python": 'x"\nimport os; os.system("true")\nlr = 9\n$(true)',
    "quotes": "a'b\"c\\d\re\x1b[31mred\x07",
    "shell": "$(touch pwned) `touch pwned2`; rm -rf ~ && echo ${HOME} | cat",
    "yaml": "key: value # {x: [1, *a, &b, !tag], y: |, z: >} % @ `",
    "unicode": "mod\u00e8l\u202eevil\u2028line\u0085nel\ufeff\u0000end".replace("\u0000", "\u0001"),
    "long-line": "m" * 1000,
}
for k, v in names.items():
    json.dump(dict(shape, _name_or_path=v), open("%s/%s.json" % (d, k), "w"))
    open("%s/%s.name" % (d, k), "w", encoding="utf-8", newline="").write(v)
# a 10,000-byte name, a NUL in it, bytes that are not UTF-8
json.dump(dict(shape, _name_or_path="n" * 10000), open(d + "/huge.json", "w"))
open(d + "/nul.json", "w").write(json.dumps(dict(shape))[:-1] + ', "_name_or_path": "a\\u0000b"}')
open(d + "/latin1.json", "wb").write(json.dumps(dict(shape))[:-1].encode() + b', "_name_or_path": "caf\xe9"}')
EOF
emit_all() { # NAME DIR: every target memplan writes, for the model of NAME.json (estimates: no search)
    c="$tmp/$1.json" o="$2"
    mkdir -p "$o"
    e() { "$mp" estimate --hf-config "$c" --batch 1 --seq 64 "$@" >/dev/null 2>>"$o/err"; }
    e --lora-rank 16 --precision amp-bf16 --emit hf -o "$o/single/" &&
    e --gpus 2 --zero 3 --precision amp-bf16 --emit hf -o "$o/fsdp/" &&
    e --gpus 2 --zero 2 --framework deepspeed --precision mixed-bf16 --emit hf -o "$o/deepspeed/" &&
    e --framework memtrain --emit memtrain -o "$o/m.cfg" &&
    e --gpus 2 --zero 3 --precision amp-bf16 --emit accelerate -o "$o/a.yaml" &&
    e --gpus 2 --zero 2 --framework deepspeed --precision mixed-bf16 --emit deepspeed -o "$o/ds.json" &&
    e --lora-rank 16 --precision mixed-bf16 --emit axolotl -o "$o/axolotl/" &&
    e --lora-rank 16 --precision mixed-bf16 --emit llamafactory -o "$o/llamafactory/"
}
if emit_all plain "$tmp/e-plain"; then ok "the plain name: every target written"; else bad "the plain name: a target failed"; cat "$tmp/e-plain/err"; fi
# every file of every name in one python3 (its start is most of the time)
set --
for n in python quotes shell yaml unicode long-line; do
    if ! emit_all "$n" "$tmp/e-$n"; then bad "name '$n': a target failed"; sed 's/^/    /' "$tmp/e-$n/err"; continue; fi
    for part in single fsdp deepspeed m.cfg a.yaml ds.json axolotl llamafactory; do
        set -- "$@" "$tmp/$n.name" "$tmp/e-$n/$part" "$tmp/e-plain/$part"
    done
done
if python3 tests/hostile/check_emitted.py "$@" >"$tmp/why"; then
    ok "6 hostile names x 8 targets: every file parses, the model's id reads each name back, nothing else changes"
else
    bad "hostile names change emitted files"; sed 's/^/    /' "$tmp/why" | head -10
fi
[ -e pwned ] || [ -e pwned2 ] || [ -e "$tmp/pwned" ] && bad "a name ran a command" || ok "no name ran a command"
# refused, with one line, nothing written
for n in huge nul latin1; do
    mkdir -p "$tmp/r-$n"
    state "$tmp/r-$n" >"$tmp/before"
    expect 2 "name '$n' refused" -- "$mp" --hf-config "$tmp/$n.json" --gpu 80GB --emit hf -o "$tmp/r-$n/"
    one_line_err "name '$n'"
    unchanged "$tmp/r-$n" "$tmp/before" "name '$n'"
    [ $n = huge ] && has err "_name_or_path is 10000 bytes long"
done

# ---- 9. what memplan prints of a name: no raw control byte on a terminal
"$mp" --hf-config "$tmp/quotes.json" --gpu 24GB >"$tmp/out" 2>&1
if LC_ALL=C grep -q "$(printf '[\001-\011\013-\037\177]')" "$tmp/out"; then bad "the report prints raw control bytes"; else ok "the report escapes the name's control bytes"; fi
for f in csv json; do
    "$mp" estimate --hf-config "$tmp/quotes.json" --gpu 24GB --format $f >"$tmp/out" 2>&1
    if LC_ALL=C grep -q "$(printf '[\001-\011\013-\037\177]')" "$tmp/out"; then bad "--format $f prints raw control bytes"; else ok "--format $f escapes them"; fi
done
"$mp" plot --hf-config "$tmp/quotes.json" --gpu 24GB -o "$tmp/p.svg" >/dev/null 2>&1
if xmllint --noout "$tmp/p.svg" 2>/dev/null; then ok "plot: the SVG with the name is well-formed XML"; else bad "plot: the SVG is not XML"; fi

# ---- 2. profile tables: any number of rows, every cell checked
mkdir -p "$tmp/prof"
cp profiles/*.csv "$tmp/prof/"
python3 - "$tmp/prof" <<'EOF'
import csv, sys
d = sys.argv[1]
lines = open(d + "/models.csv").read().splitlines(True)
head = next(csv.reader(l for l in lines if not l.startswith("#")))
row = next(r for r in csv.DictReader(l for l in lines if not l.startswith("#")) if r["name"] == "gpt2")
with open(d + "/models.csv", "a") as f:
    w = csv.DictWriter(f, head)
    for i in range(2000):
        w.writerow(dict(row, name="extra-%d" % i, aliases=""))
EOF
expect 0 "models.csv of 2,056 rows loads" -- env MEMPLAN_PROFILES="$tmp/prof" "$mp" list models
if [ "$(wc -l <"$tmp/out")" -ge 2056 ]; then ok "every row listed"; else bad "rows lost: $(wc -l <"$tmp/out")"; fi
expect 0 "a model of row 2,000 is found" -- env MEMPLAN_PROFILES="$tmp/prof" "$mp" estimate --model extra-1999 --batch 1 --seq 64
python3 - "$tmp/prof" <<'EOF'
import sys
d = sys.argv[1]
rows = open(d + "/models.csv").read().splitlines(True)
last = rows[-1]
with open(d + "/models.csv", "a") as f:
    for i in range(8000):
        f.write(last.replace("extra-1999", "more-%d" % i, 1))
EOF
expect 2 "models.csv of 10,056 rows refused" -- env MEMPLAN_PROFILES="$tmp/prof" "$mp" list models
one_line_err "10,056 rows"
has err "at most 10000 are read"
cp profiles/models.csv "$tmp/prof/models.csv"
bad_gpu() { # WHAT FROM TO: gpus.csv with the first FROM made TO (GNU sed: \xHH is a byte)
    sed "0,/$2/s//$3/" profiles/gpus.csv >"$tmp/prof/gpus.csv"
    expect 2 "gpus.csv with $1 refused" -- env MEMPLAN_PROFILES="$tmp/prof" "$mp" --model gpt2 --gpu t4
    one_line_err "gpus.csv with $1"
}
bad_gpu "an ESC in a name" "^t4," "t4\\x1b[2J,"
bad_gpu "a byte that is not UTF-8" "^t4," "t4\\xff,"
bad_gpu "a 100-byte name" "^t4," "$(printf 't%.0s' $(seq 100)),"
bad_gpu "memory 'nan'" "15360" "nan"
bad_gpu "memory '0x10'" "15360" "0x10"
cp profiles/gpus.csv "$tmp/prof/gpus.csv"

# ---- 6. the output path: planted links, special files, mode and owner, stale temporaries
mkdir -p "$tmp/o"
echo "precious" >"$tmp/o/target"
# the old temporary name was PATH.tmp.PID: plant it as a link, then exec memplan as that PID
sh -c 'ln -s "$1/target" "$1/out.json.tmp.$$"; exec "$2" estimate --model gpt2 --emit deepspeed --zero 1 --gpus 2 \
    --framework deepspeed -o "$1/out.json"' sh "$tmp/o" "$mp" >/dev/null 2>&1
if [ "$(cat "$tmp/o/target")" = precious ]; then ok "a link planted at the temporary name is not followed"; else bad "a planted link redirected the write"; fi
if python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/o/out.json" 2>/dev/null; then ok "the output written"; else bad "no output"; fi
rm -f "$tmp/o"/out.json.tmp.*
mkfifo "$tmp/o/fifo"
timeout 20 cat "$tmp/o/fifo" >"$tmp/o/from-fifo" & # a FIFO replaced by a file would leave cat waiting
expect 0 "-o a FIFO" -- "$mp" estimate --model gpt2 --emit deepspeed --zero 1 --gpus 2 --framework deepspeed -o "$tmp/o/fifo"
wait
if [ -p "$tmp/o/fifo" ] && grep -q zero_optimization "$tmp/o/from-fifo"; then ok "a FIFO is written through, not replaced"; else bad "the FIFO was replaced or not written"; fi
if [ "$(id -u)" = 0 ] && mknod "$tmp/o/null" c 1 3 2>/dev/null; then
    expect 0 "-o a character device (as root)" -- "$mp" estimate --model gpt2 --emit memtrain --framework memtrain -o "$tmp/o/null"
    if [ -c "$tmp/o/null" ]; then ok "the device stays a device"; else bad "the device was replaced by a file"; fi
else
    ok "skip: a character device needs root"
fi
expect 0 "-o - writes to standard output" -- "$mp" estimate --model gpt2 --emit memtrain --framework memtrain -o -
has out "memtrain config written by memplan"
echo old >"$tmp/o/kept.cfg"; chmod 600 "$tmp/o/kept.cfg"
expect 0 "-o over an existing file" -- "$mp" estimate --model gpt2 --emit memtrain --framework memtrain -o "$tmp/o/kept.cfg"
if [ "$(stat -c %a "$tmp/o/kept.cfg")" = 600 ]; then ok "an existing file keeps its mode"; else bad "mode $(stat -c %a "$tmp/o/kept.cfg")"; fi
expect 0 "-o a new file" -- "$mp" estimate --model gpt2 --emit launch -o "$tmp/o/launch.sh"
if [ "$(stat -c %a "$tmp/o/launch.sh")" = 755 ]; then ok "a new launch.sh is 755"; else bad "mode $(stat -c %a "$tmp/o/launch.sh")"; fi
sleep 300 & live=$!
touch "$tmp/o/kept.cfg.tmp.99999999" "$tmp/o/.kept.cfg.memplan-99999999-AbC123" "$tmp/o/.kept.cfg.memplan-$live-XyZ789"
expect 0 "-o again" -- "$mp" estimate --model gpt2 --emit memtrain --framework memtrain -o "$tmp/o/kept.cfg"
if [ ! -e "$tmp/o/kept.cfg.tmp.99999999" ] && [ ! -e "$tmp/o/.kept.cfg.memplan-99999999-AbC123" ]; then ok "a dead writer's temporary files are removed"; else bad "stale temporary files left"; fi
if [ -e "$tmp/o/.kept.cfg.memplan-$live-XyZ789" ]; then ok "a live writer's temporary file is left alone"; else bad "a live writer's file was removed"; fi
kill $live 2>/dev/null
mkdir -p "$tmp/o/adir"
state "$tmp/o" >"$tmp/before"
expect 2 "-o a directory for a one-file target" -- "$mp" estimate --model gpt2 --emit memtrain --framework memtrain -o "$tmp/o/adir"
one_line_err "-o a directory"
unchanged "$tmp/o" "$tmp/before" "-o a directory"

# ---- 13. a bundle is written whole or not at all
mkdir -p "$tmp/bundle"
"$mp" --model gpt2 --gpu 24GB --emit hf -o "$tmp/bundle/" >/dev/null 2>&1
mkdir "$tmp/bundle/README.txt.new" && rm -f "$tmp/bundle/README.txt" && mv "$tmp/bundle/README.txt.new" "$tmp/bundle/README.txt"
state "$tmp/bundle" >"$tmp/before"
expect 2 "a bundle whose README.txt is a directory" -- "$mp" --model gpt2 --gpu 24GB --task lora --emit hf -o "$tmp/bundle/"
one_line_err "a bundle that cannot be written"
unchanged "$tmp/bundle" "$tmp/before" "a bundle that cannot be written (train.py kept)"

# ---- 10. sizes, quantisation configs, calibration
for v in 12g 12m 0x10GB 0x1p4GB nanGB infGB 1e999GB -5GB; do
    expect 2 "--gpu $v refused" -- "$mp" --model gpt2 --gpu "$v"
    one_line_err "--gpu $v"
done
expect 0 "--gpu 12gb (a two-letter unit, any case)" -- "$mp" estimate --model gpt2 --gpu 12gb
python3 - "$tmp" <<'EOF'
import json, sys
d = sys.argv[1]
shape = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 4, "num_attention_heads": 32,
         "vocab_size": 32000, "intermediate_size": 11008, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5}
json.dump(dict(shape, quantization_config={"quant_method": "bitsandbytes", "load_in_4bit": True,
                                           "load_in_8bit": True}), open(d + "/both.json", "w"))
json.dump(dict(shape, quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 100}),
          open(d + "/group.json", "w"))
EOF
expect 2 "quantization_config with 4- and 8-bit refused" -- "$mp" estimate --hf-config "$tmp/both.json"
has err "both load_in_4bit and load_in_8bit"
expect 2 "a GPTQ group size that does not divide the width refused" -- "$mp" estimate --hf-config "$tmp/group.json"
has err "'group_size' 100 does not divide"
head -1 tests/data/pytorch_cpu_measurements.csv >"$tmp/tiny.csv"
tail -n +2 tests/data/pytorch_cpu_measurements.csv | python3 -c "
import csv, sys
head = open(sys.argv[1]).readline().strip().split(',')
i = head.index('allocated_peak_bytes')
w = csv.writer(sys.stdout, lineterminator='\n')
for r in csv.reader(sys.stdin):
    r[i] = '12'
    w.writerow(r)" "$tmp/tiny.csv" >>"$tmp/tiny.csv"
expect 2 "calibration from peaks of 12 bytes refused" -- "$mp" calibrate "$tmp/tiny.csv" --framework pytorch-cpu -o "$tmp/tiny-profile.csv"
one_line_err "calibration from peaks of 12 bytes"
if [ -e "$tmp/tiny-profile.csv" ]; then bad "a profile was written"; else ok "no profile written"; fi

# ---- 12. the same plan exits the same with or without -o
expect 1 "an estimate that does not fit, config to stdout" -- "$mp" estimate --model llama-2-7b --gpu 8GB --emit memtrain --framework memtrain
expect 1 "the same to -o" -- "$mp" estimate --model llama-2-7b --gpu 8GB --emit memtrain --framework memtrain -o "$tmp/nofit.cfg"

# ---- 14. torchtune: the launcher's paths and shard names, the builder's shape
"$mp" --model llama-3.2-1b --gpu 24GB --emit torchtune -o "$tmp/tt/" >/dev/null 2>&1
mkdir -p "$tmp/stub" -- "$tmp/-m d,'x]" "$tmp/bad\${x}"
touch -- "$tmp/-m d,'x]/a,b].safetensors" "$tmp/-m d,'x]/model-2.safetensors" "$tmp/bad\${x}/m.safetensors"
printf '#!/bin/sh\nfor a in "$@"; do printf "%%s\\n" "$a"; done >"$TUNE_ARGS"\n' >"$tmp/stub/tune"
chmod +x "$tmp/stub/tune"
(cd "$tmp" && CDPATH=/ PATH="$tmp/stub:$PATH" TUNE_ARGS="$tmp/argv" bash "$tmp/tt/launch.sh" "da ta'.txt" "-m d,'x]" 2>/dev/null)
if python3 - "$tmp/argv" <<'EOF'
import sys, yaml
over = dict(a.split("=", 1) for a in open(sys.argv[1]).read().split("\n")[4:] if a)
got = {k: yaml.safe_load(v) for k, v in over.items()}
assert sorted(got["checkpointer.checkpoint_files"]) == ["a,b].safetensors", "model-2.safetensors"], got
assert got["checkpointer.checkpoint_dir"] == "-m d,'x]", got
assert got["dataset.data_files"] == "da ta'.txt", got
EOF
then ok "torchtune launch.sh: a folder named -m d,'x] and a shard a,b] reach tune run as themselves (CDPATH set)"
else bad "torchtune launch.sh mangles paths"; fi
(cd "$tmp" && PATH="$tmp/stub:$PATH" TUNE_ARGS="$tmp/argv2" bash "$tmp/tt/launch.sh" data.txt "bad\${x}" >"$tmp/out" 2>"$tmp/err")
rc=$?
if [ $rc -eq 2 ] && [ ! -e "$tmp/argv2" ]; then ok "torchtune launch.sh refuses a path with \${ (exit 2, tune not run)"; else bad "a path with \${ reached tune run (exit $rc)"; fi
python3 -c "
import json
json.dump({'model_type': 'llama', '_name_or_path': 'meta-llama/Llama-3.2-1B', 'hidden_size': 8192,
           'num_hidden_layers': 80, 'num_attention_heads': 64, 'num_key_value_heads': 8,
           'intermediate_size': 28672, 'vocab_size': 128256, 'max_position_embeddings': 131072,
           'rms_norm_eps': 1e-5, 'tie_word_embeddings': True}, open('$tmp/big1b.json', 'w'))"
expect 2 "a 70B-shaped config named Llama-3.2-1B gets no 1B builder" -- "$mp" estimate --hf-config "$tmp/big1b.json" \
    --framework torchtune --precision pure-bf16 --emit torchtune
has err "no torchtune builder memplan knows has the shape"

echo "hostile memplan: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
