// pinbench.trace/1 JSON traces: streamed through nlohmann's SAX parser on a producer thread,
// handed to the consumer in bounded chunks.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "alloc/trace_input.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace pinbench::alloc::detail {

namespace {

using nlohmann::json;

constexpr std::string_view trace_schema = "pinbench.trace/1";

// A key as part of a one-line message path: control characters become '?'.
std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  return out;
}

// Thrown inside the producer when the consumer went away; never leaves this file.
struct stop_parsing {};

// Hands events from the parser thread to next() in chunks, with at most max_chunks waiting:
// the producer blocks when the consumer falls behind, so memory is bounded.
class event_queue {
 public:
  static constexpr std::size_t chunk_events = 4096;
  static constexpr std::size_t max_chunks = 4;

  // Producer side.
  void push(std::vector<event>&& chunk) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return stop_ || chunks_.size() < max_chunks; });
    if (stop_) throw stop_parsing{};
    chunks_.push_back(std::move(chunk));
    cv_.notify_all();
  }
  void mark_ready() {
    const std::lock_guard lock(mutex_);
    ready_ = true;
    cv_.notify_all();
  }
  void finish(std::exception_ptr error) {
    const std::lock_guard lock(mutex_);
    done_ = ready_ = true;
    error_ = std::move(error);
    cv_.notify_all();
  }
  void check_stop() {
    const std::lock_guard lock(mutex_);
    if (stop_) throw stop_parsing{};
  }

  // Consumer side. False at the end; rethrows the parser's error where it happened.
  bool pop(std::vector<event>& chunk) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !chunks_.empty() || done_; });
    if (!chunks_.empty()) {
      chunk = std::move(chunks_.front());
      chunks_.pop_front();
      cv_.notify_all();
      return true;
    }
    if (error_) std::rethrow_exception(error_);
    return false;
  }
  /// Waits until the parser has reached the events (or the end); rethrows an error found
  /// before any event, so that open_trace itself reports a wrong schema or broken syntax.
  void wait_ready() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return ready_; });
    if (done_ && chunks_.empty() && error_) std::rethrow_exception(error_);
  }
  void stop() {
    const std::lock_guard lock(mutex_);
    stop_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::vector<event>> chunks_;
  bool ready_ = false, done_ = false, stop_ = false;
  std::exception_ptr error_;
};

// The file as the SAX parser reads it, in large blocks, with a bound on what it may read
// between two parser events: the parser holds a whole string or number token in memory, so a
// trace holding one huge token is refused instead of being read into memory whole.
class guarded_input final : public std::streambuf {
 public:
  static constexpr std::size_t block_bytes = std::size_t{1} << 20;
  static constexpr std::uint64_t max_gap_bytes = std::uint64_t{64} << 20;

  guarded_input(std::istream& in, std::string file) : in_(in), file_(std::move(file)) {
    block_.resize(block_bytes);
  }

  /// Called at every parser event: what was read up to here made a complete token.
  void mark() noexcept { mark_ = consumed(); }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    total_ += static_cast<std::uint64_t>(egptr() - eback());
    setg(nullptr, nullptr, nullptr);
    if (total_ - mark_ > max_gap_bytes) {
      throw input_error(file_, "",
                        "more than 64 MiB without a complete JSON value (at byte " +
                            std::to_string(total_) + "): not a pinbench.trace/1 trace");
    }
    in_.read(block_.data(), static_cast<std::streamsize>(block_.size()));
    const auto n = in_.gcount();
    if (n <= 0) return traits_type::eof();
    setg(block_.data(), block_.data(), block_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::uint64_t consumed() const noexcept {
    return total_ + static_cast<std::uint64_t>(gptr() - eback());
  }

  std::istream& in_;
  std::string file_;
  std::vector<char> block_;
  std::uint64_t total_ = 0;  // bytes of the blocks before the current one
  std::uint64_t mark_ = 0;
};

// The SAX handler: a small state machine over {"schema": ..., "events": [{...}, ...]} that
// validates each event as it closes and pushes it to the queue.
class trace_handler final : public nlohmann::json_sax<json> {
 public:
  trace_handler(std::string file, event_queue& queue, guarded_input& input)
      : file_(std::move(file)), queue_(queue), input_(input) {
    chunk_.reserve(event_queue::chunk_events);
  }

