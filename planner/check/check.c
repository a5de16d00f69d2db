/* check.c — memplan check (check.h): the formats' table, the files of one run
 * read and joined, the model and the stack resolved, the estimate, the
 * verdict, and the smallest changes that fit in the file's own words. */
#include "check/check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check/doc.h"
#include "check/reader.h"
#include "common/errors.h"
#include "search/search.h"
#include "model/family.h"
#include "settings/options.h"
#include "settings/vocabulary.h"

/* The formats, most specific first where two could claim a file (a TRL
 * config is a Trainer's; an axolotl one has keys of its own). */
static const ck_format *const formats[] = {
    &ck_format_memtrain, &ck_format_axolotl, &ck_format_deepspeed, &ck_format_accelerate, &ck_format_llamafactory, &ck_format_trainer,
    &ck_format_torchtune,
};
enum { NFORMATS = sizeof formats / sizeof *formats };

static const ck_format *format_of(const ck_node *root)
{
    const ck_format *best = NULL;
    int score = 0;
    for (int i = 0; i < NFORMATS; i++) {
        int k = formats[i]->detect(root);
        if (k > score) score = k, best = formats[i];
    }
    return best;
}

static const ck_key *key_row(const ck_format *f, const char *key)
{
    for (const ck_key *k = f->keys; k->key; k++)
        if (!strcmp(k->key, key)) return k;
    return NULL;
}

static bool is_section(const ck_format *f, const char *key)
{
    for (const char *const *s = f->sections; s && *s; s++)
        if (!strcmp(*s, key)) return true;
    return false;
}

static void unknown(ck_state *st, const char *key)
{
    mp_check *c = st->c;
    if (c->nunknown == CK_MAX_UNKNOWN) return;
    const char *slash = strrchr(st->file, '/');
    char line[128];
    snprintf(line, sizeof line, "%s: %s", slash ? slash + 1 : st->file, key);
    mp_quote(line, c->unknown[c->nunknown++], sizeof c->unknown[0]);
}

void ck_unknown(ck_state *st, const char *key) { unknown(st, key); }

/* Every key of a map, by its path under `prefix`: a row reads it, a section is
 * walked, anything else is listed as not understood. */
static int read_map(const ck_format *f, ck_state *st, const ck_node *map, const char *prefix, char *err)
{
    for (const ck_node *k = map->child; k; k = k->next) {
        char path[256];
        if (snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", k->key) >= (int)sizeof path) {
            unknown(st, k->key);
            continue;
        }
        const ck_key *row = f->read_key ? NULL : key_row(f, path);
        if (f->read_key) {
            if (f->read_key(st, k, path, err)) return -1;
        } else if (row) {
            if (row->read && row->read(st, k, path, err)) return -1;
        } else if (k->kind == CK_MAP && is_section(f, path)) {
            if (read_map(f, st, k, path, err)) return -1;
        } else {
            unknown(st, path);
        }
    }
    return 0;
}

static bool already(const mp_check *c, const char *format)
{
    for (int i = 0; i < c->nfiles; i++)
        if (!strcmp(c->format[i], format)) return true;
    return false;
}

/* One file: read, recognised, its keys read into st. `as` forces a format (a
 * file another names). */
