/* memtrain.c — memtrain's config ("key = value" lines, memtrain --config): its
 * keys are the contract's rows (memtrain/memtrain_keys.h: the shape, the
 * planner's settings memtrain implements, zero and ranks) read by the same
 * reader memtrain uses, and its own keys (data, steps, the optimizer's
 * hyper-parameters), which change nothing the planner counts. A key memtrain
 * does not know is refused: memtrain would not start. What the config leaves
 * unsaid is memtrain's default (memtrain_defaults). */
#include "check/reader.h"

#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "memtrain/memtrain_keys.h"
#include "settings/options.h"

static bool own_key(const char *key)
{
    for (int i = 0; memtrain_own_keys[i]; i++)
        if (!strcmp(memtrain_own_keys[i], key)) return true;
    return false;
}

/* Its keys, and no other format's: a file of memtrain's keys only. */
static int detect(const ck_node *root)
{
    memtrain_shape sh;
    mp_settings s;
    mp_opt_group g[3];
    int ng = memtrain_key_groups(&sh, &s, true, g), n = 0;
    for (const ck_node *k = root->child; k; k = k->next) {
        void *base;
        if (k->kind != CK_SCALAR || (!own_key(k->key) && !mp_opt_group_find(g, ng, k->key, &base))) return 0;
        n++;
    }
    return n ? 8 : 0;
}

/* The first key: memtrain's defaults under what the keys will say. */
static void start(ck_state *st)
{
    st->memtrain = true;
    memtrain_defaults(&st->shape, &st->s);
    st->given |= MP_PIN_BATCH | MP_PIN_SEQ;
    const char *file = st->file;
    ck_set(st, "batch", "4", "(default)", "memtrain's default");
    ck_set(st, "seq", "64", "(default)", "memtrain's default");
    st->file = file;
}

static int read_key(ck_state *st, const ck_node *v, const char *key, char *err)
{
    if (!st->memtrain) start(st);
    mp_opt_group g[3];
    int ng = memtrain_key_groups(&st->shape, &st->s, true, g);
    const char *text = ck_text(v);
    char k[64];
    if (own_key(key)) return 0;
    if (!text) return ck_bad(key, v, "want a value", err);
    char why[MP_OPT_ERR_LEN];
    int rc = mp_opt_read_kv(g, ng, key, text, &st->given, why);
    if (rc == -2) {
        snprintf(err, MP_ERR_LEN, "'%s' is no key memtrain reads (memtrain --config would refuse it)",
                 mp_quote(key, k, sizeof k));
        return -1;
    }
    if (rc) {
        snprintf(err, MP_ERR_LEN, "%.200s", why);
        return -1;
    }
    /* the settings as memplan names them; the shape is the model's (shown as the model) */
    void *base;
    const mp_opt *row = mp_opt_group_find(g, ng, key, &base);
    if (base == (void *)&st->shape) return 0;
    char value[96];
    const char *setting = !strcmp(row->name, "ranks") ? "gpus" : row->name;
    ck_set(st, setting, mp_opt_format(row, base, value, sizeof value) ? value : text, key, NULL);
    return 0;
}

static int spell(const char *setting, const mp_settings *s, char *buf, size_t len)
{
    const mp_opt *row = mp_opt_find(mp_settings_opts, !strcmp(setting, "lora") ? "lora-rank" : setting);
    char v[96];
    if (!row || !mp_opt_format(row, s, v, sizeof v)) return -1;
    if (!strcmp(setting, "batch")) snprintf(buf, len, "batch = %lld, accum = %lld", (long long)s->batch,
                                            (long long)s->accum);
    else if (!strcmp(setting, "lora")) {
        char t[96];
        snprintf(buf, len, "lora-rank = %s, lora-targets = %s", v,
                 mp_opt_format(mp_opt_find(mp_settings_opts, "lora-targets"), s, t, sizeof t));
    }
    else snprintf(buf, len, "%s = %s", row->name, v);
    return 0;
}

const ck_format ck_format_memtrain = {
    .name = "memtrain", .framework = "memtrain", .detect = detect, .keys = NULL, .read_key = read_key,
    .spell = spell,
};
