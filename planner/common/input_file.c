/* input_file.c — what memplan and memtrain accept as an input file: a regular
 * file of bounded size. A device or pipe (/dev/zero) would be read forever, and
 * a multi-gigabyte file taken for a profile would fill the memory. */
#include "common/errors.h"
#include "common/files.h"

#include <stdio.h>
#include <sys/stat.h>

int mp_check_input_file(const char *what, const char *path, double max_bytes, char *err)
{
    struct stat st;
    char quoted[200];
    mp_quote(path, quoted, sizeof quoted);
    if (stat(path, &st)) return 0; /* opening it says why */
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, MP_ERR_LEN, "%s '%.180s' is not a regular file", what, quoted);
        return -1;
    }
    if ((double)st.st_size > max_bytes) {
        snprintf(err, MP_ERR_LEN, "%s '%.150s' has %lld bytes, more than the %.0f a %s may have", what, quoted,
                 (long long)st.st_size, max_bytes, what);
        return -1;
    }
    return 0;
}
