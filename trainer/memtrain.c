/*
 * memtrain.c — the reference trainer's command: run a plan written by
 * `memplan --emit memtrain`, measure every component at the allocator, and
 * report measured versus the planner's prediction for the same config.
 *
 *   memplan estimate --model ... --emit memtrain -o plan.cfg
 *   memtrain --config plan.cfg --steps 50 --report r.json --metrics run.csv
 *
 * Exit status (memtrain(1), EXIT STATUS): 0 done; 1 a runtime failure; 2 bad
 * input (nothing written); 3 the memory limit was hit (refused before the start,
 * or stopped after the step that crossed it); 4 the run diverged (a loss that was
 * not finite); 128 + N stopped by signal N (SIGINT, SIGTERM: between layers, after
 * the last completed step and its checkpoint).
 */
#include "checkpoint.h"
#include "config_keys.h"
#include "dist.h"
#include "common/errors.h"
#include "common/files.h"
#include "common/units.h"
#include "common/version.h"
#include "estimate/estimate.h"
#include "estimate/speed.h"
#include "memtrain/shape.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "memtrain/metrics_format.h"
#include "settings/options.h"
#include "train.h"

#include <cblas.h>
#include <csv.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define EXIT_MEMLIMIT 3
#define EXIT_DIVERGED 4

/* True while the progress bar's line is open on the terminal: an error then starts a
 * line of its own. */
static bool bar_open;
/* Data parallel: this process's rank; the errors every rank meets alike (bad
 * input) are said once, by rank 0. */
static int my_rank;

/* An error, one line on stderr; returns `code`. */
__attribute__((format(printf, 2, 3))) static int run_error(int code, const char *fmt, ...)
{
    if (my_rank != 0 && code != 1) return code;
    va_list ap;
    va_start(ap, fmt);
    if (bar_open)
        fputc('\n', stderr);
    mp_verror("memtrain", NULL, fmt, ap);
    va_end(ap);
    return code;
}
#define usage_error(...) run_error(EXIT_USAGE, __VA_ARGS__)

/* An error only this rank meets (its own file): said by this rank, whichever it is. */
__attribute__((format(printf, 2, 3))) static int rank_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mp_verror("memtrain", NULL, fmt, ap);
    va_end(ap);
    return code;
}

/* ---------- options: the run's own, then every config key ---------- */

typedef struct run_opts {
    const char *config, *report, *metrics, *save_dir, *resume_dir, *resume_changed;
    int64_t save_every;
    double mem_limit;
    double cpu_gflops; /* the CPU's rate as stated (0: measured when a run may be long) */
    bool quiet;
} run_opts;

#define R(field) MP_OPT_AT(run_opts, field)
static const mp_opt run_rows[] = {
    {"config", MP_OPT_STRING, R(config), .arg = "FILE", .help = "a plan written by 'memplan ... --emit memtrain -o FILE'"},
    {"report", MP_OPT_STRING, R(report), .arg = "FILE", .help = "JSON report: measured, predicted, losses, tokens/s"},
    {"metrics", MP_OPT_STRING, R(metrics), .arg = "FILE", .help = "one CSV row per step, flushed (the format memtop follows)"},
    {"save", MP_OPT_STRING, R(save_dir), .arg = "DIR", .help = "write checkpoints into DIR (atomically, with a checksum)"},
    {"save-every", MP_OPT_INT, R(save_every), .lo = 1, .hi = 100000000, .arg = "N",
     .help = "a checkpoint every N steps (default: at the end only)"},
    {"resume", MP_OPT_STRING, R(resume_dir), .arg = "DIR", .help = "continue from DIR's checkpoint, bit-identically"},
    {"resume-changed", MP_OPT_STRING, R(resume_changed), .arg = "SETTING[,SETTING]",
     .help = "with --resume: the settings this run changes on purpose (lr, seed, data, ...); any other change is refused"},
    {"mem-limit", MP_OPT_SIZE, R(mem_limit), .arg = "SIZE",
     .help = "refuse plans predicted above SIZE; stop if measured crosses it"},
    {"cpu-gflops", MP_OPT_REAL, R(cpu_gflops), .lo = 0.001, .hi = 1e6, .arg = "RATE",
     .help = "this CPU's rate in GFLOP/s for the run-time estimate (default: measured, when a run may be long)"},
    {"quiet", MP_OPT_FLAG, R(quiet), .help = "no progress bar or table"},
    {0},
};
#undef R

/* ---------- config keys: rows, as memplan's flags are ----------
 * The names memplan --emit memtrain writes, also accepted as --key
 * (config_keys.c: the rows and the config file's lines). */

/* Apply one key = value. `where` names a config file's line, or is NULL for --key. */
static int apply_key(mt_config *c, const char *key, const char *v, const char *where)
{
    char err[MT_KEYS_ERR_LEN];
    return mt_config_key(c, key, v, where, err) ? usage_error("%s", err) : 0;
}

static int read_config(const char *path, mt_config *c)
{
    char err[MT_KEYS_ERR_LEN];
    return mt_config_read(path, c, err) ? usage_error("%s", err) : 0;
}

