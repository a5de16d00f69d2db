/* framework.h — the framework profile an estimate follows. */
#ifndef FRAMEWORK_H
#define FRAMEWORK_H

#include "memplan.h"

#include <stddef.h>

/* The settings' framework, or the built-in PyTorch figures when none is set. */
const mp_framework *settings_framework(const mp_settings *s);

/* Whether a quantised base's output head is quantised too: the stack's plugin
 * swaps every linear layer (Lightning's bitsandbytes plugin) and the head is a
 * layer of its own, not the tied embedding. */
bool framework_quantises_head(const mp_model *m, const mp_settings *s);

/* frameworks.csv's value columns (name and source apart), declared once: the
 * profile loader reads them and memplan calibrate writes them. */
typedef struct fw_column {
    const char *name;
    size_t offset;            /* the mp_framework field */
    bool is_bool;             /* a bool field, else a double */
    double unit;              /* bytes per file unit (the MiB columns), else 1 */
    double absent;            /* the value when a file lacks the column (columns added later) */
} fw_column;
extern const fw_column fw_columns[];
extern const int fw_ncolumns;
/* A column's value in the file's unit, and back. */
double fw_get(const mp_framework *f, const fw_column *c);
void fw_set(mp_framework *f, const fw_column *c, double v);

#endif
