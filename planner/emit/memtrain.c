/* memtrain.c — a config file for memplan's reference trainer (keys: man/memtrain.1). */
#include "emitters.h"
#include "estimate/memtrain_model.h"
#include "common/errors.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "memtrain/memtrain_keys.h"
#include "memtrain/shape.h"
#include "settings/options.h"

#include <stdio.h>
#include <string.h>

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

/* The keys from memtrain's rows (memtrain/memtrain_keys.h): the model's shape,
 * the settings, and for data parallel the ZeRO stage and the rank count. */
static void write_memtrain(sbuf *b, const mp_plan *p)
{
    const mp_model *m = p->m;
    mp_settings s = *p->s;
    s.reference = mp_reference_used(&s); /* memtrain reads the reference a run uses, not 'default' */
    memtrain_shape sh;
    memtrain_shape_of(m, &sh);
    mp_opt_group g[3];
    memtrain_key_groups(&sh, &s, true, g);
    char text[8192];
    char err[MP_OPT_ERR_LEN];
    sbuf_put(b, "# memtrain config written by memplan; run: memtrain --config FILE\n");
    sbuf_put(b, "# model %s\n", EMIT_TEXT(m->name));
    if (mp_opt_write_kv(g, 2, MP_KV_LINES, text, sizeof text, err) < 0) {
        sbuf_fail(b, "%.400s", err);
        return;
    }
    sbuf_put(b, "%s", text);
    /* data parallel: batch is per rank; the rank count is the launcher's (memtrain
     * implements ZeRO 0 to 3, and refuses what it does not run with its reason) */
    if (s.gpus > 1) {
        sbuf_put(b, "# data parallel: mpirun -np %lld memtrain --config FILE\n", (long long)s.gpus);
        if (mp_opt_write_kv(&g[2], 1, MP_KV_LINES, text, sizeof text, err) < 0) {
            sbuf_fail(b, "%.400s", err);
            return;
        }
        sbuf_put(b, "%s", text);
    }
}

const mp_emit_target emit_target_memtrain = {
    .name = "memtrain", .file = {"memtrain.conf", write_memtrain, 0644}, .check = check_memtrain,
    .memtrain_values = true,
    .framework = "memtrain",
};
