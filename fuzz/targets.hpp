// What each fuzz target does with one input, as plain functions: the libFuzzer entry points in
// fuzz/fuzz_*.cpp call them, and tests/fuzz/replay_test.cpp replays the seeds and the
// regression inputs (tests/data/fuzz/<target>/) through the very same code in the normal suite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pinbench::fuzz {

/// How one input ended. Either outcome is fine; anything else is an oracle_violation.
struct verdict {
  bool accepted = false;
  std::string error;  ///< the pinbench::error message when rejected
};

/// An input that broke the oracle: an exception that is not a pinbench::error (nlohmann's,
/// std::out_of_range, std::bad_alloc, ...), a pinbench::error whose message spans several
/// lines, or a property of an accepted input that does not hold. A bug in the parser.
class oracle_violation : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// The scenario parser: parse_scenario, then expand and display_params for every case. Text
/// after a NUL byte is read as `--set` overrides, one per NUL-separated piece.
verdict scenario_parser(std::string_view input);

/// open_trace on the bytes (through a memfd) and every event drained. The two targets differ
/// in their seeds and dictionaries; the reader picks the format from the content.
verdict json_trace(std::string_view input);
verdict csv_trace(std::string_view input);

/// read_pickle on the bytes (every accepted value must dump() as JSON), then open_trace on them
/// (a pickle is read as a PyTorch memory snapshot) and every event drained.
verdict pickle(std::string_view input);

/// parse_config (PYTORCH_CUDA_ALLOC_CONF). An accepted text's canonical form (to_string) must
/// parse again to the same canonical form.
verdict alloc_conf(std::string_view input);

struct target {
  std::string_view name;  ///< as in fuzz/seeds.txt, tests/data/fuzz/<name>/, fuzz_<name>
  verdict (*run)(std::string_view input);
};

/// Every target, in a fixed order.
std::span<const target> all_targets();

/// For LLVMFuzzerTestOneInput: runs `fn` on the bytes; an oracle_violation (or any other
/// exception) is printed and aborts, which libFuzzer reports as a crash with its reproducer.
int run_or_abort(verdict (*fn)(std::string_view), const std::uint8_t* data, std::size_t size);

}  // namespace pinbench::fuzz
