/* emit.c — runnable configs: one table of targets, one file per target. */
#include "emitters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    void (*write)(sbuf *, const mp_model *, const mp_settings *);
} targets[] = {
    {"memtrain", emit_memtrain},
    {"hf", emit_hf},
    {"deepspeed", emit_deepspeed},
    {"accelerate", emit_accelerate},
};
enum { NTARGETS = sizeof targets / sizeof *targets };

static int unknown_target(const char *kind, char *err)
{
    size_t o = (size_t)snprintf(err, MP_ERR_LEN, "unknown --emit '%.64s' (", kind);
    for (int i = 0; i < NTARGETS && o < MP_ERR_LEN; i++)
        o += (size_t)snprintf(err + o, MP_ERR_LEN - o, "%s%s", i ? ", " : "", targets[i].name);
    if (o < MP_ERR_LEN) snprintf(err + o, MP_ERR_LEN - o, ")");
    return -1;
}

int mp_emit(const char *kind, const mp_model *m, const mp_settings *s, char **out, char *err)
{
    int t = 0;
    while (t < NTARGETS && strcmp(kind, targets[t].name)) t++;
    if (t == NTARGETS) return unknown_target(kind, err);
    sbuf b = {0};
    targets[t].write(&b, m, s);
    if (b.oom || !b.p) {
        free(b.p);
        snprintf(err, MP_ERR_LEN, "out of memory writing the config");
        return -1;
    }
    *out = b.p;
    return 0;
}
