// The pickle reader: a stack machine over the opcodes of plain data (pickletools' names), with
// every length checked against the input before anything is allocated, and no opcode that
// names or calls code accepted. The writer: JSON as CPython's pickler would write it, memo off.
#include "core/pickle.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench {

namespace {

// The opcodes, by pickletools' names.
enum opcode : std::uint8_t {
  MARK = '(',
  STOP = '.',
  POP = '0',
  POP_MARK = '1',
  DUP = '2',
  FLOAT = 'F',
  INT = 'I',
  BININT = 'J',
  BININT1 = 'K',
  LONG = 'L',
  BININT2 = 'M',
  NONE = 'N',
  PERSID = 'P',
  BINPERSID = 'Q',
  REDUCE = 'R',
  STRING = 'S',
  BINSTRING = 'T',
  SHORT_BINSTRING = 'U',
  UNICODE = 'V',
  BINUNICODE = 'X',
  APPEND = 'a',
  BUILD = 'b',
  GLOBAL = 'c',
  DICT = 'd',
  EMPTY_DICT = '}',
  APPENDS = 'e',
  GET = 'g',
  BINGET = 'h',
  INST = 'i',
  LONG_BINGET = 'j',
  LIST = 'l',
  EMPTY_LIST = ']',
  OBJ = 'o',
  PUT = 'p',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  SETITEM = 's',
  TUPLE = 't',
  EMPTY_TUPLE = ')',
  SETITEMS = 'u',
  BINFLOAT = 'G',
  PROTO = 0x80,
  NEWOBJ = 0x81,
  EXT1 = 0x82,
  EXT2 = 0x83,
  EXT4 = 0x84,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  LONG4 = 0x8b,
  BINBYTES = 'B',
  SHORT_BINBYTES = 'C',
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f,
  ADDITEMS = 0x90,
  FROZENSET = 0x91,
  NEWOBJ_EX = 0x92,
  STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94,
  FRAME = 0x95,
  BYTEARRAY8 = 0x96,
  NEXT_BUFFER = 0x97,
  READONLY_BUFFER = 0x98,
};

const char* opcode_name(std::uint8_t op) {
  switch (op) {
    case MARK:
      return "MARK";
    case STOP:
      return "STOP";
    case POP:
      return "POP";
    case POP_MARK:
      return "POP_MARK";
    case DUP:
      return "DUP";
    case FLOAT:
      return "FLOAT";
    case INT:
      return "INT";
    case BININT:
      return "BININT";
    case BININT1:
      return "BININT1";
    case LONG:
      return "LONG";
    case BININT2:
      return "BININT2";
    case NONE:
      return "NONE";
    case PERSID:
      return "PERSID";
    case BINPERSID:
      return "BINPERSID";
    case REDUCE:
      return "REDUCE";
    case STRING:
      return "STRING";
    case BINSTRING:
      return "BINSTRING";
    case SHORT_BINSTRING:
      return "SHORT_BINSTRING";
    case UNICODE:
      return "UNICODE";
    case BINUNICODE:
      return "BINUNICODE";
    case APPEND:
      return "APPEND";
    case BUILD:
      return "BUILD";
    case GLOBAL:
      return "GLOBAL";
    case DICT:
      return "DICT";
    case EMPTY_DICT:
      return "EMPTY_DICT";
    case APPENDS:
      return "APPENDS";
    case GET:
      return "GET";
    case BINGET:
      return "BINGET";
    case INST:
      return "INST";
    case LONG_BINGET:
      return "LONG_BINGET";
    case LIST:
      return "LIST";
    case EMPTY_LIST:
      return "EMPTY_LIST";
    case OBJ:
      return "OBJ";
    case PUT:
      return "PUT";
    case BINPUT:
      return "BINPUT";
    case LONG_BINPUT:
      return "LONG_BINPUT";
    case SETITEM:
      return "SETITEM";
    case TUPLE:
      return "TUPLE";
    case EMPTY_TUPLE:
      return "EMPTY_TUPLE";
    case SETITEMS:
      return "SETITEMS";
    case BINFLOAT:
      return "BINFLOAT";
    case PROTO:
      return "PROTO";
    case NEWOBJ:
      return "NEWOBJ";
    case EXT1:
      return "EXT1";
    case EXT2:
      return "EXT2";
    case EXT4:
      return "EXT4";
    case TUPLE1:
      return "TUPLE1";
    case TUPLE2:
      return "TUPLE2";
    case TUPLE3:
      return "TUPLE3";
    case NEWTRUE:
      return "NEWTRUE";
    case NEWFALSE:
      return "NEWFALSE";
    case LONG1:
      return "LONG1";
    case LONG4:
      return "LONG4";
    case BINBYTES:
      return "BINBYTES";
    case SHORT_BINBYTES:
      return "SHORT_BINBYTES";
    case SHORT_BINUNICODE:
      return "SHORT_BINUNICODE";
    case BINUNICODE8:
      return "BINUNICODE8";
    case BINBYTES8:
      return "BINBYTES8";
    case EMPTY_SET:
      return "EMPTY_SET";
    case ADDITEMS:
      return "ADDITEMS";
    case FROZENSET:
      return "FROZENSET";
    case NEWOBJ_EX:
      return "NEWOBJ_EX";
    case STACK_GLOBAL:
      return "STACK_GLOBAL";
    case MEMOIZE:
      return "MEMOIZE";
    case FRAME:
      return "FRAME";
    case BYTEARRAY8:
      return "BYTEARRAY8";
    case NEXT_BUFFER:
      return "NEXT_BUFFER";
    case READONLY_BUFFER:
      return "READONLY_BUFFER";
    default:
      return nullptr;
  }
}

// Newest protocol there is (Python 3.8+).
constexpr unsigned highest_protocol = 5;

// `text` with each byte that does not start a valid UTF-8 sequence (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF) replaced by U+FFFD.
std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool ok = len > 0 && i + len <= text.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto d = static_cast<unsigned char>(text[i + k]);
      ok = k == 1 ? (d >= lo && d <= hi) : (d >= 0x80 && d <= 0xBF);
    }
    if (ok) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::uint64_t little_endian(std::string_view bytes) {
  std::uint64_t v = 0;
  for (std::size_t k = bytes.size(); k-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[k]);
  return v;
}

}  // namespace

