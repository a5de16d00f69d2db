/*
 * fuzz_profiles.c — feeds the bytes as one of the profile tables
 * (models.csv, gpus.csv or frameworks.csv, by the first byte) in a folder that
 * holds the checkout's other two, as MEMPLAN_PROFILES would point at it.
 * Asserts: a rejection is a one-line error and every lookup then fails with
 * it; an accepted table is usable: every model's, GPU's and framework's name
 * and label is one line of UTF-8 (utf8_plain), every row is found by its own
 * name, and a default estimate of the first models of a fuzzed models.csv is
 * finite (or a one-line error; a few, since each replays the allocator).
 * The tables are unloaded after each input (no leak, no state carried over).
 */
#include "fuzz.h"
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "common/utf8.h"

#include <math.h>
#include <unistd.h>

static const char *const tables[] = {"models.csv", "gpus.csv", "frameworks.csv"};
static char folder[4096], paths[3][4200];
static char *original[3];
static size_t original_len[3];

static void remove_folder(void)
{
    for (int i = 0; i < 3; i++) unlink(paths[i]);
    rmdir(folder);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 22);
    *len = buf ? fread(buf, 1, 1 << 22, f) : 0;
    fclose(f);
    return buf;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f)) {
        perror(path);
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(folder, sizeof folder, "%s/memplan-fuzz-profiles-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(folder)) {
        perror(folder);
        exit(1);
    }
    for (int i = 0; i < 3; i++) {
        char src[64];
        snprintf(src, sizeof src, "profiles/%s", tables[i]);
        snprintf(paths[i], sizeof paths[i], "%s/%s", folder, tables[i]);
        if (!(original[i] = slurp(src, &original_len[i]))) {
            fprintf(stderr, "fuzz_profiles: run from the checkout (no %s)\n", src);
            exit(1);
        }
    }
    atexit(remove_folder);
    setenv("MEMPLAN_PROFILES", folder, 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int which = data[0] % 3;
    for (int i = 0; i < 3; i++)
        if (i == which) write_file(paths[i], data + 1, size - 1);
        else write_file(paths[i], original[i], original_len[i]);
    char err[MP_ERR_LEN];
    fuzz_clear_err(err, sizeof err);
    if (mp_profiles_load(err)) {
        fuzz_check_err("mp_profiles_load", err, sizeof err);
        FUZZ_ASSERT(!mp_model_at(0) && !mp_gpu_at(0), "a failed load still lists profiles");
        mp_profiles_unload();
        return 0;
    }
    const mp_model *m;
    for (int i = 0; (m = mp_model_at(i)); i++) {
        FUZZ_ASSERT(utf8_plain(m->name) && utf8_plain(m->family) && utf8_plain(m->source),
                    "model %d: a name, family or source that is not one line of UTF-8", i);
        mp_model found;
        fuzz_clear_err(err, sizeof err);
        if (mp_model_lookup(m->name, &found, err)) fuzz_check_err("mp_model_lookup", err, sizeof err);
        if (which != 0 || i >= 3) continue;
        mp_settings s;
        mp_settings_default(&s, m);
        s.seq = s.seq > 64 ? 64 : s.seq;
        mp_estimate e;
        fuzz_clear_err(err, sizeof err);
        if (mp_estimate_run(m, &s, NULL, &e, err)) fuzz_check_err("mp_estimate_run", err, sizeof err);
        else FUZZ_ASSERT(isfinite(e.device_bytes) && e.device_bytes > 0, "model %d: estimate %g", i, e.device_bytes);
    }
    const mp_gpu *g;
    for (int i = 0; (g = mp_gpu_at(i)); i++) {
        FUZZ_ASSERT(utf8_plain(g->name) && utf8_plain(g->label) && utf8_plain(g->arch),
                    "gpu %d: a name or label that is not one line of UTF-8", i);
        FUZZ_ASSERT(isfinite(g->mem_bytes) && g->mem_bytes > 0, "gpu %d: memory %g", i, g->mem_bytes);
        mp_gpu found;
        fuzz_clear_err(err, sizeof err);
        if (mp_gpu_lookup(g->name, &found, err)) fuzz_check_err("mp_gpu_lookup", err, sizeof err);
    }
    const mp_framework *f;
    for (int i = 0; (f = mp_framework_at(i)); i++)
        FUZZ_ASSERT(utf8_plain(f->name) && utf8_plain(f->source), "framework %d: a name that is not one line", i);
    mp_profiles_unload();
    return 0;
}
