// RMM replay CSV logs (rmm::mr::logging_resource_adaptor's format), read line by line.
#include <algorithm>
#include <charconv>
#include <optional>
#include <unordered_map>

#include "alloc/trace_input.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace pinbench::alloc::detail {

namespace {

constexpr std::string_view csv_header = "Thread,Time,Action,Pointer,Size,Stream";

// rmm::mr::logging_resource_adaptor's log: "Thread,Time,Action,Pointer,Size,Stream", one row
// per call; actions "allocate", "free" and "allocate failure" (RMM's replay benchmark reads the
// same three).
class csv_trace_source final : public event_source {
 public:
  explicit csv_trace_source(const std::string& path) : file_(path), in_(open_input(path)) {
    read_header();
  }

  bool next(event& out) override {
    std::string line;
    while (read_line(line)) {
      ++line_number_;
      const std::string_view text = trim(line);
      if (text.empty()) continue;
      if (parse_row(text, out)) return true;
    }
    return false;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw input_error(file_, "line " + std::to_string(line_number_), message);
  }

  static std::vector<std::string_view> split(std::string_view text) {
    std::vector<std::string_view> fields;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = text.find(',', start);
      fields.push_back(trim(text.substr(start, comma - start)));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return fields;
  }

  // One line without its '\n', like std::getline, but a line longer than any RMM log row is an
  // error before it is read whole: a file without newlines must not be held in memory.
  bool read_line(std::string& line) {
    static constexpr std::size_t max_line_chars = 4096;
    line.clear();
    std::streambuf& buf = *in_.rdbuf();
    for (auto c = buf.sbumpc(); c != std::char_traits<char>::eof(); c = buf.sbumpc()) {
      if (c == '\n') return true;
      if (line.size() == max_line_chars) {
        ++line_number_;
        fail("longer than " + std::to_string(max_line_chars) +
             " characters: expected a row of the RMM log");
      }
      line.push_back(std::char_traits<char>::to_char_type(c));
    }
    return !line.empty();
  }

  void read_header() {
    std::string line;
    while (read_line(line)) {
      ++line_number_;
      std::string_view text = trim(line);
      if (text.starts_with("\xEF\xBB\xBF")) text = trim(text.substr(3));
      if (text.empty()) continue;
      const auto fields = split(text);
      const auto expected = split(csv_header);
      if (fields != expected) {
        fail(
            "expected a pinbench.trace/1 JSON trace (starting with \"{\") or the RMM log header "
            "\"" +
            std::string(csv_header) + "\", got " + quote_snippet(text));
      }
      return;
    }
    fail("expected the RMM log header \"" + std::string(csv_header) + "\", got an empty file");
  }

  // Hexadecimal with or without "0x"; "(nil)" is how glibc prints a null pointer.
  static std::optional<std::uint64_t> parse_hex(std::string_view s) {
    if (s == "(nil)") return 0;
    if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
    if (s.empty() || s.size() > 16) return std::nullopt;
    std::uint64_t v = 0;
    for (const char c : s) {
      int d = 0;
      if (c >= '0' && c <= '9')
        d = c - '0';
      else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
      else
        return std::nullopt;
      v = (v << 4) | static_cast<std::uint64_t>(d);
    }
    return v;
  }

  static std::optional<std::uint64_t> parse_decimal(std::string_view s) {
    if (s.empty() || s.size() > 20) return std::nullopt;
    std::uint64_t v = 0;
    for (const char c : s) {
      if (c < '0' || c > '9') return std::nullopt;
      const auto d = static_cast<std::uint64_t>(c - '0');
      if (v > (UINT64_MAX - d) / 10) return std::nullopt;
      v = v * 10 + d;
    }
    return v;
  }

  // Streams are written as pointers ("0x7f..."), by older RMM versions also as numbers.
  static std::optional<std::uint64_t> parse_stream(std::string_view s) {
    if (s.starts_with("0x") || s.starts_with("0X") || s == "(nil)") return parse_hex(s);
    return parse_decimal(s);
  }

  std::uint32_t stream_index(std::uint64_t handle) {
    const auto [it, inserted] =
        streams_.try_emplace(handle, static_cast<std::uint32_t>(streams_.size()));
    return it->second;
  }

  // Fills `out` and returns true for a row that makes an event; false for a skipped row.
  bool parse_row(std::string_view text, event& out) {
    const auto fields = split(text);
    if (fields.size() != 6) {
      fail("expected 6 comma-separated fields (" + std::string(csv_header) + "), got " +
           std::to_string(fields.size()));
    }
    const std::string_view action = fields[2];
    const bool is_alloc = action == "allocate";
    // "deallocate" appears in RMM's documentation; the adaptor itself writes "free".
    const bool is_free = action == "free" || action == "deallocate";
    if (!is_alloc && !is_free) {
      if (action == "allocate failure") return false;  // nothing was allocated
      fail("expected Action to be allocate, free or \"allocate failure\", got " +
           quote_snippet(action));
    }
    const auto pointer = parse_hex(fields[3]);
    if (!pointer) {
      fail("expected a hexadecimal Pointer such as 0x7f3a00000000, got " +
           quote_snippet(fields[3]));
    }
    const auto size = parse_decimal(fields[4]);
    if (!size)
      fail("expected a decimal byte count in column Size, got " + quote_snippet(fields[4]));
    const auto stream = parse_stream(fields[5]);
    if (!stream) {
      fail("expected a Stream handle (hexadecimal 0x... or decimal), got " +
           quote_snippet(fields[5]));
    }

    if (is_alloc) {
      // A zero-byte request gets a null pointer and costs nothing; it is not replayed.
      if (*size == 0) return false;
      const std::uint64_t id = next_id_++;
      if (!live_.try_emplace(*pointer, id).second) {
        fail("pointer " + std::string(fields[3]) + " is allocated again before it was freed");
      }
      out = event{};
      out.op = event::kind::alloc;
      out.id = id;
      out.size = *size;
      out.stream = stream_index(*stream);
      return true;
    }
    if (*pointer == 0) return false;  // free(nullptr) does nothing
    out = event{};
    out.op = event::kind::free;
    if (const auto it = live_.find(*pointer); it != live_.end()) {
      out.id = it->second;
      live_.erase(it);
    } else {
      // Freed but never allocated in this log (it started late): an id nothing owns, which
      // the allocator run counts as a skipped free, as for JSON traces.
      out.id = next_id_++;
    }
    return true;
  }

  std::string file_;
  std::ifstream in_;
  std::uint64_t line_number_ = 0;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, std::uint64_t> live_;  // pointer -> id
  std::unordered_map<std::uint64_t, std::uint32_t> streams_;
};

}  // namespace

std::unique_ptr<event_source> open_csv_trace(const std::string& path) {
  return std::make_unique<csv_trace_source>(path);
}

}  // namespace pinbench::alloc::detail
