#!/bin/sh
# The training process's baseline host RAM (planner/estimate/host.c): the peak resident
# set of importing torch (and transformers where installed), in kB.
py=${1:-/usr/bin/python3}
"$py" -c "
import re
try:
    import torch; v = torch.__version__
except ImportError:
    v = 'none'
try:
    import transformers; v += '+transformers ' + transformers.__version__
except ImportError:
    pass
print('$py,%s,%s' % (v, re.search(r'VmHWM:\s+(\d+)', open('/proc/self/status').read()).group(1)))
"
