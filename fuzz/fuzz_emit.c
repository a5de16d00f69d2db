/*
 * fuzz_emit.c — every emit target for a model whose name and Hub id are the
 * input's bytes (as a stranger's config.json would give them) and whose plan
 * the input's first bytes choose.
 *
 * Asserts, for each target that accepts the plan (a refusal is a one-line
 * error): the file holds no control byte but newline and is UTF-8; it has as
 * many lines as the same plan written for a plain name (a name can never add a
 * line, so never a statement, key or command); train.py's MODEL literal,
 * decoded by Python's rules, is the Hub id byte for byte; the DeepSpeed JSON
 * parses and equals the plain name's but for its _comment. And the writers of
 * emit/quote.h themselves: the Python and YAML literals and the shell word
 * decode back to the input (by each language's rules, written out here), or
 * fail exactly when the input is not UTF-8.
 */
#include "fuzz.h"
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "emit/emit.h"
#include "emit/quote.h"
#include "common/utf8.h"

#include <jansson.h>

static mp_model base;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[MP_ERR_LEN];
    /* the framework profiles, from the checkout fuzz/run.sh runs in */
    char *dir = realpath("profiles", NULL);
    if (dir) setenv("MEMPLAN_PROFILES", dir, 0);
    free(dir);
    if (mp_profiles_load(err)) {
        fprintf(stderr, "fuzz_emit: %s\n", err);
        exit(1);
    }
    if (mp_model_preset(&base, "llama", err)) abort();
    base.layers = 2, base.hidden = 256, base.heads = 4, base.vocab = 1000, base.max_pos = 512;
    snprintf(base.family, sizeof base.family, "llama");
    if (mp_model_finish(&base, err)) abort();
    return 0;
}

/* A double-quoted literal as Python and YAML read quote.c's escapes: "..." with
 * \" \\ \n \r \t \xNN \uNNNN \UNNNNNNNN, as UTF-8. -1 when it is not one. */
static int decode_literal(const char *s, const char **end, char *out, size_t cap)
{
    size_t o = 0;
    if (*s++ != '"') return -1;
    while (*s && *s != '"') {
        uint32_t cp;
        if (*s != '\\') {
            cp = (unsigned char)*s++;
            FUZZ_ASSERT(cp >= 0x20 && cp < 0x7f, "a raw byte 0x%02x inside a literal", cp);
        } else {
            char k = s[1];
            int digits = k == 'x' ? 2 : k == 'u' ? 4 : k == 'U' ? 8 : 0;
            s += 2;
            if (k == 'n') cp = '\n';
            else if (k == 'r') cp = '\r';
            else if (k == 't') cp = '\t';
            else if (k == '"' || k == '\\') cp = (uint32_t)k;
            else if (digits) {
                char hex[9] = {0};
                memcpy(hex, s, (size_t)digits);
                char *e;
                cp = (uint32_t)strtoul(hex, &e, 16);
                if (e != hex + digits) return -1;
                s += digits;
            } else return -1;
        }
        /* back to UTF-8 */
        unsigned char u[4];
        int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        if (n == 1) u[0] = (unsigned char)cp;
        else {
            for (int i = n - 1; i > 0; i--) u[i] = (unsigned char)(0x80 | (cp & 0x3f)), cp >>= 6;
            u[0] = (unsigned char)((n == 2 ? 0xc0 : n == 3 ? 0xe0 : 0xf0) | cp);
        }
        if (o + (size_t)n >= cap) return -1;
        memcpy(out + o, u, (size_t)n);
        o += (size_t)n;
    }
    if (*s != '"') return -1;
    out[o] = 0;
    *end = s + 1;
    return 0;
}

/* A single-quoted shell word as sh reads it ('\'' closes, quotes, reopens). */
static void check_shell_word(const char *w, const char *want)
{
    size_t n = strlen(w), o = 0;
    char *out = malloc(n + 1);
    FUZZ_ASSERT(out && n >= 2 && w[0] == '\'' && w[n - 1] == '\'', "a shell word not in single quotes");
    for (size_t i = 1; i < n - 1; i++) {
        if (w[i] == '\'') {
            FUZZ_ASSERT(!strncmp(w + i, "'\\''", 4), "a bare quote inside a shell word");
            out[o++] = '\'';
            i += 3;
        } else out[o++] = w[i];
    }
    out[o] = 0;
    FUZZ_ASSERT(!strcmp(out, want), "the shell word reads back otherwise");
    free(out);
}

static void check_writers(const char *s)
{
    const bool utf8 = utf8_valid(s);
    void (*literal[])(sbuf *, const char *, const char *) = {put_python_str, put_yaml_str};
    for (int i = 0; i < 2; i++) {
        sbuf b = {0};
        literal[i](&b, "the name", s);
        char err[MP_ERR_LEN];
        int rc = sbuf_finish(&b, err);
        FUZZ_ASSERT(rc == (utf8 ? 0 : -1), "a literal %s for %s input", rc ? "refused" : "written",
                    utf8 ? "UTF-8" : "non-UTF-8");
        if (rc) {
            fuzz_check_err("literal", err, sizeof err);
            continue;
        }
        char *back = malloc(strlen(s) + 1);
        const char *end;
        FUZZ_ASSERT(back && !decode_literal(b.p, &end, back, strlen(s) + 1) && !*end, "the literal does not decode");
        FUZZ_ASSERT(!strcmp(back, s), "the literal decodes to other bytes");
        free(back), free(b.p);
    }
    sbuf b = {0};
    put_shell_word(&b, s);
    char err[MP_ERR_LEN];
    FUZZ_ASSERT(!sbuf_finish(&b, err), "a shell word failed: %s", err);
    check_shell_word(b.p, s);
    free(b.p);
}

