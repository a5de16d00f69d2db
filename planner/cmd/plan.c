/* plan.c — memplan plan (the default), estimate, and plan --solve. */
#include "cli.h"
#include "common/errors.h"
#include "common/units.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <errno.h>
#include <jansson.h>
#include <sys/stat.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *task_label(mp_task t)
{
    return t == MP_TASK_FULL ? "full fine-tuning" : t == MP_TASK_LORA ? "LoRA (16-bit or fp32 base)"
                                                                       : "QLoRA (quantised base)";
}

/* -o names a bundle's folder for a target that writes bundles, slash or not
 * (an existing directory, or one created here, one level: 2), else a file (0).
 * 1: an existing directory; -1 after the error. */
static int output_is_dir(const char *path, const mp_emit_target *t)
{
    struct stat st;
    if (!mp_emit_target_bundles(t)) return 0;
    if (!stat(path, &st)) {
        if (S_ISDIR(st.st_mode)) return 1;
        cli_error("-o '%s' is a file, and --emit %s writes a bundle folder (its files and launch.sh): name a "
                  "folder, or take the one file from standard output", path, mp_emit_target_name(t));
        return -1;
    }
    if (mkdir(path, 0755) && errno != EEXIST) {
        cli_error("cannot create the bundle folder '%s': %s", path, strerror(errno));
        return -1;
    }
    return 2;
}

/* Write the emitted config to -o FILE atomically, the bundle to -o DIR, or to stdout. */
static int do_emit(cli *c, const mp_settings *s, const mp_estimate *e)
{
    char err[MP_ERR_LEN], *text = NULL;
    const mp_plan p = {&c->model, s, e};
    int dir = c->out_path ? output_is_dir(c->out_path, c->target) : 0;
    if (dir < 0) return EXIT_USAGE;
    if (dir) {
        if (!mp_emit_bundle(c->target, c->out_path, &p, err)) return 0;
        if (dir == 2) rmdir(c->out_path); /* leave nothing behind */
        return cli_error("%s", err);
    }
    if (c->out_path) return mp_emit_file(c->target, &p, c->out_path, err) ? cli_error("%s", err) : 0;
    if (mp_emit(c->target, &p, &text, err)) return cli_error("%s", err);
    fputs(text, stdout);
    free(text);
    return 0;
}

static int check_output_args(const cli *c)
{
    char list[128];
    if (c->out_path && !c->emit) return cli_error("-o needs --emit (%s)", mp_emit_target_list(list, sizeof list));
    return 0;
}

int cmd_estimate(cli *c)
{
    char err[MP_ERR_LEN];
    if (check_output_args(c)) return EXIT_USAGE;
    mp_estimate e;
    if (mp_estimate_run(&c->model, &c->s, c->have_gpu ? &c->gpu : NULL, &e, err))
        return cli_error("%s", err);
    bool fits = c->have_gpu && mp_fits(&e, c->gpu.mem_bytes, c->headroom);
    if (!host_fits(c, &e)) fits = false; /* said on the host lines */
    c->show_settings = true;
    stack_note(c, &c->s, fits);
    /* the status is the verdict's, whether the config goes to stdout or to -o */
    int verdict = (c->have_gpu || c->host_ram > 0) && !fits ? EXIT_NOFIT : 0;
    if (c->emit) {
        int rc = do_emit(c, &c->s, &e);
        if (rc) return rc;
        if (!c->out_path) return verdict;
    }
    if (c->format == FMT_JSON) print_estimate_json(stdout, c, &c->s, &e, fits, NULL);
    else if (c->format == FMT_CSV) {
        print_csv_header(stdout);
        print_csv_row(stdout, c, &c->s, &e, fits);
    } else print_estimate_text(stdout, c, &c->s, &e);
    return verdict;
}

