/*
 * config_keys.h — memtrain's config keys: the 'key = value' lines of a plan
 * file (what `memplan --emit memtrain` writes) and the same keys as --key VALUE.
 *
 * The planner's settings are the library's own rows (settings_options.c), aimed
 * at mt_config and limited to the values memtrain implements; the model's shape,
 * the data and the optimizer's hyper-parameters are memtrain's own rows.
 * Nothing prints: failures return -1 with one line in err (MT_KEYS_ERR_LEN bytes).
 */
#ifndef MT_CONFIG_KEYS_H
#define MT_CONFIG_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "settings/options.h"

#define MT_KEYS_ERR_LEN MP_OPT_ERR_LEN

/* What the keys fill: the trainer's config and the run's own values. */
typedef struct mt_run_keys {
    mt_config c;
    int64_t steps;   /* optimizer steps (default 20) */
    int tied;        /* -1: as the family has it; else the 0/1 given */
    int64_t ranks;   /* the rank count the config was planned for (0: any) */
} mt_run_keys;

/* Every key, in the order --help lists them (built once; not thread-safe). */
const mp_opt *mt_config_keys(void);
/* Apply one key = value. `where` names a config file's line, or is NULL for --key. */
int mt_config_key(mt_run_keys *k, const char *key, const char *value, const char *where, char *err);
/* A config file's text (`len` bytes, `name` for errors): blank lines and lines whose
 * first non-blank is '#' are skipped, every other line is 'key = value'; in a value a
 * '#' after a blank starts a comment, and "..." quotes a value ('#' and blanks kept). */
int mt_config_parse(const char *text, size_t len, const char *name, mt_run_keys *k, char *err);
/* The file at `path`, read whole, then parsed as above. */
int mt_config_read(const char *path, mt_run_keys *k, char *err);

#endif
