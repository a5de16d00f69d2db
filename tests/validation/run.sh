#!/bin/sh
# run.sh PYTHON BIN COUNTER SUITE [harness options]: the PyTorch validation, with
# a clear message when python3-torch is missing. SUITE: single (harness.py on
# configs.csv, one process) or ddp (ddp.py on ddp_configs.csv, a process per rank).
set -eu
py=$1 bin=$2 counter=$3 suite=$4
shift 4
here=$(dirname "$0")
case $suite in
    single) script=harness.py configs=configs.csv what="" ;;
    ddp) script=ddp.py configs=ddp_configs.csv what=" data parallel (gloo), per rank," ;;
    *) echo "run.sh: unknown suite '$suite' (single or ddp)" >&2; exit 2 ;;
esac
if ! "$py" -c 'import torch' 2>/dev/null; then
    echo "validate-pytorch: $py cannot import torch: install Debian's python3-torch" \
         "(.ci/install-deps does), or skip these tests with PYTORCH=no" >&2
    exit 1
fi
echo "== memplan --framework pytorch-cpu against PyTorch $("$py" -c 'import torch; print(torch.__version__)')$what on the CPU"
exec "$py" "$here/$script" run "$here/$configs" --memplan "$bin/memplan" \
    --counter "$(cd "$(dirname "$counter")" && pwd)/$(basename "$counter")" "$@"
