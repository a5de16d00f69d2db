/* shape.c — the model a memtrain run builds (shape.h). */
#include "memtrain/shape.h"
#include "common/errors.h"
#include "model/model.h"
#include "settings/options.h"

#include <stdio.h>
#include <string.h>

static const char *const family_names[MEMTRAIN_NFAMILY] = {"gpt2", "llama"};

const char *memtrain_family_name(memtrain_family f)
{
    return (int)f >= 0 && (int)f < MEMTRAIN_NFAMILY ? family_names[f] : "?";
}

int memtrain_family_parse(const char *s, memtrain_family *f)
{
    for (int i = 0; i < MEMTRAIN_NFAMILY; i++)
        if (!strcmp(s, family_names[i])) {
            *f = (memtrain_family)i;
            return 0;
        }
    return -1;
}

static const mp_vocab families = {MEMTRAIN_NFAMILY, family_names, NULL, NULL};

/* tied: 0 or 1 as read; -1 (the family's) is not written. The row may be aimed at
 * a struct holding the shape: its offset is the row's. */
static mp_opt tied_as_int(const mp_opt *o)
{
    mp_opt r = *o;
    r.kind = MP_OPT_INT, r.lo = 0, r.hi = 1;
    return r;
}
static int read_tied(const mp_opt *o, const char *value, void *base, char *err)
{
    mp_opt r = tied_as_int(o);
    return mp_opt_read(&r, value, base, NULL, err);
}
static const char *write_tied(const mp_opt *o, const void *base, char *buf, size_t len)
{
    int tied;
    memcpy(&tied, (const char *)base + o->offset, sizeof tied);
    mp_opt r = tied_as_int(o);
    return tied < 0 ? NULL : mp_opt_format(&r, base, buf, len);
}

#define SH(field) MP_OPT_AT(memtrain_shape, field)
const mp_opt memtrain_shape_opts[] = {
    {"family", MP_OPT_ENUM, SH(family), .vocab = &families, .or_last = true},
    {"layers", MP_OPT_INT, SH(layers), .lo = 1, .hi = 1000},
    {"hidden", MP_OPT_INT, SH(hidden), .lo = 1, .hi = 1 << 16},
    {"heads", MP_OPT_INT, SH(heads), .lo = 1, .hi = 4096},
    {"kv-heads", MP_OPT_INT, SH(kv_heads), .lo = 0, .hi = 4096},
    {"ffn", MP_OPT_INT, SH(ffn), .lo = 0, .hi = 1 << 20},
    {"vocab", MP_OPT_INT, SH(vocab), .lo = 1, .hi = 1 << 20},
    {"max-pos", MP_OPT_INT, SH(max_pos), .lo = 0, .hi = 1 << 20},
    {"tied", MP_OPT_CUSTOM, SH(tied), .read = read_tied, .write = write_tied},
    {0},
};

void memtrain_shape_of(const mp_model *m, memtrain_shape *sh)
{
    memset(sh, 0, sizeof *sh);
    sh->family = m->mlp == MP_MLP_GATED ? MEMTRAIN_LLAMA : MEMTRAIN_GPT2;
    sh->layers = (int)m->layers, sh->hidden = (int)m->hidden, sh->heads = (int)m->heads;
    sh->kv_heads = (int)m->kv_heads, sh->ffn = (int)m->ffn, sh->vocab = (int)m->vocab;
    sh->max_pos = (int)m->max_pos, sh->tied = m->tied;
}

int memtrain_shape_model(const memtrain_shape *sh, int64_t seq, mp_model *m, char *err)
{
    memset(m, 0, sizeof *m);
    m->layers = sh->layers, m->hidden = sh->hidden, m->heads = sh->heads, m->kv_heads = sh->kv_heads;
    m->ffn = sh->ffn, m->vocab = sh->vocab, m->max_pos = sh->max_pos;
    bool tied = sh->tied >= 0 ? sh->tied != 0 : sh->family == MEMTRAIN_GPT2;
    return mp_memtrain_model(m, memtrain_family_name(sh->family), tied, seq, err);
}

int mp_memtrain_model(mp_model *m, const char *family, bool tied, int64_t seq, char *err)
{
    if (mp_model_preset(m, family, err)) return -1; /* the dimensions are left alone */
    m->tied = tied;
    if (!m->max_pos) m->max_pos = seq;
    snprintf(m->name, sizeof m->name, "memtrain-%s-%lldx%lld", family, (long long)m->layers, (long long)m->hidden);
    return mp_model_finish(m, err);
}