static int read_file(ck_state *st, const char *path, const ck_format *as, char *err)
{
    mp_check *c = st->c;
    if (c->nfiles == CK_MAX_FILES) return snprintf(err, MP_ERR_LEN, "more than %d config files", CK_MAX_FILES), -1;
    ck_node *root;
    if (ck_read(path, &root, err)) return -1;
    const ck_format *f = as ? as : format_of(root);
    char q[128];
    if (!f) {
        ck_free(root);
        return snprintf(err, MP_ERR_LEN, "'%s' is none of the configs memplan reads (axolotl, LLaMA-Factory, "
                        "torchtune, Trainer/TRL, DeepSpeed, accelerate, memtrain)", mp_quote(path, q, sizeof q)), -1;
    }
    if (already(c, f->name)) {
        ck_free(root);
        return snprintf(err, MP_ERR_LEN, "two %s configs for one run ('%s'): give one", f->name,
                        mp_quote(path, q, sizeof q)), -1;
    }
    snprintf(c->format[c->nfiles], sizeof c->format[0], "%s", f->name);
    mp_quote(path, c->file[c->nfiles], sizeof c->file[0]);
    snprintf(st->path[c->nfiles], sizeof st->path[0], "%s", path);
    st->file = st->path[c->nfiles];
    c->nfiles++;
    int rc = read_map(f, st, root, "", err);
    ck_free(root);
    return rc;
}

/* A file a config names (its DeepSpeed JSON), found beside the config or among
 * the files given; else the user is asked to give it. */
static int read_named(ck_state *st, const char *const *paths, int n, const char *from, const char *name, char *err)
{
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    for (int i = 0; i < n; i++) {
        const char *b = strrchr(paths[i], '/') ? strrchr(paths[i], '/') + 1 : paths[i];
        if (!strcmp(paths[i], name) || !strcmp(b, base)) return 0; /* given: read already */
    }
    char beside[2048];
    const char *slash = strrchr(from, '/');
    struct stat sb;
    if (name[0] != '/' && slash &&
        snprintf(beside, sizeof beside, "%.*s/%s", (int)(slash - from), from, name) < (int)sizeof beside &&
        !stat(beside, &sb))
        return read_file(st, beside, &ck_format_deepspeed, err);
    if (!stat(name, &sb)) return read_file(st, name, &ck_format_deepspeed, err);
    char q[96], f[96];
    snprintf(err, MP_ERR_LEN, "'%s' names the DeepSpeed config '%s', which is not here: give it as another FILE",
             mp_quote(from, f, sizeof f), mp_quote(name, q, sizeof q));
    return -1;
}

/* The model: --model or --hf-config, else the one the files name (a profile,
 * a Hub id, a variant, or a local folder with its config.json). */
static int resolve_model(ck_state *st, const mp_check_opts *o, char *err)
{
    mp_check *c = st->c;
    char q[128];
    if (st->memtrain) { /* memtrain builds the shape its config states */
        if (o->model || o->hf_config)
            return snprintf(err, MP_ERR_LEN, "a memtrain config states its model's shape: no --model or --hf-config"),
                   -1;
        if (memtrain_shape_model(&st->shape, st->s.seq, &c->model, err)) return -1;
        snprintf(c->model_how, sizeof c->model_how, "the config's shape: %s, %d layers, hidden %d",
                 memtrain_family_name(st->shape.family), st->shape.layers, st->shape.hidden);
        return 0;
    }
    if (o->model || o->hf_config) {
        if (o->model ? mp_model_lookup(o->model, &c->model, err) : mp_model_from_hf_config(o->hf_config, &c->model, err))
            return -1;
        snprintf(c->model_how, sizeof c->model_how, "%s '%s'", o->model ? "--model" : "--hf-config",
                 mp_quote(o->model ? o->model : o->hf_config, q, sizeof q));
        return 0;
    }
    if (!st->model_ref[0])
        return snprintf(err, MP_ERR_LEN, "the configs name no model: give --model NAME or --hf-config FILE"), -1;
    char config[1100];
    struct stat sb;
    if (!mp_model_lookup(st->model_ref, &c->model, err)) {
        snprintf(c->model_how, sizeof c->model_how, "'%s', profile %s", mp_quote(st->model_ref, q, sizeof q),
                 c->model.name);
        return 0;
    }
    snprintf(config, sizeof config, "%s/config.json", st->model_ref);
    if (!stat(config, &sb) && !mp_model_from_hf_config(st->model_ref, &c->model, err)) {
        snprintf(c->model_how, sizeof c->model_how, "'%s', its config.json", mp_quote(st->model_ref, q, sizeof q));
        return 0;
    }
    return snprintf(err, MP_ERR_LEN, "the model '%s' is no profile memplan knows: give --model NAME (memplan list "
                    "models) or --hf-config its config.json", mp_quote(st->model_ref, q, sizeof q)), -1;
}

