#!/bin/sh
# tests/hostile/memtrain.sh BIN — memtrain against what strangers' files and planted paths
# can hold (issue 36): checkpoints whose fields are out of range (resealed, so that only the
# range checks stand in the way), resumes that change a setting, shards swapped between ranks
# and manifests whose counts overflow, non-finite losses, --mem-limit's two sides, a '#' in a
# config's data path, the exit status table of memtrain(1), and links planted at the outputs.
# Every refusal: its exit status, exactly one line on stderr naming the value, and nothing
# written or changed (a listing with checksums of the work folder, before and after).
bin=${1:-build/bin}
. tests/lib.sh
mt="$bin/memtrain"
if [ ! -x "$mt" ]; then
    echo "skip hostile memtrain: no $mt"
    exit 0
fi
w="$tmp/w"
mkdir -p "$w"

# The sanitizer build: OpenMPI's allocations, kept until exit, are not memtrain's leaks
# (tests/test_memtrain_mpi.sh looks for memtrain's own).
if ldd "$mt" | grep -q libasan; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi

# Copies of checkpoints with fields (trainer/checkpoint.h, train.c's state) set, then sealed
# again with the checksum the writer computes (FNV-1a is no secret), unless --noseal.
cat >"$tmp/ck.py" <<'EOP'
import shutil, struct, sys
HDR = struct.Struct('<8sIIQQiiiiQQQ')  # magic, version, header bytes, step, config hash,
TYPES = 'sIIQQiiiiQQQ'                 # rank, ranks, zero, reserved, settings, payload, checksum
NAMES = ['magic', 'version', 'header_bytes', 'step', 'config_hash', 'rank', 'ranks', 'zero',
         'reserved', 'settings_len', 'payload_len', 'checksum']
M64 = (1 << 64) - 1

def fnv(data, h=1469598103934665603):
    for b in data:
        h = ((h ^ b) * 1099511628211) & M64
    return h