static void usage(FILE *f)
{
    fputs("usage: memtrain [--config FILE] [--steps N] [--report FILE.json] [--metrics FILE.csv]\n"
          "                [--save DIR --save-every N] [--resume DIR [--resume-changed SETTING,...]]\n"
          "                [--mem-limit SIZE] [--quiet]\n"
          "                [--KEY VALUE ...]\n"
          "Trains a decoder-only transformer on the CPU (OpenBLAS) and reports the memory each\n"
          "component allocated next to memplan's prediction (--framework memtrain).\n\n",
          f);
    const mp_opt_group run = {"run options (also --steps N, optimizer steps, default 20; --version):", run_rows, NULL, NULL};
    mp_opt_help(f, &run, 1, 100);
    fputs("config keys (in the file as 'key = value', or here as --key VALUE; the command line wins):\n", f);
    const mp_opt *keys = mt_config_keys();
    for (int i = 0; keys[i].name; i++) fprintf(f, "%s--%s", i % 6 ? "  " : "\n  ", keys[i].name);
    fputs("\n\nexit status: 0 done, 1 runtime failure, 2 bad input, 3 memory limit, 4 the run diverged,\n"
          "  128+N stopped by signal N (SIGINT 130, SIGTERM 143: after the last completed step, its\n"
          "  checkpoint with --save)\n", f);
}

/* ---------- the planner's prediction for this config ---------- */

/* The planner's estimate of this very record: the config's settings are the
 * planner's (mt_config.s), its shape the planner's model; only the framework
 * profile is named here. */
static int predict(const mt_config *c, mp_estimate *e, char *name, size_t name_len, char *err)
{
    mp_model m;
    if (memtrain_shape_model(&c->shape, c->s.seq, &m, err)) return -1;
    snprintf(name, name_len, "%s", m.name);
    mp_settings s = c->s;
    s.framework = mp_framework_find("memtrain", err);
    if (!s.framework) return -1;
    if (mp_estimate_run(&m, &s, NULL, e, err)) return -1;
    /* memtrain's own estimate leaves the step's FLOPs out: the speed model's count */
    if (!(e->flops_per_step > 0)) speed_model(&m, &s, NULL, e, e->trainable_params, (double)mp_dp_degree(&s));
    return 0;
}

/* ---------- how long the run will take ----------
 * The planner's FLOPs of a step (planner/estimate/speed.c: forward, backward and
 * recomputation, every rank's) against this CPU's matrix-product rate: measured with
 * cblas_sgemm, or stated (--cpu-gflops). memtrain reaches about MT_CPU_EFFICIENCY of
 * that rate (its attention, norms, 16-bit conversions: measured on the examples of
 * memtrain(1)). A run whose estimate is past LONG_RUN_S says so before it starts. */
#define LONG_RUN_S 180.0
static double now_s(void);
#define MT_CPU_EFFICIENCY 0.7
#define CPU_RATE_BOUND 5e10 /* a run under LONG_RUN_S even at this rate is not measured (the sgemm takes 0.2 s) */

/* fp32 FLOP/s of cblas_sgemm on 512 x 512 matrices, for about 0.2 s (buffers from malloc,
 * not the tagged allocator: not part of the run's measurement). 0 when it cannot tell. */
static double measure_cpu_rate(void)
{
    enum { n = 512 };
    float *a = malloc(sizeof(float) * n * n * 3);
    if (!a) return 0;
    for (size_t i = 0; i < (size_t)n * n * 3; i++) a[i] = (float)(i % 7) * 0.01f;
    double t0 = now_s(), t = 0;
    long reps = 0;
    do {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a, n, a + n * n, n, 0.0f, a + 2 * n * n, n);
        reps++;
        t = now_s() - t0;
    } while (t < 0.2 || reps < 3);
    free(a);
    return t > 0 ? 2.0 * n * n * n * (double)reps / t : 0;
}

static void fmt_duration(double s, char *out, size_t len)
{
    if (s < 120) snprintf(out, len, "%.0f s", s);
    else if (s < 7200) snprintf(out, len, "%.0f min", s / 60);
    else snprintf(out, len, "%.1f hours", s / 3600);
}

/* Before the start (rank 0): a run estimated past LONG_RUN_S says so, and how to shorten it. */
static void warn_if_long(const run_opts *o, const mt_config *c, const mp_estimate *pred, long steps_left)
{
    double flops = pred->flops_per_step * (double)steps_left;
    if (!(flops > 0) || (o->cpu_gflops <= 0 && flops / CPU_RATE_BOUND < LONG_RUN_S)) return;
    double rate = o->cpu_gflops > 0 ? o->cpu_gflops * 1e9 : measure_cpu_rate();
    if (!(rate > 0)) return;
    double step_s = pred->flops_per_step / (rate * MT_CPU_EFFICIENCY), total = step_s * (double)steps_left;
    if (total < LONG_RUN_S) return;
    char a[32], b[32];
    fmt_duration(step_s, a, sizeof a);
    fmt_duration(total, b, sizeof b);
    if (bar_open) fputc('\n', stderr);
    fprintf(stderr, "memtrain: a long run: %.3g FLOPs a step at this CPU's %.3g GFLOP/s (%s) is about %s a step, "
            "%s for %ld steps; to shorten it: fewer --steps, a smaller --batch (%lld) or --seq (%lld), or a smaller "
            "model (--layers, --hidden)\n", pred->flops_per_step, rate / 1e9,
            o->cpu_gflops > 0 ? "--cpu-gflops" : "measured", a, b, steps_left, (long long)c->s.batch,
            (long long)c->s.seq);
    fflush(stderr);
}

