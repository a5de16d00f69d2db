/* test_settings_text.c — one settings record, written and read as text by one
 * writer and one reader (settings/options.h) wherever it is carried:
 *   - every row memtrain reads survives writer -> reader -> writer byte for byte,
 *     at its range's ends and with every value memtrain implements;
 *   - the settings a metrics header carries come back identical in memtop's run
 *     plan (the same model, the same record, the same estimate);
 *   - a config the planner writes loads in memtrain with the same values;
 *   - files already written still load: a config emitted before the tile was a
 *     key, and a v1 metrics header written by memtrain before its settings were
 *     rows (both copied from those builds' output). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "config_keys.h"
#include "common/errors.h"
#include "estimate/estimate.h"
#include "memtrain/memtrain_keys.h"
#include "memtrain/shape.h"
#include "metrics.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "run_plan.h"
#include "settings/options.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#define TEXT 16384

static char err[MP_OPT_ERR_LEN];

/* ---------- writer -> reader -> writer, row by row ---------- */

/* Apply key = value to a default config, write it, read that back into another
 * default config, write again: the two texts are the same bytes. */
static void round_trip(const char *key, const char *value, int *done)
{
    static char one[TEXT], two[TEXT];
    mt_config c, back;
    mt_config_default(&c);
    mt_config_default(&back);
    if (mt_config_key(&c, key, value, NULL, err)) {
        CHECK(0, "%s = '%s' is read (%s)", key, value, err);
        return;
    }
    int n1 = mt_config_write(&c, one, sizeof one, err);
    int rc = n1 < 0 ? -1 : mt_config_parse(one, (size_t)n1, "written", &back, err);
    int n2 = rc ? -1 : mt_config_write(&back, two, sizeof two, err);
    char v1[MP_OPT_VALUE_LEN] = "", v2[MP_OPT_VALUE_LEN] = "";
    mt_config_value(&c, key, v1, sizeof v1);
    mt_config_value(&back, key, v2, sizeof v2);
    bool same = n1 > 0 && n2 == n1 && !memcmp(one, two, (size_t)n1) && !strcmp(v1, v2);
    if (!same) CHECK(0, "%s = '%s': written, read and written again alike (%s)", key, value, n1 < 0 || rc ? err : two);
    (*done)++;
}

static void rows_round_trip(void)
{
    int rows = 0, cases = 0, before = check_failed;
    for (const mp_opt *r = mt_config_keys(); r->name; r++, rows++) {
        char v[64];
        switch (r->kind) {
        case MP_OPT_INT:
            snprintf(v, sizeof v, "%lld", (long long)r->lo), round_trip(r->name, v, &cases);
            snprintf(v, sizeof v, "%lld", (long long)r->hi), round_trip(r->name, v, &cases);
            snprintf(v, sizeof v, "%lld", (long long)((r->lo + r->hi) / 2)), round_trip(r->name, v, &cases);
            break;
        case MP_OPT_FLOAT:
            snprintf(v, sizeof v, "%.17g", r->lo), round_trip(r->name, v, &cases);
            snprintf(v, sizeof v, "%.17g", r->hi), round_trip(r->name, v, &cases);
            snprintf(v, sizeof v, "%.17g", r->lo + (r->hi - r->lo) / 3), round_trip(r->name, v, &cases);
            break;
        case MP_OPT_ENUM:
            /* every value memtrain implements (its vocabulary lists only those) */
            for (int i = 0; i < r->vocab->n; i++)
                round_trip(r->name, r->vocab->names ? r->vocab->names[i] : r->vocab->name(i), &cases);
            break;
        default:
            if (!strcmp(r->name, "lora-targets")) {
                const char *t[] = {"q", "q,v", "attn", "mlp", "all", "down"};
                for (size_t i = 0; i < sizeof t / sizeof *t; i++) round_trip(r->name, t[i], &cases);
            } else if (!strcmp(r->name, "data")) {
                /* a '#' after a blank and blanks at an end need quotes; a '"' inside does not */
                const char *p[] = {"corpus.txt", "runs/run#3.txt", "my runs/run #3.txt", "a\"b.txt", " lead.txt"};
                for (size_t i = 0; i < sizeof p / sizeof *p; i++) round_trip(r->name, p[i], &cases);
            } else if (!strcmp(r->name, "tied")) {
                round_trip(r->name, "0", &cases), round_trip(r->name, "1", &cases);
            } else {
                CHECK(0, "row %s: no values to try", r->name);
            }
        }
    }
    CHECK(check_failed == before && rows >= 35,
          "every row memtrain reads (%d rows, %d values) survives writer -> reader -> writer byte for byte", rows, cases);
    /* what a reader accepts in other spellings is written in the canonical one, once */
    mt_config c;
    mt_config_default(&c);
    char text[TEXT];
    static const char spelled[] = "optimizer = adamw8bit\nlora-targets = attn\nbatch = 8e0\nlr = 1e-3\n";
    CHECK(!mt_config_parse(spelled, strlen(spelled), "spelled", &c, err) &&
              mt_config_write(&c, text, sizeof text, err) > 0 && strstr(text, "\noptimizer = adamw-8bit\n") &&
              strstr(text, "\nlora-targets = q,k,v,o\n") && strstr(text, "\nbatch = 8\n") && strstr(text, "\nlr = 0.001\n"),
          "other spellings are written in the rows' own (adamw-8bit, q,k,v,o, 8, 0.001)");
    /* the ranges are the planner's rows': memtrain reads a micro-batch up to the planner's 1<<20 */
    const mp_opt *planner = mp_opt_find(mp_settings_opts, "batch"), *mine = mp_opt_find(mt_config_keys(), "batch");
    CHECK(planner->lo == mine->lo && planner->hi == mine->hi && mine->hi == 1 << 20,
          "memtrain's batch range is the planner's row's (1 to %g)", mine->hi);
}

