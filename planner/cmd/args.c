/* args.c — memplan's flags: the shared rows (options.h) and memplan's own, read with
 * getopt_long, then checked together and the model resolved. */
#include "cli.h"
#include "common/errors.h"
#include "common/units.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mp_verror("memplan", NULL, fmt, ap);
    va_end(ap);
    return EXIT_USAGE;
}

/* ---------- choices of memplan's own flags ---------- */

static const char *const family_names[] = {"gpt2", "llama"};
static const mp_vocab families = {.n = 2, .names = family_names};
static const char *const norm_names[] = {"layernorm", "rmsnorm"}; /* mp_norm */
static const mp_vocab norms = {.n = 2, .names = norm_names};
static const char *const pos_names[] = {"learned", "rope", "alibi"}; /* mp_pos */
static const mp_vocab positions = {.n = 3, .names = pos_names};
static const char *const prefer_names[] = {"quality", "speed"}; /* prefer_speed */
static const mp_vocab preferences = {.n = 2, .names = prefer_names};

static const char *const mlp_names[] = {"gelu", "swiglu"}; /* mp_mlp */
static int mlp_parse(const char *s, int *v)
{
    if (!strcmp(s, "gelu")) *v = MP_MLP_GELU;
    else if (!strcmp(s, "swiglu") || !strcmp(s, "gated") || !strcmp(s, "geglu")) *v = MP_MLP_GATED;
    else return -1;
    return 0;
}
static const mp_vocab mlps = {2, mlp_names, NULL, mlp_parse};

static const char *const format_names[] = {"text", "json", "csv", "markdown"}; /* out_format */
static const mp_vocab formats = {.n = 3, .names = format_names};
/* table, ladder and sweep list markdown second; "md" is short for it */
static const char *const grid_format_names[] = {"text", "markdown", "csv", "json"};
static int grid_format_parse(const char *s, int *v)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, format_names[i])) {
            *v = i;
            return 0;
        }
    if (strcmp(s, "md")) return -1;
    *v = FMT_MARKDOWN;
    return 0;
}
static const mp_vocab grid_formats = {4, grid_format_names, NULL, grid_format_parse};

/* ---------- flags that read more than a value ---------- */

/* A number, as --gpus N takes it (else, for table, a list of GPU names or sizes). */
static bool is_number(const char *v)
{
    char *end;
    strtod(v, &end);
    return *v && end != v && !*end;
}

static int read_gpus(const mp_opt *o, const char *value, void *base, char *err)
{
    cli *c = base;
    if ((c->cmd->scope & CLI_LISTS) && !is_number(value)) { /* a list of GPU names */
        c->gpu_list = value;
        return 0;
    }
    if (!is_number(value)) {
        snprintf(err, MP_OPT_ERR_LEN,
                 "invalid value '%s' for --gpus (a GPU count; a list of GPU names is for memplan table)", value);
        return -1;
    }
    return mp_opt_read(mp_opt_find(mp_settings_opts, "gpus"), value, &c->s, &c->pinned, err);
}

static int read_format(const mp_opt *o, const char *value, void *base, char *err)
{
    cli *c = base;
    int f = mp_opt_choose(o, c->cmd->scope & CLI_GRID ? &grid_formats : &formats, value, err);
    if (f < 0) return -1;
    if (c->cmd->scope & CLI_SVG) {
        snprintf(err, MP_OPT_ERR_LEN, "memplan %s writes SVG: --format '%s' does not apply", c->cmd->name, value);
        return -1;
    }
    c->format = (out_format)f;
    return 0;
}

/* --host-ram: a size with its unit; a bare number is refused, as for --gpu. */
static int read_host_ram(const mp_opt *o, const char *value, void *base, char *err)
{
    cli *c = base;
    char why[MP_ERR_LEN];
    if (is_number(value)) {
        snprintf(err, MP_OPT_ERR_LEN, "host RAM '%.32s' has no unit: say %.32sGB (10^9 bytes) or %.32sGiB (2^30 bytes) for --host-ram",
                 value, value, value);
        return -1;
    }
    if (mp_parse_size(value, &c->host_ram, NULL, why) || c->host_ram <= 0) {
        snprintf(err, MP_OPT_ERR_LEN, "invalid size '%.32s' for --host-ram (e.g. 64GB or 256GiB)", value);
        return -1;
    }
    return 0;
}

