#!/bin/sh
# tests/layering.sh — planner/ stands in floors, each folder on the ones below it
# (issue 31): a file includes headers of its own folder or of a lower floor, never
# of a higher one; no library file includes the umbrella memplan.h (each includes
# the headers it uses); no header includes itself through others (no circle).
# Prints one line per breach; exit 1 on any.
floors="common model profiles settings memtrain estimate emit search check cmd"
floor() { i=0; for f in $floors; do i=$((i + 1)); [ "$f" = "$1" ] && { echo $i; return; }; done; echo 0; }
bad=0
for file in planner/*/*.[ch]; do
    dir=$(basename "$(dirname "$file")")
    own=$(floor "$dir")
    [ "$own" -gt 0 ] || { echo "layering: $file: folder '$dir' has no floor"; bad=1; continue; }
    for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file"); do
        case "$inc" in
        memplan.h) echo "layering: $file includes the umbrella memplan.h, not the headers it uses"; bad=1 ;;
        */*) to=$(floor "${inc%%/*}")
             if [ "${inc%%/*}" != "$dir" ] && [ "$to" -ge "$own" ]; then
                 echo "layering: $file ($dir, floor $own) includes $inc (floor $to): an include running back up"; bad=1
             fi ;;
        esac
    done
done
# circles among the planner's headers
python3 - <<'PY' || bad=1
import glob, re, sys
graph = {}
for h in glob.glob("planner/*/*.h") + ["planner/memplan.h"]:
    key = h[len("planner/"):]
    graph[key] = [i for i in re.findall(r'^#include "([^"]+)"', open(h).read(), re.M) if i in
                  {g[len("planner/"):] for g in glob.glob("planner/*/*.h")} | {"memplan.h"}]
state = {}
def visit(n, path):
    if state.get(n) == 1:
        print("layering: a circle of includes: " + " -> ".join(path + [n]))
        return False
    if state.get(n) == 2:
        return True
    state[n] = 1
    ok = all(visit(m, path + [n]) for m in graph.get(n, []))
    state[n] = 2
    return ok
sys.exit(0 if all(visit(n, []) for n in graph) else 1)
PY
# trainer/: no circle between its parts (a part is a .c with its .h; model_impl.h and
# model_setup.c are the model's): the model's buffers sit below the model
python3 - <<'PY' || bad=1
import glob, os, re, sys
def part(f):
    name = os.path.splitext(os.path.basename(f))[0]
    return {"model_impl": "model", "model_setup": "model"}.get(name, name)
graph = {}
for f in glob.glob("trainer/*.[ch]"):
    for inc in re.findall(r'^#include "([^"/]+)"', open(f).read(), re.M):
        if os.path.exists("trainer/" + inc) and part(inc) != part(f):
            graph.setdefault(part(f), set()).add(part(inc))
state, ok = {}, True
def visit(n, path):
    global ok
    if state.get(n) == 1:
        print("layering: a circle among trainer/'s parts: " + " -> ".join(path + [n]))
        ok = False
        return
    if state.get(n) == 2:
        return
    state[n] = 1
    for m in sorted(graph.get(n, ())):
        visit(m, path + [n])
    state[n] = 2
for n in sorted(graph):
    visit(n, [])
sys.exit(0 if ok else 1)
PY
[ $bad -eq 0 ] && echo "ok   layering: planner/'s folders include only their own and lower floors, no circle; none among trainer/'s parts"
exit $bad
