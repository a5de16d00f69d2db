#!/bin/sh
# run.sh PYTHON BIN COUNTER [harness options]: the PyTorch validation, with a
# clear message when python3-torch is missing.
set -eu
py=$1 bin=$2 counter=$3
shift 3
here=$(dirname "$0")
if ! "$py" -c 'import torch' 2>/dev/null; then
    echo "validate-pytorch: $py cannot import torch: install Debian's python3-torch" \
         "(.ci/install-deps does), or skip these tests with PYTORCH=no" >&2
    exit 1
fi
echo "== memplan --framework pytorch-cpu against PyTorch $("$py" -c 'import torch; print(torch.__version__)') on the CPU"
exec "$py" "$here/harness.py" run "$here/configs.csv" --memplan "$bin/memplan" \
    --counter "$(cd "$(dirname "$counter")" && pwd)/$(basename "$counter")" "$@"
