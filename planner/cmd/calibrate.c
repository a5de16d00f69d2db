/* calibrate.c — memplan calibrate: fit a framework profile's constants to measured runs.
 *
 * Each row of the measurements CSV (tests/validation/harness.py's format) is turned into
 * the argv of `memplan estimate` and parsed by cli_parse, so every value is checked the
 * way the command line checks it. The model states at the peak are exact counts, so
 *     allocated = model states + act_scale x activations + fixed
 * leaves two unknowns, fitted by least squares (GSL) on relative errors; the reserved and
 * device peaks, when measured, give frag and the context. The result is a one-row
 * frameworks.csv that --framework FILE loads. */
#include "cli.h"
#include "common/csv_table.h"
#include "profiles/framework.h"
#include "common/errors.h"
#include "common/files.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <csv.h>
#include <errno.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MiB 1048576.0
#define MIN_RUNS 3
#define MAX_ITER 10

/* ---------------------------------------------------------------- reading the CSV */

/* Read the whole file (planner/common/csv_table.c). 0, or EXIT_USAGE after the error. */
static int read_measurements(const char *path, csv_table *t)
{
    char err[MP_ERR_LEN];
    return csv_table_read(path, "measurements", t, err) ? cli_error("%s", err) : 0;
}

static const char *cell(const csv_table *t, int r, int c)
{
    return c >= 0 && c < t->nfields[r] ? t->rows[r][c] : "";
}

/* A whole, finite number. */
static bool parse_number(const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(d)) return false;
    *out = d;
    return true;
}

/* ---------------------------------------------------------------- one run per row */

typedef struct run {
    const char *name;
    int row;                  /* 1: the first row after the header */
    mp_model model;
    mp_settings s;
    double alloc, reserved, device;
    bool has_reserved, has_device;
    double acts, states;      /* activations (act_scale 1) and model states at the peak */
    mp_estimate base, fit;    /* BASE as it is, and the fitted profile */
} run;

/* The measurement columns that become estimate options. */
static const struct { const char *col, *flag; bool numeric; } row_opts[] = {
    {"model", "--model", false},     {"family", "--family", false},  {"layers", "--layers", true},
    {"hidden", "--hidden", true},    {"heads", "--heads", true},     {"kv_heads", "--kv-heads", true},
    {"ffn", "--ffn", true},          {"vocab", "--vocab", true},     {"max_pos", "--max-pos", true},
    {"batch", "--batch", true},      {"seq", "--seq", true},         {"accum", "--accum", true},
    {"precision", "--precision", false}, {"optimizer", "--optimizer", false},
    {"optimizer_impl", "--optimizer-impl", false},
    {"checkpointing", "--checkpointing", false}, {"attention", "--attention", false},
    {"lora_rank", "--lora-rank", true}, {"lora_targets", "--lora-targets", false},
    {"quant", "--quant", false},     {"ce", "--ce", false},          {"dropout", NULL, true},
};
#define NROW_OPTS (sizeof row_opts / sizeof *row_opts)

/* A row's settings are read as memplan estimate reads its flags. */
static const cli_command as_estimate = {.name = "estimate"};

/* cli_parse reports on stderr; a row's message is caught here and given back with the row. */
static int parse_row_args(cli *c, int argc, char **argv, char *msg, size_t len)
{
    msg[0] = 0;
    FILE *cap = tmpfile();
    int saved = cap ? dup(2) : -1;
    if (!cap || saved < 0) {
        if (cap) fclose(cap);
        return cli_parse(c, argc, argv, &as_estimate); /* reports without the row */
    }
    fflush(stderr);
    dup2(fileno(cap), 2);
    int rc = cli_parse(c, argc, argv, &as_estimate);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    if (rc) {
        rewind(cap);
        size_t n = fread(msg, 1, len - 1, cap);
        msg[n] = 0;
        char *nl = strchr(msg, '\n');
        if (nl) *nl = 0;
        const char *pre = "memplan: error: ";
        if (!strncmp(msg, pre, strlen(pre))) memmove(msg, msg + strlen(pre), strlen(msg) - strlen(pre) + 1);
        if (!msg[0]) snprintf(msg, len, "invalid settings");
    }
    fclose(cap);
    return rc;
}

