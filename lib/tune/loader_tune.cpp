// `pinbench tune loader` (being built).
#include "tune/loader_tune.hpp"

#include "core/error.hpp"

namespace pinbench::tune {

result::run_result tune_loader(const loader_request&, const session&) {
  throw error("tune loader: not built yet");
}

}  // namespace pinbench::tune
