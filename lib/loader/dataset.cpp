#include "loader/dataset.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/pattern.hpp"
#include "core/units.hpp"
#include "loader/jpeg_source.hpp"
#include "loader/loader.hpp"

namespace pinbench::loader {

namespace {

constexpr std::size_t work_window_bytes = 4096;  // the CPU work reads at most this much
constexpr std::size_t pattern_slots = 4096;      // distinct sample contents before they repeat
constexpr std::size_t memory_block_limit = 64u << 20;

// Every sample starts with its index, so that no two samples are equal.
void stamp_index(std::byte* p, std::size_t n, std::uint64_t index) noexcept {
  std::memcpy(p, &index, std::min<std::size_t>(n, sizeof index));
}

std::filesystem::path default_dir() {
  if (const char* t = std::getenv("TMPDIR"); t != nullptr && *t != '\0') return t;
  return "/tmp";
}

}  // namespace

std::uint64_t cpu_work(const std::byte* data, std::size_t bytes, std::uint64_t units,
                       std::uint64_t seed) noexcept {
  std::uint64_t h = mix64(seed ^ 0xD6E8FEB86659FD93ull);
  const std::size_t words = std::min(bytes, work_window_bytes) / 8;
  std::size_t w = 0;
  for (std::uint64_t u = 0; u < units; ++u) {
    // One unit: a dependent chain of 32 multiply-rotate steps, each mixing in a word of the
    // sample, so that the compiler can neither vectorise nor skip it.
    for (int step = 0; step < 32; ++step) {
      std::uint64_t word = 0;
      if (words != 0) {
        std::memcpy(&word, data + 8 * w, 8);
        w = w + 1 == words ? 0 : w + 1;
      }
      h = (h ^ word) * 0x9FB21C651E98DF25ull;
      h = (h << 23) | (h >> 41);
    }
  }
  return h == 0 ? 1 : h;
}

const cpu_calibration& calibrate_cpu_work() {
  static const cpu_calibration c = [] {
    std::vector<std::byte> buf(work_window_bytes);
    fill_pattern(buf.data(), buf.size(), 7);
    // Grow the trial until it lasts ~1 ms, then take the median of several.
    std::uint64_t units = 64;
    volatile std::uint64_t sink = 0;
    for (;;) {
      const std::int64_t t0 = now_ns();
      sink = sink + cpu_work(buf.data(), buf.size(), units, 1);
      if (now_ns() - t0 >= 1'000'000 || units >= (1ull << 30)) break;
      units *= 2;
    }
    std::vector<double> per_unit;
    for (int i = 0; i < 7; ++i) {
      const std::int64_t t0 = now_ns();
      sink = sink + cpu_work(buf.data(), buf.size(), units, static_cast<std::uint64_t>(i));
      per_unit.push_back(static_cast<double>(now_ns() - t0) / static_cast<double>(units));
    }
    std::sort(per_unit.begin(), per_unit.end());
    cpu_calibration out;
    out.ns_per_unit = std::max(per_unit[per_unit.size() / 2], 1e-3);
    out.trials = static_cast<int>(per_unit.size());
    return out;
  }();
  return c;
}

dataset::dataset(const dataset_spec& spec) : spec_(spec) {
  if (spec_.source == dataset_spec::source_kind::jpeg) {
    // The sample is the transform's tensor: its size follows from crop and format.
    jpeg_ = std::make_unique<jpeg_source>(spec_);
    spec_.sample_bytes = jpeg_->sample_bytes();
  }
  if (spec_.samples == 0 || spec_.sample_bytes == 0)
    throw input_error("loader: the dataset needs at least one sample of at least one byte");
  if (spec_.cpu_per_sample_ns > 0) {
    const double units =
        static_cast<double>(spec_.cpu_per_sample_ns) / calibrate_cpu_work().ns_per_unit;
    units_ = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(units)));
  }

  slots_ = std::min<std::uint64_t>(
      {spec_.samples, pattern_slots,
       std::max<std::uint64_t>(1, memory_block_limit / spec_.sample_bytes)});
  if (jpeg_) return;
  if (spec_.source == dataset_spec::source_kind::memory) {
    memory_bytes_ = static_cast<std::size_t>(slots_) * spec_.sample_bytes;
    memory_ = static_cast<std::byte*>(::operator new(memory_bytes_));
    for (std::size_t s = 0; s < slots_; ++s)
      fill_pattern(memory_ + s * spec_.sample_bytes, spec_.sample_bytes, s);
    return;
  }

  // File source: written once, unlinked at once (the descriptor keeps it readable), so that
  // nothing is left behind even if the process is killed.
  const std::filesystem::path dir = spec_.dir.empty() ? default_dir() : spec_.dir;
  const std::uint64_t need = spec_.samples * spec_.sample_bytes;
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) == 0) {
    const std::uint64_t avail = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
    if (need + (256ull << 20) > avail)
      throw environment_error(fmt::format(
          "loader: the dataset file needs {} in {}, which has {} free (keep 256 MiB spare); "
          "use fewer samples, a smaller sample_bytes or dataset.dir elsewhere",
          format_bytes(need), dir.string(), format_bytes(avail)));
  }
  std::string name = (dir / "pinbench-dataset-XXXXXX").string();
  fd_ = ::mkstemp(name.data());
  if (fd_ < 0)
    throw environment_error(fmt::format("loader: cannot create the dataset file in {}: {}",
                                        dir.string(), std::strerror(errno)));
  file_ = name;
  ::unlink(name.c_str());
  std::vector<std::byte> chunk;
  const std::size_t per_chunk = std::max<std::size_t>(1, (4u << 20) / spec_.sample_bytes);
  for (std::uint64_t first = 0; first < spec_.samples; first += per_chunk) {
    // A large file takes seconds to write: Ctrl-C must not wait for it.
    if (interrupt_requested()) {
      ::close(fd_);
      fd_ = -1;
      throw interrupted_error();
    }
    const std::uint64_t n = std::min<std::uint64_t>(per_chunk, spec_.samples - first);
    chunk.resize(n * spec_.sample_bytes);
    for (std::uint64_t i = 0; i < n; ++i)
      raw_bytes(first + i, chunk.data() + i * spec_.sample_bytes);
    std::size_t done = 0;
    while (done < chunk.size()) {
      const ::ssize_t w = ::pwrite(fd_, chunk.data() + done, chunk.size() - done,
                                   static_cast<::off_t>(first * spec_.sample_bytes + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = errno;
        ::close(fd_);
        fd_ = -1;
        throw environment_error(fmt::format("loader: cannot write the dataset file {}: {}",
                                            file_.string(), std::strerror(err)));
      }
      done += static_cast<std::size_t>(w);
    }
  }
  ::fdatasync(fd_);  // clean pages can be dropped for cold-cache epochs
}

