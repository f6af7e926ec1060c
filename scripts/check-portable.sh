#!/usr/bin/env bash
# Checks that executables can be carried to another Linux machine that has only the C runtime
# and libgcc_s (the GPU machine has the driver and PyTorch, none of our Debian packages): every
# DT_NEEDED entry must be libc, libm, libgcc_s or the loader, and no symbol may ask for a glibc
# newer than PINBENCH_MAX_GLIBC (default 2.34: RHEL 9 has 2.34, Ubuntu 22.04 2.35; the pthread
# calls that moved into libc make 2.34 the floor for a build on Debian 12). A dynamic libstdc++
# is refused: the portable build links it statically (-static-libstdc++, GCC only), because the
# machine's libstdc++ may be older than the one built against and fail at exec (a clang build
# without that flag would otherwise pass here). libgcc_s stays dynamic: every glibc system has
# it (glibc itself loads it to unwind threads). Prints, per binary, what it needs and the newest
# GLIBC_, GLIBCXX_, CXXABI_ and GCC_ symbol versions it asks for ("none" where it asks for none).
#   scripts/check-portable.sh BINARY...
# Exit: 0 all portable, 1 a binary needs something else (named), 2 usage or unreadable file.
set -euo pipefail

max_glibc=${PINBENCH_MAX_GLIBC:-2.34}
allowed='^(libc\.so\.6|libm\.so\.6|libgcc_s\.so\.1|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$'
if (($# == 0)); then
  echo "check-portable: usage: check-portable.sh BINARY..." >&2
  exit 2
fi
command -v readelf >/dev/null || { echo "check-portable: readelf (binutils) is missing" >&2; exit 2; }

# newest PREFIX VERSIONS: the newest PREFIX_x.y.z among the symbol versions, or none.
newest() {
  local found
  found=$(grep -o "^$1_[0-9][0-9.]*\$" <<<"$2" | sort -Vu | tail -1 || true)
  echo "${found:-none}"
}

status=0
for bin in "$@"; do
  if [[ ! -r $bin ]]; then
    echo "check-portable: $bin: cannot read it" >&2
    exit 2
  fi
  needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  # The versions the binary asks of its libraries (readelf -V's version-needs section).
  versions=$(readelf -V "$bin" | grep -o '\(GLIBC\|GLIBCXX\|CXXABI\|GCC\)_[0-9][0-9.]*' | sort -Vu || true)
  glibc=$(newest GLIBC "$versions")
  extra=$(grep -Ev "$allowed" <<<"$needed" || true)
  printf '%s: needs %s; newest symbol versions %s %s %s %s\n' "$bin" \
    "$(tr '\n' ' ' <<<"$needed" | sed 's/ $//')" "GLIBC: $glibc," \
    "GLIBCXX: $(newest GLIBCXX "$versions")," "CXXABI: $(newest CXXABI "$versions")," \
    "GCC: $(newest GCC "$versions")"
  if grep -q '^libstdc++\.so' <<<"$needed"; then
    echo "check-portable: $bin links libstdc++ dynamically (newest GLIBCXX it asks for:" \
      "$(newest GLIBCXX "$versions")): a portable build links it statically (-static-libstdc++;" \
      "GCC builds with PINBENCH_PORTABLE)" >&2
    status=1
  fi
  extra=$(grep -v '^libstdc++\.so' <<<"$extra" || true)
  if [[ -n $extra ]]; then
    echo "check-portable: $bin also needs $(tr '\n' ' ' <<<"$extra" | sed 's/ $//'), which a machine without our packages may lack" >&2
    status=1
  fi
  if [[ $glibc != none && $(printf '%s\n%s\n' "GLIBC_$max_glibc" "$glibc" | sort -V | tail -1) != "GLIBC_$max_glibc" ]]; then
    echo "check-portable: $bin asks for $glibc, newer than glibc $max_glibc: $(objdump -T "$bin" 2>/dev/null | grep -F "($glibc)" | awk '{print $NF}' | tr '\n' ' ')" >&2
    status=1
  fi
done
exit "$status"
