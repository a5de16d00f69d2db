/*
 * memtrain.c — the reference trainer's command: run a plan written by
 * `memplan --emit memtrain`, measure every component at the allocator, and
 * report measured versus the planner's prediction for the same config.
 *
 *   memplan estimate --model ... --emit memtrain -o plan.cfg
 *   memtrain --config plan.cfg --steps 50 --report r.json --metrics run.csv
 *
 * Exit status: 0 done; 2 bad input (nothing written); 3 the memory limit was
 * hit (refused before the start, or stopped after the step that crossed it);
 * 1 a runtime failure.
 */
#include "memplan.h"
#include "metrics_format.h"
#include "train.h"

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

#define EXIT_USAGE 2
#define EXIT_MEMLIMIT 3

/* True while the progress bar's line is open on the terminal: an error then starts a
 * line of its own. */
static bool bar_open;

/* An error, one line on stderr; returns `code`. */
__attribute__((format(printf, 2, 3))) static int run_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (bar_open)
        fputc('\n', stderr);
    mp_verror("memtrain", NULL, fmt, ap);
    va_end(ap);
    return code;
}
#define usage_error(...) run_error(EXIT_USAGE, __VA_ARGS__)

/* ---------- options: the run's own, then every config key ---------- */

typedef struct run_opts {
    const char *config, *report, *metrics, *save_dir, *resume_dir;
    long steps, save_every;
    double mem_limit;
    bool quiet;
} run_opts;

/* Config keys: the names memplan --emit memtrain writes, also accepted as --key. */
static const char *const config_keys[] = {
    "family", "layers", "hidden", "heads", "kv-heads", "ffn", "vocab", "max-pos", "tied",
    "precision", "optimizer", "adam8-block", "checkpointing", "attention", "batch", "accum",
    "seq", "ce", "ce-chunk", "lora-rank", "lora-targets", "lora-alpha", "quant", "loader",
    "shuffle-buffer", "data", "lr", "weight-decay", "momentum", "seed", "loss-scale", "steps",
    "attn-tile", NULL};

static int parse_long(const char *key, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi)
        return usage_error("invalid value '%s' for %s (an integer from %ld to %ld)", v, key, lo, hi);
    *out = x;
    return 0;
}

static int parse_float(const char *key, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || *end || errno || !(x >= lo && x <= hi))
        return usage_error("invalid value '%s' for %s (from %g to %g)", v, key, lo, hi);
    *out = x;
    return 0;
}

static int bad_choice(const char *v, const char *where, const mp_value *(*value_at)(int))
{
    char choices[256];
    return usage_error("invalid value '%s' for %s (%s)", v, where,
                       mp_choices(value_at, true, " or ", choices, sizeof choices));
}