// The stack machine; fills a pickle_document.
class pickle_reader {
 public:
  using value_id = pickle_document::value_id;
  using type = pickle_document::type;

  explicit pickle_reader(pickle_document& doc) : doc_(doc), in_(doc.bytes_) {}

  void run() {
    while (true) {
      if (pos_ >= in_.size()) {
        op_at_ = pos_;
        fail("the pickle ends without STOP (truncated?)");
      }
      op_at_ = pos_;
      op_ = static_cast<std::uint8_t>(in_[pos_++]);
      if (op_ == STOP) {
        stop();
        return;
      }
      step();
    }
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw input_error(doc_.source_, fmt::format("offset {}", op_at_), message);
  }

  [[nodiscard]] std::string op_text() const {
    const char* name = opcode_name(op_);
    return name == nullptr ? fmt::format("0x{:02x}", op_) : fmt::format("{} (0x{:02x})", name, op_);
  }

  // `n` bytes of argument, after checking that the input holds them.
  std::string_view take(std::uint64_t n) {
    const std::size_t left = in_.size() - pos_;
    if (n > left) {
      fail(fmt::format("opcode {} needs {} more byte(s), but the input ends after {} (truncated?)",
                       op_text(), n, left));
    }
    const std::string_view s = in_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }

  std::uint64_t take_uint(std::size_t bytes) { return little_endian(take(bytes)); }

  // A length that must fit in what is left of the input: checked before anything is made.
  std::uint64_t take_length(std::size_t bytes) {
    const std::uint64_t n = take_uint(bytes);
    const std::size_t left = in_.size() - pos_;
    if (n > left) {
      fail(fmt::format("opcode {} claims a length of {} byte(s), but only {} are left", op_text(),
                       n, left));
    }
    return n;
  }

  value_id add(pickle_document::node n) {
    if (doc_.nodes_.size() >= std::numeric_limits<value_id>::max())
      fail("more values than this reader holds (2^32)");
    doc_.nodes_.push_back(n);
    return static_cast<value_id>(doc_.nodes_.size() - 1);
  }

