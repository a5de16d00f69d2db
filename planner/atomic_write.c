/* atomic_write.c — write a file so that a reader sees the old or the new
 * content, never a part: a temporary file beside it, fsync, rename. */
#include "memplan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mp_write_file_atomic(const char *path, const char *data, size_t len, char *err)
{
    return mp_write_file_atomic_mode(path, data, len, 0644, err);
}

int mp_write_file_atomic_mode(const char *path, const char *data, size_t len, unsigned mode, char *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        snprintf(err, MP_ERR_LEN, "path too long '%.200s'", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        snprintf(err, MP_ERR_LEN, "cannot write '%.200s': %s", path, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            snprintf(err, MP_ERR_LEN, "cannot write '%.200s': %s", path, strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    /* exact bits whatever the umask (launch.sh is executable) */
    if (fchmod(fd, (mode_t)mode) || fsync(fd) || close(fd)) {
        snprintf(err, MP_ERR_LEN, "cannot write '%.200s': %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path)) {
        snprintf(err, MP_ERR_LEN, "cannot write '%.200s': %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