dataset::~dataset() {
  if (fd_ >= 0) ::close(fd_);
  ::operator delete(memory_);
}

void dataset::prepare_epoch() const {
  if (fd_ >= 0 && spec_.cold_cache) (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
  if (jpeg_ && spec_.cold_cache) jpeg_->drop_page_cache();
}

void dataset::raw_bytes(std::uint64_t index, std::byte* out) const {
  if (jpeg_) {  // the decoded, transformed sample: deterministic for the index
    std::uint64_t checksum = 0;
    sample_cost cost;
    jpeg_->produce(index, out, checksum, cost);
    return;
  }
  fill_pattern(out, spec_.sample_bytes, index % slots_);
  stamp_index(out, spec_.sample_bytes, index);
}

void dataset::produce(std::uint64_t index, std::byte* out, sample_header& header,
                      sample_cost* cost) const {
  if (index >= spec_.samples)
    throw loader_error(
        fmt::format("sample {} is out of range (dataset of {})", index, spec_.samples));
  if (spec_.fail_at_sample >= 0 && index == static_cast<std::uint64_t>(spec_.fail_at_sample))
    throw loader_error(fmt::format("producing sample {} failed (injected fault)", index));

  const std::size_t n = spec_.sample_bytes;
  header.index = index;
  if (jpeg_) {
    sample_cost ignored;
    jpeg_->produce(index, out, header.checksum, cost != nullptr ? *cost : ignored);
    if (header.checksum == 0) return;  // skipped as corrupt: no further work on zeros
    if (units_ != 0) {                 // cpu_per_sample: more work on top of the transform
      const std::uint64_t h = mix64(header.checksum ^ cpu_work(out, n, units_, index));
      header.checksum = h == 0 ? 1 : h;
    }
    return;
  }
  if (memory_ != nullptr) {
    std::memcpy(out, memory_ + (index % slots_) * n, n);
    stamp_index(out, n, index);
  } else {
    std::size_t done = 0;
    while (done < n) {
      const ::ssize_t r =
          ::pread(fd_, out + done, n - done, static_cast<::off_t>(index * n + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw loader_error(fmt::format("reading sample {} from {} failed: {}", index,
                                       file_.string(),
                                       r == 0 ? "unexpected end of file" : std::strerror(errno)));
      done += static_cast<std::size_t>(r);
    }
  }

  std::uint64_t units = units_;
  if (spec_.burst_every != 0 && index % spec_.burst_every < spec_.burst_length)
    units =
        static_cast<std::uint64_t>(std::llround(static_cast<double>(units) * spec_.burst_factor));
  header.index = index;
  header.checksum = cpu_work(out, n, units, index);
}

}  // namespace pinbench::loader