/* "memplan: error: FILE row N: ..." */
__attribute__((format(printf, 3, 4))) static int row_error(const char *path, int row, const char *fmt, ...)
{
    char m[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    return cli_error("%s row %d: %s", path, row, m);
}

/* A measured byte count: required, or optional (empty: absent). */
static int read_bytes(const char *path, const csv_table *t, int r, int c, const char *name, bool required,
                      double *v, bool *present)
{
    const char *x = cell(t, r, c);
    *present = false;
    if (!*x) return required ? row_error(path, r + 1, "no %s", name) : 0;
    if (!parse_number(x, v)) return row_error(path, r + 1, "column '%s' is not a number: '%s'", name, x);
    if (*v <= 0) return row_error(path, r + 1, "column '%s' must be a positive byte count, not '%s'", name, x);
    *present = true;
    return 0;
}

/* argv for `memplan estimate` from row r: flags are literals and values point into the
 * table, which outlives every parse (getopt may keep a pointer into the last one). */
static int row_argv(const char *path, const csv_table *t, int r, const int *cols, char **argv, int *argc)
{
    argv[(*argc)++] = "memplan";
    for (size_t k = 0; k < NROW_OPTS; k++) {
        const char *v = cell(t, r, cols[k]);
        if (!*v) continue;
        double d = 0;
        if (!row_opts[k].flag && (!strcasecmp(v, "true") || !strcasecmp(v, "yes"))) d = 1;
        else if (!row_opts[k].flag && (!strcasecmp(v, "false") || !strcasecmp(v, "no"))) d = 0;
        else if (row_opts[k].numeric && !parse_number(v, &d))
            return row_error(path, r + 1, "column '%s' is not a number: '%s'", row_opts[k].col, v);
        if (!row_opts[k].flag) {          /* dropout: 0 or 1 (or a rate), true or false */
            if (d != 0) argv[(*argc)++] = "--dropout";
            continue;
        }
        argv[(*argc)++] = (char *)row_opts[k].flag;
        argv[(*argc)++] = (char *)v;
    }
    argv[*argc] = NULL;
    return 0;
}

static int load_runs(const char *path, const csv_table *t, run **out, int *nruns)
{
    *out = NULL, *nruns = 0;
    if (t->records == 0) return cli_error("'%s' is empty: no header and no measured runs", path);
    const char *need[] = {"allocated_peak_bytes", "batch", "seq"};
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (csv_table_col(t, need[i]) < 0) return cli_error("'%s' has no '%s' column", path, need[i]);
    int cmodel = csv_table_col(t, "model"), cfamily = csv_table_col(t, "family");
    if (cmodel < 0 && cfamily < 0) return cli_error("'%s' has no 'model' or 'family' column", path);
    if (cmodel < 0) {
        const char *dims[] = {"layers", "hidden", "heads"};
        for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
            if (csv_table_col(t, dims[i]) < 0) return cli_error("'%s' has no '%s' column (needed with 'family')", path, dims[i]);
    }
    if (t->nrows < MIN_RUNS)
        return cli_error("needs at least %d measured runs to fit, '%s' has %d", MIN_RUNS, path, t->nrows);
    int cname = csv_table_col(t, "name"), calloc_ = csv_table_col(t, "allocated_peak_bytes");
    int cres = csv_table_col(t, "reserved_peak_bytes"), cdev = csv_table_col(t, "device_peak_bytes");
    int cols[NROW_OPTS];
    for (size_t k = 0; k < NROW_OPTS; k++) cols[k] = csv_table_col(t, row_opts[k].col);

    run *runs = calloc((size_t)t->nrows, sizeof *runs);
    cli *c = malloc(sizeof *c);
    if (!runs || !c) {
        free(runs), free(c);
        return cli_error("out of memory");
    }
    int rc = 0;
    for (int r = 0; r < t->nrows && !rc; r++) {
        run *u = &runs[r];
        u->row = r + 1;
        u->name = cname >= 0 && *cell(t, r, cname) ? cell(t, r, cname) : NULL;
        if (t->nfields[r] > t->nhead) {
            rc = row_error(path, r + 1, "%d fields, but the header has %d", t->nfields[r], t->nhead);
            break;
        }
        char *argv[2 * NROW_OPTS + 2];
        int argc = 0;
        if ((rc = row_argv(path, t, r, cols, argv, &argc))) break;
        if (!*cell(t, r, cmodel) && !*cell(t, r, cfamily)) {
            rc = row_error(path, r + 1, "no model: give 'model', or 'family' with layers, hidden and heads");
            break;
        }
        char msg[MP_ERR_LEN + 64];
        if (parse_row_args(c, argc, argv, msg, sizeof msg)) {
            rc = msg[0] ? cli_error("%s row %d: %s", path, r + 1, msg) : EXIT_USAGE;
            break;
        }
        u->model = c->model;
        u->s = c->s;
        bool has;
        if ((rc = read_bytes(path, t, r, calloc_, "allocated_peak_bytes", true, &u->alloc, &has))) break;
        if ((rc = read_bytes(path, t, r, cres, "reserved_peak_bytes", false, &u->reserved, &u->has_reserved))) break;
        if ((rc = read_bytes(path, t, r, cdev, "device_peak_bytes", false, &u->device, &u->has_device))) break;
        if (u->has_reserved && u->reserved < u->alloc)
            rc = row_error(path, r + 1, "reserved_peak_bytes %.0f is below allocated_peak_bytes %.0f", u->reserved, u->alloc);
        else if (u->has_device && u->device < (u->has_reserved ? u->reserved : u->alloc))
            rc = row_error(path, r + 1, "device_peak_bytes %.0f is below %s %.0f", u->device,
                           u->has_reserved ? "reserved_peak_bytes" : "allocated_peak_bytes",
                           u->has_reserved ? u->reserved : u->alloc);
    }
    free(c);
    if (rc) {
        free(runs);
        return rc;
    }
    *out = runs, *nruns = t->nrows;
    return 0;
}

static const char *run_label(const run *u, char *buf, size_t len)
{
    if (u->name) return u->name;
    snprintf(buf, len, "row %d", u->row);
    return buf;
}

/* ---------------------------------------------------------------- the fit */

typedef struct fit {
    double act_scale, act_scale_se;
    double fixed, fixed_se;   /* every fixed allocation: workspace + fixed_bytes */
    int iterations;
    bool converged;
    int nfrag, nctx;          /* runs that had reserved / device peaks */
    double frag, frag_se, frag_rms_pct;
    double context, context_se;
    double rms_pct, worst_pct, base_rms_pct, base_worst_pct;
} fit;

/* The profile with its overheads zeroed: what remains is the model states and activations. */
static void bare_profile(const mp_framework *base, double act_scale, mp_framework *f)
{
    *f = *base;
    f->context_bytes = f->workspace_bytes = f->fixed_bytes = f->frag = f->round_bytes = 0;
    f->act_scale = act_scale;
}

static int estimate(const char *path, run *u, const mp_framework *fw, mp_estimate *e)
{
    char err[MP_ERR_LEN];
    mp_settings s = u->s;
    s.framework = fw;
    if (mp_estimate_run(&u->model, &s, NULL, e, err)) return cli_error("%s row %d: %s", path, u->row, err);
    return 0;
}

static int fit_allocation(const char *path, run *runs, int n, const mp_framework *base, fit *F)
{
    gsl_set_error_handler_off();
    gsl_matrix *X = gsl_matrix_alloc((size_t)n, 2), *cov = gsl_matrix_alloc(2, 2);
    gsl_vector *y = gsl_vector_alloc((size_t)n), *wt = gsl_vector_alloc((size_t)n), *cf = gsl_vector_alloc(2);
    gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc((size_t)n, 2);
    int rc = 0;
    if (!X || !cov || !y || !wt || !cf || !w) rc = cli_error("out of memory");
    double k = 1;
    F->converged = false;
    for (int it = 1; !rc && it <= MAX_ITER; it++) {
        mp_framework fw;
        bare_profile(base, k, &fw);
        double amin = INFINITY, amax = -INFINITY;
        for (int i = 0; i < n && !rc; i++) {
            mp_estimate e;
            if ((rc = estimate(path, &runs[i], &fw, &e))) break;
            /* the estimate scales activations only when act_scale is neither 0 nor 1 */
            runs[i].acts = e.at_peak[MP_ACTIVATIONS] / (k != 1 && k > 0 ? k : 1);
            /* the overhead at the peak, less what sits above allocated (the replayed allocator's cache) */
            runs[i].states = e.total_bytes - e.at_peak[MP_ACTIVATIONS] - (e.at_peak[MP_OVERHEAD] - (e.device_bytes - e.total_bytes));
            /* the states at the peak are exact counts: a measured peak below them is not this run's */
            if (runs[i].alloc < runs[i].states) {
                rc = cli_error("%s row %d: allocated_peak_bytes %.0f is below the %.0f bytes of weights, gradients "
                               "and optimizer state this configuration holds at its peak: not a measurement of it",
                               path, runs[i].row, runs[i].alloc, runs[i].states);
                break;
            }
            amin = fmin(amin, runs[i].acts), amax = fmax(amax, runs[i].acts);
            /* in MiB: both columns of order one */
            gsl_matrix_set(X, (size_t)i, 0, runs[i].acts / MiB);
            gsl_matrix_set(X, (size_t)i, 1, 1.0);
            gsl_vector_set(y, (size_t)i, (runs[i].alloc - runs[i].states) / MiB);
            /* relative errors: a run of 100 MiB counts as much as one of 80 GiB */
            gsl_vector_set(wt, (size_t)i, 1 / pow(runs[i].alloc / MiB, 2));
        }
        if (rc) break;
        if (!(amax - amin > 1e-6 * fmax(fabs(amax), 1.0)))
            rc = cli_error("the runs in '%s' all have the same activations (%.0f bytes at the peak): act_scale and "
                           "the fixed allocation cannot be told apart; vary the micro-batch, sequence or model",
                           path, amax);
        double chisq;
        if (!rc && gsl_multifit_wlinear(X, wt, y, cf, cov, &chisq, w))
            rc = cli_error("the least-squares fit of '%s' failed", path);
        if (rc) break;
        double knew = gsl_vector_get(cf, 0);
        F->act_scale = knew;
        F->fixed = gsl_vector_get(cf, 1) * MiB;
        /* the weights are relative, not 1/variance: scale (X^T W X)^-1 by chisq / (n - 2) */
        double s2 = chisq / (n - 2);
        F->act_scale_se = sqrt(fmax(gsl_matrix_get(cov, 0, 0) * s2, 0));
        F->fixed_se = sqrt(fmax(gsl_matrix_get(cov, 1, 1) * s2, 0)) * MiB;
        F->iterations = it;
        if (!(knew > 0) || !isfinite(knew)) {
            rc = cli_error("the fit of '%s' gives act_scale %.4g: the measurements do not grow with the "
                           "activations as modelled (is the base framework right?)", path, knew);
            break;
        }
        if (F->fixed < 0) {
            rc = cli_error("the fit of '%s' gives a negative fixed allocation (%.0f bytes): the measured peaks are "
                           "below what the runs' states and activations need (are they these configurations'?)",
                           path, F->fixed);
            break;
        }
        if (fabs(knew - k) < 1e-6) {
            F->converged = true;
            break;
        }
        k = knew;
    }
    gsl_multifit_linear_free(w);
    gsl_vector_free(cf), gsl_vector_free(wt), gsl_vector_free(y);
    gsl_matrix_free(cov), gsl_matrix_free(X);
    return rc;
}

/* frag from reserved = (1 + frag) x allocated + the replayed allocator's cache
 * (the estimate's, for each run's settings); the context from device - reserved. */
static void fit_allocator(const char *path, run *runs, int n, const mp_framework *base, fit *F)
{
    double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n), *wx = malloc(sizeof *wx * (size_t)n);
    double *cache = calloc((size_t)n, sizeof *cache);
    if (!x || !y || !wx || !cache) {
        fputs("memplan: error: out of memory\n", stderr);
        exit(EXIT_USAGE);
    }
    /* each run's replayed cache, under the fitted activations and fixed bytes */
    mp_framework fw = *base;
    fw.act_scale = F->act_scale, fw.fixed_bytes = F->fixed - base->workspace_bytes;
    for (int i = 0; i < n; i++) {
        mp_estimate e;
        if (estimate(path, &runs[i], &fw, &e) == 0) cache[i] = e.allocator_cache_bytes;
    }
    F->nfrag = 0;
    for (int i = 0; i < n; i++)
        if (runs[i].has_reserved) x[F->nfrag] = runs[i].alloc, y[F->nfrag++] = runs[i].reserved - cache[i];
    F->frag = base->frag, F->frag_se = NAN, F->frag_rms_pct = NAN;
    if (F->nfrag >= 2) {
        /* weighted by 1/allocated^2, as the allocation fit: each run's ratio counts alike */
        double c1, cov11, chisq;
        for (int i = 0; i < F->nfrag; i++) wx[i] = 1 / (x[i] * x[i]);
        gsl_fit_wmul(x, 1, wx, 1, y, 1, (size_t)F->nfrag, &c1, &cov11, &chisq);
        F->frag = c1 - 1, F->frag_se = sqrt(fmax(cov11 * chisq / (F->nfrag - 1), 0));
        double ss = 0;
        for (int i = 0; i < F->nfrag; i++) ss += pow((c1 * x[i] - y[i]) / y[i] * 100, 2);
        F->frag_rms_pct = sqrt(ss / F->nfrag);
    }
    free(x), free(y), free(wx);
    F->nctx = 0;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < n; i++)
        if (runs[i].has_device) {
            double d = runs[i].device - (runs[i].has_reserved ? runs[i].reserved
                                                              : runs[i].alloc * (1 + F->frag) + cache[i]);
            sum += d, sum2 += d * d, F->nctx++;
        }
    F->context = base->context_bytes, F->context_se = NAN;
    if (F->nctx >= 1) {
        F->context = sum / F->nctx;
        if (F->nctx >= 2)
            F->context_se = sqrt(fmax(sum2 - F->nctx * F->context * F->context, 0) / (F->nctx - 1) / F->nctx);
    }
    free(cache);
}

