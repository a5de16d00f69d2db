/* test_emit_hf.c — the Hugging Face emitter's architecture table
 * (planner/model/family.c) against the transformers modeling files as
 * tabulated in tests/data/engines/hf_modules.csv and hf_attention_support.csv:
 * every profiled family has a row, every module name it emits is a Linear or
 * Conv1D of that model_type, and sdpa is used only where declared. */
#include "check.h"
#include "model/family.h"
#include "common/errors.h"
#include "model/model.h"
#include "profiles/profiles.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Does `path` (a CSV with '#' comments) have a row whose first column is
 * `type` and whose column `col` equals `value` (and, if `kind_col` >= 0, whose
 * column kind_col is not "Parameter")? */
static bool csv_has(const char *path, const char *type, int col, const char *value, int kind_col)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[2048];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char *cells[8] = {0};
        int n = 0;
        for (char *p = line; n < 8 && p;) {
            cells[n++] = p;
            p = strchr(p, ',');
            if (p) *p++ = 0;
        }
        if (n <= col || strcmp(cells[0], type)) continue;
        bool kind_ok = kind_col < 0 || (n > kind_col && strcmp(cells[kind_col], "Parameter"));
        found = !strcmp(cells[col], value) && kind_ok;
    }
    fclose(f);
    return found;
}

static void check_profiles_have_rows(void)
{
    char err[MP_ERR_LEN];
    CHECK(mp_profiles_load(err) == 0, "profiles load");
    int missing = 0, no_id = 0;
    for (int i = 0; mp_model_at(i); i++) {
        const mp_model *m = mp_model_at(i);
        if (!mp_family_has_modules(mp_family_of(m->family))) {
            missing++;
            CHECK(false, "profile %s: family '%s' has a families row with its modules", m->name, m->family);
        }
        if (!strchr(m->hf_id, '/')) {
            no_id++;
            CHECK(false, "profile %s has a Hugging Face repo id (got '%s')", m->name, m->hf_id);
        }
    }
    CHECK(missing == 0 && no_id == 0, "every profiled model has a family row and a repo id");
    const mp_model *l = NULL;
    for (int i = 0; mp_model_at(i); i++)
        if (!strcmp(mp_model_at(i)->name, "llama-3.1-8b")) l = mp_model_at(i);
    CHECK(l && !strcmp(l->hf_id, "meta-llama/Llama-3.1-8B"), "llama-3.1-8b's repo id is its first aliased repo");
}

static void check_rows_against_sources(void)
{
    const char *modules = "tests/data/engines/hf_modules.csv", *attn = "tests/data/engines/hf_attention_support.csv";
    const char *layers = "tests/data/engines/hf_layer_classes.csv";
    for (int i = 0; mp_family_at(i); i++) {
        const mp_family *f = mp_family_at(i);
        if (!mp_family_has_modules(f)) continue; /* read from configs only (gptj...) */
        const char *mods[MP_LORA_NROLES];
        int n = mp_family_targets(f, MP_LORA_ALL, mods);
        CHECK(n > 0, "%s: 'all' reaches some module", f->model_type);
        for (int j = 0; j < n; j++) {
            const char *leaf = strrchr(mods[j], '.') ? strrchr(mods[j], '.') + 1 : mods[j];
            CHECK(csv_has(modules, f->model_type, 2, leaf, 3), "%s: '%s' is a Linear/Conv1D in its modeling file",
                  f->model_type, mods[j]);
        }
        CHECK(csv_has(attn, f->model_type, 1, f->sdpa ? "_supports_sdpa=True" : "absent", -1),
              "%s: sdpa %s as its PreTrainedModel declares", f->model_type, f->sdpa ? "used" : "not used");
        CHECK(csv_has(layers, f->model_type, 1, f->layer_class ? f->layer_class : "", -1),
              "%s: FSDP wraps %s, its _no_split_modules", f->model_type, f->layer_class ? f->layer_class : "(not read)");
    }
}

static void check_target_mapping(void)
{
    const char *mods[MP_LORA_NROLES];
    const mp_family *g = mp_family_of("gpt2");
    int n = mp_family_targets(g, MP_LORA_ALL, mods);
    CHECK(n == 4 && !strcmp(mods[0], "c_attn") && !strcmp(mods[3], "mlp.c_proj"),
          "gpt2 all: c_attn once, attn.c_proj, c_fc, mlp.c_proj (got %d)", n);
    n = mp_family_targets(mp_family_of("llama"), MP_LORA_ALL, mods);
    CHECK(n == 7 && !strcmp(mods[6], "down_proj"), "llama all: seven modules, down_proj last");
    n = mp_family_targets(mp_family_of("phi3"), MP_LORA_MLP, mods);
    CHECK(n == 2 && !strcmp(mods[0], "gate_up_proj"), "phi3 mlp: gate_up_proj, down_proj");
    n = mp_family_targets(mp_family_of("falcon"), MP_LORA_Q | MP_LORA_V, mods);
    CHECK(n == 1 && !strcmp(mods[0], "query_key_value"), "falcon q,v: the fused query_key_value once");
    CHECK(mp_family_of("no-such-type") == NULL, "an unknown model_type has no row");
}

int main(void)
{
    check_profiles_have_rows();
    check_rows_against_sources();
    check_target_mapping();
    return check_summary();
}
