/* bench_memtop.c — memtop's cost while it follows a big run: the real binary in a
 * pseudo-terminal (120x40, TERM=xterm-256color) following a 100,000-row metrics file
 * that keeps growing by 10 rows a second. Prints stable "bench: NAME VALUE UNIT" lines:
 *   memtop_load_100k_rows_ms     CPU time to read the file and draw the first full screen
 *   memtop_follow_cpu_pct        CPU of one core while following, default --interval 1000
 *   memtop_follow_cpu_pct_200ms  the same with --interval 200
 * Usage: bench_memtop [PATH/TO/memtop] [SECONDS]   (default: ../bin/memtop next to this
 * program, 5 s). Needs only libc: built by the Makefile's $(BUILD)/bench/% rule. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU time of a (single-threaded) process in seconds, from /proc/PID/schedstat
 * (nanoseconds) or else utime + stime in clock ticks; -1 if it is gone. */
static double cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/schedstat", (long)pid);
    FILE *f = fopen(path, "r");
    unsigned long long ns;
    if (f) {
        int ok = fscanf(f, "%llu", &ns) == 1;
        fclose(f);
        if (ok) return ns / 1e9;
    }
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p) return -1;
    unsigned long ut = 0, st = 0;
    /* after ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void row(FILE *f, long s)
{
    long act = 200000000 + (s % 100) * 1000000;
    long cur = 497664000L * 2 + 995328000L + act + 10000000;
    fprintf(f, "%ld,%.1f,%.4f,4096.0,0.0003,497664000,497664000,995328000,%ld,10000000,%ld,"
               "497664000,497664000,995328000,300000000,10000000,2300656000,"
               "497664000,497664000,995328000,310000000,12000000,2312656000,2500000000\n",
            s, s * 0.5, 10.0 / (1 + s * 0.001), act, cur);
}

/* Read what memtop drew (so it never blocks); keep the tail to look for `want`. */
static int drain(int fd, double seconds, char *tail, size_t tlen, const char *want)
{
    double end = now() + seconds;
    size_t have = strlen(tail);
    for (;;) {
        double left = end - now();
        if (left <= 0) return 0;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        char buf[8192];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) return -1; /* memtop is gone */
        for (ssize_t i = 0; i < n; i++) {
            if (have + 1 >= tlen) {
                memmove(tail, tail + tlen / 2, have - tlen / 2);
                have -= tlen / 2;
            }
            if (buf[i]) tail[have++] = buf[i];
        }
        tail[have] = 0;
        if (want && strstr(tail, want)) return 1;
    }
}

typedef struct result { double load_ms, pct; } result;

static int measure(const char *memtop, const char *file, const char *interval, double seconds, long *next, result *out)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) || unlockpt(m)) {
        perror("bench_memtop: pty");
        return -1;
    }
    const char *slave = ptsname(m);
    struct winsize ws = {.ws_row = 40, .ws_col = 120};
    ioctl(m, TIOCSWINSZ, &ws);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        setsid();
        int s = open(slave, O_RDWR);
        if (s < 0) _exit(127);
        ioctl(s, TIOCSCTTY, 0);
        ioctl(s, TIOCSWINSZ, &ws);
        dup2(s, 0);
        dup2(s, 1);
        dup2(s, 2);
        close(m);
        setenv("TERM", "xterm-256color", 1);
        unsetenv("NO_COLOR");
        execl(memtop, "memtop", "--interval", interval, file, (char *)NULL);
        _exit(127);
    }
    char tail[4096] = "";
    double t0 = now();
    char want[64];
    snprintf(want, sizeof want, "%ld/1000000", *next - 1);
    int seen = drain(m, 20, tail, sizeof tail, want); /* the first screen with the last step */
    double load = cpu_seconds(pid);
    (void)t0;
    if (seen != 1 || load < 0) {
        fprintf(stderr, "bench_memtop: memtop did not show step %s\n", want);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(m);
        return -1;
    }
    drain(m, 1.0, tail, sizeof tail, NULL); /* settle */
    double c0 = cpu_seconds(pid), w0 = now();
    while (now() - w0 < seconds) { /* 10 rows a second, appended and flushed one by one */
        FILE *f = fopen(file, "a");
        if (f) {
            row(f, (*next)++);
            fclose(f);
        }
        drain(m, 0.1, tail, sizeof tail, NULL);
    }
    double c1 = cpu_seconds(pid), w1 = now();
    if (write(m, "q", 1) != 1) kill(pid, SIGTERM);
    double give = now() + 3;
    int st;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (now() > give) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            break;
        }
        drain(m, 0.05, tail, sizeof tail, NULL);
    }
    close(m);
    out->load_ms = load * 1000;
    out->pct = (c1 - c0) / (w1 - w0) * 100;
    return 0;
}

int main(int argc, char **argv)
{
    char memtop[PATH_MAX + 32];
    if (argc > 1) {
        snprintf(memtop, sizeof memtop, "%s", argv[1]);
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) return 1;
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) *slash = 0;
        snprintf(memtop, sizeof memtop, "%s/../bin/memtop", self);
    }
    double seconds = argc > 2 ? atof(argv[2]) : 5;
    if (!(seconds > 0)) seconds = 5;
    if (access(memtop, X_OK)) {
        fprintf(stderr, "bench_memtop: no memtop at '%s' (make first)\n", memtop);
        return 1;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], file[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/bench_memtop.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("bench_memtop: mkdtemp");
        return 1;
    }
    snprintf(file, sizeof file, "%s/run.csv", dir);
    FILE *f = fopen(file, "w");
    if (!f) return 1;
    fprintf(f, "# memtrain metrics v1\n# model: gpt2\n# settings: precision=fp32 optimizer=adamw batch=8 seq=1024\n"
               "# steps: 1000000\n# budget_bytes: 2147483648\n# device: cuda:0\n"
               "step,time_s,loss,tokens_per_s,lr,cur_weights,cur_gradients,cur_optimizer,cur_activations,"
               "cur_overhead,cur_total,peak_weights,peak_gradients,peak_optimizer,peak_activations,peak_overhead,"
               "peak_total,pred_weights,pred_gradients,pred_optimizer,pred_activations,pred_overhead,pred_total,"
               "rss_bytes\n");
    long next = 1;
    while (next <= 100000) row(f, next++);
    fclose(f);

    result a, b;
    int rc = measure(memtop, file, "1000", seconds, &next, &a);
    if (rc == 0) rc = measure(memtop, file, "200", seconds, &next, &b);
    unlink(file);
    rmdir(dir);
    if (rc) return 1;
    printf("bench: memtop_load_100k_rows_ms %.1f ms\n", a.load_ms);
    printf("bench: memtop_follow_cpu_pct %.2f %%\n", a.pct);
    printf("bench: memtop_follow_cpu_pct_200ms %.2f %%\n", b.pct);
    return 0;
}
