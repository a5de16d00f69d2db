/* test_vocabulary.c — the settings vocabulary: every row names, parses and
 * helps; traits agree with each other; engine spellings exist in the engines'
 * own sources (lists under tests/data/engines/, each citing its file). */
#include "check.h"
#include "emit/emitters.h"
#include "common/errors.h"
#include "profiles/framework.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct setting {
    const char *what;
    const mp_value *(*value_at)(int);
    int (*parse)(const char *, int *);
} setting;

/* The parsers take typed enum pointers; an int-shaped adaptor per setting. */
#define ADAPT(fn, type) \
    static int parse_##fn(const char *s, int *out) { type v; int rc = mp_##fn##_parse(s, &v); *out = (int)v; return rc; }
ADAPT(precision, mp_precision)
ADAPT(optimizer, mp_optimizer)
ADAPT(ckpt, mp_ckpt)
ADAPT(attention, mp_attention)
ADAPT(quant, mp_quant)
ADAPT(offload, mp_offload)
ADAPT(ce, mp_ce)
ADAPT(loader, mp_loader)
ADAPT(task, mp_task)
ADAPT(step_impl, mp_step_impl)

static const setting settings[] = {
    {"precision", mp_precision_value, parse_precision}, {"optimizer", mp_optimizer_value, parse_optimizer},
    {"checkpointing", mp_ckpt_value, parse_ckpt},        {"attention", mp_attention_value, parse_attention},
    {"quant", mp_quant_value, parse_quant},              {"offload", mp_offload_value, parse_offload},
    {"ce", mp_ce_value, parse_ce},                       {"loader", mp_loader_value, parse_loader},
    {"task", mp_task_value, parse_task},                 {"optimizer-impl", mp_step_impl_value, parse_step_impl},
};

static void test_rows(void)
{
    for (size_t k = 0; k < sizeof settings / sizeof *settings; k++) {
        const setting *st = &settings[k];
        int n = 0, bad = 0;
        for (int i = 0; st->value_at(i); i++, n++) {
            const mp_value *v = st->value_at(i);
            int back = -1;
            if (!v->name || !*v->name || !v->help || !*v->help || st->parse(v->name, &back) || back != i) bad++;
            for (const char *a = v->aliases; a && *a;) { /* every alias parses to its row */
                char one[32];
                size_t len = strcspn(a, " ");
                snprintf(one, sizeof one, "%.*s", (int)len, a);
                if (st->parse(one, &back) || back != i) bad++;
                a += len + (a[len] == ' ');
            }
        }
        int dummy;
        CHECK(n > 1 && bad == 0 && st->parse("no-such-value", &dummy) != 0,
              "%s: %d rows, each with a name and help, parsing back to itself (aliases too)", st->what, n);
    }
    char buf[256];
    CHECK(!strcmp(mp_choices(mp_precision_value, true, " or ", buf, sizeof buf), "fp32, mixed-bf16 or mixed-fp16"),
          "the precisions memtrain implements, listed from the rows: %s", buf);
    CHECK(!strcmp(mp_choices(mp_ckpt_value, false, NULL, buf, sizeof buf), "none, selective, full"),
          "every checkpointing value, listed from the rows: %s", buf);
    mp_precision p;
    CHECK(mp_precision_parse(NULL, &p) != 0 && mp_precision_desc_of((mp_precision)99) == NULL &&
              !strcmp(mp_precision_name((mp_precision)99), "?"),
          "out-of-range values and NULL names are refused");
}

/* Traits that follow from one another must agree in every precision row. */
static void test_precision_traits(void)
{
    int bad = 0;
    for (int i = 0; i < MP_NPRECISION; i++) {
        const mp_precision_desc *d = mp_precision_desc_of((mp_precision)i);
        const mp_precision_desc *twin = mp_precision_desc_of(d->same_memory_as);
        if (d->master_copy && d->stored_bytes != 2) bad++;        /* masters exist for 16-bit storage */
        if (d->autocast && (d->stored_bytes != 4 || d->act_bytes != 2)) bad++;
        if (d->loss_scaling && d->needs_bf16) bad++;              /* fp16 scales, bf16 does not */
        if (!twin || twin->stored_bytes != d->stored_bytes || twin->act_bytes != d->act_bytes ||
            twin->master_copy != d->master_copy || twin->autocast != d->autocast)
            bad++;
        /* every precision has a word in transformers and accelerate (their emitters' tables) */
        if (!emit_hf_dtype((mp_precision)i) || !emit_accelerate_precision((mp_precision)i) || !d->short_name) bad++;
    }
    CHECK(bad == 0, "precision traits agree (masters only with 16-bit storage, autocast keeps fp32 weights, "
                    "a twin has the same bytes)");
    CHECK(mp_precision_desc_of(MP_FP32)->stored_bytes == 4 && mp_precision_desc_of(MP_PURE_BF16)->state_bytes == 2 &&
              mp_precision_desc_of(MP_MIXED_BF16)->master_copy && mp_precision_desc_of(MP_AMP_FP16)->loss_scaling,
          "fp32 stores 4 bytes, pure bf16 keeps 2-byte states, mixed keeps masters, fp16 scales the loss");
}

/* Every TrainingArguments `optim` the hf emitter writes is one transformers defines. */
static void test_engine_spellings(void)
{
    FILE *f = fopen("tests/data/engines/transformers_optim.txt", "r");
    CHECK(f != NULL, "tests/data/engines/transformers_optim.txt opens");
    if (!f) return;
    char names[4096] = " ", line[128];
    while (fgets(line, sizeof line, f))
        if (line[0] != '#' && line[0] != '\n') {
            line[strcspn(line, "\n")] = 0;
            strncat(names, line, sizeof names - strlen(names) - 3);
            strcat(names, " ");
        }
    fclose(f);
    for (int i = 0; i < MP_NOPTIMIZER; i++) {
        const mp_optimizer_desc *d = mp_optimizer_desc_of((mp_optimizer)i);
        const char *optim = emit_hf_optim((mp_optimizer)i);
        char want[64];
        snprintf(want, sizeof want, " %s ", optim ? optim : "(none)");
        CHECK(optim && strstr(names, want), "%s: TrainingArguments optim '%s' is in OptimizerNames", d->v.name,
              optim ? optim : "(none)");
    }
}

/* The PyTorch figures built in for when no profile can be read are the
 * frameworks.csv row "pytorch", column for column (one fact, checked twice). */
static void test_builtin_profile(void)
{
    char err[MP_ERR_LEN];
    const mp_framework *row = mp_framework_find("pytorch", err), *built = mp_framework_builtin();
    CHECK(row != NULL, "frameworks.csv has a pytorch row");
    if (!row) return;
    int differ = 0;
    for (int i = 0; i < fw_ncolumns; i++)
        if (fw_get(row, &fw_columns[i]) != fw_get(built, &fw_columns[i])) {
            differ++;
            CHECK(false, "built-in pytorch: %s %g, frameworks.csv's row %g", fw_columns[i].name,
                  fw_get(built, &fw_columns[i]), fw_get(row, &fw_columns[i]));
        }
    CHECK(differ == 0 && row->kind == built->kind, "the built-in pytorch profile equals frameworks.csv's row");
}

int main(void)
{
    test_rows();
    test_builtin_profile();
    test_precision_traits();
    test_engine_spellings();
    return check_summary();
}
