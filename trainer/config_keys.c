/*
 * config_keys.c — memtrain's config keys as rows, read and written as text by
 * the library's one reader and writer (see config_keys.h).
 */
#include "config_keys.h"
#include "common/errors.h"
#include "common/files.h"
#include "memtrain/memtrain_keys.h"
#include "memtrain/shape.h"
#include "model/model.h"
#include "settings/options.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The values of a setting memtrain implements, for its choices and its parsing
 * (parse returns the value; the writer finds its name by it). */
#define MEMTRAIN_VALUES(fn, type)                                                  \
    static const char *fn##_choice(int i)                                          \
    {                                                                              \
        for (int v = 0, k = 0; mp_##fn##_value(v); v++)                            \
            if (mp_##fn##_value(v)->memtrain && k++ == i) return mp_##fn##_value(v)->name; \
        return NULL;                                                               \
    }                                                                              \
    static int fn##_implemented(const char *s, int *out)                           \
    {                                                                              \
        type t;                                                                    \
        if (mp_##fn##_parse(s, &t) || !mp_##fn##_value((int)t)->memtrain) return -1; \
        *out = (int)t;                                                             \
        return 0;                                                                  \
    }                                                                              \
    static mp_vocab fn##_values = {0, NULL, fn##_choice, fn##_implemented};
MEMTRAIN_VALUES(precision, mp_precision)
MEMTRAIN_VALUES(optimizer, mp_optimizer)
MEMTRAIN_VALUES(ckpt, mp_ckpt)
MEMTRAIN_VALUES(attention, mp_attention)
MEMTRAIN_VALUES(ce, mp_ce)
MEMTRAIN_VALUES(quant, mp_quant)
MEMTRAIN_VALUES(loader, mp_loader)
MEMTRAIN_VALUES(method, mp_method)
MEMTRAIN_VALUES(reference, mp_reference)

static int count_choices(mp_vocab *v)
{
    while (v->name(v->n)) v->n++;
    return v->n;
}

static int read_data_path(const mp_opt *o, const char *value, void *base, char *err)
{
    mt_config *c = base;
    if (strlen(value) >= sizeof c->own.data_path) {
        snprintf(err, MP_OPT_ERR_LEN, "path too long for --%s", o->name);
        return -1;
    }
    snprintf(c->own.data_path, sizeof c->own.data_path, "%s", value);
    return 0;
}
/* "": the built-in corpus, not written */
static const char *write_data_path(const mp_opt *o, const void *base, char *buf, size_t len)
{
    const mt_config *c = base;
    if (!c->own.data_path[0]) return NULL;
    snprintf(buf, len, "%s", c->own.data_path);
    return buf;
}

#define K(field) MP_OPT_AT(mt_config, field)
/* memtrain's own keys: the data, the run's length and the optimizer's hyper-parameters. */
static const mp_opt own_keys[] = {
    {"lora-alpha", MP_OPT_FLOAT, K(own.lora_alpha), .lo = 0, .hi = 1e6},
    {"data", MP_OPT_CUSTOM, K(own.data_path), .read = read_data_path, .write = write_data_path},
    {"lr", MP_OPT_FLOAT, K(own.opt.lr), .lo = 0, .hi = 10},
    {"weight-decay", MP_OPT_FLOAT, K(own.opt.weight_decay), .lo = 0, .hi = 10},
    {"momentum", MP_OPT_FLOAT, K(own.opt.momentum), .lo = 0, .hi = 1},
    {"seed", MP_OPT_INT, K(own.seed), .lo = 0, .hi = 2147483647},
    {"loss-scale", MP_OPT_FLOAT, K(own.loss_scale), .lo = 1, .hi = 1e30},
    {"steps", MP_OPT_INT, K(own.steps), .lo = 0, .hi = MT_MAX_STEPS},
    {"overlap", MP_OPT_INT, K(own.overlap), .lo = 0, .hi = 1,
     .help = "ZeRO-0/1 over several ranks: 1 (default) sums the gradients while the backward runs, 0 after it"},
    {"beta", MP_OPT_FLOAT, K(own.beta), .lo = 1e-6, .hi = 1e6,
     .help = "a preference method's beta (TRL's DPOConfig, CPOConfig, ORPOConfig: default 0.1)"},
    {0},
};
/* the launch's rank: a word of the metrics header, not a key */
static const mp_opt rank_row[] = {{"rank", MP_OPT_INT, K(rank), .lo = 0, .hi = 1 << 20}, {0}};

/* A library row aimed at the member of mt_config at `at` (the shape or the
 * settings), with the values memtrain implements (NULL: the row's own); its range
 * stays the library's. */
static mp_opt aimed(const mp_opt *row, size_t at, const mp_vocab *values)
{
    mp_opt r = *row;
    r.offset += at;
    if (values) r.vocab = values;
    return r;
}

/* The vocabulary memtrain reads a setting with: the values it implements. */
static const mp_vocab *memtrain_vocab(const mp_opt *row)
{
    static mp_vocab *const values[] = {&precision_values, &optimizer_values, &ckpt_values, &attention_values,
                                       &ce_values, &quant_values, &loader_values, &method_values, &reference_values};
    static const mp_vocab *const planner[] = {&mp_vocab_precision, &mp_vocab_optimizer, &mp_vocab_ckpt,
                                              &mp_vocab_attention, &mp_vocab_ce, &mp_vocab_quant, &mp_vocab_loader,
                                              &mp_vocab_method, &mp_vocab_reference};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++)
        if (row->vocab == planner[i]) return values[i];
    return NULL;
}

#define MAX_KEYS 48
const mp_opt *mt_config_keys(void)
{
    static mp_opt keys[MAX_KEYS];
    if (keys[0].name) return keys;
    mp_vocab *values[] = {&precision_values, &optimizer_values, &ckpt_values, &attention_values,
                          &ce_values, &quant_values, &loader_values, &method_values, &reference_values};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) count_choices(values[i]);
    int n = 0;
    for (const mp_opt *r = memtrain_shape_opts; r->name; r++) keys[n++] = aimed(r, offsetof(mt_config, shape), NULL);
    for (int i = 0; memtrain_setting_keys[i]; i++) {
        const mp_opt *r = mp_opt_find(mp_settings_opts, memtrain_setting_keys[i]);
        keys[n++] = aimed(r, offsetof(mt_config, s), memtrain_vocab(r));
    }
    for (const mp_opt *r = memtrain_parallel_opts(); r->name; r++) keys[n++] = aimed(r, offsetof(mt_config, s), NULL);
    for (const mp_opt *r = own_keys; r->name; r++) keys[n++] = *r;
    return keys;
}
#undef K

int mt_config_key(mt_config *c, const char *key, const char *v, const char *where, char *err)
{
    const mp_opt_group g = {NULL, mt_config_keys(), c, NULL};
    char why[MP_OPT_ERR_LEN];
    int rc = mp_opt_read_kv(&g, 1, key, v, &c->own.given, why);
    if (rc == -2) {
        char quoted[400];
        snprintf(err, MT_KEYS_ERR_LEN, "unknown key '%s' in %.600s", mp_quote(key, quoted, sizeof quoted),
                 where ? where : "the options");
        return -1;
    }
    if (rc) {
        if (where) snprintf(err, MT_KEYS_ERR_LEN, "%.600s: %.1400s", where, why);
        else snprintf(err, MT_KEYS_ERR_LEN, "%s", why);
        return -1;
    }
    return 0;
}

int mt_config_parse(const char *text, size_t len, const char *name, mt_config *c, char *err)
{
    char *copy = malloc(len + 1);
    if (!copy) {
        snprintf(err, MT_KEYS_ERR_LEN, "out of memory reading config '%.400s'", name);
        return -1;
    }
    if (len) memcpy(copy, text, len);
    mp_kv_reader r;
    mp_kv_start(&r, copy, len, MP_KV_LINES);
    const char *key, *value;
    char why[MP_OPT_ERR_LEN], where[600], quoted[600];
    int got, rc = 0;
    while (!rc && (got = mp_kv_next(&r, &key, &value, why)) != 0) {
        snprintf(where, sizeof where, "config '%.400s' line %d", name, r.line);
        if (got < 0 && (strstr(why, "is longer") || strstr(why, "holds a NUL")))
            rc = -1, snprintf(err, MT_KEYS_ERR_LEN, "%s %.1000s", where, why);
        else if (got < 0)
            rc = -1, snprintf(err, MT_KEYS_ERR_LEN, "%s: %.1000s", where, why);
        else if (!value)
            rc = -1, snprintf(err, MT_KEYS_ERR_LEN, "%s: expected 'key = value', got '%s'", where,
                              mp_quote(key, quoted, sizeof quoted));
        else
            rc = mt_config_key(c, key, value, where, err);
    }
    free(copy);
    return rc;
}

int mt_config_read(const char *path, mt_config *c, char *err)
{
    char why[MP_ERR_LEN];
    if (mp_check_input_file("config", path, 1048576, why)) {
        snprintf(err, MT_KEYS_ERR_LEN, "%s", why);
        return -1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, MT_KEYS_ERR_LEN, "cannot open config '%.400s': %s", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? 2 * cap : 4096;
            char *t = realloc(text, ncap);
            if (!t) {
                free(text);
                fclose(f);
                snprintf(err, MT_KEYS_ERR_LEN, "out of memory reading config '%.400s'", path);
                return -1;
            }
            text = t, cap = ncap;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    int rc;
    if (ferror(f)) {
        snprintf(err, MT_KEYS_ERR_LEN, "cannot read config '%.400s': %s", path, strerror(errno));
        rc = -1;
    } else {
        rc = mt_config_parse(text, len, path, c, err);
    }
    free(text);
    fclose(f);
    return rc;
}

int mt_config_write(const mt_config *c, char *buf, size_t len, char *err)
{
    const mp_opt_group g = {NULL, mt_config_keys(), (void *)c, NULL};
    return mp_opt_write_kv(&g, 1, MP_KV_LINES, buf, len, err);
}

const char *mt_config_value(const mt_config *c, const char *key, char *buf, size_t len)
{
    const mp_opt *row = mp_opt_find(mt_config_keys(), key);
    return row ? mp_opt_format(row, c, buf, len) : NULL;
}

int mt_config_header(const mt_config *c, char *buf, size_t len, char *err)
{
    static const char *names[MAX_KEYS];
    if (!names[0]) {
        int n = 0;
        for (const mp_opt *r = memtrain_shape_opts; r->name; r++) names[n++] = r->name;
        for (int i = 0; memtrain_setting_keys[i]; i++) names[n++] = memtrain_setting_keys[i];
    }
    static const char *const zero[] = {"zero", NULL}, *const ranks[] = {"ranks", NULL};
    /* data parallel: which rank's file this is, last (zero=Z rank=K ranks=N) */
    const mp_opt_group g[] = {{NULL, mt_config_keys(), (void *)c, names},
                              {NULL, mt_config_keys(), (void *)c, zero},
                              {NULL, rank_row, (void *)c, NULL},
                              {NULL, mt_config_keys(), (void *)c, ranks}};
    int n = mp_opt_write_kv(g, 1, MP_KV_WORDS, buf, len, err);
    if (n < 0 || c->ranks <= 1) return n;
    size_t used = (size_t)n;
    buf[used++] = ' '; /* room: mp_opt_write_kv left its NUL there */
    int more = mp_opt_write_kv(&g[1], 3, MP_KV_WORDS, buf + used, len - used, err);
    return more < 0 ? -1 : (int)used + more;
}