/* Apply one key = value to the config. `where` names the source for errors. */
static int apply_key(mt_config *c, run_opts *o, bool *tied_given, bool *tied, const char *key,
                     const char *v, const char *where)
{
    long n;
    double d;
#define INTKEY(name, field, lo, hi) \
    if (!strcmp(key, name)) { if (parse_long(where, v, lo, hi, &n)) return EXIT_USAGE; c->field = (int)n; return 0; }
    INTKEY("layers", layers, 1, 1000)
    INTKEY("hidden", hidden, 1, 1 << 16)
    INTKEY("heads", heads, 1, 4096)
    INTKEY("kv-heads", kv_heads, 0, 4096)
    INTKEY("ffn", ffn, 0, 1 << 20)
    INTKEY("vocab", vocab, 1, 1 << 20)
    INTKEY("max-pos", max_pos, 0, 1 << 20)
    INTKEY("batch", batch, 1, 1 << 16)
    INTKEY("accum", accum, 1, 1 << 16)
    INTKEY("seq", seq, 1, 1 << 20)
    INTKEY("ce-chunk", ce_chunk, 1, 1 << 24)
    INTKEY("lora-rank", lora_rank, 0, 1 << 16)
    INTKEY("shuffle-buffer", shuffle_buffer, 1, 1 << 24)
    INTKEY("attn-tile", attn_tile, 1, 4096)
#undef INTKEY
    if (!strcmp(key, "adam8-block")) {
        if (parse_long(where, v, 1, 1 << 20, &n)) return EXIT_USAGE;
        c->opt.block = (int)n;
        return 0;
    }
    if (!strcmp(key, "steps")) return parse_long(where, v, 0, 100000000, &o->steps) ? EXIT_USAGE : 0;
    if (!strcmp(key, "seed")) {
        if (parse_long(where, v, 0, 2147483647, &n)) return EXIT_USAGE;
        c->seed = (uint64_t)n;
        return 0;
    }
#define FLOATKEY(name, lvalue, lo, hi) \
    if (!strcmp(key, name)) { if (parse_float(where, v, lo, hi, &d)) return EXIT_USAGE; lvalue = (float)d; return 0; }
    FLOATKEY("lr", c->opt.lr, 0, 10)
    FLOATKEY("weight-decay", c->opt.weight_decay, 0, 10)
    FLOATKEY("momentum", c->opt.momentum, 0, 1)
    FLOATKEY("lora-alpha", c->lora_alpha, 0, 1e6)
    FLOATKEY("loss-scale", c->loss_scale, 1, 1e30)
#undef FLOATKEY
    if (!strcmp(key, "tied")) {
        if (strcmp(v, "0") && strcmp(v, "1")) return usage_error("invalid value '%s' for %s (0 or 1)", v, where);
        *tied_given = true, *tied = v[0] == '1';
        return 0;
    }
    if (!strcmp(key, "data")) {
        if (strlen(v) >= sizeof c->data_path) return usage_error("path too long for %s", where);
        snprintf(c->data_path, sizeof c->data_path, "%s", v);
        return 0;
    }
    if (!strcmp(key, "family")) {
        if (mt_family_parse(v, &c->family)) return usage_error("invalid value '%s' for %s (gpt2 or llama)", v, where);
        return 0;
    }
    if (!strcmp(key, "lora-targets")) {
        if (mp_lora_targets_parse(v, &c->lora_targets))
            return usage_error("invalid value '%s' for %s (q,k,v,o,gate,up,down, attn, mlp or all)", v, where);
        return 0;
    }
/* A setting: any spelling of the planner's vocabulary, among the values memtrain implements. */
#define SETTINGKEY(name, fn, type, field)                                          \
    if (!strcmp(key, name)) {                                                      \
        type x_;                                                                   \
        if (mp_##fn##_parse(v, &x_) || !mp_##fn##_value((int)x_)->memtrain)        \
            return bad_choice(v, where, mp_##fn##_value);                          \
        c->field = x_;                                                             \
        return 0;                                                                  \
    }
    SETTINGKEY("precision", precision, mp_precision, precision)
    SETTINGKEY("optimizer", optimizer, mp_optimizer, optimizer)
    SETTINGKEY("checkpointing", ckpt, mp_ckpt, checkpointing)
    SETTINGKEY("attention", attention, mp_attention, attention)
    SETTINGKEY("ce", ce, mp_ce, ce)
    SETTINGKEY("quant", quant, mp_quant, quant)
    SETTINGKEY("loader", loader, mp_loader, loader)
#undef SETTINGKEY
    return usage_error("unknown key '%s' in %s", key, where);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
    return s;
}

static int read_config(const char *path, mt_config *c, run_opts *o, bool *tied_given, bool *tied)
{
    FILE *f = fopen(path, "r");
    if (!f) return usage_error("cannot open config '%s': %s", path, strerror(errno));
    char line[1024];
    int lineno = 0, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *s = trim(line);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = usage_error("config '%s' line %d: expected 'key = value', got '%s'", path, lineno, s);
            break;
        }
        *eq = 0;
        char where[600];
        snprintf(where, sizeof where, "config '%.400s' line %d", path, lineno);
        rc = apply_key(c, o, tied_given, tied, trim(s), trim(eq + 1), where);
    }
    fclose(f);
    return rc;
}

