/* profiles.c — models, GPUs and frameworks read from the CSV files in profiles/ (libcsv). */
#include "common/errors.h"
#include "common/units.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "common/csv_table.h"
#include "profiles/framework.h"
#include "common/utf8.h"

#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifndef MEMPLAN_DATADIR
#define MEMPLAN_DATADIR "/usr/local/share/memplan/profiles"
#endif

/* Profile files come from wherever MEMPLAN_PROFILES points: the rows a table
 * may hold (each is a lookup's candidate; today's tables hold under 100). */
#define PROFILE_MAX_ROWS 10000

static const char *field(const csv_table *t, char **row, const char *name)
{
    for (int i = 0; i < t->nhead; i++)
        if (strcmp(t->head[i], name) == 0) return row[i] ? row[i] : "";
    return "";
}
static int64_t inum(const csv_table *t, char **row, const char *name)
{
    return strtoll(field(t, row, name), NULL, 10);
}

static char profiles_dir[PATH_MAX];

static int dir_has_profiles(const char *d)
{
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%.*s/gpus.csv", PATH_MAX - 1, d);
    return access(p, R_OK) == 0;
}

const char *mp_profiles_dir(void)
{
    if (profiles_dir[0]) return profiles_dir;
    const char *env = getenv("MEMPLAN_PROFILES");
    if (env && *env) {
        snprintf(profiles_dir, sizeof profiles_dir, "%s", env);
        return profiles_dir;
    }
    /* Next to the executable: build/bin/x -> ../../profiles, or PREFIX/bin/x -> ../share/... */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        const char *tries[] = {"/../../profiles", "/../share/memplan/profiles", "/../profiles",
                               "/../../../profiles"};
        for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
            char cand[PATH_MAX + 32];
            snprintf(cand, sizeof cand, "%.*s%s", PATH_MAX - 32, exe, tries[i]);
            if (dir_has_profiles(cand)) {
                char *real = realpath(cand, NULL);
                snprintf(profiles_dir, sizeof profiles_dir, "%.*s", PATH_MAX - 1, real ? real : cand);
                free(real);
                return profiles_dir;
            }
        }
    }
    snprintf(profiles_dir, sizeof profiles_dir, "%s", MEMPLAN_DATADIR);
    return profiles_dir;
}

/* ---- loaded tables ---- */

static mp_model *models;
static int nmodels;
static char **model_aliases;
static mp_gpu *gpus;
static int ngpus;
static char **gpu_aliases;
static mp_framework *frameworks;
static int nframeworks;
static int loaded;
static char load_err[MP_ERR_LEN];

static bool flag(const csv_table *t, char **row, const char *name) { return inum(t, row, name) != 0; }

/* A text cell: one line of UTF-8, since names and labels are shown and looked
 * up as they are; it must fit its field whole, but for a citation (`cut`),
 * which is shown cut with "..." (the file keeps it whole). */
static int text_cell_cut(const csv_table *t, char **row, const char *col, char *out, size_t len, bool cut,
                         const char *path, int r, char *err)
{
    const char *v = field(t, row, col);
    char q[64];
    if (strlen(v) >= len && !cut)
        return snprintf(err, MP_ERR_LEN, "profile '%.100s' row %d: %s '%s' is %zu bytes long, at most %zu",
                        path, r + 2, col, mp_quote(v, q, sizeof q), strlen(v), len - 1), -1;
    if (!utf8_plain(v))
        return snprintf(err, MP_ERR_LEN, "profile '%.100s' row %d: %s '%s' holds a control character or is not "
                        "UTF-8", path, r + 2, col, mp_quote(v, q, sizeof q)), -1;
    mp_quote(v, out, len);
    return 0;
}

static int text_cell(const csv_table *t, char **row, const char *col, char *out, size_t len, const char *path,
                     int r, char *err)
{
    return text_cell_cut(t, row, col, out, len, false, path, r, err);
}

/* A number cell: empty reads as 0; else the whole cell a number from lo to hi. */
static int num_cell(const csv_table *t, char **row, const char *col, double lo, double hi, bool integer,
                    double *out, const char *path, int r, char *err)
{
    const char *v = field(t, row, col);
    char *end = (char *)v;
    /* a plain decimal: not strtod's hexadecimal, inf or nan */
    bool decimal = strspn(v, "0123456789.eE+- ") == strlen(v) && !strpbrk(v, "xX");
    double d = v[0] && decimal ? strtod(v, &end) : 0;
    while (isspace((unsigned char)*end)) end++;
    if ((v[0] && (end == v || *end)) || !(d >= lo && d <= hi) || (integer && d != floor(d))) {
        char q[48];
        return snprintf(err, MP_ERR_LEN, "profile '%.100s' row %d: %s '%s' is not %s from %g to %g", path, r + 2,
                        col, mp_quote(v, q, sizeof q), integer ? "a whole number" : "a number", lo, hi), -1;
    }
    *out = d;
    return 0;
}

