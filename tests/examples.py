#!/usr/bin/env python3
"""Run the examples shown in README, docs/*.md and the man pages' EXAMPLES, and
check (or, with --update, rewrite in place) the output shown under each command.

A block is a Markdown code fence or a man page .EX/.EE pair whose first line is
"$ command". Every "$ " line is run, in order, in one sh (so "$ echo $?" sees
the command before it), in a fresh temporary directory laid out like a checkout:
build/bin is the binaries under test (--bin, also first on PATH), tests/,
profiles/ and the other source folders are the repository's, and the real
configs of tests/data/configs (axolotl/, trl/...: what `memplan check` examples
read) lie at its top, as a user has them. stdout and stderr are shown together.
Only blocks whose every command (split at |, ;, && and ||) is one of RUNNABLE
run: memplan and text tools over what it wrote (cat, sed, head, ls ...),
python3 or sh on the repository's own scripts, and (in Markdown) memtop --once.

What a block shows of each command's output is set by a directive on the line
before it (Markdown: <!-- example: head=N tail=M -->, man: .\\" example: ...):
the first N and last M lines, with a "..." line between; no directive shows
all of it ("all": all of it, and run the block even while it shows no output,
to fill in a new example). "search took ... ms" lines are timings: compared as
the words before the figure only.

Markdown files are strict: every fence is either an example that runs (shown
output or not: --update fills it in), or is marked
<!-- example: not-run REASON --> (memtrain's measured runs, a GPU, an install),
with a reason; anything else is an error. Man pages keep the old rule: a block
that runs something else, or shows no output and has no directive, is skipped
and counted.

A count in Markdown prose is generated, not typed: a line
<!-- count VALUE: COMMAND --> before a paragraph says that COMMAND prints VALUE
and that the paragraph states VALUE (e.g. <!-- count 56: memplan list models | wc -l -->
before "memplan knows 56 public models"); with --update both are rewritten.

usage: tests/examples.py [--update] [--bin DIR] [FILE...]
exit status: 0 all shown output matches, 1 some does not (a diff is printed)
or a Markdown block is neither runnable nor marked, 2 bad input.
"""
import difflib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = os.path.join(ROOT, "tests", "data", "configs")
MAN = ["man/memplan.1", "man/memtop.1", "man/memtrain.1", "man/memtrain.conf.5", "man/memtrain-metrics.5",
       "man/memplan-profiles.5"]
# the repository's folders a block may read (tests/validation/..., profiles/*.csv)
CHECKOUT = ["bench", "fuzz", "man", "planner", "profiles", "tests", "tools", "trainer", "tui", "Makefile"]
RUNNABLE = {"memplan", "head", "cut", "echo", "xmllint", "tail", "grep",
            "cat", "sed", "ls", "wc", "sort", "column", "python3", "sh", "test"}
# Markdown examples may also run memtop --once (a snapshot; the man pages' memtop blocks are interactive)
RUNNABLE_MD = RUNNABLE | {"memtop"}
TIMING = re.compile(r"(search took) [0-9.]+ ms")
COUNT = re.compile(r"^<!-- count (\S+): (.+) -->$")


def default_files():
    """README, every docs/*.md, then the man pages (as paths from here)."""
    docs = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return [os.path.relpath(p) for p in [os.path.join(ROOT, "README")] + docs + [os.path.join(ROOT, m) for m in MAN]]


# ---------- roff <-> plain text (the subset the man pages' examples use) ----------
ROFF_CODES = [("\\(aq", "'"), ("\\(em", "\u2014"), ("\\-", "-"), ("\\e", "\\")]


def roff_decode(line):
    if line.startswith("\\&"):
        line = line[2:]
    out, i = [], 0
    while i < len(line):
        for code, plain in ROFF_CODES:
            if line.startswith(code, i):
                out.append(plain)
                i += len(code)
                break
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def roff_encode(line):
    text = line.replace("\\", "\\e").replace("-", "\\-").replace("'", "\\(aq").replace("\u2014", "\\(em")
    return "\\&" + text if text.startswith((".", "\\(aq")) or line.startswith("...") else text


# ---------- blocks ----------
class Block:
    def __init__(self, path, start, end, lines, directive):
        self.path, self.start, self.end = path, start, end   # body lines [start, end)
        self.lines, self.directive = lines, directive         # plain text

    def is_example(self):
        return bool(self.lines) and self.lines[0].startswith("$ ")

    def not_run(self):
        """the reason a directive gives for not running the block, or None"""
        m = re.match(r"not-run\b(.*)", self.directive or "")
        return m.group(1).strip(" :") if m else None

    def commands(self):
        """[(shown command lines, command to run)]"""
        cmds, i = [], 0
        while i < len(self.lines):
            if self.lines[i].startswith("$ "):
                shown = [self.lines[i]]
                while shown[-1].endswith("\\") and i + 1 < len(self.lines):
                    i += 1
                    shown.append(self.lines[i])
                run = " ".join(s.rstrip("\\").strip() for s in shown)[2:]
                cmds.append((shown, run))
            i += 1
        return cmds


