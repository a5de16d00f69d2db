/* check.c — memplan check FILE... (check/check.h): the configs people already
 * have, read; whether they fit the GPU; what to change, in their own words. */
#include "cli.h"

#include <csv.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "check/check.h"
#include "common/errors.h"
#include "common/units.h"
#include "settings/options.h"
#include "settings/vocabulary.h"

typedef struct check_args {
    const char *model, *hf_config, *framework, *gpu;
    mp_settings set;          /* settings given as flags (--batch 4): they win over the files */
    const char *set_names[64];
    int nset;
    double headroom;
    int format;               /* 0 text, 1 json, 2 csv */
    bool help;
} check_args;

#define ARG(f) offsetof(check_args, f), sizeof(((check_args *)0)->f)
static const char *const check_formats[] = {"text", "json", "csv"};
static const mp_vocab check_format_names = {.n = 3, .names = check_formats};
static const mp_opt check_opts[] = {
    {"gpu", MP_OPT_STRING, ARG(gpu), .arg = "G", .help = "the GPU to fit on: a profile or a size (24GB)"},
    {"model", MP_OPT_STRING, ARG(model), .arg = "NAME", .help = "the model, when the files name none memplan knows"},
    {"hf-config", MP_OPT_STRING, ARG(hf_config), .arg = "FILE", .help = "the model's config.json instead"},
    {"framework", MP_OPT_STRING, ARG(framework), .arg = "P", .help = "the stack's profile (default: the format's)"},
    {"headroom", MP_OPT_FRACTION, ARG(headroom), .arg = "H", .help = "fraction kept free: 0.1 or 10% (default 10%)"},
    {"format", MP_OPT_ENUM, ARG(format), .vocab = &check_format_names, .or_last = true,
     .help = "the report (default text)"},
    {"help", MP_OPT_FLAG, ARG(help), .short_name = 'h', .help = "this text"},
    {0},
};

static const char check_usage[] =
    "usage: memplan check FILE... [--gpu G] [--model M | --hf-config F] [--framework P]\n"
    "                     [--batch B --seq T --gpus N ...] [--format text|json|csv]\n"
    "Reads the training configs a run already has (axolotl, LLaMA-Factory, torchtune, a Trainer's or\n"
    "TRL's YAML or JSON, DeepSpeed JSON, accelerate YAML, memtrain), by content; several together\n"
    "when one names another. Says which settings it found and from which key, the memory per GPU,\n"
    "whether it fits, the largest micro-batch and sequence that fit, and the smallest changes that\n"
    "fit, in the file's own words. Exit status: 0 it fits, 1 it does not, 2 bad input.\n";

static int parse(int argc, char **argv, check_args *a, int *first)
{
    *a = (check_args){.headroom = 0.10};
    mp_settings_default(&a->set, NULL);
    mp_opt_group g[2] = {{"options:", check_opts, a, NULL},
                         {"settings the files leave to the launcher or to \"auto\", or to override them:",
                          mp_settings_opts, &a->set, NULL}};
    mp_opt_parser p;
    mp_opt_start(&p, g, 2, NULL, argc, argv);
    char err[MP_OPT_ERR_LEN];
    const mp_opt *row;
    int r;
    while ((r = mp_opt_next(&p, &row, err)) == MP_OPT_GIVEN)
        if (a->help) {
            fputs(check_usage, stdout);
            mp_opt_help(stdout, g, 2, 90);
            return CLI_HELP;
        }
    if (r == MP_OPT_UNKNOWN) return cli_error("%s for memplan check (memplan check --help)", err);
    if (r == MP_OPT_BAD) return cli_error("%s", err);
    if (optind >= argc) return cli_error("memplan check needs a config file: memplan check FILE... --gpu G");
    if (argc - optind > CK_MAX_FILES) return cli_error("memplan check reads at most %d files", CK_MAX_FILES);
    if (a->model && a->hf_config) return cli_error("give one of --model and --hf-config");
    for (const mp_opt *o = mp_settings_opts; o->name; o++)
        if (mp_opt_given(&p, o->name)) a->set_names[a->nset++] = o->name;
    *first = optind;
    return 0;
}