static void usage(FILE *f)
{
    fputs("usage: memtrain [--config FILE] [--steps N] [--report FILE.json] [--metrics FILE.csv]\n"
          "                [--save DIR --save-every N] [--resume DIR] [--mem-limit SIZE] [--quiet]\n"
          "                [--KEY VALUE ...]\n"
          "Trains a decoder-only transformer on the CPU (OpenBLAS) and reports the memory each\n"
          "component allocated next to memplan's prediction (--framework memtrain).\n\n"
          "run options:\n"
          "  --config FILE      a plan written by 'memplan ... --emit memtrain -o FILE'\n"
          "  --steps N          optimizer steps (default 20)\n"
          "  --report FILE      JSON report: measured, predicted, losses, tokens/s\n"
          "  --metrics FILE     one CSV row per step, flushed (the format memtop follows)\n"
          "  --save DIR         write checkpoints into DIR (atomically, with a checksum)\n"
          "  --save-every N     a checkpoint every N steps (default: at the end only)\n"
          "  --resume DIR       continue from DIR's checkpoint, bit-identically\n"
          "  --mem-limit SIZE   refuse plans predicted above SIZE; stop if measured crosses it\n"
          "  --quiet            no progress bar or table\n"
          "  --version          the version\n"
          "config keys (in the file as 'key = value', or here as --key VALUE; the command line wins):\n",
          f);
    for (int i = 0; config_keys[i]; i++) fprintf(f, "%s--%s", i % 6 ? "  " : "\n  ", config_keys[i]);
    fputs("\n\nexit status: 0 done, 1 runtime failure, 2 bad input, 3 memory limit\n", f);
}

/* ---------- the planner's prediction for this config ---------- */

static int predict(const mt_config *c, bool tied, mp_estimate *e, char *name, size_t name_len, char *err)
{
    mp_model m;
    memset(&m, 0, sizeof m);
    if (mp_model_preset(&m, c->family == MT_GPT2 ? "gpt2" : "llama", err)) return -1;
    m.layers = c->layers, m.hidden = c->hidden, m.heads = c->heads, m.kv_heads = c->kv_heads;
    m.ffn = c->ffn, m.vocab = c->vocab, m.max_pos = c->max_pos ? c->max_pos : c->seq;
    m.tied = tied;
    snprintf(m.name, sizeof m.name, "memtrain-%s-%dx%d", mt_family_name(c->family), c->layers, c->hidden);
    if (mp_model_finish(&m, err)) return -1;
    snprintf(name, name_len, "%s", m.name);
    mp_settings s;
    mp_settings_default(&s, &m);
    s.framework = mp_framework_find("memtrain", err);
    if (!s.framework) return -1;
    s.precision = c->precision, s.optimizer = c->optimizer, s.adam8_block = c->opt.block;
    s.checkpointing = c->checkpointing, s.attention = c->attention;
    s.batch = c->batch, s.accum = c->accum, s.seq = c->seq;
    s.ce = c->ce, s.ce_chunk = c->ce_chunk;
    s.lora_rank = c->lora_rank, s.lora_targets = c->lora_targets;
    s.quant = c->quant, s.loader = c->loader;
    s.shuffle_buffer = c->shuffle_buffer;
    return mp_estimate_run(&m, &s, NULL, e, err);
}

/* ---------- measured components, in the planner's names ---------- */

/* Each planner component from the allocator's tags: master weights count as
 * optimizer state (as the ZeRO paper does); backward workspaces and small
 * tables are overhead; the data loader is host memory (reported apart). */
static void measured_components(const mt_mem_stats *st, double comp[MP_NCOMP], bool peak)
{
    const size_t *v = peak ? st->peak : st->cur;
    comp[MP_WEIGHTS] = (double)v[MT_WEIGHTS];
    comp[MP_GRADIENTS] = (double)v[MT_GRADIENTS];
    comp[MP_OPTIMIZER] = (double)(v[MT_MASTER] + v[MT_OPTIMIZER]);
    comp[MP_ACTIVATIONS] = (double)v[MT_ACTIVATIONS];
    comp[MP_OVERHEAD] = (double)(v[MT_WORKSPACE] + v[MT_OTHER]);
}

