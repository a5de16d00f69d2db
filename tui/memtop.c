/*
 * memtop.c — a terminal dashboard for LLM training memory: follow a memtrain
 * metrics file (or start the command that writes one), or explore the
 * planner live (--plan). See man/memtop.1.
 *
 *     memtop run.csv
 *     memtop -- memtrain --config plan.cfg
 *     memtop --plan --model llama-3.1-8b --gpu 24GB
 *     memtop --once --format json run.csv
 *
 * A multi-rank run (memtrain under mpirun) writes one file per rank:
 * `memtop run.csv` follows them all (runset.c) and shows a rank table.
 *
 * The loop: collect (follow the files, reap the child), keep history (the
 * ring buffer in history.c), draw (draw.c, from collected data only). It
 * waits in getch() with a timeout, so a key redraws at once and polling keeps
 * its cadence. Signal handlers only set flags. The terminal is restored
 * before any error is printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>
#include <dirent.h>

#include "draw.h"
#include "follow.h"
#include "format.h"
#include "history.h"
#include "layout.h"
#include "common/errors.h"
#include "common/version.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "search/search.h"
#include "settings/settings.h"
#include "settings/options.h"
#include "rank_snapshot.h"
#include "runset.h"
#include "snapshot.h"
#include "snapshot_text.h"
#include "run_plan.h"
#include "whatif.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

/* ---------- errors: the terminal first, then one line ---------- */

static bool curses_on;

static void restore_terminal(void)
{
    if (curses_on) {
        endwin();
        curses_on = false;
    }
}

__attribute__((format(printf, 2, 3))) static int fail(int code, const char *fmt, ...)
{
    restore_terminal();
    va_list ap;
    va_start(ap, fmt);
    mp_verror("memtop", NULL, fmt, ap);
    va_end(ap);
    return code;
}

/* ---------- signals: flags only ---------- */

static volatile sig_atomic_t got_quit, got_child;

static void on_quit(int sig) { got_quit = sig; }
static void on_child(int sig)
{
    (void)sig;
    got_child = 1;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_quit; /* no SA_RESTART: getch() returns at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_child;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---------- options ---------- */

enum { FORMAT_JSON, FORMAT_CSV, FORMAT_TEXT };

typedef struct options {
    bool once, plan, no_color, help, version;
    int format;                /* FORMAT_JSON, FORMAT_CSV or FORMAT_TEXT */
    double stale_s;
    int interval_ms;
    int history;
    const char *gpu;
    double headroom;
    char **files;              /* the metrics files: one, or a multi-rank run's */
    int nfiles;
    char **cmd;
    int ncmd;
    /* the planner (--plan): the model's source, and the settings given, which are
     * applied once the model (and so the default settings) is known */
    mp_model_source src;
    mp_settings given;
    const mp_opt *set[32];
    int nset;
    unsigned pinned;
} options;

static const char *const format_names[] = {"json", "csv", "text"};
static const mp_vocab formats = {.n = 3, .names = format_names};

#define OPT(field) MP_OPT_AT(options, field)
static const mp_opt memtop_opts[] = {
    {"once", MP_OPT_FLAG, OPT(once), .help = "print one snapshot to stdout and exit (no terminal needed)"},
    {"format", MP_OPT_ENUM, OPT(format), .vocab = &formats, .or_last = true,
     .help = "the snapshot's format (default json)"},
    {"stale", MP_OPT_REAL, OPT(stale_s), .lo = 0.1, .hi = 1e9, .arg = "SECONDS",
     .help = "mark the data stale after this long without a row (default 10)"},
    {"interval", MP_OPT_REAL, OPT(interval_ms), .lo = 10, .hi = 3600000, .arg = "MS",
     .help = "refresh interval in milliseconds (default 1000)"},
    {"history", MP_OPT_REAL, OPT(history), .lo = 16, .hi = 1e7, .arg = "N",
     .help = "steps kept for the charts (default 4096)"},
    {"gpu", MP_OPT_STRING, OPT(gpu), .arg = "G",
     .help = "budget: a GPU profile (memplan list gpus) or a size (24GB, 24GiB);\n"
             "in the run view it overrides the file's budget_bytes"},
    {"headroom", MP_OPT_FRACTION, OPT(headroom), .arg = "H",
     .help = "fraction kept free below the budget: 0.1 or 10% (default 10%)"},
    {"no-color", MP_OPT_FLAG, OPT(no_color), .help = "no colours (also when NO_COLOR is set)"},
    {"help", MP_OPT_FLAG, OPT(help), .short_name = 'h', .help = "this text;  --version  the version"},
    {"version", MP_OPT_FLAG, OPT(version), .help = NULL}, /* named in --help's line */
    {"plan", MP_OPT_FLAG, OPT(plan), .help = NULL},       /* in the usage lines */
    {0},
};

/* The planner's flags: the library's rows (memplan's), those the what-if view takes. */
static const char *const source_flags[] = {"model", "params", "hf-config", NULL};
static const char *const setting_flags[] = {"seq", "batch", "accum", "precision", "optimizer", "checkpointing",
                                            "attention", "ce", "lora-rank", "lora-targets", "quant", "gpus",
                                            "zero", NULL};

enum { NGROUPS = 3 };
static void option_groups(options *o, mp_opt_group g[NGROUPS])
{
    g[0] = (mp_opt_group){"options:", memtop_opts, o, NULL};
    g[1] = (mp_opt_group){"planner (with --plan):", mp_model_source_opts, &o->src, source_flags};
    g[2] = (mp_opt_group){NULL, mp_settings_opts, &o->given, setting_flags};
}

static void usage(FILE *f)
{
    static options o;
    mp_opt_group g[NGROUPS];
    option_groups(&o, g);
    fputs("usage: memtop [OPTIONS] FILE...              follow a memtrain metrics file, or every rank's\n"
          "       memtop [OPTIONS] -- COMMAND [ARGS]    run COMMAND --metrics TMPFILE and follow it\n"
          "       memtop --plan MODEL [--gpu G] [SETTINGS]   the planner, live (what-if view)\n", f);
    mp_opt_help(f, g, 1, 0);
    fprintf(f, "%s\n", g[1].title);
    mp_opt_synopsis(f, &g[1], " | ", 80);
    mp_opt_synopsis(f, &g[2], "  ", 80);
    fputs("keys: h or ? help, q quit, Tab select, r/R select a rank; the what-if keys are in the help screen\n"
          "exit status: 0 done, 1 a runtime error, 2 bad usage or a refused file, 128+N signal N;\n"
          "  with -- COMMAND: its status when it fails, 126 it cannot run, 127 not found (memtop(1))\n", f);
}

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mp_verror("memtop", "memtop --help", fmt, ap);
    va_end(ap);
    return EXIT_USAGE;
}