static void print_text(const mp_check *c, const mp_gpu *gpu, const check_args *a)
{
    char x[32], y[32], z[32];
    printf("memplan check:");
    for (int i = 0; i < c->nfiles; i++) printf("%s %s (%s)", i ? "," : "", c->file[i], c->format[i]);
    printf("\nmodel     %s (%s)\n", c->model.name, c->model_how);
    /* columns as wide as their longest entry (a LoRA target list, a nested key) */
    int ws = 12, wv = 5, wk = 12;
    for (int i = 0; i < c->norigins; i++) {
        const ck_origin *o = &c->origin[i];
        int ls = (int)strlen(o->setting), lv = (int)strlen(o->value), lk = (int)strlen(o->key);
        ws = ls > ws ? ls : ws, wv = lv > wv ? lv : wv, wk = lk > wk ? lk : wk;
    }
    printf("\nsettings\n  %-*s %-*s %-*s in\n", ws, "setting", wv, "value", wk, "from the key");
    for (int i = 0; i < c->norigins; i++) {
        const ck_origin *o = &c->origin[i];
        printf("  %-*s %-*s %-*s %s%s%s\n", ws, o->setting, wv, o->value, wk, o->key, o->file,
               o->how[0] && o->file[0] ? ": " : "", o->how);
    }
    if (c->nunknown) {
        printf("not read  ");
        for (int i = 0; i < c->nunknown; i++) printf("%s%s", i ? ", " : "", c->unknown[i]);
        printf(" (keys memplan does not know: none of its tables says they change memory)\n");
    }
    for (int i = 0; i < c->nnotes; i++) printf("note      %s\n", c->note[i]);
    printf("\n  per GPU           at peak\n");
    for (int k = 0; k < MP_NCOMP; k++) printf("  %-12s %12s\n", mp_component_name(k), mp_fmt_gib(c->e.at_peak[k], x, sizeof x));
    printf("  allocated    %12s\n  reserved     %12s\n  device       %12s   (what nvidia-smi shows)\n",
           mp_fmt_gib(c->e.total_bytes, x, sizeof x), mp_fmt_gib(c->e.reserved_bytes, y, sizeof y),
           mp_fmt_gib(c->e.device_bytes, z, sizeof z));
    if (!gpu) return;
    double usable = gpu->mem_bytes * (1 - a->headroom);
    printf("\nverdict   %s on %s: %s of the %s usable (%.0f%% headroom kept)\n", c->fits ? "fits" : "DOES NOT FIT",
           gpu->name, mp_fmt_gib(c->e.device_bytes, x, sizeof x), mp_fmt_gib(usable, y, sizeof y), a->headroom * 100);
    if (c->max_batch > 0 || c->max_seq > 0)
        printf("largest   micro-batch %lld, sequence %lld (each with the rest as given)\n", (long long)c->max_batch,
               (long long)c->max_seq);
    else printf("largest   nothing fits, whatever the micro-batch or sequence\n");
    if (c->fits) return;
    if (!c->nfixes) {
        printf("no single change the config can say fits this GPU (memplan plan searches them all)\n");
        return;
    }
    printf("to fit, change one of:\n");
    for (int i = 0; i < c->nfixes; i++)
        printf("  %-64s %s on the device\n", c->fix[i].change, mp_fmt_gib(c->fix[i].device_bytes, x, sizeof x));
}