  value_id add_container(type t, std::vector<value_id> items = {}) {
    const value_id v = add({t, false, doc_.containers_.size(), 0});
    doc_.containers_.push_back(std::move(items));
    return v;
  }

  void push(value_id v) { stack_.push_back(v); }
  void push(pickle_document::node n) { push(add(n)); }

  [[nodiscard]] std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }

  value_id top() {
    if (stack_.size() <= floor())
      fail(fmt::format("stack underflow: opcode {} needs a value on the stack", op_text()));
    return stack_.back();
  }

  value_id pop() {
    const value_id v = top();
    stack_.pop_back();
    return v;
  }

  // The values pushed since the last MARK, which is removed.
  std::vector<value_id> pop_mark() {
    if (marks_.empty())
      fail(fmt::format("opcode {} needs a MARK before its items, and there is none", op_text()));
    const std::size_t at = marks_.back();
    marks_.pop_back();
    std::vector<value_id> items(stack_.begin() + static_cast<std::ptrdiff_t>(at), stack_.end());
    stack_.resize(at);
    return items;
  }

  // The container on top of the stack, which must be of type `t`.
  std::vector<value_id>& target(type t) {
    const auto& n = doc_.nodes_[top()];
    if (n.t != t) {
      fail(fmt::format("opcode {} adds to {}, but the stack holds {}", op_text(),
                       pickle_document::type_name(t), pickle_document::type_name(n.t)));
    }
    return doc_.containers_[n.a];
  }

  void check_key(value_id key) const {
    const type t = doc_.nodes_[key].t;
    if (t != type::string && t != type::integer) {
      fail(fmt::format("a dict key must be a string or an integer, got {}",
                       pickle_document::type_name(t)));
    }
  }

  void add_pairs(std::vector<value_id>& dict, const std::vector<value_id>& items) {
    if (items.size() % 2 != 0)
      fail(fmt::format("opcode {}: an odd number of items (a key without its value)", op_text()));
    for (std::size_t i = 0; i < items.size(); i += 2) check_key(items[i]);
    dict.insert(dict.end(), items.begin(), items.end());
  }

  void push_integer(std::int64_t v) {
    push({type::integer, false, static_cast<std::uint64_t>(v), 0});
  }

  // LONG1/LONG4: little-endian two's complement, any length; within [-2^63, 2^64).
  void push_long(std::string_view bytes) {
    std::size_t n = bytes.size();
    if (n == 0) return push_integer(0);
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
    const bool negative = (byte(n - 1) & 0x80) != 0;
    if (negative) {
      // Drop high 0xff bytes that only extend the sign of the byte below.
      while (n > 1 && byte(n - 1) == 0xff && (byte(n - 2) & 0x80) != 0) --n;
    } else {
      while (n > 1 && byte(n - 1) == 0x00) --n;
    }
    if (n > 8) fail(fmt::format("opcode {}: the integer does not fit in 64 bits", op_text()));
    std::uint64_t v = little_endian(bytes.substr(0, n));
    if (negative) {
      if (n < 8) v |= ~std::uint64_t{0} << (8 * n);  // sign-extend
      return push_integer(static_cast<std::int64_t>(v));
    }
    push({type::integer, v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
          v, 0});
  }

  void push_span(type t, std::uint64_t length) {
    const std::size_t offset = pos_;
    (void)take(length);
    push({t, false, offset, length});
  }

  void memo_put(std::uint64_t index) { memo_[index] = top(); }

  void memo_get(std::uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end())
      fail(fmt::format("memo index {} was never defined (by BINPUT, LONG_BINPUT or MEMOIZE)",
                       index));
    push(it->second);
  }

  void stop() {
    const value_id result = pop();
    if (!stack_.empty() || !marks_.empty()) {
      fail(fmt::format("STOP leaves {} value(s) and {} MARK(s) on the stack besides the result",
                       stack_.size(), marks_.size()));
    }
    if (pos_ != in_.size()) {
      op_at_ = pos_;
      fail(fmt::format("{} byte(s) after STOP: expected the end of the pickle", in_.size() - pos_));
    }
    doc_.root_ = result;
  }

  void step() {
    switch (op_) {
      case PROTO: {
        const auto version = static_cast<unsigned char>(take(1)[0]);
        if (version > highest_protocol)
          fail(fmt::format("pickle protocol {} is not supported (0 to 5 are)", version));
        return;
      }
      case FRAME:
        (void)take_length(8);
        return;  // frames only group opcodes for buffering
      case MARK:
        marks_.push_back(stack_.size());
        return;
      case POP:
        // As in Python: with no value above the last MARK, POP removes that MARK.
        if (stack_.size() > floor())
          stack_.pop_back();
        else
          (void)pop_mark();
        return;
      case POP_MARK:
        (void)pop_mark();
        return;
      case DUP:
        push(top());
        return;

      case NONE:
        push({type::none, false, 0, 0});
        return;
      case NEWTRUE:
        push({type::boolean, false, 1, 0});
        return;
      case NEWFALSE:
        push({type::boolean, false, 0, 0});
        return;
      case BININT:
        push_integer(static_cast<std::int32_t>(static_cast<std::uint32_t>(take_uint(4))));
        return;
      case BININT1:
        push_integer(static_cast<std::int64_t>(take_uint(1)));
        return;
      case BININT2:
        push_integer(static_cast<std::int64_t>(take_uint(2)));
        return;
      case LONG1:
        push_long(take(take_length(1)));
        return;
      case LONG4: {
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(take_uint(4)));
        if (n < 0) fail(fmt::format("opcode {}: a negative length, {}", op_text(), n));
        const std::size_t left = in_.size() - pos_;
        if (static_cast<std::uint64_t>(n) > left) {
          fail(fmt::format("opcode {} claims a length of {} byte(s), but only {} are left",
                           op_text(), n, left));
        }
        push_long(take(static_cast<std::uint64_t>(n)));
        return;
      }
      case BINFLOAT: {
        const std::string_view s = take(8);
        std::uint64_t bits = 0;
        for (const char c : s) bits = (bits << 8) | static_cast<unsigned char>(c);  // big-endian
        push({type::floating, false, bits, 0});
        return;
      }

      case SHORT_BINUNICODE:
        push_span(type::string, take_length(1));
        return;
      case BINUNICODE:
        push_span(type::string, take_length(4));
        return;
      case BINUNICODE8:
        push_span(type::string, take_length(8));
        return;
      // Protocol 1's byte strings, which Python 3 reads as str (ASCII by default).
      case SHORT_BINSTRING:
        push_span(type::string, take_length(1));
        return;
      case BINSTRING: {
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(take_uint(4)));
        if (n < 0) fail(fmt::format("opcode {}: a negative length, {}", op_text(), n));
        const std::size_t left = in_.size() - pos_;
        if (static_cast<std::uint64_t>(n) > left) {
          fail(fmt::format("opcode {} claims a length of {} byte(s), but only {} are left",
                           op_text(), n, left));
        }
        push_span(type::string, static_cast<std::uint64_t>(n));
        return;
      }
      case SHORT_BINBYTES:
        push_span(type::bytes, take_length(1));
        return;
      case BINBYTES:
        push_span(type::bytes, take_length(4));
        return;
      case BINBYTES8:
      case BYTEARRAY8:
        push_span(type::bytes, take_length(8));
        return;

      case EMPTY_DICT:
        push(add_container(type::dict));
        return;
      case EMPTY_LIST:
        push(add_container(type::list));
        return;
      case EMPTY_TUPLE:
        push(add_container(type::tuple));
        return;
      case EMPTY_SET:
        push(add_container(type::set));
        return;
      case TUPLE:
        push(add_container(type::tuple, pop_mark()));
        return;
      case LIST:
        push(add_container(type::list, pop_mark()));
        return;
      case FROZENSET:
        push(add_container(type::set, pop_mark()));
        return;
      case TUPLE1:
      case TUPLE2:
      case TUPLE3: {
        std::vector<value_id> items(static_cast<std::size_t>(op_ - TUPLE1 + 1));
        for (std::size_t k = items.size(); k-- > 0;) items[k] = pop();
        push(add_container(type::tuple, std::move(items)));
        return;
      }
      case DICT: {
        const std::vector<value_id> items = pop_mark();
        std::vector<value_id> pairs;
        add_pairs(pairs, items);
        push(add_container(type::dict, std::move(pairs)));
        return;
      }
      case APPEND: {
        const value_id v = pop();
        target(type::list).push_back(v);
        return;
      }
      case APPENDS: {
        const std::vector<value_id> items = pop_mark();
        auto& list = target(type::list);
        list.insert(list.end(), items.begin(), items.end());
        return;
      }
      case ADDITEMS: {
        const std::vector<value_id> items = pop_mark();
        auto& set = target(type::set);
        set.insert(set.end(), items.begin(), items.end());
        return;
      }
      case SETITEM: {
        const value_id value = pop();
        const value_id key = pop();
        check_key(key);
        auto& dict = target(type::dict);
        dict.push_back(key);
        dict.push_back(value);
        return;
      }
      case SETITEMS: {
        const std::vector<value_id> items = pop_mark();
        add_pairs(target(type::dict), items);
        return;
      }

      // The memo: a value put there is the very value a later get pushes (shared, so that a
      // dict memoized empty and filled afterwards is seen filled).
      case MEMOIZE:
        memo_put(memo_.size());
        return;
      case BINPUT:
        memo_put(take_uint(1));
        return;
      case LONG_BINPUT:
        memo_put(take_uint(4));
        return;
      case BINGET:
        memo_get(take_uint(1));
        return;
      case LONG_BINGET:
        memo_get(take_uint(4));
        return;

      case GLOBAL:
      case STACK_GLOBAL:
      case REDUCE:
      case BUILD:
      case INST:
      case OBJ:
      case NEWOBJ:
      case NEWOBJ_EX:
      case PERSID:
      case BINPERSID:
      case EXT1:
      case EXT2:
      case EXT4:
        fail(
            fmt::format("opcode {} refused: a memory snapshot holds only plain data, and "
                        "loading code from a file is never done",
                        op_text()));
      case NEXT_BUFFER:
      case READONLY_BUFFER:
        fail(fmt::format("opcode {} not supported: out-of-band buffers are not in the file",
                         op_text()));
      case FLOAT:
      case INT:
      case LONG:
      case STRING:
      case UNICODE:
      case GET:
      case PUT:
        fail(
            fmt::format("opcode {} not supported: a protocol-0 text opcode (write the pickle "
                        "with protocol 2 or above, as torch does)",
                        op_text()));
      default:
        fail(fmt::format("unknown opcode 0x{:02x}: not a pickle, or a damaged one", op_));
    }
  }

  pickle_document& doc_;
  std::string_view in_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;  ///< offset of the opcode being run, for messages
  std::uint8_t op_ = 0;
  std::vector<value_id> stack_;
  std::vector<std::size_t> marks_;  ///< stack sizes at each MARK
  std::unordered_map<std::uint64_t, value_id> memo_;
};

