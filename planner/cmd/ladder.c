/* ladder.c — memplan ladder: the memory of one step as techniques are added
 * one by one, from fp32 with AdamW to QLoRA, each row estimated with
 * mp_estimate_run under the user's other flags (batch, seq, attention, ...).
 *
 *   0 baseline        fp32 weights, AdamW
 *   1 + mixed precision (mixed-bf16; mixed-fp16 on a GPU without bf16)
 *   2 + 8-bit AdamW
 *   3 + gradient checkpointing (full)
 *   4 + LoRA (r=16 on every linear layer)
 *   5 + 4-bit base (nf4-dq)
 *   6 + CPU offload of the optimizer (ZeRO-Offload), from 3
 *
 * Offload is a branch, not a rung: it moves optimizer state to host RAM, which
 * only matters for full fine-tuning (under LoRA the state is a few MiB), and
 * DeepSpeed's CPU Adam keeps fp32 AdamW state, so the branch goes back from
 * 8-bit AdamW to AdamW. A technique flag the user gives picks that rung's
 * variant (--precision amp-bf16, --optimizer lion, --lora-rank 64, --quant
 * nf4, --offload params); giving the baseline's value (fp32, adamw, none, 0)
 * drops the rung. --task full stops before LoRA, --task lora before the 4-bit base. */
#include "cli.h"
#include "common/errors.h"
#include "common/units.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <math.h>
#include <string.h>

static int add(const cli *c, ladder_step *rows, int *n, int from, const mp_settings *s, const char *change,
               const char *l0, const char *l1, char *err)
{
    ladder_step *r = &rows[*n];
    memset(r, 0, sizeof *r);
    r->step = *n;
    r->from = from;
    r->s = *s;
    snprintf(r->change, sizeof r->change, "%s", change);
    snprintf(r->label[0], sizeof r->label[0], "%s", l0);
    snprintf(r->label[1], sizeof r->label[1], "%s", l1);
    char e2[MP_ERR_LEN];
    if (mp_estimate_run(&c->model, s, c->have_gpu ? &c->gpu : NULL, &r->e, e2)) {
        snprintf(err, MP_ERR_LEN, "ladder step %d (%.60s): %.160s", *n, change, e2);
        return -1;
    }
    r->fits = c->have_gpu && mp_fits(&r->e, c->gpu.mem_bytes, c->headroom) && host_fits(c, &r->e);
    (*n)++;
    return 0;
}

