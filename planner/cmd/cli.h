/* cli.h — the memplan command's shared state: parsed flags and the printers. */
#ifndef MEMPLAN_CLI_H
#define MEMPLAN_CLI_H

#include "memplan.h"

#include <stdio.h>

#define EXIT_NOFIT 1   /* the answer is "nothing fits" */
#define EXIT_USAGE 2   /* bad input */

typedef enum { FMT_TEXT, FMT_JSON, FMT_CSV, FMT_MARKDOWN } out_format;

typedef struct cli {
    /* the model, as given */
    const char *model_name, *hf_config, *family;
    double params;
    mp_model model;
    char model_how[200];       /* how the model was obtained, said in the output */
    /* the budget */
    const char *gpu_name;
    mp_gpu gpu;
    bool have_gpu;
    double headroom;
    /* the settings and which of them the user pinned */
    mp_settings s;
    unsigned pinned;
    mp_search_opts opts;
    /* output */
    out_format format;
    bool explain;
    const char *emit, *out_path, *solve;
    int top;
} cli;

/* Parse argv (after the subcommand) into c. Returns 0, or EXIT_USAGE after
 * printing the error; help exits 0 from inside. */
int cli_parse(cli *c, int argc, char **argv, const char *cmd);
/* Print "memplan: error: ..." and return EXIT_USAGE. */
int cli_error(const char *fmt, ...);

/* Printers (report.c) */
void print_estimate_text(FILE *f, const cli *c, const mp_settings *s, const mp_estimate *e);
void print_estimate_json(FILE *f, const cli *c, const mp_settings *s, const mp_estimate *e,
                         bool fits, const char *extra_json);
void print_csv_header(FILE *f);
void print_csv_row(FILE *f, const cli *c, const mp_settings *s, const mp_estimate *e, bool fits);
const char *plan_summary(const mp_settings *s, char *buf, size_t len);

int cmd_plan(cli *c);
int cmd_estimate(cli *c);
int cmd_list(int argc, char **argv);

#endif