static int parse_enum(const char *v, const char *a, const char *b, const char *c)
{
    if (strcmp(v, a) == 0) return 0;
    if (strcmp(v, b) == 0) return 1;
    if (c && strcmp(v, c) == 0) return 2;
    return -1;
}

/* The Hugging Face repo id: the hf_id column where the profile has one, else
 * the first alias that names a repo (an "owner/name" with a slash). */
static void hf_repo_id(const char *explicit_id, const char *aliases, char *out, size_t len)
{
    out[0] = 0;
    if (explicit_id && *explicit_id) {
        snprintf(out, len, "%s", explicit_id);
        return;
    }
    for (const char *a = aliases; a && *a;) {
        size_t n = strcspn(a, "|");
        if (memchr(a, '/', n) && n < len) {
            memcpy(out, a, n);
            out[n] = 0;
            return;
        }
        a += n + (a[n] == '|');
    }
}

/* A table's rows, refused beyond PROFILE_MAX_ROWS; `rows` and `aliases` are
 * allocated for them (nrows + 1, zeroed). */
static int table_open(const char *dir, const char *file, csv_table *t, char *path, size_t plen, size_t elt,
                      void **rows, char ***aliases, char *err)
{
    snprintf(path, plen, "%s/%s", dir, file);
    if (csv_table_read(path, "profile", t, err)) return -1;
    if (t->nrows > PROFILE_MAX_ROWS)
        return snprintf(err, MP_ERR_LEN, "profile '%.120s' has %d rows: at most %d are read", path, t->nrows,
                        PROFILE_MAX_ROWS), -1;
    *rows = calloc((size_t)t->nrows + 1, elt);
    if (aliases) *aliases = calloc((size_t)t->nrows + 1, sizeof **aliases);
    if (!*rows || (aliases && !*aliases))
        return snprintf(err, MP_ERR_LEN, "out of memory reading profile '%.120s'", path), -1;
    return 0;
}

/* The model columns that hold counts, each a whole number (shapes are checked
 * further by mp_model_finish). */
#define COUNT_MAX 9007199254740992.0 /* 2^53: exact in a double */

static int model_row(const csv_table *t, char **row, int r, const char *path, mp_model *m, char *err)
{
    static const struct { const char *col; size_t off; } counts[] = {
#define C(name, member) {name, offsetof(mp_model, member)}
        C("layers", layers), C("hidden", hidden), C("heads", heads), C("kv_heads", kv_heads),
        C("head_dim", head_dim), C("ffn", ffn), C("vocab", vocab), C("max_pos", max_pos),
        C("pos_offset", pos_offset), C("experts", experts), C("top_k", top_k),
        C("shared_experts", shared_experts), C("expert_ffn", expert_ffn), C("shared_ffn", shared_ffn),
        C("dense_layers", dense_layers),
#undef C
    };
    memset(m, 0, sizeof *m);
    if (text_cell(t, row, "name", m->name, sizeof m->name, path, r, err) ||
        text_cell(t, row, "family", m->family, sizeof m->family, path, r, err) ||
        text_cell_cut(t, row, "source", m->source, sizeof m->source, true, path, r, err))
        return -1;
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        double d;
        if (num_cell(t, row, counts[i].col, 0, COUNT_MAX, true, &d, path, r, err)) return -1;
        *(int64_t *)((char *)m + counts[i].off) = (int64_t)d;
    }
    double npl;
    if (num_cell(t, row, "norms_per_layer", 0, 4, true, &npl, path, r, err) ||
        num_cell(t, row, "published_params", 0, 1e16, false, &m->published_params, path, r, err))
        return -1;
    m->norms_per_layer = (int)npl;
    int norm = parse_enum(field(t, row, "norm"), "layernorm", "rmsnorm", NULL);
    int mlp = parse_enum(field(t, row, "mlp"), "gelu", "gated", "swiglu");
    int pos = parse_enum(field(t, row, "pos"), "learned", "rope", "alibi");
    if (norm < 0 || mlp < 0 || pos < 0)
        return snprintf(err, MP_ERR_LEN, "profile '%.120s': model '%s' has a bad norm, mlp or pos", path, m->name),
               -1;
    m->norm = (mp_norm)norm, m->mlp = mlp ? MP_MLP_GATED : MP_MLP_GELU, m->pos = (mp_pos)pos;
    m->qkv_bias = flag(t, row, "qkv_bias"), m->out_bias = flag(t, row, "out_bias");
    m->mlp_bias = flag(t, row, "mlp_bias"), m->norm_bias = flag(t, row, "norm_bias");
    m->head_bias = flag(t, row, "head_bias"), m->tied = flag(t, row, "tied");
    m->fused_qkv = flag(t, row, "fused_qkv"), m->embed_norm = flag(t, row, "embed_norm");
    m->final_norm = true;
    m->parallel_residual = flag(t, row, "parallel_residual");
    m->rope_partial = flag(t, row, "rope_partial"), m->gelu_python = flag(t, row, "gelu_python");
    m->attn_softcap = flag(t, row, "attn_softcap"), m->logit_softcap = flag(t, row, "logit_softcap");
    char merr[MP_ERR_LEN];
    if (mp_model_finish(m, merr))
        return snprintf(err, MP_ERR_LEN, "profile '%.80s': model '%.40s': %.100s", path, m->name, merr), -1;
    char hf_id[sizeof m->hf_id], al[1024];
    if (text_cell(t, row, "hf_id", hf_id, sizeof hf_id, path, r, err) ||
        text_cell(t, row, "aliases", al, sizeof al, path, r, err))
        return -1;
    hf_repo_id(hf_id, al, m->hf_id, sizeof m->hf_id);
    return 0;
}

