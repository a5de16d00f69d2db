/* test_tui_run_plan.c — memtop's what-if view on a run: the planner's model and
 * settings read back from the header memtrain writes, and a header without the
 * model's shape (an older memtrain's) refused with one line. */
#include <string.h>

#include "check.h"
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"
#include "metrics.h"
#include "run_plan.h"

static void feed(mtop_parser *p, const char *const *lines)
{
    mtop_row row;
    for (; *lines; lines++) mtop_parse_line(p, *lines, strlen(*lines), &row);
}

int main(void)
{
    /* a header as trainer/memtrain.c metrics_open writes it, 2 ranks of ZeRO-1 */
    static const char *const run[] = {
        "# memtrain metrics v1", "# model: memtrain-llama-3x96",
        "# settings: family=llama precision=mixed-bf16 optimizer=adamw checkpointing=full attention=flash batch=2 "
        "accum=3 seq=48 ce=chunked lora-rank=8 quant=none loader=stream layers=3 hidden=96 heads=6 kv-heads=2 "
        "ffn=256 vocab=512 max-pos=0 tied=0 ce-chunk=16 lora-targets=q,v zero=1 rank=1 ranks=2",
        NULL};
    mtop_parser p;
    mtop_parser_init(&p);
    feed(&p, run);
    mp_model m;
    mp_settings s;
    char err[MP_ERR_LEN] = "";
    CHECK(mtop_plan_of_run(&p.meta, &m, &s, err) == 0, "a run's header gives a plan (%s)", err);
    CHECK(m.layers == 3 && m.hidden == 96 && m.heads == 6 && m.kv_heads == 2 && m.ffn == 256 && m.vocab == 512 &&
              !m.tied && m.max_pos == 48 && !strcmp(m.name, "memtrain-llama-3x96"),
          "the model's shape, untied, positions defaulting to the sequence");
    unsigned qv;
    mp_lora_targets_parse("q,v", &qv);
    CHECK(s.precision == MP_MIXED_BF16 && s.optimizer == MP_ADAMW && s.checkpointing == MP_CKPT_FULL &&
              s.attention == MP_ATTN_FLASH && s.ce == MP_CE_CHUNKED && s.ce_chunk == 16 && s.loader == MP_LOAD_STREAM,
          "the settings by name");
    CHECK(s.batch == 2 && s.accum == 3 && s.seq == 48 && s.lora_rank == 8 && s.lora_targets == qv && s.gpus == 2 &&
              s.zero == 1 && !strcmp(s.framework->name, "memtrain"),
          "batch, accumulation, LoRA, ranks and ZeRO; the memtrain profile");
    mp_estimate e;
    CHECK(mp_estimate_run(&m, &s, NULL, &e, err) == 0 && e.total_bytes > 0, "the plan estimates (%s)", err);

    static const char *const old[] = {
        "# memtrain metrics v1", "# model: memtrain-gpt2-2x64",
        "# settings: family=gpt2 precision=fp32 optimizer=adamw batch=2 accum=1 seq=32", NULL};
    mtop_parser_init(&p);
    feed(&p, old);
    CHECK(mtop_plan_of_run(&p.meta, &m, &s, err) == -1 && strstr(err, "has no 'layers'") && !strchr(err, '\n'),
          "an older header without the shape is refused on one line (%s)", err);

    static const char *const bad[] = {
        "# memtrain metrics v1",
        "# settings: family=gpt2 precision=fp8 layers=2 hidden=64 heads=4 vocab=256", NULL};
    mtop_parser_init(&p);
    feed(&p, bad);
    CHECK(mtop_plan_of_run(&p.meta, &m, &s, err) == -1 && strstr(err, "precision 'fp8'"),
          "an unknown value is named, quoted (%s)", err);

    /* issue 36: counts are read without truncation: zero=4294967298 is not stage 2 */
    static const char *const wide[] = {
        "# memtrain metrics v1",
        "# settings: family=gpt2 layers=2 hidden=64 heads=4 vocab=256 zero=4294967298 ranks=2", NULL};
    mtop_parser_init(&p);
    feed(&p, wide);
    CHECK(mtop_plan_of_run(&p.meta, &m, &s, err) == -1 && strstr(err, "zero '4294967298', not a count (0 to 3)"),
          "zero=4294967298 refused, named (%s)", err);
    static const char *const huge[] = {
        "# memtrain metrics v1",
        "# settings: family=gpt2 layers=99999999999999999999 hidden=64 heads=4 vocab=256", NULL};
    mtop_parser_init(&p);
    feed(&p, huge);
    CHECK(mtop_plan_of_run(&p.meta, &m, &s, err) == -1 && strstr(err, "layers '99999999999999999999', not a count"),
          "layers beyond int64: refused, not clamped (%s)", err);
    static const char *const esc[] = {
        "# memtrain metrics v1", "# settings: family=gpt2 layers=2 hidden=64 heads=4 vocab=256 precision=\033[2J", NULL};
    mtop_parser_init(&p);
    feed(&p, esc);
    CHECK(mtop_plan_of_run(&p.meta, &m, &s, err) == -1 && strstr(err, "precision '\\x1b[2J'") && !strchr(err, '\033'),
          "an unknown value with an escape sequence: quoted escaped (%s)", err);
    return check_summary();
}
