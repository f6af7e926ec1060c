// Shared by the scenario tests: the message of the input_error an action throws.
#pragma once

#include <string>

#include "core/error.hpp"

namespace pinbench::testing {

/// The what() of the input_error `fn` throws; "(no error)" when it throws none. Any other
/// exception escapes, so a test that expects an input_error fails on it.
template <typename F>
std::string input_error_of(F&& fn) {
  try {
    fn();
  } catch (const input_error& e) {
    return e.what();
  }
  return "(no error)";
}

/// A minimal valid transfer scenario with `extra` spliced in as more top-level members.
inline std::string transfer_doc(const std::string& extra = {}, const std::string& name = "t") {
  return R"({"schema": "pinbench.scenario/1", "name": ")" + name + R"(", "kind": "transfer")" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

}  // namespace pinbench::testing