/* ---------------------------------------------------------------- the profile */

/* A profile as the text it will be written as (name, then framework.h's columns, then
 * source), so that the profile used for the fitted predictions is exactly the one
 * --framework FILE reads back. */
typedef struct profile_text {
    char v[FW_MAX_COLUMNS + 2][MP_SOURCE_LEN]; /* name, the columns, source */
} profile_text;

static const char *profile_col(int i)
{
    return i == 0 ? "name" : i <= fw_ncolumns ? fw_columns[i - 1].name : "source";
}

static void profile_format(const mp_framework *f, profile_text *p)
{
    snprintf(p->v[0], sizeof p->v[0], "%s", f->name);
    for (int i = 1; i <= fw_ncolumns; i++) {
        snprintf(p->v[i], sizeof p->v[i], "%.10g", fw_get(f, &fw_columns[i - 1]));
        if (!strcmp(p->v[i], "-0")) snprintf(p->v[i], sizeof p->v[i], "0");
    }
    snprintf(p->v[fw_ncolumns + 1], sizeof p->v[0], "%s", f->source);
}

/* As planner/profiles/profiles.c reads the columns back. */
static void profile_parse(const profile_text *p, mp_framework *f)
{
    for (int i = 1; i <= fw_ncolumns; i++) fw_set(f, &fw_columns[i - 1], strtod(p->v[i], NULL));
}