def patch(path, specs, seal):
    b = bytearray(open(path, 'rb').read())
    slen = HDR.unpack_from(b)[9]
    rec = dict(l.split('=', 1) for l in b[72:72 + slen].decode().splitlines())
    s0 = 72 + slen  # the state: 8 words, then model, optimizer and data sections (size, bytes)
    sec, at = [], s0 + 64
    for _ in range(3):
        n = struct.unpack_from('<Q', b, at)[0]
        sec.append((at + 8, n))
        at += 8 + n
    (mo, mn), (oo, on), (do, dn) = sec
    for spec in specs:
        key, val = spec.split('=', 1)
        f = float(val) if val in ('nan', 'inf', '-inf') or '.' in val else None
        i = None if f is not None else int(val, 0)
        if key.startswith('hdr.'):
            fields, k = list(HDR.unpack_from(b)), NAMES.index(key[4:])
            fields[k] = i & M64 if TYPES[k] == 'Q' else i
            HDR.pack_into(b, 0, *fields)
        elif key == 'state.step':
            struct.pack_into('<Q', b, s0 + 24, i & M64)
        elif key == 'scale':
            struct.pack_into('<f', b, s0 + 40, f)
        elif key == 'opt.t':
            struct.pack_into('<q', b, oo, i)
        elif key.split('.')[0] in ('m8', 'm_amax'):
            # 8-bit AdamW: t, m8[n], v8[n], m_amax[nb], v_amax[nb]
            block = int(rec['adam8-block'])
            n = (on - 8) // 2
            while 2 * n + 8 * (-(-n // block)) != on - 8:
                n -= 1
            j = int(key.split('.')[1])
            if key.startswith('m8.'):
                b[oo + 8 + j] = i
            else:
                struct.pack_into('<f', b, oo + 8 + 2 * n + 4 * j, f)
        elif key == 'model.last':
            struct.pack_into('<f', b, mo + mn - 4, f)
        elif key == 'data.pos':
            struct.pack_into('<Q', b, do + 8, i & M64)
        elif key.startswith('tok.'):
            struct.pack_into('<H', b, do + 32 + 2 * int(key[4:]), i)
        else:
            sys.exit('unknown field ' + key)
    if seal:
        z = bytearray(b)
        struct.pack_into('<Q', z, 64, 0)
        struct.pack_into('<Q', b, 64, fnv(z))
    open(path, 'wb').write(b)

# each line of stdin: SOURCE-DIR COPY-DIR [--noseal] FIELD=VALUE... (one Python for all)
for line in sys.stdin:
    src, dst, *specs = line.split()
    shutil.copytree(src, dst)
    patch(dst + '/checkpoint.bin', [a for a in specs if a != '--noseal'], '--noseal' not in specs)
EOP

# the work folder as a listing: every entry's type and size, every link's target, every
# file's checksum
snap() {
    (cd "$w" && { find . -printf '%p %y %s %l\n'; find . -type f -exec cksum {} +; } | LC_ALL=C sort)
}
# one line on stderr; under mpirun, one line of memtrain's (mpirun adds its own account)
one_line() {
    if [ "${mpi:-0}" = 1 ]; then n=$(grep -c '^memtrain' "$tmp/err"); else n=$(wc -l <"$tmp/err"); fi
    if [ "$n" = 1 ]; then ok "$1: one line on stderr"
    else bad "$1: $n lines on stderr"; sed 's/^/    /' "$tmp/err" | head -5; fi
}
# refused CODE WHAT TEXT -- command...: exit CODE, one line holding TEXT, the work folder unchanged
refused() {
    code=$1 what=$2 text=$3
    shift 4
    before=$(snap)
    expect "$code" "$what" -- "$@"
    has err "$text"
    one_line "$what"
    if [ "$(snap)" = "$before" ]; then ok "$what: nothing written or changed"
    else bad "$what: the work folder changed"; fi
}
# the outputs a refused run would write, into the work folder
outs() { echo "--report $w/out.json --metrics $w/out.csv"; }

cat >"$tmp/s.cfg" <<'EOC'
# memtrain config written by memplan; run: memtrain --config FILE
family = gpt2
layers = 1
hidden = 16
heads = 2
vocab = 256
max-pos = 16
seq = 16
batch = 2
EOC
s="$tmp/s.cfg"

# ---------- 1. checkpoints: every field read back is range-checked ----------
"$mt" --config "$s" --steps 3 --quiet --save "$tmp/ck" || bad "a 3-step checkpoint"
"$mt" --config "$s" --steps 3 --quiet --save "$tmp/ck8" --optimizer adamw-8bit || bad "an 8-bit AdamW checkpoint"
"$mt" --config "$s" --steps 3 --quiet --save "$tmp/ckh" --precision mixed-fp16 || bad "an fp16 checkpoint"
"$mt" --config "$s" --steps 3 --quiet --save "$tmp/cks" --loader stream --shuffle-buffer 4 || bad "a stream checkpoint"
"$mt" --config "$s" --steps 3 --quiet --save "$tmp/ckq" --family llama --tied 0 --lora-rank 2 --quant nf4-dq \
    --precision mixed-bf16 || bad "a QLoRA checkpoint"
python3 "$tmp/ck.py" <<EOL || bad "the hostile checkpoints"
$tmp/ck8 $w/ck_code255 m8.0=255
$tmp/ck8 $w/ck_amaxnan m_amax.3=nan
$tmp/ck $w/ck_step62 hdr.step=0x4000000000000000 state.step=0x4000000000000000
$tmp/ck $w/ck_stepneg hdr.step=-5 state.step=-5
$tmp/ck $w/ck_stepstate state.step=-5
$tmp/ck $w/ck_optneg opt.t=-1
$tmp/ckh $w/ck_scalenan scale=nan
$tmp/ck $w/ck_pos data.pos=99999999
$tmp/cks $w/ck_tok tok.5=300
$tmp/ckq $w/ck_nf4 model.last=nan
$tmp/ck $w/ck_hdr --noseal hdr.step=2
$tmp/ck $w/ck_hdrstep hdr.step=2
$tmp/ck $w/ck_v1 hdr.version=1
EOL
refused 2 "an 8-bit state code of 255 (past the 128-entry map)" "8-bit first-moment code 255 at 0 is not a code" -- \
    "$mt" --config "$s" --optimizer adamw-8bit --steps 6 --quiet --resume "$w/ck_code255" --save "$w/ck_code255" $(outs)
refused 2 "a NaN 8-bit block scale" "block scale 3 is nan" -- \
    "$mt" --config "$s" --optimizer adamw-8bit --steps 6 --quiet --resume "$w/ck_amaxnan" $(outs)
refused 2 "step 2^62" "step 4611686018427387904 is out of range" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/ck_step62" --save "$w/ck_step62" $(outs)
refused 2 "step -5" "step -5 is out of range" -- "$mt" --config "$s" --steps 6 --quiet --resume "$w/ck_stepneg" $(outs)
refused 2 "step -5 in the state alone" "state: step -5 is out of range" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/ck_stepstate" $(outs)
refused 2 "a negative optimizer step count" "optimizer step count -1" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/ck_optneg" $(outs)
refused 2 "a NaN loss scale" "loss scale nan is out of range" -- \
    "$mt" --config "$s" --precision mixed-fp16 --steps 6 --quiet --resume "$w/ck_scalenan" $(outs)
refused 2 "a data position past the data" "data position 99999999 is beyond" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/ck_pos" $(outs)
refused 2 "a token past the tokenizer's in the shuffle buffer" "holds token 300 (at 5)" -- \
    "$mt" --config "$s" --loader stream --shuffle-buffer 4 --steps 6 --quiet --resume "$w/ck_tok" $(outs)
refused 2 "a NaN NF4 scale" "absmax mean is nan" -- \
    "$mt" --config "$s" --family llama --tied 0 --lora-rank 2 --quant nf4-dq --precision mixed-bf16 --steps 6 \
    --quiet --resume "$w/ck_nf4" $(outs)
# the header is under the checksum: a step changed without sealing again
refused 2 "a header field changed (not resealed)" "fails its checksum" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/ck_hdr" $(outs)
refused 2 "a header step that is not the state's" "its header's step 2 is not its state's 3" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/ck_hdrstep" $(outs)
refused 2 "format version 1" "is format version 1; this memtrain reads version 2" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/ck_v1" $(outs)
rm -rf "$w/past" && cp -r "$tmp/ck" "$w/past"
refused 2 "a checkpoint past --steps" "is at step 3, past --steps 2" -- \
    "$mt" --config "$s" --steps 2 --quiet --resume "$w/past" --save "$w/past" $(outs)
expect 0 "the checkpoint itself resumes" -- "$mt" --config "$s" --steps 4 --quiet --resume "$tmp/ck"

# ---------- 2. a resume that changes a setting names it, unless told ----------
refused 2 "--resume with another --lr" "lr = '0.001' there, '0.002' in this run (--resume-changed lr" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$tmp/ck" --lr 0.002 $(outs)
refused 2 "--resume with another --seed" "seed = '1337' there, '7' in this run" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$tmp/ck" --seed 7 $(outs)
refused 2 "--resume with another --weight-decay" "weight-decay = '0' there, '0.1' in this run" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$tmp/ck" --weight-decay 0.1 $(outs)
yes 'the quick brown fox jumps over the lazy dog' | head -c 100000 >"$tmp/data.txt"
refused 2 "--resume with another --data" "data = '' there, '$tmp/data.txt' in this run" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$tmp/ck" --data "$tmp/data.txt" $(outs)
refused 2 "--resume with two changes names the first and the others" "; also seed" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$tmp/ck" --lr 0.002 --seed 7 $(outs)
refused 2 "--resume with another --accum" "accum = '1' there, '2' in this run" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$tmp/ck" --accum 2 $(outs)
refused 2 "--resume-changed cannot change what shapes the state" "'batch': it shapes the saved state" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$tmp/ck" --batch 3 --resume-changed batch $(outs)
refused 2 "--resume-changed names a setting" "--resume-changed 'bogus': not a setting" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$tmp/ck" --resume-changed lr,bogus $(outs)
refused 2 "--resume-changed without --resume" "needs --resume" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume-changed lr $(outs)
expect 0 "--resume-changed lr,seed,data continues with them" -- "$mt" --config "$s" --steps 5 --quiet \
    --resume "$tmp/ck" --lr 0.002 --seed 7 --data "$tmp/data.txt" --resume-changed lr,seed,data --save "$tmp/ck2"
expect 0 "whose checkpoint records the new values" -- "$mt" --config "$s" --steps 6 --quiet --resume "$tmp/ck2" \
    --lr 0.002 --seed 7 --data "$tmp/data.txt"

# ---------- 3. shards: which rank wrote them; the manifest's counts ----------
# a manifest's counts, each an exact JSON integer in range before it is narrowed (one process
# reads the manifest of a checkpoint without checkpoint.bin to say how many ranks wrote it)
manifest() { # manifest DIR FIELD VALUE: a 2-rank manifest with FIELD set
    mkdir -p "$1"
    printf '{"format": "memtrain checkpoint", "version": 3, "step": 3, "ranks": 2, "zero": 1, "config_hash": "%s",
 "shards": [{"rank": 0, "file": "step00000003.rank0-of-2.bin", "bytes": 100, "checksum": "%s"},
  {"rank": 1, "file": "step00000003.rank1-of-2.bin", "bytes": 100, "checksum": "%s"}]}\n' \
        0123456789abcdef 0123456789abcdef 0123456789abcdef | sed "s/\"$2\": [^,]*,/\"$2\": $3,/" >"$1/manifest.json"
}
manifest "$w/man0" ranks 2
refused 2 "a sound 2-rank manifest, one process" "was written by 2 ranks; this run has 1" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/man0" $(outs)
for value in 4294967298 2.0 '"2"' -1 null; do
    manifest "$w/man1" ranks "$value"
    refused 2 "a manifest's ranks of $value (one process)" "ranks $value is out of range (an integer, 1 to 64)" -- \
        "$mt" --config "$s" --steps 6 --quiet --resume "$w/man1" $(outs)
done
manifest "$w/man2" step 4294967299
refused 2 "a manifest's step of 2^32 + 3" "step 4294967299 is out of range" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/man2" $(outs)
manifest "$w/man3" version 2
refused 2 "a manifest of version 2" "version 2 is out of range (an integer, 3 to 3)" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/man3" $(outs)
manifest "$w/man4" ranks 2
sed -i 's/"file": "step00000003.rank1-of-2.bin"/"file": "step00000003.rank0-of-2.bin"/' "$w/man4/manifest.json"
refused 2 "a manifest naming rank 0's shard for rank 1" "shard 1's file \"step00000003.rank0-of-2.bin\" is not" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/man4" $(outs)
manifest "$w/man5" ranks 2
sed -i 's/"bytes": 100,/"bytes": 18446744073709551716,/' "$w/man5/manifest.json"
refused 2 "a manifest's shard size past int64" "cannot be read: too big integer" -- \
    "$mt" --config "$s" --steps 6 --quiet --resume "$w/man5" $(outs)
run="mpirun --oversubscribe"
[ "$(id -u)" = 0 ] && run="$run --allow-run-as-root"
if command -v mpirun >/dev/null && ldd "$mt" | grep -q libmpi; then
    $run -np 2 "$mt" --config "$s" --zero 1 --steps 3 --quiet --save "$tmp/dp" >/dev/null 2>&1 || bad "a 2-rank checkpoint"
    mpi=1
    # rank 0's and rank 1's shards swapped, the manifest's sizes and checksums with them
    cp -r "$tmp/dp" "$w/swap"
    mv "$w/swap/step00000003.rank0-of-2.bin" "$w/swap/x" && mv "$w/swap/step00000003.rank1-of-2.bin" \
        "$w/swap/step00000003.rank0-of-2.bin" && mv "$w/swap/x" "$w/swap/step00000003.rank1-of-2.bin"
    python3 - "$w/swap/manifest.json" <<'EOP'
import json, sys
m = json.load(open(sys.argv[1])); a, b = m['shards']
for k in ('bytes', 'checksum'):
    a[k], b[k] = b[k], a[k]
json.dump(m, open(sys.argv[1], 'w'), indent=2)
EOP
    refused 2 "shards swapped between ranks" "was written by rank 1 of 2; this is rank 0 of 2" -- \
        $run -np 2 "$mt" --config "$s" --zero 1 --steps 6 --quiet --resume "$w/swap" $(outs)
    rm -rf "$w/man2" && cp -r "$tmp/dp" "$w/man2"
    sed -i 's/"ranks": 2,/"ranks": 4294967298,/' "$w/man2/manifest.json"
    refused 2 "a manifest's ranks of 4294967298 (2 ranks: once read as 2)" "ranks 4294967298 is out of range" -- \
        $run -np 2 "$mt" --config "$s" --zero 1 --steps 6 --quiet --resume "$w/man2" $(outs)
    ln -s "$tmp/nowhere" "$w/mm.rank1.csv"
    refused 2 "rank 1's metrics file a planted link (rank 0's not left behind)" \
        "refusing to write metrics '$w/mm.rank1.csv': it is a symbolic link" -- \
        $run -np 2 "$mt" --config "$s" --steps 1 --quiet --metrics "$w/mm.csv"
    mpi=0
    rm -rf "$w"/swap "$w"/man* "$w"/mm.rank1.csv
else
    echo "skip the data-parallel cases: no mpirun, or memtrain built without MPI"
fi

# ---------- 4. a loss that is not finite: every step in the report, the run diverged ----------
expect 4 "a diverging run (lr 10, SGD with momentum) exits 4" -- "$mt" --config "$s" --lr 10 \
    --optimizer sgd-momentum --steps 30 --report "$tmp/div.json" --metrics "$tmp/div.csv"
has err "the run diverged: the loss was not finite at"
one_line "the diverged run"
has out "the run diverged:"
if python3 - "$tmp/div.json" <<'EOP'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d['losses']) == 30 and None in d['losses'] and d['diverged'] is True and d['exit_status'] == 4, d
first = d['losses'].index(None)
assert all(x is not None for x in d['losses'][:first])
EOP
then ok "the report holds all 30 losses, null where not finite, and diverged: true"
else bad "the diverged run's report"; fi
if grep -v '^#' "$tmp/div.csv" | grep -q ',"nan",\|,"inf",' && ! grep -q -- '-nan' "$tmp/div.csv"; then
    ok "the metrics say nan or inf, never -nan"; else bad "the diverged run's metrics"; fi