static int load_models(const char *dir, char *err)
{
    char path[PATH_MAX + 16];
    csv_table t;
    int rc = table_open(dir, "models.csv", &t, path, sizeof path, sizeof *models, (void **)&models, &model_aliases,
                        err);
    for (int r = 0; r < t.nrows && !rc; r++) {
        if (!field(&t, t.rows[r], "name")[0]) continue;
        rc = model_row(&t, t.rows[r], r, path, &models[nmodels], err);
        if (!rc && !(model_aliases[nmodels] = strdup(field(&t, t.rows[r], "aliases"))))
            rc = (snprintf(err, MP_ERR_LEN, "out of memory reading profile '%.120s'", path), -1);
        if (!rc) nmodels++;
    }
    csv_table_free(&t);
    return rc;
}

static int gpu_row(const csv_table *t, char **row, int r, const char *path, mp_gpu *g, char *err)
{
    /* figures in the file's units, scaled to bytes and bytes/s */
    static const struct { const char *col; size_t off; double scale; } figures[] = {
#define F(name, member, scale) {name, offsetof(mp_gpu, member), scale}
        F("mem_mib", mem_bytes, 1048576.0), F("tflops_16", tflops_16, 1), F("tflops_32", tflops_32, 1),
        F("bandwidth_gbs", bandwidth, 1e9), F("pcie_gbs", pcie, 1e9), F("nvlink_gbs", nvlink, 1e9),
        F("ib_gbs", ib, 1e9), F("context_mib", context_bytes, 1048576.0),
        F("host_ram_gib", host_ram_bytes, MP_GiB),
#undef F
    };
    memset(g, 0, sizeof *g);
    if (text_cell(t, row, "name", g->name, sizeof g->name, path, r, err) ||
        text_cell(t, row, "label", g->label, sizeof g->label, path, r, err) ||
        text_cell(t, row, "arch", g->arch, sizeof g->arch, path, r, err) ||
        text_cell_cut(t, row, "source", g->source, sizeof g->source, true, path, r, err) ||
        text_cell_cut(t, row, "host_ram_source", g->host_ram_source, sizeof g->host_ram_source, true, path, r, err))
        return -1;
    for (size_t i = 0; i < sizeof figures / sizeof *figures; i++) {
        double d;
        if (num_cell(t, row, figures[i].col, 0, 1e12, false, &d, path, r, err)) return -1;
        *(double *)((char *)g + figures[i].off) = d * figures[i].scale;
    }
    g->bf16 = flag(t, row, "bf16");
    if (g->mem_bytes <= 0)
        return snprintf(err, MP_ERR_LEN, "profile '%.120s': gpu '%.60s' has no mem_mib", path, g->name), -1;
    snprintf(g->how, sizeof g->how, "profile %.40s: %.0f MiB", g->name, g->mem_bytes / 1048576.0);
    char al[1024];
    return text_cell(t, row, "aliases", al, sizeof al, path, r, err);
}