/* ---------- measured components, in the planner's names ---------- */

/* Each planner component from the allocator's tags: master weights count as
 * optimizer state (as the ZeRO paper does); backward workspaces, small tables
 * and communication buffers are overhead; the data loader is host memory
 * (reported apart). */
static void measured_components(const mt_mem_stats *st, double comp[MP_NCOMP], bool peak)
{
    const size_t *v = peak ? st->peak : st->cur;
    comp[MP_WEIGHTS] = (double)v[MT_WEIGHTS];
    comp[MP_GRADIENTS] = (double)v[MT_GRADIENTS];
    comp[MP_OPTIMIZER] = (double)(v[MT_MASTER] + v[MT_OPTIMIZER]);
    comp[MP_ACTIVATIONS] = (double)v[MT_ACTIVATIONS];
    comp[MP_OVERHEAD] = (double)(v[MT_WORKSPACE] + v[MT_OTHER] + v[MT_COMM]);
}

/* ---------- metrics CSV (format v1, documented in memtrain(1) and memtop(1)) ---------- */


static void csv_put(FILE *f, const char *v, bool first)
{
    if (!first) fputc(',', f);
    csv_fwrite(f, v, strlen(v));
}

/* The metrics file, appended to as the run goes (so not through the atomic writer):
 * never through a link planted at its path (O_NOFOLLOW), not left to a child
 * (O_CLOEXEC), and a FIFO without a reader refused rather than waited on
 * (O_NONBLOCK, cleared once open). NULL with errno (ELOOP: a symbolic link); *created
 * says whether this call made the file (removed again if another rank fails). */
