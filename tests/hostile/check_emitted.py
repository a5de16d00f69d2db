#!/usr/bin/env python3
"""check_emitted.py NAME_FILE OUT BASE [NAME_FILE OUT BASE ...] — files memplan wrote
for a model whose name came from a stranger (OUT), against the same plan written for
a plain name (BASE).

Every emitted file must parse in its own language, read back the name exactly
where it is a value, and otherwise mean exactly what BASE means: a name may
change comments and nothing else. NAME_FILE holds the name, UTF-8. OUT and BASE
are folders (a bundle) or single files. Prints one line per failed check; exit 1
on any.
"""
import ast
import json
import os
import re
import subprocess
import sys

import yaml

fails = []


def check(ok, what):
    if not ok:
        fails.append(what)


def text(path):
    data = open(path, "rb").read()
    # one line stays one line: no control byte but newline, no CR, no ESC, no DEL
    bad = sorted({b for b in data if (b < 0x20 and b != 0x0A) or b == 0x7F})
    check(not bad, "%s: raw control bytes %s" % (path, [hex(b) for b in bad]))
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError as e:
        check(False, "%s: not UTF-8 (%s)" % (path, e))
        return ""
    # nor a character that ends a line or reorders one for a reader
    for c in "\u0085\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff":
        check(c not in s, "%s: raw U+%04X" % (path, ord(c)))
    return s


def code_lines(s, comment="#"):
    return [l for l in s.split("\n") if not l.lstrip().startswith(comment)]


class Model(ast.NodeTransformer):
    """MODEL = "..." with its value taken out (the rest must equal the plain name's script)."""

    value = None

    def visit_Assign(self, node):
        if len(node.targets) == 1 and getattr(node.targets[0], "id", "") == "MODEL":
            Model.value = node.value.value
            node.value = ast.Constant("")
        return node


def python(path, base, name):
    Model.value = None
    try:
        tree = Model().visit(ast.parse(text(path)))
    except SyntaxError as e:
        check(False, "%s: does not parse: %s" % (path, e))
        return
    check(Model.value == name, "%s: MODEL reads back %r, not the name" % (path, Model.value))
    want = Model().visit(ast.parse(open(base).read()))
    check(ast.dump(tree) == ast.dump(want), "%s: the script differs from the plain name's beyond MODEL" % path)


def shell(path, base):
    s = text(path)
    check(subprocess.run(["bash", "-n", path]).returncode == 0, "%s: bash -n fails" % path)
    check(code_lines(s) == code_lines(open(base).read()), "%s: commands differ from the plain name's" % path)


PLAIN = "org/plain-model"  # the name BASE was written for (tests/hostile/memplan.sh)


def yaml_file(path, base, name):
    try:
        got = yaml.safe_load(text(path))
    except yaml.YAMLError as e:
        check(False, "%s: does not parse: %s" % (path, e))
        return
    want = yaml.safe_load(open(base))
    # a key whose value is the plain name (axolotl's base_model, LLaMA-Factory's model_name_or_path)
    # reads back the hostile name exactly, and is the only difference
    if isinstance(want, dict) and isinstance(got, dict):
        for k, v in want.items():
            if v == PLAIN:
                check(got.get(k) == name, "%s: %s reads back %r, not the name" % (path, k, got.get(k)))
                got[k] = want[k]
    check(got == want, "%s: keys or values differ from the plain name's" % path)


def json_file(path, base):
    try:
        got = json.loads(text(path))
    except ValueError as e:
        check(False, "%s: does not parse: %s" % (path, e))
        return
    want = json.load(open(base))
    check(len(got.get("_comment", [])) == len(want.get("_comment", [])), "%s: _comment lines differ" % path)
    got.pop("_comment", None), want.pop("_comment", None)
    check(got == want, "%s: keys or values differ from the plain name's" % path)


def key_value(path, base):
    s = text(path)
    check(code_lines(s) == code_lines(open(base).read()), "%s: keys differ from the plain name's" % path)


def plain(path, base):
    s = text(path)
    check(s.count("\n") == open(base).read().count("\n"), "%s: lines differ from the plain name's" % path)


def one(path, base, name):
    f = os.path.basename(path)
    check(os.path.exists(base), "%s: no counterpart %s" % (path, base))
    if f.endswith(".py"):
        python(path, base, name)
    elif f.endswith(".sh"):
        shell(path, base)
    elif f.endswith((".yaml", ".yml")):
        yaml_file(path, base, name)
    elif f.endswith(".json"):
        json_file(path, base)
    elif f.endswith((".cfg", ".conf")):
        key_value(path, base)
    else:
        plain(path, base)


def main():
    args = sys.argv[1:]
    for i in range(0, len(args) - 2, 3):
        name = open(args[i], encoding="utf-8", newline="").read()
        out, base = args[i + 1], args[i + 2]
        if os.path.isdir(out):
            files = sorted(os.listdir(out))
            check(files == sorted(os.listdir(base)), "%s: files %s" % (out, files))
            for f in files:
                one(os.path.join(out, f), os.path.join(base, f), name)
        else:
            one(out, base, name)
    for f in fails:
        print(f)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