static int load_gpus(const char *dir, char *err)
{
    char path[PATH_MAX + 16];
    csv_table t;
    int rc = table_open(dir, "gpus.csv", &t, path, sizeof path, sizeof *gpus, (void **)&gpus, &gpu_aliases, err);
    for (int r = 0; r < t.nrows && !rc; r++) {
        if (!field(&t, t.rows[r], "name")[0]) continue;
        rc = gpu_row(&t, t.rows[r], r, path, &gpus[ngpus], err);
        if (!rc && !(gpu_aliases[ngpus] = strdup(field(&t, t.rows[r], "aliases"))))
            rc = (snprintf(err, MP_ERR_LEN, "out of memory reading profile '%.120s'", path), -1);
        if (!rc) ngpus++;
    }
    csv_table_free(&t);
    return rc;
}

static mp_fw_kind framework_kind(const char *name)
{
    static const struct { const char *prefix; mp_fw_kind kind; } kinds[] = {
        {"pytorch", MP_FW_PYTORCH}, {"deepspeed", MP_FW_DEEPSPEED},
        {"megatron", MP_FW_MEGATRON}, {"memtrain", MP_FW_MEMTRAIN}};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strncmp(name, kinds[i].prefix, strlen(kinds[i].prefix)) == 0) return kinds[i].kind;
    return MP_FW_OTHER;
}

/* A profile's figures multiply model sizes: a cell that is not a number (strtod
 * read "abc" as 0, "nan" and "1e999" as themselves) or is beyond any memory
 * made every estimate under the profile NaN or infinite. */
#define FW_VALUE_MAX 1e12

static int framework_from_row(const csv_table *t, char **row, int r, mp_framework *f, const char *path, char *err)
{
    memset(f, 0, sizeof *f);
    if (text_cell(t, row, "name", f->name, sizeof f->name, path, r, err) ||
        text_cell_cut(t, row, "source", f->source, sizeof f->source, true, path, r, err))
        return -1;
    f->kind = framework_kind(f->name);
    for (int i = 0; i < fw_ncolumns; i++) {
        const char *v = field(t, row, fw_columns[i].name);
        char *end = (char *)v;
        double d = v[0] ? strtod(v, &end) : fw_columns[i].absent;
        while (isspace((unsigned char)*end)) end++;
        if ((v[0] && (end == v || *end)) || !(fabs(d) <= FW_VALUE_MAX)) {
            char qname[48], qv[48];
            snprintf(err, MP_ERR_LEN, "profile '%.100s': framework '%s': %s '%s' is not a number from -1e12 to 1e12",
                     path, mp_quote(f->name, qname, sizeof qname), fw_columns[i].name, mp_quote(v, qv, sizeof qv));
            return -1;
        }
        fw_set(f, &fw_columns[i], d);
    }
    if (f->optimizer_impl != 0 && f->optimizer_impl != 1 && f->optimizer_impl != 2) {
        char qname[48];
        snprintf(err, MP_ERR_LEN, "profile '%.100s': framework '%s': optimizer_impl %g is not 0 (foreach), 1 (for-loop) "
                 "or 2 (fused)", path, mp_quote(f->name, qname, sizeof qname), f->optimizer_impl);
        return -1;
    }
    return 0;
}

static int load_frameworks(const char *dir, char *err)
{
    char path[PATH_MAX + 16];
    csv_table t;
    if (table_open(dir, "frameworks.csv", &t, path, sizeof path, sizeof *frameworks, (void **)&frameworks, NULL,
                   err)) {
        csv_table_free(&t);
        return -1;
    }
    for (int r = 0; r < t.nrows; r++) {
        char **row = t.rows[r];
        mp_framework *f = &frameworks[nframeworks];
        if (!field(&t, row, "name")[0]) continue;
        if (framework_from_row(&t, row, r, f, path, err)) {
            csv_table_free(&t);
            return -1;
        }
        nframeworks++;
    }
    csv_table_free(&t);
    return 0;
}

static int ensure_loaded(char *err)
{
    if (loaded == 1) return 0;
    if (loaded == -1) {
        snprintf(err, MP_ERR_LEN, "%s", load_err);
        return -1;
    }
    const char *dir = mp_profiles_dir();
    if (load_models(dir, load_err) || load_gpus(dir, load_err) || load_frameworks(dir, load_err)) {
        loaded = -1;
        snprintf(err, MP_ERR_LEN, "%.200s (set MEMPLAN_PROFILES to the profiles folder)", load_err);
        snprintf(load_err, MP_ERR_LEN, "%s", err);
        return -1;
    }
    loaded = 1;
    return 0;
}

int mp_profiles_load(char *err) { return ensure_loaded(err); }