int ladder_build(const cli *c, ladder_step *rows, int *n, char *err)
{
    const unsigned pin = c->pinned;
    char ch[96], l0[40], l1[40];
    *n = 0;
    mp_settings s = c->s;
    s.precision = MP_FP32;
    s.optimizer = MP_ADAMW;
    s.checkpointing = MP_CKPT_NONE;
    s.lora_rank = 0;
    s.quant = MP_QUANT_NONE;
    s.offload = MP_OFFLOAD_NONE;
    if (!(pin & MP_PIN_ZERO)) s.zero = 0;
    if (add(c, rows, n, -1, &s, "baseline: fp32 weights, AdamW", "baseline", "fp32 + AdamW", err)) return -1;

    /* + mixed precision */
    mp_precision p = pin & MP_PIN_PRECISION ? c->s.precision
                   : c->have_gpu && !c->gpu.bf16 ? MP_MIXED_FP16 : MP_MIXED_BF16;
    if (p != MP_FP32) {
        s.precision = p;
        snprintf(ch, sizeof ch, "+ mixed precision (%s)", mp_precision_name(p));
        snprintf(l1, sizeof l1, "+ %s", mp_precision_name(p));
        if (add(c, rows, n, *n - 1, &s, ch, "mixed precision", l1, err)) return -1;
    }
    /* + 8-bit AdamW */
    mp_optimizer o = pin & MP_PIN_OPTIMIZER ? c->s.optimizer : MP_ADAMW_8BIT;
    if (o != MP_ADAMW) {
        s.optimizer = o;
        if (o == MP_ADAMW_8BIT) snprintf(ch, sizeof ch, "+ 8-bit AdamW (adamw-8bit)");
        else snprintf(ch, sizeof ch, "+ optimizer %s", mp_optimizer_name(o));
        snprintf(l1, sizeof l1, "+ %s", mp_optimizer_name(o));
        if (add(c, rows, n, *n - 1, &s, ch, "optimizer", l1, err)) return -1;
    }
    /* + gradient checkpointing */
    mp_ckpt k = pin & MP_PIN_CKPT ? c->s.checkpointing : MP_CKPT_FULL;
    if (k != MP_CKPT_NONE) {
        s.checkpointing = k;
        snprintf(ch, sizeof ch, "+ gradient checkpointing (%s)", mp_ckpt_name(k));
        snprintf(l1, sizeof l1, "+ %s ckpt", mp_ckpt_name(k));
        if (add(c, rows, n, *n - 1, &s, ch, "checkpointing", l1, err)) return -1;
    }
    int last_full = *n - 1;
    mp_settings full = s;
    /* + LoRA */
    int64_t rank = pin & MP_PIN_LORA ? c->s.lora_rank : 16;
    unsigned targets = pin & MP_PIN_TARGETS ? c->s.lora_targets : MP_LORA_ALL;
    if (rank > 0 && c->opts.task != MP_TASK_FULL) {
        char tg[64];
        s.lora_rank = rank;
        s.lora_targets = targets;
        snprintf(ch, sizeof ch, "+ LoRA (r=%lld on %s)", (long long)rank,
                 targets == MP_LORA_ALL ? "every linear layer" : mp_lora_targets_name(targets, tg, sizeof tg));
        snprintf(l1, sizeof l1, "+ LoRA r=%lld", (long long)rank);
        if (add(c, rows, n, *n - 1, &s, ch, "LoRA", l1, err)) return -1;
        /* + 4-bit base */
        mp_quant q = pin & MP_PIN_QUANT ? c->s.quant : MP_QUANT_NF4_DQ;
        if (q != MP_QUANT_NONE && c->opts.task != MP_TASK_LORA) {
            s.quant = q;
            snprintf(ch, sizeof ch, "+ %s base (%s)", q == MP_QUANT_INT8 ? "8-bit" : "4-bit", mp_quant_name(q));
            snprintf(l1, sizeof l1, "+ %s base", mp_quant_name(q));
            if (add(c, rows, n, *n - 1, &s, ch, "quantised base", l1, err)) return -1;
        }
    }
    /* branch: CPU offload of the optimizer, on the last full fine-tuning rung */
    mp_offload off = pin & MP_PIN_OFFLOAD ? c->s.offload : MP_OFFLOAD_OPTIMIZER;
    if (off != MP_OFFLOAD_NONE) {
        s = full;
        if (!(pin & MP_PIN_ZERO)) s.zero = off == MP_OFFLOAD_PARAMS ? 3 : 2;
        s.offload = off;
        if (!(pin & MP_PIN_OPTIMIZER) && mp_optimizer_desc_of(s.optimizer)->low_bit)
            s.optimizer = MP_ADAMW;
        if (off == MP_OFFLOAD_PARAMS)
            snprintf(ch, sizeof ch, "+ CPU offload of parameters (ZeRO-%d), from %d", s.zero, last_full);
        else
            snprintf(ch, sizeof ch, "+ CPU offload (ZeRO-%d, CPU %s), from %d", s.zero,
                     s.optimizer == MP_ADAMW ? "AdamW" : mp_optimizer_name(s.optimizer), last_full);
        snprintf(l0, sizeof l0, "branch from %d", last_full);
        snprintf(l1, sizeof l1, "+ offload %s", mp_offload_name(off));
        if (add(c, rows, n, last_full, &s, ch, l0, l1, err)) return -1;
    }
    return 0;
}

enum { L_STEP, L_FROM, L_CHANGE, L_PRECISION, L_OPTIMIZER, L_CKPT, L_LORA_RANK, L_QUANT, L_ZERO, L_OFFLOAD,
       L_WEIGHTS, L_GRADIENTS, L_OPTSTATE, L_ACTIVATIONS, L_OVERHEAD, L_DEVICE, L_HOST, L_SAVE_PREV,
       L_SAVE_PREV_PCT, L_SAVE_BASE, L_SAVE_BASE_PCT, L_TOKENS, L_STEP_S, L_SPEED, L_FITS, L_NCOL };

static const grid_col ladder_cols[L_NCOL] = {
    {"step", COL_INT}, {"from", COL_INT}, {"change", COL_STR}, {"precision", COL_STR},
    {"optimizer", COL_STR}, {"checkpointing", COL_STR}, {"lora-rank", COL_INT}, {"quant", COL_STR},
    {"zero", COL_INT}, {"offload", COL_STR}, {"weights_bytes", COL_BYTES}, {"gradients_bytes", COL_BYTES},
    {"optimizer_bytes", COL_BYTES}, {"activations_bytes", COL_BYTES}, {"overhead_bytes", COL_BYTES},
    {"device_bytes", COL_BYTES}, {"host_bytes", COL_BYTES}, {"saving_prev_bytes", COL_BYTES},
    {"saving_prev_pct", COL_PCT}, {"saving_base_bytes", COL_BYTES}, {"saving_base_pct", COL_PCT},
    {"tokens_per_s", COL_REAL}, {"step_seconds", COL_SECS}, {"speed_vs_prev_pct", COL_PCT}, {"fits", COL_BOOL},
};

/* the screen's columns (--wide: all) */
static const int ladder_screen[] = {L_STEP, L_FROM, L_CHANGE, L_DEVICE, L_HOST, L_SAVE_BASE_PCT, L_TOKENS, L_FITS};

