/* metrics_format.c — the metrics file's column names (see metrics_format.h). */
#include "memtrain/metrics_format.h"

static const char *const names[MP_NMETRIC] = {
    "step", "time_s", "loss", "tokens_per_s", "lr",
    "cur_weights", "cur_gradients", "cur_optimizer", "cur_activations", "cur_overhead", "cur_total",
    "peak_weights", "peak_gradients", "peak_optimizer", "peak_activations", "peak_overhead", "peak_total",
    "pred_weights", "pred_gradients", "pred_optimizer", "pred_activations", "pred_overhead", "pred_total",
    "rss_bytes",
};

const char *mp_metric_name(int i) { return i >= 0 && i < MP_NMETRIC ? names[i] : 0; }
