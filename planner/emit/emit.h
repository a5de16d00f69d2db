/* emit.h — runnable configs for a plan: the emit targets (one row each, in
 * emit.c's table; one file each beside it) and what they write, alone (-o
 * FILE, or standard output) and as a bundle (-o DIR/). An emitter receives
 * the plan with the estimate the user was shown and states its figures: it
 * never estimates again. */
#ifndef MP_EMIT_H
#define MP_EMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "estimate/estimate.h"
#include "model/model.h"
#include "settings/settings.h"

/* A plan as an emitter receives it. */
typedef struct mp_plan {
    const mp_model *m;
    const mp_settings *s;
    const mp_estimate *e;     /* the plan's estimate, made with its GPU: the figures every file states */
} mp_plan;

/* A target: a row of emit.c's table. */
typedef struct mp_emit_target mp_emit_target;

/* The target named `name`, or NULL with err listing the names there are. */
const mp_emit_target *mp_emit_target_named(const char *name, char *err);
/* The i-th target, NULL past the end. */
const mp_emit_target *mp_emit_target_at(int i);
const char *mp_emit_target_name(const mp_emit_target *t);
/* "memtrain, hf, deepspeed, ..." into buf. */
const char *mp_emit_target_list(char *buf, size_t len);
/* The framework profile the target's stack is estimated with when the user
 * names none; NULL: the default profile. */
const char *mp_emit_target_framework(const mp_emit_target *t);
/* Whether -o DIR/ writes a bundle (else -o names one file). */
bool mp_emit_target_bundles(const mp_emit_target *t);
/* The precisions and optimizers the target implements, as bits (1 << value) for
 * mp_search_opts' only_precisions and only_optimizers; 0: every value. */
unsigned mp_emit_target_precisions(const mp_emit_target *t);
unsigned mp_emit_target_optimizers(const mp_emit_target *t);

/* 0 when the target writes the plan as estimated, else -1 with the reason
 * (what mp_emit would refuse). */
int mp_emit_check(const mp_emit_target *t, const mp_model *m, const mp_settings *s, char *err);
/* The same as mp_search_opts.accept takes it, the target as ctx. */
int mp_emit_accept(const void *target, const mp_model *m, mp_settings *s, char *why);
/* The target's file for the plan (malloc'd text). -1 with err (nothing made)
 * when the target cannot run the plan or a value in it has no form in the
 * file's language. */
int mp_emit(const mp_emit_target *t, const mp_plan *p, char **out, char *err);
/* The same into `path` (mp_write_file_atomic_mode, with the target's mode). */
int mp_emit_file(const mp_emit_target *t, const mp_plan *p, const char *path, char *err);
/* The bundle into the existing directory `dir`, all files or none
 * (mp_write_files_atomic): hf's train.py, its engine's config, launch.sh and
 * README.txt; torchtune's torchtune.yaml, launch.sh and README.txt. */
int mp_emit_bundle(const mp_emit_target *t, const char *dir, const mp_plan *p, char *err);

#endif
