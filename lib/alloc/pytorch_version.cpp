#include "alloc/pytorch_version.hpp"

namespace pinbench::alloc {

const std::vector<std::string_view>& pytorch_version_choices() {
  static const std::vector<std::string_view> choices = {
      "a request of 1 EiB or more is refused before rounding with \"CUDA out of memory. Tried "
      "to allocate more than 1EB memory.\"; no counter moves",
      "memory_fraction given (0 and 1.0 included) is set_per_process_memory_fraction called: "
      "new segments stay within fraction x capacity, garbage_collection_threshold is armed, "
      "and the OOM message says \"X allowed; \"; left out, the function was never called",
      "roundup_power2_divisions: \">\" fills from the last listed interval itself (later "
      "releases start one above it); \"[]\" is accepted and changes nothing",
      "the OOM message is 2.6's word for word, the expandable_segments hint and the "
      "pytorch.org/docs/stable link included, \"GPU 0\" replaced by the device used; without "
      "the per-process clause, which PyTorch adds only when it can read NVML",
  };
  return choices;
}

}  // namespace pinbench::alloc