void mp_profiles_unload(void)
{
    for (int i = 0; model_aliases && i < nmodels; i++) free(model_aliases[i]);
    for (int i = 0; gpu_aliases && i < ngpus; i++) free(gpu_aliases[i]);
    free(model_aliases), free(gpu_aliases), free(models), free(gpus), free(frameworks);
    model_aliases = gpu_aliases = NULL, models = NULL, gpus = NULL, frameworks = NULL;
    nmodels = ngpus = nframeworks = 0;
    loaded = 0;
    profiles_dir[0] = 0;
}

const mp_model *mp_model_at(int i)
{
    char err[MP_ERR_LEN];
    return ensure_loaded(err) == 0 && i >= 0 && i < nmodels ? &models[i] : NULL;
}
const mp_gpu *mp_gpu_at(int i)
{
    char err[MP_ERR_LEN];
    return ensure_loaded(err) == 0 && i >= 0 && i < ngpus ? &gpus[i] : NULL;
}
const mp_framework *mp_framework_at(int i)
{
    char err[MP_ERR_LEN];
    return ensure_loaded(err) == 0 && i >= 0 && i < nframeworks ? &frameworks[i] : NULL;
}

/* Case-insensitive name match, ignoring '-', '_', '.' and spaces:
 * "Llama-2-7B" == "llama2_7b". */
static int loose_eq(const char *a, const char *b)
{
    for (;;) {
        while (*a && strchr("-_ .", *a)) a++;
        while (*b && strchr("-_ .", *b)) b++;
        if (!*a || !*b) return !*a && !*b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
        a++, b++;
    }
}

static int alias_match(const char *aliases, const char *name)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", aliases ? aliases : "");
    for (char *save = NULL, *tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
        if (loose_eq(tok, name)) return 1;
    return 0;
}

static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + c;
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

/* "did you mean 'a', 'b' or 'c'?" from the names nearest to `name`. */
static void suggest(const char *name, const char *(*at)(int), int n, char *out, size_t len)
{
    int best[3] = {-1, -1, -1}, bd[3] = {1 << 20, 1 << 20, 1 << 20};
    for (int i = 0; i < n; i++) {
        const char *cand = at(i);
        int d = edit_distance(name, cand);
        /* a shared prefix counts as closeness: "llama" finds "llama-2-7b" */
        if (strncasecmp(name, cand, strlen(name)) == 0) d = d / 4;
        for (int k = 0; k < 3; k++)
            if (d < bd[k]) {
                for (int j = 2; j > k; j--) bd[j] = bd[j - 1], best[j] = best[j - 1];
                bd[k] = d, best[k] = i;
                break;
            }
    }
    size_t o = snprintf(out, len, "; nearest:");
    for (int k = 0; k < 3 && best[k] >= 0 && o < len; k++)
        o += snprintf(out + o, len - o, "%s '%s'", k ? "," : "", at(best[k]));
}

static const char *model_name_at(int i) { return models[i].name; }
static const char *gpu_name_at(int i) { return gpus[i].name; }
static const char *framework_name_at(int i) { return frameworks[i].name; }

static int model_index(const char *name)
{
    for (int i = 0; i < nmodels; i++)
        if (loose_eq(models[i].name, name) || alias_match(model_aliases[i], name)) return i;
    return -1;
}

/* An instruct or chat variant has its base's shapes (fine-tuning keeps the
 * architecture): its name less the words that name the tuning or the upload
 * ("instruct", "it", "chat", "hf", "base") is the base's name less them, or
 * that of one of its Hub ids, the org apart: "llama-3.1-8b-instruct",
 * "gemma-2-9b-it", "meta-llama/Meta-Llama-3-8B-Instruct",
 * "mistralai/Mistral-7B-Instruct-v0.3" (mistral-7b-v0.3), "Llama-2-7b-chat-hf".
 * The words are compared loosely (case, '-', '_', '.' and blanks apart).
 * A checkpoint stored otherwise ("-GPTQ", "-bnb-4bit", "-128k") keeps its word,
 * and so matches nothing. */
static void variant_key(const char *name, char *key, size_t len)
{
    static const char *const tuning[] = {"instruct", "it", "chat", "hf", "base"};
    const char *slash = strrchr(name, '/');
    const char *s = slash ? slash + 1 : name;
    size_t o = 0;
    key[0] = 0;
    while (*s) {
        while (*s && strchr("-_ .", *s)) s++;
        size_t n = strcspn(s, "-_ .");
        bool drop = false;
        for (size_t i = 0; i < sizeof tuning / sizeof *tuning && !drop; i++)
            drop = strlen(tuning[i]) == n && !strncasecmp(s, tuning[i], n);
        for (size_t i = 0; i < n && !drop && o + 1 < len; i++) key[o++] = (char)tolower((unsigned char)s[i]);
        key[o] = 0;
        s += n;
    }
}

