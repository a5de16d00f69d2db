/*
 * fuzz_units.c — feeds the bytes, split at NUL into values (as argv hands them
 * over: any byte but NUL, newlines included), to every parser of a flag's
 * value: mp_parse_size, mp_parse_count, mp_gpu_lookup's reading of a size
 * (--gpu 24GB; its names are left out: the nearest-name search over every
 * profile is slow and no parser), mp_lora_targets_parse, each mp_*_parse of
 * the settings' names, and the option engine's mp_opt_read for every row of
 * the shared settings and model-source flags.
 * Asserts: a rejection is a one-line error (NUL-terminated, non-empty); an
 * accepted size or count is positive and finite; a setting's name parses back
 * to the same value; accepted LoRA targets are each a known target.
 */
#include "fuzz.h"
#include "common/errors.h"
#include "common/units.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "settings/options.h"

#include <ctype.h>
#include <math.h>

static void sizes(const char *v)
{
    char err[MP_ERR_LEN], how[64];
    double d;
    fuzz_clear_err(err, sizeof err);
    if (mp_parse_size(v, &d, how, err)) fuzz_check_err("mp_parse_size", err, sizeof err);
    else FUZZ_ASSERT(isfinite(d) && d > 0 && memchr(how, 0, sizeof how), "size %g", d);
    fuzz_clear_err(err, sizeof err);
    if (mp_parse_count(v, &d, err)) fuzz_check_err("mp_parse_count", err, sizeof err);
    else FUZZ_ASSERT(isfinite(d) && d > 0, "count %g", d);
    if (isdigit((unsigned char)v[0]) || (v[0] && strchr("-.+", v[0]))) {
        mp_gpu g;
        fuzz_clear_err(err, sizeof err);
        if (mp_gpu_lookup(v, &g, err)) fuzz_check_err("mp_gpu_lookup", err, sizeof err);
        else FUZZ_ASSERT(g.mem_bytes > 0 && isfinite(g.mem_bytes), "GPU of %g bytes", g.mem_bytes);
    }
}

/* Accepted targets: every comma-separated word is a target by itself. */
static void targets(const char *v)
{
    unsigned bits = 0;
    if (mp_lora_targets_parse(v, &bits)) return;
    FUZZ_ASSERT(bits && !(bits & ~(unsigned)(MP_LORA_ALL | MP_LORA_HEAD)), "targets %#x", bits);
    size_t n = strlen(v);
    char *copy = fuzz_strndup((const uint8_t *)v, n);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned one;
        FUZZ_ASSERT(!mp_lora_targets_parse(tok, &one) && (one & ~bits) == 0,
                    "'%.80s' accepted, but its word '%.40s' is no target", v, tok);
    }
    free(copy);
    char name[128];
    unsigned back;
    FUZZ_ASSERT(!mp_lora_targets_parse(mp_lora_targets_name(bits, name, sizeof name), &back) && back == bits,
                "targets %#x do not read back from '%s'", bits, name);
}

/* A setting's name parses back to its value. */
#define ROUND_TRIP(type, fn)                                                                  \
    do {                                                                                      \
        type x;                                                                               \
        if (!mp_##fn##_parse(v, &x)) {                                                        \
            type y;                                                                           \
            FUZZ_ASSERT(mp_##fn##_name(x) && !mp_##fn##_parse(mp_##fn##_name(x), &y) && x == y, \
                        #fn " '%.80s' does not read back", v);                                \
        }                                                                                     \
    } while (0)

static void names(const char *v)
{
    ROUND_TRIP(mp_precision, precision);
    ROUND_TRIP(mp_optimizer, optimizer);
    ROUND_TRIP(mp_ckpt, ckpt);
    ROUND_TRIP(mp_attention, attention);
    ROUND_TRIP(mp_quant, quant);
    ROUND_TRIP(mp_offload, offload);
    ROUND_TRIP(mp_ce, ce);
    ROUND_TRIP(mp_loader, loader);
    ROUND_TRIP(mp_task, task);
    ROUND_TRIP(mp_step_impl, step_impl);
}

/* Every shared flag's row reads the value (or says why not, in one line). */
static void flags(const char *v)
{
    static char err[MP_OPT_ERR_LEN];
    mp_settings s;
    memset(&s, 0, sizeof s);
    for (const mp_opt *o = mp_settings_opts; o->name; o++) {
        unsigned pinned = 0;
        fuzz_clear_err(err, sizeof err);
        if (mp_opt_read(o, v, &s, &pinned, err)) fuzz_check_err(o->name, err, sizeof err);
    }
    mp_model_source src;
    memset(&src, 0, sizeof src);
    for (const mp_opt *o = mp_model_source_opts; o->name; o++) {
        fuzz_clear_err(err, sizeof err);
        if (mp_opt_read(o, v, &src, NULL, err)) fuzz_check_err(o->name, err, sizeof err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *all = fuzz_strndup(data, size);
    for (size_t at = 0; at <= size;) {
        const char *v = all + at;
        size_t n = strlen(v);
        sizes(v);
        targets(v);
        names(v);
        flags(v);
        at += n + 1;
    }
    free(all);
    return 0;
}
