// Linked into the portable executables only (PINBENCH_PORTABLE). A static libstdc++ built on
// glibc 2.36 calls arc4random (random.o, which std::runtime_error pulls in), and that one symbol
// would make the binaries refuse to start on glibc 2.34 and 2.35 (Ubuntu 22.04, RHEL 9), where
// GPU machines often are. Defined here, the executable binds to this one and needs glibc 2.34 at
// most; scripts/check-portable.sh prints the newest version each binary asks for.
#include <sys/random.h>

#include <cstdint>

extern "C" std::uint32_t arc4random() {
  std::uint32_t value = 0;
  // getrandom (glibc 2.25) blocks only until the kernel's pool is first seeded, at boot.
  while (getrandom(&value, sizeof value, 0) != static_cast<ssize_t>(sizeof value)) {
  }
  return value;
}