def find_blocks(path, text):
    """Every fence (Markdown) or .EX/.EE pair (man), examples or not."""
    man = path.endswith((".1", ".5"))
    lines = text.split("\n")
    blocks, i = [], 0
    open_re, close = (r"^\.EX$", ".EE") if man else (r"^```[\w-]*$", "```")
    direc_re = re.compile(r'^\.\\" example: (.*)$' if man else r"^<!-- example: (.*) -->$")
    while i < len(lines):
        if re.match(open_re, lines[i]):
            j = i + 1
            while j < len(lines) and lines[j] != close:
                j += 1
            body = [roff_decode(l) if man else l for l in lines[i + 1:j]]
            d = direc_re.match(lines[i - 1]) if i else None
            if not d and man and i >= 2:
                d = direc_re.match(lines[i - 2])
            blocks.append(Block(path, i + 1, j, body, d.group(1) if d else ""))
            i = j
        i += 1
    return blocks


def program(word):
    """the program a command word names: ./build/bin/memplan is memplan"""
    return os.path.basename(word) if re.match(r"^(\./)?build/bin/", word) else word


def runnable_line(run, allowed=RUNNABLE):
    for part in re.split(r"\|\||&&|[|;]", run):
        words = [w for w in part.split() if not re.match(r"^[0-9]*[<>]", w)]
        if part.strip() and (not words or program(words[0]) not in allowed):
            return False
        if words and program(words[0]) == "memtop" and "--once" not in words:
            return False  # interactive
    return True


def runnable(block):
    allowed = RUNNABLE if block.path.endswith((".1", ".5")) else RUNNABLE_MD
    return all(runnable_line(run, allowed) for _, run in block.commands())


def checkout(tmp, bindir):
    """tmp laid out like a checkout: build/bin the binaries under test, the
    repository's folders, and the real configs `memplan check` examples read"""
    shutil.copytree(CONFIGS, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns("expected", "INDEX.csv"))
    os.makedirs(os.path.join(tmp, "build"))
    os.symlink(os.path.abspath(bindir), os.path.join(tmp, "build", "bin"))
    for name in CHECKOUT:
        if os.path.exists(os.path.join(ROOT, name)) and not os.path.exists(os.path.join(tmp, name)):
            os.symlink(os.path.join(ROOT, name), os.path.join(tmp, name))


def run_script(runs, bindir):
    """Each command's output lines, run in one shell."""
    script = []
    for run in runs:
        script.append("{ %s\n} 2>&1; __rc=$?; printf '@@END\\n'; (exit $__rc)" % run)
    env = dict(os.environ, PATH=os.path.abspath(bindir) + os.pathsep + os.environ["PATH"],
               COLUMNS="80", LC_ALL="C.UTF-8")
    with tempfile.TemporaryDirectory() as tmp:
        checkout(tmp, bindir)
        out = subprocess.run(["sh", "-c", "\n".join(script)], cwd=tmp, env=env,
                             capture_output=True, text=True, timeout=300).stdout
    parts = out.split("@@END\n")[:-1]
    return [p.rstrip("\n").split("\n") if p.strip("\n") else [] for p in parts]


def select(output, directive):
    opts = dict(kv.split("=", 1) for kv in directive.split() if "=" in kv) if directive else {}
    head, tail = int(opts.get("head", 0)), int(opts.get("tail", 0))
    if (head or tail) and head + tail < len(output):
        return output[:head] + ["..."] + (output[-tail:] if tail else [])
    return output


def expected(block, bindir):
    outs = run_script([run for _, run in block.commands()], bindir)
    lines = []
    for (shown, _), out in zip(block.commands(), outs):
        lines += shown + select(out, block.directive)
    return lines


def normal(lines):
    return [TIMING.sub(r"\1 N ms", l.rstrip()) for l in lines]


def word_at(value):
    """the value as a whole word of prose (56, not the 56 of 1,056 or 5.6)"""
    return re.compile(r"(?<![\w.,])%s(?![\w]|[.,]\d)" % re.escape(value))