/* ---------- a metrics header back into memtop's run plan ---------- */

static void feed(mtop_parser *p, const char *line)
{
    mtop_row row;
    mtop_parse_line(p, line, strlen(line), &row);
}

static void header_to_plan(const char *label, mt_config c)
{
    char words[4096], line[4200], why[MP_ERR_LEN];
    if (mt_config_finish(&c, why) || mt_config_header(&c, words, sizeof words, err) < 0) {
        CHECK(0, "%s: the config finishes and its header is written (%s%s)", label, why, err);
        return;
    }
    mtop_parser p;
    mtop_parser_init(&p);
    feed(&p, "# memtrain metrics v1");
    feed(&p, "# model: run");
    snprintf(line, sizeof line, "# settings: %s", words);
    feed(&p, line);
    mp_model m, want_m;
    mp_settings s;
    if (mtop_plan_of_run(&p.meta, &m, &s, why) || memtrain_shape_model(&c.shape, c.s.seq, &want_m, err)) {
        CHECK(0, "%s: the header gives a plan (%s)", label, why);
        return;
    }
    /* every setting the header carries, as the rows write it, from both records */
    mp_opt_group mine[3], plan[3];
    memtrain_shape sh = c.shape;
    int n = memtrain_key_groups(&sh, &c.s, true, mine);
    memtrain_key_groups(&sh, &s, true, plan);
    static char a[TEXT], b[TEXT];
    int na = mp_opt_write_kv(mine + 1, n - 1, MP_KV_LINES, a, sizeof a, err);
    int nb = mp_opt_write_kv(plan + 1, n - 1, MP_KV_LINES, b, sizeof b, err);
    CHECK(na > 0 && na == nb && !strcmp(a, b), "%s: the run plan's settings are the run's, row for row", label);
    CHECK(m.layers == want_m.layers && m.hidden == want_m.hidden && m.heads == want_m.heads &&
              m.kv_heads == want_m.kv_heads && m.ffn == want_m.ffn && m.vocab == want_m.vocab &&
              m.max_pos == want_m.max_pos && m.tied == want_m.tied && m.mlp == want_m.mlp && !strcmp(m.name, want_m.name),
          "%s: the run plan's model is the run's (%s)", label, m.name);
    /* the estimate memtop shows is the one memtrain predicted its run with */
    mp_settings run = c.s;
    mp_estimate e1, e2;
    run.framework = mp_framework_find("memtrain", why);
    CHECK(run.framework && !mp_estimate_run(&want_m, &run, NULL, &e1, why) && !mp_estimate_run(&m, &s, NULL, &e2, why) &&
              e1.total_bytes == e2.total_bytes && e1.peak[MP_OVERHEAD] == e2.peak[MP_OVERHEAD],
          "%s: the same estimate (%.0f bytes, memtrain's %.0f)", label, e2.total_bytes, e1.total_bytes);
}