/* ---------- the rows ---------- */

#define SHAPE(field) MP_OPT_AT(shape_flags, field)
static const mp_opt shape_opts[] = {
    {"family", MP_OPT_STRING, SHAPE(family), .vocab = &families, .or_last = true,
     .help = "a preset, with the dimensions below (default llama)"},
    {"layers", MP_OPT_INT, SHAPE(layers), .lo = 1, .hi = 100000, .arg = "N", .help = "transformer layers"},
    {"hidden", MP_OPT_INT, SHAPE(hidden), .lo = 1, .hi = 1 << 20, .arg = "N", .help = "hidden size"},
    {"heads", MP_OPT_INT, SHAPE(heads), .lo = 1, .hi = 1 << 16, .arg = "N", .help = "attention heads"},
    {"kv-heads", MP_OPT_INT, SHAPE(kv), .lo = 1, .hi = 1 << 16, .arg = "N",
     .help = "key/value heads (GQA; default: the heads)"},
    {"head-dim", MP_OPT_INT, SHAPE(head_dim), .lo = 1, .hi = 1 << 16, .arg = "N",
     .help = "head dimension (default: hidden / heads)"},
    {"ffn", MP_OPT_INT, SHAPE(ffn), .lo = 1, .hi = 1 << 22, .arg = "N", .help = "the MLP's inner width"},
    {"vocab", MP_OPT_INT, SHAPE(vocab), .lo = 1, .hi = 1 << 24, .arg = "N", .help = "vocabulary size"},
    {"max-pos", MP_OPT_INT, SHAPE(max_pos), .lo = 1, .hi = 1 << 24, .arg = "N", .help = "maximum positions"},
    {"mlp", MP_OPT_ENUM, SHAPE(mlp), .vocab = &mlps, .or_last = true, .help = "the MLP (swiglu: gated)"},
    {"norm", MP_OPT_ENUM, SHAPE(norm), .vocab = &norms, .or_last = true, .help = "the normalisation"},
    {"pos", MP_OPT_ENUM, SHAPE(pos), .vocab = &positions, .or_last = true, .help = "position encoding"},
    {"bias", MP_OPT_BOOL, SHAPE(bias), .help = "biases in linear layers and norms"},
    {"tied", MP_OPT_BOOL, SHAPE(tied), .help = "the output head shares the token embedding"},
    {"experts", MP_OPT_INT, SHAPE(experts), .lo = 1, .hi = 4096, .arg = "N", .help = "mixture of experts: experts per layer"},
    {"top-k", MP_OPT_INT, SHAPE(top_k), .lo = 1, .hi = 4096, .arg = "K", .help = "experts per token (default 2)"},
    {"shared-experts", MP_OPT_INT, SHAPE(shared), .lo = 0, .hi = 64, .arg = "N", .help = "experts every token uses"},
    {"expert-ffn", MP_OPT_INT, SHAPE(expffn), .lo = 1, .hi = 1 << 22, .arg = "F",
     .help = "inner width of one expert (default: --ffn)"},
    {0},
};

#define CLI(field) MP_OPT_AT(cli, field)
static const mp_opt budget_opts[] = {
    {"gpu", MP_OPT_STRING, CLI(gpu_name), .arg = "G",
     .help = "a GPU profile (memplan list gpus) or a size: 12GB (10^9), 12GiB (2^30), 24576MiB"},
    {"gpus", MP_OPT_CUSTOM, CLI(s.gpus), .arg = "N", .read = read_gpus,
     .help = "GPUs in the job (default 1); table: also GPU names or sizes, comma-separated "
             "(default: every GPU profile)"},
    {"headroom", MP_OPT_FRACTION, CLI(headroom), .arg = "H", .help = "fraction kept free: 0.1 or 10% (default 10%)"},
    {"host-ram", MP_OPT_CUSTOM, CLI(host_ram), .arg = "SIZE", .read = read_host_ram,
     .help = "host RAM per node (e.g. 64GB): plans that need more do not fit"},
    {"framework", MP_OPT_STRING, CLI(framework), .arg = "F",
     .help = "a framework profile (memplan list frameworks) or a CSV written by memplan calibrate"},
    {"models", MP_OPT_STRING, CLI(models), .arg = "LIST",
     .help = "table: several profiles, comma-separated, for a models x GPUs matrix"},
    {0},
};