/* PEFT's module names (the file's) into memplan's roles, by the model's family. */
static int resolve_lora_targets(ck_state *st, char *err)
{
    if (!st->s.lora_rank) return 0;
    if (!st->lora_modules[0]) return 0; /* the format's default, set by its finish */
    const mp_family *f = mp_family_of(st->c->model.family);
    unsigned bits = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", st->lora_modules);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ') t++;
        unsigned b = 0;
        for (int r = 0; f && r < MP_LORA_NROLES; r++) {
            const char *m = f->module[r];
            const char *leaf = m && strrchr(m, '.') ? strrchr(m, '.') + 1 : m;
            if (m && (!strcmp(t, m) || !strcmp(t, leaf))) b |= 1u << r;
        }
        if (!b && mp_lora_targets_parse(t, &b)) {
            char q[64];
            snprintf(err, MP_ERR_LEN, "LoRA target '%s' is no linear module of %s that memplan knows",
                     mp_quote(t, q, sizeof q), st->c->model.name);
            return -1;
        }
        bits |= b;
    }
    st->s.lora_targets = bits;
    st->given |= MP_PIN_TARGETS;
    char names[64];
    ck_set(st, "lora-targets", mp_lora_targets_name(bits, names, sizeof names), st->lora_key, NULL);
    return 0;
}

static const ck_format *format_named(const char *name)
{
    for (int i = 0; i < NFORMATS; i++)
        if (!strcmp(formats[i]->name, name)) return formats[i];
    return NULL;
}

/* The format whose words a fix is said in: the first file's (the run's own config). */
static const ck_format *main_format(const mp_check *c) { return c->nfiles ? format_named(c->format[0]) : NULL; }

static int estimate(const mp_check *c, const mp_settings *s, const mp_gpu *gpu, mp_estimate *e)
{
    char err[MP_ERR_LEN];
    return mp_estimate_run(&c->model, s, gpu, e, err);
}

/* One change, if the stack can say it and the run then fits. */
static void try_fix(mp_check *c, const mp_check_opts *o, const char *setting, const mp_settings *s)
{
    const ck_format *f = main_format(c);
    mp_estimate e;
    char text[160];
    if (c->nfixes == CK_MAX_FIXES || !f || !f->spell || f->spell(setting, s, text, sizeof text)) return;
    if (estimate(c, s, o->gpu, &e) || !mp_fits(&e, o->gpu->mem_bytes, o->headroom)) return;
    ck_fix *x = &c->fix[c->nfixes++];
    snprintf(x->change, sizeof x->change, "%s", text);
    snprintf(x->setting, sizeof x->setting, "%s", setting);
    x->device_bytes = e.device_bytes;
}

/* The smallest changes first: what costs nothing but speed, then memory
 * techniques, then numerics, then the kind of training. */