static void headers(void)
{
    mt_config c;
    mt_config_default(&c);
    header_to_plan("gpt2 fp32, defaults", c);
    mt_config_default(&c);
    c.shape = (memtrain_shape){.family = MT_LLAMA, .layers = 3, .hidden = 96, .heads = 6, .kv_heads = 2, .vocab = 512,
                               .tied = -1};
    c.s.precision = MP_MIXED_BF16, c.s.attention = MP_ATTN_FLASH, c.s.attn_tile = 32, c.s.ce = MP_CE_CHUNKED;
    c.s.ce_chunk = 16, c.s.lora_rank = 8, c.s.quant = MP_QUANT_NF4_DQ, c.s.optimizer = MP_ADAMW_8BIT;
    c.s.adam8_block = 128, c.s.checkpointing = MP_CKPT_SELECTIVE, c.s.loader = MP_LOAD_STREAM;
    c.s.shuffle_buffer = 77, c.s.batch = 3, c.s.accum = 5, c.s.seq = 48;
    header_to_plan("llama QLoRA, flash tile 32, 8-bit, chunked", c);
    mt_config_default(&c);
    c.s.zero = 3, c.rank = 1, c.ranks = 4, c.s.attention = MP_ATTN_FLASH, c.s.attn_tile = 256, c.s.seq = 64;
    header_to_plan("gpt2 ZeRO-3, rank 1 of 4, tile 256", c);
}

/* ---------- the planner's config into memtrain ---------- */

static void planner_config(void)
{
    mp_model m;
    mp_settings s;
    memtrain_shape sh = {.family = MT_LLAMA, .layers = 2, .hidden = 64, .heads = 4, .kv_heads = 2, .vocab = 300,
                         .tied = -1};
    if (memtrain_shape_model(&sh, 32, &m, err)) {
        CHECK(0, "model: %s", err);
        return;
    }
    mp_settings_default(&s, &m);
    s.attention = MP_ATTN_FLASH, s.attn_tile = 128, s.seq = 32, s.batch = 2, s.lora_rank = 4, s.gpus = 2, s.zero = 1;
    memtrain_shape_of(&m, &sh);
    mp_opt_group g[3];
    int n = memtrain_key_groups(&sh, &s, true, g);
    static char text[TEXT], back[TEXT], again[TEXT];
    int len = mp_opt_write_kv(g, n, MP_KV_LINES, text, sizeof text, err);
    mt_config c;
    mt_config_default(&c);
    CHECK(len > 0 && !mt_config_parse(text, (size_t)len, "planned", &c, err), "the planner's config loads (%s)", err);
    memtrain_shape csh = c.shape;
    mp_opt_group mine[3];
    memtrain_key_groups(&csh, &c.s, true, mine);
    int nb = mp_opt_write_kv(mine, n, MP_KV_LINES, back, sizeof back, err);
    CHECK(nb == len && !strcmp(text, back) && c.s.attn_tile == 128 && c.s.gpus == 2 && (c.own.given & MP_PIN_GPUS),
          "memtrain reads every key the planner wrote, the tile and the ranks included");
    CHECK(mt_config_write(&c, again, sizeof again, err) > 0 && strstr(again, "attn-tile = 128\n"),
          "and writes them again as the planner did");
}

/* ---------- files written before ---------- */

