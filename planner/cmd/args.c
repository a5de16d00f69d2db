/* args.c — memplan's flags: one table, parsed with getopt_long, every value checked. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
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

enum {
    O_MODEL = 256, O_HF, O_PARAMS, O_FAMILY, O_LAYERS, O_HIDDEN, O_HEADS, O_KV, O_HEADDIM, O_FFN,
    O_VOCAB, O_MAXPOS, O_MLP, O_NORM, O_POS, O_BIAS, O_TIED, O_EXPERTS, O_TOPK, O_SHARED, O_EXPFFN,
    O_GPU, O_GPUS, O_HEADROOM, O_FRAMEWORK, O_PRECISION, O_OPTIMIZER, O_ADAM8, O_CKPT, O_ATTN,
    O_BATCH, O_ACCUM, O_GLOBAL, O_SEQ, O_CE, O_CECHUNK, O_LORA, O_TARGETS, O_QUANT, O_ZERO,
    O_OFFLOAD, O_TP, O_PP, O_EP, O_LOADER, O_DATASET, O_SHUFFLE, O_DROPOUT, O_TASK, O_PREFER,
    O_FORMAT, O_EXPLAIN, O_EMIT, O_SOLVE, O_TOP, O_MAXBATCH, O_MODELS, O_LADDER,
};

static const struct option options[] = {
    {"model", 1, 0, O_MODEL}, {"hf-config", 1, 0, O_HF}, {"params", 1, 0, O_PARAMS},
    {"family", 1, 0, O_FAMILY}, {"layers", 1, 0, O_LAYERS}, {"hidden", 1, 0, O_HIDDEN},
    {"heads", 1, 0, O_HEADS}, {"kv-heads", 1, 0, O_KV}, {"head-dim", 1, 0, O_HEADDIM},
    {"ffn", 1, 0, O_FFN}, {"vocab", 1, 0, O_VOCAB}, {"max-pos", 1, 0, O_MAXPOS},
    {"mlp", 1, 0, O_MLP}, {"norm", 1, 0, O_NORM}, {"pos", 1, 0, O_POS}, {"bias", 1, 0, O_BIAS},
    {"tied", 1, 0, O_TIED}, {"experts", 1, 0, O_EXPERTS}, {"top-k", 1, 0, O_TOPK},
    {"shared-experts", 1, 0, O_SHARED}, {"expert-ffn", 1, 0, O_EXPFFN},
    {"gpu", 1, 0, O_GPU}, {"gpus", 1, 0, O_GPUS}, {"headroom", 1, 0, O_HEADROOM},
    {"framework", 1, 0, O_FRAMEWORK}, {"precision", 1, 0, O_PRECISION},
    {"optimizer", 1, 0, O_OPTIMIZER}, {"adam8-block", 1, 0, O_ADAM8},
    {"checkpointing", 1, 0, O_CKPT}, {"attention", 1, 0, O_ATTN}, {"batch", 1, 0, O_BATCH},
    {"accum", 1, 0, O_ACCUM}, {"global-batch", 1, 0, O_GLOBAL}, {"seq", 1, 0, O_SEQ},
    {"ce", 1, 0, O_CE}, {"ce-chunk", 1, 0, O_CECHUNK}, {"lora-rank", 1, 0, O_LORA},
    {"lora-targets", 1, 0, O_TARGETS}, {"quant", 1, 0, O_QUANT}, {"zero", 1, 0, O_ZERO},
    {"offload", 1, 0, O_OFFLOAD}, {"tp", 1, 0, O_TP}, {"pp", 1, 0, O_PP}, {"ep", 1, 0, O_EP},
    {"loader", 1, 0, O_LOADER}, {"dataset-size", 1, 0, O_DATASET},
    {"shuffle-buffer", 1, 0, O_SHUFFLE}, {"dropout", 0, 0, O_DROPOUT}, {"task", 1, 0, O_TASK},
    {"prefer", 1, 0, O_PREFER}, {"format", 1, 0, O_FORMAT}, {"explain", 0, 0, O_EXPLAIN},
    {"emit", 1, 0, O_EMIT}, {"output", 1, 0, 'o'}, {"solve", 1, 0, O_SOLVE},
    {"top", 1, 0, O_TOP}, {"max-batch", 1, 0, O_MAXBATCH}, {"help", 0, 0, 'h'},
    {"models", 1, 0, O_MODELS}, {"ladder", 0, 0, O_LADDER},
    {0, 0, 0, 0},
};

static const char usage_text[] =
    "usage: memplan [plan] MODEL BUDGET [TECHNIQUES] [OUTPUT]\n"
    "       memplan estimate MODEL [--gpu G] TECHNIQUES [OUTPUT]\n"
    "       memplan list models|gpus|frameworks [--format text|json|csv]\n"
    "       memplan table MODEL|--models LIST [--gpus LIST] [TECHNIQUES] [OUTPUT]\n"
    "       memplan ladder MODEL [--gpu G] [TECHNIQUES] [OUTPUT]\n"
    "       memplan sweep MODEL --gpu G [TECHNIQUES] [OUTPUT]\n"
    "       memplan plot MODEL [--gpu G] [--ladder] [TECHNIQUES] [-o FILE.svg]\n"
    "       memplan calibrate MEASUREMENTS.csv [--framework BASE] [--name NAME] [-o OUT.csv] [--format text|json]\n"
    "\n"
    "model (one of):\n"
    "  --model NAME          a profile (memplan list models), e.g. llama-3.1-8b\n"
    "  --hf-config FILE      a Hugging Face config.json\n"
    "  --params N            only a size (7e9, 7B, 125M): a Llama-like shape is assumed\n"
    "  --family gpt2|llama   a preset, with --layers --hidden --heads --kv-heads --ffn\n"
    "                        --vocab --max-pos --head-dim --mlp gelu|swiglu --norm\n"
    "                        layernorm|rmsnorm --pos learned|rope|alibi --bias 0|1 --tied 0|1\n"
    "                        --experts N --top-k K --shared-experts N --expert-ffn F\n"
    "budget:\n"
    "  --gpu G               a GPU profile (memplan list gpus) or a size: 12GB (10^9),\n"
    "                        12GiB (2^30), 24576MiB\n"
    "  --gpus N              GPUs in the job (default 1)\n"
    "  --headroom H          fraction kept free: 0.1 or 10% (default 10%)\n"
    "  --framework F         pytorch, pytorch-cpu, deepspeed, megatron, memtrain, or a CSV\n"
    "                        written by memplan calibrate\n"
    "table:\n"
    "  --models LIST         several profiles, comma-separated: a models x GPUs matrix\n"
    "  --gpus LIST           GPU names or sizes, comma-separated (a number is still the\n"
    "                        GPU count); default: every GPU profile\n"
    "techniques (each one given is pinned; the rest are searched):\n"
    "  --task full|lora|qlora|any        --precision fp32|amp-bf16|amp-fp16|mixed-bf16|\n"
    "  --optimizer adamw|adamw-8bit|paged-adamw|paged-adamw-8bit|sgd|  mixed-fp16|pure-bf16\n"
    "              sgd-momentum|adafactor|lion       --adam8-block 256|2048\n"
    "  --checkpointing none|selective|full           --attention eager|flash\n"
    "  --batch B  --accum K  --global-batch G  --seq T  --ce full|chunked  --ce-chunk N\n"
    "  --lora-rank R  --lora-targets q,k,v,o,gate,up,down|attn|mlp|all\n"
    "  --quant none|int8|nf4|nf4-dq      --zero 0..3  --offload none|optimizer|params\n"
    "  --tp N --pp N --ep N              --loader memory|stream  --dataset-size SIZE\n"
    "  --shuffle-buffer N  --dropout     --prefer quality|speed  --max-batch N\n"
    "output:\n"
    "  --format text|json|csv  --explain  --top N  --solve max-batch|max-seq|max-params\n"
    "  --emit memtrain|hf|deepspeed|accelerate [-o FILE]\n"
    "  table, ladder, sweep: --format text|markdown|csv|json [-o FILE]\n"
    "  plot: an SVG to -o FILE or stdout; --ladder draws the ladder, else the plan and\n"
    "        its --top alternatives\n"
    "exit status: 0 a plan fits (or the estimate was made), 1 nothing fits, 2 bad input\n";

static void usage(FILE *f) { fputs(usage_text, f); }

static int parse_int(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (!*v || *end || errno || d != floor(d) || d < (double)lo || d > (double)hi)
        return cli_error("invalid value '%s' for --%s (an integer from %lld to %lld)", v, flag,
                         (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return 0;
}

/* A number, as --gpus N takes it (else, for table, a list of GPU names or sizes). */
static bool is_number(const char *v)
{
    char *end;
    strtod(v, &end);
    return *v && end != v && !*end;
}

