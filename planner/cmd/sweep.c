/* sweep.c — memplan sweep: every combination mp_search estimates, one row
 * each, best first (opts.exhaustive: the fp16, paged and torchao twins too), with the
 * per-component bytes at the peak, the verdict and the estimated tokens/s:
 * the data for plotting memory against speed. */
#include "cli.h"
#include "common/errors.h"
#include "common/units.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <string.h>

enum { S_RANK, S_TASK, S_PRECISION, S_OPTIMIZER, S_QUANT, S_LORA_RANK, S_CKPT, S_ATTENTION, S_CE, S_BATCH,
       S_ACCUM, S_SEQ, S_ZERO, S_OFFLOAD, S_GPUS, S_WEIGHTS, S_GRADIENTS, S_OPTSTATE, S_ACTIVATIONS,
       S_OVERHEAD, S_DEVICE, S_HOST, S_FITS, S_TOKENS, S_NCOL };

static const grid_col sweep_cols[S_NCOL] = {
    {"rank", COL_INT}, {"task", COL_STR}, {"precision", COL_STR}, {"optimizer", COL_STR},
    {"quant", COL_STR}, {"lora-rank", COL_INT}, {"checkpointing", COL_STR}, {"attention", COL_STR},
    {"ce", COL_STR}, {"batch", COL_INT}, {"accum", COL_INT}, {"seq", COL_INT}, {"zero", COL_INT},
    {"offload", COL_STR}, {"gpus", COL_INT}, {"weights_bytes", COL_BYTES}, {"gradients_bytes", COL_BYTES},
    {"optimizer_bytes", COL_BYTES}, {"activations_bytes", COL_BYTES}, {"overhead_bytes", COL_BYTES},
    {"device_bytes", COL_BYTES}, {"host_bytes", COL_BYTES}, {"fits", COL_BOOL}, {"tokens_per_s", COL_REAL},
};

/* the screen's columns (--wide: all) */
static const int sweep_screen[] = {S_RANK, S_TASK, S_PRECISION, S_OPTIMIZER, S_QUANT, S_ATTENTION, S_BATCH, S_ZERO,
                                   S_OFFLOAD, S_DEVICE, S_FITS, S_TOKENS};

int cmd_sweep(cli *c)
{
    char err[MP_ERR_LEN], a[32], b[32], cnt[3][40];
    if (!c->have_gpu) return cli_error("no budget: memplan sweep needs --gpu (a profile such as rtx4090, or a size such as 24GB)");
    mp_search_opts o = c->opts;
    o.exhaustive = true;
    mp_search_result r;
    if (mp_search(&c->model, &c->s, &c->gpu, &o, &r, err)) return cli_error("%s", err);
    size_t rows = c->top_given && (size_t)c->top < r.n ? (size_t)c->top : r.n;
    grid g;
    grid_init(&g, sweep_cols, S_NCOL);
    for (size_t i = 0; i < rows; i++) {
        const mp_candidate *k = &r.cands[i];
        const mp_settings *s = &k->s;
        size_t j = grid_add_row(&g);
        grid_num(&g, j, S_RANK, (double)(i + 1));
        grid_str(&g, j, S_TASK, mp_task_name(k->task));
        grid_str(&g, j, S_PRECISION, mp_precision_name(s->precision));
        grid_str(&g, j, S_OPTIMIZER, mp_optimizer_name(s->optimizer));
        grid_str(&g, j, S_QUANT, mp_quant_name(s->quant));
        grid_num(&g, j, S_LORA_RANK, (double)s->lora_rank);
        grid_str(&g, j, S_CKPT, mp_ckpt_name(s->checkpointing));
        grid_str(&g, j, S_ATTENTION, mp_attention_name(s->attention));
        grid_str(&g, j, S_CE, mp_ce_name(s->ce));
        grid_num(&g, j, S_BATCH, (double)s->batch);
        grid_num(&g, j, S_ACCUM, (double)s->accum);
        grid_num(&g, j, S_SEQ, (double)s->seq);
        grid_num(&g, j, S_ZERO, s->zero);
        grid_str(&g, j, S_OFFLOAD, mp_offload_name(s->offload));
        grid_num(&g, j, S_GPUS, (double)s->gpus);
        for (int comp = 0; comp < MP_NCOMP; comp++) grid_num(&g, j, S_WEIGHTS + comp, k->at_peak[comp]);
        grid_num(&g, j, S_DEVICE, k->device_bytes);
        grid_num(&g, j, S_HOST, k->host_bytes);
        grid_num(&g, j, S_FITS, k->fits);
        if (k->tokens_per_s > 0) grid_num(&g, j, S_TOKENS, k->tokens_per_s);
    }
    out_buf ob;
    FILE *f = out_open(&ob);
    if (c->format == FMT_TEXT) {
        fprintf(f, "memplan sweep: %s (%s)\non %s: %s (%s), %.0f%% headroom leaves %s\n", c->model.name, c->model_how,
                c->gpu.name, mp_fmt_gib(c->gpu.mem_bytes, a, sizeof a), c->gpu.how[0] ? c->gpu.how : c->gpu.label,
                c->headroom * 100, mp_fmt_gib(c->gpu.mem_bytes * (1 - c->headroom), b, sizeof b));
        fprintf(f, "%s combinations in the space, %s estimated (a larger micro-batch after a miss is pruned: it needs\n"
                   "more memory still), %s fit; best first%s; per GPU in GiB (2^30 bytes), components at the peak\n",
                mp_fmt_count((double)r.considered, cnt[0], sizeof cnt[0]), mp_fmt_count((double)r.evaluated, cnt[1], sizeof cnt[1]),
                mp_fmt_count((double)r.fitting, cnt[2], sizeof cnt[2]), rows < r.n ? " (--top)" : "");
        if (!c->wide) fprintf(f, "device: what nvidia-smi would show; --wide: each component, host RAM and the rest\n\n");
    }
    grid_write_some(f, &g, c->format, c->wide ? NULL : sweep_screen, (int)(sizeof sweep_screen / sizeof *sweep_screen));
    grid_free(&g);
    bool any = r.fitting > 0;
    mp_search_free(&r);
    int rc = out_finish(&ob, c->out_path);
    return rc ? rc : any ? 0 : EXIT_NOFIT;
}
