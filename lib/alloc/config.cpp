// Parses PYTORCH_CUDA_ALLOC_CONF text strictly, with PyTorch's semantics for every modelled key
// (as in current PyTorch's c10/core/AllocatorConfig.cpp), and prints it back canonically.
#include "alloc/config.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/text.hpp"

namespace pinbench::alloc {

namespace {

// pinbench's table has one entry per power of two of bytes, so PyTorch's 16 roundup intervals
// are spread over it (expand_intervals) and divisions_for stays a plain lookup.
constexpr std::size_t interval_count = roundup_interval_count;
constexpr std::size_t first_interval_log2 = 20;  // 1 MiB
using interval_table = roundup_intervals;

// PyTorch's kLargeBuffer (20 MiB) in MiB: max_split_size_mb must be above it (at least it,
// from 2.10).
constexpr std::uint64_t min_split_size_mb = 20;

const std::vector<std::string>& modelled_keys() {
  static const std::vector<std::string> keys = {
      "max_split_size_mb",   "roundup_power2_divisions",  "garbage_collection_threshold",
      "expandable_segments", "max_non_split_rounding_mb", "per_process_memory_fraction"};
  return keys;
}

// The release a key first appeared in, for those that are not in every release modelled.
std::optional<pytorch_release> first_release_of(std::string_view key) {
  if (key == "expandable_segments") return pytorch_release{2, 1};
  if (key == "max_non_split_rounding_mb") return pytorch_release{2, 6};
  if (key == "per_process_memory_fraction") return pytorch_release{2, 10};
  return std::nullopt;
}

// Keys PyTorch's parsers accept whose effect pinbench does not reproduce: an error rather than
// a silent no-op, so that a result never claims to show an option it ignored.
const std::vector<std::string>& unmodelled_keys() {
  static const std::vector<std::string> keys = {"backend",
                                                "release_lock_on_cudamalloc",
                                                "release_lock_on_hipmalloc",
                                                "pinned_use_cuda_host_register",
                                                "pinned_use_hip_host_register",
                                                "pinned_num_register_threads",
                                                "pinned_use_background_threads",
                                                "pinned_reserve_segment_size_mb",
                                                "graph_capture_record_stream_reuse"};
  return keys;
}

// Quoted for a one-line message: control characters are shown escaped.
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += '?';
    else
      out += c;
  }
  return out + "\"";
}

// A plain decimal integer, no sign, no spaces, no trailing characters (PyTorch's stoi would
// accept "12abc"; a typo like that is better reported than half-read).
std::optional<std::uint64_t> parse_uint(std::string_view s) {
  std::uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  if (s.empty()) return std::nullopt;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// Splits on commas that are not inside [...]; the list form of roundup_power2_divisions
// contains commas of its own.
std::vector<std::string_view> split_top_level(std::string_view text, const std::string& file,
                                              const std::string& path) {
  std::vector<std::string_view> items;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '[') {
      ++depth;
    } else if (c == ']') {
      if (--depth < 0) throw input_error(file, path, "unbalanced \"]\" in " + quote(text));
    } else if (c == ',' && depth == 0) {
      items.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) throw input_error(file, path, "missing \"]\" in " + quote(text));
  items.push_back(text.substr(start));
  return items;
}

