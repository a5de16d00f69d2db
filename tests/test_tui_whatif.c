/* test_tui_whatif.c — memtop's what-if view state: keys change settings, the
 * planner re-estimates at once, invalid combinations carry the library's message. */
#include <curses.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "whatif.h"

static mtop_whatif w; /* large */

int main(void)
{
    char err[MP_ERR_LEN];
    mp_model m;
    mp_gpu g;
    if (mp_model_lookup("gpt2", &m, err) || mp_gpu_lookup("24GB", &g, err)) {
        printf("FAIL profiles: %s\n0 passed, 1 failed\n", err);
        return 1;
    }
    mp_settings s;
    mp_settings_default(&s, &m);
    mtop_whatif_init(&w, &m, &s, &g, 0.10);
    CHECK(w.ok && w.have_gpu && w.gpu_index == -1, "gpt2 on a 24GB size estimates (%s)", w.err);
    mp_estimate ref;
    mp_estimate_run(&m, &s, &g, &ref, err);
    CHECK(w.e.device_bytes == ref.device_bytes && w.fits == mp_fits(&ref, g.mem_bytes, 0.10),
          "the view's numbers are the library's");
    CHECK(w.e.nterms > 0, "terms come with the estimate (%d)", w.e.nterms);

    double before = w.e.total_bytes;
    CHECK(mtop_whatif_apply(&w, MTOP_ACT_BATCH_UP) && w.s.batch == 2 && w.e.total_bytes > before,
          "+: batch 2, total grows (%.0f > %.0f)", w.e.total_bytes, before);
    mtop_whatif_apply(&w, MTOP_ACT_BATCH_DOWN);
    mtop_whatif_apply(&w, MTOP_ACT_BATCH_DOWN);
    CHECK(w.s.batch == 1 && w.e.total_bytes == before, "-: back to 1 and never below");
    mtop_whatif_apply(&w, MTOP_ACT_ACCUM_UP);
    CHECK(w.s.accum == 2, "a: accumulation 2");
    mtop_whatif_apply(&w, MTOP_ACT_ACCUM_DOWN);
    mtop_whatif_apply(&w, MTOP_ACT_ACCUM_DOWN);
    CHECK(w.s.accum == 1, "A: back to 1 and never below");

    CHECK(w.s.seq == 1024, "gpt2's default sequence is its 1024 positions");
    mtop_whatif_apply(&w, MTOP_ACT_SEQ_UP);
    CHECK(w.s.seq == 2048 && !w.ok && strstr(w.err, "exceeds") && !w.fits,
          "s: seq 2048 beyond gpt2's positions shows the library's error (%s)", w.err);
    mtop_whatif_apply(&w, MTOP_ACT_SEQ_DOWN);
    mtop_whatif_apply(&w, MTOP_ACT_SEQ_DOWN);
    CHECK(w.s.seq == 512 && w.ok && w.e.total_bytes < before, "S S: seq 512, valid again, smaller");
    mtop_whatif_apply(&w, MTOP_ACT_SEQ_UP);

    mtop_whatif_apply(&w, MTOP_ACT_QUANT);
    CHECK(w.s.quant == MP_QUANT_INT8 && !w.ok && strstr(w.err, "fully fine-tuned"),
          "w: int8 without LoRA is invalid (%s)", w.err);
    mtop_whatif_apply(&w, MTOP_ACT_LORA);
    CHECK(w.s.lora_rank == 8 && w.ok, "l: LoRA rank 8 makes it valid");
    mtop_whatif_apply(&w, MTOP_ACT_LORA);
    int64_t r16 = w.s.lora_rank;
    mtop_whatif_apply(&w, MTOP_ACT_LORA);
    int64_t r64 = w.s.lora_rank;
    mtop_whatif_apply(&w, MTOP_ACT_LORA);
    CHECK(r16 == 16 && r64 == 64 && w.s.lora_rank == 0, "LoRA ranks cycle 8, 16, 64, 0");
    for (int i = 0; i < 3; i++) mtop_whatif_apply(&w, MTOP_ACT_QUANT);
    CHECK(w.s.quant == MP_QUANT_NONE && w.ok, "quantization cycles back to none");

    mp_precision p0 = w.s.precision;
    mtop_whatif_apply(&w, MTOP_ACT_PRECISION);
    CHECK(w.s.precision != p0, "p: precision changes (%s)", mp_precision_name(w.s.precision));
    for (int i = 1; i < MP_NPRECISION; i++) mtop_whatif_apply(&w, MTOP_ACT_PRECISION);
    CHECK(w.s.precision == p0, "precision cycles through all %d", MP_NPRECISION);
    for (int i = 0; i < MP_NOPTIMIZER; i++) mtop_whatif_apply(&w, MTOP_ACT_OPTIMIZER);
    CHECK(w.s.optimizer == s.optimizer, "optimizer cycles through all %d", MP_NOPTIMIZER);
    mtop_whatif_apply(&w, MTOP_ACT_OPTIMIZER);
    CHECK(w.s.optimizer == MP_ADAMW_8BIT && w.ok, "o: adamw-8bit");
    double act_before = w.e.peak[MP_ACTIVATIONS];
    mtop_whatif_apply(&w, MTOP_ACT_CKPT);
    CHECK(w.s.checkpointing == MP_CKPT_SELECTIVE && w.e.peak[MP_ACTIVATIONS] < act_before,
          "c: selective checkpointing saves activations");
    mtop_whatif_apply(&w, MTOP_ACT_ATTENTION);
    CHECK(w.s.attention == MP_ATTN_FLASH, "f: flash attention");
    mtop_whatif_apply(&w, MTOP_ACT_CE);
    CHECK(w.s.ce == MP_CE_CHUNKED, "e: chunked cross-entropy");

    mtop_whatif_apply(&w, MTOP_ACT_GPU_NEXT);
    CHECK(w.gpu_index == 0 && !strcmp(w.gpu.name, mp_gpu_at(0)->name), "g: from a size to the first profile (%s)", w.gpu.name);
    mtop_whatif_apply(&w, MTOP_ACT_GPU_PREV);
    int n = 0;
    while (mp_gpu_at(n)) n++;
    CHECK(w.gpu_index == n - 1 && !strcmp(w.gpu.name, mp_gpu_at(n - 1)->name), "G: wraps to the last of %d", n);
    CHECK(w.fits == (w.ok && mp_fits(&w.e, w.gpu.mem_bytes, 0.10)), "the verdict follows the new GPU");

    mtop_whatif_apply(&w, MTOP_ACT_RESET);
    CHECK(w.s.batch == s.batch && w.s.precision == s.precision && w.s.optimizer == s.optimizer && w.gpu_index == -1 &&
              w.gpu.mem_bytes == g.mem_bytes && w.e.device_bytes == ref.device_bytes,
          "r: everything back as given");
    CHECK(!mtop_whatif_apply(&w, MTOP_ACT_QUIT), "quit is not a what-if action");

    /* without a GPU */
    mtop_whatif_init(&w, &m, &s, NULL, 0.10);
    CHECK(w.ok && !w.have_gpu && !w.fits && mtop_whatif_budget(&w) == 0, "no GPU: estimates, no verdict");

    /* the key table */
    CHECK(mtop_key_action('+', 1) == MTOP_ACT_BATCH_UP && mtop_key_action('+', 0) == MTOP_ACT_NONE,
          "'+' is a what-if key only");
    CHECK(mtop_key_action('q', 0) == MTOP_ACT_QUIT && mtop_key_action('q', 1) == MTOP_ACT_QUIT, "q quits everywhere");
    CHECK(mtop_key_action('?', 0) == MTOP_ACT_HELP && mtop_key_action('h', 1) == MTOP_ACT_HELP, "h and ? help");
    CHECK(mtop_key_action('\t', 0) == MTOP_ACT_NEXT && mtop_key_action(KEY_UP, 1) == MTOP_ACT_PREV, "Tab and arrows select");
    CHECK(mtop_key_action('r', 0) == MTOP_ACT_RANK_NEXT && mtop_key_action('R', 0) == MTOP_ACT_RANK_PREV &&
              mtop_key_action('r', 1) == MTOP_ACT_RESET,
          "r/R select a rank in the run view; r resets in the what-if view");
    bool every = true;
    for (int a = MTOP_ACT_QUIT; a < MTOP_NACT; a++) {
        bool found = false;
        for (int i = 0; i < mtop_nkeys; i++) found |= mtop_keys[i].action == (mtop_action)a;
        if (!found) every = false;
    }
    CHECK(every, "every action has a key");
    bool unique = true;
    for (int i = 0; i < mtop_nkeys; i++)
        for (int j = i + 1; j < mtop_nkeys; j++)
            if (mtop_keys[i].key == mtop_keys[j].key && (mtop_keys[i].views & mtop_keys[j].views)) unique = false;
    CHECK(unique, "no key does two things in one view");

    /* a method's other models: their own terms in the detail view, figures in the JSON */
    mp_settings dpo = s;
    dpo.method = MP_METHOD_PPO, dpo.batch = 2, dpo.prompt_len = 64, dpo.completion_len = 32, dpo.seq = 96;
    mtop_whatif_init(&w, &m, &dpo, &g, 0.10);
    bool refm = false, reward = false, value = false;
    for (int i = 0; i < w.e.nterms; i++) {
        refm |= w.e.terms[i].component == MP_WEIGHTS && !strcmp(w.e.terms[i].name, "reference model (frozen copy)");
        reward |= w.e.terms[i].component == MP_WEIGHTS && !strcmp(w.e.terms[i].name, "reward model (frozen)");
        value |= w.e.terms[i].component == MP_WEIGHTS && !strcmp(w.e.terms[i].name, "value model (trained)");
    }
    CHECK(w.ok && refm && reward && value, "ppo: the reference, reward and value models are terms of the weights (%s)",
          w.err);
    char *pj = mtop_whatif_json(&w);
    json_t *pjs = pj ? json_loads(pj, 0, NULL) : NULL;
    /* full fine-tuning in fp32: the reference is gpt2's 124,439,808 parameters again, 4 bytes each */
    CHECK(pjs && json_integer_value(json_object_get(pjs, "reference")) == 124439808LL * 4,
          "JSON: the reference copy's bytes (%lld)", (long long)json_integer_value(json_object_get(pjs, "reference")));
    json_decref(pjs);
    free(pj);

    /* --once --plan */
    mtop_whatif_init(&w, &m, &s, &g, 0.10);
    char *js = mtop_whatif_json(&w);
    json_error_t je;
    json_t *j = js ? json_loads(js, 0, &je) : NULL;
    CHECK(j && json_integer_value(json_object_get(j, "params")) == 124439808, "JSON: gpt2's 124,439,808 params");
    CHECK(j && json_integer_value(json_object_get(j, "device")) == (json_int_t)(ref.device_bytes + 0.5) &&
              json_is_object(json_object_get(json_object_get(j, "components"), "activations")) &&
              json_integer_value(json_object_get(json_object_get(j, "settings"), "batch")) == 1,
          "JSON: device, components, settings");
    json_decref(j);
    free(js);
    char *cs = mtop_whatif_csv(&w);
    CHECK(cs && !strncmp(cs, "model,params,gpu,budget,headroom,batch,accum,seq,precision", 58) && strstr(cs, "\"gpt2\",124439808,"),
          "CSV: header and row");
    free(cs);
    return check_summary();
}
