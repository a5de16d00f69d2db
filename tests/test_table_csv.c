/* test_table_csv.c — memplan table, ladder and sweep as CSV, read back with
 * libcsv: the header names (the same as the JSON keys), one row per GPU, model
 * or step with every field, fields with commas and quotes intact, and every
 * row's bytes equal to mp_estimate_run of the settings the row names.
 *
 * The command code is compiled in: the unit tests run before the binaries are
 * built. With arguments, `test_table_csv FILE ROWS COLUMNS` reads a CSV that
 * build/bin/memplan wrote (tests/test_tables.sh does) and checks its shape. */
#include "check.h"

#include "../planner/cmd/args.c"
#include "../planner/cmd/grid.c"
#include "../planner/cmd/ladder.c"
#include "../planner/cmd/sweep.c"
#include "../planner/cmd/table.c"
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <unistd.h>

/* ---------- a CSV file, read with libcsv ---------- */

#define MAXF 64
typedef struct sheet {
    char *f[512][MAXF];
    int nf[512];
    int nrows;
    int cur;
} sheet;

static void on_field(void *s, size_t len, void *data)
{
    sheet *t = data;
    if (t->nrows >= 512 || t->cur >= MAXF) return;
    char *v = malloc(len + 1);
    memcpy(v, s, len);
    v[len] = 0;
    t->f[t->nrows][t->cur++] = v;
}

static void on_row(int c, void *data)
{
    (void)c;
    sheet *t = data;
    if (t->nrows < 512) t->nf[t->nrows++] = t->cur;
    t->cur = 0;
}

static int read_sheet(const char *path, sheet *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    struct csv_parser p;
    csv_init(&p, CSV_STRICT | CSV_STRICT_FINI);
    char buf[4096];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (csv_parse(&p, buf, n, on_field, on_row, t) != n) rc = -1;
    if (csv_fini(&p, on_field, on_row, t)) rc = -1;
    csv_free(&p);
    fclose(f);
    return rc;
}

static void free_sheet(sheet *t)
{
    for (int r = 0; r < t->nrows; r++)
        for (int k = 0; k < t->nf[r]; k++) free(t->f[r][k]);
}

static int col(const sheet *t, const char *name)
{
    for (int k = 0; k < t->nf[0]; k++)
        if (!strcmp(t->f[0][k], name)) return k;
    return -1;
}

static const char *val(const sheet *t, int row, const char *name)
{
    int k = col(t, name);
    return k >= 0 && k < t->nf[row] ? t->f[row][k] : "";
}

/* ---------- running a subcommand in-process into a file ---------- */

static char dir[64], path[128];

static int run(int (*cmd)(cli *), const char *name, const char *const *args, const char *file)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = "memplan";
    for (int i = 0; args[i]; i++) argv[argc++] = (char *)args[i];
    argv[argc++] = "-o";
    argv[argc++] = (char *)file;
    argv[argc] = NULL;
    /* the scopes memplan.c's command table gives them */
    cli_command command = {.name = name, .run = cmd, .scope = CLI_GRID | (cmd == cmd_table ? CLI_LISTS : 0)};
    cli c;
    int rc = cli_parse(&c, argc, argv, &command);
    return rc ? rc : cmd(&c);
}