static const mp_opt search_opts[] = {
    {"task", MP_OPT_ENUM, CLI(opts.task), .vocab = &mp_vocab_task, .list_from = 1, .or_last = true,
     .help = "the kind of training: full fine-tuning, LoRA, QLoRA, or any (the most complete that fits)"},
    {"lora", MP_OPT_FLAG, CLI(opts.task), .set = MP_TASK_LORA, .help = "LoRA: the same as --task lora"},
    {"qlora", MP_OPT_FLAG, CLI(opts.task), .set = MP_TASK_QLORA, .help = "QLoRA: the same as --task qlora"},
    {"global-batch", MP_OPT_INT, CLI(opts.global_batch), .lo = 1, .hi = 1 << 24, .arg = "G",
     .help = "sequences per optimizer step over the job (sets --accum)"},
    {"prefer", MP_OPT_ENUM, CLI(opts.prefer_speed), .vocab = &preferences, .or_last = true,
     .help = "rank plans by kind of training, then speed (quality), or by tokens/s alone"},
    {"max-batch", MP_OPT_INT, CLI(opts.max_batch), .lo = 1, .hi = 1 << 16, .arg = "N",
     .help = "the largest micro-batch searched (default 64)"},
    {0},
};

static const mp_opt output_opts[] = {
    {"format", MP_OPT_CUSTOM, CLI(format), .vocab = &grid_formats, .or_last = true, .read = read_format,
     .help = "markdown for table, ladder and sweep; plot writes SVG"},
    {"explain", MP_OPT_FLAG, CLI(explain), .help = "every term behind the numbers"},
    {"top", MP_OPT_INT, CLI(top), .lo = 0, .hi = 1000, .arg = "N", .help = "alternatives shown (default 5; 3 on the plan's text screen)"},
    {"solve", MP_OPT_STRING, CLI(solve), .arg = "Q",
     .help = "max-batch, max-seq or max-params: the largest that fits the --gpu"},
    {"emit", MP_OPT_STRING, CLI(emit), .arg = "KIND",
     .help = "the plan as a runnable config: memtrain, hf, deepspeed, accelerate, launch, "
             "torchtune, axolotl or llamafactory (-o DIR/: the bundle that runs it)"},
    {"output", MP_OPT_STRING, CLI(out_path), .short_name = 'o', .arg = "FILE",
     .help = "write --emit's config, a table, ladder or sweep, or plot's SVG to FILE, not stdout"},
    {"ladder", MP_OPT_FLAG, CLI(ladder), .help = "plot: the technique ladder, not the plan and its alternatives"},
    {"wide", MP_OPT_FLAG, CLI(wide), .help = "table, ladder, sweep: every column on screen, past 120 columns"},
    {"help", MP_OPT_FLAG, CLI(help), .short_name = 'h', .help = "this text"},
    {0},
};

/* The groups, in help's order; a row named twice counts once, where it comes first. */
enum { NGROUPS = 6 };
static void cli_groups(cli *c, mp_opt_group g[NGROUPS])
{
    g[0] = (mp_opt_group){"model (one of):", mp_model_source_opts, &c->src, NULL};
    g[1] = (mp_opt_group){NULL, shape_opts, &c->shape, NULL};
    g[2] = (mp_opt_group){"budget:", budget_opts, c, NULL};
    g[3] = (mp_opt_group){"techniques (each one given is pinned; the rest are searched):", search_opts, c, NULL};
    g[4] = (mp_opt_group){NULL, mp_settings_opts, &c->s, NULL};
    g[5] = (mp_opt_group){"output:", output_opts, c, NULL};
}

void cli_help(FILE *f)
{
    static cli c;
    mp_opt_group g[NGROUPS];
    cli_groups(&c, g);
    mp_opt_help(f, g, NGROUPS, 80);
}