def check_counts(path, lines, bindir, update):
    """<!-- count VALUE: COMMAND --> lines before a paragraph: COMMAND prints VALUE,
    and the paragraph states VALUE (the k-th count of a value is its k-th occurrence).
    Returns (counts checked, stale, bad); rewrites the comment and the figure with update."""
    found = []  # (comment line, value, command, paragraph line, column span)
    i, bad = 0, 0
    while i < len(lines):
        comments = []
        while i < len(lines) and COUNT.match(lines[i]):
            comments.append(i)
            i += 1
        if not comments:
            i += 1
            continue
        para = []
        while i < len(lines) and lines[i].strip():
            para.append(i)
            i += 1
        seen = {}
        for c in comments:
            value, command = COUNT.match(lines[c]).groups()
            k = seen[value] = seen.get(value, 0) + 1
            spots = [(j, m.span()) for j in para for m in word_at(value).finditer(lines[j])]
            if not runnable_line(command):
                print("%s:%d: the count's command '%s' is not one examples.py runs" % (path, c + 1, command))
                bad += 1
            elif len(spots) < k:
                print("%s:%d: the paragraph after the count does not state %s" % (path, c + 1, value))
                bad += 1
            else:
                found.append((c, value, command) + spots[k - 1])
    if not found:
        return 0, 0, bad
    outs = run_script([f[2] for f in found], bindir)
    stale = 0
    # from the end, so that a rewritten figure keeps the spans before it
    for (c, value, command, j, (start, end)), out in sorted(zip(found, outs), key=lambda x: (x[0][3], x[0][4]), reverse=True):
        new = " ".join(" ".join(out).split())
        if new == value:
            continue
        stale += 1
        if update:
            lines[j] = lines[j][:start] + new + lines[j][end:]
            lines[c] = "<!-- count %s: %s -->" % (new, command)
        else:
            print("%s:%d: the count is stale: '%s' prints '%s', the text says '%s'"
                  % (path, c + 1, command, new, value))
    return len(found), stale, bad


def main(argv):
    update, bindir, files = False, "build/bin", []
    args = iter(argv)
    for a in args:
        if a == "--update":
            update = True
        elif a == "--bin":
            bindir = next(args, None)
            if not bindir:
                print("examples: error: --bin needs a directory", file=sys.stderr)
                return 2
        elif a.startswith("-"):
            print("examples: error: unknown option '%s'" % a, file=sys.stderr)
            return 2
        else:
            files.append(a)
    checked = stale = skipped = marked = unmarked = counts = 0
    for path in files or default_files():
        try:
            text = open(path, encoding="utf-8").read()
        except OSError as e:
            print("examples: error: cannot read '%s': %s" % (path, e.strerror), file=sys.stderr)
            return 2
        man = path.endswith((".1", ".5"))
        lines = text.split("\n")
        # from the last block up, so that rewriting one keeps the others' line numbers
        for b in reversed(find_blocks(path, text)):
            reason = b.not_run()
            if not man and reason is not None:
                if not reason:
                    print("%s:%d: 'not-run' needs a reason" % (path, b.start))
                    unmarked += 1
                marked += 1
                continue
            if not b.is_example():
                if not man:
                    print("%s:%d: a fence that is not an example ('$ command' first) and not marked"
                          " <!-- example: not-run REASON -->" % (path, b.start))
                    unmarked += 1
                continue
            shows_nothing = len(b.lines) == sum(len(sh) for sh, _ in b.commands())
            if not man and not runnable(b):
                print("%s:%d: the block runs a command examples.py does not; add it to RUNNABLE,"
                      " or mark the block <!-- example: not-run REASON -->" % (path, b.start))
                unmarked += 1
                continue
            if man and (not runnable(b) or (shows_nothing and not b.directive)):
                skipped += 1  # runs memtrain/memtop, or shows no output to check
                continue
            checked += 1
            want = expected(b, bindir)
            if normal(want) == normal(b.lines):
                continue
            stale += 1
            if update:
                lines[b.start:b.end] = [roff_encode(l) for l in want] if man else want
            else:
                print("%s:%d: the shown output is stale" % (path, b.start))
                sys.stdout.writelines(difflib.unified_diff(
                    [l + "\n" for l in normal(b.lines)], [l + "\n" for l in normal(want)],
                    "shown", "real", n=1))
        if not man:
            n, st, bad = check_counts(path, lines, bindir, update)
            counts += n
            stale += st
            unmarked += bad
        if update:
            new = "\n".join(lines)
            if new != text:
                with open(path + ".tmp", "w", encoding="utf-8") as f:
                    f.write(new)
                os.replace(path + ".tmp", path)
    verb = "rewritten" if update else "stale"
    print("examples: %d blocks run, %d counts checked, %d %s, %d marked not-run, %d man page blocks not run%s"
          % (checked, counts, stale, verb, marked, skipped, ", %d unchecked (see above)" % unmarked if unmarked else ""))
    return 1 if unmarked or (stale and not update) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