static int lines_of(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++) {
        unsigned char c = (unsigned char)*p;
        FUZZ_ASSERT(c == '\n' || (c >= 0x20 && c != 0x7f), "a raw control byte 0x%02x in an emitted file", c);
        n += c == '\n';
    }
    FUZZ_ASSERT(utf8_valid(text), "an emitted file that is not UTF-8");
    return n;
}

/* The plan the input's first bytes choose, among what the targets write. */
static void settings_of(const uint8_t *d, mp_settings *s, const mp_model *m)
{
    mp_settings_default(s, m);
    s->precision = (mp_precision)(d[0] % MP_NPRECISION);
    s->optimizer = (mp_optimizer)(d[1] % MP_NOPTIMIZER);
    s->checkpointing = (mp_ckpt)(d[2] % MP_NCKPT);
    s->attention = (mp_attention)(d[3] % MP_NATTN);
    s->lora_rank = d[4] & 1 ? 8 : 0;
    s->quant = s->lora_rank && d[4] & 2 ? MP_QUANT_NF4_DQ : MP_QUANT_NONE;
    s->gpus = d[5] & 1 ? 2 : 1;
    s->zero = s->gpus > 1 ? d[5] >> 1 & 3 : 0;
    s->ce = d[6] & 1 ? MP_CE_CHUNKED : MP_CE_FULL;
    s->batch = 1 + d[6] % 4, s->seq = 64;
    s->expandable_segments = d[7] & 1;
    const char *fw[] = {"pytorch", "hf", "deepspeed", "torchtune", "memtrain"};
    char err[MP_ERR_LEN];
    s->framework = mp_framework_find(fw[d[7] >> 1 & 3 ? (d[7] >> 1) % 5 : 0], err);
    /* the objective: d[6]'s high bits, 0 (most seeds) supervised fine-tuning */
    s->method = (mp_method)((d[6] >> 2) % MP_NMETHOD);
    if (mp_method_desc_of(s->method)->generates) {
        s->generations = 2, s->batch = 2;
        s->prompt_len = 32, s->completion_len = 32; /* seq 64, as above */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* names up to what hf_id holds whole (longer ones are refused at the config) */
    if (size < 8 || size > 8 + 1000) return 0;
    char *name = fuzz_strndup(data + 8, size - 8);
    check_writers(name);
    mp_model m = base, plain = base;
    mp_quote(name, m.name, sizeof m.name);
    snprintf(m.hf_id, sizeof m.hf_id, "%s", name);
    snprintf(plain.name, sizeof plain.name, "plain");
    snprintf(plain.hf_id, sizeof plain.hf_id, "org/plain");
    mp_settings s;
    settings_of(data, &s, &m);
    mp_estimate e;
    char eerr[MP_ERR_LEN];
    if (mp_estimate_run(&m, &s, NULL, &e, eerr)) {
        free(name);
        return 0;
    }
    const mp_plan plan = {&m, &s, &e}, plain_plan = {&plain, &s, &e};
    const mp_emit_target *t;
    for (int k = 0; (t = mp_emit_target_at(k)); k++) {
        const char *kind = mp_emit_target_name(t);
        char err[MP_ERR_LEN], perr[MP_ERR_LEN], *text = NULL, *want = NULL;
        fuzz_clear_err(err, sizeof err);
        int rc = mp_emit(t, &plan, &text, err);
        int prc = mp_emit(t, &plain_plan, &want, perr);
        if (rc) fuzz_check_err(kind, err, sizeof err);
        if (rc || prc) {
            free(text), free(want);
            continue;
        }
        FUZZ_ASSERT(lines_of(text) == lines_of(want), "%s: a name changed the number of lines", kind);
        if (!strcmp(kind, "hf") && *name) { /* an empty id is "path/to/model", to fill in */
            const char *at = strstr(text, "\nMODEL = ");
            FUZZ_ASSERT(at, "hf: no MODEL line");
            char *back = malloc(strlen(name) + 1);
            const char *end;
            FUZZ_ASSERT(back && !decode_literal(at + 9, &end, back, strlen(name) + 1), "hf: MODEL is no literal");
            FUZZ_ASSERT(!strcmp(back, name), "hf: MODEL reads back other bytes");
            free(back);
        }
        if (!strcmp(kind, "deepspeed")) {
            json_t *a = json_loads(text, 0, NULL), *b = json_loads(want, 0, NULL);
            FUZZ_ASSERT(a && b, "deepspeed: the JSON does not parse");
            json_object_del(a, "_comment"), json_object_del(b, "_comment");
            FUZZ_ASSERT(json_equal(a, b), "deepspeed: a name changed a key or value");
            json_decref(a), json_decref(b);
        }
        free(text), free(want);
    }
    free(name);
    return 0;
}
