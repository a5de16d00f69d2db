/* units.h — sizes, counts and library releases: parsing and printing. GB is
 * 10^9 bytes, GiB is 2^30. */
#ifndef MP_UNITS_H
#define MP_UNITS_H

#include <stddef.h>

#define MP_GiB 1073741824.0
#define MP_GB 1e9

/* Parse a memory size: "12GB" (10^9), "12GiB" (2^30), "24576MiB", "512MB",
 * "1.5TB", a bare number of bytes. `how` (may be NULL, 64 bytes) receives
 * e.g. "12 GB = 12,000,000,000 bytes (decimal GB)". */
int mp_parse_size(const char *text, double *bytes, char *how, char *err);
/* Parse a count such as "7e9", "7B", "125M", "1.3b", "350m". */
int mp_parse_count(const char *text, double *count, char *err);
/* Human-readable binary size: "13.04 GiB" (buffer >= 32 bytes). */
const char *mp_fmt_gib(double bytes, char *buf, size_t len);
/* A library release "MAJOR.MINOR[.PATCH]" (minor, patch < 100) as one comparable
 * number, MAJOR*10000 + MINOR*100 + PATCH; 0, or -1 when it is not one. */
int mp_version_parse(const char *text, int *version);
const char *mp_version_name(int version, char *buf, size_t len);
/* Count with thousands separators: "6,738,415,616". */
const char *mp_fmt_count(double n, char *buf, size_t len);

#endif
