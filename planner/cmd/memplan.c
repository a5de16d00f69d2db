/* memplan.c — the command: its subcommands, one row each, and main. */
#include "cli.h"

#include "common/version.h"

#include <stdlib.h>
#include <string.h>

static int cmd_help(int argc, char **argv);

static const cli_command commands[] = {
    {"plan", cmd_plan, NULL, "MODEL BUDGET [TECHNIQUES] [OUTPUT]",
     "the best plan that fits the budget, and why (the default)", 0},
    {"estimate", cmd_estimate, NULL, "MODEL [--gpu G] TECHNIQUES [OUTPUT]", "the memory of one configuration", 0},
    {"list", NULL, cmd_list, "models|gpus|frameworks [--format text|json|csv]", "the profiles", 0},
    {"table", cmd_table, NULL, "MODEL|--models LIST [--gpus LIST] [TECHNIQUES] [OUTPUT]",
     "the plan on each GPU, or a models x GPUs matrix", CLI_GRID | CLI_LISTS},
    {"ladder", cmd_ladder, NULL, "MODEL [--gpu G] [TECHNIQUES] [OUTPUT]",
     "the memory as techniques are added one at a time", CLI_GRID},
    {"sweep", cmd_sweep, NULL, "MODEL --gpu G [TECHNIQUES] [OUTPUT]",
     "every combination the search estimates, best first", CLI_GRID},
    {"plot", cmd_plot, NULL, "MODEL [--gpu G] [--ladder] [TECHNIQUES] [-o FILE.svg]",
     "an SVG of the plan and its alternatives, or of the ladder", CLI_SVG},
    {"check", NULL, cmd_check, "FILE... [--gpu G] [--gpus N] [--model M] [--format text|json|csv]",
     "the configs a run already has: do they fit, and what to change", 0},
    {"calibrate", NULL, cmd_calibrate,
     "MEASUREMENTS.csv [--framework BASE] [--name NAME] [-o OUT.csv] [--format text|json]",
     "a framework profile fitted to measured runs", 0},
    {"help", NULL, cmd_help, NULL, NULL, 0},
};
#define NCOMMANDS (int)(sizeof commands / sizeof *commands)

static void usage(FILE *f)
{
    for (int i = 0; i < NCOMMANDS; i++)
        if (commands[i].args)
            fprintf(f, "%s memplan %s%s%s %s\n", i ? "      " : "usage:", i ? "" : "[", commands[i].name,
                    i ? "" : "]", commands[i].args);
    fputs("\ncommands:\n", f);
    for (int i = 0; i < NCOMMANDS; i++)
        if (commands[i].summary) fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fputc('\n', f);
    cli_help(f);
    fputs("exit status: 0 a plan fits (or the estimate was made), 1 nothing fits, 2 bad input\n", f);
}

static int cmd_help(int argc, char **argv)
{
    usage(stdout);
    return 0;
}

static const cli_command *find_command(const char *name)
{
    for (int i = 0; i < NCOMMANDS; i++)
        if (!strcmp(name, commands[i].name)) return &commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    char list[256];
    size_t n = 0;
    list[0] = 0;
    for (int i = 0; i < NCOMMANDS; i++)
        if (commands[i].summary) n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", commands[i].name);
    return cli_error("unknown command '%s' (%s; memplan --help)", name, list);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))) {
        printf("memplan %s\n", MP_VERSION);
        return 0;
    }
    const cli_command *cmd = &commands[0]; /* plan, when the first argument is an option */
    int first = 1;
    if (argc > 1 && argv[1][0] != '-') {
        if (!(cmd = find_command(argv[1]))) return unknown_command(argv[1]);
        first = 2;
    }
    argv[first - 1] = argv[0]; /* getopt wants argv[0] in front */
    argc -= first - 1;
    argv += first - 1;
    if (cmd->main) return cmd->main(argc, argv);
    cli c;
    int rc = cli_parse(&c, argc, argv, cmd);
    if (rc == CLI_HELP) return cmd_help(argc, argv);
    return rc ? rc : cmd->run(&c);
}