static bool is_int(const char *s)
{
    if (*s == '-') s++;
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

/* Parse a table row's settings back and estimate them. */
static int row_settings(const sheet *t, int r, const mp_model *m, mp_settings *s)
{
    mp_settings_default(s, m);
    int bad = 0;
    bad |= mp_precision_parse(val(t, r, "precision"), &s->precision);
    bad |= mp_optimizer_parse(val(t, r, "optimizer"), &s->optimizer);
    bad |= mp_quant_parse(val(t, r, "quant"), &s->quant);
    bad |= mp_ckpt_parse(val(t, r, "checkpointing"), &s->checkpointing);
    bad |= mp_attention_parse(val(t, r, "attention"), &s->attention);
    bad |= mp_ce_parse(val(t, r, "ce"), &s->ce);
    bad |= mp_offload_parse(val(t, r, "offload"), &s->offload);
    s->lora_rank = atoll(val(t, r, "lora-rank"));
    if (s->lora_rank > 0) bad |= mp_lora_targets_parse(val(t, r, "lora-targets"), &s->lora_targets);
    s->batch = atoll(val(t, r, "batch"));
    s->accum = atoll(val(t, r, "accum"));
    s->seq = atoll(val(t, r, "seq"));
    s->zero = atoi(val(t, r, "zero"));
    s->gpus = atoll(val(t, r, "gpus"));
    return bad ? -1 : 0;
}

static const char *const table_names[] = {
    "model", "gpu", "capacity_bytes", "fits", "gpus", "task", "precision", "optimizer", "quant",
    "lora-rank", "lora-targets", "checkpointing", "attention", "ce", "batch", "accum", "seq", "zero",
    "offload", "device_bytes", "used_pct", "tokens_per_s", "step_seconds", "note"};

static void test_table_rows(void)
{
    const char *gpus[] = {"rtx3060-12g", "rtx4090", "a100-80g", "h100-80g", "6GB"};
    const char *const args[] = {"--model", "llama-2-7b", "--gpus", "rtx3060-12g,rtx4090,a100-80g,h100-80g,6GB",
                                "--format", "csv", NULL};
    snprintf(path, sizeof path, "%s/table.csv", dir);
    int rc = run(cmd_table, "table", args, path);
    CHECK(rc == 0, "memplan table --model llama-2-7b --gpus 5 GPUs --format csv: exit %d", rc);
    sheet t;
    CHECK(read_sheet(path, &t) == 0, "the CSV parses with libcsv (strict)");
    const int ncol = (int)(sizeof table_names / sizeof *table_names);
    CHECK(t.nrows == 6, "a header and one row per GPU: %d rows", t.nrows);
    bool names = t.nf[0] == ncol;
    for (int k = 0; names && k < ncol; k++) names = !strcmp(t.f[0][k], table_names[k]);
    CHECK(names, "the header names the %d columns, in order", ncol);
    mp_model m;
    char err[MP_ERR_LEN];
    mp_model_lookup("llama-2-7b", &m, err);
    for (int r = 1; r < t.nrows; r++) {
        CHECK(t.nf[r] == ncol, "row %d has all %d fields (%d)", r, ncol, t.nf[r]);
        CHECK(!strcmp(val(&t, r, "gpu"), gpus[r - 1]), "row %d is GPU %s (%s)", r, gpus[r - 1], val(&t, r, "gpu"));
        CHECK(is_int(val(&t, r, "device_bytes")) && is_int(val(&t, r, "capacity_bytes")),
              "row %d: sizes are whole bytes (%s of %s)", r, val(&t, r, "device_bytes"), val(&t, r, "capacity_bytes"));
        mp_settings s;
        mp_gpu g;
        mp_estimate e;
        mp_gpu_lookup(gpus[r - 1], &g, err);
        bool ok = row_settings(&t, r, &m, &s) == 0 && mp_estimate_run(&m, &s, &g, &e, err) == 0;
        char want[64];
        snprintf(want, sizeof want, "%.0f", ok ? e.device_bytes : -1);
        CHECK(ok && !strcmp(want, val(&t, r, "device_bytes")),
              "row %d: mp_estimate_run of the row's settings gives its device_bytes (%s, %s)", r, want,
              val(&t, r, "device_bytes"));
        bool fits = ok && mp_fits(&e, g.mem_bytes, 0.10);
        CHECK(!strcmp(val(&t, r, "fits"), fits ? "1" : "0"), "row %d: fits is %s", r, fits ? "1" : "0");
    }
    /* the note holds commas: the quoting survives */
    CHECK(strstr(val(&t, 5, "note"), "nothing fits on one GPU: memplan plan --gpus 2 fits") != NULL &&
          !strcmp(val(&t, 5, "gpus"), "2"), "6GB: the note names the GPU count plan fits on (%s)", val(&t, 5, "note"));
    free_sheet(&t);

    /* JSON keys are the CSV header names */
    const char *const jargs[] = {"--model", "llama-2-7b", "--gpus", "rtx4090", "--format", "json", NULL};
    snprintf(path, sizeof path, "%s/table.json", dir);
    CHECK(run(cmd_table, "table", jargs, path) == 0, "the same as JSON");
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    json_t *row = json_array_get(j, 0);
    bool same = row && (int)json_object_size(row) == ncol;
    int k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(row, key, v) same &= k < ncol && !strcmp(key, table_names[k++]);
    CHECK(same, "the JSON keys are the CSV column names, in order");
    json_decref(j);
}

static void test_nothing_fits_note(void)
{
    const char *const args[] = {"--model", "llama-3.1-405b", "--gpus", "4GB", "--format", "csv", NULL};
    snprintf(path, sizeof path, "%s/miss.csv", dir);
    int rc = run(cmd_table, "table", args, path);
    CHECK(rc == EXIT_NOFIT, "405B on 4GB: nothing fits, exit 1 (%d)", rc);
    sheet t;
    CHECK(read_sheet(path, &t) == 0 && t.nrows == 2, "one row, read back");
    const char *note = val(&t, 1, "note");
    CHECK(!strcmp(val(&t, 1, "fits"), "0") && strstr(note, "nothing fits: needs at least") && strchr(note, ','),
          "the note says why, commas and all: %s", note);
    free_sheet(&t);
}

static void test_matrix(void)
{
    const char *const args[] = {"--models", "gpt2,llama-2-7b,llama-3.1-70b,llama-3.1-405b", "--gpus",
                                "rtx3060-12g,rtx4090,h100-80g", "--format", "csv", NULL};
    snprintf(path, sizeof path, "%s/matrix.csv", dir);
    CHECK(run(cmd_table, "table", args, path) == 0, "the models x GPUs matrix as CSV");
    sheet t;
    CHECK(read_sheet(path, &t) == 0, "the matrix parses with libcsv");
    CHECK(t.nrows == 5 && t.nf[0] == 4, "4 models x 3 GPUs: %d rows, %d columns", t.nrows, t.nf[0]);
    CHECK(!strcmp(t.f[0][0], "model") && !strcmp(t.f[0][1], "rtx3060-12g") && !strcmp(t.f[0][3], "h100-80g"),
          "the header: model, then the GPU names");
    bool shape = true;
    for (int r = 1; r < t.nrows; r++) shape &= t.nf[r] == 4;
    CHECK(shape, "every row has a cell per GPU");
    /* plain AdamW where it fits at the same speed: issue 13, and the guide in
     * shared/seeds/000 (lines 173-182: with memory to spare, no 8-bit optimizer) */
    CHECK(!strcmp(val(&t, 1, "h100-80g"), "full fine-tuning"), "gpt2 on an H100: full fine-tuning (%s)", val(&t, 1, "h100-80g"));
    CHECK(!strcmp(val(&t, 2, "rtx3060-12g"), "QLoRA"), "llama-2-7b on 12 GB: QLoRA (%s)", val(&t, 2, "rtx3060-12g"));
    CHECK(strstr(val(&t, 3, "rtx4090"), " GPUs") != NULL, "llama-3.1-70b on a 4090: several GPUs (%s)", val(&t, 3, "rtx4090"));
    CHECK(!strcmp(val(&t, 4, "rtx3060-12g"), ""), "405B on 12 GB: an empty cell (nothing fits)");
    free_sheet(&t);
}

static void test_ladder(void)
{
    const char *const args[] = {"--model", "llama-2-7b", "--batch", "8", "--seq", "2048", "--gpu", "rtx4090",
                                "--format", "csv", NULL};
    snprintf(path, sizeof path, "%s/ladder.csv", dir);
    CHECK(run(cmd_ladder, "ladder", args, path) == 0, "memplan ladder as CSV");
    sheet t;
    CHECK(read_sheet(path, &t) == 0 && t.nrows == 8, "a header and 7 steps (%d rows)", t.nrows);
    bool shape = true;
    for (int r = 1; r < t.nrows; r++) shape &= t.nf[r] == t.nf[0] && t.nf[0] == 25;
    CHECK(shape, "every step has the 25 fields");
    bool sums = true, savings = true;
    for (int r = 1; r < t.nrows; r++) {
        double sum = atof(val(&t, r, "weights_bytes")) + atof(val(&t, r, "gradients_bytes")) +
                     atof(val(&t, r, "optimizer_bytes")) + atof(val(&t, r, "activations_bytes")) +
                     atof(val(&t, r, "overhead_bytes"));
        sums &= fabs(sum - atof(val(&t, r, "device_bytes"))) <= 3; /* five roundings */
        if (r > 1) {
            int from = atoi(val(&t, r, "from"));
            double d = atof(val(&t, from + 1, "device_bytes")) - atof(val(&t, r, "device_bytes"));
            savings &= fabs(d - atof(val(&t, r, "saving_prev_bytes"))) <= 1;
        }
    }
    CHECK(sums, "the components add up to device_bytes on every step");
    CHECK(savings, "saving_prev_bytes is the drop from the step in 'from'");
    CHECK(!strcmp(val(&t, 7, "offload"), "optimizer") && !strcmp(val(&t, 7, "from"), "3"),
          "step 6 is the offload branch from step 3");
    free_sheet(&t);
}

static void test_sweep(void)
{
    const char *const args[] = {"--model", "gpt2", "--gpu", "24GB", "--top", "40", "--format", "csv", NULL};
    snprintf(path, sizeof path, "%s/sweep.csv", dir);
    CHECK(run(cmd_sweep, "sweep", args, path) == 0, "memplan sweep as CSV");
    sheet t;
    CHECK(read_sheet(path, &t) == 0 && t.nrows == 41, "a header and 40 rows (%d)", t.nrows);
    bool ranks = true;
    for (int r = 1; r < t.nrows; r++) ranks &= atoi(val(&t, r, "rank")) == r && t.nf[r] == t.nf[0];
    CHECK(ranks, "ranks 1..40, every row complete");
    free_sheet(&t);
}

/* The split, cached search of `table` picks what one search over everything
 * picks (the plan of `memplan plan`), and the library's only_* masks restrict. */
static void test_same_as_plan(void)
{
    const char *models[] = {"gpt2", "llama-2-7b", "mistral-7b", "qwen2.5-14b", "mixtral-8x7b"};
    const char *gpus[] = {"rtx3060-12g", "t4", "rtx4090", "a10g", "a100-80g", "h100-80g"};
    int same = 0, cells = 0;
    for (int i = 0; i < 5; i++) {
        char *argv[] = {"memplan", "--model", (char *)models[i], NULL};
        cli c;
        cli_command table_command = {.name = "table", .run = cmd_table, .scope = CLI_GRID | CLI_LISTS};
        if (cli_parse(&c, 3, argv, &table_command)) continue;
        table_cache *cache = calloc(1, sizeof *cache);
        for (int k = 0; k < 6; k++) {
            mp_gpu g;
            char err[MP_ERR_LEN];
            mp_gpu_lookup(gpus[k], &g, err);
            mp_settings base;
            table_base(&c, &c.model, &base);
            recommendation rec;
            mp_search_opts o = c.opts;
            o.budget_bytes = g.mem_bytes;
            o.host_budget_bytes = g.host_ram_bytes; /* plan's default: the GPU's typical machine */
            mp_search_result r;
            if (recommend(&c, &c.model, &base, &g, cache, &rec, err) || mp_search(&c.model, &base, &g, &o, &r, err)) {
                CHECK(0, "%s on %s: %s", models[i], gpus[k], err);
                continue;
            }
            if (r.n && r.cands[0].fits) {
                const mp_settings *s = &r.cands[0].s;
                cells++;
                same += rec.fits && !rec.multi && s->precision == rec.s.precision && s->optimizer == rec.s.optimizer &&
                        s->checkpointing == rec.s.checkpointing && s->attention == rec.s.attention &&
                        s->ce == rec.s.ce && s->batch == rec.s.batch && s->lora_rank == rec.s.lora_rank &&
                        s->quant == rec.s.quant && s->zero == rec.s.zero && s->offload == rec.s.offload;
            } else {
                cells++;
                same += !rec.fits || rec.multi; /* nothing on one GPU either way */
            }
            mp_search_free(&r);
        }
        free(cache);
    }
    CHECK(cells == 30 && same == cells, "table's plan is plan's plan in %d of %d cells", same, cells);

    mp_model m;
    mp_settings s;
    mp_gpu g;
    char err[MP_ERR_LEN];
    mp_model_lookup("gpt2", &m, err);
    mp_settings_default(&s, &m);
    mp_gpu_lookup("rtx4090", &g, err);
    mp_search_opts o = {.task = MP_TASK_ANY, .budget_bytes = g.mem_bytes, .headroom = 0.1, .pinned = MP_PIN_SEQ,
                        .only_optimizers = 1u << MP_LION, .only_precisions = 1u << MP_FP32 | 1u << MP_PURE_BF16};
    mp_search_result r;
    bool only = mp_search(&m, &s, &g, &o, &r, err) == 0 && r.n > 0;
    for (size_t i = 0; only && i < r.n; i++)
        only = r.cands[i].s.optimizer == MP_LION &&
               (r.cands[i].s.precision == MP_FP32 || r.cands[i].s.precision == MP_PURE_BF16);
    CHECK(only, "only_optimizers and only_precisions restrict the search (%zu plans, lion, fp32 or pure-bf16)", r.n);
    mp_search_free(&r);
}

/* A CSV from the binary: a header and ROWS rows of COLUMNS fields. */
static int check_file(const char *file, int rows, int cols)
{
    sheet t;
    CHECK(read_sheet(file, &t) == 0, "%s parses with libcsv (strict)", file);
    CHECK(t.nrows == rows + 1, "%s: a header and %d rows (%d lines)", file, rows, t.nrows);
    bool shape = true;
    for (int r = 0; r < t.nrows; r++) shape &= t.nf[r] == cols;
    CHECK(shape, "%s: every line has %d fields", file, cols);
    free_sheet(&t);
    return check_summary();
}

int main(int argc, char **argv)
{
    if (argc == 4) return check_file(argv[1], atoi(argv[2]), atoi(argv[3]));
    snprintf(dir, sizeof dir, "/tmp/memplan-csv-XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL cannot make a temporary folder\n");
        return 1;
    }
    test_table_rows();
    test_nothing_fits_note();
    test_matrix();
    test_ladder();
    test_sweep();
    test_same_as_plan();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) printf("     (could not remove %s)\n", dir);
    return check_summary();
}