static void csv_put(FILE *o, const char *s)
{
    if (strpbrk(s, ",\"\r\n") || (*s && (s[0] == ' ' || s[strlen(s) - 1] == ' '))) csv_fwrite(o, s, strlen(s));
    else fputs(s, o);
}

static char *profile_csv(const profile_text *p, size_t *len)
{
    char *data = NULL;
    FILE *o = open_memstream(&data, len);
    if (!o) return NULL;
    const int ncols = fw_ncolumns + 2;
    for (int i = 0; i < ncols; i++) fprintf(o, "%s%s", i ? "," : "", profile_col(i));
    fputc('\n', o);
    for (int i = 0; i < ncols; i++) {
        if (i) fputc(',', o);
        csv_put(o, p->v[i]);
    }
    fputc('\n', o);
    fclose(o);
    return data;
}

/* planner/profiles/profiles.c gives a profile its behaviour by its name's prefix. */
static const char *kind_prefix(mp_fw_kind k)
{
    return k == MP_FW_PYTORCH ? "pytorch" : k == MP_FW_DEEPSPEED ? "deepspeed" : k == MP_FW_MEGATRON ? "megatron"
         : k == MP_FW_MEMTRAIN ? "memtrain" : NULL;
}

static int check_name(const char *name, const mp_framework *base)
{
    if (!*name) return cli_error("--name is empty");
    if (strlen(name) >= MP_NAME_LEN) return cli_error("--name '%.40s...' is too long (at most %d characters)", name, MP_NAME_LEN - 1);
    if (strpbrk(name, "\r\n")) return cli_error("--name must be one line");
    const char *want = kind_prefix(base->kind);
    if (want && strncmp(name, want, strlen(want)))
        return cli_error("--name '%s' must begin with '%s', so that the profile keeps %s's behaviour", name, want, want);
    if (!want)
        for (int k = MP_FW_PYTORCH; k <= MP_FW_MEMTRAIN; k++) {
            const char *pre = kind_prefix((mp_fw_kind)k);
            if (!strncmp(name, pre, strlen(pre)))
                return cli_error("--name '%s' begins with '%s', which would give the profile %s's behaviour, not %s's",
                                 name, pre, pre, base->name);
        }
    return 0;
}

