/*
 * config_keys.c — memtrain's config keys as rows, and the config file's
 * 'key = value' lines (see config_keys.h).
 */
#include "config_keys.h"
#include "common/errors.h"
#include "common/files.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The values of a setting memtrain implements, for its choices and its parsing. */
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

static int count_choices(mp_vocab *v)
{
    while (v->name(v->n)) v->n++;
    return v->n;
}

/* the families config.c names (mt_family_name, mt_family_parse) */
static const char *family_choice(int v) { return mt_family_name((mt_family)v); }
static int family_of(const char *s, int *v)
{
    mt_family f;
    if (mt_family_parse(s, &f)) return -1;
    *v = (int)f;
    return 0;
}
static const mp_vocab families = {MT_NFAMILY, NULL, family_choice, family_of};

static int read_data_path(const mp_opt *o, const char *value, void *base, char *err)
{
    mt_config *c = &((mt_run_keys *)base)->c;
    if (strlen(value) >= sizeof c->data_path) {
        snprintf(err, MP_OPT_ERR_LEN, "path too long for --%s", o->name);
        return -1;
    }
    snprintf(c->data_path, sizeof c->data_path, "%s", value);
    return 0;
}

#define K(field) MP_OPT_AT(mt_run_keys, field)
/* memtrain's own keys: the model's shape, the data and the optimizer's hyper-parameters. */
static const mp_opt own_keys[] = {
    {"family", MP_OPT_ENUM, K(c.family), .vocab = &families, .or_last = true},
    {"layers", MP_OPT_INT, K(c.layers), .lo = 1, .hi = 1000},
    {"hidden", MP_OPT_INT, K(c.hidden), .lo = 1, .hi = 1 << 16},
    {"heads", MP_OPT_INT, K(c.heads), .lo = 1, .hi = 4096},
    {"kv-heads", MP_OPT_INT, K(c.kv_heads), .lo = 0, .hi = 4096},
    {"ffn", MP_OPT_INT, K(c.ffn), .lo = 0, .hi = 1 << 20},
    {"vocab", MP_OPT_INT, K(c.vocab), .lo = 1, .hi = 1 << 20},
    {"max-pos", MP_OPT_INT, K(c.max_pos), .lo = 0, .hi = 1 << 20},
    {"tied", MP_OPT_INT, K(tied), .lo = 0, .hi = 1},
    {"lora-alpha", MP_OPT_FLOAT, K(c.lora_alpha), .lo = 0, .hi = 1e6},
    {"data", MP_OPT_CUSTOM, K(c.data_path), .read = read_data_path},
    {"lr", MP_OPT_FLOAT, K(c.opt.lr), .lo = 0, .hi = 10},
    {"weight-decay", MP_OPT_FLOAT, K(c.opt.weight_decay), .lo = 0, .hi = 10},
    {"momentum", MP_OPT_FLOAT, K(c.opt.momentum), .lo = 0, .hi = 1},
    {"seed", MP_OPT_INT, K(c.seed), .lo = 0, .hi = 2147483647},
    {"loss-scale", MP_OPT_FLOAT, K(c.loss_scale), .lo = 1, .hi = 1e30},
    {"steps", MP_OPT_INT, K(steps), .lo = 0, .hi = MT_MAX_STEPS},
    {"ranks", MP_OPT_INT, K(ranks), .lo = 1, .hi = 1 << 20,
     .help = "the data-parallel rank count the plan's global batch is for; launching another is refused"},
    {"attn-tile", MP_OPT_INT, K(c.attn_tile), .lo = 1, .hi = 4096},
    {"overlap", MP_OPT_INT, K(c.overlap), .lo = 0, .hi = 1,
     .help = "ZeRO-0/1 over several ranks: 1 (default) sums the gradients while the backward runs, 0 after it"},
    {0},
};

/* A planner setting's shared row, aimed at memtrain's field, with memtrain's
 * range (0: the row's) and the values memtrain implements (NULL: the row's). */
static mp_opt setting_key(const char *name, size_t offset, size_t size, double hi, const mp_vocab *values)
{
    mp_opt r = *mp_opt_find(mp_settings_opts, name);
    r.offset = offset, r.size = size, r.pin = 0;
    if (hi > 0) r.hi = hi;
    if (values) r.vocab = values;
    return r;
}

