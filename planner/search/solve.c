/* solve.c — inverse questions: the largest batch, sequence or model that fits.
 *
 * Memory grows monotonically with each of them but in integer steps, so the
 * root is bracketed by doubling, then found with GSL's Brent solver on the
 * piecewise-linear interpolation between integers, and the answer is the
 * largest integer whose estimate fits. */
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "search/search.h"
#include "settings/settings.h"
#include "estimate/estimate.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_roots.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct solve_ctx {
    const char *what;
    const mp_model *m;
    mp_settings s;
    const mp_gpu *gpu;
    double limit;
    int failed;
    char err[MP_ERR_LEN];
    mp_model last_model;
} solve_ctx;

/* Device bytes minus the usable budget at an integer value of the unknown. */
static double excess_at(solve_ctx *c, double v)
{
    mp_estimate e;
    mp_settings s = c->s;
    mp_model m = *c->m;
    if (strcmp(c->what, "max-batch") == 0) {
        s.batch = (int64_t)v;
    } else if (strcmp(c->what, "max-seq") == 0) {
        s.seq = (int64_t)v;
        /* learned positions end at max_pos: a longer sequence does not exist */
        if (m.pos == MP_POS_LEARNED && s.seq > m.max_pos) return 1e30;
    } else {
        if (mp_model_from_params(v, &m, c->err)) {
            c->failed = 1;
            return 0;
        }
        c->last_model = m;
    }
    if (mp_estimate_ex(&m, &s, c->gpu, &e, false, c->err)) {
        c->failed = 1;
        return 0;
    }
    return e.device_bytes - c->limit;
}

static double excess(double x, void *p)
{
    solve_ctx *c = p;
    double lo = floor(x), f = x - lo;
    double a = excess_at(c, lo);
    if (f == 0) return a;
    return a + f * (excess_at(c, lo + 1) - a);
}

int mp_solve(const char *what, const mp_model *m, const mp_settings *s, const mp_gpu *gpu,
             double budget, double headroom, double *answer, mp_model *solved, char *err)
{
    if (strcmp(what, "max-batch") && strcmp(what, "max-seq") && strcmp(what, "max-params")) {
        snprintf(err, MP_ERR_LEN, "unknown --solve '%s' (max-batch, max-seq or max-params)", what);
        return -1;
    }
    gsl_set_error_handler_off();
    solve_ctx c = {.what = what, .m = m, .s = *s, .gpu = gpu, .limit = budget * (1 - headroom)};
    bool params = strcmp(what, "max-params") == 0;
    /* For --params the unknown is log10(N) steps of 1e5 parameters; for the
     * others an integer count. */
    double step = params ? 1e6 : 1;
    double lo = params ? 2e7 : 1, hi = lo * 2; /* 2e7: the smallest Llama-like shape with a 32000 vocabulary */
    double f_lo = excess_at(&c, lo);
    if (c.failed) {
        snprintf(err, MP_ERR_LEN, "%s", c.err);
        return -1;
    }
    if (f_lo > 0) {
        snprintf(err, MP_ERR_LEN, "nothing fits: even %s %.0f needs more than the budget",
                 params ? "a model of" : (strcmp(what, "max-batch") == 0 ? "batch" : "sequence"), lo);
        return -2;
    }
    double cap = params ? 1e13 : (strcmp(what, "max-batch") == 0 ? 1 << 20 : 1 << 22);
    double f_hi = excess_at(&c, hi);
    while (!c.failed && f_hi <= 0 && hi < cap) {
        lo = hi, f_lo = f_hi;
        hi *= 2;
        f_hi = excess_at(&c, hi);
    }
    if (c.failed) {
        /* e.g. the sequence outgrew what the model allows: stop at the last good value */
        snprintf(err, MP_ERR_LEN, "%s", c.err);
        return -1;
    }
    if (f_hi <= 0) {
        *answer = hi;
        if (solved) *solved = params ? c.last_model : *m;
        return 0;
    }
    /* Brent on [lo, hi] in units of `step` */
    gsl_function F = {.function = excess, .params = &c};
    gsl_root_fsolver *sv = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
    if (!sv) {
        snprintf(err, MP_ERR_LEN, "cannot allocate the root solver");
        return -1;
    }
    if (gsl_root_fsolver_set(sv, &F, lo, hi) != GSL_SUCCESS) {
        gsl_root_fsolver_free(sv);
        snprintf(err, MP_ERR_LEN, "cannot bracket the answer for --solve %s", what);
        return -1;
    }
    double root = lo;
    for (int it = 0; it < 100; it++) {
        gsl_root_fsolver_iterate(sv);
        root = gsl_root_fsolver_root(sv);
        double a = gsl_root_fsolver_x_lower(sv), b = gsl_root_fsolver_x_upper(sv);
        if (gsl_root_test_interval(a, b, step * 0.5, 0) == GSL_SUCCESS) break;
    }
    gsl_root_fsolver_free(sv);
    /* the largest integer (or 1e6-parameter step) at or below the root that fits */
    double best = floor(root / step) * step;
    if (best < lo) best = lo;
    while (best + step <= hi && excess_at(&c, best + step) <= 0) best += step;
    while (best > lo && excess_at(&c, best) > 0) best -= step;
    excess_at(&c, best);
    *answer = best;
    if (solved) *solved = params ? c.last_model : *m;
    return 0;
}