int cli_read_format(const char *value, out_format *fmt)
{
    char err[MP_OPT_ERR_LEN];
    int f = mp_opt_choose(mp_opt_find(output_opts, "format"), &formats, value, err);
    if (f < 0) return cli_error("%s", err);
    *fmt = (out_format)f;
    return 0;
}

/* ---------- the model ---------- */

static bool shape_given(const shape_flags *f)
{
    return f->layers || f->hidden || f->heads || f->kv || f->head_dim || f->ffn || f->vocab || f->max_pos ||
           f->experts || f->top_k || f->shared || f->expffn || f->mlp >= 0 || f->norm >= 0 || f->pos >= 0 ||
           f->bias >= 0 || f->tied >= 0;
}

/* The model from its one source (a profile, a config, a size or a preset). */
static int read_source(cli *c)
{
    char err[MP_ERR_LEN];
    const mp_model_source *src = &c->src;
    const shape_flags *f = &c->shape;
    int sources = !!src->name + !!src->hf_config + (src->params > 0);
    if (sources > 1) return cli_error("give one of --model, --hf-config or --params");
    mp_model *m = &c->model;
    memset(m, 0, sizeof *m);
    bool dims = f->layers || f->hidden || f->heads || f->vocab;
    if (src->name) {
        if (mp_model_lookup(src->name, m, err)) return cli_error("%s", err);
        char given[96];
        /* an instruct or chat variant says whose shapes it has */
        if (mp_model_is_variant(src->name))
            snprintf(c->model_how, sizeof c->model_how, "profile '%s', for '%s': the same shapes", m->name,
                     mp_quote(src->name, given, sizeof given));
        else
            snprintf(c->model_how, sizeof c->model_how, "profile '%s'", m->name);
    } else if (src->hf_config) {
        if (mp_model_from_hf_config(src->hf_config, m, err)) {
            /* a Hub id that a profile has the shapes of: --model takes it as it is */
            char why[MP_ERR_LEN];
            if (mp_hf_id_not_file(src->hf_config) && !mp_model_lookup(src->hf_config, m, why))
                return cli_error("%s; or --model %s, a profile with its shapes", err, m->name);
            return cli_error("%s", err);
        }
        char shown[160]; /* a path as typed, shown as one line */
        snprintf(c->model_how, sizeof c->model_how, "Hugging Face config '%s'",
                 mp_quote(src->hf_config, shown, sizeof shown));
    } else if (src->params > 0) {
        if (dims) return cli_error("--params infers the shape: give it without --layers/--hidden/--heads/--vocab");
        if (mp_model_from_params(src->params, m, err)) return cli_error("%s", err);
        snprintf(c->model_how, sizeof c->model_how, "inferred from --params %.3g", src->params);
    } else if (f->family || dims) {
        if (mp_model_preset(m, f->family ? f->family : "llama", err)) return cli_error("%s", err);
        snprintf(c->model_how, sizeof c->model_how, "explicit dimensions, %s preset",
                 f->family ? f->family : "llama");
    } else {
        return cli_error("no model: give --model NAME, --hf-config FILE, --params N or --family with dimensions");
    }
    if (f->family && sources && mp_model_preset(m, f->family, err)) return cli_error("%s", err);
    return 0;
}

/* The dimension flags over the model; true when they changed its shape. */
static bool apply_shape(const cli *c, mp_model *m)
{
    const shape_flags *f = &c->shape;
    bool profile = c->src.name || c->src.hf_config, reshaped = false;
#define OVR(field, val) if (val) { m->field = val; reshaped = true; }
    OVR(layers, f->layers) OVR(hidden, f->hidden) OVR(heads, f->heads) OVR(kv_heads, f->kv)
    OVR(head_dim, f->head_dim) OVR(ffn, f->ffn) OVR(vocab, f->vocab) OVR(max_pos, f->max_pos)
    OVR(experts, f->experts) OVR(top_k, f->top_k) OVR(shared_experts, f->shared) OVR(expert_ffn, f->expffn)
#undef OVR
    if (f->hidden || f->heads) {
        if (!f->head_dim) m->head_dim = 0;
        if (!f->ffn && !profile) m->ffn = 0;
        if (!f->kv && !profile) m->kv_heads = 0;
    }
    if (f->mlp >= 0) m->mlp = (mp_mlp)f->mlp, reshaped = true;
    if (f->norm >= 0) m->norm = (mp_norm)f->norm, reshaped = true;
    if (f->pos >= 0) m->pos = (mp_pos)f->pos, reshaped = true;
    if (f->bias >= 0) {
        m->qkv_bias = m->out_bias = m->mlp_bias = m->norm_bias = f->bias;
        reshaped = true;
    }
    if (f->tied >= 0) m->tied = f->tied, reshaped = true;
    if (m->experts && !m->top_k) m->top_k = 2;
    return reshaped;
}