/* ---------- checkpoints ---------- */

#define CKPT_MAGIC "MEMTRAIN"
#define CKPT_VERSION 1u
#define CKPT_FILE "checkpoint.bin"

typedef struct ckpt_header {
    char magic[8];
    uint32_t version, reserved;
    uint64_t config_hash, step, payload_len, checksum;
} ckpt_header;

/* FNV-1a, 64 bit: detects truncation and flipped bytes (not an adversary). */
static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* The configuration's identity: every field that shapes the state. Settings
 * enter by name, so the identity does not depend on the enums' numbering. */
static uint64_t config_hash(const mt_config *c)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%d %d %d %d %d %d %d %d %d %d %d %s %s %s %s %s %d %u %s %s %d %d",
                     c->family, c->layers, c->hidden, c->heads, c->kv_heads, c->ffn, c->vocab, c->max_pos,
                     c->batch, c->seq, c->accum, mp_precision_name(c->precision), mp_attention_name(c->attention),
                     mp_ckpt_name(c->checkpointing), mp_ce_name(c->ce), mp_optimizer_name(c->optimizer),
                     c->lora_rank, c->lora_targets, mp_quant_name(c->quant), mp_loader_name(c->loader),
                     c->shuffle_buffer, c->opt.block);
    return fnv1a(buf, (size_t)n, 1469598103934665603ull);
}

static int save_checkpoint(mt_trainer *t, const char *dir, char *err)
{
    if (mkdir(dir, 0755) && errno != EEXIST) {
        snprintf(err, MT_ERR_LEN, "cannot create '%.200s': %s", dir, strerror(errno));
        return -1;
    }
    size_t n = mt_trainer_state_size(t);
    uint8_t *buf = malloc(sizeof(ckpt_header) + n);
    if (!buf) {
        snprintf(err, MT_ERR_LEN, "out of memory for a %zu-byte checkpoint", n);
        return -1;
    }
    ckpt_header h = {.version = CKPT_VERSION, .config_hash = config_hash(mt_trainer_config(t)),
                     .step = (uint64_t)mt_trainer_steps(t), .payload_len = n};
    memcpy(h.magic, CKPT_MAGIC, 8);
    if (mt_trainer_state_save(t, buf + sizeof h, n, err)) {
        free(buf);
        return -1;
    }
    h.checksum = fnv1a(buf + sizeof h, n, 1469598103934665603ull);
    memcpy(buf, &h, sizeof h);
    char path[1024], merr[MP_ERR_LEN];
    snprintf(path, sizeof path, "%.1000s/" CKPT_FILE, dir);
    int rc = mp_write_file_atomic(path, (const char *)buf, sizeof h + n, merr);
    free(buf);
    if (rc) {
        snprintf(err, MT_ERR_LEN, "%s", merr);
        return -1;
    }
    /* make the rename itself durable */
    int dfd = open(dir, O_RDONLY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

static int load_checkpoint(mt_trainer *t, const char *dir, char *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%.1000s/" CKPT_FILE, dir);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, MT_ERR_LEN, "cannot open checkpoint '%.200s': %s", path, strerror(errno));
        return -1;
    }
    ckpt_header h;
    int rc = -1;
    uint8_t *buf = NULL;
    if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, CKPT_MAGIC, 8) || h.version != CKPT_VERSION) {
        snprintf(err, MT_ERR_LEN, "checkpoint '%.180s' is not a memtrain checkpoint (or is truncated)", path);
        goto out;
    }
    if (h.config_hash != config_hash(mt_trainer_config(t))) {
        snprintf(err, MT_ERR_LEN, "checkpoint '%.200s' was written for a different configuration", path);
        goto out;
    }
    if (h.payload_len != mt_trainer_state_size(t) || !(buf = malloc(h.payload_len ? h.payload_len : 1))) {
        snprintf(err, MT_ERR_LEN, "checkpoint '%.200s' has the wrong size for this configuration", path);
        goto out;
    }
    if (fread(buf, 1, h.payload_len, f) != h.payload_len || fgetc(f) != EOF) {
        snprintf(err, MT_ERR_LEN, "checkpoint '%.200s' is truncated or has trailing bytes", path);
        goto out;
    }
    if (fnv1a(buf, h.payload_len, 1469598103934665603ull) != h.checksum) {
        snprintf(err, MT_ERR_LEN, "checkpoint '%.200s' fails its checksum: refusing to load it", path);
        goto out;
    }
    rc = mt_trainer_state_load(t, buf, h.payload_len, err);
