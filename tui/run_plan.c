/* run_plan.c — a memtrain run's plan from its metrics header (see run_plan.h).
 * memtrain writes its model's shape and its settings on the "# settings:"
 * line with the rows of its config keys (memtrain/memtrain_keys.h); they are
 * read back here through the same rows, into the planner's model and settings
 * record memtrain itself predicts from (trainer/memtrain.c predict): the
 * memtrain framework profile, one rank's share of the run. */
#include "run_plan.h"
#include "common/errors.h"
#include "memtrain/memtrain_keys.h"
#include "memtrain/shape.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/options.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shape's keys a plan cannot do without (an older memtrain wrote none of them). */
static const char *const needed[] = {"family", "layers", "hidden", "heads", "vocab"};

/* A value the rows refuse, named as the header has it: a count with its range, any
 * other value as unknown. */
static void refused(const mp_opt *row, const char *key, const char *value, char *err)
{
    char q[48];
    mp_quote(value, q, sizeof q);
    if (row && row->kind == MP_OPT_INT)
        snprintf(err, MP_ERR_LEN, "the run's header has %s '%s', not a count (%lld to %lld)", key, q,
                 (long long)row->lo, (long long)row->hi);
    else
        snprintf(err, MP_ERR_LEN, "the run's header has %s '%s', unknown to memplan", key, q);
}

int mtop_plan_of_run(const mtop_meta *meta, mp_model *m, mp_settings *s, char *err)
{
    for (size_t i = 0; i < sizeof needed / sizeof *needed; i++)
        if (!mtop_meta_setting(meta, needed[i])) {
            snprintf(err, MP_ERR_LEN, i == 0 ? "the run's header has no '%s': no what-if for it"
                                             : "the run's header has no '%s' (written by an older memtrain?): no "
                                               "what-if for it", needed[i]);
            return -1;
        }
    memtrain_shape sh = {.tied = -1};
    mp_settings_default(s, NULL);
    mp_opt_group g[3];
    int ng = memtrain_key_groups(&sh, s, true, g);
    /* every key the rows know, through them; the others (rank, a newer memtrain's) are not the plan's */
    for (int i = 0; i < meta->nkv; i++) {
        const char *key = mtop_meta_key(meta, i), *value = mtop_meta_value(meta, i);
        char why[MP_OPT_ERR_LEN];
        const mp_opt *row = mp_opt_group_find(g, ng, key, NULL);
        if (row && mp_opt_read_kv(g, ng, key, value, NULL, why)) {
            refused(row, key, value, err);
            return -1;
        }
    }
    /* without a sequence: the model's positions default to 1024, the plan's to the model's */
    bool have_seq = mtop_meta_setting(meta, "seq") != NULL;
    if (memtrain_shape_model(&sh, have_seq ? s->seq : 1024, m, err)) return -1;
    snprintf(m->source, sizeof m->source, "the run's metrics header");
    if (!have_seq) s->seq = mp_default_seq(m);
    if (!(s->framework = mp_framework_find("memtrain", err))) return -1;
    return mp_settings_check(m, s, err);
}