/* --reward-model or --value-model: a profile, else a config.json. */
static int read_other_model(const char *flag, const char *spec, mp_model *m)
{
    char err[MP_ERR_LEN], why[MP_ERR_LEN], q[160];
    memset(m, 0, sizeof *m);
    if (!mp_model_lookup(spec, m, why)) return mp_model_finish(m, err) ? cli_error("--%s: %s", flag, err) : 0;
    memset(m, 0, sizeof *m);
    if (mp_model_from_hf_config(spec, m, err))
        return cli_error("--%s '%s' is neither a profile (memplan list models) nor a readable config.json: %s", flag,
                         mp_quote(spec, q, sizeof q), err);
    return mp_model_finish(m, err) ? cli_error("--%s: %s", flag, err) : 0;
}

static int resolve_model(cli *c)
{
    char err[MP_ERR_LEN];
    if (c->src.reward_model) {
        if (!strcmp(c->src.reward_model, "none")) c->s.reward_none = true;
        else if (read_other_model("reward-model", c->src.reward_model, &c->reward_m)) return EXIT_USAGE;
        else c->s.reward_model = &c->reward_m;
    }
    if (c->src.value_model) {
        if (read_other_model("value-model", c->src.value_model, &c->value_m)) return EXIT_USAGE;
        c->s.value_model = &c->value_m;
    }
    if (read_source(c)) return EXIT_USAGE;
    if (apply_shape(c, &c->model) && (c->src.name || c->src.hf_config)) {
        size_t n = strlen(c->model_how);
        snprintf(c->model_how + n, sizeof c->model_how - n, ", with dimensions overridden");
        c->model.published_params = 0;
    }
    if (mp_model_finish(&c->model, err)) return cli_error("%s", err);
    return 0;
}

/* ---------- checks across flags ---------- */

/* table, ladder, sweep, plot: the flags that belong to one of them */
static int check_scope(cli *c)
{
    unsigned scope = c->cmd->scope;
    const char *name = c->cmd->name;
    if (c->ladder && c->models)
        return cli_error("--ladder draws one model: it conflicts with --models '%s'", c->models);
    if (c->models && !(scope & CLI_LISTS))
        return cli_error("--models '%s' is for memplan table (give one --model to memplan %s)", c->models, name);
    if (c->ladder && !(scope & CLI_SVG))
        return cli_error("--ladder is for memplan plot (memplan ladder prints the ladder as a table)");
    if (c->models) {
        const char *other = c->src.name ? "--model" : c->src.hf_config ? "--hf-config" : c->src.params > 0 ? "--params"
                          : c->shape.family ? "--family" : NULL;
        if (other) return cli_error("--models '%s' conflicts with %s: give the models one way", c->models, other);
        if (shape_given(&c->shape))
            return cli_error("--models '%s' takes profiles as they are: dimension flags do not apply", c->models);
    }
    if ((scope & CLI_LISTS) && c->gpu_name && strchr(c->gpu_name, ',')) {
        if (c->gpu_list) return cli_error("--gpu '%s' conflicts with --gpus '%s': give the GPUs once", c->gpu_name, c->gpu_list);
        c->gpu_list = c->gpu_name;
        c->gpu_name = NULL;
    }
    if (c->gpu_list && c->gpu_name)
        return cli_error("--gpu '%s' conflicts with --gpus '%s': give the GPUs once", c->gpu_name, c->gpu_list);
    if (c->wide && !(scope & CLI_GRID))
        return cli_error("--wide is for memplan table, ladder and sweep, not memplan %s", name);
    if ((scope & (CLI_GRID | CLI_SVG)) && (c->emit || c->solve))
        return cli_error("%s '%s' is for memplan plan and estimate, not memplan %s", c->emit ? "--emit" : "--solve",
                         c->emit ? c->emit : c->solve, name);
    return 0;
}

