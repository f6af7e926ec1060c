#!/usr/bin/env bash
# Checks that executables can be carried to another Linux machine that has only the C and C++
# runtimes (the GPU machine has the driver and PyTorch, none of our Debian packages): every
# DT_NEEDED entry must be libc, libm, libstdc++, libgcc_s or the loader. Prints, per binary, what
# it needs and the newest glibc symbol version it asks for (the oldest glibc it runs on).
#   scripts/check-portable.sh BINARY...
# Exit: 0 all portable, 1 a binary needs something else (named), 2 usage or unreadable file.
set -euo pipefail

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
done
exit "$status"