int cmd_ladder(cli *c)
{
    char err[MP_ERR_LEN], a[32], b[32];
    ladder_step rows[LADDER_MAX];
    int n;
    if (ladder_build(c, rows, &n, err)) return cli_error("%s", err);
    grid g;
    grid_init(&g, ladder_cols, L_NCOL);
    const mp_estimate *base = &rows[0].e;
    for (int i = 0; i < n; i++) {
        const ladder_step *r = &rows[i];
        const mp_estimate *prev = r->from >= 0 ? &rows[r->from].e : NULL;
        size_t k = grid_add_row(&g);
        grid_num(&g, k, L_STEP, r->step);
        if (r->from >= 0) grid_num(&g, k, L_FROM, r->from);
        grid_str(&g, k, L_CHANGE, r->change);
        grid_str(&g, k, L_PRECISION, mp_precision_name(r->s.precision));
        grid_str(&g, k, L_OPTIMIZER, mp_optimizer_name(r->s.optimizer));
        grid_str(&g, k, L_CKPT, mp_ckpt_name(r->s.checkpointing));
        grid_num(&g, k, L_LORA_RANK, (double)r->s.lora_rank);
        grid_str(&g, k, L_QUANT, mp_quant_name(r->s.quant));
        grid_num(&g, k, L_ZERO, r->s.zero);
        grid_str(&g, k, L_OFFLOAD, mp_offload_name(r->s.offload));
        for (int comp = 0; comp < MP_NCOMP; comp++) grid_num(&g, k, L_WEIGHTS + comp, r->e.at_peak[comp]);
        grid_num(&g, k, L_DEVICE, r->e.device_bytes);
        grid_num(&g, k, L_HOST, r->e.host_bytes);
        if (prev) { /* of the whole bytes shown, so that the columns subtract exactly */
            double p = round(prev->device_bytes), b0 = round(base->device_bytes), d = round(r->e.device_bytes);
            grid_num(&g, k, L_SAVE_PREV, p - d);
            grid_num(&g, k, L_SAVE_PREV_PCT, 100 * (p - d) / p);
            grid_num(&g, k, L_SAVE_BASE, b0 - d);
            grid_num(&g, k, L_SAVE_BASE_PCT, 100 * (b0 - d) / b0);
        }
        if (c->have_gpu) {
            if (r->e.tokens_per_s > 0) grid_num(&g, k, L_TOKENS, r->e.tokens_per_s);
            if (r->e.step_seconds > 0) grid_num(&g, k, L_STEP_S, r->e.step_seconds);
            if (prev && prev->tokens_per_s > 0 && r->e.tokens_per_s > 0)
                grid_num(&g, k, L_SPEED, 100 * (r->e.tokens_per_s / prev->tokens_per_s - 1));
            grid_num(&g, k, L_FITS, r->fits);
        }
    }
    out_buf ob;
    FILE *f = out_open(&ob);
    const mp_settings *s = &rows[0].s;
    if (c->format == FMT_TEXT) {
        fprintf(f, "memplan ladder: %s (%s),\nmicro-batch %lld x seq %lld, accumulation %lld, %lld GPU(s), %s attention, %s CE\n",
                c->model.name, c->model_how, (long long)s->batch, (long long)s->seq, (long long)s->accum,
                (long long)s->gpus, mp_attention_name(s->attention), mp_ce_name(s->ce));
        if (c->have_gpu)
            fprintf(f, "on %s: %s (%s); %.0f%% headroom leaves %s\n", c->gpu.name, mp_fmt_gib(c->gpu.mem_bytes, a, sizeof a),
                    c->gpu.how[0] ? c->gpu.how : c->gpu.label, c->headroom * 100,
                    mp_fmt_gib(c->gpu.mem_bytes * (1 - c->headroom), b, sizeof b));
        fprintf(f, "per GPU in GiB (2^30 bytes), each component at the step's peak: they add up to device\n"
                   "(what nvidia-smi shows); savings are against the row in 'from' and the baseline%s\n\n",
                c->wide ? "" : "\n(--wide: each component and setting)");
    }
    grid_write_some(f, &g, c->format, c->wide ? NULL : ladder_screen, (int)(sizeof ladder_screen / sizeof *ladder_screen));
    if (c->format == FMT_TEXT) {
        if (rows[n - 1].s.offload != MP_OFFLOAD_NONE)
            fprintf(f, "\nstep %d is a branch, not a rung: offload moves optimizer state to host RAM (host_bytes), which\n"
                       "matters for full fine-tuning only (under LoRA the state is a few MiB); DeepSpeed's CPU Adam keeps\n"
                       "fp32 AdamW state, so the branch uses AdamW rather than 8-bit AdamW\n", n - 1);
        if (!c->have_gpu) fprintf(f, "%stokens_per_s, step_seconds and fits need --gpu\n", rows[n - 1].s.offload ? "" : "\n");
        else write_speed_note(f, &c->gpu, 1);
    }
    grid_free(&g);
    return out_finish(&ob, c->out_path);
}
