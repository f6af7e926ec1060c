// The caching allocator's options in PYTORCH_CUDA_ALLOC_CONF syntax, parsed strictly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alloc/pytorch_version.hpp"

namespace pinbench::alloc {

struct config {
  /// The release whose rules read these options and decide with them.
  pytorch_release release = pytorch_release::newest();
  /// Blocks at or above this are never split; nullopt = unlimited (PyTorch's default).
  std::optional<std::size_t> max_split_size_bytes{};
  /// Divisions per power-of-two interval, indexed by log2 of the interval's start: entry i
  /// applies to sizes in [2^i, 2^(i+1)). 0 = no power-of-two rounding (the default).
  /// "roundup_power2_divisions:4" sets every entry; the list form "[256:1,512:2,>:8]" sets ranges.
  std::vector<std::size_t> roundup_power2_divisions = std::vector<std::size_t>(64, 0);
  /// Fraction of the allowed memory above which cached blocks are reclaimed (0 = off).
  double garbage_collection_threshold = 0;
  bool expandable_segments = false;
  /// An oversize request takes a cached block less than this much larger (PyTorch 2.6+'s
  /// max_non_split_rounding_mb); nullopt = kLargeBuffer, 20 MiB.
  std::optional<std::size_t> max_non_split_rounding_bytes{};
  /// per_process_memory_fraction (PyTorch 2.10+): as set_per_process_memory_fraction.
  std::optional<double> per_process_memory_fraction{};

  /// Canonical text ("max_split_size_mb:128,expandable_segments:True"); "" for the defaults.
  [[nodiscard]] std::string to_string() const;
  [[nodiscard]] std::size_t divisions_for(std::size_t bytes) const;
};

/// PyTorch keeps 16 roundup intervals: entry j covers sizes of [2^j MiB, 2^(j+1) MiB); entry 0
/// also covers everything below 1 MiB and entry 15 everything from 32 GiB up.
inline constexpr std::size_t roundup_interval_count = 16;
using roundup_intervals = std::array<std::size_t, roundup_interval_count>;

/// PyTorch's 16 intervals as config::roundup_power2_divisions' 64 power-of-two entries, and
/// back (the entries that stand for one interval hold the same value).
[[nodiscard]] std::vector<std::size_t> expand_intervals(const roundup_intervals& table);
[[nodiscard]] roundup_intervals collapse_intervals(const std::vector<std::size_t>& divisions);

/// "" when every option `c` sets exists in `release`; else which one does not ("expandable_segments
/// came in PyTorch 2.1"), for a config made otherwise than by parsing (a snapshot's settings).
[[nodiscard]] std::string unsupported_by(const config& c, pytorch_release release);

/// The same options, the release and per_process_memory_fraction aside (a fraction is the
/// program's whether it is set by this option or by set_per_process_memory_fraction: compare
/// the one in effect).
[[nodiscard]] bool same_options(const config& a, const config& b);

/// The key:value items of a PYTORCH_CUDA_ALLOC_CONF text as parse_config splits them (commas
/// inside [...] kept), key and value trimmed; an item without ':' is left out. Throws input_error
/// naming `file` and `json_path` for an unbalanced bracket.
[[nodiscard]] std::vector<std::pair<std::string_view, std::string_view>> config_items(
    std::string_view text, const std::string& file, const std::string& json_path);

/// Parses "key:value,key:value" by `release`'s rules. Keys: max_split_size_mb (integer > 20,
/// or >= 20 from 2.10, in MiB), roundup_power2_divisions (a power of two, or the bracketed list
/// form), garbage_collection_threshold (0 < t < 1), expandable_segments (True/False, from 2.1),
/// max_non_split_rounding_mb (as max_split_size_mb, from 2.6), per_process_memory_fraction
/// (0 to 1, from 2.10). `file` and `json_path` name the source in errors (a file and JSON path,
/// or "PYTORCH_CUDA_ALLOC_CONF"). Throws input_error naming the key and what was expected;
/// unknown keys get a did-you-mean, and a key of another release says which.
[[nodiscard]] config parse_config(std::string_view text, const std::string& file,
                                  const std::string& json_path,
                                  pytorch_release release = pytorch_release::newest());

}  // namespace pinbench::alloc