/* The one profile `name` is a variant of: its index; -1 none; -2 several (err lists them). */
static int variant_index(const char *name, char *err)
{
    char want[MP_NAME_LEN * 2], key[MP_NAME_LEN * 2], buf[512];
    variant_key(name, want, sizeof want);
    if (!want[0] || strlen(name) >= sizeof want) return -1;
    int found[4], n = 0;
    for (int i = 0; i < nmodels; i++) {
        variant_key(models[i].name, key, sizeof key);
        bool same = !strcmp(key, want);
        snprintf(buf, sizeof buf, "%s", model_aliases[i] ? model_aliases[i] : "");
        for (char *save = NULL, *tok = strtok_r(buf, "|", &save); tok && !same; tok = strtok_r(NULL, "|", &save)) {
            variant_key(tok, key, sizeof key);
            same = !strcmp(key, want);
        }
        if (same && n < 4) found[n++] = i;
    }
    if (n <= 1) return n ? found[0] : -1;
    char quoted[96];
    size_t o = (size_t)snprintf(err, MP_ERR_LEN, "model '%s' may be a variant of %d profiles:",
                                mp_quote(name, quoted, sizeof quoted), n);
    for (int k = 0; k < n && o < MP_ERR_LEN; k++)
        o += (size_t)snprintf(err + o, MP_ERR_LEN - o, "%s %s", k ? "," : "", models[found[k]].name);
    if (o < MP_ERR_LEN) snprintf(err + o, MP_ERR_LEN - o, ": give one of them");
    return -2;
}

bool mp_model_is_variant(const char *name)
{
    char err[MP_ERR_LEN];
    return !ensure_loaded(err) && model_index(name) < 0 && variant_index(name, err) >= 0;
}

int mp_model_lookup(const char *name, mp_model *m, char *err)
{
    if (ensure_loaded(err)) return -1;
    int i = model_index(name);
    if (i < 0 && (i = variant_index(name, err)) >= 0) {
        *m = models[i];
        /* the variant's own Hub id is what a script loads */
        if (strchr(name, '/') && strlen(name) < sizeof m->hf_id && utf8_plain(name))
            snprintf(m->hf_id, sizeof m->hf_id, "%s", name);
        return 0;
    }
    if (i == -2) return -1;
    if (i >= 0) {
        *m = models[i];
        return 0;
    }
    char near[160], quoted[96];
    suggest(name, model_name_at, nmodels, near, sizeof near);
    snprintf(err, MP_ERR_LEN, "unknown model '%s'%s (memplan list models)", mp_quote(name, quoted, sizeof quoted), near);
    return -1;
}

/* ---------- the names people give a GPU ----------
 * nvidia-smi's ("NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-80GB", "Tesla T4"),
 * a bare model number ("4090"), a name with its memory ("t4-16g"): a profile is
 * the one whose words (name, aliases, label) hold every word given, with the
 * memory given if any; several are listed, never guessed between. */
enum { GPU_WORDS = 24, GPU_WORD_LEN = 24 };
typedef struct gpu_words {
    char w[GPU_WORDS][GPU_WORD_LEN];
    int n;
    double mem_gb;            /* a memory word's figure (80gb, 16g, 24gib), 0: none */
} gpu_words;

static void add_word(gpu_words *ws, const char *w, size_t len)
{
    static const char *const vendor[] = {"nvidia", "geforce", "tesla", "amd", "gpu", "graphics"};
    if (!len || len >= GPU_WORD_LEN || ws->n == GPU_WORDS) return;
    for (size_t i = 0; i < sizeof vendor / sizeof *vendor; i++)
        if (strlen(vendor[i]) == len && !strncmp(w, vendor[i], len)) return;
    memcpy(ws->w[ws->n], w, len);
    ws->w[ws->n++][len] = 0;
}

/* Lower-case alphanumeric runs; a memory word apart; neighbours also joined
 * ("rtx 4090" -> rtx, 4090, rtx4090: the profiles spell both). */
