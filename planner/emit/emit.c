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
    bool steps_in_backward;  /* runs the optimizer step in the backward and offloads activations */
} targets[] = {
    {"memtrain", emit_memtrain, check_memtrain, "memtrain.conf", false},
    {"hf", emit_hf, NULL, "train.py", false},
    {"deepspeed", emit_deepspeed, check_deepspeed, "ds_config.json", false},
    {"accelerate", emit_accelerate, emit_check_engine, "accelerate.yaml", false},
    {"launch", emit_launch, emit_check_engine, "launch.sh", false},
    {"torchtune", emit_torchtune, check_torchtune, "torchtune.yaml", true},
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

int mp_emit_check(const char *kind, const mp_model *m, const mp_settings *s, char *err)
{
    int t = target_index(kind);
    if (t == NTARGETS) return unknown_target(kind, err);
    /* the Trainer, DeepSpeed, accelerate and memtrain step after the backward,
     * and keep saved activations on the device */
    if ((s->optimizer_in_backward || s->offload_activations) && !targets[t].steps_in_backward) {
        snprintf(err, MP_ERR_LEN, "--%s has no form in '%s': the Trainer, DeepSpeed and memtrain have none "
                 "(torchtune's %s runs it: --emit torchtune)",
                 s->optimizer_in_backward ? "optimizer-in-backward" : "offload-activations", kind,
                 s->optimizer_in_backward ? "optimizer_in_bwd" : "enable_activation_offloading");
        return -1;
    }
    return targets[t].check ? targets[t].check(m, s, err) : 0;
}

int mp_emit(const char *kind, const mp_model *m, const mp_settings *s, char **out, char *err)
{
    if (mp_emit_check(kind, m, s, err)) return -1;
    sbuf b = {0};
    targets[target_index(kind)].write(&b, m, s);
    if (sbuf_finish(&b, err)) return -1;
    *out = b.p;
    return 0;
}

/* A bundle's files: each written by a target's writer, checked first. */
typedef struct bundle_file {
    const char *file;
    void (*write)(sbuf *, const mp_model *, const mp_settings *);
} bundle_file;
enum { NBUNDLE = 4 };

/* hf: the script, the engine's config (if any), the launcher; torchtune: its
 * config and `tune run`. Returns the count, or -1 with err. */
static int bundle_files(const char *kind, const mp_model *m, const mp_settings *s, bundle_file out[NBUNDLE],
                        char *err)
{
    int n = 0;
    if (!strcmp(kind, "torchtune")) {
        if (mp_emit_check(kind, m, s, err)) return -1;
        out[n++] = (bundle_file){"torchtune.yaml", emit_torchtune};
        out[n++] = (bundle_file){"launch.sh", emit_torchtune_launch};
        return n;
    }
    if (strcmp(kind, "hf")) {
        snprintf(err, MP_ERR_LEN, "a bundle is written by --emit hf or --emit torchtune, not --emit %.64s", kind);
        return -1;
    }
    emit_engine e;
    if (emit_engine_of(s, &e, err)) return -1;
    const char *names[NBUNDLE];
    int k = 0;
    names[k++] = "hf";
    if (e.kind == EMIT_DEEPSPEED) names[k++] = "deepspeed";
    if (e.kind == EMIT_FSDP) names[k++] = "accelerate";
    names[k++] = "launch";
    for (int i = 0; i < k; i++) {
        int t = target_index(names[i]);
        if (mp_emit_check(names[i], m, s, err)) return -1;
        out[n++] = (bundle_file){targets[t].file, targets[t].write};
    }
    return n;
}

static void bundle_readme(sbuf *b, const char *kind, const mp_model *m, const mp_settings *s)
{
    if (!strcmp(kind, "torchtune")) {
        sbuf_put(b, "Written by memplan. Run: bash launch.sh DATA_FILE MODEL_DIR\n"
                    "(MODEL_DIR: the model's Hugging Face checkpoint folder, as tune download writes it)\n\n");
        emit_torchtune_summary(b, m, s);
        return;
    }
    emit_engine e;
    char err[MP_ERR_LEN];
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    sbuf_put(b, "Written by memplan. Run: bash launch.sh DATA_FILE\n\n");
    emit_summary_comment(b, m, s, &e);
}

int mp_emit_bundle(const char *kind, const char *dir, const mp_model *m, const mp_settings *s, char *err)
{
    bundle_file bf[NBUNDLE];
    sbuf texts[NBUNDLE + 1] = {{0}};
    mp_out_file files[NBUNDLE + 1];
    int n = bundle_files(kind, m, s, bf, err), rc = 0;
    if (n < 0) return -1;
    /* every text first: a file that cannot be written writes none */
    for (int i = 0; i <= n && !rc; i++) {
        if (i < n) bf[i].write(&texts[i], m, s);
        else bundle_readme(&texts[i], kind, m, s);
        rc = sbuf_finish(&texts[i], err);
        files[i] = (mp_out_file){i < n ? bf[i].file : "README.txt", texts[i].p, texts[i].n,
                                 i < n && !strcmp(bf[i].file, "launch.sh") ? 0755 : 0644};
    }
    if (!rc) rc = mp_write_files_atomic(dir, files, n + 1, err);
    for (int i = 0; i <= n; i++) free(texts[i].p);
    return rc;
}