pickle_document pickle_document::read(std::string bytes, const std::string& source) {
  pickle_document doc;
  doc.bytes_ = std::move(bytes);
  doc.source_ = source;
  pickle_reader(doc).run();
  return doc;
}

std::string_view pickle_document::type_name(type t) noexcept {
  switch (t) {
    case type::none:
      return "None";
    case type::boolean:
      return "a boolean";
    case type::integer:
      return "an integer";
    case type::floating:
      return "a float";
    case type::string:
      return "a string";
    case type::bytes:
      return "bytes";
    case type::list:
      return "a list";
    case type::tuple:
      return "a tuple";
    case type::set:
      return "a set";
    case type::dict:
      return "a dict";
  }
  return "a value";
}

std::optional<std::int64_t> pickle_document::to_int64(value_id v) const {
  const node& n = at(v);
  if (n.t != type::integer || n.is_unsigned) return std::nullopt;
  return static_cast<std::int64_t>(n.a);
}

std::optional<std::uint64_t> pickle_document::to_uint64(value_id v) const {
  const node& n = at(v);
  if (n.t != type::integer) return std::nullopt;
  if (!n.is_unsigned && static_cast<std::int64_t>(n.a) < 0) return std::nullopt;
  return n.a;
}

std::optional<double> pickle_document::to_double(value_id v) const {
  const node& n = at(v);
  if (n.t == type::floating) return std::bit_cast<double>(n.a);
  if (n.t != type::integer) return std::nullopt;
  return n.is_unsigned ? static_cast<double>(n.a)
                       : static_cast<double>(static_cast<std::int64_t>(n.a));
}

