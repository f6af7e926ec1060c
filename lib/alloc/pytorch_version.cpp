// PyTorch releases and their allocator rules (alloc/pytorch_version.hpp).
#include "alloc/pytorch_version.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::alloc {

std::string pytorch_release::to_string() const {
  return fmt::format("{}.{}", major, minor);
}

pytorch_release parse_pytorch_release(std::string_view text, const std::string& file,
                                      const std::string& json_path) {
  auto number = [&](std::string_view s) -> std::optional<int> {
    int v = 0;
    if (s.empty() || s.size() > 4) return std::nullopt;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return v;
  };
  // major.minor, or major.minor.patch (the patch level changes no rule).
  std::vector<std::optional<int>> parts;
  for (std::size_t from = 0;;) {
    const std::size_t dot = text.find('.', from);
    parts.push_back(number(text.substr(from, dot == std::string_view::npos ? dot : dot - from)));
    if (dot == std::string_view::npos) break;
    from = dot + 1;
  }
  const bool shaped = (parts.size() == 2 || parts.size() == 3) &&
                      std::all_of(parts.begin(), parts.end(), [](const auto& p) { return p; });
  const std::optional<int> major = shaped ? parts[0] : std::nullopt;
  const std::optional<int> minor = shaped ? parts[1] : std::nullopt;
  const pytorch_release r{major.value_or(0), minor.value_or(0)};
  if (!major || !minor || !r.at_least(2, 0) || r.major > 2) {
    throw input_error(file, json_path,
                      fmt::format("expected a PyTorch release of {} or later, such as 2.6 (those "
                                  "after {} follow its rules), got \"{}\"",
                                  pytorch_release::oldest().to_string(),
                                  pytorch_release::newest().to_string(), text));
  }
  return r;
}

const std::vector<pytorch_release>& distinct_rule_sets() {
  static const std::vector<pytorch_release> sets = {{2, 0}, {2, 1}, {2, 4}, {2, 6}, {2, 10}};
  return sets;
}

std::string releases_of(pytorch_release r) {
  if (r == pytorch_release{2, 0}) return "2.0";
  if (r == pytorch_release{2, 1}) return "2.1-2.3";
  if (r == pytorch_release{2, 4}) return "2.4-2.5";
  if (r == pytorch_release{2, 6}) return "2.6-2.9";
  return "2.10 and later";
}

std::vector<std::string> pytorch_release_choices(pytorch_release r) {
  std::vector<std::string> out = {
      "a request of 1 EiB or more is refused before rounding with \"CUDA out of memory. Tried "
      "to allocate more than 1EB memory.\"; no counter moves",
      r.fraction_one_is_unlimited()
          ? "memory_fraction below 1.0 (set_per_process_memory_fraction, or "
            "per_process_memory_fraction in the config) limits new segments to fraction x "
            "capacity, arms garbage_collection_threshold and adds \"X allowed; \" to the OOM "
            "message; 1.0 sets no limit"
          : "memory_fraction given (0 and 1.0 included) is set_per_process_memory_fraction "
            "called: new segments stay within fraction x capacity, garbage_collection_threshold "
            "is armed, and the OOM message says \"X allowed; \"; left out, the function was "
            "never called",
      r.fill_above_last()
          ? "roundup_power2_divisions: \">\" fills from one above the last listed interval; "
            "\"[]\" is accepted and changes nothing"
          : "roundup_power2_divisions: \">\" fills from the last listed interval itself, "
            "overwriting its value; \"[]\" is accepted and changes nothing",
      r.division_one_rounds()
          ? "roundup_power2_divisions of 1 (and 0 in the list form) round to 512 B"
          : "roundup_power2_divisions of 1 leaves a size above 512 B unrounded; 0 in the list "
            "form is refused",
      r.has_max_non_split_rounding()
          ? fmt::format("max_non_split_rounding_mb (default 20): an oversize request takes a "
                        "cached block less than that much larger; it and max_split_size_mb must "
                        "be {} 20",
                        r.accepts_twenty_mb() ? "at least" : "above")
          : "an oversize request takes a cached block less than 20 MiB larger "
            "(max_non_split_rounding_mb came in 2.6); max_split_size_mb must be above 20",
      r.has_expandable_segments() ? "expandable_segments: True maps 2 / 20 MiB pages as needed"
                                  : "expandable_segments is not an option (it came in 2.1)",
      "the OOM message is 2.6's word for word for every release, the expandable_segments hint "
      "and the pytorch.org/docs/stable link included, \"GPU 0\" replaced by the device used; "
      "without the per-process clause, which PyTorch adds only when it can read NVML",
  };
  return out;
}

}  // namespace pinbench::alloc
