#!/usr/bin/env bash
# The main job: 2-rank data-parallel training of the built-in LeNet on
# Fashion-MNIST (one epoch, one thread per rank), then the test accuracy.
#   tools/train.sh [extra trainer flags]      NP=4 tools/train.sh for 4 ranks
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh trainer
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec mpirun --oversubscribe -np "${NP:-2}" "${BUILD_DIR:-build}/bin/trainer" \
  --model lenet --epochs 1 --threads 1 "$@"