/* The search's options as plan runs them: a target's plans only, when --emit names one. */
static mp_search_opts plan_opts(const cli *c)
{
    mp_search_opts opts = c->opts;
    if (c->target) {
        /* only plans the target writes: the plan printed is the plan that runs */
        unsigned prec = mp_emit_target_precisions(c->target), opt = mp_emit_target_optimizers(c->target);
        if (prec) opts.only_precisions = (opts.only_precisions ? opts.only_precisions : ~0u) & prec;
        if (opt) opts.only_optimizers = (opts.only_optimizers ? opts.only_optimizers : ~0u) & opt;
        opts.accept = mp_emit_accept, opts.accept_ctx = c->target;
    }
    return opts;
}

/* The hint's GPU count: the smallest power of two above the count asked (up to
 * 64, table's limit) on which the search the user would run with --gpus N
 * --task T added (every other flag as given, the same host RAM limit) fits a
 * plan, so that following the hint fits; *found is that plan. 0: none. */
static int64_t gpus_needed(const cli *c, mp_task t, mp_candidate *found)
{
    char err[MP_ERR_LEN];
    int64_t unit = c->s.tp * c->s.pp > 0 ? c->s.tp * c->s.pp : 1;
    for (int64_t g = 2 * (c->s.gpus / unit > 0 ? c->s.gpus / unit : 1); g <= 64; g *= 2) {
        mp_settings b = c->s;
        b.gpus = g * unit;
        mp_search_opts o = plan_opts(c);
        o.task = t;
        o.pinned |= MP_PIN_GPUS;
        o.best_only = true, o.want_least = false;
        o.any_fits = !c->explain; /* --explain names the plan's sharding: the best one's */
        mp_search_result r;
        if (mp_search(&c->model, &b, &c->gpu, &o, &r, err)) continue;
        bool fits = r.n && r.cands[0].fits;
        if (fits) *found = r.cands[0];
        mp_search_free(&r);
        if (fits) return g * unit;
    }
    return 0;
}

/* What the same settings do under hf, the Hugging Face Trainer + PEFT stack
 * most people run, when the user named no stack and it disagrees about fitting:
 * one line under the verdict (c->stack_note), else empty. */
void stack_note(cli *c, const mp_settings *s, bool fits)
{
    char err[MP_ERR_LEN], a[32];
    c->stack_note[0] = 0;
    if (c->framework || !c->have_gpu) return;
    const mp_framework *hf = mp_framework_find("hf", err);
    if (!hf) return;
    mp_settings t = *s;
    t.framework = hf;
    mp_estimate e;
    if (mp_estimate_run(&c->model, &t, &c->gpu, &e, err)) {
        if (fits)
            snprintf(c->stack_note, sizeof c->stack_note,
                     "          under --framework hf (Trainer + PEFT, most run) it does not run");
        return;
    }
    bool hf_fits = mp_fits(&e, c->gpu.mem_bytes, c->headroom) && host_fits(c, &e);
    if (hf_fits == fits) return;
    snprintf(c->stack_note, sizeof c->stack_note, "          under --framework hf (Trainer + PEFT, most run): %s, %s",
             mp_fmt_gib(e.device_bytes, a, sizeof a), hf_fits ? "fits" : "does not fit");
}


/* How a plan found for the hint shards and offloads: "ZeRO-3, offload optimizer". */
static const char *sharding_words(const mp_settings *s, char *buf, size_t len)
{
    size_t o = 0;
    const char *task = s->lora_rank == 0 ? "" : s->quant != MP_QUANT_NONE ? "QLoRA" : "LoRA";
    o += (size_t)snprintf(buf + o, len - o, "%s", task);
    if (s->zero) o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%sZeRO-%d", o ? ", " : "", s->zero);
    else o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%sdata parallel", o ? ", " : "");
    if (s->offload != MP_OFFLOAD_NONE && o < len)
        snprintf(buf + o, len - o, ", offload %s", mp_offload_name(s->offload));
    return buf;
}