/* ---------------------------------------------------------------- reporting */

static double pct(double pred, double meas) { return (pred - meas) / meas * 100; }

static json_t *num_or_null(double v, bool integer)
{
    if (!isfinite(v)) return json_null();
    return integer ? json_integer((json_int_t)llround(v)) : json_real(v);
}

static json_t *constant(double v, double se, bool integer, const char *how)
{
    json_t *o = json_object();
    json_object_set_new(o, "value", num_or_null(v, integer));
    json_object_set_new(o, "stderr", num_or_null(se, integer));
    json_object_set_new(o, "how", json_string(how));
    return o;
}

typedef struct report {
    const char *path, *out_path;
    const mp_framework *base;
    const mp_framework *fitted;
    const profile_text *pt;
    run *runs;
    int n;
    const fit *F;
    char frag_how[160], ctx_how[160], fixed_how[200];
} report;

static void print_json(const report *R)
{
    const fit *F = R->F;
    char lab[32];
    json_t *o = json_object();
    json_object_set_new(o, "file", json_string(R->path));
    json_object_set_new(o, "base", json_string(R->base->name));
    json_object_set_new(o, "name", json_string(R->fitted->name));
    json_object_set_new(o, "runs", json_integer(R->n));
    json_t *rows = json_array();
    for (int i = 0; i < R->n; i++) {
        const run *u = &R->runs[i];
        json_t *r = json_object();
        json_object_set_new(r, "name", json_string(run_label(u, lab, sizeof lab)));
        json_object_set_new(r, "row", json_integer(u->row));
        json_object_set_new(r, "measured_bytes", json_integer((json_int_t)llround(u->alloc)));
        json_object_set_new(r, "base_bytes", json_integer((json_int_t)llround(u->base.total_bytes)));
        json_object_set_new(r, "base_residual_pct", json_real(pct(u->base.total_bytes, u->alloc)));
        json_object_set_new(r, "fitted_bytes", json_integer((json_int_t)llround(u->fit.total_bytes)));
        json_object_set_new(r, "fitted_residual_pct", json_real(pct(u->fit.total_bytes, u->alloc)));
        json_object_set_new(r, "peak_phase", json_string(u->fit.phases[u->fit.peak_phase].name));
        json_object_set_new(r, "states_at_peak_bytes", json_integer((json_int_t)llround(u->states)));
        json_object_set_new(r, "activations_at_peak_bytes", json_integer((json_int_t)llround(u->acts)));
        json_object_set_new(r, "measured_reserved_bytes", u->has_reserved ? json_integer((json_int_t)llround(u->reserved)) : json_null());
        json_object_set_new(r, "fitted_reserved_bytes", json_integer((json_int_t)llround(u->fit.reserved_bytes)));
        json_object_set_new(r, "measured_device_bytes", u->has_device ? json_integer((json_int_t)llround(u->device)) : json_null());
        json_object_set_new(r, "fitted_device_bytes", json_integer((json_int_t)llround(u->fit.device_bytes)));
        json_array_append_new(rows, r);
    }
    json_object_set_new(o, "rows", rows);
    json_t *c = json_object();
    json_object_set_new(c, "act_scale", constant(F->act_scale, F->act_scale_se, false, "fitted"));
    json_object_set_new(c, "fixed_bytes", constant(F->fixed, F->fixed_se, true, R->fixed_how));
    json_object_set_new(c, "frag", constant(F->frag, F->frag_se, false, R->frag_how));
    json_object_set_new(c, "context_bytes", constant(F->context, F->context_se, true, R->ctx_how));
    json_object_set_new(c, "workspace_bytes", constant(R->base->workspace_bytes, NAN, true, "kept from the base"));
    json_object_set_new(c, "round_bytes", constant(R->base->round_bytes, NAN, true, "kept from the base"));
    json_object_set_new(o, "constants", c);
    json_object_set_new(o, "iterations", json_integer(F->iterations));
    json_object_set_new(o, "converged", json_boolean(F->converged));
    json_object_set_new(o, "rms_pct", json_real(F->rms_pct));
    json_object_set_new(o, "worst_pct", json_real(F->worst_pct));
    json_object_set_new(o, "base_rms_pct", json_real(F->base_rms_pct));
    json_object_set_new(o, "base_worst_pct", json_real(F->base_worst_pct));
    json_object_set_new(o, "frag_rms_pct", num_or_null(F->frag_rms_pct, false));
    json_t *p = json_object();
    for (int i = 0; i < fw_ncolumns + 2; i++) {
        if (i == 0 || i == fw_ncolumns + 1) json_object_set_new(p, profile_col(i), json_string(R->pt->v[i]));
        else json_object_set_new(p, profile_col(i), json_real(strtod(R->pt->v[i], NULL)));
    }
    json_object_set_new(o, "profile", p);
    json_object_set_new(o, "written", R->out_path ? json_string(R->out_path) : json_null());
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    fputc('\n', stdout);
    json_decref(o);
}

