/* memtrain_model.c — the prediction for `--framework memtrain`: memplan's own
 * reference trainer, whose every buffer is a row of memtrain_inventory.c.
 *
 * The trainer is checked against this prediction (make validate). The rows are
 * added up by the allocator's tags and laid on the trainer's step: the
 * persistent rows are allocated at creation; each micro-batch's forward
 * allocates the residual stream, the saved slots of every layer, the final
 * norm and the logits, all live at the forward's end (the total peak), and its
 * backward frees them; backward and the optimizer step allocate nothing.
 * Components come from the tags (memtrain_tag_component): master weights are
 * optimizer state, workspaces and small tables overhead, the data loader host
 * memory. The --explain terms are the rows, named "tag: buffer". */
#include "estimate/memtrain_model.h"
#include "memtrain/memtrain_inventory.h"
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <string.h>

/* A value memtrain does not implement (its vocabulary row says which do). */
static int unsupported(const mp_value *(*value_at)(int), int v, char *err)
{
    char choices[160];
    snprintf(err, MP_ERR_LEN, "memtrain implements %s, not '%s'",
             mp_choices(value_at, true, " and ", choices, sizeof choices), value_at(v)->name);
    return -1;
}

int memtrain_check_supported(const mp_model *m, const mp_settings *s, char *err)
{
    if (!mp_precision_value(s->precision)->memtrain) return unsupported(mp_precision_value, s->precision, err);
    if (!mp_optimizer_value(s->optimizer)->memtrain) return unsupported(mp_optimizer_value, s->optimizer, err);
    if (s->quant == MP_QUANT_INT8 || s->tp > 1 || s->pp > 1 || m->experts) {
        snprintf(err, MP_ERR_LEN, "memtrain runs dense models, data parallel only, without int8");
        return -1;
    }
    if (s->zero > 3) {
        snprintf(err, MP_ERR_LEN, "memtrain implements ZeRO stages 0 to 3, not '%d'", s->zero);
        return -1;
    }
    if (s->zero >= 2 && s->lora_rank > 0) {
        snprintf(err, MP_ERR_LEN, "memtrain implements ZeRO-%d for full fine-tuning, not with LoRA", s->zero);
        return -1;
    }
    if (!mp_method_value(s->method)->memtrain) return unsupported(mp_method_value, s->method, err);
    mp_reference ref = mp_reference_used(s);
    if (!mp_reference_value(ref)->memtrain) return unsupported(mp_reference_value, ref, err);
    return memtrain_reference_refused(s->method, ref, s->lora_rank, s->zero, err);
}

/* trainer/config.c refuses the same, with the same line. A reward model under
 * LoRA trains its new score head whole beside the adapters (TRL's docstring asks
 * for modules_to_save=["score"], trl/trainer/reward_trainer.py 319-321 at
 * huggingface/trl@f2cd577): memtrain trains either the base or the adapters. */
int memtrain_reference_refused(mp_method method, mp_reference ref, int64_t lora_rank, int zero, char *err)
{
    bool wants = mp_method_desc_of(method)->reference, has = ref == MP_REF_MODEL || ref == MP_REF_ADAPTER;
    const char *why = NULL;
    if (mp_method_desc_of(method)->score_head && lora_rank)
        why = "runs full fine-tuning in memtrain (LoRA would train the score head whole beside the adapters)";
    else if (wants && !has)
        why = "needs a reference (model, or adapter under LoRA)";
    else if (!wants && has)
        why = "takes no reference (reference = none)";
    else if (ref == MP_REF_ADAPTER && !lora_rank)
        why = "with reference = adapter needs LoRA (lora-rank > 0)";
    else if (ref == MP_REF_MODEL && lora_rank)
        why = "with LoRA runs reference = adapter in memtrain (the frozen base is the reference), not model";
    else if (ref == MP_REF_MODEL && zero >= 3)
        why = "with reference = model runs ZeRO 0 to 2 in memtrain (the copy is not sharded)";
    if (why) snprintf(err, MP_ERR_LEN, "method %s %s", mp_method_name(method), why);
    return why ? -1 : 0;
}

/* ---------- --explain: one term per row ---------- */

static void add_term(mp_estimate *e, int comp, const char *tag, const char *name, double bytes,
                     const char *formula)
{
    if (bytes == 0 || e->nterms >= MP_MAX_TERMS) return;
    mp_term *t = &e->terms[e->nterms++];
    t->component = comp;
    snprintf(t->name, sizeof t->name, "%s: %s", tag, name);
    snprintf(t->formula, sizeof t->formula, "%s", formula);
    t->bytes = bytes;
}

static void append(char *buf, size_t len, const char *word)
{
    size_t used = strlen(buf);
    if (used < len) snprintf(buf + used, len - used, " %s", word);
}

/* The slots as two terms: their saved copies (L layers, per micro-batch) and
 * the fp32 working copies of one layer. */