static void explain_miss(FILE *f, const cli *c, const mp_candidate *best_of_task)
{
    char a[32], b[32], d[96], lim[160], sum[256];
    const mp_candidate *k = best_of_task;
    double usable = c->gpu.mem_bytes * (1 - c->headroom);
    int big = 0;
    const char *label = c->explain ? task_label(k->task) : k->task == MP_TASK_FULL ? "full" : k->task == MP_TASK_LORA ? "LoRA" : "QLoRA";
    int w = c->explain ? 27 : 6;
    if (k->device_bytes <= usable) { /* it fits the GPU: the host RAM ruled it out */
        fprintf(f, "  %-*s fits the GPU (%s), but a node needs %s of host RAM,\n  %-*s over %s\n", w, label,
                mp_fmt_gib(k->device_bytes, a, sizeof a), mp_fmt_gib(k->host_node_bytes, b, sizeof b), w, "",
                host_limit_text(c, &c->gpu, lim, sizeof lim));
        if (c->explain) fprintf(f, "  %-*s as: %s\n", w, "", plan_summary(&k->s, sum, sizeof sum));
        return;
    }
    for (int i = 1; i < MP_NCOMP; i++)
        if (k->at_peak[i] > k->at_peak[big]) big = i;
    if (c->explain) {
        fprintf(f, "  %-27s needs at least %s (%.1fx the usable %s), even as: %s\n", label,
                mp_fmt_gib(k->device_bytes, a, sizeof a), k->device_bytes / usable,
                mp_fmt_gib(usable, b, sizeof b), plan_summary(&k->s, sum, sizeof sum));
        fprintf(f, "  %-27s largest part: %s %s; would fit on a GPU of %s\n", "",
                mp_component_name(big), mp_fmt_gib(k->at_peak[big], a, sizeof a),
                mp_fmt_gib(k->device_bytes / (1 - c->headroom), b, sizeof b));
    }
    mp_candidate found;
    int64_t g = gpus_needed(c, k->task, &found);
    if (!c->explain) { /* one line */
        fprintf(f, "  %-6s needs %s, %.1fx the usable", label, mp_fmt_gib(k->device_bytes, a, sizeof a),
                k->device_bytes / usable);
        if (g) fprintf(f, "; fits with --gpus %lld --task %s\n", (long long)g, mp_task_name(k->task));
        else fprintf(f, " (%s %s)\n", mp_component_name(big), mp_fmt_gib(k->at_peak[big], b, sizeof b));
    } else if (g)
        fprintf(f, "  %-*s fits with --gpus %lld --task %s (%s)\n", w, "", (long long)g, mp_task_name(k->task),
                sharding_words(&found.s, d, sizeof d));
}

/* --solve's settings: what a plan would choose for every technique not
 * pinned (the best plan, or the least-memory one when none fits), at the
 * micro-batch given or 1. */
static int solve_settings(cli *c, mp_settings *s)
{
    char err[MP_ERR_LEN];
    mp_search_result r;
    if (mp_search(&c->model, &c->s, &c->gpu, &c->opts, &r, err)) return cli_error("%s", err);
    *s = r.cands[0].s;
    mp_search_free(&r);
    if (!(c->pinned & MP_PIN_BATCH)) s->batch = 1;
    if (!(c->pinned & MP_PIN_ACCUM)) s->accum = c->opts.global_batch > 0 ? c->opts.global_batch : 1;
    return 0;
}

static void print_solve_text(const cli *c, const mp_settings *s, const mp_estimate *e, double answer)
{
    char a[32], cnt[40];
    if (!strcmp(c->solve, "max-params"))
        printf("max-params: %s parameters (%lld layers x %lld hidden) fit in %s with these settings\n\n",
               mp_fmt_count(e->params.total, cnt, sizeof cnt), (long long)c->model.layers,
               (long long)c->model.hidden, mp_fmt_gib(c->gpu.mem_bytes * (1 - c->headroom), a, sizeof a));
    else
        printf("%s: %.0f fits in %s with these settings\n\n", c->solve, answer,
               mp_fmt_gib(c->gpu.mem_bytes * (1 - c->headroom), a, sizeof a));
    print_estimate_text(stdout, c, s, e);
}

