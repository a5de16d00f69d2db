/*
 * memplan.h — the planner library shared by memplan, memtrain and memtop: its
 * whole public interface, one header per concern (a library file includes the
 * ones it uses).
 *
 * What it does: from a model's architecture and a set of training settings,
 * compute per-component GPU memory (weights, gradients, optimizer state,
 * activations, overhead) and host memory for one training step, and search
 * every combination of techniques for the best plan that fits a budget.
 *
 * Conventions
 *   - Byte counts are doubles: exact up to 2^53 bytes, and 4-bit weights give
 *     fractional bytes per parameter.
 *   - Functions that can fail return 0 on success and -1 on failure, writing a
 *     one-line, lower-case message into `err` (MP_ERR_LEN bytes). The library
 *     never prints and never exits; the commands decide how to report.
 *   - Dimension legend used in comments: B micro-batch, T sequence, C hidden,
 *     L layers, NH heads, KV kv-heads, HD head dim, F ffn width, V vocabulary.
 */
#ifndef MEMPLAN_H
#define MEMPLAN_H

#include "common/errors.h"
#include "common/files.h"
#include "common/units.h"
#include "estimate/estimate.h"
#include "memtrain/shape.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#endif
