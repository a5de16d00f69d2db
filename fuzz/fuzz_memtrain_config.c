/*
 * fuzz_memtrain_config.c — feeds the bytes as a memtrain config file (the
 * 'key = value' lines `memplan --emit memtrain` writes) to mt_config_parse,
 * then what it accepts to mt_config_finish, as memtrain does before training.
 * Asserts: a rejection, by either, is a one-line error (NUL-terminated,
 * non-empty); an accepted configuration has positive dimensions and a data
 * path that is a string; ASan/UBSan clean.
 */
#include "fuzz.h"
#include "alloc.h"
#include "config_keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_run_keys k = {.steps = 20, .tied = -1};
    mt_config_default(&k.c);
    static char err[MT_KEYS_ERR_LEN];
    fuzz_clear_err(err, sizeof err);
    if (mt_config_parse((const char *)data, size, "plan.cfg", &k, err)) {
        fuzz_check_err("mt_config_parse", err, sizeof err);
        return 0;
    }
    FUZZ_ASSERT(memchr(k.c.data_path, 0, sizeof k.c.data_path), "data path not NUL-terminated");
    mt_config c = k.c;
    char ferr[MT_ERR_LEN];
    fuzz_clear_err(ferr, sizeof ferr);
    if (mt_config_finish(&c, ferr)) {
        fuzz_check_err("mt_config_finish", ferr, sizeof ferr);
        return 0;
    }
    FUZZ_ASSERT(c.layers > 0 && c.hidden > 0 && c.heads > 0 && c.kv_heads > 0 && c.ffn > 0 && c.vocab > 1 &&
                    c.batch > 0 && c.seq > 0 && c.max_pos >= 1,
                "accepted a configuration with a dimension below 1");
    return 0;
}