/* Everything after "--" is the command; returns where the options end, or -1. */
static int split_command(int argc, char **argv, options *o)
{
    int end = argc;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            end = i;
            break;
        }
    if (end < argc) {
        o->cmd = argv + end + 1;
        o->ncmd = argc - end - 1;
        if (o->ncmd == 0) {
            usage_error("no command after '--'");
            return -1;
        }
    }
    return end;
}

/* What is left after the options: a FILE, or nothing with -- COMMAND or --plan. */
static int check_operands(options *o, char **argv, int end)
{
    int nrest = end - optind;
    if (o->plan) {
        if (o->cmd || nrest) return usage_error("--plan takes no FILE or COMMAND");
        if (!o->src.name && !o->src.params && !o->src.hf_config)
            return usage_error("--plan needs --model, --params or --hf-config");
    } else {
        /* as ever, these settings are refused without --plan, the others ignored */
        if (o->src.name || o->src.params || o->src.hf_config ||
            (o->pinned & (MP_PIN_SEQ | MP_PIN_BATCH | MP_PIN_PRECISION)))
            return usage_error("model and settings flags need --plan");
        if (o->cmd && nrest) return usage_error("give a FILE or '-- COMMAND', not both");
        if (!o->cmd && nrest == 0) return usage_error("no metrics FILE, '-- COMMAND' or --plan");
        if (nrest > MTOP_MAX_RANKS) return usage_error("%d FILEs: memtop follows %d at most", nrest, MTOP_MAX_RANKS);
        o->files = argv + optind;
        o->nfiles = nrest;
    }
    return 0;
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->stale_s = 10;
    o->interval_ms = 1000;
    o->history = 4096;
    o->headroom = 0.10;
    int end = split_command(argc, argv, o);
    if (end < 0) return EXIT_USAGE;
    mp_opt_group g[NGROUPS];
    option_groups(o, g);
    mp_opt_parser p;
    mp_opt_start(&p, g, NGROUPS, &o->pinned, end, argv);
    char err[MP_OPT_ERR_LEN];
    const mp_opt *row;
    int r;
    while ((r = mp_opt_next(&p, &row, err)) == MP_OPT_GIVEN) {
        if (o->help) usage(stdout);
        if (o->version) printf("memtop %s (memplan; metrics format v1)\n", MP_VERSION);
        if (o->help || o->version) exit(0);
    }
    if (r != MP_OPT_DONE) return usage_error("%s", err);
    for (int i = 0; setting_flags[i]; i++)
        if (mp_opt_given(&p, setting_flags[i])) o->set[o->nset++] = mp_opt_find(mp_settings_opts, setting_flags[i]);
    return check_operands(o, argv, end);
}