static bool is_grid_cmd(const char *cmd)
{
    return !strcmp(cmd, "table") || !strcmp(cmd, "ladder") || !strcmp(cmd, "sweep");
}

static int parse_bool(const char *flag, const char *v, bool *out)
{
    if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true")) *out = true;
    else if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false")) *out = false;
    else return cli_error("invalid value '%s' for --%s (0 or 1)", v, flag);
    return 0;
}

#define ENUM(flag, parse, field, pinbit, choices)                                       \
    do {                                                                                \
        if (parse(optarg, &c->s.field))                                                 \
            return cli_error("invalid value '%s' for --%s (%s)", optarg, flag, choices); \
        c->pinned |= pinbit;                                                            \
    } while (0)

#define INT(flag, lo, hi, dst)                                          \
    do {                                                                \
        int64_t v_;                                                     \
        if (parse_int(flag, optarg, lo, hi, &v_)) return EXIT_USAGE;    \
        dst = v_;                                                       \
    } while (0)

/* Model-shape flags are applied after the model source is resolved. */
typedef struct shape_flags {
    int64_t layers, hidden, heads, kv, head_dim, ffn, vocab, max_pos, experts, top_k, shared, expffn;
    int mlp, norm, pos, bias, tied; /* -1: not given */
} shape_flags;