static const char *mib(double bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%.2f MiB", bytes / MiB);
    return buf;
}

static void print_text(const report *R)
{
    const fit *F = R->F;
    const mp_framework *b = R->base;
    char lab[32], x[48], y[48], z[48];
    printf("memplan calibrate: %d runs from '%s', base profile %s\n\n", R->n, R->path, b->name);
    int w = 3;
    for (int i = 0; i < R->n; i++) w = (int)fmax(w, (double)strlen(run_label(&R->runs[i], lab, sizeof lab)));
    if (w > 40) w = 40;
    printf("%-*s  %14s  %14.14s %8s  %14s %8s  %s\n", w, "run", "measured", b->name, "resid", "fitted", "resid",
           "peak (fitted)");
    for (int i = 0; i < R->n; i++) {
        const run *u = &R->runs[i];
        printf("%-*.*s  %14s  %14s %+7.2f%%  %14s %+7.2f%%  %s\n", w, w, run_label(u, lab, sizeof lab),
               mib(u->alloc, x, sizeof x), mib(u->base.total_bytes, y, sizeof y), pct(u->base.total_bytes, u->alloc),
               mib(u->fit.total_bytes, z, sizeof z), pct(u->fit.total_bytes, u->alloc),
               u->fit.phases[u->fit.peak_phase].name);
    }
    printf("%-*s  %14s  %14s %7.2f%%  %14s %7.2f%%\n", w, "rms", "", "", F->base_rms_pct, "", F->rms_pct);
    printf("%-*s  %14s  %14s %7.2f%%  %14s %7.2f%%\n", w, "worst", "", "", F->base_worst_pct, "", F->worst_pct);

    printf("\nfitted profile %s (allocated = model states + act_scale x activations + fixed)\n", R->fitted->name);
    printf("  %-15s %.6f +- %.6f   fitted\n", "act_scale", F->act_scale, F->act_scale_se);
    printf("  %-15s %s +- %s   %s\n", "fixed", mib(F->fixed, x, sizeof x), mib(F->fixed_se, y, sizeof y), R->fixed_how);
    if (isfinite(F->frag_se)) printf("  %-15s %.6f +- %.6f   %s\n", "frag", F->frag, F->frag_se, R->frag_how);
    else printf("  %-15s %.6f   %s\n", "frag", F->frag, R->frag_how);
    if (isfinite(F->context_se)) printf("  %-15s %s +- %s   %s\n", "context", mib(F->context, x, sizeof x), mib(F->context_se, y, sizeof y), R->ctx_how);
    else printf("  %-15s %s   %s\n", "context", mib(F->context, x, sizeof x), R->ctx_how);
    printf("  %-15s %s   kept from %s\n", "workspace", mib(b->workspace_bytes, x, sizeof x), b->name);
    printf("  %-15s %.0f B   kept from %s\n", "round_bytes", b->round_bytes, b->name);
    printf("  %-15s autocast_cache %d, fp32_logits %d, adam_temps %g, dropout_mask_bytes %g,\n"
           "  %-15s autocast_softmax_fp32 %d, mean_keeps_input %d: kept from %s\n", "behaviour",
           b->autocast_cache, b->fp32_logits, b->adam_temps, b->dropout_mask_bytes, "",
           b->autocast_softmax_fp32, b->mean_keeps_input, b->name);
    printf("\n%s after %d iteration%s; residual RMS %.2f%%, worst %.2f%% (%s as it is: RMS %.2f%%, worst %.2f%%)\n",
           F->converged ? "converged" : "did not converge", F->iterations, F->iterations == 1 ? "" : "s",
           F->rms_pct, F->worst_pct, b->name, F->base_rms_pct, F->base_worst_pct);
    /* --framework takes a file when its name has a '/' or ".csv" */
    if (R->out_path)
        printf("profile written to %s: use --framework %s%s\n", R->out_path,
               strchr(R->out_path, '/') || strstr(R->out_path, ".csv") ? "" : "./", R->out_path);
    else printf("(use -o FILE to write the profile)\n");
}