static void explain_slots(const memtrain_dims *d, mp_estimate *e)
{
    char saved[sizeof e->terms[0].formula] = "L x per layer:";
    char working[sizeof e->terms[0].formula] = "one layer, fp32:";
    double saved_bytes = 0, working_bytes = 0;
    for (int id = MEMTRAIN_LN1; id <= MEMTRAIN_LORA_U; id++) {
        size_t persistent, micro_batch;
        memtrain_row_bytes(d, id, &persistent, &micro_batch);
        if (micro_batch) append(saved, sizeof saved, memtrain_rows[id].name);
        if (persistent) append(working, sizeof working, memtrain_rows[id].name);
        saved_bytes += (double)micro_batch;
        working_bytes += (double)persistent;
    }
    const char *tag = memtrain_tag_name(MEMTRAIN_TAG_ACTIVATIONS);
    add_term(e, MP_ACTIVATIONS, tag, "saved slots", saved_bytes, saved);
    add_term(e, MP_ACTIVATIONS, tag, "slot buffers", working_bytes, working);
}

static void explain_rows(const memtrain_dims *d, mp_estimate *e)
{
    static const int order[] = {MP_WEIGHTS, MP_GRADIENTS, MP_OPTIMIZER, MP_ACTIVATIONS, MP_OVERHEAD, -1};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        for (int id = 0; id < MEMTRAIN_NROWS; id++) {
            const memtrain_row *r = &memtrain_rows[id];
            if (memtrain_tag_component(r->tag) != order[k]) continue;
            if (id == MEMTRAIN_LN1) explain_slots(d, e);
            if (r->lifetime == MEMTRAIN_LAYER_SLOT) continue;
            size_t persistent, micro_batch;
            char formula[sizeof e->terms[0].formula];
            memtrain_row_bytes(d, id, &persistent, &micro_batch);
            memtrain_row_formula(d, id, formula, sizeof formula);
            add_term(e, order[k], memtrain_tag_name(r->tag), r->name,
                     (double)persistent + (double)micro_batch, formula);
        }
    }
}

/* ---------- the step ---------- */

/* Bytes per component: allocated at creation, and by each micro-batch's forward. */
typedef struct step_bytes {
    double persistent[MP_NCOMP], micro_batch[MP_NCOMP], ref_forward[MP_NCOMP];
    double host, logits, saved_layer;
} step_bytes;

static void add_rows(const memtrain_dims *d, step_bytes *b)
{
    memset(b, 0, sizeof *b);
    for (int id = 0; id < MEMTRAIN_NROWS; id++) {
        size_t persistent, micro_batch;
        memtrain_row_bytes(d, id, &persistent, &micro_batch);
        int comp = memtrain_tag_component(memtrain_rows[id].tag);
        if (comp >= 0) b->ref_forward[comp] += (double)memtrain_ref_forward_bytes(d, id);
        if (comp < 0) {
            b->host += (double)persistent + (double)micro_batch;
        } else {
            b->persistent[comp] += (double)persistent;
            b->micro_batch[comp] += (double)micro_batch;
        }
        if (id == MEMTRAIN_LOGITS || id == MEMTRAIN_CE_LSE) b->logits += (double)micro_batch;
        if (memtrain_rows[id].lifetime == MEMTRAIN_LAYER_SLOT)
            b->saved_layer += (double)micro_batch / (double)d->L;
    }
}

int memtrain_estimate(const mp_model *m, const mp_settings *s, mp_estimate *e, bool explain, char *err)
{
    if (memtrain_check_supported(m, s, err)) return -1;
    memtrain_dims d;
    memtrain_dims_from(m, s, &d);
    if (mp_method_desc_of(s->method)->score_head) { /* the model as it trains: a C x 1 score head, untied */
        mp_model scored = *m;
        scored.tied = false, scored.head_out = 1;
        mp_param_count(&scored, &e->params);
    }
    step_bytes b;
    add_rows(&d, &b);
    e->trainable_params = (double)d.q[MEMTRAIN_Q_NTRAIN];

    /* the step: everything persistent, plus the forward's allocations at its end;
     * before it, a reference's forward and its transients */
    e->nphases = 0;
    bool ref = d.holds & MEMTRAIN_IF_REF_FWD;
    const char *names[] = {"reference forward end", "forward end", "backward end", "optimizer step"};
    for (int i = ref ? 0 : 1; i < 4; i++) {
        mp_phase *p = &e->phases[e->nphases++];
        p->name = names[i];
        p->total = 0;
        for (int k = 0; k < MP_NCOMP; k++) {
            p->comp[k] = b.persistent[k] + (i == 0 ? b.ref_forward[k] : i == 1 ? b.micro_batch[k] : 0);
            p->total += p->comp[k];
        }
    }
    e->peak_phase = 0;
    for (int i = 1; i < e->nphases; i++)
        if (e->phases[i].total > e->phases[e->peak_phase].total) e->peak_phase = i;
    for (int k = 0; k < MP_NCOMP; k++) {
        e->at_peak[k] = e->phases[e->peak_phase].comp[k];
        e->peak[k] = 0;
        for (int i = 0; i < e->nphases; i++)
            if (e->phases[i].comp[k] > e->peak[k]) e->peak[k] = e->phases[i].comp[k];
    }
    e->logits_bytes = b.logits;
    e->total_bytes = e->reserved_bytes = e->device_bytes = e->phases[e->peak_phase].total;
    e->host_bytes = e->host_data_bytes = b.host;
    e->model_states_bytes = mp_model_states_bytes(m, s, e->params.total);
    /* memtrain allocates gradients once, with the weights */
    e->resident_bytes = e->peak[MP_WEIGHTS] + e->peak[MP_GRADIENTS] + e->peak[MP_OPTIMIZER];
    e->act_per_layer = b.saved_layer;
    if (explain) explain_rows(&d, e);
    return 0;
}