out:
    free(buf);
    fclose(f);
    return rc;
}

/* ---------- metrics CSV (format v1, documented in memtrain(1) and memtop(1)) ---------- */


static void csv_put(FILE *f, const char *v, bool first)
{
    if (!first) fputc(',', f);
    csv_fwrite(f, v, strlen(v));
}

static FILE *metrics_open(const char *path, const mt_config *c, long steps, double limit, const char *model)
{
    FILE *f = fopen(path, "a");
    if (!f) return NULL;
    fprintf(f, "# memtrain metrics v1\n# model: %s\n", model);
    fprintf(f, "# settings: family=%s precision=%s optimizer=%s checkpointing=%s attention=%s batch=%d "
               "accum=%d seq=%d ce=%s lora-rank=%d quant=%s loader=%s\n",
            mt_family_name(c->family), mp_precision_name(c->precision), mp_optimizer_name(c->optimizer),
            mp_ckpt_name(c->checkpointing), mp_attention_name(c->attention), c->batch, c->accum, c->seq,
            mp_ce_name(c->ce), c->lora_rank, mp_quant_name(c->quant), mp_loader_name(c->loader));
    fprintf(f, "# steps: %ld\n# budget_bytes: %.0f\n# device: cpu\n", steps, limit);
    for (int i = 0; i < MP_NMETRIC; i++) csv_put(f, mp_metric_name(i), i == 0);
    fputc('\n', f);
    fflush(f);
    return f;
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
    snprintf(v, sizeof v, "%.6f", loss), csv_put(f, v, false);
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
    fflush(f);
}

/* ---------- the run ---------- */

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

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

