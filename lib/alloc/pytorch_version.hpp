// The PyTorch releases whose caching-allocator rules pinbench reproduces, and the rules that
// differ between them (read from each release's c10/cuda/CUDACachingAllocator.cpp and its
// allocator-config parser). A config is parsed, and an allocator decides, by one release's rules;
// results and docs/allocator.md name it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pinbench::alloc {

/// A PyTorch release, major.minor. Releases after the newest known one follow its rules.
struct pytorch_release {
  int major = 2, minor = 10;

  [[nodiscard]] constexpr bool at_least(int ma, int mi) const noexcept {
    return major > ma || (major == ma && minor >= mi);
  }
  [[nodiscard]] constexpr bool operator==(const pytorch_release&) const = default;
  [[nodiscard]] constexpr bool operator<(const pytorch_release& o) const noexcept {
    return major != o.major ? major < o.major : minor < o.minor;
  }
  /// "2.6"
  [[nodiscard]] std::string to_string() const;

  /// The oldest release modelled (2.0) and the newest whose rules were read (2.10: later
  /// releases are replayed by its rules).
  [[nodiscard]] static constexpr pytorch_release oldest() noexcept { return {2, 0}; }
  [[nodiscard]] static constexpr pytorch_release newest() noexcept { return {2, 10}; }

  // ---- the rules that differ (each with the first release that has it) ----
  /// roundup_power2_divisions of 1 rounds to 512 B (2.4); before, the size was left unrounded.
  [[nodiscard]] constexpr bool division_one_rounds() const noexcept { return at_least(2, 4); }
  /// 0 divisions in the list form means "off" (2.4); before, it was refused.
  [[nodiscard]] constexpr bool list_accepts_zero() const noexcept { return at_least(2, 4); }
  /// ">" in the list fills from one above the last listed interval (2.10); before, from that
  /// interval itself, overwriting it.
  [[nodiscard]] constexpr bool fill_above_last() const noexcept { return at_least(2, 10); }
  /// max_split_size_mb and max_non_split_rounding_mb may be 20 (2.10); before, above 20.
  [[nodiscard]] constexpr bool accepts_twenty_mb() const noexcept { return at_least(2, 10); }
  /// expandable_segments exists (2.1).
  [[nodiscard]] constexpr bool has_expandable_segments() const noexcept { return at_least(2, 1); }
  /// max_non_split_rounding_mb exists (2.6); before, the window was kLargeBuffer (20 MiB).
  [[nodiscard]] constexpr bool has_max_non_split_rounding() const noexcept {
    return at_least(2, 6);
  }
  /// A memory fraction of 1.0 sets no limit and arms no garbage collection (2.10); before,
  /// any set_per_process_memory_fraction call did both.
  [[nodiscard]] constexpr bool fraction_one_is_unlimited() const noexcept {
    return at_least(2, 10);
  }
};

/// "2.6", "2.10", "2.6.0", "2.14": a release. Throws input_error(file, json_path, ...) for
/// anything else or a release before 2.0.
[[nodiscard]] pytorch_release parse_pytorch_release(std::string_view text, const std::string& file,
                                                    const std::string& json_path);

/// The releases that decide alike, one representative each, oldest first: replaying under
/// each tells which releases reproduce a snapshot.
[[nodiscard]] const std::vector<pytorch_release>& distinct_rule_sets();

/// The releases that `representative` (one of distinct_rule_sets) stands for: "2.6-2.9".
[[nodiscard]] std::string releases_of(pytorch_release representative);

/// What differs between PyTorch releases, as pinbench does it (one line each), for results.
[[nodiscard]] std::vector<std::string> pytorch_release_choices(pytorch_release r);

}  // namespace pinbench::alloc
