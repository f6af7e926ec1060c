// The loader's dataset: `samples` items of `sample_bytes`, each produced with a calibrated amount
// of real CPU work, read from memory or from a file that pinbench writes (pread: page cache real),
// or decoded and augmented from JPEG files (jpeg_source.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "image/augment.hpp"
#include "image/image_set.hpp"

namespace pinbench::loader {

/// What every sample carries besides its bytes; collated into the head of each batch so that the
/// consumer can check order and exactly-once delivery on data that went through the device.
struct sample_header {
  std::uint64_t index = 0;     ///< the sample's index in the dataset
  std::uint64_t checksum = 0;  ///< the result of the sample's CPU work (proof it was done)
};
static_assert(sizeof(sample_header) == 16);

/// What a sample cost its worker, for the jpeg source (the other sources leave it untouched).
struct sample_cost {
  std::int64_t read_ns = 0;     ///< reading the file
  std::int64_t decode_ns = 0;   ///< JPEG to RGB
  std::int64_t augment_ns = 0;  ///< crop, resize, flip, to tensor (and normalise)
  std::uint64_t bytes_read = 0;
  bool skipped = false;  ///< a corrupt file, skipped (skip_corrupt): the sample is zeros
};

/// The jpeg source: files decoded and put through torchvision's training transform.
struct jpeg_spec {
  /// The user's ImageFolder, scanned when the case's params were read; null: generated images.
  std::shared_ptr<const image::image_list> folder;
  image::generated_spec generate;  ///< used when `folder` is null; images 0 = one per sample
  int crop = 224;
  image::tensor_format format = image::tensor_format::float32_chw;
  bool skip_corrupt = false;
  /// An image whose header declares more pixels is refused before it is decoded (the
  /// dataset.max_pixels param): a worker's RGB buffer holds 3 bytes per pixel.
  std::uint64_t max_pixels = image::default_max_pixels;
  std::uint64_t seed = 0;  ///< crops and flips: sample i draws from (seed, i)
};

struct dataset_spec {
  std::uint64_t samples = 4096;
  std::size_t sample_bytes = 128 * 1024;  ///< jpeg: tensor_bytes(crop, format), set by the source
  std::int64_t cpu_per_sample_ns = 0;     ///< CPU work per sample, calibrated on this CPU
  enum class source_kind { memory, file, jpeg } source = source_kind::memory;
  bool cold_cache = false;    ///< file, jpeg: drop the files' pages before every epoch
  std::filesystem::path dir;  ///< file: where the file is made (empty: $TMPDIR or /tmp)
  jpeg_spec jpeg;
  /// Bursts: samples with (index % burst_every) < burst_length cost burst_factor times as much.
  std::uint64_t burst_every = 0;  ///< 0 = no bursts
  std::uint64_t burst_length = 0;
  double burst_factor = 1.0;
  /// Fault injection for tests: producing this sample throws loader_error. -1 = never.
  std::int64_t fail_at_sample = -1;
  /// Fault injection: producing this sample never finishes, as a worker stuck in a lock or a
  /// read: only the loader's timeout, its shutdown or Ctrl-C ends the wait. -1 = never.
  std::int64_t hang_at_sample = -1;
};

/// The amount of CPU work per nanosecond on this machine, measured once per process (median of
/// several short trials) and then fixed: every sample does a fixed amount of work, so that CPU
/// oversubscription shows as longer samples rather than being hidden by a clock-based spin.
struct cpu_calibration {
  double ns_per_unit = 0;  ///< one unit: a short dependent chain of integer mixing steps
  int trials = 0;
};
[[nodiscard]] const cpu_calibration& calibrate_cpu_work();

/// `units` of the CPU work over `data` (reads up to 4 KiB of it); returns the chain's result.
/// Deterministic: the same bytes and units give the same result on every machine.
[[nodiscard]] std::uint64_t cpu_work(const std::byte* data, std::size_t bytes, std::uint64_t units,
                                     std::uint64_t seed) noexcept;

class jpeg_source;

class dataset {
 public:
  /// Makes the backing storage: an in-memory block (memory), or a file of samples x sample_bytes
  /// written once (file) and unlinked at once: the open descriptor keeps it readable until the
  /// destructor closes it, and nothing is left behind even when the process is killed. Throws
  /// environment_error when the file cannot be made (no space: the message says how much is needed
  /// and free).
  explicit dataset(const dataset_spec& spec);
  ~dataset();
  dataset(const dataset&) = delete;
  dataset& operator=(const dataset&) = delete;

  [[nodiscard]] const dataset_spec& spec() const noexcept { return spec_; }
  [[nodiscard]] std::uint64_t size() const noexcept { return spec_.samples; }
  [[nodiscard]] std::size_t sample_bytes() const noexcept { return spec_.sample_bytes; }
  [[nodiscard]] std::uint64_t units_per_sample() const noexcept { return units_; }
  /// Where the file was made (already unlinked); empty for the memory source.
  [[nodiscard]] const std::filesystem::path& file() const noexcept { return file_; }

  /// Called before each epoch: with a cold cache, evicts the file's pages (posix_fadvise).
  void prepare_epoch() const;

  /// Writes sample `index` into `out` (sample_bytes) and its header; the jpeg source also says
  /// what the sample cost in `cost`. Thread-safe (workers call it at once). Throws loader_error
  /// for the injected fault, a failed read or (jpeg) a file that does not decode.
  void produce(std::uint64_t index, std::byte* out, sample_header& header,
               sample_cost* cost = nullptr) const;

  /// The memory source's block the samples are read from (touched when the dataset is made), or
  /// null for the other sources: where NUMA placement put the case's data.
  [[nodiscard]] const std::byte* memory_block() const noexcept { return memory_; }

  /// The jpeg source (its images, counters), or null for the other sources.
  [[nodiscard]] const jpeg_source* jpeg() const noexcept { return jpeg_.get(); }

  /// The sample's bytes only, without the CPU work: what verification compares with.
  void raw_bytes(std::uint64_t index, std::byte* out) const;

 private:
  dataset_spec spec_;
  std::uint64_t units_ = 0;
  std::uint64_t slots_ = 1;      // distinct sample contents before they repeat
  std::byte* memory_ = nullptr;  // memory source: a block the samples are read from
  std::size_t memory_bytes_ = 0;
  std::filesystem::path file_;
  int fd_ = -1;
  std::unique_ptr<jpeg_source> jpeg_;
};

}  // namespace pinbench::loader