static void words_of(const char *s, gpu_words *ws, bool keep_memory)
{
    char run[GPU_WORD_LEN * 2], prev[GPU_WORD_LEN] = "";
    while (*s) {
        size_t n = 0;
        while (*s && !isalnum((unsigned char)*s)) s++;
        while (*s && isalnum((unsigned char)*s) && n + 1 < sizeof run) run[n++] = (char)tolower((unsigned char)*s++);
        while (*s && isalnum((unsigned char)*s)) s++;
        run[n] = 0;
        if (!n) break;
        char *end;
        double gb = strtod(run, &end);
        if (end != run && isdigit((unsigned char)run[0]) &&
            (!strcmp(end, "g") || !strcmp(end, "gb") || !strcmp(end, "gib"))) {
            if (keep_memory) ws->mem_gb = gb;
            prev[0] = 0;
            continue;
        }
        add_word(ws, run, n);
        if (prev[0]) {
            char joined[GPU_WORD_LEN * 2];
            int j = snprintf(joined, sizeof joined, "%s%s", prev, run);
            if (j > 0) add_word(ws, joined, (size_t)j);
        }
        if (n < sizeof prev) memcpy(prev, run, n + 1);
        else prev[0] = 0;
    }
}

static bool has_word(const gpu_words *ws, const char *w)
{
    size_t len = strlen(w);
    for (int i = 0; i < ws->n; i++) {
        if (!strcmp(ws->w[i], w)) return true;
        /* a word that ends in a letter names its family: sxm for sxm5 (never a10 for a100) */
        if (isalpha((unsigned char)w[len - 1]) && !strncmp(ws->w[i], w, len)) return true;
    }
    return false;
}

static bool gpu_matches(const mp_gpu *g, const char *aliases, const gpu_words *q)
{
    gpu_words ws = {0};
    words_of(g->name, &ws, false);
    words_of(g->label, &ws, false);
    char al[512];
    snprintf(al, sizeof al, "%s", aliases ? aliases : "");
    words_of(al, &ws, false);
    for (int i = 0; i < q->n; i++)
        if (!has_word(&ws, q->w[i])) return false;
    if (q->mem_gb > 0) {
        double gb = g->mem_bytes / 1e9, gib = g->mem_bytes / MP_GiB;
        if (fabs(gb - q->mem_gb) > 0.1 * q->mem_gb && fabs(gib - q->mem_gb) > 0.1 * q->mem_gb) return false;
    }
    return true;
}

/* 1: *g found; 0: no profile matches; -1: several do (err lists them). */
static int gpu_by_words(const char *name, mp_gpu *g, char *err)
{
    gpu_words q = {0};
    words_of(name, &q, true);
    if (!q.n) return 0;
    int found[8], n = 0;
    for (int i = 0; i < ngpus; i++)
        if (gpu_matches(&gpus[i], gpu_aliases[i], &q)) {
            if (n < 8) found[n] = i;
            n++;
        }
    if (n == 1) {
        *g = gpus[found[0]];
        return 1;
    }
    if (n == 0) return 0;
    char quoted[64];
    size_t o = (size_t)snprintf(err, MP_ERR_LEN, "GPU '%s' names %d profiles:", mp_quote(name, quoted, sizeof quoted),
                                n);
    for (int k = 0; k < n && k < 8 && o < MP_ERR_LEN; k++)
        o += (size_t)snprintf(err + o, MP_ERR_LEN - o, "%s %s (%.0f GiB)", k ? "," : "", gpus[found[k]].name,
                              gpus[found[k]].mem_bytes / MP_GiB);
    if (o < MP_ERR_LEN) snprintf(err + o, MP_ERR_LEN - o, ": give one of them");
    return -1;
}

/* "; nearest: 'a', 'b'" for a name no profile has every word of: the profiles that
 * have the most of them ("NVIDIA H100 NVL": both H100s); "" when none has any. */
static void gpu_near_words(const char *name, char *out, size_t len)
{
    gpu_words q = {0}, ws;
    words_of(name, &q, false);
    int best = 0, count[64] = {0};
    for (int i = 0; i < ngpus && i < 64; i++) {
        ws = (gpu_words){0};
        words_of(gpus[i].name, &ws, false);
        words_of(gpus[i].label, &ws, false);
        char al[512];
        snprintf(al, sizeof al, "%s", gpu_aliases[i] ? gpu_aliases[i] : "");
        words_of(al, &ws, false);
        for (int k = 0; k < q.n; k++) count[i] += has_word(&ws, q.w[k]);
        if (count[i] > best) best = count[i];
    }
    size_t o = 0;
    out[0] = 0;
    for (int i = 0, shown = 0; best && i < ngpus && i < 64 && shown < 4 && o < len; i++)
        if (count[i] == best)
            o += (size_t)snprintf(out + o, len - o, "%s '%s'", shown++ ? "," : "; nearest:", gpus[i].name);
}