class parser {
 public:
  parser(const std::string& file, const std::string& path, pytorch_release release)
      : file_(file), path_(path), release_(release) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw input_error(file_, path_, message);
  }

  // max_split_size_mb and max_non_split_rounding_mb: MiB above 20 (at least 20 from 2.10).
  std::size_t split_size(std::string_view key, std::string_view value) const {
    const auto mb = parse_uint(value);
    const bool twenty = release_.accepts_twenty_mb();
    if (!mb || *mb < min_split_size_mb || (*mb == min_split_size_mb && !twenty)) {
      fail(std::string(key) + ": expected an integer number of MiB " +
           (twenty ? "of at least " : "greater than ") + std::to_string(min_split_size_mb) +
           ", got " + quote(value));
    }
    // PyTorch clamps instead of overflowing; the result means "no limit in practice".
    constexpr std::uint64_t max_mb = std::numeric_limits<std::size_t>::max() >> 20;
    return static_cast<std::size_t>(std::min(*mb, max_mb) << 20);
  }

  void per_process_memory_fraction(std::string_view value, config& out) const {
    const auto f = parse_double(value);
    if (!f || !(*f >= 0.0 && *f <= 1.0))
      fail("per_process_memory_fraction: expected a number from 0 to 1, got " + quote(value));
    out.per_process_memory_fraction = *f;
  }

  void garbage_collection_threshold(std::string_view value, config& out) const {
    const auto t = parse_double(value);
    if (!t || !(*t > 0.0 && *t < 1.0)) {
      fail(
          "garbage_collection_threshold: expected a number between 0 and 1 (both excluded), "
          "got " +
          quote(value));
    }
    out.garbage_collection_threshold = *t;
  }

  void expandable_segments(std::string_view value, config& out) const {
    // PyTorch accepts exactly these two spellings.
    if (value == "True") {
      out.expandable_segments = true;
    } else if (value == "False") {
      out.expandable_segments = false;
    } else {
      fail("expandable_segments: expected True or False, got " + quote(value));
    }
  }

  // Mirrors PyTorch's parseRoundUpPower2Divisions, applied to the intervals as parsed so far
  // (a repeated key modifies the previous table, as in PyTorch).
  void roundup_power2_divisions(std::string_view value, interval_table& table) const {
    if (value.empty() || value.front() != '[') {
      const auto n = parse_uint(value);
      if (!n || !std::has_single_bit(*n)) {
        fail(
            "roundup_power2_divisions: expected a power of two or a list like "
            "[256:1,512:2,>:8], got " +
            quote(value));
      }
      table.fill(static_cast<std::size_t>(*n));
      return;
    }
    if (value.back() != ']') {
      fail("roundup_power2_divisions: expected the list to end with \"]\", got " + quote(value));
    }
    const std::string_view inner = trim(value.substr(1, value.size() - 2));
    if (inner.empty()) return;  // PyTorch 2.6 accepts "[]" and changes nothing
    bool first_value = true;
    std::size_t last_index = 0;
    std::size_t pos = 0;
    bool first_entry = true;
    while (pos <= inner.size()) {
      const std::size_t comma = std::min(inner.find(',', pos), inner.size());
      const std::string_view entry = trim(inner.substr(pos, comma - pos));
      pos = comma + 1;
      if (entry.empty() && pos > inner.size() && !first_entry) break;  // "[256:1,]", as PyTorch
      first_entry = false;
      const std::size_t colon = entry.find(':');
      if (colon == std::string_view::npos) {
        fail("roundup_power2_divisions: expected SIZE_MB:DIVISIONS entries, got " + quote(entry) +
             " in " + quote(value));
      }
      const std::string_view boundary_text = trim(entry.substr(0, colon));
      const std::string_view divisions_text = trim(entry.substr(colon + 1));
      const auto divisions = parse_uint(divisions_text);
      const bool zero_ok = release_.list_accepts_zero();
      if (!divisions || (*divisions == 0 && !zero_ok) ||
          (*divisions != 0 && !std::has_single_bit(*divisions))) {
        fail(std::string("roundup_power2_divisions: expected the divisions to be a power of two") +
             (zero_ok ? " or 0" : " (0 came in PyTorch 2.4)") + ", got " + quote(divisions_text) +
             " in " + quote(value));
      }
      const auto d = static_cast<std::size_t>(*divisions);
      if (boundary_text == ">") {
        // Up to 2.9, from the last listed interval itself, overwriting its value (interval 0
        // when none was listed); from 2.10, from one above it.
        const std::size_t from =
            release_.fill_above_last() ? std::min(last_index + 1, interval_count) : last_index;
        std::fill(table.begin() + static_cast<std::ptrdiff_t>(from), table.end(), d);
      } else {
        const auto boundary_mb = parse_uint(boundary_text);
        if (!boundary_mb || !std::has_single_bit(*boundary_mb)) {
          fail(
              "roundup_power2_divisions: expected each interval start to be a power of two "
              "(in MiB) or \">\", got " +
              quote(boundary_text) + " in " + quote(value));
        }
        const std::size_t index = std::min<std::size_t>(
            static_cast<std::size_t>(std::bit_width(*boundary_mb) - 1), interval_count - 1);
        // The first listed entry also covers every interval below it; later entries set only
        // their own interval (unlisted intervals in between keep their value).
        if (first_value) {
          std::fill(table.begin(), table.begin() + static_cast<std::ptrdiff_t>(index), d);
          first_value = false;
        }
        table[index] = d;
        last_index = index;
      }
    }
  }

 private:
  const std::string& file_;
  const std::string& path_;
  const pytorch_release release_;
};

