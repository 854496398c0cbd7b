#!/usr/bin/env bash
# The ABI check: regenerates the ABI table from a built libnvhcq.so and include/nvhcq.h and
# compares it with the checked-in tests/abi/nvhcq-MAJOR.MINOR.abi; a difference fails with the
# diff. A change to the ABI is made deliberately: rerun with --update and commit the table.
#   bash tests/abi/check.sh [BUILD_DIR] [--update]       (BUILD_DIR defaults to build)
# The table holds every exported symbol; size and alignment of every public struct and the
# offset and size of each of its fields; the value of every status and every numeric NVHCQ_
# constant of the header.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=build
update=0
for arg in "$@"; do
  case $arg in
    --update) update=1 ;;
    *) build=$arg ;;
  esac
done
header=$root/include/nvhcq.h
lib=$build/libnvhcq.so
[ -f "$lib" ] || { echo "abi check: no $lib; build first (cmake --build $build)"; exit 1; }
version=$(awk '$1 == "#define" && $2 ~ /^NVHCQ_VERSION_(MAJOR|MINOR)$/ {print $3}' "$header" | paste -sd.)
table=$root/tests/abi/nvhcq-$version.abi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A C program that prints the layouts and values, written from the header's own declarations:
# each `typedef struct NAME { ... } NAME;` and each `#define NVHCQ_X <integer>`.
{
  echo '#include <stdio.h>'
  echo '#include <stddef.h>'
  echo '#include "nvhcq.h"'
  echo '#define FIELD(t, f) printf("field %s.%s offset %zu size %zu\n", #t, #f, offsetof(t, f), sizeof(((t *)0)->f))'
  echo '#define STRUCT(t) printf("struct %s size %zu align %zu\n", #t, sizeof(t), _Alignof(t))'
  echo '#define VALUE(n) printf("value %s %llu\n", #n, (unsigned long long)(n))'
  echo '#define STATUS(n) VALUE(n);'
  echo 'int main(void) {'
  sed -e 's:/\*.*\*/::g' "$header" | awk '
    /^typedef struct [a-z0-9_]+ \{/ { name = $3; body = ""; inside = 1; next }
    inside && /^\}/ {
      print "  STRUCT(" name ");"
      n = split(body, decls, ";")
      for (i = 1; i <= n; i++) {
        d = decls[i]
        gsub(/\[[^]]*\]/, "", d)           # arrays: the name is what precedes [N]
        m = split(d, parts, ",")
        for (j = 1; j <= m; j++) {
          p = parts[j]
          gsub(/[*]/, " ", p)
          k = split(p, words, " ")
          if (k > 0) print "  FIELD(" name ", " words[k] ");"
        }
      }
      inside = 0; next
    }
    inside { body = body " " $0; next }
    $1 == "#define" && $2 ~ /^NVHCQ_[A-Z0-9_]+$/ && $3 ~ /^[0-9][0-9a-fA-Fxu]*$/ { print "  VALUE(" $2 ");" }'
  echo '  NVHCQ_STATUS_LIST(STATUS)'
  echo '  return 0;'
  echo '}'
} >"$work/layout.c"
${CC:-cc} -std=c11 -I"$root/include" -o "$work/layout" "$work/layout.c"
{
  echo "# nvhcq $version ABI: regenerate with bash tests/abi/check.sh BUILD_DIR --update"
  nm -D --defined-only "$lib" | awk '$2 ~ /[TDB]/ {print "symbol " $3}' | LC_ALL=C sort
  "$work/layout"
} >"$work/abi"

if [ "$update" = 1 ]; then
  cp "$work/abi" "$table"
  echo "abi: wrote $table"
  exit 0
fi
[ -f "$table" ] || { echo "abi: no table $table for version $version; run with --update"; exit 1; }
if ! diff -u "$table" "$work/abi"; then
  echo "abi: the ABI differs from $table (above: - the table, + this build). If the change is"
  echo "meant, run bash tests/abi/check.sh $build --update and commit the table with it."
  exit 1
fi
echo "abi: matches $table ($(grep -c '^symbol ' "$table") symbols, $(grep -c '^struct ' "$table") structs)"
