#include "device/host/host_memory.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/units.hpp"

namespace pinbench::device::host {

std::size_t page_size() noexcept {
  static const std::size_t size = [] {
    const long n = ::sysconf(_SC_PAGESIZE);
    return n > 0 ? static_cast<std::size_t>(n) : std::size_t{4096};
  }();
  return size;
}

std::uint64_t physical_memory_bytes() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  return pages > 0 ? static_cast<std::uint64_t>(pages) * page_size() : 0;
}

std::uint64_t available_memory_bytes() noexcept {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  std::uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long v = 0;
    if (std::sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
      kib = v;
      break;
    }
  }
  std::fclose(f);
  return kib * 1024;
}

mapped_region::mapped_region(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const std::size_t page = page_size();
  if (bytes > SIZE_MAX - page) {
    throw out_of_memory(fmt::format("cannot map {} bytes of host memory", bytes));
  }
  // Every page is touched below: more than the host has would end in the OOM killer (or a
  // machine stalled in swap), not in an error. Small regions skip the /proc read.
  constexpr std::size_t check_from_bytes = std::size_t{64} << 20;
  if (bytes >= check_from_bytes) {
    const std::uint64_t available = available_memory_bytes();
    if (available != 0 && bytes > available)
      throw out_of_memory(fmt::format("cannot map {} of host memory: {} available (MemAvailable)",
                                      format_bytes(bytes), format_bytes(available)));
  }
  mapped_bytes_ = (bytes + page - 1) / page * page;
  // MAP_POPULATE faults the pages in with one call; the loop below makes sure every page is
  // really backed and writable even where populate is only a hint.
  void* p = ::mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    mapped_bytes_ = 0;
    throw out_of_memory(fmt::format("cannot map {} of host memory: {}", format_bytes(bytes),
                                    std::generic_category().message(err)));
  }
  data_ = static_cast<std::byte*>(p);
  for (std::size_t offset = 0; offset < mapped_bytes_; offset += page) data_[offset] = std::byte{0};
}

mapped_region::~mapped_region() {
  reset();
}

mapped_region::mapped_region(mapped_region&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      mapped_bytes_(std::exchange(other.mapped_bytes_, 0)) {}

mapped_region& mapped_region::operator=(mapped_region&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
  }
  return *this;
}

void mapped_region::reset() noexcept {
  if (data_ != nullptr) ::munmap(data_, mapped_bytes_);
  data_ = nullptr;
  bytes_ = 0;
  mapped_bytes_ = 0;
}

void mapped_region::keep_from_children() const noexcept {
  if (data_ != nullptr) (void)::madvise(data_, mapped_bytes_, MADV_DONTFORK);
}

int lock_pages(const void* ptr, std::size_t bytes) noexcept {
  return ::mlock(ptr, bytes) == 0 ? 0 : errno;
}

void unlock_pages(const void* ptr, std::size_t bytes) noexcept {
  ::munlock(ptr, bytes);
}

std::string lock_failure_cause(int err) {
  std::string limit = "unknown";
  rlimit lim{};
  if (::getrlimit(RLIMIT_MEMLOCK, &lim) == 0) {
    limit = lim.rlim_cur == RLIM_INFINITY ? std::string("unlimited")
                                          : format_bytes(static_cast<std::uint64_t>(lim.rlim_cur));
  }
  return fmt::format("{}; RLIMIT_MEMLOCK {}", std::generic_category().message(err), limit);
}

}  // namespace pinbench::device::host