static FILE *metrics_create(const char *path, bool *created)
{
    const int how = O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    int fd = open(path, how);
    *created = fd < 0 && errno == ENOENT;
    if (*created) fd = open(path, how | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return NULL;
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? fdopen(fd, "a") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

/* Whether the rows so far reached the file (a full disk shows at the flush). */
static bool metrics_ok(FILE *f) { return fflush(f) == 0 && !ferror(f); }

/* The header: the settings line holds the model's shape and every setting the
 * config gave, as the config's rows write them (memtop's run plan reads them
 * back with the same rows, tui/run_plan.c); with several ranks, which rank's
 * file this is. 0, or -1 when the settings cannot be written as words. */
static int metrics_header(FILE *f, const mt_config *c, long steps, double limit, const char *model)
{
    char words[4096], err[MT_KEYS_ERR_LEN];
    if (mt_config_header(c, words, sizeof words, err) < 0) return run_error(EXIT_RUNTIME, "%s", err);
    fprintf(f, "# memtrain metrics v1\n# model: %s\n", model);
    fprintf(f, "# settings: %s\n", words);
    fprintf(f, "# steps: %ld\n# budget_bytes: %.0f\n# device: cpu\n", steps, limit);
    for (int i = 0; i < MP_NMETRIC; i++) csv_put(f, mp_metric_name(i), i == 0);
    fputc('\n', f);
    return 0;
}

static void metrics_row(FILE *f, long step, double t, double loss, double tps, double lr,
                        const mt_mem_stats *st, const mp_estimate *pred)
{
    char v[64];
    double cur[MP_NCOMP], pk[MP_NCOMP];
    measured_components(st, cur, false);
    measured_components(st, pk, true);
    snprintf(v, sizeof v, "%ld", step), csv_put(f, v, true);
    snprintf(v, sizeof v, "%.3f", t), csv_put(f, v, false);
    /* a diverged step logs "nan" or "inf" (memtop reads both), never "-nan" */
    if (isfinite(loss)) snprintf(v, sizeof v, "%.6f", loss);
    else snprintf(v, sizeof v, "%s", isnan(loss) ? "nan" : loss > 0 ? "inf" : "-inf");
    csv_put(f, v, false);
    snprintf(v, sizeof v, "%.1f", tps), csv_put(f, v, false);
    snprintf(v, sizeof v, "%g", lr), csv_put(f, v, false);
    /* totals leave out the data loader (host memory on a GPU), so they are the
     * components' sum now and the device-side peak */
    for (int k = 0; k < MP_NCOMP; k++) snprintf(v, sizeof v, "%.0f", cur[k]), csv_put(f, v, false);
    snprintf(v, sizeof v, "%zu", st->total - st->cur[MT_DATA]), csv_put(f, v, false);
    for (int k = 0; k < MP_NCOMP; k++) snprintf(v, sizeof v, "%.0f", pk[k]), csv_put(f, v, false);
    snprintf(v, sizeof v, "%zu", st->total_peak - st->at_peak[MT_DATA]), csv_put(f, v, false);
    for (int k = 0; k < MP_NCOMP; k++) snprintf(v, sizeof v, "%.0f", pred->peak[k]), csv_put(f, v, false);
    snprintf(v, sizeof v, "%.0f", pred->total_bytes), csv_put(f, v, false);
    snprintf(v, sizeof v, "%zu", mt_rss_bytes()), csv_put(f, v, false);
    fputc('\n', f);
}

/* ---------- the run ---------- */

/* Whether any rank says so: with several ranks every rank decides alike (the
 * memory limit), so none waits in a collective the others left. */
static bool any_rank(bool mine, int ranks) { return ranks > 1 ? mt_dist_sum(mine ? 1 : 0) > 0 : mine; }

/* ---------- stopping on SIGINT/SIGTERM ----------
 * The handler only records the signal (a sig_atomic_t: async-signal-safe). The
 * run asks between steps and, through the trainer, after every layer of the
 * forward and the backward (mt_trainer_set_stop): a stop comes within a layer's
 * time, the step in progress is abandoned, and the run ends as the last completed
 * step left it (its checkpoint with --save), with status 128 + the signal. With
 * several ranks the question is a collective (the largest signal any rank got,
 * MPI_MAX) asked at the same points on every rank, so all stop at the same layer.
 * SA_RESETHAND: a second signal acts at once (the default: the process ends). */
static volatile sig_atomic_t stop_signal;
static int stop_agreed; /* the signal every rank agreed to stop on; 0 while none */
static void on_signal(int sig) { stop_signal = sig; }

static void catch_stops(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Whether to stop now; ctx: the number of ranks. Once agreed it stays so, on every
 * rank alike (no further collective). */
static bool stop_poll(void *ctx)
{
    int ranks = *(const int *)ctx;
    if (!stop_agreed) stop_agreed = ranks > 1 ? mt_dist_max((int)stop_signal) : (int)stop_signal;
    return stop_agreed != 0;
}

static const char *signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void progress(long step, long total, double loss, double tps, double elapsed)
{
    int width = 30, done = total ? (int)(width * step / total) : width;
    double eta = step ? elapsed / step * (total - step) : 0;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < done ? '#' : '.';
    bar[width] = 0;
    fprintf(stdout, "\r[%s] %ld/%ld  loss %.4f  %.0f tok/s  ETA %d:%02d ", bar, step, total, loss, tps,
            (int)eta / 60, (int)eta % 60);
    fflush(stdout);
}

static json_t *components_json(const double v[MP_NCOMP])
{
    json_t *o = json_object();
    for (int k = 0; k < MP_NCOMP; k++) json_object_set_new(o, mp_component_name(k), json_integer((json_int_t)llround(v[k])));
    return o;
}

/* The run's options and the config file, then the keys given as --KEY (the
 * command line wins over the file). -1: go on; else the exit status. */
static int parse_args(int argc, char **argv, run_opts *o, mt_config *k)
{
    char err[MP_OPT_ERR_LEN];
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && o->config && read_config(o->config, k)) return EXIT_USAGE;
        for (int i = 1; i < argc; i++) {
            const char *a = argv[i];
            if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout), 0;
            if (!strcmp(a, "--version")) return printf("memtrain %s (memplan; metrics format v1)\n", MP_VERSION), 0;
            if (strncmp(a, "--", 2)) return usage_error("unexpected argument '%s' (memtrain --help)", a);
            const mp_opt *run = mp_opt_find(run_rows, a + 2), *key = mp_opt_find(mt_config_keys(), a + 2);
            if (!run && !key) return usage_error("unknown option '%s' (memtrain --help)", a);
            if (run && run->kind == MP_OPT_FLAG) {
                o->quiet = true;
                continue;
            }
            if (i + 1 >= argc) return usage_error("option '%s' needs a value", a);
            const char *v = argv[++i];
            if (pass == 0 && run && mp_opt_read(run, v, o, NULL, err)) return usage_error("%s", err);
            if (pass == 1 && key && apply_key(k, key->name, v, NULL)) return EXIT_USAGE;
        }
    }
    return -1;
}

/* The metrics file of this rank: FILE itself with one rank, else the rank
 * before the extension (run.csv: run.rank0.csv, run.rank1.csv, ...). */
static void rank_path(const char *path, int rank, int ranks, char *out, size_t len)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (ranks <= 1) {
        snprintf(out, len, "%s", path);
    } else if (dot && (!slash || dot > slash + 1)) {
        snprintf(out, len, "%.*s.rank%d%s", (int)(dot - path), path, rank, dot);
    } else {
        snprintf(out, len, "%s.rank%d", path, rank);
    }
}

/* What each rank measured, gathered on rank 0 for the table and the report. */
typedef struct rank_stats {
    mt_mem_stats st;
    size_t baseline_rss, peak_rss;
    double allreduce_wait_s;  /* ZeRO-0/1: waited for the gradients' sum after the backward */
} rank_stats;

/* The run's outcome, the same on every rank (the losses are of the global batch). */
typedef struct run_result {
    long steps, first_step, done;
    long nonfinite, first_nonfinite; /* steps whose loss was not finite, and the first of them */
    double tokens_per_s, last_loss;
    double allreduce_wait_s;  /* this rank's, summed over the run's steps */
    json_t *losses;
    int rc;
    int stop_signal;          /* the signal the run stopped on (every rank's), 0 if none */
} run_result;

static double device_peak_of(const mt_mem_stats *st) { return (double)(st->total_peak - st->at_peak[MT_DATA]); }

