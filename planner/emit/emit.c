/* emit.c — the table of emit targets (each row defined in its own file, as
 * emitters.h's EMIT_TARGETS lists them), and what every target does alike:
 * the checks, the text, the file, the bundle. */
#include "emitters.h"
#include "common/errors.h"
#include "common/files.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMIT_ROW(name) &emit_target_##name,
static const mp_emit_target *const targets[] = {EMIT_TARGETS(EMIT_ROW)};
enum { NTARGETS = sizeof targets / sizeof *targets };

const mp_family *emit_family_of(const mp_model *m)
{
    const mp_family *f = mp_family_of(m->family);
    return mp_family_has_modules(f) ? f : NULL;
}

const mp_emit_target *mp_emit_target_at(int i) { return i >= 0 && i < NTARGETS ? targets[i] : NULL; }
const char *mp_emit_target_name(const mp_emit_target *t) { return t->name; }
const char *mp_emit_target_framework(const mp_emit_target *t) { return t->framework; }
bool mp_emit_target_bundles(const mp_emit_target *t) { return t->bundle != NULL; }

const char *mp_emit_target_list(char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < NTARGETS && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", targets[i]->name);
    return buf;
}

const mp_emit_target *mp_emit_target_named(const char *name, char *err)
{
    for (int i = 0; i < NTARGETS; i++)
        if (!strcmp(name, targets[i]->name)) return targets[i];
    char list[128], q[80];
    snprintf(err, MP_ERR_LEN, "unknown --emit '%s' (%s)", mp_quote(name, q, sizeof q),
             mp_emit_target_list(list, sizeof list));
    return NULL;
}

/* memtrain's values: those whose vocabulary row says memtrain implements them */
static unsigned memtrain_bits(const mp_value *(*value_at)(int), int n)
{
    unsigned bits = 0;
    for (int i = 0; i < n; i++)
        if (value_at(i)->memtrain) bits |= 1u << i;
    return bits;
}

unsigned mp_emit_target_precisions(const mp_emit_target *t)
{
    return t->memtrain_values ? memtrain_bits(mp_precision_value, MP_NPRECISION) : 0;
}

unsigned mp_emit_target_optimizers(const mp_emit_target *t)
{
    return t->memtrain_values ? memtrain_bits(mp_optimizer_value, MP_NOPTIMIZER) : 0;
}

int mp_emit_check(const mp_emit_target *t, const mp_model *m, const mp_settings *s, char *err)
{
    /* the Trainer, DeepSpeed, accelerate and memtrain step after the backward,
     * and keep saved activations on the device */
    if ((s->optimizer_in_backward || s->offload_activations) && !t->steps_in_backward) {
        snprintf(err, MP_ERR_LEN, "--%s has no form in '%s': the Trainer, DeepSpeed and memtrain have none "
                 "(torchtune's %s runs it: --emit torchtune)",
                 s->optimizer_in_backward ? "optimizer-in-backward" : "offload-activations", t->name,
                 s->optimizer_in_backward ? "optimizer_in_bwd" : "enable_activation_offloading");
        return -1;
    }
    if (s->ckpt_every > 1) {
        snprintf(err, MP_ERR_LEN, "--checkpoint-every %lld has no form in '%s' yet: the targets checkpoint every "
                 "block or none", (long long)s->ckpt_every, t->name);
        return -1;
    }
    /* memtrain runs them (trainer/pairwise.c), the hf bundle through TRL (trl.c) */
    if (s->method != MP_METHOD_SFT && !t->memtrain_values && !t->trl_methods &&
        !(t->dpo_recipes && s->method == MP_METHOD_DPO)) {
        snprintf(err, MP_ERR_LEN, "--method %s has no form in '%s' yet: memplan plans TRL's %s and writes it "
                 "with --emit hf (or memtrain)", mp_method_name(s->method), t->name,
                 mp_method_desc_of(s->method)->trainer);
        return -1;
    }
    return t->check ? t->check(m, s, err) : 0;
}

int mp_emit_accept(const void *target, const mp_model *m, mp_settings *s, char *why)
{
    const mp_emit_target *t = target;
    if (t->launcher) t->launcher(s);
    return mp_emit_check(t, m, s, why);
}

/* One file's text, or -1 with err. */
static int text_of(const emit_file *f, const mp_plan *p, sbuf *b, char *err)
{
    *b = (sbuf){0};
    f->write(b, p);
    return sbuf_finish(b, err);
}

int mp_emit(const mp_emit_target *t, const mp_plan *p, char **out, char *err)
{
    sbuf b;
    if (mp_emit_check(t, p->m, p->s, err) || text_of(&t->file, p, &b, err)) return -1;
    *out = b.p;
    return 0;
}

int mp_emit_file(const mp_emit_target *t, const mp_plan *p, const char *path, char *err)
{
    char *text;
    if (mp_emit(t, p, &text, err)) return -1;
    int rc = mp_write_file_atomic_mode(path, text, strlen(text), t->file.mode, err);
    free(text);
    return rc;
}

int mp_emit_bundle(const mp_emit_target *t, const char *dir, const mp_plan *p, char *err)
{
    emit_file files[EMIT_MAX_FILES + 1];
    if (!t->bundle) {
        snprintf(err, MP_ERR_LEN, "--emit %s writes one file, not a bundle: give -o a file name", t->name);
        return -1;
    }
    if (mp_emit_check(t, p->m, p->s, err)) return -1;
    int n = t->bundle(p, files, err);
    if (n < 0) return -1;
    files[n++] = (emit_file){"README.txt", t->readme, 0644};
    /* every text first: a file that cannot be written writes none */
    sbuf texts[EMIT_MAX_FILES + 1] = {{0}};
    mp_out_file out[EMIT_MAX_FILES + 1];
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = text_of(&files[i], p, &texts[i], err);
        out[i] = (mp_out_file){files[i].name, texts[i].p, texts[i].n, files[i].mode};
    }
    if (!rc) rc = mp_write_files_atomic(dir, out, n, err);
    for (int i = 0; i < n; i++) free(texts[i].p);
    return rc;
}
