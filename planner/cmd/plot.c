/* plot.c — memplan plot: an SVG of per-GPU memory as stacked bars, one
 * segment per component (weights, gradients, optimizer, activations,
 * overhead), for the chosen plan and its alternatives of a different kind, or
 * for the technique ladder (--ladder), with the GPU's capacity as a line.
 * Hand-written SVG 1.1; a segment's height is its bytes times one scale, and
 * each segment carries data-bar, data-component and data-bytes attributes so
 * that a reader (or a test) can take the picture apart again. */
#include "cli.h"
#include "common/errors.h"
#include "common/units.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BARS (LADDER_MAX + 16)

typedef struct bar {
    char line[4][64];          /* the labels under the bar */
    double comp[MP_NCOMP];     /* at the peak: they add up to total */
    double total;              /* device bytes */
    bool fits;
} bar;

static const char *const colours[MP_NCOMP] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#9c9c9c"};

/* A solid fill for weights; hatching, cross-hatching, dots and rules for the rest. */
static const char *const marks[MP_NCOMP] = {
    "",
    "<path d=\"M-2,2 L2,-2 M0,8 L8,0 M6,10 L10,6\" stroke=\"#ffffff\" stroke-opacity=\"0.7\" stroke-width=\"1.5\"/>",
    "<path d=\"M0,0 L8,8 M8,0 L0,8\" stroke=\"#ffffff\" stroke-opacity=\"0.6\" stroke-width=\"1\"/>",
    "<circle cx=\"4\" cy=\"4\" r=\"1.6\" fill=\"#ffffff\" fill-opacity=\"0.7\"/>",
    "<path d=\"M0,2 L8,2 M0,6 L8,6\" stroke=\"#ffffff\" stroke-opacity=\"0.7\" stroke-width=\"1\"/>",
};

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t') fputc(*s, f);
        }
    }
}

/* A tick step of 1, 2 or 5 times a power of ten, for at most 8 intervals. */
static double tick_step(double top)
{
    double p = pow(10, floor(log10(top > 0 ? top : 1)));
    const double m[] = {0.1, 0.2, 0.5, 1, 2, 5, 10};
    for (int i = 0; i < 7; i++)
        if (top / (p * m[i]) <= 8) return p * m[i];
    return p * 10;
}

/* The picture's geometry: columns of `slot` pixels, `k` pixels per GiB. */
typedef struct frame {
    double slot, bw, left, top, ph, notes_w, legend_w;
    double W, base, H;
    double cap, usable;        /* the GPU's GiB, and what headroom leaves of it */
    double step, ymax, k;      /* ticks, axis top, scale */
    int n;                     /* bars */
} frame;

static frame frame_for(const bar *bars, int n, const cli *c)
{
    frame fr = {.slot = 160, .bw = 72, .left = 80, .top = 78, .ph = 330, .notes_w = c->have_gpu ? 150 : 0,
                .legend_w = 200, .n = n};
    fr.W = fr.left + n * fr.slot + fr.notes_w + fr.legend_w, fr.base = fr.top + fr.ph, fr.H = fr.base + 120;
    fr.cap = c->have_gpu ? c->gpu.mem_bytes / MP_GiB : 0, fr.usable = fr.cap * (1 - c->headroom);
    double hi = fr.cap;
    for (int i = 0; i < n; i++) hi = fmax(hi, bars[i].total / MP_GiB);
    fr.step = tick_step(hi * 1.08), fr.ymax = ceil(hi * 1.08 / fr.step) * fr.step;
    if (fr.ymax <= 0) fr.ymax = fr.step;
    fr.k = fr.ph / fr.ymax;
    return fr;
}

static void svg_head(FILE *f, const frame *fr, const char *title, const char *subtitle)
{
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
               "data-px-per-gib=\"%.6f\">\n", fr->W, fr->H, fr->W, fr->H, fr->k);
    fputs("<title>", f), xml_text(f, title), fputs("</title>\n", f);
    fputs("<desc>memplan plot: ", f), xml_text(f, subtitle), fputs("</desc>\n<defs>\n", f);
    for (int i = 0; i < MP_NCOMP; i++)
        fprintf(f, "  <pattern id=\"p-%s\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\">"
                   "<rect width=\"8\" height=\"8\" fill=\"%s\"/>%s</pattern>\n",
                mp_component_name(i), colours[i], marks[i]);
    fputs("</defs>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n", f);
    fprintf(f, "<text x=\"%.0f\" y=\"28\" font-size=\"17\" font-weight=\"bold\">", fr->left);
    xml_text(f, title);
    fprintf(f, "</text>\n<text x=\"%.0f\" y=\"48\" font-size=\"11\" fill=\"#444444\">", fr->left);
    xml_text(f, subtitle);
    fputs("</text>\n", f);
}

