// Python pickles of plain data (dicts, lists, tuples, sets, strings, bytes, numbers, booleans,
// None), protocols 2 to 5, read without executing anything: what PyTorch's memory snapshots are
// (torch.cuda.memory._dump_snapshot). Every opcode that would name or call code (GLOBAL,
// STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, PERSID, BINPERSID, EXT1/2/4) is
// refused, as is every opcode this reader does not know. write_pickle goes the other way: JSON as
// a protocol-4 pickle of the same plain data, for the tools that read only snapshot pickles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace pinbench {

/// Deepest nesting of containers that pickle_document::to_json walks (a container that holds
/// itself through the memo is caught by it too), and that write_pickle writes.
inline constexpr std::size_t max_pickle_depth = 512;

/// A pickle's values as read, in an arena: a value that the pickle refers to twice (the memo's
/// BINGET) is stored once and shared, as Python shares it, so memory stays proportional to the
/// input however often a value is referred to. Strings point into the bytes the document keeps.
///
/// Errors are input_error(source, "offset N", MESSAGE), N the byte offset of the opcode:
/// refused and unknown opcodes, truncated input, stack underflow, a MARK missing, a memo index
/// never defined, a length longer than the rest of the input (checked before anything is
/// allocated), an integer outside [-2^63, 2^64), a dict key that is neither a string nor an
/// integer, and anything after STOP.
class pickle_document {
 public:
  using value_id = std::uint32_t;
  /// Python's types as the pickle has them; list, tuple and set (frozenset too) are sequences.
  enum class type : std::uint8_t {
    none,
    boolean,
    integer,
    floating,
    string,
    bytes,
    list,
    tuple,
    set,
    dict
  };

  /// Reads a whole pickle; `source` names it in errors.
  [[nodiscard]] static pickle_document read(std::string bytes, const std::string& source);

  [[nodiscard]] value_id root() const noexcept { return root_; }
  [[nodiscard]] type type_of(value_id v) const { return nodes_.at(v).t; }
  /// "a dict", "an integer", ...: for messages.
  [[nodiscard]] static std::string_view type_name(type t) noexcept;

  /// The value of an integer within int64 (not a boolean), else nullopt.
  [[nodiscard]] std::optional<std::int64_t> to_int64(value_id v) const;
  /// The value of a non-negative integer (not a boolean), else nullopt.
  [[nodiscard]] std::optional<std::uint64_t> to_uint64(value_id v) const;
  /// A float, or an integer as a double; else nullopt.
  [[nodiscard]] std::optional<double> to_double(value_id v) const;
  [[nodiscard]] std::optional<bool> to_bool(value_id v) const;
  /// A string's bytes (UTF-8 as pickled, not checked), else nullopt.
  [[nodiscard]] std::optional<std::string_view> to_text(value_id v) const;

  /// A list's, tuple's or set's items (empty for any other value).
  [[nodiscard]] std::span<const value_id> items(value_id v) const;
  /// A dict's member under a string key (the last one, as in Python), else nullopt (also when
  /// `v` is not a dict).
  [[nodiscard]] std::optional<value_id> member(value_id v, std::string_view key) const;
  /// A dict's members in the order they were set, keys as text (an integer key in decimal);
  /// a key set twice appears twice.
  [[nodiscard]] std::vector<std::pair<std::string, value_id>> members(value_id v) const;

  /// The value as JSON: dicts become objects (integer keys as their decimal text, the last of
  /// a repeated key kept), lists, tuples and sets arrays, bytes a JSON binary value, strings
  /// with every invalid UTF-8 sequence replaced by U+FFFD (so that dump() never throws). Shared
  /// values are copied at each reference: input_error when that makes more than `max_values`
  /// values, or when containers nest deeper than max_pickle_depth.
  [[nodiscard]] nlohmann::json to_json(value_id v, std::size_t max_values) const;

 private:
  struct node {
    type t = type::none;
    bool is_unsigned = false;  ///< integer: `a` holds a value at or above 2^63
    std::uint64_t a = 0;       ///< integer/float bits, boolean, string/bytes offset, container
    std::uint64_t b = 0;       ///< string/bytes length
  };
  friend class pickle_reader;

  [[nodiscard]] const node& at(value_id v) const { return nodes_.at(v); }
  [[nodiscard]] nlohmann::json json_of(value_id v, std::size_t depth, std::size_t& left) const;

  std::string bytes_;
  std::string source_;
  std::vector<node> nodes_;
  /// Each container's items; a dict's are key, value, key, value, ...
  std::vector<std::vector<value_id>> containers_;
  value_id root_ = 0;
};

/// The whole pickle as JSON (pickle_document::read, then to_json of its root with a budget of
/// 2^20 values plus 16 per input byte). For a large snapshot whose frames are shared, walk the
/// pickle_document instead: it never copies what is shared.
[[nodiscard]] nlohmann::json read_pickle(std::string_view bytes, const std::string& source);

/// `value` as a Python pickle of protocol 4 (what pickle.dump writes by default since Python 3.8):
/// objects as dicts (keys in the object's order), arrays as lists, strings as str, integers as int
/// (int64 and uint64 both, exactly), floats as float, booleans, null as None; a JSON binary value
/// as bytes. Nothing that names code is ever written. The result loads with Python's pickle.loads
/// and with pickle_document::read.
///
/// The bytes are those of CPython's own pickler with its memo off (`Pickler.fast`): the same
/// opcodes, batches of 1000 and 64 KiB frames, without MEMOIZE, which nothing here needs (no value
/// is referred to twice) and which would make every reader keep a table of every value.
/// input_error when containers nest deeper than max_pickle_depth (read_pickle would refuse them),
/// or for a discarded value.
[[nodiscard]] std::string write_pickle(const nlohmann::json& value);

}  // namespace pinbench
