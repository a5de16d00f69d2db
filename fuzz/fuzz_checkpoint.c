/*
 * fuzz_checkpoint.c — feeds the bytes as a memtrain checkpoint file to the reader
 * `memtrain --resume` uses (mt_checkpoint_load_image: the header, the checksum, the
 * settings record against the run's, then the trainer state's range checks and the
 * load), into one of five small trainers made once, as memtrain makes them (a config
 * text through mt_config_parse and mt_config_finish, then mt_trainer_create).
 *
 * Input: byte 0 picks the trainer (fp32 AdamW; 8-bit AdamW; fp16 SGD with momentum and
 * the stream loader; QLoRA nf4-dq in bf16; QLoRA nf4 with SGD), byte 1's low bit asks
 * for the image to be sealed first (its checksum recomputed, as the writer does: FNV-1a
 * is no secret, so the range checks behind it must hold against any bytes), the rest is
 * the file. The seeds (fuzz/corpus/checkpoint/) are files memtrain wrote for the same
 * configurations, each behind its two bytes:
 *   memtrain --family gpt2 --layers 1 --hidden 8 --heads 2 --vocab 256 --max-pos 8 --seq 8
 *            --batch 2 --steps 2 --save DIR [the trainer's other keys below]
 *
 * Asserts: a refusal is one line (NUL-terminated, non-empty) and leaves the trainer's
 * state as it was, byte for byte; an accepted image puts the trainer at the image's
 * step, and the trainer then takes one more step; ASan/UBSan clean.
 */
#include "fuzz.h"
#include "checkpoint.h"
#include "config_keys.h"

#define NTRAINERS 5
#define TINY_GPT2 "family = gpt2\nlayers = 1\nhidden = 8\nheads = 2\nvocab = 256\nmax-pos = 8\nseq = 8\nbatch = 2\n"
#define TINY_LLAMA "family = llama\nlayers = 1\nhidden = 8\nheads = 2\nkv-heads = 1\nvocab = 256\nseq = 8\nbatch = 2\n"

static const char *const configs[NTRAINERS] = {
    TINY_GPT2,
    TINY_GPT2 "optimizer = adamw-8bit\nadam8-block = 64\n",
    TINY_GPT2 "precision = mixed-fp16\noptimizer = sgd-momentum\nloader = stream\nshuffle-buffer = 4\n",
    TINY_LLAMA "lora-rank = 2\nquant = nf4-dq\nprecision = mixed-bf16\n",
    TINY_LLAMA "lora-rank = 2\nquant = nf4\noptimizer = sgd\n",
};
static mt_trainer *trainers[NTRAINERS];
static uint8_t *before, *after; /* a trainer's state around a load */
static size_t state_cap;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    for (int i = 0; i < NTRAINERS; i++) {
        mt_config k;
        mt_config_default(&k);
        char kerr[MT_KEYS_ERR_LEN], err[MT_ERR_LEN];
        FUZZ_ASSERT(!mt_config_parse(configs[i], strlen(configs[i]), "fuzz", &k, kerr), "config %d: %s", i, kerr);
        FUZZ_ASSERT(!mt_config_finish(&k, err) && !mt_trainer_create(&k, &trainers[i], err), "trainer %d: %s", i,
                    err);
        size_t n = mt_trainer_state_size(trainers[i]);
        state_cap = n > state_cap ? n : state_cap;
    }
    before = malloc(state_cap);
    after = malloc(state_cap);
    if (!before || !after) abort();
    return 0;
}

static size_t state_of(mt_trainer *t, uint8_t *buf)
{
    char err[MT_ERR_LEN];
    size_t n = mt_trainer_state_size(t);
    FUZZ_ASSERT(!mt_trainer_state_save(t, buf, n, err), "state save: %s", err);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    mt_trainer *t = trainers[data[0] % NTRAINERS];
    size_t len = size - 2;
    uint8_t *image = malloc(len ? len : 1);
    if (!image) abort();
    memcpy(image, data + 2, len);
    if (data[1] & 1) mt_checkpoint_seal(image, len);
    size_t n = state_of(t, before);
    static char err[MT_ERR_LEN];
    fuzz_clear_err(err, sizeof err);
    if (mt_checkpoint_load_image(t, image, len, "fuzz.bin", NULL, NULL, err)) {
        fuzz_check_err("mt_checkpoint_load_image", err, sizeof err);
        FUZZ_ASSERT(state_of(t, after) == n && !memcmp(before, after, n), "a refused checkpoint changed the trainer");
        free(image);
        return 0;
    }
    uint64_t step;
    memcpy(&step, image + 16, sizeof step); /* the header's step */
    FUZZ_ASSERT((uint64_t)mt_trainer_steps(t) == step && step <= MT_MAX_STEPS, "loaded at step %ld, header says %llu",
                mt_trainer_steps(t), (unsigned long long)step);
    /* what was loaded is used: codes, scales, positions and tokens index tables */
    mt_step_result r;
    FUZZ_ASSERT(!mt_trainer_step(t, &r, err), "a step after an accepted checkpoint failed: %s", err);
    free(image);
    return 0;
}