/* axes, grid and ticks in GiB */
static void svg_axes(FILE *f, const frame *fr, const char *xlabel)
{
    double left = fr->left, right = fr->left + fr->n * fr->slot, mid = fr->top + fr->ph / 2;
    fputs("<g class=\"axis\" font-size=\"11\" fill=\"#333333\">\n", f);
    for (double v = 0; v <= fr->ymax + fr->step / 2; v += fr->step) {
        double y = fr->base - v * fr->k;
        fprintf(f, "  <line x1=\"%.1f\" y1=\"%.3f\" x2=\"%.1f\" y2=\"%.3f\" stroke=\"#dddddd\"/>\n", left, y, right, y);
        fprintf(f, "  <text x=\"%.1f\" y=\"%.3f\" text-anchor=\"end\">%g</text>\n", left - 6, y + 4, v);
    }
    fprintf(f, "  <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n", left, fr->top - 8, left,
            fr->base);
    fprintf(f, "  <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n", left, fr->base, right,
            fr->base);
    fprintf(f, "  <text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 20 %.1f)\" font-size=\"12\">"
               "memory per GPU (GiB, 2^30 bytes)</text>\n", mid, mid);
    fprintf(f, "  <text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">", left + fr->n * fr->slot / 2,
            fr->H - 12);
    xml_text(f, xlabel);
    fputs("</text>\n</g>\n", f);
}

