/* framework.h — the framework profile an estimate follows. */
#ifndef FRAMEWORK_H
#define FRAMEWORK_H

#include "profiles/profiles.h"

#include <stddef.h>

/* PyTorch's figures, built in: the frameworks.csv row "pytorch" when no profile
 * file can be read (tests/test_vocabulary.c holds the two equal). */
const mp_framework *mp_framework_builtin(void);

/* frameworks.csv's value columns (name and source apart), declared once: the
 * profile loader reads them and memplan calibrate writes them. */
typedef struct fw_column {
    const char *name;
    size_t offset;            /* the mp_framework field */
    bool is_bool;             /* a bool field, else a double */
    double unit;              /* bytes per file unit (the MiB columns), else 1 */
    double absent;            /* the value when a file lacks the column (columns added later) */
} fw_column;
/* At most this many (framework.c asserts it at compile time): room for a
 * profile's columns in fixed arrays (memplan calibrate's profile text). */
enum { FW_MAX_COLUMNS = 64 };
extern const fw_column fw_columns[];
extern const int fw_ncolumns;
/* A column's value in the file's unit, and back. */
double fw_get(const mp_framework *f, const fw_column *c);
void fw_set(mp_framework *f, const fw_column *c, double v);

#endif