static void find_fixes(mp_check *c, const mp_check_opts *o)
{
    mp_settings s;
    if (c->max_batch > 0 && c->max_batch < c->s.batch) {
        s = c->s, s.batch = c->max_batch;
        /* the same global batch, with more accumulation */
        if (c->s.batch % c->max_batch == 0) s.accum = c->s.accum * (c->s.batch / c->max_batch);
        try_fix(c, o, "batch", &s);
    }
    if (c->s.checkpointing == MP_CKPT_NONE) s = c->s, s.checkpointing = MP_CKPT_FULL, try_fix(c, o, "checkpointing", &s);
    /* what torchtune's recipes can say (other formats' spell has no words for them) */
    if (!c->s.offload_activations) {
        s = c->s, s.offload_activations = true, s.checkpointing = MP_CKPT_FULL;
        try_fix(c, o, "offload-activations", &s);
    }
    if (!c->s.optimizer_in_backward && !c->s.lora_rank && c->s.accum == 1 && !c->s.zero && c->s.offload == MP_OFFLOAD_NONE)
        s = c->s, s.optimizer_in_backward = true, try_fix(c, o, "optimizer-in-backward", &s);
    if (c->s.attention == MP_ATTN_EAGER) s = c->s, s.attention = MP_ATTN_FLASH, try_fix(c, o, "attention", &s);
    const mp_optimizer_desc *od = mp_optimizer_desc_of(c->s.optimizer);
    if (od->adamw_class && !od->low_bit) s = c->s, s.optimizer = MP_ADAMW_8BIT, try_fix(c, o, "optimizer", &s);
    if (c->max_seq > 0 && c->max_seq < c->s.seq) s = c->s, s.seq = c->max_seq, try_fix(c, o, "seq", &s);
    if (!c->s.lora_rank) {
        s = c->s, s.lora_rank = MP_DEFAULT_LORA_RANK, s.lora_targets = MP_LORA_ALL;
        if (!mp_precision_desc_of(s.precision)->master_copy && s.precision != MP_FP32) s.precision = MP_MIXED_BF16;
        try_fix(c, o, "lora", &s);
    } else if (c->s.quant == MP_QUANT_NONE) {
        s = c->s, s.quant = MP_QUANT_NF4_DQ, try_fix(c, o, "quant", &s);
    }
}

static int verdict(mp_check *c, const mp_check_opts *o, char *err)
{
    if (mp_estimate_run(&c->model, &c->s, o->gpu, &c->e, err)) return -1;
    if (!o->gpu) return 0;
    c->fits = mp_fits(&c->e, o->gpu->mem_bytes, o->headroom);
    double answer;
    char serr[MP_ERR_LEN];
    if (!mp_solve("max-batch", &c->model, &c->s, o->gpu, o->gpu->mem_bytes, o->headroom, &answer, NULL, serr))
        c->max_batch = (int64_t)answer;
    if (!mp_solve("max-seq", &c->model, &c->s, o->gpu, o->gpu->mem_bytes, o->headroom, &answer, NULL, serr))
        c->max_seq = (int64_t)answer;
    if (!c->fits) find_fixes(c, o);
    return 0;
}

static void add_note(mp_check *c, const char *fmt, ...)
{
    if (c->nnotes == CK_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->note[c->nnotes++], sizeof c->note[0], fmt, ap);
    va_end(ap);
}

/* The settings given on the command line win over the files: each is a row of
 * mp_settings_opts, copied over and recorded as where the value came from. */
static int apply_command_line(ck_state *st, const mp_check_opts *o, char *err)
{
    for (int i = 0; i < o->nset; i++) {
        const mp_opt *row = mp_opt_find(mp_settings_opts, o->set_names[i]);
        if (!row) return snprintf(err, MP_ERR_LEN, "--%s is no setting", o->set_names[i]), -1;
        mp_opt_copy(row, &st->s, o->set);
        st->given |= row->pin;
        char value[96], key[64];
        snprintf(key, sizeof key, "--%s", row->name);
        const char *file = st->file;
        st->file = NULL;
        ck_set(st, row->name, mp_opt_format(row, &st->s, value, sizeof value), key, "given on the command line");
        st->file = file;
    }
    return 0;
}

/* Every setting that moves memory is shown, where the files said nothing too:
 * memplan's default then, and the flag that states it. */
