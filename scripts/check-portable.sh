#!/usr/bin/env bash
# Checks that executables can be carried to another Linux machine that has only the C and C++
# runtimes (the GPU machine has the driver and PyTorch, none of our Debian packages): every
# DT_NEEDED entry must be libc, libm, libstdc++, libgcc_s or the loader, and no symbol may ask for
# a glibc newer than PINBENCH_MAX_GLIBC (default 2.34: RHEL 9 has 2.34, Ubuntu 22.04 2.35; the
# pthread calls that moved into libc make 2.34 the floor for a build on Debian 12). Prints, per
# binary, what it needs and the newest glibc symbol version it asks for.
#   scripts/check-portable.sh BINARY...
# Exit: 0 all portable, 1 a binary needs something else (named), 2 usage or unreadable file.
set -euo pipefail

max_glibc=${PINBENCH_MAX_GLIBC:-2.34}
allowed='^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$'
if (($# == 0)); then
  echo "check-portable: usage: check-portable.sh BINARY..." >&2
  exit 2
fi
command -v readelf >/dev/null || { echo "check-portable: readelf (binutils) is missing" >&2; exit 2; }

status=0
for bin in "$@"; do
  if [[ ! -r $bin ]]; then
    echo "check-portable: $bin: cannot read it" >&2
    exit 2
  fi
  needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  glibc=$(readelf -V "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1 || true)
  extra=$(grep -Ev "$allowed" <<<"$needed" || true)
  printf '%s: needs %s; newest symbol version %s\n' "$bin" "$(tr '\n' ' ' <<<"$needed" | sed 's/ $//')" \
    "${glibc:-none}"
  if [[ -n $extra ]]; then
    echo "check-portable: $bin also needs $(tr '\n' ' ' <<<"$extra" | sed 's/ $//'), which a machine without our packages may lack" >&2
    status=1
  fi
  if [[ -n $glibc && $(printf '%s\n%s\n' "GLIBC_$max_glibc" "$glibc" | sort -V | tail -1) != "GLIBC_$max_glibc" ]]; then
    echo "check-portable: $bin asks for $glibc, newer than glibc $max_glibc: $(objdump -T "$bin" 2>/dev/null | grep -F "($glibc)" | awk '{print $NF}' | tr '\n' ' ')" >&2
    status=1
  fi
done
exit "$status"