static int cmd_solve(cli *c)
{
    char err[MP_ERR_LEN];
    double answer;
    mp_model solved;
    mp_settings s;
    if (solve_settings(c, &s)) return EXIT_USAGE;
    int src = mp_solve(c->solve, &c->model, &s, &c->gpu, c->gpu.mem_bytes, c->headroom, &answer, &solved, err);
    if (src == -2) { /* nothing fits, as plan reports it: exit 1 */
        printf("%s\n", err);
        return EXIT_NOFIT;
    }
    if (src) return cli_error("%s", err);
    if (!strcmp(c->solve, "max-batch")) s.batch = (int64_t)answer;
    if (!strcmp(c->solve, "max-seq")) s.seq = (int64_t)answer;
    if (!strcmp(c->solve, "max-params")) {
        c->model = solved;
        snprintf(c->model_how, sizeof c->model_how, "the largest Llama-like shape that fits");
    }
    mp_estimate e;
    if (mp_estimate_run(&c->model, &s, &c->gpu, &e, err)) return cli_error("%s", err);
    c->show_settings = true;
    if (c->format == FMT_JSON) {
        char extra[160];
        snprintf(extra, sizeof extra, "{\"solve\": \"%s\", \"answer\": %.0f}", c->solve,
                 !strcmp(c->solve, "max-params") ? e.params.total : answer);
        print_estimate_json(stdout, c, &s, &e, true, extra);
    } else if (c->format == FMT_CSV) {
        print_csv_header(stdout);
        print_csv_row(stdout, c, &s, &e, true);
    } else {
        print_solve_text(c, &s, &e, answer);
    }
    return 0;
}

/* --top's upper bound (args.c): the alternatives a plan can list. */
#define PLAN_MAX_ALTS 1000

/* One search, and what plan reports from it. */
typedef struct plan_result {
    mp_search_result r;
    double ms;
    const mp_candidate *best;  /* NULL: nothing fits */
    mp_estimate e;             /* of best */
    const mp_candidate *alts[PLAN_MAX_ALTS];
    int nalt;
    const mp_candidate *miss[MP_NTASK]; /* tasks with no fitting plan: their cheapest candidate */
    bool task_fits[MP_NTASK];
} plan_result;

/* Two plans within the speed model's tie of each other in both memory and
 * speed: the same choice as far as the estimates can tell. */
static bool near_twin(const mp_candidate *a, const mp_candidate *b)
{
    double dm = fabs(a->device_bytes - b->device_bytes), m = fmax(a->device_bytes, b->device_bytes);
    double ds = fabs(a->tokens_per_s - b->tokens_per_s), t = fmax(a->tokens_per_s, b->tokens_per_s);
    return dm <= MP_SPEED_TIE * m && ds <= MP_SPEED_TIE * t;
}

/* Alternatives: the best of each distinct technique set, after the winner, each
 * moving memory or speed by more than the speed model's tie from the winner and
 * every alternative before it. */
static void find_alternatives(const cli *c, plan_result *p)
{
    const mp_search_result *r = &p->r;
    /* one screen: three unless --top says */
    int top = c->compact && !c->top_given && c->top > 3 ? 3 : c->top;
    for (size_t i = 1; p->best && i < r->n && r->cands[i].fits && p->nalt < top && p->nalt < PLAN_MAX_ALTS; i++) {
        const mp_settings *s = &r->cands[i].s;
        int dup = 0;
        for (int j = -1; j < p->nalt && !dup; j++) {
            const mp_candidate *o = j < 0 ? p->best : p->alts[j];
            dup = same_kind(s, &o->s) || near_twin(&r->cands[i], o);
        }
        if (!dup) p->alts[p->nalt++] = &r->cands[i];
    }
    for (size_t i = 0; i < r->n; i++) {
        const mp_candidate *k = &r->cands[i];
        if (k->fits) p->task_fits[k->task] = true;
        else if (!p->miss[k->task] || k->device_bytes < p->miss[k->task]->device_bytes) p->miss[k->task] = k;
    }
}