  /// Sends what is buffered; called once parsing has ended (normally or not).
  void flush() {
    if (!chunk_.empty()) {
      queue_.push(std::move(chunk_));
      chunk_ = {};
    }
  }

  // The value is kept raw and only described (shown()) when it is reported in an error.
  bool null() override { return scalar(value_kind::null); }
  bool boolean(bool v) override {
    other_text_ = v ? "true" : "false";
    return scalar(value_kind::other);
  }
  bool number_integer(number_integer_t v) override {
    // nlohmann reports only negative integers here; non-negative ones come as unsigned.
    other_text_ = std::to_string(v);
    return scalar(value_kind::other);
  }
  bool number_unsigned(number_unsigned_t v) override {
    unsigned_ = v;
    return scalar(value_kind::unsigned_int);
  }
  bool number_float(number_float_t, const string_t& text) override {
    other_text_ = text;
    return scalar(value_kind::other);
  }
  bool string(string_t& v) override {
    string_.swap(v);
    return scalar(value_kind::string);
  }
  bool binary(binary_t&) override {
    other_text_ = "binary data";
    return scalar(value_kind::other);
  }

  bool start_object(std::size_t) override {
    input_.mark();
    switch (state_) {
      case state::start:
        state_ = state::top;
        return true;
      case state::events:
        begin_event();
        state_ = state::event;
        return true;
      default:
        return scalar(value_kind::object);
    }
  }

  bool key(string_t& k) override {
    input_.mark();
    if (state_ == state::top) {
      if (k != "schema" && k != "events") {
        fail(printable(k), "unknown key" + did_you_mean(k, {"schema", "events"}));
      }
      if ((k == "schema" && seen_schema_) || (k == "events" && seen_events_)) {
        fail(k, "duplicate key");
      }
      top_key_ = k;
      return true;
    }
    // state::event
    static const std::vector<std::string> event_keys = {"op", "id", "size", "stream", "label"};
    const auto it = std::find(event_keys.begin(), event_keys.end(), k);
    if (it == event_keys.end()) {
      fail(event_path() + "." + printable(k), "unknown key" + did_you_mean(k, event_keys));
    }
    field_ = static_cast<field>(it - event_keys.begin());
    const unsigned bit = 1u << static_cast<unsigned>(field_);
    if ((present_ & bit) != 0) fail(event_path(), "duplicate key \"" + k + "\"");
    present_ |= bit;
    return true;
  }

  bool end_object() override {
    input_.mark();
    if (state_ == state::event) {
      end_event();
      state_ = state::events;
      return true;
    }
    // state::top: the whole document is closed.
    if (!seen_schema_) {
      fail("", "missing \"schema\": expected \"schema\": \"" + std::string(trace_schema) + "\"");
    }
    if (!seen_events_) fail("", "missing \"events\": expected an array of events");
    state_ = state::finished;
    return true;
  }

  bool start_array(std::size_t) override {
    input_.mark();
    if (state_ == state::top && top_key_ == "events") {
      state_ = state::events;
      seen_events_ = true;
      queue_.mark_ready();
      return true;
    }
    return scalar(value_kind::array);
  }

  bool end_array() override {
    input_.mark();
    // Only the events array can close: any other array fails at its start.
    state_ = state::top;
    return true;
  }

  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ..." ->
    // "line 3, column 5: syntax error ...".
    std::string message = ex.what();
    if (const auto p = message.find("] "); p != std::string::npos) message.erase(0, p + 2);
    if (message.starts_with("parse error at "))
      message.erase(0, 15);
    else if (message.starts_with("parse error: "))
      message.erase(0, 13);
    // It quotes the last token read, which can be megabytes long.
    if (message.size() > 160) message = message.substr(0, 157) + "...";
    throw input_error(file_, "", message);
  }

