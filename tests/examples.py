#!/usr/bin/env python3
"""Run the examples shown in README and the man pages' EXAMPLES, and check (or,
with --update, rewrite in place) the output shown under each command.

A block is a README code fence or a man page .EX/.EE pair whose first line is
"$ command". Every "$ " line is run, in order, in one sh (so "$ echo $?" sees
the command before it), in a fresh temporary directory holding the real configs
of tests/data/configs (axolotl/, trl/...: what `memplan check` examples read), with
build/bin first on PATH; stdout and stderr are shown together. Blocks that run anything other
than memplan and a few text tools (memtrain, memtop: their figures are
measured or interactive) are not run.

What a block shows of each command's output is set by a directive on the line
before it (README: <!-- example: head=N tail=M -->, man: .\\" example: ...):
the first N and last M lines, with a "..." line between; no directive shows
all of it ("all": all of it, and run the block even while it shows no output,
to fill in a new example). A block without a directive that shows no output
is not run. "search took ... ms" lines are timings: compared as the words
before the figure only.

usage: tests/examples.py [--update] [--bin DIR] [FILE...]
exit status: 0 all shown output matches, 1 some does not (a diff is printed),
2 bad input.
"""
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "configs")
FILES = ["README", "man/memplan.1", "man/memtop.1", "man/memtrain.1"]
RUNNABLE = {"memplan", "head", "cut", "echo", "xmllint", "tail", "grep"}
TIMING = re.compile(r"(search took) [0-9.]+ ms")


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
    man = path.endswith(".1")
    lines = text.split("\n")
    blocks, i = [], 0
    open_re, close = (r"^\.EX$", ".EE") if man else (r"^```$", "```")
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
            if body and body[0].startswith("$ "):
                blocks.append(Block(path, i + 1, j, body, d.group(1) if d else ""))
            i = j
        i += 1
    return blocks


def runnable(block):
    return all(run.split()[0] in RUNNABLE and all(
        part.split()[0] in RUNNABLE for part in run.split("|") if part.strip())
        for _, run in block.commands())


def run_block(block, bindir):
    """Each command's output lines, run in one shell."""
    script = []
    for _, run in block.commands():
        script.append("{ %s\n} 2>&1; __rc=$?; printf '@@END\\n'; (exit $__rc)" % run)
    env = dict(os.environ, PATH=os.path.abspath(bindir) + os.pathsep + os.environ["PATH"],
               COLUMNS="80", LC_ALL="C.UTF-8")
    with tempfile.TemporaryDirectory() as tmp:
        # the real configs `memplan check` examples read (axolotl/qlora-1b.yml...), as a user has them
        shutil.copytree(CONFIGS, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns("expected", "INDEX.csv"))
        out = subprocess.run(["sh", "-c", "\n".join(script)], cwd=tmp, env=env,
                             capture_output=True, text=True, timeout=300).stdout
    parts = out.split("@@END\n")[:-1]
    return [p.rstrip("\n").split("\n") if p.strip("\n") else [] for p in parts]


def select(output, directive):
    opts = dict(kv.split("=") for kv in directive.split() if "=" in kv) if directive else {}
    head, tail = int(opts.get("head", 0)), int(opts.get("tail", 0))
    if (head or tail) and head + tail < len(output):
        return output[:head] + ["..."] + (output[-tail:] if tail else [])
    return output


def expected(block, bindir):
    outs = run_block(block, bindir)
    lines = []
    for (shown, _), out in zip(block.commands(), outs):
        lines += shown + select(out, block.directive)
    return lines


def normal(lines):
    return [TIMING.sub(r"\1 N ms", l.rstrip()) for l in lines]


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
    checked = stale = skipped = 0
    for path in files or FILES:
        try:
            text = open(path, encoding="utf-8").read()
        except OSError as e:
            print("examples: error: cannot read '%s': %s" % (path, e.strerror), file=sys.stderr)
            return 2
        lines = text.split("\n")
        # from the last block up, so that rewriting one keeps the others' line numbers
        for b in reversed(find_blocks(path, text)):
            shows_nothing = len(b.lines) == sum(len(sh) for sh, _ in b.commands())
            if not runnable(b) or (shows_nothing and not b.directive):
                skipped += 1  # runs memtrain/memtop, or shows no output to check
                continue
            checked += 1
            want = expected(b, bindir)
            if normal(want) == normal(b.lines):
                continue
            stale += 1
            if update:
                lines[b.start:b.end] = [roff_encode(l) for l in want] if path.endswith(".1") else want
            else:
                print("%s:%d: the shown output is stale" % (path, b.start))
                sys.stdout.writelines(difflib.unified_diff(
                    [l + "\n" for l in normal(b.lines)], [l + "\n" for l in normal(want)],
                    "shown", "real", n=1))
        if update:
            new = "\n".join(lines)
            if new != text:
                with open(path + ".tmp", "w", encoding="utf-8") as f:
                    f.write(new)
                os.replace(path + ".tmp", path)
    verb = "rewritten" if update else "stale"
    print("examples: %d blocks run, %d %s, %d not run (memtrain/memtop, or no output shown)" % (checked, stale, verb, skipped))
    return 0 if update or not stale else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
