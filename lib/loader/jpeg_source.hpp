// The loader's jpeg source: per sample, a worker reads a JPEG file, decodes it with
// libjpeg-turbo and applies torchvision's training transform (RandomResizedCrop, horizontal flip,
// to tensor, normalise), as an ImageNet input pipeline does.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "image/augment.hpp"
#include "image/image_set.hpp"
#include "loader/dataset.hpp"

namespace pinbench::loader {

class jpeg_source {
 public:
  /// Takes the user's folder from the spec, or makes (or finds in the cache) the generated set.
  /// Throws environment_error when the cache cannot be written, interrupted_error on Ctrl-C.
  explicit jpeg_source(const dataset_spec& spec);

  [[nodiscard]] const image::image_list& images() const noexcept { return *images_; }
  [[nodiscard]] std::size_t sample_bytes() const noexcept;

  /// Drops every file's pages from the page cache (cold-cache epochs).
  void drop_page_cache() const;

  /// Reads, decodes and transforms sample `index` (file index % images) into `out`. A file that
  /// does not decode throws loader_error naming it, or with skip_corrupt gives a zero sample
  /// (checksum 0) and is counted. Thread-safe.
  void produce(std::uint64_t index, std::byte* out, std::uint64_t& checksum,
               sample_cost& cost) const;

  /// Files skipped as corrupt so far, and the first few of their paths with the reason.
  [[nodiscard]] std::uint64_t skipped() const noexcept { return skipped_.load(); }
  [[nodiscard]] std::vector<std::string> skipped_files() const;
  /// Counts sample `index` as skipped by a worker process (whose own counters stay in it).
  void count_skip_in_worker(std::uint64_t index) const;

 private:
  void count_skip(const image::image_entry& entry, const std::string& reason) const;
  const image::image_entry& file_for(std::uint64_t index) const noexcept;

  jpeg_spec spec_;
  std::shared_ptr<const image::image_list> images_;
  mutable std::atomic<std::uint64_t> skipped_{0};
  mutable std::mutex skipped_mutex_;
  mutable std::vector<std::string> skipped_files_;
};

/// A cheap fingerprint of a produced sample: a stride of its words (every sample's bytes are
/// compared in full elsewhere; this only proves the work was done and ties header to data).
/// Never 0 (0 marks a skipped sample).
[[nodiscard]] std::uint64_t sample_fingerprint(const std::byte* data, std::size_t bytes,
                                               std::uint64_t index) noexcept;

}  // namespace pinbench::loader
