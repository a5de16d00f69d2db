/*
 * config_keys.h — memtrain's config keys: the 'key = value' lines of a plan
 * file (what `memplan --emit memtrain` writes) and the same keys as --key VALUE.
 *
 * The keys are rows: the model's shape and the planner's settings are the
 * library's own rows (memtrain/memtrain_keys.h: memtrain_shape_opts and the
 * rows of mp_settings_opts memtrain reads, their ranges as the planner has
 * them), aimed at mt_config's shape and settings and limited to the values
 * memtrain implements; the data, the run's length and the optimizer's
 * hyper-parameters are memtrain's own rows. The text is read and written by the
 * library's one reader and writer (settings/options.h).
 * Nothing prints: failures return -1 with one line in err (MT_KEYS_ERR_LEN bytes).
 */
#ifndef MT_CONFIG_KEYS_H
#define MT_CONFIG_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "settings/options.h"

#define MT_KEYS_ERR_LEN MP_OPT_ERR_LEN

/* Every key, in the order --help lists them, as rows over mt_config (built once;
 * not thread-safe). */
const mp_opt *mt_config_keys(void);
/* Apply one key = value. `where` names a config file's line, or is NULL for --key. */
int mt_config_key(mt_config *c, const char *key, const char *value, const char *where, char *err);
/* A config file's text (`len` bytes, `name` for errors): blank lines and lines whose
 * first non-blank is '#' are skipped, every other line is 'key = value'; in a value a
 * '#' after a blank starts a comment, and "..." quotes a value ('#' and blanks kept). */
int mt_config_parse(const char *text, size_t len, const char *name, mt_config *c, char *err);
/* The file at `path`, read whole, then parsed as above. */
int mt_config_read(const char *path, mt_config *c, char *err);
/* The config as the file's lines every key with a value ('key = value\n' each), into
 * buf (len bytes); its length, or -1 with err. mt_config_parse reads it back to the
 * same config. */
int mt_config_write(const mt_config *c, char *buf, size_t len, char *err);
/* One key's value as the config writes it; NULL for an unknown key or no value. */
const char *mt_config_value(const mt_config *c, const char *key, char *buf, size_t len);
/* The metrics header's settings (the "# settings:" line's words): the shape and the
 * settings, and with several ranks zero, this rank and the ranks. */
int mt_config_header(const mt_config *c, char *buf, size_t len, char *err);

#endif
