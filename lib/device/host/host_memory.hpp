// Page-granular host memory for the host backend: anonymous mappings with every page touched,
// and mlock with the reason it failed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pinbench::device::host {

[[nodiscard]] std::size_t page_size() noexcept;
[[nodiscard]] std::uint64_t physical_memory_bytes() noexcept;
/// MemAvailable from /proc/meminfo; 0 when unknown.
[[nodiscard]] std::uint64_t available_memory_bytes() noexcept;

/// Private anonymous memory, page aligned (so at least 256-byte aligned, as cudaMalloc), with
/// every page touched at allocation so that first-touch faults are never paid in a timed copy.
/// Move-only; unmapped (and thereby unlocked) in the destructor.
class mapped_region {
 public:
  mapped_region() noexcept = default;
  /// Maps `bytes` rounded up to whole pages; 0 maps nothing (data() is null).
  /// Throws out_of_memory when the mapping fails.
  explicit mapped_region(std::size_t bytes);
  ~mapped_region();
  mapped_region(mapped_region&& other) noexcept;
  mapped_region& operator=(mapped_region&& other) noexcept;
  mapped_region(const mapped_region&) = delete;
  mapped_region& operator=(const mapped_region&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  /// The size asked for (the mapping itself is rounded up to pages).
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

  /// Not inherited by a forked child (MADV_DONTFORK), as the CUDA driver maps device, pinned
  /// and staging memory: a loader's worker processes share none of it, so the parent's writes
  /// to it pay no copy-on-write faults.
  void keep_from_children() const noexcept;

 private:
  void reset() noexcept;

  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t mapped_bytes_ = 0;
};

/// mlock(2) on the pages of [ptr, ptr + bytes): 0 on success, else the errno.
[[nodiscard]] int lock_pages(const void* ptr, std::size_t bytes) noexcept;
/// munlock(2). Page-granular: it also unlocks a page shared with another locked range.
void unlock_pages(const void* ptr, std::size_t bytes) noexcept;

/// Why a lock failed, for a warning: "Cannot allocate memory; RLIMIT_MEMLOCK 8 MiB".
[[nodiscard]] std::string lock_failure_cause(int err);

}  // namespace pinbench::device::host
