/*
 * fuzz_metrics.c — feeds the bytes as a memtrain metrics file, line by line as
 * memtop's follower hands them over (split at '\n'), to mtop_parse_line, and
 * each line to mtop_csv_split; rows go into a small history, which is then
 * read back as the charts read it; the header's settings are read through
 * memtrain's key rows, as memtop's run plan reads them (mp_opt_read_kv).
 * Asserts: a skipped line's reason is one line, NUL-terminated and non-empty;
 * a row has its step; the split fields lie inside the line; the history's
 * series and ranges stay within their buffers (ASan/UBSan clean).
 */
#include "fuzz.h"
#include "history.h"
#include "metrics.h"
#include "memtrain/memtrain_keys.h"
#include "memtrain/shape.h"
#include "settings/options.h"
#include "settings/settings.h"

#include <math.h>

#define WIDTH 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mtop_parser p;
    mtop_parser_init(&p);
    mtop_history h;
    if (mtop_history_init(&h, 8)) abort();
    const char *text = (const char *)data;
    for (size_t at = 0; at <= size;) {
        const char *nl = memchr(text + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (text + at)) : size - at;
        /* the parser, on the line alone: a heap copy, so ASan sees any read past it */
        char *line = malloc(len + 1);
        if (!line) abort();
        if (len) memcpy(line, text + at, len);
        memset(p.reason, FUZZ_FILL, sizeof p.reason);
        mtop_row r;
        mtop_line_kind k = mtop_parse_line(&p, line, len, &r);
        if (k == MTOP_LINE_BAD) fuzz_check_err("mtop_parse_line", p.reason, sizeof p.reason);
        if (k == MTOP_LINE_ROW) {
            FUZZ_ASSERT(mtop_row_ok(&r, MTOP_STEP), "a row without its step");
            mtop_history_push(&h, &r);
        }
        /* the splitter, with room for its NUL at len */
        char *fields[MTOP_MAX_COLS];
        int n = mtop_csv_split(line, len, fields, MTOP_MAX_COLS);
        FUZZ_ASSERT(n >= -1 && n <= MTOP_MAX_COLS, "%d fields", n);
        for (int i = 0; i < n; i++)
            FUZZ_ASSERT(fields[i] >= line && fields[i] <= line + len, "field %d outside the line", i);
        free(line);
        if (!nl) break;
        at += len + 1;
    }
    /* the charts and the header read it back */
    double ys[WIDTH];
    unsigned char ok[WIDTH];
    for (int f = 0; f < MTOP_NFIELD; f++) {
        for (int agg = MTOP_AGG_MAX; agg <= MTOP_AGG_LAST; agg++) {
            int n = mtop_history_series(&h, f, WIDTH, (mtop_agg)agg, ys, ok);
            FUZZ_ASSERT(n >= 0 && n <= WIDTH, "%d columns", n);
        }
        double lo, hi;
        if (mtop_history_range(&h, f, &lo, &hi)) FUZZ_ASSERT(lo <= hi, "range %g > %g", lo, hi);
    }
    (void)mtop_history_step_seconds(&h, 4);
    (void)mtop_meta_setting(&p.meta, "batch");
    /* the settings as memtop's run plan reads them: each word through memtrain's key rows
     * (the settings' one reader); a value refused says why on one line */
    memtrain_shape sh = {.tied = -1};
    mp_settings s;
    memset(&s, 0, sizeof s);
    mp_opt_group g[3];
    int ng = memtrain_key_groups(&sh, &s, true, g);
    static char err[MP_OPT_ERR_LEN];
    for (int i = 0; i < p.meta.nkv; i++) {
        fuzz_clear_err(err, sizeof err);
        int rc = mp_opt_read_kv(g, ng, mtop_meta_key(&p.meta, i), mtop_meta_value(&p.meta, i), NULL, err);
        FUZZ_ASSERT(rc == 0 || rc == -1 || rc == -2, "mp_opt_read_kv returned %d", rc);
        if (rc == -1) fuzz_check_err("mp_opt_read_kv", err, sizeof err);
    }
    FUZZ_ASSERT(memchr(p.meta.model, 0, sizeof p.meta.model) && memchr(p.meta.settings, 0, sizeof p.meta.settings),
                "meta text not NUL-terminated");
    mtop_history_free(&h);
    return 0;
}
