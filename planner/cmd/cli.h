/* cli.h — the memplan command's shared state: parsed flags and the printers. */
#ifndef MEMPLAN_CLI_H
#define MEMPLAN_CLI_H

#include "emit/emit.h"
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/options.h"

#include <stdio.h>

#define EXIT_NOFIT 1   /* the answer is "nothing fits" */
#define EXIT_USAGE 2   /* bad input */

typedef enum { FMT_TEXT, FMT_JSON, FMT_CSV, FMT_MARKDOWN } out_format;

typedef struct cli cli;

/* A subcommand: memplan.c's table has a row for each. Its scope says which of
 * the flags that belong to some commands only are its own. */
enum {
    CLI_GRID = 1,              /* table, ladder, sweep: --format markdown; no --emit or --solve */
    CLI_LISTS = 2,             /* table: --models LIST, --gpus LIST (or --gpu with commas) */
    CLI_SVG = 4,               /* plot: --ladder; no --format, --emit or --solve */
};
typedef struct cli_command {
    const char *name;
    int (*run)(cli *c);        /* after cli_parse; or NULL, and: */
    int (*main)(int argc, char **argv); /* the command's own parsing (argv[0]: the program) */
    const char *args;          /* for the usage line */
    const char *summary;       /* for the help; NULL: not listed */
    unsigned scope;            /* CLI_* */
} cli_command;

/* Model-shape flags, applied over the model source (0 or -1: not given). */
typedef struct shape_flags {
    const char *family;
    int64_t layers, hidden, heads, kv, head_dim, ffn, vocab, max_pos, experts, top_k, shared, expffn;
    int mlp, norm, pos, bias, tied;
} shape_flags;

struct cli {
    const cli_command *cmd;
    /* the model, as given */
    mp_model_source src;
    shape_flags shape;
    mp_model model;
    mp_model reward_m, value_m;   /* --reward-model, --value-model as read (settings point at them) */
    char model_how[200];       /* how the model was obtained, said in the output */
    /* the budget */
    const char *gpu_name, *framework;
    mp_gpu gpu;
    bool have_gpu;
    double headroom;
    double host_ram;           /* host RAM per node, 0: no limit: --host-ram, else the GPU's */
    bool host_ram_typical;     /* host_ram is the GPU profile's typical machine, not --host-ram */
    /* the settings and which of them the user pinned */
    mp_settings s;
    unsigned pinned;
    mp_search_opts opts;
    /* output */
    out_format format;
    bool explain, help;
    bool show_settings;        /* estimate and --solve: a line of every technique assumed */
    bool compact;              /* plan without --explain: one screen (details behind --explain) */
    char stack_note[240];      /* under the verdict: what the common stack says, when it disagrees */
    const char *emit, *out_path, *solve;
    const mp_emit_target *target; /* --emit's row */
    int top;
    /* table, ladder, sweep, plot */
    const char *models;        /* --models LIST (table only) */
    const char *gpu_list;      /* table: --gpus LIST, or --gpu with commas */
    bool ladder;               /* plot --ladder */
    bool wide;                 /* table, ladder, sweep --wide: every column in text */
    bool seq_given, top_given;
};

#define CLI_HELP (-1)          /* cli_parse: --help was given */
/* Parse argv (argv[0]: the program) for `cmd` into c. Returns 0, CLI_HELP, or
 * EXIT_USAGE after printing the error. */
int cli_parse(cli *c, int argc, char **argv, const cli_command *cmd);
/* The flags' part of memplan --help. */
void cli_help(FILE *f);
/* --format's value for commands without markdown into *fmt; 0, or EXIT_USAGE after the error. */
int cli_read_format(const char *value, out_format *fmt);
/* Print "memplan: error: ..." and return EXIT_USAGE. */
int cli_error(const char *fmt, ...);

/* Printers (report.c) */
void print_estimate_text(FILE *f, const cli *c, const mp_settings *s, const mp_estimate *e);
void print_estimate_json(FILE *f, const cli *c, const mp_settings *s, const mp_estimate *e,
                         bool fits, const char *extra_json);
void print_csv_header(FILE *f);
void print_csv_row(FILE *f, const cli *c, const mp_settings *s, const mp_estimate *e, bool fits);
const char *plan_summary(const mp_settings *s, char *buf, size_t len);
/* The host RAM limit per node for GPU g: --host-ram, else g's typical machine's (0: none). */
double host_limit_of(const cli *c, const mp_gpu *g);
/* "--host-ram 64.00 GiB", or "the 64.00 GiB of a desktop" (the profile's machine). */
const char *host_limit_text(const cli *c, const mp_gpu *g, char *buf, size_t len);
/* The estimate's node within c->host_ram (true when there is no limit). */
bool host_fits(const cli *c, const mp_estimate *e);
/* What `alt` changes from `best`, in plan_summary's words ("amp-bf16, eager attention"). */
const char *plan_difference(const mp_settings *best, const mp_settings *alt, char *buf, size_t len);
/* c->stack_note: what hf, the stack most run, says where it disagrees about fitting (plan.c). */
void stack_note(cli *c, const mp_settings *s, bool fits);
/* Plans that differ only in fp16 vs bf16 or paged vs not are one kind of plan. */
bool same_kind(const mp_settings *s, const mp_settings *t);