static json_t *candidate_json(const cli *c, const mp_candidate *best, const mp_candidate *k)
{
    char sum[256];
    json_t *o = json_object();
    json_object_set_new(o, "lost_on", json_string(mp_rank_reason(best, k, c->opts.prefer_speed, sum, sizeof sum)));
    json_object_set_new(o, "plan", json_string(plan_summary(&k->s, sum, sizeof sum)));
    json_object_set_new(o, "batch", json_integer(k->s.batch));
    json_object_set_new(o, "accum", json_integer(k->s.accum));
    json_object_set_new(o, "device_bytes", json_integer((json_int_t)llround(k->device_bytes)));
    json_object_set_new(o, "tokens_per_s", json_real(round(k->tokens_per_s)));
    return o;
}

static json_t *miss_json(const cli *c, mp_task t, const mp_candidate *k)
{
    char sum[256];
    json_t *o = json_object();
    json_object_set_new(o, "task", json_string(mp_task_name(t)));
    json_object_set_new(o, "min_device_bytes", json_integer((json_int_t)llround(k->device_bytes)));
    json_object_set_new(o, "over_bytes", json_integer((json_int_t)llround(k->device_bytes - c->gpu.mem_bytes * (1 - c->headroom))));
    json_object_set_new(o, "plan", json_string(plan_summary(&k->s, sum, sizeof sum)));
    mp_candidate found;
    int64_t g = gpus_needed(c, t, &found); /* the text's hint: --gpus N --task T fits */
    json_object_set_new(o, "fits_with_gpus", g ? json_integer(g) : json_null());
    return o;
}

static void print_plan_json(const cli *c, const plan_result *p)
{
    json_t *x = json_object();
    json_object_set_new(x, "considered", json_integer((json_int_t)p->r.considered));
    json_object_set_new(x, "unwritable", json_integer((json_int_t)p->r.unwritable));
    json_object_set_new(x, "evaluated", json_integer((json_int_t)p->r.evaluated));
    json_object_set_new(x, "fitting", json_integer((json_int_t)p->r.fitting));
    json_object_set_new(x, "search_ms", json_real(round(p->ms * 100) / 100));
    json_t *alt = json_array();
    for (int i = 0; i < p->nalt; i++) json_array_append_new(alt, candidate_json(c, p->best, p->alts[i]));
    json_object_set_new(x, "alternatives", alt);
    json_t *misses = json_array();
    for (int t = 0; t < MP_NTASK; t++)
        if (p->miss[t] && !p->task_fits[t]) json_array_append_new(misses, miss_json(c, (mp_task)t, p->miss[t]));
    json_object_set_new(x, "misses", misses);
    char *xs = json_dumps(x, 0);
    json_decref(x);
    if (p->best) print_estimate_json(stdout, c, &p->best->s, &p->e, true, xs);
    else {
        json_t *o = json_loads(xs, 0, NULL);
        json_object_set_new(o, "fits", json_false());
        json_object_set_new(o, "budget_bytes", json_integer((json_int_t)llround(c->gpu.mem_bytes)));
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        fputc('\n', stdout);
        json_decref(o);
    }
    free(xs);
}

static void print_plan_csv(const cli *c, const plan_result *p)
{
    char err[MP_ERR_LEN];
    print_csv_header(stdout);
    for (size_t i = 0; i < p->r.n && (int)i <= c->top; i++) {
        mp_estimate ei;
        if (mp_estimate_run(&c->model, &p->r.cands[i].s, &c->gpu, &ei, err) == 0)
            print_csv_row(stdout, c, &p->r.cands[i].s, &ei, p->r.cands[i].fits);
    }
}