std::optional<bool> pickle_document::to_bool(value_id v) const {
  const node& n = at(v);
  if (n.t != type::boolean) return std::nullopt;
  return n.a != 0;
}

std::optional<std::string_view> pickle_document::to_text(value_id v) const {
  const node& n = at(v);
  if (n.t != type::string) return std::nullopt;
  return std::string_view(bytes_).substr(static_cast<std::size_t>(n.a),
                                         static_cast<std::size_t>(n.b));
}

std::span<const pickle_document::value_id> pickle_document::items(value_id v) const {
  const node& n = at(v);
  if (n.t != type::list && n.t != type::tuple && n.t != type::set) return {};
  return containers_[n.a];
}

std::optional<pickle_document::value_id> pickle_document::member(value_id v,
                                                                 std::string_view key) const {
  const node& n = at(v);
  if (n.t != type::dict) return std::nullopt;
  const auto& pairs = containers_[n.a];
  for (std::size_t i = pairs.size(); i >= 2; i -= 2) {
    if (to_text(pairs[i - 2]) == key) return pairs[i - 1];
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, pickle_document::value_id>> pickle_document::members(
    value_id v) const {
  std::vector<std::pair<std::string, value_id>> out;
  const node& n = at(v);
  if (n.t != type::dict) return out;
  const auto& pairs = containers_[n.a];
  for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) {
    const node& key = at(pairs[i]);
    std::string text;
    if (key.t == type::string)
      text = *to_text(pairs[i]);
    else
      text = key.is_unsigned ? std::to_string(key.a)
                             : std::to_string(static_cast<std::int64_t>(key.a));
    out.emplace_back(std::move(text), pairs[i + 1]);
  }
  return out;
}

nlohmann::json pickle_document::json_of(value_id v, std::size_t depth, std::size_t& left) const {
  if (left == 0) {
    throw input_error(source_, "",
                      "the pickle's shared values (the memo's gets), copied at each reference, "
                      "make more values than its size allows");
  }
  --left;
  const node& n = at(v);
  switch (n.t) {
    case type::none:
      return nullptr;
    case type::boolean:
      return n.a != 0;
    case type::integer:
      if (n.is_unsigned) return n.a;
      return static_cast<std::int64_t>(n.a);
    case type::floating:
      return std::bit_cast<double>(n.a);
    case type::string:
      return valid_utf8(*to_text(v));
    case type::bytes: {
      const std::string_view s = std::string_view(bytes_).substr(static_cast<std::size_t>(n.a),
                                                                 static_cast<std::size_t>(n.b));
      return nlohmann::json::binary(std::vector<std::uint8_t>(s.begin(), s.end()));
    }
    default:
      break;
  }
  if (depth >= max_pickle_depth) {
    throw input_error(source_, "",
                      fmt::format("containers nest deeper than {} levels (or one holds itself)",
                                  max_pickle_depth));
  }
  if (n.t == type::dict) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, value] : members(v))
      out[valid_utf8(key)] = json_of(value, depth + 1, left);
    return out;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const value_id item : containers_[n.a]) out.push_back(json_of(item, depth + 1, left));
  return out;
}

