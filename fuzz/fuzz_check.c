/*
 * fuzz_check.c — feeds the bytes to memplan check as a stranger's training
 * config: first to the tree reader (ck_parse, YAML or JSON by the first byte),
 * then, written to a file, to mp_check_run with a small model and a budget,
 * as `memplan check FILE --model gpt2 --gpu 24GB` would (the first byte, when
 * it is a digit, picks other flags: no model, no budget, several GPUs).
 * Asserts: a rejection is one line; an accepted tree keeps its bounds (depth,
 * nodes, scalars NUL-terminated); an accepted check has a finite estimate, its
 * settings valid, and every origin's text one line of printable UTF-8 (they are
 * printed to a terminal and written to JSON and CSV as they are).
 */
#include "fuzz.h"
#include "check/check.h"
#include "check/doc.h"
#include "common/errors.h"
#include "profiles/profiles.h"

#include <math.h>
#include <unistd.h>

static char folder[4096], file[4200];
static mp_gpu gpu;

static void remove_folder(void)
{
    unlink(file);
    rmdir(folder);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(folder, sizeof folder, "%s/memplan-fuzz-check-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(folder)) {
        perror(folder);
        exit(1);
    }
    snprintf(file, sizeof file, "%s/config.yaml", folder);
    atexit(remove_folder);
    char err[MP_ERR_LEN];
    if (mp_gpu_lookup("24GB", &gpu, err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return 0;
}

/* The tree's bounds: depth, count, scalars as text. */
static size_t walk(const ck_node *n, int depth)
{
    size_t count = 0;
    for (; n; n = n->next) {
        FUZZ_ASSERT(depth <= CK_MAX_DEPTH + 1, "depth %d", depth);
        FUZZ_ASSERT(n->kind == CK_SCALAR ? n->text != NULL : n->text == NULL, "scalar text on kind %d", n->kind);
        if (n->text) (void)strlen(n->text);
        if (n->key) (void)strlen(n->key);
        count += 1 + walk(n->child, depth + 1);
    }
    return count;
}

/* What check prints: one line each, no control bytes. */
static void one_line(const char *what, const char *s, size_t cap)
{
    const char *end = memchr(s, 0, cap);
    FUZZ_ASSERT(end, "%s not NUL-terminated", what);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        FUZZ_ASSERT(*p >= 0x20 && *p != 0x7f, "%s holds control byte 0x%02x: %s", what, *p, s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > CK_MAX_BYTES + 16) return 0;
    char err[MP_ERR_LEN];
    ck_node *root = NULL;
    fuzz_clear_err(err, sizeof err);
    if (ck_parse((const char *)data, size, "fuzz", &root, err)) {
        fuzz_check_err("ck_parse", err, sizeof err);
        return 0;
    }
    FUZZ_ASSERT(walk(root, 0) <= CK_MAX_NODES + 1, "too many nodes");
    ck_free(root);

    FILE *f = fopen(file, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) {
        perror(file);
        abort();
    }
    char pick = size ? (char)data[0] : 0;
    mp_settings set;
    mp_settings_default(&set, NULL);
    set.gpus = 4;
    static const char *const gpus_name[] = {"gpus"};
    mp_check_opts o = {.model = pick == '1' ? NULL : "gpt2", .gpu = pick == '2' ? NULL : &gpu, .headroom = 0.1,
                       .set = &set, .set_names = gpus_name, .nset = pick == '3'};
    mp_check *c = malloc(sizeof *c);
    if (!c) abort();
    const char *paths[] = {file};
    fuzz_clear_err(err, sizeof err);
    if (mp_check_run(paths, 1, &o, c, err)) {
        fuzz_check_err("mp_check_run", err, sizeof err);
        free(c);
        return 0;
    }
    FUZZ_ASSERT(isfinite(c->e.device_bytes) && c->e.device_bytes > 0, "device bytes %g", c->e.device_bytes);
    FUZZ_ASSERT(c->norigins >= 0 && c->norigins <= CK_MAX_ORIGINS, "%d origins", c->norigins);
    FUZZ_ASSERT(c->nunknown >= 0 && c->nunknown <= CK_MAX_UNKNOWN, "%d unknown keys", c->nunknown);
    FUZZ_ASSERT(c->nfixes >= 0 && c->nfixes <= CK_MAX_FIXES, "%d fixes", c->nfixes);
    for (int i = 0; i < c->norigins; i++) {
        const ck_origin *r = &c->origin[i];
        one_line("setting", r->setting, sizeof r->setting);
        one_line("value", r->value, sizeof r->value);
        one_line("key", r->key, sizeof r->key);
        one_line("file", r->file, sizeof r->file);
        one_line("how", r->how, sizeof r->how);
    }
    for (int i = 0; i < c->nunknown; i++) one_line("unknown key", c->unknown[i], sizeof c->unknown[0]);
    for (int i = 0; i < c->nfixes; i++) {
        one_line("fix", c->fix[i].change, sizeof c->fix[i].change);
        FUZZ_ASSERT(isfinite(c->fix[i].device_bytes), "fix bytes");
    }
    for (int i = 0; i < c->nnotes; i++) one_line("note", c->note[i], sizeof c->note[0]);
    one_line("model", c->model_how, sizeof c->model_how);
    FUZZ_ASSERT(!mp_settings_runnable(&c->model, &c->s, err), "settings not runnable: %s", err);
    free(c);
    return 0;
}