static void report_unstated(ck_state *st)
{
    static const char *const shown[] = {"batch", "accum", "seq", "precision", "optimizer", "checkpointing",
                                        "attention", "zero", "gpus"};
    for (size_t i = 0; i < sizeof shown / sizeof *shown; i++) {
        bool said = false;
        for (int j = 0; j < st->c->norigins && !said; j++) said = !strcmp(st->c->origin[j].setting, shown[i]);
        const mp_opt *row = mp_opt_find(mp_settings_opts, shown[i]);
        if (said || !row) continue;
        char value[96], how[64];
        snprintf(how, sizeof how, "memplan's default: give --%s", row->name);
        const char *file = st->file;
        st->file = NULL;
        ck_set(st, row->name, mp_opt_format(row, &st->s, value, sizeof value), "(not in the files)", how);
        st->file = file;
    }
}

int mp_check_run(const char *const *paths, int n, const mp_check_opts *o, mp_check *c, char *err)
{
    memset(c, 0, sizeof *c);
    ck_state *st = calloc(1, sizeof *st);
    if (!st) return snprintf(err, MP_ERR_LEN, "out of memory"), -1;
    st->c = c, st->gpu = o->gpu;
    mp_settings_default(&st->s, NULL);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) rc = read_file(st, paths[i], NULL, err);
    /* the files the configs name, once each */
    for (int i = 0; i < st->nnamed && !rc; i++) {
        bool dup = false;
        for (int j = 0; j < i; j++) dup = dup || !strcmp(st->named[i], st->named[j]);
        if (!dup) rc = read_named(st, paths, n, paths[0], st->named[i], err);
    }
    if (!rc && st->memtrain && c->nfiles > 1)
        rc = (snprintf(err, MP_ERR_LEN, "a memtrain config is a whole run: give it alone"), -1);
    if (!rc) rc = resolve_model(st, o, err);
    if (!rc) {
        /* what the model sets: the sequence when no key did */
        if (!(st->given & MP_PIN_SEQ)) st->s.seq = mp_default_seq(&c->model);
        const char *fw = o->framework;
        for (int i = 0; i < c->nfiles && !fw; i++) fw = format_named(c->format[i])->framework;
        if (fw && !(st->s.framework = mp_framework_find(fw, err))) rc = -1;
        else if (fw) ck_set(st, "framework", st->s.framework->name, o->framework ? "--framework" : "(the stack's)",
                            NULL);
    }
    /* the command line first as well: a format's defaults can hang on it (torchtune's recipe on --gpus) */
    if (!rc) rc = apply_command_line(st, o, err);
    /* defaults and auto: the engines' files first (what they keep decides precision) */
    for (int pass = 0; pass < 2 && !rc; pass++)
        for (int i = 0; i < c->nfiles && !rc; i++) {
            const ck_format *f = format_named(c->format[i]);
            bool engine = f == &ck_format_deepspeed || f == &ck_format_accelerate;
            if (engine == (pass == 0) && f->finish) st->file = c->file[i], rc = f->finish(st, err);
        }
    if (!rc) rc = resolve_lora_targets(st, err);
    if (!rc) rc = ck_check_offload(st, err);
    /* engines' files alone (a DeepSpeed JSON, an accelerate YAML): their 16-bit flag decides */
    if (!rc && st->precision16 && !(st->given & MP_PIN_PRECISION))
        ck_resolve_precision(st, st->precision_key[0] ? st->precision_key : "bf16", NULL);
    if (!rc && st->procs > 0) st->s.gpus = st->procs;
    if (!rc) rc = apply_command_line(st, o, err);
    if (!rc) {
        report_unstated(st);
        c->s = st->s;
        rc = mp_settings_runnable(&c->model, &c->s, err);
        char idle[MP_ERR_LEN];
        if (!rc && mp_settings_idle_sharding(&c->s, idle, sizeof idle))
            add_note(c, "ZeRO-%d on one data-parallel GPU shards nothing (estimated as it runs); with --gpus N the "
                        "shards are N times smaller", c->s.zero);
    }
    if (!rc) rc = verdict(c, o, err);
    free(st);
    return rc;
}