static void print_table(const rank_stats *rs, const mp_estimate *pred)
{
    char a[32], b[32], c[32];
    double meas[MP_NCOMP], device_peak = device_peak_of(&rs->st);
    measured_components(&rs->st, meas, true);
    printf("\n  %-12s %14s %14s %8s\n", "component", "measured peak", "predicted", "error");
    for (int k = 0; k < MP_NCOMP; k++) {
        double err_pct = pred->peak[k] > 0 ? 100 * (meas[k] - pred->peak[k]) / pred->peak[k] : 0;
        printf("  %-12s %14s %14s %+7.2f%%\n", mp_component_name(k), mp_fmt_gib(meas[k], a, sizeof a),
               mp_fmt_gib(pred->peak[k], b, sizeof b), err_pct);
    }
    printf("  %-12s %14s %14s %+7.2f%%\n", "total peak", mp_fmt_gib(device_peak, a, sizeof a),
           mp_fmt_gib(pred->total_bytes, b, sizeof b), 100 * (device_peak - pred->total_bytes) / pred->total_bytes);
    printf("  %-12s %14s   (peak RSS %s minus the %s at start, from /proc/self/status)\n", "RSS growth",
           mp_fmt_gib((double)(rs->peak_rss - rs->baseline_rss), a, sizeof a),
           mp_fmt_gib((double)rs->peak_rss, b, sizeof b), mp_fmt_gib((double)rs->baseline_rss, c, sizeof c));
    printf("  %-12s %14s   (host: data loader)\n", "data", mp_fmt_gib((double)rs->st.peak[MT_DATA], a, sizeof a));
    if (rs->st.peak[MT_COMM])
        printf("  %-12s %14s   (communication buffers, in overhead)\n", "comm",
               mp_fmt_gib((double)rs->st.peak[MT_COMM], a, sizeof a));
}

/* One rank's report: the fields of the single-process report. */
static json_t *report_json(const mt_config *c, const rank_stats *rs, const mp_estimate *pred, const run_result *res)
{
    const mt_mem_stats *st = &rs->st;
    double meas[MP_NCOMP];
    measured_components(st, meas, true);
    json_t *r = json_object();
    json_object_set_new(r, "measured", components_json(meas));
    json_object_set_new(r, "predicted", components_json(pred->peak));
    json_t *tags = json_object();
    for (int k = 0; k < MT_NTAGS; k++) json_object_set_new(tags, mt_tag_name(k), json_integer((json_int_t)st->peak[k]));
    json_object_set_new(r, "measured_tags", tags);
    json_object_set_new(r, "measured_peak_bytes", json_integer((json_int_t)llround(device_peak_of(st))));
    json_object_set_new(r, "measured_peak_with_data_bytes", json_integer((json_int_t)st->total_peak));
    json_object_set_new(r, "predicted_peak_bytes", json_integer((json_int_t)llround(pred->total_bytes)));
    json_object_set_new(r, "measured_reserved_bytes", json_integer((json_int_t)st->reserved_peak));
    json_object_set_new(r, "measured_data_bytes", json_integer((json_int_t)st->peak[MT_DATA]));
    json_object_set_new(r, "predicted_host_data_bytes", json_integer((json_int_t)llround(pred->host_data_bytes)));
    json_object_set_new(r, "baseline_rss_bytes", json_integer((json_int_t)rs->baseline_rss));
    json_object_set_new(r, "peak_rss_bytes", json_integer((json_int_t)rs->peak_rss));
    json_object_set_new(r, "tokens_per_s", json_real(res->tokens_per_s));
    json_object_set_new(r, "allreduce_wait_s", json_real(rs->allreduce_wait_s));
    json_object_set_new(r, "steps", json_integer(res->steps));
    json_object_set_new(r, "first_step", json_integer(res->first_step));
    json_object_set_new(r, "losses", json_deep_copy(res->losses));
    json_object_set_new(r, "diverged", json_boolean(res->nonfinite > 0));
    json_object_set_new(r, "exit_status", json_integer(res->rc));
    json_object_set_new(r, "stopped_by", res->stop_signal ? json_string(signal_name(res->stop_signal)) : json_null());
    /* the run's config, every key as the config's rows write it (the same on every rank) */
    const mp_opt_group keys = {NULL, mt_config_keys(), (void *)c, NULL};
    json_object_set_new(r, "settings", mp_opt_json(&keys, 1));
    return r;
}

/* The report: rank 0's fields at the top (a single process's report), and with
 * several ranks a `ranks` array of every rank's, rank first. */
