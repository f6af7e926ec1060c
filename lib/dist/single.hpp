// The communicator of a process that was not launched with others: size 1, every call copies
// `send` to `recv` or does nothing.
#pragma once

#include <memory>

#include "dist/communicator.hpp"

namespace pinbench::dist {

[[nodiscard]] std::unique_ptr<communicator> make_single();

}  // namespace pinbench::dist
