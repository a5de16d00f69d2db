/* emit.c — runnable configs: one table of targets, one file per target, and
 * the bundle (-o DIR) that holds every file a plan needs to run. */
#include "emitters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    void (*write)(sbuf *, const mp_model *, const mp_settings *);
    /* 0, or -1 with err when the target cannot run the plan as estimated; NULL: always can */
    int (*check)(const mp_model *, const mp_settings *, char *);
    const char *file;        /* its name in a bundle */
} targets[] = {
    {"memtrain", emit_memtrain, check_memtrain, "memtrain.conf"},
    {"hf", emit_hf, NULL, "train.py"},
    {"deepspeed", emit_deepspeed, check_deepspeed, "ds_config.json"},
    {"accelerate", emit_accelerate, emit_check_engine, "accelerate.yaml"},
    {"launch", emit_launch, emit_check_engine, "launch.sh"},
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

static int target_index(const char *kind)
{
    int t = 0;
    while (t < NTARGETS && strcmp(kind, targets[t].name)) t++;
    return t;
}

int mp_emit(const char *kind, const mp_model *m, const mp_settings *s, char **out, char *err)
{
    int t = target_index(kind);
    if (t == NTARGETS) return unknown_target(kind, err);
    /* the Trainer, DeepSpeed, accelerate and memtrain step after the backward,
     * and keep saved activations on the device */
    if (s->optimizer_in_backward || s->offload_activations) {
        snprintf(err, MP_ERR_LEN, "--%s has no form in '%s': the Trainer, DeepSpeed and memtrain have none "
                 "(torchtune's %s runs it)", s->optimizer_in_backward ? "optimizer-in-backward" : "offload-activations",
                 kind, s->optimizer_in_backward ? "optimizer_in_bwd" : "enable_activation_offloading");
        return -1;
    }
    if (targets[t].check && targets[t].check(m, s, err)) return -1;
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

/* The bundle's files: the script, the engine's config (if any), the launcher. */
enum { NBUNDLE = 4 };
static int bundle_targets(const mp_settings *s, const char *names[NBUNDLE], char *err)
{
    emit_engine e;
    if (emit_engine_of(s, &e, err)) return -1;
    int n = 0;
    names[n++] = "hf";
    if (e.kind == EMIT_DEEPSPEED) names[n++] = "deepspeed";
    if (e.kind == EMIT_FSDP) names[n++] = "accelerate";
    names[n++] = "launch";
    return n;
}

static char *bundle_readme(const mp_model *m, const mp_settings *s)
{
    emit_engine e;
    char err[MP_ERR_LEN];
    if (emit_engine_of(s, &e, err)) return NULL;
    sbuf b = {0};
    sbuf_put(&b, "Written by memplan. Run: bash launch.sh DATA_FILE\n\n");
    emit_summary_comment(&b, m, s, &e);
    if (b.oom) { free(b.p); return NULL; }
    return b.p;
}

static int write_bundle(const char *dir, const char *const files[], char *const texts[], int n, char *err)
{
    for (int i = 0; i < n; i++) {
        char path[4096];
        size_t dl = strlen(dir);
        if (snprintf(path, sizeof path, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", files[i])
            >= (int)sizeof path) {
            snprintf(err, MP_ERR_LEN, "path too long '%.200s'", dir);
            return -1;
        }
        unsigned mode = strcmp(files[i], "launch.sh") ? 0644 : 0755;
        if (mp_write_file_atomic_mode(path, texts[i], strlen(texts[i]), mode, err)) return -1;
    }
    return 0;
}

int mp_emit_bundle(const char *dir, const mp_model *m, const mp_settings *s, char *err)
{
    const char *kinds[NBUNDLE], *files[NBUNDLE + 1];
    char *texts[NBUNDLE + 1] = {0};
    int n = bundle_targets(s, kinds, err), rc = 0;
    if (n < 0) return -1;
    /* every text first, so a failure writes nothing */
    for (int i = 0; i < n && !rc; i++) {
        files[i] = targets[target_index(kinds[i])].file;
        rc = mp_emit(kinds[i], m, s, &texts[i], err);
    }
    if (!rc) {
        files[n] = "README.txt";
        texts[n] = bundle_readme(m, s);
        if (!texts[n]) rc = -1, snprintf(err, MP_ERR_LEN, "out of memory writing the bundle");
    }
    if (!rc) rc = write_bundle(dir, files, texts, n + 1, err);
    for (int i = 0; i <= n; i++) free(texts[i]);
    return rc;
}