 private:
  enum class state { start, top, events, event, finished };
  enum class value_kind { null, unsigned_int, string, object, array, other };
  enum class field : unsigned { op, id, size, stream, label };

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw input_error(file_, path, message);
  }

  std::string event_path() const { return "events[" + std::to_string(index_) + "]"; }
  std::string field_path() const {
    static const char* const names[] = {"op", "id", "size", "stream", "label"};
    return event_path() + "." + names[static_cast<unsigned>(field_)];
  }

  // The last value as an error message shows it.
  std::string shown() const {
    switch (kind_) {
      case value_kind::null:
        return "null";
      case value_kind::unsigned_int:
        return std::to_string(unsigned_);
      case value_kind::string:
        return json(string_).dump();
      case value_kind::object:
        return "an object";
      case value_kind::array:
        return "an array";
      case value_kind::other:
        break;
    }
    return other_text_;
  }

  bool scalar(value_kind kind) {
    input_.mark();
    kind_ = kind;
    switch (state_) {
      case state::start:
        fail("", "expected a JSON object with \"schema\" and \"events\", got " + shown());
      case state::top:
        if (top_key_ == "schema") {
          if (kind != value_kind::string || string_ != trace_schema) {
            fail("schema", "expected \"" + std::string(trace_schema) + "\", got " + shown());
          }
          seen_schema_ = true;
          return true;
        }
        fail("events", "expected an array of events, got " + shown());
      case state::events:
        fail(event_path(), "expected an event object, got " + shown());
      case state::event:
        event_field(kind);
        return true;
      case state::finished:
        break;
    }
    return true;
  }

  void begin_event() {
    if (++events_since_check_ == 1024) {
      events_since_check_ = 0;
      queue_.check_stop();  // the consumer may be gone; do not parse a long file for nothing
    }
    current_ = event{};
    present_ = 0;
  }

  void event_field(value_kind kind) {
    switch (field_) {
      case field::op: {
        static const std::vector<std::string> ops = {"alloc", "free", "empty_cache", "mark"};
        const auto it =
            kind == value_kind::string ? std::find(ops.begin(), ops.end(), string_) : ops.end();
        if (it == ops.end()) {
          fail(field_path(), "expected " + quoted_list(ops) + ", got " + shown() +
                                 (kind == value_kind::string ? did_you_mean(string_, ops) : ""));
        }
        current_.op = static_cast<event::kind>(it - ops.begin());
        return;
      }
      case field::id:
        if (kind != value_kind::unsigned_int) {
          fail(field_path(), "expected a non-negative integer, got " + shown());
        }
        current_.id = unsigned_;
        return;
      case field::size:
        if (kind != value_kind::unsigned_int || unsigned_ == 0) {
          fail(field_path(), "expected a positive integer, got " + shown());
        }
        current_.size = unsigned_;
        return;
      case field::stream:
        if (kind != value_kind::unsigned_int || unsigned_ > UINT32_MAX) {
          fail(field_path(),
               "expected a stream index (an integer from 0 to 4294967295), got " + shown());
        }
        current_.stream = static_cast<std::uint32_t>(unsigned_);
        return;
      case field::label:
        if (kind != value_kind::string) fail(field_path(), "expected a string, got " + shown());
        current_.label = std::move(string_);
        return;
    }
  }

  bool has(field f) const { return (present_ & (1u << static_cast<unsigned>(f))) != 0; }

  void end_event() {
    if (!has(field::op)) fail(event_path(), "missing \"op\"");
    static const char* const op_names[] = {"alloc", "free", "empty_cache", "mark"};
    const std::string op = op_names[static_cast<unsigned>(current_.op)];
    auto require = [&](field f, const char* name) {
      if (!has(f)) fail(event_path(), "missing \"" + std::string(name) + "\" (op \"" + op + "\")");
    };
    auto forbid = [&](field f, const char* name) {
      if (has(f)) {
        fail(event_path() + "." + name, "does not apply to op \"" + op + "\"");
      }
    };
    switch (current_.op) {
      case event::kind::alloc:
        require(field::id, "id");
        require(field::size, "size");
        forbid(field::label, "label");
        if (!live_.insert(current_.id).second) {
          fail(event_path() + ".id",
               "id " + std::to_string(current_.id) + " is allocated again before it was freed");
        }
        break;
      case event::kind::free:
        require(field::id, "id");
        forbid(field::size, "size");
        forbid(field::stream, "stream");
        forbid(field::label, "label");
        // A free of an id that is not live is passed on: the allocator run counts it as skipped.
        live_.erase(current_.id);
        break;
      case event::kind::empty_cache:
        forbid(field::id, "id");
        forbid(field::size, "size");
        forbid(field::stream, "stream");
        forbid(field::label, "label");
        break;
      case event::kind::mark:
        require(field::label, "label");
        forbid(field::id, "id");
        forbid(field::size, "size");
        forbid(field::stream, "stream");
        break;
    }
    chunk_.push_back(std::move(current_));
    if (chunk_.size() == event_queue::chunk_events) flush();
    ++index_;
  }

  std::string file_;
  event_queue& queue_;
  guarded_input& input_;
  std::vector<event> chunk_;
  state state_ = state::start;
  std::string top_key_;
  bool seen_schema_ = false, seen_events_ = false;
  // The event being read.
  event current_;
  unsigned present_ = 0;
  field field_ = field::op;
  std::uint64_t index_ = 0;
  unsigned events_since_check_ = 0;
  // The last value seen.
  value_kind kind_ = value_kind::null;
  std::uint64_t unsigned_ = 0;
  std::string string_, other_text_;
  std::unordered_set<std::uint64_t> live_;
};

