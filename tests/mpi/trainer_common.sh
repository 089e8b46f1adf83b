# What the trainer's shell tests share; each sources it first:
#   source "$(dirname "$0")/trainer_common.sh" MPIRUN TRAINER
# Sets MPIRUN and TRAINER, lets mpirun run as root, makes $work (removed at
# exit), and defines fail, make_idx (see make_idx.py) and save_mlp (the
# built-in mlp's job, written to $work/mlp.pb).
set -u
MPIRUN=$1
TRAINER=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
COMMON_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d "/tmp/fluid_$(basename "$0" .sh).XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
make_idx() {
  /usr/bin/python3 "$COMMON_DIR/make_idx.py" "$@" \
    || fail "could not write the test data in $1"
}
save_mlp() {
  "$TRAINER" --model mlp --save "$work/mlp.pb" >/dev/null || fail "save"
}