/* --task pins what the kind of training needs: full fine-tuning no adapters
 * and no quantised base; LoRA a rank (default 16); QLoRA a rank and a 4-bit
 * base (default nf4-dq, as QLoRA's paper trains). A pin that contradicts the
 * task is refused, never silently dropped. */
static int apply_task(cli *c)
{
    const mp_task t = c->opts.task;
    const char *name = mp_task_name(t);
    bool rank_pinned = c->pinned & MP_PIN_LORA, quant_pinned = c->pinned & MP_PIN_QUANT;
    if (t == MP_TASK_ANY) return 0;
    if (t == MP_TASK_FULL) {
        if (rank_pinned && c->s.lora_rank > 0)
            return cli_error("--task full conflicts with --lora-rank %lld", (long long)c->s.lora_rank);
        if (c->s.quant != MP_QUANT_NONE)
            return cli_error("--task full conflicts with --quant %s: a quantised base is frozen",
                             mp_quant_name(c->s.quant));
        c->s.lora_rank = 0;
        return 0;
    }
    if (rank_pinned && c->s.lora_rank == 0)
        return cli_error("--task %s conflicts with --lora-rank 0 (full fine-tuning: --task full)", name);
    if (t == MP_TASK_LORA && c->s.quant != MP_QUANT_NONE)
        return cli_error("--task lora conflicts with --quant %s (a quantised base is --task qlora)",
                         mp_quant_name(c->s.quant));
    if (t == MP_TASK_QLORA && quant_pinned && c->s.quant == MP_QUANT_NONE)
        return cli_error("--task qlora conflicts with --quant none (LoRA on a 16-bit base is --task lora)");
    if (!rank_pinned) c->s.lora_rank = MP_DEFAULT_LORA_RANK;
    if (t == MP_TASK_QLORA && !quant_pinned) c->s.quant = MP_QUANT_NF4_DQ;
    return 0;
}

/* A pre-quantised checkpoint stores its linear layers quantised: the base is
 * what it stores (--quant follows it), and only adapters train on it
 * (transformers refuses to train a purely quantised model). */
static int apply_stored_quant(cli *c)
{
    const mp_quant q = c->model.stored_quant;
    const char *name = mp_quant_name(q);
    if (q == MP_QUANT_NONE) return 0;
    if ((c->pinned & MP_PIN_QUANT) && c->s.quant != q)
        return cli_error("--quant %s conflicts with the checkpoint, stored as %s (its quantization_config): "
                         "its 16-bit weights are not in it", mp_quant_name(c->s.quant), name);
    if (c->opts.task == MP_TASK_FULL || c->opts.task == MP_TASK_LORA)
        return cli_error("--task %s: the checkpoint is stored quantised (%s), so only adapters train on it "
                         "(--task qlora)", mp_task_name(c->opts.task), name);
    if ((c->pinned & MP_PIN_LORA) && c->s.lora_rank == 0)
        return cli_error("--lora-rank 0: the checkpoint is stored quantised (%s), so only adapters train on it", name);
    c->s.quant = q;
    c->pinned |= MP_PIN_QUANT;
    c->opts.task = MP_TASK_QLORA;
    return 0;
}