static json_t *json_of(const mp_check *c, const mp_gpu *gpu, const check_args *a)
{
    json_t *o = json_object(), *files = json_array(), *origins = json_array(), *unknown = json_array(),
           *comp = json_object(), *fixes = json_array();
    for (int i = 0; i < c->nfiles; i++)
        json_array_append_new(files, json_pack("{s:s,s:s}", "path", c->file[i], "format", c->format[i]));
    for (int i = 0; i < c->norigins; i++) {
        const ck_origin *r = &c->origin[i];
        json_array_append_new(origins, json_pack("{s:s,s:s,s:s,s:s,s:s}", "setting", r->setting, "value", r->value,
                                                 "key", r->key, "file", r->file, "how", r->how));
    }
    for (int i = 0; i < c->nunknown; i++) json_array_append_new(unknown, json_string(c->unknown[i]));
    json_t *notes = json_array();
    for (int i = 0; i < c->nnotes; i++) json_array_append_new(notes, json_string(c->note[i]));
    for (int k = 0; k < MP_NCOMP; k++) json_object_set_new(comp, mp_component_name(k), json_real(c->e.at_peak[k]));
    for (int i = 0; i < c->nfixes; i++)
        json_array_append_new(fixes, json_pack("{s:s,s:s,s:f}", "change", c->fix[i].change, "setting",
                                               c->fix[i].setting, "device_bytes", c->fix[i].device_bytes));
    json_object_set_new(o, "files", files);
    json_object_set_new(o, "model", json_pack("{s:s,s:s}", "name", c->model.name, "how", c->model_how));
    json_object_set_new(o, "settings", origins);
    json_object_set_new(o, "unknown_keys", unknown);
    json_object_set_new(o, "notes", notes);
    json_object_set_new(o, "components", comp);
    json_object_set_new(o, "allocated_bytes", json_real(c->e.total_bytes));
    json_object_set_new(o, "reserved_bytes", json_real(c->e.reserved_bytes));
    json_object_set_new(o, "device_bytes", json_real(c->e.device_bytes));
    if (gpu) {
        json_object_set_new(o, "gpu", json_string(gpu->name));
        json_object_set_new(o, "budget_bytes", json_real(gpu->mem_bytes));
        json_object_set_new(o, "headroom", json_real(a->headroom));
        json_object_set_new(o, "fits", json_boolean(c->fits));
        json_object_set_new(o, "max_batch", json_integer(c->max_batch));
        json_object_set_new(o, "max_seq", json_integer(c->max_seq));
        json_object_set_new(o, "fixes", fixes);
    } else {
        json_decref(fixes);
    }
    return o;
}

static void csv_put(FILE *f, const char *v, int first)
{
    if (!first) fputc(',', f);
    csv_fwrite(f, v, strlen(v));
}

static void print_csv(const mp_check *c, const mp_gpu *gpu)
{
    static const char *const head[] = {"files", "model", "gpu", "fits", "allocated_bytes", "reserved_bytes",
                                       "device_bytes", "max_batch", "max_seq", "fix"};
    for (size_t i = 0; i < sizeof head / sizeof *head; i++) csv_put(stdout, head[i], i == 0);
    fputc('\n', stdout);
    char files[1100] = "", v[64];
    for (int i = 0; i < c->nfiles; i++)
        snprintf(files + strlen(files), sizeof files - strlen(files), "%s%s", i ? ";" : "", c->file[i]);
    csv_put(stdout, files, 1);
    csv_put(stdout, c->model.name, 0);
    csv_put(stdout, gpu ? gpu->name : "", 0);
    csv_put(stdout, !gpu ? "" : c->fits ? "true" : "false", 0);
    const double bytes[] = {c->e.total_bytes, c->e.reserved_bytes, c->e.device_bytes};
    for (int i = 0; i < 3; i++) snprintf(v, sizeof v, "%.0f", bytes[i]), csv_put(stdout, v, 0);
    snprintf(v, sizeof v, "%lld", (long long)c->max_batch), csv_put(stdout, v, 0);
    snprintf(v, sizeof v, "%lld", (long long)c->max_seq), csv_put(stdout, v, 0);
    csv_put(stdout, c->nfixes ? c->fix[0].change : "", 0);
    fputc('\n', stdout);
}

int cmd_check(int argc, char **argv)
{
    check_args a;
    int first = 0;
    int rc = parse(argc, argv, &a, &first);
    if (rc) return rc == CLI_HELP ? 0 : rc;
    char err[MP_ERR_LEN];
    mp_gpu gpu;
    if (a.gpu && mp_gpu_lookup(a.gpu, &gpu, err)) return cli_error("%s for --gpu", err);
    mp_check_opts o = {.model = a.model, .hf_config = a.hf_config, .framework = a.framework, .set = &a.set,
                       .set_names = a.set_names, .nset = a.nset, .gpu = a.gpu ? &gpu : NULL,
                       .headroom = a.headroom};
    mp_check *c = malloc(sizeof *c);
    if (!c) return cli_error("out of memory");
    if (mp_check_run((const char *const *)argv + first, argc - first, &o, c, err)) {
        free(c);
        return cli_error("%s", err);
    }
    if (a.format == 1) {
        json_t *j = json_of(c, o.gpu, &a);
        char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(j);
        if (text) puts(text);
        free(text);
    } else if (a.format == 2) {
        print_csv(c, o.gpu);
    } else {
        print_text(c, o.gpu, &a);
    }
    rc = o.gpu && !c->fits ? EXIT_NOFIT : 0;
    free(c);
    return rc;
}
