#!/usr/bin/env bash
# The main job: trains the built-in LeNet on Fashion-MNIST.
#   tools/train.sh [extra trainer flags]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh trainer
exec "${BUILD_DIR:-build}/bin/trainer" --model lenet --epochs 1 "$@"