static int write_report(const char *path, const mt_config *c, const rank_stats *all, int ranks,
                        const mp_estimate *pred, const run_result *res)
{
    json_t *r = report_json(c, &all[0], pred, res);
    if (ranks > 1) {
        json_t *arr = json_array();
        for (int k = 0; k < ranks; k++) {
            json_t *one = json_object();
            json_object_set_new(one, "rank", json_integer(k));
            json_t *fields = report_json(c, &all[k], pred, res);
            json_object_update(one, fields);
            json_decref(fields);
            json_array_append_new(arr, one);
        }
        json_object_set_new(r, "ranks", arr);
    }
    char *text = json_dumps(r, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
    char merr[MP_ERR_LEN];
    int rc = 0;
    if (!text || mp_write_file_atomic(path, text, strlen(text), merr))
        rc = run_error(1, "%s", text ? merr : "cannot format the report");
    free(text);
    json_decref(r);
    return rc;
}
/* Train until --steps (or a stop every rank agrees on); the steps' losses and
 * speed in res, the exit status in res->rc. */
static void train_loop(mt_trainer *t, const run_opts *o, long steps, const mp_estimate *pred, FILE *mf,
                       const char *metrics_path, run_result *res)
{
    const mt_config *c = mt_trainer_config(t);
    char err[MT_ERR_LEN], a[32], b[32];
    bool tty = isatty(STDOUT_FILENO) && !o->quiet && c->rank == 0;
    bar_open = tty;
    double t0 = now_s(), tokens = 0;
    res->first_step = mt_trainer_steps(t), res->done = 0, res->last_loss = NAN, res->rc = 0, res->allreduce_wait_s = 0;
    res->nonfinite = 0, res->first_nonfinite = 0, res->stop_signal = 0;
    int ranks = c->ranks;
    bool mid_step = false;
    long saved_at = -1; /* the step --save-every last saved */
    if (mt_trainer_set_stop(t, stop_poll, &ranks, o->save_dir != NULL, err)) {
        res->rc = run_error(1, "%s", err);
        if (c->ranks > 1) mt_dist_abort(1);
        return;
    }
    while (mt_trainer_steps(t) < steps && !stop_poll(&ranks)) {
        mt_step_result r;
        if (mt_trainer_step(t, &r, err)) {
            res->rc = run_error(1, "%s", err);
            break;
        }
        if (r.stopped) {
            mid_step = true;
            break;
        }
        res->done++;
        tokens += (double)r.tokens;
        res->allreduce_wait_s += r.allreduce_wait_s;
        res->last_loss = r.loss;
        /* JSON has no NaN: a step whose loss is not finite is a null, never left out */
        json_array_append_new(res->losses, isfinite(r.loss) ? json_real(r.loss) : json_null());
        if (!isfinite(r.loss) && res->nonfinite++ == 0) res->first_nonfinite = r.step;
        double el = now_s() - t0;
        mt_mem_stats st;
        mt_trainer_mem(t, &st);
        if (mf) {
            metrics_row(mf, r.step, el, r.loss, tokens / el, c->own.opt.lr, &st, pred);
            if (!metrics_ok(mf)) {
                res->rc = run_error(EXIT_RUNTIME, "cannot write metrics '%s': %s", metrics_path, strerror(errno));
                break;
            }
        }
        if (tty) progress(r.step, steps, r.loss, tokens / el, el);
        if (o->save_dir && o->save_every && r.step % o->save_every == 0) {
            if (mt_checkpoint_save(t, o->save_dir, err)) {
                res->rc = run_error(1, "%s", err);
                break;
            }
            saved_at = r.step;
        }
        /* the prediction's side: device memory, the data loader's host buffers apart */
        if (any_rank(o->mem_limit > 0 && device_peak_of(&st) > o->mem_limit, c->ranks)) {
            res->rc = run_error(EXIT_MEMLIMIT, "measured memory %s (without the data loader, as predicted) crossed "
                                "--mem-limit %s at step %ld: stopping",
                                mp_fmt_gib(device_peak_of(&st), a, sizeof a),
                                mp_fmt_gib(o->mem_limit, b, sizeof b), r.step);
            break;
        }
    }
    if (tty) fputc('\n', stdout);
    bar_open = false;
    mt_trainer_set_stop(t, NULL, NULL, false, NULL);
    if (res->rc == 1 && c->ranks > 1) mt_dist_abort(1); /* the others may wait in a collective */
    double elapsed = now_s() - t0;
    if (!res->rc && stop_agreed) res->stop_signal = stop_agreed, res->rc = 128 + stop_agreed;
    bool stopped = res->stop_signal != 0;
    long at = mt_trainer_steps(t);
    /* stopped: the state is the last completed step's (an abandoned step left nothing);
     * saved unless the checkpoint already holds it (or no step was taken) */
    bool save = o->save_dir && (!res->rc || (stopped && at > res->first_step && at != saved_at));
    if (stopped && c->rank == 0) {
        char where[96], ck[1200];
        if (mid_step) snprintf(where, sizeof where, "in step %ld of %ld (abandoned)", at + 1, steps);
        else snprintf(where, sizeof where, "after step %ld of %ld", at, steps);
        if (save)
            snprintf(ck, sizeof ck, "saving the checkpoint of step %ld in '%s' (continue with --resume %s)", at,
                     o->save_dir, o->save_dir);
        else if (o->save_dir && at == saved_at)
            snprintf(ck, sizeof ck, "the checkpoint in '%s' already holds step %ld", o->save_dir, at);
        else if (o->save_dir)
            snprintf(ck, sizeof ck, "no step taken in this run: nothing saved");
        else
            snprintf(ck, sizeof ck, "no checkpoint (--save DIR keeps one)");
        fprintf(stderr, "memtrain: %s: stopped %s; %s; exit status %d\n", signal_name(res->stop_signal), where, ck,
                res->rc);
        fflush(stderr);
    }
    if (save && mt_checkpoint_save(t, o->save_dir, err))
        res->rc = run_error(1, "%s", err);
    /* a diverged run is written out as any finished one, and says so in its status */
    if (!res->rc && res->nonfinite)
        res->rc = run_error(EXIT_DIVERGED, "the run diverged: the loss was not finite at %ld of %ld steps, the first "
                            "at step %ld", res->nonfinite, res->done, res->first_nonfinite);
    res->steps = mt_trainer_steps(t);
    res->tokens_per_s = elapsed > 0 ? tokens / elapsed : 0;
}

/* Every rank's statistics to rank 0, which prints the table(s) and writes the
 * report; the exit status. */
static int conclude(const mt_trainer *t, const run_opts *o, const mp_estimate *pred, const run_result *res,
                    size_t baseline_rss)
{
    const mt_config *c = mt_trainer_config(t);
    int rank = c->rank, ranks = c->ranks, rc = res->rc;
    rank_stats mine = {.baseline_rss = baseline_rss, .peak_rss = mt_peak_rss_bytes(),
                       .allreduce_wait_s = res->allreduce_wait_s};
    mt_trainer_mem(t, &mine.st);
    rank_stats *all = rank == 0 ? calloc((size_t)ranks, sizeof *all) : NULL;
    if (rank == 0 && !all) return run_error(1, "out of memory for %d ranks' statistics", ranks);
    if (ranks > 1 && mt_dist_gather(&mine, all, sizeof mine)) rc = run_error(1, "%s", mt_last_error());
    else if (ranks == 1) all[0] = mine;
    if (rank == 0 && !o->quiet) {
        printf("memtrain: %ld steps (%ld this run), %.0f tokens/s, final loss %.4f\n", res->steps, res->done,
               res->tokens_per_s, res->last_loss);
        if (res->nonfinite)
            printf("  the run diverged: %ld of %ld losses were not finite, the first at step %ld\n", res->nonfinite,
                   res->done, res->first_nonfinite);
        if (ranks > 1)
            printf("  %d ranks, ZeRO-%d, global batch %d x %lld x %lld\n", ranks, c->s.zero, ranks, (long long)c->s.batch,
                   (long long)c->s.accum);
        for (int k = 0; k < ranks; k++) {
            if (ranks > 1) printf("\n  rank %d", k);
            print_table(&all[k], pred);
        }
    }
    if (rank == 0 && o->report) {
        int e = write_report(o->report, c, all, ranks, pred, res);
        if (!rc) rc = e;
    }
    free(all);
    /* every rank ends with the same status, once rank 0's report is written: mpirun ends
     * the job at the first rank leaving with a status not 0 (a stop's 128 + N) */
    if (ranks > 1) rc = mt_dist_max(rc);
    return rc;
}

/* An output's folder exists (a report's, a metrics file's, or --save's own parent): a
 * run is not spent to fail at its end. 0, or the usage error's status. */
static int output_dir_ok(const char *what, const char *path, bool is_dir)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    struct stat st;
    if (is_dir && !stat(dir, &st) && !S_ISDIR(st.st_mode))
        return usage_error("%s '%s' is not a directory", what, path);
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') dir[--n] = 0;
    char *slash = strrchr(dir, '/');
    if (!slash) return 0;
    slash[slash == dir] = 0;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        return usage_error("%s '%s': its folder '%s' %s", what, path, dir,
                           access(dir, F_OK) ? "does not exist" : "is not a directory");
    return 0;
}