/* With a budget, the view opens on the plan memplan would choose: the flags
 * given stay pinned, the rest take the best plan's values (when one fits;
 * otherwise the defaults, and the view shows what does not fit). */
static void plan_open_on_best(const options *o, const mp_model *m, mp_settings *s, const mp_gpu *g)
{
    char err[MP_ERR_LEN];
    mp_search_opts so = {.task = MP_TASK_ANY, .pinned = o->pinned | MP_PIN_SEQ, .budget_bytes = g->mem_bytes,
                         .headroom = o->headroom};
    mp_search_result r;
    if (mp_search(m, s, g, &so, &r, err)) return; /* the view shows the settings' own error */
    if (r.n && r.cands[0].fits) *s = r.cands[0].s;
    mp_search_free(&r);
}

/* The planner's model and settings from the --plan flags. */
static int plan_setup(const options *o, mp_model *m, mp_settings *s, mp_gpu *g, bool *have_gpu)
{
    char err[MP_ERR_LEN];
    const mp_model_source *src = &o->src;
    if ((src->name != NULL) + (src->params > 0) + (src->hf_config != NULL) > 1)
        return usage_error("give one of --model, --params, --hf-config");
    if (src->name && mp_model_lookup(src->name, m, err)) return usage_error("%s", err);
    if (src->params > 0 && mp_model_from_params(src->params, m, err)) return usage_error("%s", err);
    if (src->hf_config && mp_model_from_hf_config(src->hf_config, m, err)) return usage_error("%s", err);
    mp_settings_default(s, m);
    for (int i = 0; i < o->nset; i++) mp_opt_copy(o->set[i], s, &o->given);
    *have_gpu = false;
    if (o->gpu) {
        if (mp_gpu_lookup(o->gpu, g, err)) return usage_error("%s", err);
        *have_gpu = true;
        plan_open_on_best(o, m, s, g);
    }
    return 0;
}

/* ---------- the child: memtop -- COMMAND ---------- */

/* Exit statuses of their own (man/memtop.1, EXIT STATUS), as shells and
 * env(1) use them for a command that cannot be run. */
#define EXIT_CANNOT_RUN 126
#define EXIT_NOT_FOUND 127

typedef struct child {
    mtop_child_view view;
    char dir[4096], metrics[4200], log[4200];
    char tail[256];
    bool made_dir;
    bool stopped_by_us;
} child;

/* Remove what is at `name` under the directory `at`: a directory with
 * everything in it, never following a link (the command may have planted
 * one). 0, or -1 with errno. */