static void older_files(void)
{
    /* `memplan estimate ... --emit memtrain` before the tile was a key */
    static const char old_config[] =
        "# memtrain config written by memplan; run: memtrain --config FILE\n# model custom-llama-2x64\n"
        "family = llama\nlayers = 2\nhidden = 64\nheads = 4\nkv-heads = 2\nffn = 256\nvocab = 256\nmax-pos = 2048\n"
        "tied = 0\nprecision = mixed-bf16\noptimizer = adamw\nadam8-block = 256\ncheckpointing = none\n"
        "attention = flash\nbatch = 2\naccum = 1\nseq = 32\nce = chunked\nce-chunk = 16\nlora-rank = 4\n"
        "lora-targets = q,v\nquant = none\nloader = stream\nshuffle-buffer = 64\n"
        "# data parallel: mpirun -np 2 memtrain --config FILE\nzero = 1\nranks = 2\n";
    mt_config c;
    mt_config_default(&c);
    unsigned qv;
    mp_lora_targets_parse("q,v", &qv);
    CHECK(!mt_config_parse(old_config, strlen(old_config), "old.cfg", &c, err) && c.s.attn_tile == 64 &&
              c.s.precision == MP_MIXED_BF16 && c.s.lora_targets == qv && c.s.shuffle_buffer == 64 && c.s.gpus == 2 &&
              c.s.zero == 1 && c.shape.family == MT_LLAMA && c.shape.ffn == 256,
          "a config emitted before the tile was a key loads, the tile at memtrain's 64 (%s)", err);
    /* memtrain's metrics header before its settings were rows (a run of the config above, one rank) */
    mtop_parser p;
    mtop_parser_init(&p);
    feed(&p, "# memtrain metrics v1");
    feed(&p, "# model: memtrain-llama-2x64");
    feed(&p, "# settings: family=llama precision=mixed-bf16 optimizer=adamw checkpointing=none attention=flash batch=2 "
             "accum=1 seq=32 ce=chunked lora-rank=4 quant=none loader=stream layers=2 hidden=64 heads=4 kv-heads=2 "
             "ffn=256 vocab=256 max-pos=2048 tied=0 ce-chunk=16 lora-targets=q,v");
    mp_model m;
    mp_settings s;
    char why[MP_ERR_LEN] = "";
    CHECK(!mtop_plan_of_run(&p.meta, &m, &s, why) && s.attn_tile == 64 && s.attention == MP_ATTN_FLASH &&
              s.lora_rank == 4 && s.lora_targets == qv && s.ce_chunk == 16 && s.batch == 2 && s.seq == 32 &&
              m.layers == 2 && m.ffn == 256 && !m.tied,
          "a v1 header an older memtrain wrote gives the run's plan, the tile at 64 (%s)", why);
}

/* memtrain's keys are the contract's (memtrain_keys.h): its shape, settings and
 * data-parallel rows, and its own keys named once for memplan check; the
 * defaults memplan check assumes are memtrain's. */
static void keys_are_the_contract(void)
{
    memtrain_shape sh;
    mp_settings s;
    mp_opt_group g[3];
    int ng = memtrain_key_groups(&sh, &s, true, g), n = 0, named = 0;
    for (const mp_opt *r = mt_config_keys(); r->name; r++, n++) {
        void *base;
        bool own = false;
        for (int i = 0; memtrain_own_keys[i]; i++) own = own || !strcmp(memtrain_own_keys[i], r->name);
        CHECK(own != (mp_opt_group_find(g, ng, r->name, &base) != NULL),
              "memtrain's key '%s' is %s", r->name, own ? "one of its own (memtrain_own_keys)" : "a contract row");
    }
    while (memtrain_own_keys[named]) named++;
    int rows = named;
    for (int i = 0; i < ng; i++)
        for (const mp_opt *r = g[i].rows; r->name; r++) {
            bool listed = !g[i].only;
            for (int j = 0; g[i].only && g[i].only[j]; j++) listed = listed || !strcmp(g[i].only[j], r->name);
            rows += listed;
        }
    CHECK(rows == n, "memtrain reads %d keys, the contract names %d", n, rows);
    mt_config c;
    mt_config_default(&c);
    memtrain_defaults(&sh, &s);
    CHECK(!memcmp(&sh, &c.shape, sizeof sh) && s.batch == c.s.batch && s.seq == c.s.seq &&
              s.lora_targets == c.s.lora_targets && s.shuffle_buffer == c.s.shuffle_buffer && !c.s.framework,
          "memtrain's defaults are memtrain_defaults()");
}

int main(void)
{
    keys_are_the_contract();
    rows_round_trip();
    headers();
    planner_config();
    older_files();
    return check_summary();
}