/* The budget, the defaults that depend on the model, and the search's options. */
static int settle(cli *c)
{
    char err[MP_ERR_LEN];
    if (c->emit && !(c->target = mp_emit_target_named(c->emit, err))) return cli_error("%s", err);
    /* a config is estimated as its stack runs it, unless another profile is named */
    if (!c->framework && c->target) c->framework = mp_emit_target_framework(c->target);
    if (c->framework && !(c->s.framework = mp_framework_find(c->framework, err))) return cli_error("%s", err);
    /* no --optimizer-impl (nor an optimizer name that says it, adamw_torch_fused): the step the
     * stack takes (frameworks.csv optimizer_impl: torchtune's recipes fused, PyTorch 1.13 on the
     * CPU per tensor) */
    if (!(c->pinned & MP_PIN_STEP) && c->s.step_impl == MP_STEP_FOREACH)
        c->s.step_impl = (mp_step_impl)settings_framework(&c->s)->optimizer_impl;
    if (c->gpu_name) {
        if (mp_gpu_lookup(c->gpu_name, &c->gpu, err)) return cli_error("%s for --gpu", err);
        c->have_gpu = true;
    }
    if (!c->seq_given) c->s.seq = mp_default_seq(&c->model);
    if (mp_settings_rollout_lengths(&c->s, c->seq_given, err)) return cli_error("%s", err);
    c->pinned |= MP_PIN_SEQ;
    if (apply_stored_quant(c) || apply_task(c)) return EXIT_USAGE;
    c->opts.headroom = c->headroom;
    c->opts.budget_bytes = c->have_gpu ? c->gpu.mem_bytes : 0;
    /* no --host-ram: the host RAM of the GPU's typical machine (gpus.csv host_ram_gib) */
    if (c->host_ram <= 0 && c->have_gpu && c->gpu.host_ram_bytes > 0)
        c->host_ram = c->gpu.host_ram_bytes, c->host_ram_typical = true;
    c->opts.host_budget_bytes = c->host_ram;
    c->opts.pinned = c->pinned;
    /* the planner proposes no ZeRO stage that shards nothing (memplan check reads one a config states) */
    if ((c->pinned & MP_PIN_ZERO) && mp_settings_idle_sharding(&c->s, err, sizeof err)) return cli_error("%s", err);
    /* The global batch is split evenly: each data-parallel rank takes the same
     * number of sequences (and, with the micro-batch pinned, whole micro-batches). */
    int64_t global = c->opts.global_batch, dp = mp_dp_degree(&c->s);
    if (dp < 1) dp = 1;
    if (global && global % dp)
        return cli_error("--global-batch '%lld' does not divide over %lld data-parallel GPUs: give a multiple of "
                         "%lld", (long long)global, (long long)dp, (long long)dp);
    if (global && (c->pinned & MP_PIN_BATCH) && !(c->pinned & MP_PIN_ACCUM)) {
        if (global % (c->s.batch * dp))
            return cli_error("--global-batch '%lld' is not a whole number of micro-batches of %lld on %lld GPU(s): "
                             "give a multiple of %lld", (long long)global, (long long)c->s.batch, (long long)dp,
                             (long long)(c->s.batch * dp));
        c->s.accum = global / (c->s.batch * dp);
    }
    return 0;
}

int cli_parse(cli *c, int argc, char **argv, const cli_command *cmd)
{
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    c->headroom = 0.10;
    c->top = 5;
    c->shape = (shape_flags){.mlp = -1, .norm = -1, .pos = -1, .bias = -1, .tied = -1};
    mp_settings_default(&c->s, NULL);

    mp_opt_group g[NGROUPS];
    cli_groups(c, g);
    mp_opt_parser p;
    mp_opt_start(&p, g, NGROUPS, &c->pinned, argc, argv);
    char err[MP_OPT_ERR_LEN];
    const mp_opt *row;
    int r;
    while ((r = mp_opt_next(&p, &row, err)) == MP_OPT_GIVEN)
        if (c->help) return CLI_HELP;
    if (r == MP_OPT_UNKNOWN) return cli_error("%s (memplan --help)", err);
    if (r == MP_OPT_BAD) return cli_error("%s", err);
    if (optind < argc) return cli_error("unexpected argument '%s' for memplan %s", argv[optind], cmd->name);
    if (mp_opt_given(&p, "task") + mp_opt_given(&p, "lora") + mp_opt_given(&p, "qlora") > 1)
        return cli_error("give the kind of training once: --task, --lora or --qlora");
    c->seq_given = mp_opt_given(&p, "seq");
    c->top_given = mp_opt_given(&p, "top");

    if (check_scope(c) || (!c->models && resolve_model(c))) return EXIT_USAGE;
    return settle(c);
}
