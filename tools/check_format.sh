#!/usr/bin/env bash
# Fails, naming the files, when a C, C++ or CUDA source of the project
# differs from what clang-format makes of it with the project's
# .clang-format. Fix with: tools/check_format.sh --fix
#   CLANG_FORMAT=clang-format-14 tools/check_format.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT="${CLANG_FORMAT:-clang-format}"
if ! command -v "$CLANG_FORMAT" >/dev/null; then
  echo "check_format: $CLANG_FORMAT not found (apt-get install clang-format)" >&2
  exit 2
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
else
  mapfile -t files < <(find . -path ./build -prune -o -path './build-*' -prune \
    -o -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
    -print | sed 's|^\./||' | sort)
fi
if [ "${1:-}" = "--fix" ]; then
  "$CLANG_FORMAT" -i "${files[@]}"
  exit 0
fi
mapfile -t bad < <("$CLANG_FORMAT" --dry-run "${files[@]}" 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' |
  sort -u)
if [ "${#bad[@]}" -gt 0 ]; then
  printf '%s\n' "${bad[@]}"
  echo "check_format: ${#bad[@]} of ${#files[@]} files differ from" \
       ".clang-format ($("$CLANG_FORMAT" --version | head -1));" \
       "fix with tools/check_format.sh --fix"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
