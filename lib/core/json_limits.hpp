// Limits on the JSON documents pinbench reads whole (scenarios, results, `--set` values): how
// deep they may nest and how large they may be, so that hostile input gets a one-line error
// instead of a stack overflow in a recursive copy or comparison, or an exhausted host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace pinbench {

/// Deepest nesting of arrays and objects accepted. Scenario files nest 3 or 4 levels, results
/// about 8; the limit is far above both and far below what a recursive walk of a
/// nlohmann::json can survive on an 8 MiB stack.
inline constexpr std::size_t max_json_depth = 128;

/// Largest scenario file read (scenario files are a few KiB).
inline constexpr std::uint64_t max_scenario_file_bytes = std::uint64_t{64} << 20;

/// Largest result file read by compare and report (whole, then parsed into a DOM that takes
/// several times its size).
inline constexpr std::uint64_t max_result_file_bytes = std::uint64_t{512} << 20;

/// Throws input_error(file, "", "line L, column C: JSON nests deeper than N levels ...") when
/// the arrays and objects of `text` nest deeper than `max_depth`. Brackets inside strings do
/// not count. Linear, no allocation: meant to run before a DOM parse.
void check_json_depth(std::string_view text, const std::string& file,
                      std::size_t max_depth = max_json_depth);

/// Throws input_error(file, PATH, "duplicate key \"K\" (line L, column C)") for the first
/// object of `text` that holds a key twice (nlohmann would keep the last value silently). PATH is
/// the member's path as messages write it ("matrix.bytes", "tags[1].x"); line and column are the
/// second occurrence's. Keys are compared as decoded ("a" and "\u0061" are the same key).
/// `text` must be valid JSON (run it after a successful parse); linear in its length.
void check_duplicate_keys(std::string_view text, const std::string& file);

/// A whole JSON document read from `path` (a FIFO is read as far as its writers write), with
/// every check above: over `max_bytes`, too deep, not JSON ("line L, column C: ..."), or a key
/// twice is an input_error naming the file. Members keep the file's order.
[[nodiscard]] nlohmann::ordered_json read_json_document(const std::string& path,
                                                        std::uint64_t max_bytes);

}  // namespace pinbench