/* ---------------------------------------------------------------- the command */

typedef struct calibrate_args {
    const char *base_name, *name, *out_path;
    int json;                  /* --format: 0 text, 1 json */
    bool help;
} calibrate_args;

static const char *const report_formats[] = {"text", "json"};
static const mp_vocab report_format_names = {.n = 2, .names = report_formats};

#define ARG(field) MP_OPT_AT(calibrate_args, field)
static const mp_opt calibrate_opts[] = {
    {"framework", MP_OPT_STRING, ARG(base_name), .arg = "BASE", .help = "the profile fitted from (default pytorch)"},
    {"name", MP_OPT_STRING, ARG(name), .arg = "NAME", .help = "the fitted profile's name (default BASE-calibrated)"},
    {"output", MP_OPT_STRING, ARG(out_path), .short_name = 'o', .arg = "OUT.csv",
     .help = "write the fitted profile, which --framework OUT.csv loads"},
    {"format", MP_OPT_ENUM, ARG(json), .vocab = &report_format_names, .or_last = true,
     .help = "the report (default text)"},
    {"help", MP_OPT_FLAG, ARG(help), .short_name = 'h', .help = "this text"},
    {0},
};

static const char calibrate_usage[] =
    "usage: memplan calibrate MEASUREMENTS.csv [--framework BASE] [--name NAME] [-o OUT.csv]\n"
    "                         [--format text|json]\n"
    "Fits a framework profile to measured training runs (tests/validation/harness.py's CSV):\n"
    "act_scale and the fixed allocation by least squares from allocated_peak_bytes, frag from\n"
    "reserved_peak_bytes and the context from device_peak_bytes when given. BASE (default\n"
    "pytorch) supplies the rest. -o writes a profile that --framework OUT.csv loads.\n";

/* The flags and the one file; CLI_HELP after printing the help. */
static int calibrate_parse(int argc, char **argv, calibrate_args *a, const char **path)
{
    *a = (calibrate_args){.base_name = "pytorch"};
    mp_opt_group g = {"options:", calibrate_opts, a, NULL};
    mp_opt_parser p;
    mp_opt_start(&p, &g, 1, NULL, argc, argv);
    char err[MP_OPT_ERR_LEN];
    const mp_opt *row;
    int r;
    while ((r = mp_opt_next(&p, &row, err)) == MP_OPT_GIVEN)
        if (a->help) {
            fputs(calibrate_usage, stdout);
            mp_opt_help(stdout, &g, 1, 90);
            return CLI_HELP;
        }
    if (r == MP_OPT_UNKNOWN) return cli_error("%s for memplan calibrate (memplan calibrate --help)", err);
    if (r == MP_OPT_BAD) return cli_error("%s", err);
    if (optind >= argc) return cli_error("memplan calibrate needs a measurements file: memplan calibrate MEASUREMENTS.csv");
    if (argc - optind > 1) return cli_error("unexpected argument '%s' for memplan calibrate (one measurements file)", argv[optind + 1]);
    *path = argv[optind];
    if (a->out_path && !*a->out_path) return cli_error("-o needs a file name");
    return 0;
}

