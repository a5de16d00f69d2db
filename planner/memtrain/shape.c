/* shape.c — the model a memtrain run builds (shape.h). */
#include "memtrain/shape.h"
#include "model/model.h"

#include <stdio.h>

int mp_memtrain_model(mp_model *m, const char *family, bool tied, int64_t seq, char *err)
{
    if (mp_model_preset(m, family, err)) return -1; /* the dimensions are left alone */
    m->tied = tied;
    if (!m->max_pos) m->max_pos = seq;
    snprintf(m->name, sizeof m->name, "memtrain-%s-%lldx%lld", family, (long long)m->layers, (long long)m->hidden);
    return mp_model_finish(m, err);
}
