/* memtrain.c — a config file for memplan's reference trainer (keys: man/memtrain.1). */
#include "emitters.h"
#include "estimate/memtrain_model.h"
#include "common/errors.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <string.h>

static const char *bool01(bool v) { return v ? "1" : "0"; }

/* memtrain runs its own kernels on its own allocator: nothing there to compile,
 * no CUDA caching allocator to configure */
static int check_memtrain(const mp_model *m, const mp_settings *s, char *err)
{
    if (s->compile) {
        snprintf(err, MP_ERR_LEN, "--compile has no form in 'memtrain': it runs its own kernels "
                 "(the Trainer's torch_compile runs it: --emit hf)");
        return -1;
    }
    if (s->expandable_segments) {
        snprintf(err, MP_ERR_LEN, "--expandable-segments has no form in 'memtrain': it counts its own "
                 "allocations on the CPU (launch.sh sets it for the engines: --emit hf)");
        return -1;
    }
    return memtrain_check_supported(m, s, err);
}

static void write_memtrain(sbuf *b, const mp_plan *p)
{
    const mp_model *m = p->m;
    const mp_settings *s = p->s;
    char tg[64];
    sbuf_put(b, "# memtrain config written by memplan; run: memtrain --config FILE\n");
    sbuf_put(b, "# model %s\n", EMIT_TEXT(m->name));
    sbuf_put(b, "family = %s\n", m->mlp == MP_MLP_GATED ? "llama" : "gpt2");
    sbuf_put(b, "layers = %lld\nhidden = %lld\nheads = %lld\nkv-heads = %lld\nffn = %lld\n",
        (long long)m->layers, (long long)m->hidden, (long long)m->heads, (long long)m->kv_heads,
        (long long)m->ffn);
    sbuf_put(b, "vocab = %lld\nmax-pos = %lld\ntied = %s\n", (long long)m->vocab, (long long)m->max_pos,
        bool01(m->tied));
    sbuf_put(b, "precision = %s\noptimizer = %s\nadam8-block = %lld\n", mp_precision_name(s->precision),
        mp_optimizer_name(s->optimizer), (long long)s->adam8_block);
    sbuf_put(b, "checkpointing = %s\nattention = %s\n", mp_ckpt_name(s->checkpointing),
        mp_attention_name(s->attention));
    sbuf_put(b, "batch = %lld\naccum = %lld\nseq = %lld\n", (long long)s->batch, (long long)s->accum,
        (long long)s->seq);
    sbuf_put(b, "ce = %s\nce-chunk = %lld\n", mp_ce_name(s->ce), (long long)s->ce_chunk);
    sbuf_put(b, "lora-rank = %lld\nlora-targets = %s\nquant = %s\n", (long long)s->lora_rank,
        mp_lora_targets_name(s->lora_targets, tg, sizeof tg), mp_quant_name(s->quant));
    sbuf_put(b, "loader = %s\nshuffle-buffer = %lld\n", mp_loader_name(s->loader),
        (long long)s->shuffle_buffer);
    /* data parallel: batch is per rank; the rank count is the launcher's (memtrain
     * implements ZeRO 0 to 3, and refuses what it does not run with its reason) */
    if (s->gpus > 1)
        sbuf_put(b, "# data parallel: mpirun -np %lld memtrain --config FILE\nzero = %d\nranks = %lld\n",
            (long long)s->gpus, s->zero, (long long)s->gpus);
}

const mp_emit_target emit_target_memtrain = {
    .name = "memtrain", .file = {"memtrain.conf", write_memtrain, 0644}, .check = check_memtrain,
    .memtrain_values = true,
};