static int remove_tree(int at, const char *name, int depth)
{
    if (unlinkat(at, name, 0) == 0 || errno == ENOENT) return 0;
    if (errno != EISDIR && errno != EPERM) return -1; /* Linux: EISDIR; POSIX allows EPERM */
    if (depth > 64) {
        errno = ELOOP;
        return -1;
    }
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        rc = remove_tree(dirfd(d), e->d_name, depth + 1);
    }
    int e = errno;
    closedir(d);
    if (rc) {
        errno = e;
        return -1;
    }
    return unlinkat(at, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

/* The temporary directory and everything the command left in it; 0, or
 * the runtime-error status with one line saying why not. */
static int remove_child_dir(child *c)
{
    if (!c->made_dir) return 0;
    c->made_dir = false;
    if (remove_tree(AT_FDCWD, c->dir, 0) == 0) return 0;
    return fail(EXIT_RUNTIME, "cannot remove the temporary directory '%s': %s", c->dir, strerror(errno));
}

/* Start `cmd --metrics DIR/metrics.csv` in a new temporary directory. 0, or
 * the exit status (after one line): 126 or 127 when it cannot be run. */
static int spawn(child *c, char **cmd, int ncmd)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(c->dir, sizeof c->dir, "%s/memtop.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(c->dir)) return fail(EXIT_RUNTIME, "cannot create a directory in '%s': %s", tmp && *tmp ? tmp : "/tmp", strerror(errno));
    c->made_dir = true;
    snprintf(c->metrics, sizeof c->metrics, "%s/metrics.csv", c->dir);
    snprintf(c->log, sizeof c->log, "%s/child.log", c->dir);
    char **argv = calloc((size_t)ncmd + 3, sizeof *argv);
    if (!argv) return fail(EXIT_RUNTIME, "out of memory");
    for (int i = 0; i < ncmd; i++) argv[i] = cmd[i];
    argv[ncmd] = "--metrics";
    argv[ncmd + 1] = c->metrics;
    int logfd = open(c->log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    /* the child reports a failed exec through a pipe that the exec closes */
    int ep[2] = {-1, -1};
    if (logfd < 0 || pipe(ep) != 0 || fcntl(ep[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(ep[1], F_SETFD, FD_CLOEXEC) != 0) {
        int e = errno;
        free(argv);
        if (logfd >= 0) close(logfd);
        if (ep[0] >= 0) close(ep[0]), close(ep[1]);
        return fail(EXIT_RUNTIME, "cannot start '%s': %s", cmd[0], strerror(e));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        free(argv);
        close(logfd);
        close(ep[0]), close(ep[1]);
        return fail(EXIT_RUNTIME, "cannot start '%s': %s", cmd[0], strerror(e));
    }
    if (pid == 0) {
        setpgid(0, 0);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGCHLD, &sa, NULL);
        sigaction(SIGPIPE, &sa, NULL); /* memtop ignores it; the command should not */
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        dup2(logfd, 1);
        dup2(logfd, 2);
        execvp(argv[0], argv);
        int e = errno;
        ssize_t w = write(ep[1], &e, sizeof e);
        (void)w;
        _exit(e == ENOENT || e == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
    }
    setpgid(pid, pid);
    close(logfd);
    close(ep[1]);
    free(argv);
    int e = 0;
    ssize_t got;
    do got = read(ep[0], &e, sizeof e);
    while (got < 0 && errno == EINTR);
    close(ep[0]);
    if (got == (ssize_t)sizeof e) { /* the exec failed: nothing ran */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        int rc = fail(e == ENOENT || e == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN, "cannot run '%s': %s", cmd[0],
                      strerror(e));
        remove_child_dir(c);
        return rc;
    }
    c->view.active = true;
    c->view.running = true;
    c->view.pid = pid;
    const char *slash = strrchr(cmd[0], '/');
    c->view.cmd = slash && slash[1] ? slash + 1 : cmd[0];
    c->view.log = c->log;
    c->view.log_tail = c->tail;
    return 0;
}

/* The last non-empty line of the child's log, as it is: whoever shows it
 * cleans it (mtop_clean). */
static void read_tail(child *c)
{
    c->tail[0] = 0;
    int fd = open(c->log, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[4096];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (n <= 0) return;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) n--;
    buf[n] = 0;
    char *start = strrchr(buf, '\n');
    start = start ? start + 1 : buf;
    size_t len = strnlen(start, sizeof c->tail - 1); /* a cut UTF-8 character is cleaned as bytes */
    memcpy(c->tail, start, len);
    c->tail[len] = 0;
}

/* Reap the child if it ended; true when its state changed. */
static bool reap(child *c, bool block)
{
    if (!c->view.active || !c->view.running) return false;
    int st;
    pid_t r;
    do r = waitpid(c->view.pid, &st, block ? 0 : WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r != c->view.pid) return false;
    c->view.running = false;
    c->view.status = st;
    read_tail(c);
    return true;
}

/* Stop a running child: SIGTERM to its process group, SIGKILL after 3 s. */
static void stop_child(child *c)
{
    if (!c->view.active || !c->view.running) return;
    c->stopped_by_us = true;
    kill(-c->view.pid, SIGTERM);
    for (int i = 0; i < 60; i++) {
        if (reap(c, false)) return;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(-c->view.pid, SIGKILL);
    reap(c, true);
}

/* The command's own failure as memtop's exit status: its status when it
 * exited non-zero, 128 + N when signal N ended it; 0 when it succeeded,
 * still runs, or memtop stopped it. */
static int child_exit_code(const child *c)
{
    if (!c->view.active || c->view.running || c->stopped_by_us) return 0;
    if (WIFEXITED(c->view.status)) return WEXITSTATUS(c->view.status);
    if (WIFSIGNALED(c->view.status)) return 128 + WTERMSIG(c->view.status);
    return EXIT_RUNTIME;
}

/* memtop's exit status once the command is done (the table in memtop(1)):
 * memtop ended by a signal, then the command's failure (one line naming it
 * and its log's last line), then memtop's own status. The command is
 * stopped if it still runs and its directory removed, whatever happened. */
static int finish_child(child *c, int rc)
{
    stop_child(c);
    int failed = child_exit_code(c);
    char a[128], n[MTOP_CLEAN_LEN(64)];
    /* quit or ended by a signal while it ran: one line says so */
    const char *why = rc >= 128 ? strsignal(rc - 128) : "";
    if (c->stopped_by_us)
        fprintf(stderr, "memtop: %s%sstopped %s (pid %ld)\n", why, *why ? "; " : "", mtop_clean(c->view.cmd, n, sizeof n),
                (long)c->view.pid);
    else if (*why)
        fprintf(stderr, "memtop: %s\n", why);
    if (failed && rc < 128) {
        if (c->tail[0])
            fail(failed, "%s %s; its last line: %s", c->view.cmd, mtop_child_text(&c->view, a, sizeof a), c->tail);
        else
            fail(failed, "%s %s", c->view.cmd, mtop_child_text(&c->view, a, sizeof a));
        rc = failed;
    }
    int removed = remove_child_dir(c);
    return rc ? rc : removed;
}

/* ---------- --once ---------- */

static int print_text(char *text)
{
    if (!text) return fail(EXIT_RUNTIME, "out of memory");
    fputs(text, stdout);
    free(text);
    if (fflush(stdout) != 0) return fail(EXIT_RUNTIME, "cannot write the snapshot: %s", strerror(errno));
    return 0;
}

static double budget_override(const options *o, int *rc)
{
    *rc = 0;
    if (!o->gpu) return 0;
    mp_gpu g;
    char err[MP_ERR_LEN];
    if (mp_gpu_lookup(o->gpu, &g, err)) {
        *rc = usage_error("%s", err);
        return 0;
    }
    return g.mem_bytes;
}

/* Why the files cannot be shown (a one-line error, and its exit status), or 0.
 * `quiet`: the status only (a failed command's own line says more). */
static int once_unreadable(const mtop_runset *rs, int polled, bool quiet)
{
    char why[4400];
    int code = EXIT_RUNTIME;
    if (polled < 0 && rs->error_slot < 0) snprintf(why, sizeof why, "out of memory");
    else if (polled < 0)
        snprintf(why, sizeof why, "cannot read '%s': %s", rs->slot[rs->error_slot]->f.path,
                 strerror(rs->slot[rs->error_slot]->f.err_no));
    else if (!rs->ranked && rs->slot[0]->f.state != MTOP_FOLLOW_OPEN)
        snprintf(why, sizeof why, "cannot read '%s': %s", rs->slot[0]->f.path, strerror(ENOENT));
    else if (rs->problem[0]) code = EXIT_USAGE, snprintf(why, sizeof why, "%s", rs->problem);
    else if (mtop_runset_missing(rs) >= 0) {
        int k = mtop_runset_missing(rs);
        code = EXIT_USAGE;
        snprintf(why, sizeof why, "'%s' is missing: rank %d of %d", rs->slot[k]->f.path, rs->slot[k]->rank,
                 rs->ranks > rs->n ? rs->ranks : rs->n);
    } else return 0;
    return quiet ? code : fail(code, "%s", why);
}

static char *once_output(const options *o, const mtop_runset *rs)
{
    if (!rs->ranked) {
        const mtop_snapshot *s = &rs->slot[0]->snap;
        return o->format == FORMAT_CSV ? mtop_snapshot_csv(s) : o->format == FORMAT_TEXT ? mtop_snapshot_text(s)
                                                                                        : mtop_snapshot_json(s);
    }
    static mtop_rank_table t;
    mtop_runset_table(rs, -1, &t);
    return o->format == FORMAT_CSV ? mtop_ranks_csv(&t) : o->format == FORMAT_TEXT ? mtop_ranks_text(&t)
                                                                                  : mtop_ranks_json(&t);
}

/* --once: one snapshot. With a command, after it ended: a command that
 * failed gives memtop its status (finish_child), its metrics still printed
 * when they can be read. */
static int once_run(const options *o, char *const *files, int nfiles, child *c)
{
    static mtop_runset rs;
    int rc;
    mtop_snap_opts so;
    mtop_snap_opts_default(&so);
    so.stale_s = o->stale_s;
    so.headroom = o->headroom;
    so.budget_bytes = budget_override(o, &rc);
    if (rc) return rc;
    if (mtop_runset_init(&rs, files, nfiles, o->history)) return fail(EXIT_RUNTIME, "out of memory");
    rs.read_limit = (size_t)-1;
    bool command_failed = c && child_exit_code(c) != 0;
    rc = once_unreadable(&rs, mtop_runset_poll(&rs, now_s()), command_failed);
    if (!rc) {
        mtop_runset_snapshots(&rs, &so, now_s(), true);
        rc = print_text(once_output(o, &rs));
    }
    mtop_runset_free(&rs);
    return command_failed ? 0 : rc;
}

/* ---------- the interactive loop ---------- */

typedef struct app {
    options *o;
    mtop_view view, back;
    mtop_layout L;
    int layout_ranks;          /* the ranks the layout was computed for */
    int sel;
    bool dirty;
    char message[160];         /* the answer to the last key, until the next */
    char error[4400];          /* why the files cannot be read, until they can */
    /* run view */
    bool following;
    mtop_runset rs;            /* one file, or every rank's */
    mtop_rank_table table;     /* the ranks; table.selected is the rank shown in the panels */
    int rank_sel;              /* the slot chosen with r/R, -1: the heaviest */
    mtop_snap_opts so;
    child *c;
    unsigned long screen_key;  /* what the screen showed at the last draw */
    /* what-if view */
    mtop_whatif *w;
} app;

static int ranks_shown(const app *a) { return a->following && a->rs.ranked ? a->rs.n : 0; }

static void relayout(app *a)
{
    a->layout_ranks = ranks_shown(a);
    mtop_layout_compute_ranks(LINES, COLS, a->view, a->layout_ranks, &a->L);
    a->dirty = true;
}

static mtop_rank_slot *shown_slot(const app *a) { return a->rs.slot[a->table.selected]; }

/* A digest of what the run view shows: any change of rows, skipped lines,
 * resets, states, a stale age, the rank shown or the child's state changes
 * it (a collision only delays the redraw to the next change). */
static unsigned long screen_key(const app *a)
{
    unsigned long k = (unsigned long)a->rs.n * 1000003u + (unsigned long)a->table.selected;
    k = k * 31 + (a->c && a->c->view.running) + 2u * (a->rs.problem[0] != 0);
    for (int i = 0; i < a->rs.n; i++) {
        const mtop_rank_slot *s = a->rs.slot[i];
        long age = s->snap.stale ? (long)s->snap.age_s : -1;
        k = k * 31 + (unsigned long)(s->h.pushed + 7 * (s->f.parser.bad + s->f.parser.comments) + 131 * s->f.resets);
        k = k * 31 + (unsigned long)(uintptr_t)s->snap.state + (unsigned long)age;
    }
    return k;
}

/* The read error of this poll, or none: an error goes as soon as the file
 * reads again (a directory replaced by the file), not at the next key. */
static void note_read_error(app *a, bool failed)
{
    char now[sizeof a->error] = "";
    if (failed && a->rs.error_slot < 0) snprintf(now, sizeof now, "out of memory");
    else if (failed) {
        const mtop_follow *f = &a->rs.slot[a->rs.error_slot]->f;
        snprintf(now, sizeof now, "cannot read '%s': %s", f->path, strerror(f->err_no));
    }
    if (strcmp(now, a->error) != 0) {
        memcpy(a->error, now, sizeof now);
        a->dirty = true;
    }
}

static void collect(app *a, double t)
{
    if (a->c && (got_child || a->c->view.running)) {
        got_child = 0;
        reap(a->c, false);
    }
    if (!a->following) return;
    note_read_error(a, mtop_runset_poll(&a->rs, t) < 0);
    mtop_runset_snapshots(&a->rs, &a->so, t, false);
    mtop_runset_table(&a->rs, a->rank_sel, &a->table);
    if (ranks_shown(a) != a->layout_ranks) relayout(a);
    unsigned long k = screen_key(a);
    if (k != a->screen_key) {
        a->dirty = true;
        a->screen_key = k;
    }
}

static void draw(app *a)
{
    erase();
    mtop_draw_ctx ctx = {.sel = a->sel, .back = a->back, .child = a->c ? &a->c->view : NULL,
                         .message = a->message, .error = a->error, .interval_ms = a->o->interval_ms,
                         .ranks = ranks_shown(a) ? &a->table : NULL};
    if (a->L.too_small) mtop_draw_too_small(LINES, COLS);
    else if (a->view == MTOP_VIEW_HELP) mtop_draw_help(&a->L, &ctx);
    else if (a->view == MTOP_VIEW_WHATIF) mtop_draw_whatif(&a->L, a->w, &ctx);
    else mtop_draw_run(&a->L, &shown_slot(a)->snap, &shown_slot(a)->h, &ctx);
    refresh();
    a->dirty = false;
}

/* r/R: the next or previous rank's panels (a multi-rank run). */
static void select_rank(app *a, int step)
{
    if (!ranks_shown(a)) {
        snprintf(a->message, sizeof a->message, "one file: no ranks to select");
        return;
    }
    int n = a->rs.n;
    a->rank_sel = ((a->table.selected + step) % n + n) % n;
    mtop_runset_table(&a->rs, a->rank_sel, &a->table);
}

/* W: the what-if view on the followed run's plan (the shown rank's header),
 * and back to the run. */
static void toggle_run_whatif(app *a)
{
    static mtop_whatif run_w; /* large: off the stack */
    if (!a->following) {
        snprintf(a->message, sizeof a->message, "no run followed: W opens the what-if view of a run");
        return;
    }
    if (a->view == MTOP_VIEW_WHATIF) {
        a->view = MTOP_VIEW_RUN;
        relayout(a);
        return;
    }
    mp_model m;
    mp_settings s;
    char err[MP_ERR_LEN];
    if (!a->rs.n || mtop_plan_of_run(&shown_slot(a)->f.parser.meta, &m, &s, err)) {
        snprintf(a->message, sizeof a->message, "%.150s", a->rs.n ? err : "no run header yet");
        return;
    }
    mtop_whatif_init(&run_w, &m, &s, NULL, a->o->headroom);
    a->w = &run_w;
    a->view = MTOP_VIEW_WHATIF;
    relayout(a);
}

/* Returns false to quit. */
static bool key(app *a, int ch)
{
    a->message[0] = 0;
    a->dirty = true;
    if (ch == KEY_RESIZE) {
        relayout(a);
        return true;
    }
    mtop_view base = a->view == MTOP_VIEW_HELP ? a->back : a->view;
    mtop_action act = mtop_key_action(ch, base == MTOP_VIEW_WHATIF);
    if (act == MTOP_ACT_QUIT) return false;
    if (a->view == MTOP_VIEW_HELP) { /* any other key returns */
        a->view = a->back;
        relayout(a);
        return true;
    }
    int ncomp = a->view == MTOP_VIEW_WHATIF ? MTOP_NCOMP : MTOP_NGROUP;
    switch (act) {
    case MTOP_ACT_HELP:
        a->back = a->view;
        a->view = MTOP_VIEW_HELP;
        relayout(a);
        break;
    case MTOP_ACT_NEXT: a->sel = (a->sel + 1) % ncomp; break;
    case MTOP_ACT_PREV: a->sel = (a->sel + ncomp - 1) % ncomp; break;
    case MTOP_ACT_REDRAW: clearok(curscr, TRUE); break;
    case MTOP_ACT_WHATIF_RUN: toggle_run_whatif(a); break;
    case MTOP_ACT_RANK_NEXT: select_rank(a, 1); break;
    case MTOP_ACT_RANK_PREV: select_rank(a, -1); break;
    case MTOP_ACT_NONE:
        if (ch == 27) break; /* Esc: nothing to close */
        if (ch >= 32 && ch < 127) snprintf(a->message, sizeof a->message, "unknown key '%c' (h for help)", ch);
        else snprintf(a->message, sizeof a->message, "unknown key (h for help)");
        break;
    default:
        if (a->view == MTOP_VIEW_WHATIF) mtop_whatif_apply(a->w, act);
        break;
    }
    return true;
}

static bool runset_pending(const mtop_runset *rs)
{
    for (int i = 0; i < rs->n; i++)
        if (rs->slot[i]->f.pending) return true;
    return false;
}

static int interactive(app *a)
{
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
        return fail(EXIT_RUNTIME, "standard input and output must be a terminal (use --once for a snapshot)");
    const char *no_color = getenv("NO_COLOR");
    bool color = !a->o->no_color && !(no_color && *no_color);
    SCREEN *scr = newterm(NULL, stdout, stdin);
    if (!scr) return fail(EXIT_RUNTIME, "cannot use the terminal '%s'", getenv("TERM") ? getenv("TERM") : "");
    curses_on = true;
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    mtop_draw_colors(color);
    relayout(a);

    double next_poll = 0;
    for (;;) {
        if (got_quit) break;
        double t = now_s();
        if (t >= next_poll || got_child) {
            collect(a, t);
            next_poll = a->following && runset_pending(&a->rs) ? t : t + a->o->interval_ms / 1000.0;
        }
        if (a->dirty) draw(a);
        int wait = (int)ceil((next_poll - now_s()) * 1000);
        timeout(wait < 0 ? 0 : wait > a->o->interval_ms ? a->o->interval_ms : wait);
        int ch = getch();
        if (ch == ERR) continue;
        if (!key(a, ch)) break;
    }
    restore_terminal();
    delscreen(scr);
    if (got_quit && got_quit != SIGINT) { /* terminated or hung up: say so (finish_child, with a command), exit 128 + signal */
        if (!a->c) fprintf(stderr, "memtop: %s\n", strsignal(got_quit));
        return 128 + got_quit;
    }
    return 0;
}

/* The what-if view: --plan, interactive or --once. */
static int plan_main(options *o)
{
    static mtop_whatif w; /* large: keep it off the stack */
    mp_model m;
    mp_settings s;
    mp_gpu g;
    bool have_gpu = false;
    int rc;
    if (o->once && o->format == FORMAT_TEXT) return usage_error("--format text is for the run view (with --plan: json or csv)");
    if ((rc = plan_setup(o, &m, &s, &g, &have_gpu))) return rc;
    mtop_whatif_init(&w, &m, &s, have_gpu ? &g : NULL, o->headroom);
    if (o->once) {
        rc = print_text(o->format == FORMAT_CSV ? mtop_whatif_csv(&w) : mtop_whatif_json(&w));
        if (rc) return rc;
        return w.ok ? 0 : fail(EXIT_USAGE, "%s", w.err);
    }
    app a = {.o = o, .view = MTOP_VIEW_WHATIF, .back = MTOP_VIEW_WHATIF, .w = &w};
    return interactive(&a);
}

/* --once with -- COMMAND: the command runs to its end first; a signal to
 * memtop (Ctrl-C, SIGTERM, SIGHUP) stops it: 128 + the signal. */
static int wait_for_command(child *c)
{
    while (c->view.running) {
        if (got_quit) {
            stop_child(c);
            return 128 + got_quit;
        }
        if (!reap(c, false)) {
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    return 0;
}

static const mtop_follow *unreadable(const mtop_runset *rs)
{
    for (int i = 0; i < rs->n; i++)
        if (rs->slot[i]->f.state == MTOP_FOLLOW_ERROR) return &rs->slot[i]->f;
    return NULL;
}

/* The run view: follow the files (or the command's) until q. */
static int run_main(options *o, child *c, double budget)
{
    static app a;
    a = (app){.o = o, .view = MTOP_VIEW_RUN, .back = MTOP_VIEW_RUN, .following = true,
              .c = o->cmd ? c : NULL, .rank_sel = -1};
    mtop_snap_opts_default(&a.so);
    a.so.stale_s = o->stale_s;
    a.so.headroom = o->headroom;
    a.so.budget_bytes = budget;
    if (mtop_runset_init(&a.rs, o->files, o->nfiles, o->history)) return fail(EXIT_RUNTIME, "out of memory");
    mtop_runset_poll(&a.rs, now_s()); /* files from two runs, a bad header: refused before the screen starts */
    int rc = a.rs.problem[0] ? fail(EXIT_USAGE, "%s", a.rs.problem) : interactive(&a);
    const mtop_follow *f = unreadable(&a.rs);
    /* a read error at the end, unless the command's failure explains it */
    if (f && rc == 0 && !child_exit_code(c))
        rc = fail(EXIT_RUNTIME, "cannot read '%s': %s", f->path, strerror(f->err_no));
    mtop_runset_free(&a.rs);
    return rc;
}

/* memtop with nothing to follow: what it could follow here, and how to start.
 * A metrics file is a *.csv whose first line is memtrain's (format v1). */
static int guide(void)
{
    puts("memtop follows a memtrain run's memory, predicted against measured.");
    DIR *d = opendir(".");
    int found = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".csv")) continue;
        /* a regular file only, opened without waiting (a FIFO named *.csv never blocks the listing) */
        struct stat st;
        int fd = stat(e->d_name, &st) || !S_ISREG(st.st_mode) ? -1 : open(e->d_name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
        if (fd >= 0 && !f) close(fd);
        char line[64] = "";
        if (f && fgets(line, sizeof line, f) && !strncmp(line, "# memtrain metrics", 18)) {
            char shown[160];
            printf("%-16smemtop %s\n", found++ ? "" : "metrics here:", mtop_clean(e->d_name, shown, sizeof shown));
        }
        if (f) fclose(f);
        if (found == 10) break;
    }
    if (d) closedir(d);
    if (!found) puts("metrics here:   none in this folder (memtrain --metrics FILE writes one)");
    puts("run and follow: memtop -- memtrain --config plan.cfg\n"
         "the planner:    memtop --plan --model llama-3.1-8b --gpu 24GB\n"
         "everything:     memtop --help");
    return 0;
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    if (argc == 1) return guide();
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc) return rc;
    install_signals();
    signal(SIGPIPE, SIG_IGN);
    if (o.plan) return plan_main(&o);

    static child c;
    static char *command_metrics[1];
    double budget = budget_override(&o, &rc); /* checked before anything starts */
    if (rc) return rc;
    if (!o.cmd) return o.once ? once_run(&o, o.files, o.nfiles, NULL) : run_main(&o, &c, budget);
    /* memtop -- COMMAND: every way out goes through finish_child, which stops
     * the command and removes its directory */
    if ((rc = spawn(&c, o.cmd, o.ncmd))) {
        remove_child_dir(&c); /* made before what failed, if it was */
        return rc;
    }
    command_metrics[0] = c.metrics;
    o.files = command_metrics;
    o.nfiles = 1;
    if (o.once) {
        rc = wait_for_command(&c);
        if (!rc) rc = once_run(&o, o.files, o.nfiles, &c);
    } else {
        rc = run_main(&o, &c, budget);
    }
    return finish_child(&c, rc);
}
