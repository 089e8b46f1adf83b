#!/usr/bin/env bash
# Installs the build and test dependencies from Debian's archive (when run as
# root and any are missing), then configures and builds into build/.
#   tools/setup.sh [cmake target ...]      (default: everything)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ccache pkg-config clang-format iproute2 universal-ctags
  openmpi-bin libopenmpi-dev slurm-wlm munge libpmix-dev python3-yaml
  libprotobuf-dev protobuf-compiler python3-protobuf
  libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  libdnnl-dev
  zlib1g-dev pybind11-dev python3-dev python3-numpy python3-pytest
  python3-matplotlib python3-torch libopenblas0-openmp
  dataset-fashion-mnist fortunes
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages (run as root to install): ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Cache hits across checkouts in different directories.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
JOBS="${JOBS:-2}"
BUILD_DIR="${BUILD_DIR:-build}"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE=/usr/bin/python3 ${CMAKE_ARGS:-} >/dev/null
if [ "$#" -gt 0 ]; then
  for t in "$@"; do cmake --build "$BUILD_DIR" -j "$JOBS" --target "$t"; done
else
  cmake --build "$BUILD_DIR" -j "$JOBS"
fi