// The SAX parser cannot be paused between events, so it runs on its own thread and next()
// takes from a bounded queue: memory is a few chunks of events plus the set of live ids.
class json_trace_source final : public event_source {
 public:
  explicit json_trace_source(const std::string& path) {
    std::ifstream in = open_input(path);
    producer_ = std::thread([this, path, in = std::move(in)]() mutable { produce(path, in); });
    try {
      queue_.wait_ready();
    } catch (...) {
      producer_.join();
      throw;
    }
  }

  json_trace_source(const json_trace_source&) = delete;
  json_trace_source& operator=(const json_trace_source&) = delete;

  ~json_trace_source() override {
    queue_.stop();
    producer_.join();
  }

  bool next(event& out) override {
    while (position_ == chunk_.size()) {
      chunk_.clear();
      position_ = 0;
      if (!queue_.pop(chunk_)) return false;
    }
    out = std::move(chunk_[position_++]);
    return true;
  }

 private:
  // Runs on the producer thread; whatever happens ends in queue_.finish().
  void produce(const std::string& path, std::ifstream& in) noexcept {
    std::exception_ptr error;
    try {
      // The parser reads one character at a time: from guarded_input's large blocks.
      guarded_input input(in, path);
      std::istream guarded(&input);
      trace_handler handler(path, queue_, input);
      try {
        json::sax_parse(guarded, &handler, json::input_format_t::json, true);
      } catch (const stop_parsing&) {
        throw;
      } catch (...) {
        // Events before the error are delivered first; the error comes where it happened.
        error = std::current_exception();
      }
      handler.flush();
    } catch (const stop_parsing&) {
      // The consumer has gone; nobody reads what would follow.
    } catch (...) {
      error = std::current_exception();
    }
    in.close();
    queue_.finish(error);
  }

  event_queue queue_;
  std::thread producer_;
  std::vector<event> chunk_;
  std::size_t position_ = 0;
};

}  // namespace

std::unique_ptr<event_source> open_json_trace(const std::string& path) {
  return std::make_unique<json_trace_source>(path);
}

}  // namespace pinbench::alloc::detail
