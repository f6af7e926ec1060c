// `pinbench tune allocator` (being built).
#include "tune/allocator_tune.hpp"

#include "core/error.hpp"

namespace pinbench::tune {

result::run_result tune_allocator(const allocator_request&, const session&) {
  throw error("tune allocator: not built yet");
}

}  // namespace pinbench::tune