nlohmann::json pickle_document::to_json(value_id v, std::size_t max_values) const {
  std::size_t left = max_values;
  return json_of(v, 0, left);
}

nlohmann::json read_pickle(std::string_view bytes, const std::string& source) {
  const pickle_document doc = pickle_document::read(std::string(bytes), source);
  return doc.to_json(doc.root(), (std::size_t{1} << 20) + 16 * bytes.size());
}

namespace {

// CPython's framing (_pickle.c), so that the bytes are its own: a frame is closed once it holds
// 64 KiB, checked before each value is written; a frame of fewer than 4 bytes loses its FRAME; a
// string or bytes of 64 KiB or more is written outside any frame, its opcode included (so that a
// loader can read it straight into place).
constexpr std::size_t frame_target = 64 * 1024;
constexpr std::size_t frame_min = 4;
constexpr std::size_t frame_header = 9;     // FRAME and its 8-byte length
constexpr std::size_t pickle_batch = 1000;  // items per APPENDS or SETITEMS, as CPython's
constexpr std::size_t no_frame = std::numeric_limits<std::size_t>::max();

class pickle_writer {
 public:
  using json = nlohmann::json;

  std::string run(const json& value) {
    out_.reserve(frame_target + 2 * frame_header);
    out_.push_back(static_cast<char>(PROTO));
    out_.push_back(4);
    save(value, 0);
    op(STOP);
    commit_frame();
    return std::move(out_);
  }

