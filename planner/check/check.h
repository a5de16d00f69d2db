/* check.h — memplan check: the training configs people already have (axolotl,
 * LLaMA-Factory, torchtune, transformers' Trainer and TRL, DeepSpeed,
 * accelerate, memtrain) read by content, every key that changes memory mapped
 * to memplan's settings with the key it came from, `auto` resolved as each
 * tool resolves it, the stack's profile chosen; then the estimate, the
 * verdict, the largest micro-batch and sequence that fit, and the smallest
 * change that fits, in the file's own words. */
#ifndef MP_CHECK_H
#define MP_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"

enum { CK_MAX_FILES = 8, CK_MAX_ORIGINS = 48, CK_MAX_UNKNOWN = 64, CK_MAX_FIXES = 8, CK_MAX_NOTES = 4 };

/* Where one setting came from. */
typedef struct ck_origin {
    char setting[24];         /* memplan's name: "precision", "batch", "model", "gpus"... */
    char value[96];           /* its value, as memplan names it */
    char key[96];             /* the key it came from ("micro_batch_size"), or "(default)" */
    char file[128];           /* the file that holds the key (its name) */
    char how[160];            /* how it was resolved, when not as written ("bf16: auto: ...") */
} ck_origin;

/* One change that makes the run fit, as the file would say it. */
typedef struct ck_fix {
    char change[160];         /* "micro_batch_size: 1", "gradient_checkpointing: true" */
    char setting[24];         /* the setting it changes */
    double device_bytes;      /* the device memory then */
} ck_fix;

typedef struct mp_check_opts {
    const char *model;        /* --model: the model when the files name none, or overriding them */
    const char *hf_config;    /* --hf-config likewise */
    const char *framework;    /* --framework: the stack's profile, overriding the format's */
    /* settings given on the command line (--batch 4, --gpus 8): what the files
     * leave to a launcher or say "auto" for, or overriding them; each named
     * row of mp_settings_opts is copied from *set */
    const mp_settings *set;
    const char *const *set_names;
    int nset;
    const mp_gpu *gpu;        /* the budget; NULL: settings and estimate only */
    double headroom;          /* fraction of the GPU kept free */
} mp_check_opts;

typedef struct mp_check {
    int nfiles;
    char format[CK_MAX_FILES][24];   /* what each file was read as: "axolotl", "deepspeed"... */
    char file[CK_MAX_FILES][128];
    mp_model model;
    mp_model reward_model;           /* a reward model a file names (s.reward_model points here), else unused */
    char model_how[200];
    mp_settings s;                   /* the run, as the files (and the defaults) say */
    ck_origin origin[CK_MAX_ORIGINS];
    int norigins;
    char unknown[CK_MAX_UNKNOWN][112];/* keys read but not understood ("file: key") */
    int nunknown;
    char note[CK_MAX_NOTES][200];    /* what the reader should know about the run as stated */
    int nnotes;
    /* the verdict (with a GPU) */
    mp_estimate e;
    bool fits;
    int64_t max_batch, max_seq;      /* the largest that fit with the rest as given (0: none) */
    ck_fix fix[CK_MAX_FIXES];        /* the smallest changes that fit, best first */
    int nfixes;
} mp_check;

/* Read the files (several when one names another, or an accelerate YAML beside
 * a trainer's), estimate, judge. 0 with *c filled, or -1 with err: a file that
 * cannot be read, a format not recognised, a key that changes memory in a way
 * memplan does not model (named), no model. */
int mp_check_run(const char *const *paths, int n, const mp_check_opts *o, mp_check *c, char *err);

#endif