/* One bar: its segments, its total above and its labels below. */
static void svg_bar(FILE *f, const frame *fr, int i, const bar *b, const cli *c)
{
    char a[32];
    double x = fr->left + i * fr->slot + (fr->slot - fr->bw) / 2, y = fr->base;
    fprintf(f, "<g class=\"bar\" data-bar=\"%d\" data-total-bytes=\"%.0f\">\n", i, b->total);
    for (int comp = 0; comp < MP_NCOMP; comp++) {
        double h = b->comp[comp] / MP_GiB * fr->k;
        y -= h;
        fprintf(f, "  <rect class=\"seg\" data-bar=\"%d\" data-component=\"%s\" data-bytes=\"%.0f\" "
                   "x=\"%.3f\" y=\"%.4f\" width=\"%.0f\" height=\"%.4f\" fill=\"url(#p-%s)\" stroke=\"#ffffff\" "
                   "stroke-width=\"0.5\"><title>%s: %s</title></rect>\n",
                i, mp_component_name(comp), b->comp[comp], x, y, fr->bw, h, mp_component_name(comp),
                mp_component_name(comp), mp_fmt_gib(b->comp[comp], a, sizeof a));
    }
    fprintf(f, "  <text x=\"%.3f\" y=\"%.3f\" text-anchor=\"middle\" font-size=\"11\" font-weight=\"bold\" fill=\"%s\">%s</text>\n",
            x + fr->bw / 2, y - 5, !c->have_gpu || b->fits ? "#222222" : "#c62828", mp_fmt_gib(b->total, a, sizeof a));
    for (int l = 0; l < 4; l++) {
        if (!b->line[l][0]) continue;
        fprintf(f, "  <text x=\"%.3f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"%d\"%s>", x + fr->bw / 2,
                fr->base + 16 + 13 * l, l ? 10 : 11, l ? " fill=\"#444444\"" : " font-weight=\"bold\"");
        xml_text(f, b->line[l]);
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
}

/* the GPU's capacity and the headroom line, labelled to the right of the bars */
static void svg_capacity(FILE *f, const frame *fr, const cli *c)
{
    double y = fr->base - fr->cap * fr->k, yu = fr->base - fr->usable * fr->k, x2 = fr->left + fr->n * fr->slot + 8;
    char lab[160];
    fprintf(f, "<line class=\"capacity\" x1=\"%.1f\" y1=\"%.4f\" x2=\"%.1f\" y2=\"%.4f\" stroke=\"#c62828\" stroke-width=\"2\"/>\n",
            fr->left, y, x2, y);
    snprintf(lab, sizeof lab, "%s %.2f GiB", c->gpu.name, fr->cap);
    fprintf(f, "<text x=\"%.1f\" y=\"%.3f\" font-size=\"10\" fill=\"#c62828\">", x2 + 4, y - 3);
    xml_text(f, lab);
    fputs("</text>\n", f);
    if (c->headroom > 0) {
        fprintf(f, "<line class=\"usable\" x1=\"%.1f\" y1=\"%.4f\" x2=\"%.1f\" y2=\"%.4f\" stroke=\"#c62828\" "
                   "stroke-width=\"1\" stroke-dasharray=\"5,4\"/>\n", fr->left, yu, x2, yu);
        snprintf(lab, sizeof lab, "usable %.2f GiB (%.0f%% free)", fr->usable, c->headroom * 100);
        fprintf(f, "<text x=\"%.1f\" y=\"%.3f\" font-size=\"10\" fill=\"#c62828\">", x2 + 4, yu + 11);
        xml_text(f, lab);
        fputs("</text>\n", f);
    }
}

static void svg_legend(FILE *f, const frame *fr, const cli *c)
{
    double lx = fr->left + fr->n * fr->slot + fr->notes_w + 20, ly = fr->top;
    fprintf(f, "<g class=\"legend\" font-size=\"12\">\n  <text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">per GPU, at the peak</text>\n",
            lx, ly);
    for (int comp = MP_NCOMP - 1, row = 0; comp >= 0; comp--, row++) {
        double y = ly + 14 + row * 22;
        fprintf(f, "  <rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"16\" fill=\"url(#p-%s)\" stroke=\"#666666\" stroke-width=\"0.5\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx, y, mp_component_name(comp), lx + 24, y + 12,
                mp_component_name(comp));
    }
    if (c->have_gpu) {
        double y = ly + 14 + MP_NCOMP * 22 + 8;
        fprintf(f, "  <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c62828\" stroke-width=\"2\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\">GPU capacity</text>\n", lx, y, lx + 16, y, lx + 24, y + 4);
        if (c->headroom > 0)
            fprintf(f, "  <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c62828\" stroke-dasharray=\"5,4\"/>"
                       "<text x=\"%.1f\" y=\"%.1f\">usable (headroom)</text>\n", lx, y + 20, lx + 16, y + 20, lx + 24, y + 24);
    }
    fputs("</g>\n", f);
}

static void write_svg(FILE *f, const char *title, const char *subtitle, const char *xlabel, const bar *bars,
                      int n, const cli *c)
{
    frame fr = frame_for(bars, n, c);
    svg_head(f, &fr, title, subtitle);
    svg_axes(f, &fr, xlabel);
    for (int i = 0; i < n; i++) svg_bar(f, &fr, i, &bars[i], c);
    if (c->have_gpu) svg_capacity(f, &fr, c);
    svg_legend(f, &fr, c);
    fputs("</svg>\n", f);
}

static void fill_bar(bar *b, const mp_estimate *e, bool fits)
{
    for (int k = 0; k < MP_NCOMP; k++) b->comp[k] = e->at_peak[k];
    b->total = e->device_bytes;
    b->fits = fits;
}


static void plan_lines(bar *b, int rank, const mp_settings *s, const char *tag)
{
    if (s->lora_rank == 0) snprintf(b->line[0], sizeof b->line[0], "%d. full fine-tuning%s", rank, tag);
    else if (s->quant != MP_QUANT_NONE)
        snprintf(b->line[0], sizeof b->line[0], "%d. QLoRA %s r=%lld%s", rank, mp_quant_name(s->quant),
                 (long long)s->lora_rank, tag);
    else snprintf(b->line[0], sizeof b->line[0], "%d. LoRA r=%lld%s", rank, (long long)s->lora_rank, tag);
    snprintf(b->line[1], sizeof b->line[1], "%s, %s", mp_precision_name(s->precision), mp_optimizer_name(s->optimizer));
    snprintf(b->line[2], sizeof b->line[2], "B=%lld, ckpt %s, %s", (long long)s->batch, mp_ckpt_name(s->checkpointing),
             mp_attention_name(s->attention));
    char z[40] = "";
    if (s->zero) snprintf(z, sizeof z, "ZeRO-%d%s%s", s->zero, s->offload ? " offload " : "",
                          s->offload ? mp_offload_name(s->offload) : "");
    snprintf(b->line[3], sizeof b->line[3], "%s%s%s", s->ce == MP_CE_CHUNKED ? "chunked CE" : "",
             s->ce == MP_CE_CHUNKED && z[0] ? ", " : "", z);
}

static int plot_plans(const cli *c, bar *bars, int *n, char *title, char *sub, size_t len, char *err)
{
    mp_search_result r;
    if (mp_search(&c->model, &c->s, &c->gpu, &c->opts, &r, err)) return -1;
    const mp_candidate *pick[MAX_BARS];
    int np = 0, kinds = 0;
    char other[64] = "";
    bool fits = r.n && r.cands[0].fits;
    if (fits) {
        int want = 1 + (c->top < MAX_BARS - 1 ? c->top : MAX_BARS - 1);
        pick[np++] = &r.cands[0];
        /* then the best plan of each other kind of training that fits, in the ranking's order */
        for (size_t i = 1; i < r.n && r.cands[i].fits && np < want; i++) {
            bool seen = false;
            for (int j = 0; j < np && !seen; j++) seen = r.cands[i].task == pick[j]->task;
            if (seen) continue;
            pick[np++] = &r.cands[i];
            kinds++;
            size_t o = strlen(other);
            snprintf(other + o, sizeof other - o, "%s%s", o ? ", " : "",
                     r.cands[i].task == MP_TASK_FULL ? "full fine-tuning" : r.cands[i].task == MP_TASK_LORA ? "LoRA" : "QLoRA");
        }
        /* then the ranking's next plans that differ in their kind (same_kind) */
        for (size_t i = 1; i < r.n && r.cands[i].fits && np < want; i++) {
            bool dup = false;
            for (int j = 0; j < np && !dup; j++) dup = &r.cands[i] == pick[j] || same_kind(&r.cands[i].s, &pick[j]->s);
            if (!dup) pick[np++] = &r.cands[i];
        }
    } else {
        /* nothing fits: each task's least-memory plan */
        for (int t = MP_TASK_FULL; t <= MP_TASK_QLORA; t++)
            for (size_t i = 0; i < r.n; i++)
                if (r.cands[i].task == (mp_task)t) { /* sorted by memory when none fits */
                    pick[np++] = &r.cands[i];
                    break;
                }
    }
    for (int i = 0; i < np; i++) {
        mp_estimate e;
        if (mp_estimate_run(&c->model, &pick[i]->s, &c->gpu, &e, err)) {
            mp_search_free(&r);
            return -1;
        }
        fill_bar(&bars[i], &e, mp_fits(&e, c->gpu.mem_bytes, c->headroom));
        plan_lines(&bars[i], i + 1, &pick[i]->s, fits && i == 0 ? " (best)" : "");
    }
    *n = np;
    snprintf(title, len, "%s on %s: memory per GPU by component", c->model.name, c->gpu.name);
    char what[160];
    if (!fits) snprintf(what, sizeof what, "nothing fits: the least memory each kind of training needs");
    else if (kinds)
        snprintf(what, sizeof what, "the chosen plan, the best plan of each other kind that fits (%s)%s", other,
                 np > 1 + kinds ? ", then the ranking's next" : "");
    else snprintf(what, sizeof what, "the chosen plan%s (no other kind of training fits)",
                  np > 1 ? " and the ranking's next plans" : "");
    snprintf(sub, len, "%.110s; seq %lld, %lld GPU(s); %.80s", what, (long long)c->s.seq, (long long)c->s.gpus,
             c->model_how);
    mp_search_free(&r);
    return 0;
}

static int plot_ladder(const cli *c, bar *bars, int *n, char *title, char *sub, size_t len, char *err)
{
    ladder_step rows[LADDER_MAX];
    if (ladder_build(c, rows, n, err)) return -1;
    for (int i = 0; i < *n; i++) {
        fill_bar(&bars[i], &rows[i].e, rows[i].fits);
        snprintf(bars[i].line[0], sizeof bars[i].line[0], "%d. %s", rows[i].step, rows[i].label[0]);
        snprintf(bars[i].line[1], sizeof bars[i].line[1], "%s", rows[i].label[1]);
        if (c->have_gpu && rows[i].e.tokens_per_s > 0)
            snprintf(bars[i].line[2], sizeof bars[i].line[2], "%.0f tokens/s", rows[i].e.tokens_per_s);
    }
    const mp_settings *s = &rows[0].s;
    snprintf(title, len, "%s: memory per GPU as techniques are added%s%s", c->model.name, c->have_gpu ? " on " : "",
             c->have_gpu ? c->gpu.name : "");
    snprintf(sub, len, "each step adds one technique to the step before (the offload branch starts from the last full "
             "fine-tuning step); micro-batch %lld x seq %lld, %lld GPU(s)", (long long)s->batch, (long long)s->seq,
             (long long)s->gpus);
    return 0;
}

int cmd_plot(cli *c)
{
    char err[MP_ERR_LEN], title[256], sub[320];
    bar bars[MAX_BARS];
    memset(bars, 0, sizeof bars);
    int n = 0;
    if (!c->ladder && !c->have_gpu)
        return cli_error("no budget: memplan plot needs --gpu for a plan (or --ladder for the technique ladder)");
    if (c->ladder ? plot_ladder(c, bars, &n, title, sub, sizeof title, err)
                  : plot_plans(c, bars, &n, title, sub, sizeof title, err))
        return cli_error("%s", err);
    out_buf ob;
    FILE *f = out_open(&ob);
    write_svg(f, title, sub, c->ladder ? "technique ladder (cumulative)" : "plans, best first", bars, n, c);
    return out_finish(&ob, c->out_path);
}
