#!/bin/sh
# test_emit_engines.sh BIN_DIR — the engine configs and bundles (tests/test_emit_engines.py).
# YAML is parsed with PyYAML (Debian python3-yaml, in .ci/packages).
exec python3 "$(dirname "$0")/test_emit_engines.py" "${1:-build/bin}"
