/*
 * fuzz_memtrain_config.c — feeds the bytes as a memtrain config file (the
 * 'key = value' lines `memplan --emit memtrain` writes) to mt_config_parse (the
 * settings' one reader, mp_kv_next and mp_opt_read_kv), then what it accepts to
 * mt_config_finish, as memtrain does before training.
 * Asserts: a rejection, by either, is a one-line error (NUL-terminated,
 * non-empty); an accepted configuration has positive dimensions and a data
 * path that is a string; what the reader accepted the writer writes, and that
 * text reads back to a config the writer writes byte for byte alike (the
 * writer refuses only a value it cannot write: a path with a line break, or
 * with '"' where it needs quotes); the metrics header's words are written for
 * every finished config; ASan/UBSan clean.
 */
#include "fuzz.h"
#include "alloc.h"
#include "config_keys.h"

#define TEXT_LEN 16384

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_config k;
    mt_config_default(&k);
    static char err[MT_KEYS_ERR_LEN];
    fuzz_clear_err(err, sizeof err);
    if (mt_config_parse((const char *)data, size, "plan.cfg", &k, err)) {
        fuzz_check_err("mt_config_parse", err, sizeof err);
        return 0;
    }
    FUZZ_ASSERT(memchr(k.own.data_path, 0, sizeof k.own.data_path), "data path not NUL-terminated");
    /* writer -> reader -> writer: the same text */
    static char one[TEXT_LEN], two[TEXT_LEN];
    fuzz_clear_err(err, sizeof err);
    int n1 = mt_config_write(&k, one, sizeof one, err);
    if (n1 < 0) {
        fuzz_check_err("mt_config_write", err, sizeof err);
        FUZZ_ASSERT(strpbrk(k.own.data_path, "\n\""), "the writer refused a config without an unwritable path: %s", err);
    } else {
        mt_config back;
        mt_config_default(&back);
        FUZZ_ASSERT(!mt_config_parse(one, (size_t)n1, "written", &back, err), "the written config is refused: %s", err);
        int n2 = mt_config_write(&back, two, sizeof two, err);
        FUZZ_ASSERT(n2 == n1 && !memcmp(one, two, (size_t)n1), "written twice, the texts differ:\n%s---\n%s", one, two);
    }
    mt_config c = k;
    char ferr[MT_ERR_LEN];
    fuzz_clear_err(ferr, sizeof ferr);
    if (mt_config_finish(&c, ferr)) {
        fuzz_check_err("mt_config_finish", ferr, sizeof ferr);
        return 0;
    }
    FUZZ_ASSERT(c.shape.layers > 0 && c.shape.hidden > 0 && c.shape.heads > 0 && c.shape.kv_heads > 0 &&
                    c.shape.ffn > 0 && c.shape.vocab > 1 && c.s.batch > 0 && c.s.seq > 0 && c.shape.max_pos >= 1,
                "accepted a configuration with a dimension below 1");
    FUZZ_ASSERT(mt_config_header(&c, one, sizeof one, err) > 0, "the metrics header's words: %s", err);
    return 0;
}