/* The run on this rank; the exit status. */
static int run(int argc, char **argv, int rank, int ranks)
{
    run_opts o = {0};
    mt_config c;
    mt_config_default(&c);
    size_t baseline_rss = mt_rss_bytes();
    int parsed = parse_args(argc, argv, &o, &c);
    if (parsed >= 0) return parsed;
    char err[MT_ERR_LEN];
    /* the config's global batch is ranks x batch x accum: another launch would change it */
    long long planned = (long long)c.s.gpus;
    if ((c.own.given & MP_PIN_GPUS) && planned != ranks)
        return usage_error("the config is planned for ranks = '%lld' (global batch %lld x %lld x %lld), launched as %d: "
                           "use mpirun -np %lld", planned, planned, (long long)c.s.batch, (long long)c.s.accum,
                           ranks, planned);
    c.rank = rank, c.ranks = ranks;
    if (!mt_dist_built() && c.s.zero > 0)
        return usage_error("zero = '%d' needs MPI, and this memtrain was built without it (install libopenmpi-dev, "
                           "rebuild, launch with mpirun)", c.s.zero);
    if (mt_config_finish(&c, err)) return usage_error("%s", err);
    if (ranks > MT_CHECKPOINT_MAX_RANKS && (o.save_dir || o.resume_dir))
        return usage_error("'%s' with '%d' ranks: checkpoints hold at most %d ranks' shards",
                           o.save_dir ? "--save" : "--resume", ranks, MT_CHECKPOINT_MAX_RANKS);
    /* the byte tokenizer's tokens index the embeddings */
    if (c.shape.vocab < MT_TOKENS)
        return usage_error("vocab = %d: memtrain's byte tokenizer needs at least %d", c.shape.vocab, MT_TOKENS);
    char derr[MT_ERR_LEN];
    const char *data = c.own.data_path;
    if (mt_data_check(data, c.s.loader, mt_config_rows(&c), (size_t)c.s.seq, ranks, derr, sizeof derr))
        return usage_error("%s", derr);
    if (data[0] && access(data, R_OK))
        return usage_error("cannot read data file '%s': %s", data, strerror(errno));
    if ((o.report && output_dir_ok("--report", o.report, false)) ||
        (o.metrics && output_dir_ok("--metrics", o.metrics, false)) ||
        (o.save_dir && output_dir_ok("--save", o.save_dir, true)))
        return EXIT_USAGE;
    if (o.resume_changed && !o.resume_dir) return usage_error("--resume-changed '%s' needs --resume", o.resume_changed);
    if (o.resume_changed && mt_checkpoint_changes_check(o.resume_changed, err)) return usage_error("%s", err);
    if (o.resume_dir && access(o.resume_dir, R_OK))
        return usage_error("cannot open --resume '%s': %s", o.resume_dir, strerror(errno));

    /* The prediction comes first, from the planner, never from what we allocate. */
    mp_estimate pred;
    char perr[MP_ERR_LEN];
    char model_name[MP_NAME_LEN];
    if (predict(&c, &pred, model_name, sizeof model_name, perr)) return usage_error("%s", perr);
    char a[32], b[32];
    if (o.mem_limit > 0 && pred.total_bytes > o.mem_limit) {
        return run_error(EXIT_MEMLIMIT, "the plan is predicted to need %s, above --mem-limit %s: not starting",
                         mp_fmt_gib(pred.total_bytes, a, sizeof a), mp_fmt_gib(o.mem_limit, b, sizeof b));
    }

    catch_stops();
    mt_trainer *t;
    if (mt_trainer_create(&c, &t, err))
        return run_error(1, "%s", err);
    if (o.resume_dir && mt_checkpoint_load(t, o.resume_dir, o.resume_changed, err)) {
        mt_trainer_free(t);
        return run_error(EXIT_USAGE, "%s", err);
    }
    /* --steps counts the steps already taken: a checkpoint past it leaves nothing to run */
    if (mt_trainer_steps(t) > c.own.steps) {
        mt_trainer_free(t);
        return usage_error("checkpoint '%s' is at step %ld, past --steps %lld (which counts the steps already taken)",
                           o.resume_dir, mt_trainer_steps(t), (long long)c.own.steps);
    }
    if (rank == 0) warn_if_long(&o, &c, &pred, (long)c.own.steps - mt_trainer_steps(t));
    FILE *mf = NULL;
    char metrics_path[1024];
    if (o.metrics) rank_path(o.metrics, rank, ranks, metrics_path, sizeof metrics_path);
    bool created = false;
    int merr = o.metrics && !(mf = metrics_create(metrics_path, &created)) ? errno : 0;
    /* this rank's own path: it says why, and every rank stops alike */
    if (merr == ELOOP) rank_error(EXIT_USAGE, "refusing to write metrics '%s': it is a symbolic link", metrics_path);
    else if (merr) rank_error(EXIT_USAGE, "cannot open metrics '%s': %s", metrics_path, strerror(merr));
    if (any_rank(merr != 0, ranks)) {
        if (mf) fclose(mf);
        if (mf && created) unlink(metrics_path); /* another rank's refusal: nothing written here either */
        mt_trainer_free(t);
        return EXIT_USAGE;
    }
    if (mf) {
        if (metrics_header(mf, &c, c.own.steps, o.mem_limit, model_name)) {
            fclose(mf);
            mt_trainer_free(t);
            return EXIT_RUNTIME;
        }
        if (!metrics_ok(mf)) {
            int e = errno;
            fclose(mf);
            mt_trainer_free(t);
            return run_error(EXIT_RUNTIME, "cannot write metrics '%s': %s", metrics_path, strerror(e));
        }
    }

    run_result res = {.losses = json_array()};
    train_loop(t, &o, c.own.steps, &pred, mf, metrics_path, &res);
    int rc = conclude(t, &o, &pred, &res, baseline_rss);
    json_decref(res.losses);
    if (mf) fclose(mf);
    mt_trainer_free(t);
    return rc;
}

int main(int argc, char **argv)
{
    int rank = 0, ranks = 1, launched = mt_dist_launched_size();
    if (launched > 1 && !mt_dist_built()) {
        const char *r = getenv("OMPI_COMM_WORLD_RANK");
        my_rank = r ? atoi(r) : 0;
        return usage_error("launched as one of '%d' ranks, but this memtrain was built without MPI "
                           "(install libopenmpi-dev and rebuild)", launched);
    }
    /* MPI only under a launcher: a plain run stays one process without it */
    if (launched > 1 && mt_dist_start(&argc, &argv, &rank, &ranks)) return run_error(1, "%s", mt_last_error());
    my_rank = rank;
    int rc = run(argc, argv, rank, ranks);
    if (rc == 1 && ranks > 1) mt_dist_abort(1); /* the other ranks may wait in a collective */
    mt_dist_stop();
    return rc;
}