 private:
  // Bytes that belong in a frame: the first opens one, its header reserved until it is closed.
  void write(const char* data, std::size_t n) {
    if (frame_ == no_frame) {
      frame_ = out_.size();
      out_.append(frame_header, '\0');
    }
    out_.append(data, n);
  }
  void op(std::uint8_t code) { write(reinterpret_cast<const char*>(&code), 1); }

  void commit_frame() {
    if (frame_ == no_frame) return;
    const std::size_t length = out_.size() - frame_ - frame_header;
    if (length >= frame_min) {
      out_[frame_] = static_cast<char>(FRAME);
      for (std::size_t k = 0; k < 8; ++k)
        out_[frame_ + 1 + k] = static_cast<char>((std::uint64_t{length} >> (8 * k)) & 0xff);
    } else {
      out_.erase(frame_, frame_header);
    }
    frame_ = no_frame;
  }

  // An opcode with an `n`-byte little-endian argument.
  void op(std::uint8_t code, std::uint64_t arg, std::size_t n) {
    char b[9];
    b[0] = static_cast<char>(code);
    for (std::size_t k = 0; k < n; ++k) b[1 + k] = static_cast<char>((arg >> (8 * k)) & 0xff);
    write(b, 1 + n);
  }

  void save_integer(std::int64_t v) {
    if (v >= 0 && v <= 0xff) return op(BININT1, static_cast<std::uint64_t>(v), 1);
    if (v >= 0 && v <= 0xffff) return op(BININT2, static_cast<std::uint64_t>(v), 2);
    if (v >= std::numeric_limits<std::int32_t>::min() &&
        v <= std::numeric_limits<std::int32_t>::max())
      return op(BININT, static_cast<std::uint32_t>(static_cast<std::int32_t>(v)), 4);
    save_long1(static_cast<std::uint64_t>(v), v < 0);
  }

  // LONG1: two's complement, little-endian, in the fewest bytes that keep the sign (CPython's
  // encode_long). `bits` is the value modulo 2^64; `negative` tells -1 from 2^64-1.
  void save_long1(std::uint64_t bits, bool negative) {
    char b[11];
    b[0] = static_cast<char>(LONG1);
    auto* v = reinterpret_cast<unsigned char*>(b + 2);
    for (std::size_t k = 0; k < 8; ++k) v[k] = static_cast<unsigned char>((bits >> (8 * k)) & 0xff);
    const unsigned char sign = negative ? 0xff : 0x00;
    v[8] = sign;
    std::size_t n = 9;
    while (n > 1 && v[n - 1] == sign && ((v[n - 2] & 0x80) != 0) == negative) --n;
    b[1] = static_cast<char>(n);
    write(b, 2 + n);
  }

  // BINFLOAT: the IEEE double, big-endian.
  void save_float(double d) {
    const auto bits = std::bit_cast<std::uint64_t>(d);
    char b[9];
    b[0] = static_cast<char>(BINFLOAT);
    for (std::size_t k = 0; k < 8; ++k)
      b[1 + k] = static_cast<char>((bits >> (8 * (7 - k))) & 0xff);
    write(b, 9);
  }