/* After the plan: why not more, why this one, the alternatives and the search. */
static void print_plan_why(const cli *c, const plan_result *p)
{
    char sum[256], a[32], b[32], cnt[40];
    bool any_miss = false;
    for (int t = 0; t < MP_NTASK; t++) any_miss |= p->miss[t] && !p->task_fits[t];
    if (any_miss) {
        printf("\nwhy not more:\n");
        for (int t = 0; t < MP_NTASK; t++)
            if (p->miss[t] && !p->task_fits[t]) explain_miss(stdout, c, p->miss[t]);
    }
    if (p->best && !c->opts.prefer_speed && c->explain)
        printf("\nwhy this plan: %s is the most complete kind of training that fits with an optimizer\n"
               "of its family and no offload unless nothing else fits (full fine-tuning, then LoRA, then\n"
               "QLoRA; AdamW-class optimizers first); 8-bit states or weights without an fp32 master only\n"
               "when full numerics do not fit; then the fastest: plans within %.0f%% of the fastest (the\n"
               "speed model's error) are equally fast, and the simplest of them wins (--explain: each rule)\n",
               p->best->task == MP_TASK_FULL ? "full fine-tuning" : p->best->task == MP_TASK_LORA ? "LoRA" : "QLoRA",
               100 * MP_SPEED_TIE);
    if (p->nalt) {
        printf("\nalternatives that fit%s:\n", c->explain ? "" : " (what differs from the best plan)");
        for (int i = 0; i < p->nalt; i++) {
            char speed[32] = ""; /* none where the stack has no speed model (memtrain on the CPU) */
            if (p->alts[i]->tokens_per_s > 0)
                snprintf(speed, sizeof speed, c->explain ? " %7.0f tok/s" : " %6.0f tok/s", p->alts[i]->tokens_per_s);
            if (c->explain)
                printf("  %d. %-78s B=%-3lld %10s%s\n", i + 1, plan_summary(&p->alts[i]->s, sum, sizeof sum),
                       (long long)p->alts[i]->s.batch, mp_fmt_gib(p->alts[i]->device_bytes, b, sizeof b), speed);
            else
                printf("  %d. %-40s B=%-3lld %9s%s\n", i + 1, plan_difference(&p->best->s, &p->alts[i]->s, sum, sizeof sum),
                       (long long)p->alts[i]->s.batch, mp_fmt_gib(p->alts[i]->device_bytes, b, sizeof b), speed);
            if (c->explain)
                printf("     lost on %s\n", mp_rank_reason(p->best, p->alts[i], c->opts.prefer_speed, sum, sizeof sum));
        }
    }
    if (p->r.host_limited) {
        char lim[160];
        printf("\n%s: %s estimates that fit the GPU need more host RAM per node than\n%s%s\n",
               p->best ? "host RAM ruled out" : "host RAM is the limit",
               mp_fmt_count((double)p->r.host_limited, cnt, sizeof cnt), host_limit_text(c, &c->gpu, lim, sizeof lim),
               c->host_ram_typical ? " (--host-ram SIZE: your machine's)" : "");
    }
    if (!c->explain) {
        printf("\nsearch took %.1f ms, considered %s combinations, %s fit; --explain: why\n", p->ms,
               mp_fmt_count((double)p->r.considered, cnt, sizeof cnt), mp_fmt_count((double)p->r.fitting, b, sizeof b));
        if (p->r.unwritable)
            printf("%s skipped: --emit %s cannot write them\n", mp_fmt_count((double)p->r.unwritable, cnt, sizeof cnt),
                   c->emit);
        return;
    }
    printf("\nconsidered %s combinations (%s estimated; the rest pruned: a larger micro-batch never\n"
           "needs less memory, nor does an fp16, paged or torchao twin than its bf16, unpaged or\n"
           "bitsandbytes one), %s fit;\n",
           mp_fmt_count((double)p->r.considered, cnt, sizeof cnt), mp_fmt_count((double)p->r.evaluated, a, sizeof a),
           mp_fmt_count((double)p->r.fitting, b, sizeof b));
    if (p->r.unwritable)
        printf("%s skipped: --emit %s cannot write them;\n", mp_fmt_count((double)p->r.unwritable, cnt, sizeof cnt),
               c->emit);
    printf("search took %.1f ms\n", p->ms);
}

