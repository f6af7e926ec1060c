#!/usr/bin/env bash
# scripts/check-portable.sh on two tiny C++ programs: linked against a dynamic libstdc++ it is
# refused (exit 1, naming libstdc++ and its newest GLIBCXX_); linked with -static-libstdc++ it
# passes and prints the newest GLIBC_, GLIBCXX_, CXXABI_ and GCC_ versions. Exit 77 (skipped)
# without g++.
#   test_check_portable.sh SCRATCH_DIR
set -uo pipefail
dir=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
check="$root/scripts/check-portable.sh"
fail() { echo "test_check_portable: $*" >&2; exit 1; }
command -v g++ >/dev/null || { echo "SKIPPED: no g++ to build the probes"; exit 77; }

rm -rf "$dir" && mkdir -p "$dir"
# A program that needs libstdc++ for real (a thrown exception and a std::string).
cat >"$dir/probe.cpp" <<'CPP'
#include <stdexcept>
#include <string>
int main(int argc, char**) {
  try {
    if (argc > 0) throw std::runtime_error(std::string("probe"));
  } catch (const std::exception& e) {
    return e.what()[0] == 'p' ? 0 : 1;
  }
  return 1;
}
CPP
g++ -O1 -o "$dir/dynamic" "$dir/probe.cpp" || fail "g++ could not build the dynamic probe"
g++ -O1 -static-libstdc++ -Wl,--as-needed -o "$dir/static" "$dir/probe.cpp" \
  || fail "g++ could not build the -static-libstdc++ probe"

out=$("$check" "$dir/dynamic" 2>&1)
rc=$?
((rc == 1)) || fail "a dynamic libstdc++ passed (exit $rc): $out"
grep -q 'links libstdc++ dynamically' <<<"$out" || fail "the refusal does not name libstdc++: $out"
grep -q 'GLIBCXX: GLIBCXX_3\.4' <<<"$out" || fail "no newest GLIBCXX_ version printed: $out"

# The glibc ceiling is not this test's matter: the static libstdc++ of a Debian 12 build asks
# for arc4random (GLIBC_2.36), which pinbench supplies itself (cmake/portable_arc4random.cpp).
out=$(PINBENCH_MAX_GLIBC=99 "$check" "$dir/static" 2>&1)
rc=$?
((rc == 0)) || fail "the -static-libstdc++ probe was refused (exit $rc): $out"
for prefix in 'GLIBC: GLIBC_2\.' 'GLIBCXX: none' 'CXXABI: none' 'GCC: '; do
  grep -q "$prefix" <<<"$out" || fail "the report lacks \"$prefix\": $out"
done
echo "test_check_portable: passed"