/* The fitted profile, compared with BASE on every run, written and reported. */
static int calibrate_report(const calibrate_args *a, const char *path, run *runs, int n, mp_framework *base, fit *F)
{
    char err[MP_ERR_LEN];
    int rc = 0;
    fit_allocator(path, runs, n, base, F);
    /* the fitted profile, through the text it is written as */
    mp_framework fitted = *base;
    snprintf(fitted.name, sizeof fitted.name, "%.*s", MP_NAME_LEN - 1, a->name);
    fitted.act_scale = F->act_scale;
    fitted.fixed_bytes = F->fixed - base->workspace_bytes;
    fitted.frag = F->frag;
    fitted.context_bytes = F->context;
    profile_text pt;
    profile_format(&fitted, &pt); /* first pass: the numbers, for the source's RMS */
    profile_parse(&pt, &fitted);
    double ss = 0, bss = 0;
    F->worst_pct = F->base_worst_pct = 0;
    for (int i = 0; i < n && !rc; i++) {
        if ((rc = estimate(path, &runs[i], base, &runs[i].base))) break;
        if ((rc = estimate(path, &runs[i], &fitted, &runs[i].fit))) break;
        double p = pct(runs[i].fit.total_bytes, runs[i].alloc), q = pct(runs[i].base.total_bytes, runs[i].alloc);
        ss += p * p, bss += q * q;
        F->worst_pct = fmax(F->worst_pct, fabs(p)), F->base_worst_pct = fmax(F->base_worst_pct, fabs(q));
    }
    F->rms_pct = sqrt(ss / n), F->base_rms_pct = sqrt(bss / n);
    report R = {.path = path, .out_path = a->out_path, .base = base, .fitted = &fitted, .pt = &pt,
                .runs = runs, .n = n, .F = F};
    snprintf(R.fixed_how, sizeof R.fixed_how, "fitted; fixed_mib = fixed - workspace (%.2f MiB, kept from %s)",
             base->workspace_bytes / MiB, base->name);
    if (F->nfrag >= 2) snprintf(R.frag_how, sizeof R.frag_how, "fitted from %d runs' reserved peaks (RMS %.2f%%)", F->nfrag, F->frag_rms_pct);
    else snprintf(R.frag_how, sizeof R.frag_how, "kept from %s (%s)", base->name,
                  F->nfrag ? "only 1 run has reserved_peak_bytes, 2 are needed" : "no reserved_peak_bytes measured");
    if (F->nctx >= 1) snprintf(R.ctx_how, sizeof R.ctx_how, "fitted: mean of device - reserved over %d run%s", F->nctx, F->nctx == 1 ? "" : "s");
    else snprintf(R.ctx_how, sizeof R.ctx_how, "kept from %s (no device_peak_bytes measured)", base->name);
    snprintf(fitted.source, sizeof fitted.source,
             "calibrated by memplan calibrate from %.120s: %d runs, residual RMS %.2f%% (base %.40s: %.2f%%)",
             path, n, F->rms_pct, base->name, F->base_rms_pct);
    profile_format(&fitted, &pt);
    char *text = NULL;
    if (!rc && a->out_path) {
        size_t len;
        text = profile_csv(&pt, &len);
        if (!text) rc = cli_error("out of memory");
        else if (mp_write_file_atomic(a->out_path, text, len, err)) rc = cli_error("%s", err);
    }
    if (!rc) {
        if (a->json) print_json(&R);
        else print_text(&R);
    }
    free(text);
    return rc;
}

int cmd_calibrate(int argc, char **argv)
{
    calibrate_args a;
    const char *path = NULL;
    int rc = calibrate_parse(argc, argv, &a, &path);
    if (rc) return rc == CLI_HELP ? 0 : rc;

    char err[MP_ERR_LEN];
    const mp_framework *found = mp_framework_find(a.base_name, err);
    if (!found) return cli_error("%s", err);
    mp_framework base = *found;
    char default_name[MP_NAME_LEN];
    snprintf(default_name, sizeof default_name, "%.*s-calibrated", MP_NAME_LEN - 12, base.name);
    if (!a.name) a.name = default_name;
    if (check_name(a.name, &base)) return EXIT_USAGE;

    csv_table t;
    run *runs = NULL;
    int n = 0;
    rc = read_measurements(path, &t);
    if (!rc) rc = load_runs(path, &t, &runs, &n);
    fit F = {0};
    if (!rc) rc = fit_allocation(path, runs, n, &base, &F);
    if (!rc) rc = calibrate_report(&a, path, runs, n, &base, &F);
    free(runs);
    csv_table_free(&t);
    return rc;
}