static int resolve_model(cli *c, const shape_flags *f)
{
    char err[MP_ERR_LEN];
    int sources = !!c->model_name + !!c->hf_config + (c->params > 0);
    if (sources > 1) return cli_error("give one of --model, --hf-config or --params");
    mp_model *m = &c->model;
    memset(m, 0, sizeof *m);
    bool dims = f->layers || f->hidden || f->heads || f->vocab;
    if (c->model_name) {
        if (mp_model_lookup(c->model_name, m, err)) return cli_error("%s", err);
        snprintf(c->model_how, sizeof c->model_how, "profile '%s'", m->name);
    } else if (c->hf_config) {
        if (mp_model_from_hf_config(c->hf_config, m, err)) return cli_error("%s", err);
        snprintf(c->model_how, sizeof c->model_how, "Hugging Face config '%.150s'", c->hf_config);
    } else if (c->params > 0) {
        if (dims) return cli_error("--params infers the shape: give it without --layers/--hidden/--heads/--vocab");
        if (mp_model_from_params(c->params, m, err)) return cli_error("%s", err);
        snprintf(c->model_how, sizeof c->model_how, "inferred from --params %.3g", c->params);
    } else if (c->family || dims) {
        if (mp_model_preset(m, c->family ? c->family : "llama", err)) return cli_error("%s", err);
        snprintf(c->model_how, sizeof c->model_how, "explicit dimensions, %s preset",
                 c->family ? c->family : "llama");
    } else {
        return cli_error("no model: give --model NAME, --hf-config FILE, --params N or --family with dimensions");
    }
    if (c->family && (c->model_name || c->hf_config || c->params > 0)) {
        if (mp_model_preset(m, c->family, err)) return cli_error("%s", err);
    }
    /* overrides */
    bool reshaped = false;
#define OVR(field, val) if (val) { m->field = val; reshaped = true; }
    OVR(layers, f->layers) OVR(hidden, f->hidden) OVR(heads, f->heads) OVR(kv_heads, f->kv)
    OVR(head_dim, f->head_dim) OVR(ffn, f->ffn) OVR(vocab, f->vocab) OVR(max_pos, f->max_pos)
    OVR(experts, f->experts) OVR(top_k, f->top_k) OVR(shared_experts, f->shared) OVR(expert_ffn, f->expffn)
#undef OVR
    if (f->hidden || f->heads) {
        if (!f->head_dim) m->head_dim = 0;
        if (!f->ffn && !c->model_name && !c->hf_config) m->ffn = 0;
        if (!f->kv && !c->model_name && !c->hf_config) m->kv_heads = 0;
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
    if (reshaped && (c->model_name || c->hf_config)) {
        size_t n = strlen(c->model_how);
        snprintf(c->model_how + n, sizeof c->model_how - n, ", with dimensions overridden");
        m->published_params = 0;
    }
    if (mp_model_finish(m, err)) return cli_error("%s", err);
    return 0;
}

int cli_parse(cli *c, int argc, char **argv, const char *cmd)
{
    memset(c, 0, sizeof *c);
    c->headroom = 0.10;
    c->top = 5;
    shape_flags f = {.mlp = -1, .norm = -1, .pos = -1, .bias = -1, .tied = -1};
    mp_settings_default(&c->s, NULL);
    int64_t seq = 0, global = 0, gpus = 1, tp = 1, pp = 1, ep = 1, maxb = 0;
    bool seq_given = false;
    const char *framework = NULL, *task = NULL;
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":ho:", options, NULL)) != -1) {
        char err[MP_ERR_LEN];
        switch (opt) {
        case 'h': usage(stdout); exit(0);
        case 'o': c->out_path = optarg; break;
        case O_MODEL: c->model_name = optarg; break;
        case O_HF: c->hf_config = optarg; break;
        case O_PARAMS:
            if (mp_parse_count(optarg, &c->params, err)) return cli_error("%s for --params", err);
            break;
        case O_FAMILY:
            if (strcmp(optarg, "gpt2") && strcmp(optarg, "llama"))
                return cli_error("invalid value '%s' for --family (gpt2 or llama)", optarg);
            c->family = optarg;
            break;
        case O_LAYERS: INT("layers", 1, 100000, f.layers); break;
        case O_HIDDEN: INT("hidden", 1, 1 << 20, f.hidden); break;
        case O_HEADS: INT("heads", 1, 1 << 16, f.heads); break;
        case O_KV: INT("kv-heads", 1, 1 << 16, f.kv); break;
        case O_HEADDIM: INT("head-dim", 1, 1 << 16, f.head_dim); break;
        case O_FFN: INT("ffn", 1, 1 << 22, f.ffn); break;
        case O_VOCAB: INT("vocab", 1, 1 << 24, f.vocab); break;
        case O_MAXPOS: INT("max-pos", 1, 1 << 24, f.max_pos); break;
        case O_EXPERTS: INT("experts", 1, 4096, f.experts); break;
        case O_TOPK: INT("top-k", 1, 4096, f.top_k); break;
        case O_SHARED: INT("shared-experts", 0, 64, f.shared); break;
        case O_EXPFFN: INT("expert-ffn", 1, 1 << 22, f.expffn); break;
        case O_MLP:
            if (!strcmp(optarg, "gelu")) f.mlp = MP_MLP_GELU;
            else if (!strcmp(optarg, "swiglu") || !strcmp(optarg, "gated") || !strcmp(optarg, "geglu")) f.mlp = MP_MLP_GATED;
            else return cli_error("invalid value '%s' for --mlp (gelu or swiglu)", optarg);
            break;
        case O_NORM:
            if (!strcmp(optarg, "layernorm")) f.norm = MP_NORM_LAYER;
            else if (!strcmp(optarg, "rmsnorm")) f.norm = MP_NORM_RMS;
            else return cli_error("invalid value '%s' for --norm (layernorm or rmsnorm)", optarg);
            break;
        case O_POS:
            if (!strcmp(optarg, "learned")) f.pos = MP_POS_LEARNED;
            else if (!strcmp(optarg, "rope")) f.pos = MP_POS_ROPE;
            else if (!strcmp(optarg, "alibi")) f.pos = MP_POS_ALIBI;
            else return cli_error("invalid value '%s' for --pos (learned, rope or alibi)", optarg);
            break;
        case O_BIAS: { bool b; if (parse_bool("bias", optarg, &b)) return EXIT_USAGE; f.bias = b; break; }
        case O_TIED: { bool b; if (parse_bool("tied", optarg, &b)) return EXIT_USAGE; f.tied = b; break; }
        case O_GPU: c->gpu_name = optarg; break;
        case O_GPUS:
            if (!strcmp(cmd, "table") && !is_number(optarg)) { /* a list of GPU names */
                c->gpu_list = optarg;
                break;
            }
            if (!is_number(optarg))
                return cli_error("invalid value '%s' for --gpus (a GPU count; a list of GPU names is for memplan table)", optarg);
            INT("gpus", 1, 1 << 20, gpus);
            c->pinned |= MP_PIN_GPUS;
            break;
        case O_HEADROOM: {
            char *end;
            errno = 0;
            double h = strtod(optarg, &end);
            if (end != optarg && *end == '%' && !end[1]) h /= 100, end++;
            if (end == optarg || *end || errno || !(h >= 0 && h < 1))
                return cli_error("invalid value '%s' for --headroom (0 to 0.99, or 0%% to 99%%)", optarg);
            c->headroom = h;
            break;
        }
        case O_FRAMEWORK: framework = optarg; break;
        case O_PRECISION: ENUM("precision", mp_precision_parse, precision, MP_PIN_PRECISION,
                               "fp32, amp-bf16, amp-fp16, mixed-bf16, mixed-fp16, pure-bf16"); break;
        case O_OPTIMIZER: ENUM("optimizer", mp_optimizer_parse, optimizer, MP_PIN_OPTIMIZER,
                               "adamw, adamw-8bit, paged-adamw, paged-adamw-8bit, sgd, sgd-momentum, adafactor, lion"); break;
        case O_ADAM8: INT("adam8-block", 1, 1 << 20, c->s.adam8_block); break;
        case O_CKPT: ENUM("checkpointing", mp_ckpt_parse, checkpointing, MP_PIN_CKPT, "none, selective, full"); break;
        case O_ATTN: ENUM("attention", mp_attention_parse, attention, MP_PIN_ATTENTION, "eager, flash"); break;
        case O_BATCH: INT("batch", 1, 1 << 20, c->s.batch); c->pinned |= MP_PIN_BATCH; break;
        case O_ACCUM: INT("accum", 1, 1 << 20, c->s.accum); c->pinned |= MP_PIN_ACCUM; break;
        case O_GLOBAL: INT("global-batch", 1, 1 << 24, global); break;
        case O_SEQ: INT("seq", 1, 1 << 24, seq); seq_given = true; break;
        case O_CE: ENUM("ce", mp_ce_parse, ce, MP_PIN_CE, "full, chunked"); break;
        case O_CECHUNK: INT("ce-chunk", 1, 1 << 24, c->s.ce_chunk); break;
        case O_LORA: INT("lora-rank", 0, 1 << 16, c->s.lora_rank); c->pinned |= MP_PIN_LORA; break;
        case O_TARGETS:
            if (mp_lora_targets_parse(optarg, &c->s.lora_targets))
                return cli_error("invalid value '%s' for --lora-targets (q,k,v,o,gate,up,down, attn, mlp or all)", optarg);
            c->pinned |= MP_PIN_TARGETS;
            break;
        case O_QUANT: ENUM("quant", mp_quant_parse, quant, MP_PIN_QUANT, "none, int8, nf4, nf4-dq"); break;
        case O_ZERO: { int64_t z; INT("zero", 0, 3, z); c->s.zero = (int)z; c->pinned |= MP_PIN_ZERO; break; }
        case O_OFFLOAD: ENUM("offload", mp_offload_parse, offload, MP_PIN_OFFLOAD, "none, optimizer, params"); break;
        case O_TP: INT("tp", 1, 1024, tp); break;
        case O_PP: INT("pp", 1, 1024, pp); break;
        case O_EP: INT("ep", 1, 4096, ep); break;
        case O_LOADER:
            if (mp_loader_parse(optarg, &c->s.loader))
                return cli_error("invalid value '%s' for --loader (memory or stream)", optarg);
            break;
        case O_DATASET:
            if (mp_parse_size(optarg, &c->s.dataset_bytes, NULL, err)) return cli_error("%s for --dataset-size", err);
            break;
        case O_SHUFFLE: INT("shuffle-buffer", 1, 1LL << 40, c->s.shuffle_buffer); break;
        case O_DROPOUT: c->s.dropout = true; break;
        case O_TASK: task = optarg; break;
        case O_PREFER:
            if (!strcmp(optarg, "speed")) c->opts.prefer_speed = true;
            else if (strcmp(optarg, "quality")) return cli_error("invalid value '%s' for --prefer (quality or speed)", optarg);
            break;
        case O_FORMAT:
            if (!strcmp(optarg, "text")) c->format = FMT_TEXT;
            else if (!strcmp(optarg, "json")) c->format = FMT_JSON;
            else if (!strcmp(optarg, "csv")) c->format = FMT_CSV;
            else if (is_grid_cmd(cmd) && (!strcmp(optarg, "markdown") || !strcmp(optarg, "md")))
                c->format = FMT_MARKDOWN;
            else if (is_grid_cmd(cmd))
                return cli_error("invalid value '%s' for --format (text, markdown, csv or json)", optarg);
            else return cli_error("invalid value '%s' for --format (text, json or csv)", optarg);
            if (!strcmp(cmd, "plot"))
                return cli_error("memplan plot writes SVG: --format '%s' does not apply", optarg);
            break;
        case O_EXPLAIN: c->explain = true; break;
        case O_EMIT: c->emit = optarg; break;
        case O_SOLVE: c->solve = optarg; break;
        case O_TOP: { int64_t t; INT("top", 0, 1000, t); c->top = (int)t; c->top_given = true; break; }
        case O_MAXBATCH: INT("max-batch", 1, 1 << 16, maxb); break;
        case O_MODELS: c->models = optarg; break;
        case O_LADDER: c->ladder = true; break;
        case ':': return cli_error("option '%s' needs a value", argv[optind - 1]);
        default: return cli_error("unknown option '%s' (memplan --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_error("unexpected argument '%s' for memplan %s", argv[optind], cmd);

    /* table, ladder, sweep, plot: options that belong to one of them */
    if (c->ladder && c->models)
        return cli_error("--ladder draws one model: it conflicts with --models '%s'", c->models);
    if (c->models && strcmp(cmd, "table"))
        return cli_error("--models '%s' is for memplan table (give one --model to memplan %s)", c->models, cmd);
    if (c->ladder && strcmp(cmd, "plot"))
        return cli_error("--ladder is for memplan plot (memplan ladder prints the ladder as a table)");
    if (c->models) {
        const char *other = c->model_name ? "--model" : c->hf_config ? "--hf-config" : c->params > 0 ? "--params"
                          : c->family ? "--family" : NULL;
        if (other) return cli_error("--models '%s' conflicts with %s: give the models one way", c->models, other);
        if (f.layers || f.hidden || f.heads || f.kv || f.head_dim || f.ffn || f.vocab || f.max_pos || f.experts ||
            f.top_k || f.shared || f.expffn || f.mlp >= 0 || f.norm >= 0 || f.pos >= 0 || f.bias >= 0 || f.tied >= 0)
            return cli_error("--models '%s' takes profiles as they are: dimension flags do not apply", c->models);
    }
    if (!strcmp(cmd, "table") && c->gpu_name && strchr(c->gpu_name, ',')) {
        if (c->gpu_list) return cli_error("--gpu '%s' conflicts with --gpus '%s': give the GPUs once", c->gpu_name, c->gpu_list);
        c->gpu_list = c->gpu_name;
        c->gpu_name = NULL;
    }
    if (c->gpu_list && c->gpu_name)
        return cli_error("--gpu '%s' conflicts with --gpus '%s': give the GPUs once", c->gpu_name, c->gpu_list);
    if ((is_grid_cmd(cmd) || !strcmp(cmd, "plot")) && (c->emit || c->solve))
        return cli_error("%s '%s' is for memplan plan and estimate, not memplan %s", c->emit ? "--emit" : "--solve",
                         c->emit ? c->emit : c->solve, cmd);

    if (!c->models && resolve_model(c, &f)) return EXIT_USAGE;
    char err[MP_ERR_LEN];
    if (framework) {
        c->s.framework = mp_framework_find(framework, err);
        if (!c->s.framework) return cli_error("%s", err);
    }
    if (c->gpu_name) {
        if (mp_gpu_lookup(c->gpu_name, &c->gpu, err)) return cli_error("%s for --gpu", err);
        c->have_gpu = true;
    }
    c->s.seq = seq_given ? seq : (c->model.max_pos > 0 && c->model.max_pos < 2048 ? c->model.max_pos : 2048);
    c->seq_given = seq_given;
    c->s.gpus = gpus, c->s.tp = tp, c->s.pp = pp, c->s.ep = ep;
    c->pinned |= MP_PIN_SEQ;
    c->opts.task = MP_TASK_ANY;
    if (task && mp_task_parse(task, &c->opts.task))
        return cli_error("invalid value '%s' for --task (full, lora, qlora or any)", task);
    if (c->opts.task == MP_TASK_FULL && (c->pinned & MP_PIN_LORA) && c->s.lora_rank > 0)
        return cli_error("--task full conflicts with --lora-rank %lld", (long long)c->s.lora_rank);
    if (c->opts.task == MP_TASK_FULL && c->s.quant != MP_QUANT_NONE)
        return cli_error("--task full conflicts with --quant %s: a quantised base is frozen", mp_quant_name(c->s.quant));
    c->opts.global_batch = global;
    c->opts.headroom = c->headroom;
    c->opts.max_batch = maxb;
    c->opts.budget_bytes = c->have_gpu ? c->gpu.mem_bytes : 0;
    c->opts.pinned = c->pinned;
    if (global && (c->pinned & MP_PIN_BATCH) && !(c->pinned & MP_PIN_ACCUM)) {
        int64_t dp = gpus / (tp * pp);
        if (dp < 1) dp = 1;
        c->s.accum = (global + c->s.batch * dp - 1) / (c->s.batch * dp);
    }
    return 0;
}