std::string mib_key(std::size_t j) {
  return std::to_string(std::uint64_t{1} << j);
}

// The shortest list that the parser turns back into `t` by `release`'s rules, given that
// parsing starts from zeros: the first entry covers the run of equal values at the bottom, ">"
// the run at the top, and every other non-zero interval is listed.
std::string roundup_text(const interval_table& t, pytorch_release release) {
  if (std::all_of(t.begin(), t.end(), [&](std::size_t v) { return v == t[0]; })) {
    return t[0] == 0 ? std::string{} : std::to_string(t[0]);
  }
  std::vector<std::string> entries;
  std::size_t a = 0;
  while (a + 1 < interval_count && t[a + 1] == t[0]) ++a;
  entries.push_back(mib_key(a) + ":" + std::to_string(t[0]));
  const std::size_t top = t[interval_count - 1];
  std::size_t run_start = interval_count - 1;  // first index of the top run
  while (run_start > 0 && t[run_start - 1] == top) --run_start;
  const bool above = release.fill_above_last();
  const bool use_tail = top != 0 && run_start > a && (above || run_start + 1 < interval_count);
  const std::size_t explicit_end = use_tail ? run_start : interval_count;
  for (std::size_t j = a + 1; j < explicit_end; ++j) {
    // From 2.10 ">" fills from one above the last listed interval: that one is listed, 0 or not.
    if (t[j] != 0 || (use_tail && above && j + 1 == run_start))
      entries.push_back(mib_key(j) + ":" + std::to_string(t[j]));
  }
  // Up to 2.9 ">" fills from the last listed interval itself, so the top run's first
  // interval is listed and ">" carries its value on.
  if (use_tail) {
    if (!above) entries.push_back(mib_key(run_start) + ":" + std::to_string(top));
    entries.push_back(">:" + std::to_string(top));
  }
  std::string out = "[";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out += ",";
    out += entries[i];
  }
  return out + "]";
}

std::string format_double(double v) {
  std::array<char, 64> buf{};
  const auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return ec == std::errc{} ? std::string(buf.data(), ptr) : std::to_string(v);
}

}  // namespace

std::size_t config::divisions_for(std::size_t bytes) const {
  if (roundup_power2_divisions.empty()) return 0;
  // floor(log2(bytes)); PyTorch computes 63 - clz(bytes), which wraps for 0 — a size the
  // allocator never asks about (requests are rounded to 512 bytes first). 0 uses entry 0 here.
  const std::size_t b = bytes == 0 ? 0 : static_cast<std::size_t>(std::bit_width(bytes) - 1);
  return roundup_power2_divisions[std::min(b, roundup_power2_divisions.size() - 1)];
}

std::string unsupported_by(const config& c, pytorch_release release) {
  const auto missing = [&](const char* key) -> std::string {
    const auto since = first_release_of(key);
    return since && release < *since ? std::string(key) + " came in PyTorch " + since->to_string()
                                     : std::string();
  };
  std::string why;
  if (c.expandable_segments) why = missing("expandable_segments");
  if (why.empty() && c.max_non_split_rounding_bytes) why = missing("max_non_split_rounding_mb");
  if (why.empty() && c.per_process_memory_fraction) why = missing("per_process_memory_fraction");
  return why;
}

bool same_options(const config& a, const config& b) {
  return a.max_split_size_bytes == b.max_split_size_bytes &&
         a.roundup_power2_divisions == b.roundup_power2_divisions &&
         a.garbage_collection_threshold == b.garbage_collection_threshold &&
         a.expandable_segments == b.expandable_segments &&
         a.max_non_split_rounding_bytes == b.max_non_split_rounding_bytes;
}

