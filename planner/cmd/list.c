/* list.c — memplan list models|gpus|frameworks [--format text|json|csv] */
#include "cli.h"
#include "common/errors.h"
#include "model/model.h"
#include "profiles/profiles.h"

#include <csv.h>
#include <jansson.h>
#include <string.h>

static void csv_out(FILE *f, const char *v, int first)
{
    if (!first) fputc(',', f);
    csv_fwrite(f, v, strlen(v));
}

static void csv_header(FILE *f, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) csv_out(f, names[i], i == 0);
    fputc('\n', f);
}

static void list_models(out_format fmt, json_t *arr)
{
    static const char *const h[] = {"name", "params", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "experts", "source"};
    char v[64];
    if (fmt == FMT_CSV) csv_header(stdout, h, 10);
    for (int i = 0; mp_model_at(i); i++) {
        const mp_model *m = mp_model_at(i);
        mp_params p;
        mp_param_count(m, &p);
        if (fmt == FMT_TEXT) puts(m->name);
        else if (fmt == FMT_CSV) {
            csv_out(stdout, m->name, 1);
            long long f[] = {(long long)p.total, m->layers, m->hidden, m->heads, m->kv_heads, m->ffn, m->vocab, m->experts};
            for (int k = 0; k < 8; k++) snprintf(v, sizeof v, "%lld", f[k]), csv_out(stdout, v, 0);
            csv_out(stdout, m->source, 0);
            fputc('\n', stdout);
        } else {
            json_t *o = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s}", "name", m->name,
                                  "params", (json_int_t)p.total, "layers", (json_int_t)m->layers,
                                  "hidden", (json_int_t)m->hidden, "heads", (json_int_t)m->heads,
                                  "kv_heads", (json_int_t)m->kv_heads, "ffn", (json_int_t)m->ffn,
                                  "vocab", (json_int_t)m->vocab, "experts", (json_int_t)m->experts,
                                  "source", m->source);
            json_array_append_new(arr, o);
        }
    }
}

static void list_gpus(out_format fmt, json_t *arr)
{
    static const char *const h[] = {"name", "label", "mem_bytes", "bf16", "tflops_16", "tflops_32", "bandwidth_bytes_per_s", "source"};
    char v[64];
    if (fmt == FMT_CSV) csv_header(stdout, h, 8);
    for (int i = 0; mp_gpu_at(i); i++) {
        const mp_gpu *g = mp_gpu_at(i);
        if (fmt == FMT_TEXT) puts(g->name);
        else if (fmt == FMT_CSV) {
            csv_out(stdout, g->name, 1);
            csv_out(stdout, g->label, 0);
            snprintf(v, sizeof v, "%.0f", g->mem_bytes), csv_out(stdout, v, 0);
            csv_out(stdout, g->bf16 ? "1" : "0", 0);
            snprintf(v, sizeof v, "%g", g->tflops_16), csv_out(stdout, v, 0);
            snprintf(v, sizeof v, "%g", g->tflops_32), csv_out(stdout, v, 0);
            snprintf(v, sizeof v, "%.0f", g->bandwidth), csv_out(stdout, v, 0);
            csv_out(stdout, g->source, 0);
            fputc('\n', stdout);
        } else {
            json_array_append_new(arr, json_pack("{s:s,s:s,s:I,s:b,s:f,s:f,s:f,s:s}", "name", g->name,
                                                 "label", g->label, "mem_bytes", (json_int_t)g->mem_bytes,
                                                 "bf16", g->bf16, "tflops_16", g->tflops_16,
                                                 "tflops_32", g->tflops_32, "bandwidth_bytes_per_s",
                                                 g->bandwidth, "source", g->source));
        }
    }
}

static void list_frameworks(out_format fmt, json_t *arr)
{
    static const char *const h[] = {"name", "context_bytes", "workspace_bytes", "frag", "source"};
    char v[64];
    if (fmt == FMT_CSV) csv_header(stdout, h, 5);
    for (int i = 0; mp_framework_at(i); i++) {
        const mp_framework *f = mp_framework_at(i);
        if (fmt == FMT_TEXT) puts(f->name);
        else if (fmt == FMT_CSV) {
            csv_out(stdout, f->name, 1);
            snprintf(v, sizeof v, "%.0f", f->context_bytes), csv_out(stdout, v, 0);
            snprintf(v, sizeof v, "%.0f", f->workspace_bytes), csv_out(stdout, v, 0);
            snprintf(v, sizeof v, "%g", f->frag), csv_out(stdout, v, 0);
            csv_out(stdout, f->source, 0);
            fputc('\n', stdout);
        } else {
            json_array_append_new(arr, json_pack("{s:s,s:I,s:I,s:f,s:s}", "name", f->name, "context_bytes",
                                                 (json_int_t)f->context_bytes, "workspace_bytes",
                                                 (json_int_t)f->workspace_bytes, "frag", f->frag,
                                                 "source", f->source));
        }
    }
}

static const struct {
    const char *name;
    void (*list)(out_format fmt, json_t *arr);
} lists[] = {{"models", list_models}, {"gpus", list_gpus}, {"frameworks", list_frameworks}};

int cmd_list(int argc, char **argv)
{
    const char *what = NULL;
    out_format fmt = FMT_TEXT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            if (cli_read_format(argv[++i], &fmt)) return EXIT_USAGE;
        } else if (!strncmp(argv[i], "--format=", 9)) {
            if (cli_read_format(argv[i] + 9, &fmt)) return EXIT_USAGE;
        } else if (!what && argv[i][0] != '-') {
            what = argv[i];
        } else {
            return cli_error("unexpected argument '%s' for memplan list", argv[i]);
        }
    }
    int k = 0;
    while (what && k < 3 && strcmp(what, lists[k].name)) k++;
    if (!what || k == 3)
        return cli_error("memplan list needs '%s', '%s' or '%s'%s%s%s", lists[0].name, lists[1].name, lists[2].name,
                         what ? " (got '" : "", what ? what : "", what ? "')" : "");
    char err[MP_ERR_LEN];
    if (mp_profiles_load(err)) return cli_error("%s", err);
    json_t *arr = json_array();
    lists[k].list(fmt, arr);
    if (fmt == FMT_JSON) {
        json_dumpf(arr, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    }
    json_decref(arr);
    return 0;
}
