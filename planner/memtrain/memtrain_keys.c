/* memtrain_keys.c — the keys of memtrain's config and metrics header (memtrain_keys.h). */
#include "memtrain/memtrain_keys.h"
#include "memtrain/shape.h"
#include "settings/options.h"
#include "settings/settings.h"

const char *const memtrain_setting_keys[] = {
    "precision", "optimizer", "adam8-block", "checkpointing", "attention", "attn-tile", "batch", "accum", "seq",
    "ce", "ce-chunk", "lora-rank", "lora-targets", "quant", "loader", "shuffle-buffer", "method", "reference", NULL,
};

const char *const memtrain_own_keys[] = {
    "lora-alpha", "data", "lr", "weight-decay", "momentum", "seed", "loss-scale", "steps", "overlap", "beta", NULL,
};

void memtrain_defaults(memtrain_shape *sh, mp_settings *s)
{
    *sh = (memtrain_shape){.family = MEMTRAIN_GPT2, .layers = 2, .hidden = 64, .heads = 4, .vocab = 256, .tied = -1};
    mp_settings_default(s, NULL);
    s->framework = NULL; /* memtrain's prediction names its own profile */
    s->batch = 4;
    s->seq = 64;
    s->lora_targets = MP_LORA_Q | MP_LORA_V;
    s->shuffle_buffer = 256;
}

const mp_opt *memtrain_parallel_opts(void)
{
    static mp_opt rows[3];
    if (!rows[0].name) {
        mp_opt ranks = *mp_opt_find(mp_settings_opts, "gpus");
        ranks.name = "ranks";
        ranks.help = "the data-parallel rank count the plan's global batch is for; launching another is refused";
        rows[1] = ranks;
        rows[0] = *mp_opt_find(mp_settings_opts, "zero");
    }
    return rows;
}

int memtrain_key_groups(memtrain_shape *sh, mp_settings *s, bool parallel, mp_opt_group g[3])
{
    g[0] = (mp_opt_group){NULL, memtrain_shape_opts, sh, NULL};
    g[1] = (mp_opt_group){NULL, mp_settings_opts, s, memtrain_setting_keys};
    g[2] = (mp_opt_group){NULL, memtrain_parallel_opts(), s, NULL};
    return parallel ? 3 : 2;
}