int main(int argc, char **argv)
{
    run_opts o = {.steps = 20};
    mt_config c;
    mt_config_default(&c);
    bool tied_given = false, tied = false;
    size_t baseline_rss = mt_rss_bytes();

    /* Pass 1: the run's own options and the config file; pass 2: key overrides. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--version")) {
            puts("memtrain 1.0 (memplan; metrics format v1)");
            return 0;
        }
        if (strncmp(a, "--", 2)) return usage_error("unexpected argument '%s' (memtrain --help)", a);
        if (!strcmp(a, "--quiet")) {
            o.quiet = true;
            continue;
        }
        if (i + 1 >= argc) return usage_error("option '%s' needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--config")) o.config = v;
        else if (!strcmp(a, "--report")) o.report = v;
        else if (!strcmp(a, "--metrics")) o.metrics = v;
        else if (!strcmp(a, "--save")) o.save_dir = v;
        else if (!strcmp(a, "--resume")) o.resume_dir = v;
        else if (!strcmp(a, "--save-every")) {
            if (parse_long("--save-every", v, 1, 100000000, &o.save_every)) return EXIT_USAGE;
        } else if (!strcmp(a, "--mem-limit")) {
            char err[MP_ERR_LEN];
            if (mp_parse_size(v, &o.mem_limit, NULL, err)) return usage_error("%s for --mem-limit", err);
        } else {
            bool known = false;
            for (int k = 0; config_keys[k]; k++) known |= !strcmp(a + 2, config_keys[k]);
            if (!known) return usage_error("unknown option '%s' (memtrain --help)", a);
        }
    }
    if (o.config && read_config(o.config, &c, &o, &tied_given, &tied)) return EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quiet")) continue;
        const char *v = argv[++i];
        for (int k = 0; config_keys[k]; k++)
            if (!strcmp(a + 2, config_keys[k])) {
                char where[80];
                snprintf(where, sizeof where, "--%s", config_keys[k]);
                if (apply_key(&c, &o, &tied_given, &tied, config_keys[k], v, where)) return EXIT_USAGE;
            }
    }
    char err[MT_ERR_LEN];
    if (mt_config_finish(&c, err)) return usage_error("%s", err);
    bool family_tied = c.family == MT_GPT2;
    if (tied_given && tied != family_tied)
        return usage_error("tied = %d does not match memtrain's %s family (%s head)", tied, mt_family_name(c.family),
                           family_tied ? "tied" : "untied");
    if (c.data_path[0] && access(c.data_path, R_OK))
        return usage_error("cannot read data file '%s': %s", c.data_path, strerror(errno));
    if (o.resume_dir && access(o.resume_dir, R_OK))
        return usage_error("cannot open --resume '%s': %s", o.resume_dir, strerror(errno));

    /* The prediction comes first, from the planner, never from what we allocate. */
    mp_estimate pred;
    char perr[MP_ERR_LEN];
    char model_name[MP_NAME_LEN];
    if (predict(&c, family_tied, &pred, model_name, sizeof model_name, perr)) return usage_error("%s", perr);
    char a[32], b[32];
    if (o.mem_limit > 0 && pred.total_bytes > o.mem_limit) {
        return run_error(EXIT_MEMLIMIT, "the plan is predicted to need %s, above --mem-limit %s: not starting",
                         mp_fmt_gib(pred.total_bytes, a, sizeof a), mp_fmt_gib(o.mem_limit, b, sizeof b));
    }

    mt_trainer *t;
    if (mt_trainer_create(&c, &t, err))
        return run_error(1, "%s", err);
    if (o.resume_dir && load_checkpoint(t, o.resume_dir, err)) {
        mt_trainer_free(t);
        return run_error(EXIT_USAGE, "%s", err);
    }
    FILE *mf = NULL;
    if (o.metrics && !(mf = metrics_open(o.metrics, &c, o.steps, o.mem_limit, model_name))) {
        int e = errno;
        mt_trainer_free(t);
        return run_error(EXIT_USAGE, "cannot open metrics '%s': %s", o.metrics, strerror(e));
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    bool tty = isatty(STDOUT_FILENO) && !o.quiet;
    bar_open = tty;
    json_t *losses = json_array();
    double t0 = now_s(), tokens = 0, last_loss = NAN;
    long first_step = mt_trainer_steps(t), done = 0;
    int rc = 0;
    while (mt_trainer_steps(t) < o.steps && !stop_requested) {
        mt_step_result r;
        if (mt_trainer_step(t, &r, err)) {
            rc = run_error(1, "%s", err);
            break;
        }
        done++;
        tokens += (double)r.tokens;
        last_loss = r.loss;
        json_array_append_new(losses, json_real(r.loss));
        double el = now_s() - t0;
        mt_mem_stats st;
        mt_trainer_mem(t, &st);
        if (mf) metrics_row(mf, r.step, el, r.loss, tokens / el, c.opt.lr, &st, &pred);
        if (tty) progress(r.step, o.steps, r.loss, tokens / el, el);
        if (o.save_dir && o.save_every && r.step % o.save_every == 0 && save_checkpoint(t, o.save_dir, err)) {
            rc = run_error(1, "%s", err);
            break;
        }
        if (o.mem_limit > 0 && (double)st.total_peak > o.mem_limit) {
            rc = run_error(EXIT_MEMLIMIT, "measured memory %s crossed --mem-limit %s at step %ld: stopping",
                           mp_fmt_gib((double)st.total_peak, a, sizeof a), mp_fmt_gib(o.mem_limit, b, sizeof b),
                           r.step);
            break;
        }
    }
    if (tty) fputc('\n', stdout);
    bar_open = false;
    double elapsed = now_s() - t0;
    if (!rc && o.save_dir && save_checkpoint(t, o.save_dir, err))
        rc = run_error(1, "%s", err);
    mt_mem_stats st;
    mt_trainer_mem(t, &st);
    double meas[MP_NCOMP];
    measured_components(&st, meas, true);
    size_t peak_rss = mt_peak_rss_bytes();
    /* On a GPU the loader's buffers are host memory: the device-side peak leaves them out. */
    double device_peak = (double)(st.total_peak - st.at_peak[MT_DATA]);

    if (!o.quiet) {
        printf("memtrain: %ld steps (%ld this run), %.0f tokens/s, final loss %.4f\n", mt_trainer_steps(t), done,
               elapsed > 0 ? tokens / elapsed : 0, last_loss);
        printf("\n  %-12s %14s %14s %8s\n", "component", "measured peak", "predicted", "error");
        for (int k = 0; k < MP_NCOMP; k++) {
            double err_pct = pred.peak[k] > 0 ? 100 * (meas[k] - pred.peak[k]) / pred.peak[k] : 0;
            printf("  %-12s %14s %14s %+7.2f%%\n", mp_component_name(k), mp_fmt_gib(meas[k], a, sizeof a),
                   mp_fmt_gib(pred.peak[k], b, sizeof b), err_pct);
        }
        printf("  %-12s %14s %14s %+7.2f%%\n", "total peak", mp_fmt_gib(device_peak, a, sizeof a),
               mp_fmt_gib(pred.total_bytes, b, sizeof b), 100 * (device_peak - pred.total_bytes) / pred.total_bytes);
        printf("  %-12s %14s   (peak RSS %s minus the %s at start, from /proc/self/status)\n",
               "RSS growth", mp_fmt_gib((double)(peak_rss - baseline_rss), a, sizeof a),
               mp_fmt_gib((double)peak_rss, b, sizeof b), mp_fmt_gib((double)baseline_rss, perr, sizeof perr));
        printf("  %-12s %14s   (host: data loader)\n", "data", mp_fmt_gib((double)st.peak[MT_DATA], a, sizeof a));
    }
    if (o.report) {
        json_t *r = json_object();
        json_object_set_new(r, "measured", components_json(meas));
        json_object_set_new(r, "predicted", components_json(pred.peak));
        json_t *tags = json_object();
        for (int k = 0; k < MT_NTAGS; k++) json_object_set_new(tags, mt_tag_name(k), json_integer((json_int_t)st.peak[k]));
        json_object_set_new(r, "measured_tags", tags);
        json_object_set_new(r, "measured_peak_bytes", json_integer((json_int_t)llround(device_peak)));
        json_object_set_new(r, "measured_peak_with_data_bytes", json_integer((json_int_t)st.total_peak));
        json_object_set_new(r, "predicted_peak_bytes", json_integer((json_int_t)llround(pred.total_bytes)));
        json_object_set_new(r, "measured_reserved_bytes", json_integer((json_int_t)st.reserved_peak));
        json_object_set_new(r, "measured_data_bytes", json_integer((json_int_t)st.peak[MT_DATA]));
        json_object_set_new(r, "predicted_host_data_bytes", json_integer((json_int_t)llround(pred.host_data_bytes)));
        json_object_set_new(r, "baseline_rss_bytes", json_integer((json_int_t)baseline_rss));
        json_object_set_new(r, "peak_rss_bytes", json_integer((json_int_t)peak_rss));
        json_object_set_new(r, "tokens_per_s", json_real(elapsed > 0 ? tokens / elapsed : 0));
        json_object_set_new(r, "steps", json_integer(mt_trainer_steps(t)));
        json_object_set_new(r, "first_step", json_integer(first_step));
        json_object_set_new(r, "losses", losses);
        losses = NULL;
        json_object_set_new(r, "exit_status", json_integer(rc));
        char *text = json_dumps(r, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
        char merr[MP_ERR_LEN];
        if (!text || mp_write_file_atomic(o.report, text, strlen(text), merr)) {
            int e = run_error(1, "%s", text ? merr : "cannot format the report");
            if (!rc) rc = e;
        }
        free(text);
        json_decref(r);
    }
    json_decref(losses);
    if (mf) fclose(mf);
    mt_trainer_free(t);
    return rc;
}