const mp_opt *mt_config_keys(void)
{
    static mp_opt keys[48];
    if (keys[0].name) return keys;
    mp_vocab *values[] = {&precision_values, &optimizer_values, &ckpt_values, &attention_values,
                          &ce_values, &quant_values, &loader_values};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) count_choices(values[i]);
    int n = 0;
    for (int i = 0; i < 9; i++) keys[n++] = own_keys[i]; /* the model's shape */
    keys[n++] = setting_key("precision", K(c.precision), 0, &precision_values);
    keys[n++] = setting_key("optimizer", K(c.optimizer), 0, &optimizer_values);
    keys[n++] = setting_key("adam8-block", K(c.opt.block), 1 << 20, NULL);
    keys[n++] = setting_key("checkpointing", K(c.checkpointing), 0, &ckpt_values);
    keys[n++] = setting_key("attention", K(c.attention), 0, &attention_values);
    keys[n++] = setting_key("batch", K(c.batch), 1 << 16, NULL);
    keys[n++] = setting_key("accum", K(c.accum), 1 << 16, NULL);
    keys[n++] = setting_key("seq", K(c.seq), 1 << 20, NULL);
    keys[n++] = setting_key("ce", K(c.ce), 0, &ce_values);
    keys[n++] = setting_key("ce-chunk", K(c.ce_chunk), 1 << 24, NULL);
    keys[n++] = setting_key("lora-rank", K(c.lora_rank), 1 << 16, NULL);
    keys[n++] = setting_key("lora-targets", K(c.lora_targets), 0, NULL);
    keys[n++] = setting_key("quant", K(c.quant), 0, &quant_values);
    keys[n++] = setting_key("loader", K(c.loader), 0, &loader_values);
    keys[n++] = setting_key("shuffle-buffer", K(c.shuffle_buffer), 1 << 24, NULL);
    keys[n++] = setting_key("zero", K(c.zero), 3, NULL);
    for (int i = 9; own_keys[i].name; i++) keys[n++] = own_keys[i];
    return keys;
}
#undef K

int mt_config_key(mt_run_keys *k, const char *key, const char *v, const char *where, char *err)
{
    const mp_opt *row = mp_opt_find(mt_config_keys(), key);
    if (!row) {
        char quoted[400];
        snprintf(err, MT_KEYS_ERR_LEN, "unknown key '%s' in %.600s", mp_quote(key, quoted, sizeof quoted),
                 where ? where : "the options");
        return -1;
    }
    char why[MP_OPT_ERR_LEN];
    if (mp_opt_read(row, v, k, NULL, why)) {
        if (where) snprintf(err, MT_KEYS_ERR_LEN, "%.600s: %.1400s", where, why);
        else snprintf(err, MT_KEYS_ERR_LEN, "%s", why);
        return -1;
    }
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
    return s;
}

/* The value after a line's '=': a '#' after a blank starts a comment (a '#' inside a
 * word, as in a path 'run#3.txt', is the value's); a value in double quotes is what
 * stands between them, '#' and blanks included, with at most a comment after it.
 * NULL with *why when the quotes do not close or text follows them. */
static char *value_of(char *v, const char **why)
{
    while (*v == ' ' || *v == '\t') v++;
    if (*v == '"') {
        char *close = strchr(v + 1, '"');
        if (!close) return *why = "a quoted value lacks its closing '\"'", NULL;
        *close = 0;
        char *rest = close + 1;
        while (*rest == ' ' || *rest == '\t' || *rest == '\r') rest++;
        if (*rest && *rest != '#') return *why = "text after a quoted value (a comment needs a blank and '#')", NULL;
        return v + 1;
    }
    for (char *p = v; *p; p++)
        if (*p == '#' && (p == v || p[-1] == ' ' || p[-1] == '\t')) {
            *p = 0;
            break;
        }
    return trim(v);
}

/* The longest line, its newline apart. */
#define LINE_MAX_LEN 1022

int mt_config_parse(const char *text, size_t len, const char *name, mt_run_keys *k, char *err)
{
    char line[LINE_MAX_LEN + 2];
    int lineno = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        lineno++;
        /* Read as fgets read them, a longer line was cut into lines of 1023 bytes, and a
         * NUL ended one early: a path was cut short, or the rest read as a line of its own. */
        if (n > LINE_MAX_LEN || memchr(text + at, 0, n)) {
            snprintf(err, MT_KEYS_ERR_LEN, "config '%.400s' line %d %s", name, lineno,
                     n > LINE_MAX_LEN ? "is longer than 1022 bytes" : "holds a NUL byte");
            return -1;
        }
        memcpy(line, text + at, n);
        line[n] = 0;
        at += n + (nl != NULL);
        char *s = trim(line);
        if (!*s || *s == '#') continue;
        char *eq = strchr(s, '=');
        char quoted[600], where[600];
        if (!eq) {
            snprintf(err, MT_KEYS_ERR_LEN, "config '%.400s' line %d: expected 'key = value', got '%s'", name, lineno,
                     mp_quote(s, quoted, sizeof quoted));
            return -1;
        }
        *eq = 0;
        snprintf(where, sizeof where, "config '%.400s' line %d", name, lineno);
        const char *why = NULL;
        char *v = value_of(eq + 1, &why);
        if (!v) {
            snprintf(err, MT_KEYS_ERR_LEN, "%s: %s", where, why);
            return -1;
        }
        if (mt_config_key(k, trim(s), v, where, err)) return -1;
    }
    return 0;
}

int mt_config_read(const char *path, mt_run_keys *k, char *err)
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
        rc = mt_config_parse(text, len, path, k, err);
    }
    free(text);
    fclose(f);
    return rc;
}
