/* metrics_format.h — memtrain's metrics file, format v1: the columns of its
 * header, in order. This is the contract between memtrain, which writes the
 * file, and memtop, which reads it (the full format: man/memtop.1, METRICS FILE). */
#ifndef MP_METRICS_FORMAT_H
#define MP_METRICS_FORMAT_H

#include "settings/vocabulary.h"

/* Byte columns come in groups: the five components (MP_WEIGHTS..MP_OVERHEAD) and their total. */
enum { MP_METRIC_NGROUP = MP_NCOMP + 1 };

enum {
    MP_METRIC_STEP, MP_METRIC_TIME_S, MP_METRIC_LOSS, MP_METRIC_TOKENS_PER_S, MP_METRIC_LR,
    MP_METRIC_CUR0,                                         /* cur_weights .. cur_total */
    MP_METRIC_PEAK0 = MP_METRIC_CUR0 + MP_METRIC_NGROUP,    /* peak_weights .. peak_total */
    MP_METRIC_PRED0 = MP_METRIC_PEAK0 + MP_METRIC_NGROUP,   /* pred_weights .. pred_total */
    MP_METRIC_RSS = MP_METRIC_PRED0 + MP_METRIC_NGROUP,     /* rss_bytes */
    MP_NMETRIC
};

/* The header name of column i ("step", "cur_weights", "rss_bytes"), or NULL. */
const char *mp_metric_name(int i);

#endif