  // A string's or bytes' opcode by length, then its bytes: framed below 64 KiB, else not.
  void save_span(std::uint8_t short_op, std::uint8_t op4, std::uint8_t op8, std::string_view data) {
    const std::size_t n = data.size();
    char head[9];
    std::size_t head_n = 0;
    const auto put = [&](std::uint8_t code, std::size_t bytes) {
      head[0] = static_cast<char>(code);
      for (std::size_t k = 0; k < bytes; ++k)
        head[1 + k] = static_cast<char>((std::uint64_t{n} >> (8 * k)) & 0xff);
      head_n = 1 + bytes;
    };
    if (n <= 0xff)
      put(short_op, 1);
    else if (n <= 0xffffffff)
      put(op4, 4);
    else
      put(op8, 8);
    if (n < frame_target) {
      write(head, head_n);
      out_.append(data);
      return;
    }
    commit_frame();
    out_.append(head, head_n);
    out_.append(data);
  }

  void save_text(std::string_view s) { save_span(SHORT_BINUNICODE, BINUNICODE, BINUNICODE8, s); }

  // Where CPython closes a full frame: before each value, keys included.
  void boundary() {
    if (frame_ != no_frame && out_.size() - frame_ - frame_header >= frame_target) commit_frame();
  }

  void save(const json& v, std::size_t depth) {
    boundary();
    switch (v.type()) {
      case json::value_t::null:
        return op(NONE);
      case json::value_t::boolean:
        return op(v.get<bool>() ? NEWTRUE : NEWFALSE);
      case json::value_t::number_integer:
        return save_integer(v.get<std::int64_t>());
      case json::value_t::number_unsigned: {
        const auto u = v.get<std::uint64_t>();
        if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
          return save_integer(static_cast<std::int64_t>(u));
        return save_long1(u, false);
      }
      case json::value_t::number_float:
        return save_float(v.get<double>());
      case json::value_t::string:
        return save_text(v.get_ref<const json::string_t&>());
      case json::value_t::binary: {
        const auto& b = v.get_binary();
        return save_span(SHORT_BINBYTES, BINBYTES, BINBYTES8,
                         {reinterpret_cast<const char*>(b.data()), b.size()});
      }
      case json::value_t::array:
        return save_list(v.get_ref<const json::array_t&>(), depth);
      case json::value_t::object:
        return save_dict(v.get_ref<const json::object_t&>(), depth);
      case json::value_t::discarded:
        break;
    }
    throw input_error("a discarded JSON value (a parse callback's) has no pickle");
  }

  static void check_depth(std::size_t depth) {
    if (depth >= max_pickle_depth) {
      throw input_error(fmt::format(
          "containers nest deeper than {} levels: too deep to write as a pickle (or to read back)",
          max_pickle_depth));
    }
  }

  // As CPython's batch_list_exact: one item APPENDed, more in MARK ... APPENDS of up to 1000.
  void save_list(const json::array_t& items, std::size_t depth) {
    check_depth(depth);
    op(EMPTY_LIST);
    if (items.size() == 1) {
      save(items.front(), depth + 1);
      return op(APPEND);
    }
    for (std::size_t i = 0; i < items.size();) {
      op(MARK);
      for (const std::size_t end = std::min(items.size(), i + pickle_batch); i < end; ++i)
        save(items[i], depth + 1);
      op(APPENDS);
    }
  }

  // As CPython's batch_dict_exact: one item SETITEM, more in MARK ... SETITEMS of up to 1000,
  // and (its quirk, kept for the same bytes) an empty batch after a full last one.
  void save_dict(const json::object_t& members, std::size_t depth) {
    check_depth(depth);
    op(EMPTY_DICT);
    if (members.empty()) return;
    auto it = members.begin();
    if (members.size() == 1) {
      boundary();
      save_text(it->first);
      save(it->second, depth + 1);
      return op(SETITEM);
    }
    std::size_t in_batch = 0;
    do {
      op(MARK);
      for (in_batch = 0; it != members.end() && in_batch < pickle_batch; ++it, ++in_batch) {
        boundary();
        save_text(it->first);
        save(it->second, depth + 1);
      }
      op(SETITEMS);
    } while (in_batch == pickle_batch);
  }

  std::string out_;
  std::size_t frame_ = no_frame;  ///< offset of the open frame's reserved header
};

}  // namespace

std::string write_pickle(const nlohmann::json& value) {
  return pickle_writer().run(value);
}

}  // namespace pinbench