int cmd_plan(cli *c);
int cmd_estimate(cli *c);
int cmd_list(int argc, char **argv); /* argv[0] is the program */
/* memplan calibrate MEASUREMENTS.csv ... (calibrate.c): argv[0] is the program. */
int cmd_calibrate(int argc, char **argv);
int cmd_check(int argc, char **argv);

/* ---------- table, ladder, sweep, plot (grid.c, table.c, ladder.c, sweep.c, plot.c) ---------- */

/* A table of typed cells, written as aligned text, Markdown, CSV (libcsv) or
 * JSON (jansson) under the same column names. Sizes are bytes: GiB in text
 * and Markdown, whole bytes in CSV and JSON. An unset cell is "—" in text and
 * Markdown, empty in CSV and null in JSON. */
/* Under a table or ladder: the speed model's error and any generic-speed GPUs. */
void write_speed_note(FILE *f, const mp_gpu *gpus, int n);

typedef enum { COL_STR, COL_INT, COL_BYTES, COL_REAL, COL_PCT, COL_BOOL, COL_SECS } col_kind;
typedef struct grid_col {
    const char *name;
    col_kind kind;
} grid_col;
typedef struct grid_cell {
    char *s;                   /* COL_STR */
    double v;
    bool set;
} grid_cell;
typedef struct grid {
    const grid_col *cols;
    int ncols;
    grid_cell *cells;          /* nrows x ncols */
    size_t nrows, cap;
} grid;
void grid_init(grid *g, const grid_col *cols, int ncols);
size_t grid_add_row(grid *g);  /* a row of unset cells; exits on out of memory */
void grid_str(grid *g, size_t row, int col, const char *s);   /* NULL leaves it unset */
void grid_num(grid *g, size_t row, int col, double v);
void grid_write(FILE *f, const grid *g, out_format fmt);
/* As grid_write, but text shows only the columns `keep` lists (NULL: all): the
 * screen's selection, within 120 columns; Markdown, CSV and JSON keep them all. */
void grid_write_some(FILE *f, const grid *g, out_format fmt, const int *keep, int nkeep);
/* Text headers: a size column named x_bytes shows GiB there, so it is "x_gib". */
const char *grid_col_title(const grid_col *c, char *buf, size_t len);
void grid_free(grid *g);

/* Output is built in memory, then written to -o FILE atomically or to stdout. */
typedef struct out_buf {
    char *data;
    size_t len;
    FILE *f;
} out_buf;
FILE *out_open(out_buf *o);
int out_finish(out_buf *o, const char *path); /* 0, or EXIT_USAGE after the error */

/* Split a comma list into at most `max` trimmed items (pointers into `buf`);
 * returns the count, or -1 after printing the error (empty list or item). */
int split_list(const char *flag, const char *list, char *buf, size_t len, char **items, int max);

/* The settings that fit a GPU, as `table` recommends them. */
typedef struct recommendation {
    bool fits;                 /* a plan fits on `gpus` GPUs */
    bool multi;                /* nothing fit on the GPU count asked: ZeRO-3 over `gpus` */
    int64_t gpus;
    bool tried;                /* nothing fit on one GPU and the GPU counts were tried */
    mp_task task;
    mp_settings s;             /* the plan; when nothing fits, the least-memory plan */
    mp_estimate e;             /* mp_estimate_run of s */
    char note[200];
} recommendation;
/* Memory does not depend on the GPU (speed does), so what one search learns
 * about a model holds for the next GPU: each task's least-memory plan, per bf16
 * support, GPU count (level 0: the count asked; k: 2^k GPUs with ZeRO-3, up to
 * eight nodes of eight: a plan past that is a cluster's, for memplan plan
 * --gpus N) and space searched (0: all; 1: the AdamW-class tier). */
#define TC_LEVELS 7
#define TC_MAX_GPUS "64"
enum { TC_UNKNOWN, TC_KNOWN, TC_ERROR };
typedef struct table_cache_entry {
    int state;
    mp_candidate least;
} table_cache_entry;
typedef struct table_cache {
    table_cache_entry e[2][TC_LEVELS][MP_NTASK][2];
    char err[MP_ERR_LEN];
    mp_estimate_ctx *ctx;      /* the model's estimates, remembered across its GPUs */
} table_cache;
/* The model's base settings for the table: the flags, with its own default seq. */
void table_base(const cli *c, const mp_model *m, mp_settings *s);
/* The plan for one model on one GPU; `cache` (zeroed per model) may be NULL. */
int recommend(const cli *c, const mp_model *m, const mp_settings *base, const mp_gpu *g,
              table_cache *cache, recommendation *r, char *err);
/* "full bf16", "LoRA", "QLoRA", "2x ZeRO-3", ... */
const char *recommendation_label(const recommendation *r, char *buf, size_t len);

/* The technique ladder: each step adds one technique to the one before. */
#define LADDER_MAX 8
typedef struct ladder_step {
    int step, from;            /* from: the row it adds to (-1 for the baseline) */
    char change[96];           /* "+ mixed precision (mixed-bf16)" */
    char label[2][40];         /* two short lines for a plot */
    mp_settings s;
    mp_estimate e;
    bool fits;
} ladder_step;
int ladder_build(const cli *c, ladder_step *rows, int *n, char *err);

int cmd_table(cli *c);
int cmd_ladder(cli *c);
int cmd_sweep(cli *c);
int cmd_plot(cli *c);

#endif