int mp_gpu_lookup(const char *name, mp_gpu *g, char *err)
{
    if (!name || !*name) {
        snprintf(err, MP_ERR_LEN, "empty GPU name or size");
        return -1;
    }
    if (isdigit((unsigned char)name[0]) || name[0] == '-' || name[0] == '.' || name[0] == '+') {
        /* A GPU's memory is never a count of bytes: "24" is a forgotten unit, unless
         * it is a model number ("4090") */
        size_t len = strlen(name);
        if (strspn(name, "0123456789") == len && !ensure_loaded(err)) {
            int by_words = gpu_by_words(name, g, err);
            if (by_words) return by_words > 0 ? 0 : -1;
        }
        if (isdigit((unsigned char)name[len - 1]) || name[len - 1] == '.') {
            char quoted[36];
            mp_quote(name, quoted, sizeof quoted);
            snprintf(err, MP_ERR_LEN, "GPU size '%s' has no unit: say %sGB (10^9 bytes) or %sGiB (2^30 bytes)",
                     quoted, quoted, quoted);
            return -1;
        }
        memset(g, 0, sizeof *g);
        if (mp_parse_size(name, &g->mem_bytes, g->how, err)) return -1;
        snprintf(g->name, sizeof g->name, "%s", name);
        snprintf(g->label, sizeof g->label, "a GPU with %s", name);
        g->bf16 = true;
        /* A size has no speed profile: a stated generic card (the RTX 3090's
         * figures, an Ampere PCIe part) so plans can still be ranked. */
        g->tflops_16 = 71, g->tflops_32 = 35.6, g->bandwidth = 936e9, g->pcie = 32e9;
        snprintf(g->arch, sizeof g->arch, "ampere");
        g->generic_speed = true;
        snprintf(g->source, sizeof g->source,
                 "size given on the command line; speed: generic Ampere PCIe card (RTX 3090 figures), not this GPU's");
        /* and the generic card's machine: a desktop (gpus.csv's rtx3090 row) */
        g->host_ram_bytes = 64 * MP_GiB;
        snprintf(g->host_ram_source, sizeof g->host_ram_source, "a desktop, as for the generic card (RTX 3090)");
        return 0;
    }
    if (ensure_loaded(err)) return -1;
    for (int i = 0; i < ngpus; i++)
        if (loose_eq(gpus[i].name, name) || alias_match(gpu_aliases[i], name) || loose_eq(gpus[i].label, name)) {
            *g = gpus[i];
            return 0;
        }
    int by_words = gpu_by_words(name, g, err);
    if (by_words) return by_words > 0 ? 0 : -1;
    char near[160], quoted[64];
    gpu_near_words(name, near, sizeof near);
    if (!near[0]) suggest(name, gpu_name_at, ngpus, near, sizeof near);
    snprintf(err, MP_ERR_LEN, "unknown GPU '%s'%s (memplan list gpus, or a size such as 24GB)",
             mp_quote(name, quoted, sizeof quoted), near);
    return -1;
}

int mp_framework_lookup(const char *name, mp_framework *f, char *err)
{
    if (ensure_loaded(err)) return -1;
    for (int i = 0; i < nframeworks; i++)
        if (loose_eq(frameworks[i].name, name)) {
            *f = frameworks[i];
            return 0;
        }
    /* a path: a profile written by memplan calibrate */
    if (strchr(name, '/') || strstr(name, ".csv")) return mp_framework_load_file(name, f, err);
    char near[160], quoted[64];
    suggest(name, framework_name_at, nframeworks, near, sizeof near);
    snprintf(err, MP_ERR_LEN, "unknown framework '%s'%s", mp_quote(name, quoted, sizeof quoted), near);
    return -1;
}

const mp_framework *mp_framework_find(const char *name, char *err)
{
    if (ensure_loaded(err)) return NULL;
    for (int i = 0; i < nframeworks; i++)
        if (loose_eq(frameworks[i].name, name)) return &frameworks[i];
    /* a calibrated profile file: kept for the life of the process */
    static mp_framework loaded_files[8];
    static int nloaded;
    mp_framework f;
    if (mp_framework_lookup(name, &f, err)) return NULL;
    if (nloaded == 8) {
        snprintf(err, MP_ERR_LEN, "too many framework profile files");
        return NULL;
    }
    loaded_files[nloaded] = f;
    return &loaded_files[nloaded++];
}

int mp_framework_load_file(const char *path, mp_framework *f, char *err)
{
    csv_table t;
    if (csv_table_read(path, "profile", &t, err)) {
        csv_table_free(&t);
        return -1;
    }
    if (t.nrows < 1 || !field(&t, t.rows[0], "name")[0]) {
        snprintf(err, MP_ERR_LEN, "framework profile '%s' has no rows", path);
        csv_table_free(&t);
        return -1;
    }
    int rc = framework_from_row(&t, t.rows[0], 0, f, path, err);
    csv_table_free(&t);
    return rc;
}