std::string config::to_string() const {
  std::vector<std::string> items;
  if (max_split_size_bytes) {
    items.push_back("max_split_size_mb:" + std::to_string(*max_split_size_bytes >> 20));
  }
  // Only tables that parse_config can produce are representable; a hand-built table is printed
  // from its 1 MiB .. 32 GiB entries.
  const std::string roundup = roundup_text(collapse_intervals(roundup_power2_divisions), release);
  if (!roundup.empty()) items.push_back("roundup_power2_divisions:" + roundup);
  if (garbage_collection_threshold != 0) {
    items.push_back("garbage_collection_threshold:" + format_double(garbage_collection_threshold));
  }
  if (expandable_segments) items.push_back("expandable_segments:True");
  if (max_non_split_rounding_bytes)
    items.push_back("max_non_split_rounding_mb:" +
                    std::to_string(*max_non_split_rounding_bytes >> 20));
  if (per_process_memory_fraction)
    items.push_back("per_process_memory_fraction:" + format_double(*per_process_memory_fraction));
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ",";
    out += items[i];
  }
  return out;
}

std::vector<std::size_t> expand_intervals(const roundup_intervals& table) {
  std::vector<std::size_t> out(64, 0);
  for (std::size_t b = 0; b < out.size(); ++b) {
    const std::size_t j = b < first_interval_log2 ? 0 : b - first_interval_log2;
    out[b] = table[std::min(j, interval_count - 1)];
  }
  return out;
}

roundup_intervals collapse_intervals(const std::vector<std::size_t>& divisions) {
  roundup_intervals t{};
  for (std::size_t j = 0; j < interval_count; ++j) {
    const std::size_t b = first_interval_log2 + j;
    t[j] = b < divisions.size() ? divisions[b] : 0;
  }
  return t;
}

std::vector<std::pair<std::string_view, std::string_view>> config_items(
    std::string_view text, const std::string& file, const std::string& json_path) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  for (const std::string_view item : split_top_level(text, file, json_path)) {
    if (const std::size_t colon = item.find(':'); colon != std::string_view::npos)
      out.emplace_back(trim(item.substr(0, colon)), trim(item.substr(colon + 1)));
  }
  return out;
}

config parse_config(std::string_view text, const std::string& file, const std::string& json_path,
                    pytorch_release release) {
  config out;
  out.release = release;
  interval_table intervals{};
  const parser p(file, json_path, release);
  const std::string_view whole = trim(text);
  if (whole.empty()) return out;

  const auto items = split_top_level(whole, file, json_path);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string_view item = trim(items[i]);
    if (item.empty()) {
      // A trailing comma is accepted (PyTorch does too); an empty item elsewhere is a typo.
      if (i + 1 == items.size()) break;
      p.fail("empty option between commas in " + quote(whole));
    }
    const std::size_t colon = item.find(':');
    const std::string_view key = trim(item.substr(0, colon));
    if (colon == std::string_view::npos) {
      p.fail("expected key:value, got " + quote(item));
    }
    const std::string_view value = trim(item.substr(colon + 1));
    if (const auto since = first_release_of(key); since && release < *since) {
      p.fail(quote(key) + " is not an option of PyTorch " + release.to_string() + " (it came in " +
             since->to_string() + ")");
    }
    if (key == "max_split_size_mb") {
      out.max_split_size_bytes = p.split_size(key, value);
    } else if (key == "max_non_split_rounding_mb") {
      out.max_non_split_rounding_bytes = p.split_size(key, value);
    } else if (key == "per_process_memory_fraction") {
      p.per_process_memory_fraction(value, out);
    } else if (key == "roundup_power2_divisions") {
      p.roundup_power2_divisions(value, intervals);
    } else if (key == "garbage_collection_threshold") {
      p.garbage_collection_threshold(value, out);
    } else if (key == "expandable_segments") {
      p.expandable_segments(value, out);
    } else if (std::find(unmodelled_keys().begin(), unmodelled_keys().end(), key) !=
               unmodelled_keys().end()) {
      p.fail(quote(key) + " is a PyTorch option that pinbench does not model");
    } else {
      std::vector<std::string> candidates = modelled_keys();
      candidates.insert(candidates.end(), unmodelled_keys().begin(), unmodelled_keys().end());
      const std::string hint = did_you_mean(key, candidates);
      p.fail("unknown allocator option " + quote(key) +
             (hint.empty() ? "; the options are " + quoted_list(modelled_keys()) : hint));
    }
  }
  out.roundup_power2_divisions = expand_intervals(intervals);
  return out;
}

}  // namespace pinbench::alloc
