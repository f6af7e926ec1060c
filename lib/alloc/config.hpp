// The caching allocator's options in PYTORCH_CUDA_ALLOC_CONF syntax, parsed strictly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pinbench::alloc {

struct config {
  /// Blocks at or above this are never split; nullopt = unlimited (PyTorch's default).
  std::optional<std::size_t> max_split_size_bytes;
  /// Divisions per power-of-two interval, indexed by log2 of the interval's start: entry i
  /// applies to sizes in [2^i, 2^(i+1)). 0 = no power-of-two rounding (the default).
  /// "roundup_power2_divisions:4" sets every entry; the list form "[256:1,512:2,>:8]" sets ranges.
  std::vector<std::size_t> roundup_power2_divisions = std::vector<std::size_t>(64, 0);
  /// Fraction of the allowed memory above which cached blocks are reclaimed (0 = off).
  double garbage_collection_threshold = 0;
  bool expandable_segments = false;

  /// Canonical text ("max_split_size_mb:128,expandable_segments:True"); "" for the defaults.
  [[nodiscard]] std::string to_string() const;
  [[nodiscard]] std::size_t divisions_for(std::size_t bytes) const;
};

/// Parses "key:value,key:value". Keys: max_split_size_mb (integer > 20, in MiB, as PyTorch
/// requires), roundup_power2_divisions (a power of two, or the bracketed list form),
/// garbage_collection_threshold (0 < t < 1), expandable_segments (True/False).
/// `where` names the source in errors (a file and JSON path, or "PYTORCH_CUDA_ALLOC_CONF").
/// Throws input_error naming the key and what was expected; unknown keys get a did-you-mean.
[[nodiscard]] config parse_config(std::string_view text, const std::string& file,
                                  const std::string& json_path);

}  // namespace pinbench::alloc