# ---------- 5. --mem-limit: the measured side leaves the data loader out, as the prediction ----------
yes 'the quick brown fox jumps over the lazy dog' | head -c 3000000 >"$tmp/big.txt"
"$mt" --config "$s" --steps 1 --quiet --data "$tmp/big.txt" --report "$tmp/ml.json" || bad "the data-heavy run"
limit=$(python3 -c "
import json; d = json.load(open('$tmp/ml.json'))
dev, pred = d['measured_peak_bytes'], d['predicted_peak_bytes']
assert d['measured_peak_with_data_bytes'] > 2 * max(dev, pred), d
print(int(1.5 * max(dev, pred)))")
expect 0 "--mem-limit above the device peak, below it with the data's 6 MB of tokens" -- "$mt" --config "$s" \
    --steps 2 --quiet --data "$tmp/big.txt" --mem-limit "${limit}B"

# ---------- 6. a '#' in a config's data path ----------
cp "$tmp/data.txt" "$tmp/run#3.txt"
cp "$tmp/data.txt" "$tmp/my #1.txt"
{ cat "$s"; echo "data = $tmp/run#3.txt"; } >"$tmp/hash.cfg"
expect 0 "data = .../run#3.txt is read whole" -- "$mt" --config "$tmp/hash.cfg" --steps 1 --quiet --report "$tmp/h.json"
{ cat "$s"; echo "data = \"$tmp/my #1.txt\"   # quoted: '#' after a blank kept"; } >"$tmp/hash2.cfg"
expect 0 "a quoted data path keeps ' #'" -- "$mt" --config "$tmp/hash2.cfg" --steps 1 --quiet
{ cat "$s"; echo "layers = 1   # a comment after a value"; } >"$tmp/hash3.cfg"
expect 0 "a comment after a blank still ends a value" -- "$mt" --config "$tmp/hash3.cfg" --steps 1 --quiet
{ cat "$s"; echo "data = \"$tmp/my #1.txt"; } >"$w/unquoted.cfg"
refused 2 "a quote that does not close" "line 10: a quoted value lacks its closing '\"'" -- \
    "$mt" --config "$w/unquoted.cfg" --steps 1 --quiet $(outs)
{ cat "$s"; echo "layers = 1#2"; } >"$w/inword.cfg"
refused 2 "a '#' inside a number is the value's, and refused" "'1#2'" -- \
    "$mt" --config "$w/inword.cfg" --steps 1 --quiet $(outs)

# ---------- 7. the exit status table of memtrain(1) ----------
expect 0 "exit 0: done" -- "$mt" --config "$s" --steps 1 --quiet
: >"$w/empty.txt"
refused 2 "exit 2: an empty data file" "data file '$w/empty.txt' is empty" -- \
    "$mt" --config "$s" --steps 1 --quiet --data "$w/empty.txt" $(outs)
printf 'too short' >"$w/short.txt"
refused 2 "exit 2: a data file shorter than one batch" "has 9 tokens, fewer than one batch (batch x seq + 1) (33)" -- \
    "$mt" --config "$s" --steps 1 --quiet --data "$w/short.txt" $(outs)
refused 2 "exit 2: a data file shorter than one sequence (stream)" "fewer than one sequence (seq + 1) (17)" -- \
    "$mt" --config "$s" --steps 1 --quiet --loader stream --data "$w/short.txt" $(outs)
mkfifo "$w/fifo"
refused 2 "exit 2: a FIFO for data" "data file '$w/fifo' is not a regular file" -- \
    timeout 60 "$mt" --config "$s" --steps 1 --quiet --data "$w/fifo" $(outs)
refused 2 "exit 2: a directory for data" "data file '$w' is not a regular file" -- \
    "$mt" --config "$s" --steps 1 --quiet --data "$w" $(outs)
refused 2 "exit 2: /dev/zero for data" "data file '/dev/zero' is not a regular file" -- \
    "$mt" --config "$s" --steps 1 --quiet --data /dev/zero $(outs)
refused 2 "exit 2: a vocabulary below the tokenizer's" "vocab = 100: memtrain's byte tokenizer needs at least 256" -- \
    "$mt" --config "$s" --steps 1 --quiet --vocab 100 $(outs)
refused 2 "exit 2: a corpus shorter than one batch" "(the built-in corpus)' has 327680 tokens" -- \
    "$mt" --config "$s" --steps 1 --quiet --batch 30000 --seq 16 $(outs)
refused 2 "exit 2: a report in a folder that does not exist (not found out after the run)" \
    "--report '$w/none/r.json': its folder '$w/none' does not exist" -- \
    "$mt" --config "$s" --steps 1 --quiet --report "$w/none/r.json"
refused 2 "exit 2: --save on a file" "--save '$w/empty.txt' is not a directory" -- \
    "$mt" --config "$s" --steps 1 --quiet --save "$w/empty.txt" $(outs)
refused 3 "exit 3: a plan predicted above --mem-limit" "above --mem-limit" -- \
    "$mt" --config "$s" --steps 1 --quiet --mem-limit 1KiB $(outs)
expect 1 "exit 1: metrics to a full device" -- "$mt" --config "$s" --steps 1 --quiet --metrics /dev/full
has err "cannot write metrics '/dev/full': No space left on device"
one_line "metrics to a full device"
# exit 4 (the run diverged) is item 4's case above

# ---------- 8. no output follows a link planted at its path ----------
echo "precious" >"$tmp/target"
ln -s "$tmp/target" "$w/m.csv"
refused 2 "a metrics path that is a symbolic link" "refusing to write metrics '$w/m.csv': it is a symbolic link" -- \
    "$mt" --config "$s" --steps 1 --quiet --metrics "$w/m.csv"
ln -s "$tmp/nowhere" "$w/dangling.csv"
refused 2 "a metrics path that is a dangling link" "it is a symbolic link" -- \
    "$mt" --config "$s" --steps 1 --quiet --metrics "$w/dangling.csv"
[ ! -e "$tmp/nowhere" ] && ok "the dangling link's target was not created" || bad "the dangling link was followed"
ln -s "$tmp/target" "$tmp/r.json"
mkdir -p "$tmp/cklink" && ln -s "$tmp/target" "$tmp/cklink/checkpoint.bin"
expect 0 "a run whose report and checkpoint paths are planted links" -- "$mt" --config "$s" --steps 1 --quiet \
    --report "$tmp/r.json" --save "$tmp/cklink"
if [ "$(cat "$tmp/target")" = precious ]; then ok "the links' target is untouched"; else bad "a link was followed"; fi
if [ ! -L "$tmp/r.json" ] && [ ! -L "$tmp/cklink/checkpoint.bin" ]; then ok "the outputs replaced the links"
else bad "the outputs are still links"; fi

# a FIFO planted at the checkpoint's path would hold the save until someone reads it
mkdir -p "$tmp/ckfifo" && mkfifo "$tmp/ckfifo/checkpoint.bin"
expect 1 "a FIFO planted at the checkpoint's path: the save fails at once" -- timeout 60 "$mt" --config "$s" \
    --steps 1 --quiet --save "$tmp/ckfifo"
has err "not a regular file"
[ -p "$tmp/ckfifo/checkpoint.bin" ] && ok "the FIFO is left as it was" || bad "the FIFO was replaced or removed"

echo "hostile memtrain: $pass passed, $fail failed"
[ $fail -eq 0 ]
