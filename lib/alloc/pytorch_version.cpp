// PyTorch releases and their allocator rules (alloc/pytorch_version.hpp).
#include "alloc/pytorch_version.hpp"

#include <charconv>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::alloc {

std::string pytorch_release::to_string() const {
  return fmt::format("{}.{}", major, minor);
}

pytorch_release parse_pytorch_release(std::string_view text, const std::string& file,
                                      const std::string& json_path) {
  // MAJOR.MINOR, then anything torch.__version__ may add: ".PATCH", "+cu124", "a0", "rc1".
  // A number is plain decimal, without a leading zero ("2.06" is refused, not read as 2.6).
  const auto number = [](std::string_view s, std::size_t& at) -> std::optional<int> {
    const std::size_t from = at;
    while (at < s.size() && at - from < 4 && s[at] >= '0' && s[at] <= '9') ++at;
    if (at == from || (s[from] == '0' && at - from > 1)) return std::nullopt;
    int v = 0;
    std::from_chars(s.data() + from, s.data() + at, v);
    return v;
  };
  std::size_t at = 0;
  const auto major = number(text, at);
  std::optional<int> minor;
  if (major && at < text.size() && text[at] == '.') {
    ++at;
    minor = number(text, at);
  }
  const bool tail_ok = at == text.size() || text[at] == '.' || text[at] == '+' ||
                       (text[at] >= 'a' && text[at] <= 'z');
  const pytorch_release r{major.value_or(0), minor.value_or(0)};
  if (!major || !minor || !tail_ok || !r.at_least(2, 0) || r.major > 2) {
    throw input_error(file, json_path,
                      fmt::format("expected a PyTorch release of {} or later, such as 2.6 or "
                                  "torch.__version__'s 2.6.0+cu124 (those after {} follow its "
                                  "rules), got \"{}\"",
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
  std::vector<std::string> out;
  out.emplace_back(
      "a request of 1 EiB or more is refused before rounding with \"CUDA out of memory. Tried "
      "to allocate more than 1EB memory.\"; no counter moves");
  out.emplace_back(
      r.fraction_one_is_unlimited()
          ? "memory_fraction below 1.0 (set_per_process_memory_fraction, or "
            "per_process_memory_fraction in the config) limits new segments to fraction x "
            "capacity, arms garbage_collection_threshold and adds \"X allowed; \" to the OOM "
            "message; 1.0 sets no limit"
          : "memory_fraction given (0 and 1.0 included) is set_per_process_memory_fraction "
            "called: new segments stay within fraction x capacity, garbage_collection_threshold "
            "is armed, and the OOM message says \"X allowed; \"; left out, the function was "
            "never called");
  out.emplace_back(r.fill_above_last()
                       ? "roundup_power2_divisions: \">\" fills from one above the last listed "
                         "interval; \"[]\" is accepted and changes nothing"
                       : "roundup_power2_divisions: \">\" fills from the last listed interval "
                         "itself, overwriting its value; \"[]\" is accepted and changes nothing");
  out.emplace_back(r.division_one_rounds()
                       ? "roundup_power2_divisions of 1 (and 0 in the list form) round to 512 B"
                       : "roundup_power2_divisions of 1 leaves a size above 512 B unrounded; 0 in "
                         "the list form is refused");
  out.emplace_back(
      r.has_max_non_split_rounding()
          ? fmt::format("max_non_split_rounding_mb (default 20): an oversize request takes a "
                        "cached block less than that much larger; it and max_split_size_mb must "
                        "be {} 20",
                        r.accepts_twenty_mb() ? "at least" : "above")
          : std::string("an oversize request takes a cached block less than 20 MiB larger "
                        "(max_non_split_rounding_mb came in 2.6); max_split_size_mb must be "
                        "above 20"));
  out.emplace_back(r.has_expandable_segments()
                       ? "expandable_segments: True maps 2 / 20 MiB pages as needed"
                       : "expandable_segments is not an option (it came in 2.1)");
  out.emplace_back(
      "the OOM message is 2.6's word for word for every release, the expandable_segments hint "
      "and the pytorch.org/docs/stable link included, \"GPU 0\" replaced by the device used; "
      "without the per-process clause, which PyTorch adds only when it can read NVML");
  return out;
}

}  // namespace pinbench::alloc
