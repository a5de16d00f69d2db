/* memtrain_keys.h — the keys memtrain's config and its metrics header carry,
 * as rows: the model's shape (memtrain_shape_opts), the planner's settings
 * memtrain implements (rows of mp_settings_opts, named here once), and the
 * data-parallel ones. The planner writes a config from them (emit/memtrain.c),
 * memtrain reads it and writes its metrics header from them (trainer/), memtop
 * reads the header back (tui/run_plan.c): one writer and one reader
 * (settings/options.h, mp_opt_write_kv and mp_kv_next). */
#ifndef MP_MEMTRAIN_KEYS_H
#define MP_MEMTRAIN_KEYS_H

#include <stdbool.h>

#include "memtrain/shape.h"
#include "settings/options.h"
#include "settings/settings.h"

/* The settings rows memtrain reads, in the order configs and headers list them
 * (zero apart: a data-parallel key). NULL-ended. */
extern const char *const memtrain_setting_keys[];
/* The data-parallel keys: zero (the settings row) and ranks, memtrain's name for
 * the gpus row (the ranks a config is planned for); rows over mp_settings. */
const mp_opt *memtrain_parallel_opts(void);

/* memtrain's own keys (the data, the run's length, the optimizer's
 * hyper-parameters: trainer/config_keys.c's rows), which change no memory the
 * planner counts; NULL-ended. tests/test_settings_text.c holds them equal. */
extern const char *const memtrain_own_keys[];

/* What a memtrain config that states nothing runs: a 2-layer GPT-2 of width 64
 * (4 heads, 256 tokens), micro-batch 4 of 64 tokens, LoRA on q and v when
 * asked, a shuffle buffer of 256; the rest the planner's defaults. */
void memtrain_defaults(memtrain_shape *sh, mp_settings *s);

/* The groups a config or a header is written from and read into: the shape,
 * the settings, and with `parallel` zero and ranks. Returns how many (2 or 3). */
int memtrain_key_groups(memtrain_shape *sh, mp_settings *s, bool parallel, mp_opt_group g[3]);

#endif