static void print_plan_text(const cli *c, const plan_result *p)
{
    char sum[256], a[32];
    printf("memplan %s on %s (%s)\n", c->model.name, c->gpu.name, c->gpu.how);
    const mp_candidate *best = p->best;
    if (best) {
        plan_summary(&best->s, sum, sizeof sum);
        if (c->explain) printf("\nbest plan: %s\n", sum);
        else { /* within 80 columns, lines cut after a comma */
            const char *t = sum, *lead = "\nbest plan: ";
            while (strlen(t) > 69) {
                /* after a ", " (not inside q,k,v), else at a blank */
                size_t cut = 68, keep;
                while (cut > 0 && !(t[cut] == ',' && t[cut + 1] == ' ')) cut--;
                if (cut) keep = cut + 1;
                else {
                    for (cut = 68; cut > 0 && t[cut] != ' '; cut--) {}
                    if (!cut) break;
                    keep = cut;
                }
                printf("%s%.*s\n", lead, (int)keep, t);
                t += cut + (keep == cut ? 1 : 2), lead = "           ";
            }
            printf("%s%s\n", lead, t);
        }
        const long long per_step = (long long)(best->s.batch * best->s.accum * mp_dp_degree(&best->s));
        if (mp_method_desc_of(best->s.method)->rows_per_example > 1)
            printf("           micro-batch %lld, accumulation %lld, seq %lld -> %lld pair%s per step\n",
                   (long long)best->s.batch, (long long)best->s.accum, (long long)best->s.seq, per_step,
                   per_step == 1 ? "" : "s");
        else
            printf("           micro-batch %lld, accumulation %lld, seq %lld -> %lld sequences per step\n",
                   (long long)best->s.batch, (long long)best->s.accum, (long long)best->s.seq, per_step);
        if (c->explain) fputc('\n', stdout);
        print_estimate_text(stdout, c, &best->s, &p->e);
    } else {
        char lim[160];
        printf("\nnothing fits in %s with %.0f%% headroom%s%s.\n", mp_fmt_gib(c->gpu.mem_bytes, a, sizeof a),
               c->headroom * 100, c->host_ram > 0 ? "\nand host RAM per node within " : "",
               c->host_ram > 0 ? host_limit_text(c, &c->gpu, lim, sizeof lim) : "");
    }
    print_plan_why(c, p);
}

/* --emit: the config of the best plan; returns -1 to go on to the report. */
static int plan_emit(cli *c, const plan_result *p)
{
    if (!p->best) {
        char name[96];
        fprintf(stderr, "memplan: nothing fits in %s: no config written\n", mp_quote(c->gpu.name, name, sizeof name));
        return EXIT_NOFIT;
    }
    int rc = do_emit(c, &p->best->s, &p->e);
    return rc || !c->out_path ? rc : -1;
}

static int plan_report(cli *c, plan_result *p)
{
    char err[MP_ERR_LEN];
    /* the best plan's whole estimate, which the report and an emitted file both state */
    if (p->best && mp_estimate_run(&c->model, &p->best->s, &c->gpu, &p->e, err)) return cli_error("%s", err);
    if (c->emit) {
        int rc = plan_emit(c, p);
        if (rc >= 0) return rc;
    }
    find_alternatives(c, p);
    if (p->best) stack_note(c, &p->best->s, true);
    if (c->format == FMT_JSON) print_plan_json(c, p);
    else if (c->format == FMT_CSV) print_plan_csv(c, p);
    else print_plan_text(c, p);
    return p->best ? 0 : EXIT_NOFIT;
}

int cmd_plan(cli *c)
{
    char err[MP_ERR_LEN];
    if (check_output_args(c)) return EXIT_USAGE;
    if (!c->have_gpu) return cli_error("no budget: give --gpu (a profile such as rtx4090, or a size such as 12GB)");
    if (c->solve) return cmd_solve(c);
    plan_result p = {0};
    mp_search_opts opts = plan_opts(c);
    c->compact = c->format == FMT_TEXT && !c->explain;
    double t0 = now_ms();
    if (mp_search(&c->model, &c->s, &c->gpu, &opts, &p.r, err)) return cli_error("%s", err);
    p.ms = now_ms() - t0;
    p.best = p.r.n && p.r.cands[0].fits ? &p.r.cands[0] : NULL;
    int rc = plan_report(c, &p);
    mp_search_free(&p.r);
    return rc;
}
