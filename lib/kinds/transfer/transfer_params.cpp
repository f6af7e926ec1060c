// Kind `transfer`'s params: read once per case, with the rules across them.
#include "kinds/transfer/transfer_params.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/units.hpp"
#include "device/backend.hpp"

namespace pinbench::kinds::transfer {

namespace {

/// Copies of this size or less are timed in batches: one such copy lasts a few microseconds,
/// near the event clock's resolution and the launch latency (nvbandwidth times 16 as well).
constexpr std::uint64_t small_copy_bytes = 1_MiB;
constexpr int small_copy_batch = 16;

}  // namespace

std::shared_ptr<const measure::case_params> parse_params(const nlohmann::json& p,
                                                         const std::string& source) {
  auto t = std::make_shared<transfer_params>();
  t->direction = direction_choice.parse(p, source);
  t->memory = memory_choice.parse(p, source);
  t->mode = mode_choice.parse(p, source);
  t->bytes = p.at("bytes").get<std::uint64_t>();
  const int copies_asked = p.at("copies_per_sample").get<int>();
  t->copies = copies_asked;
  if (t->copies == 0) t->copies = t->bytes <= small_copy_bytes ? small_copy_batch : 1;
  t->overlap_compute_ns = p.at("overlap_compute").get<std::int64_t>();
  t->verify = p.at("verify").get<bool>();

  // Overlap cases queue every copy of a sample behind one gate (and the compute kernel behind
  // another), so a sample cannot be split into gated chunks there.
  if (t->gated() && t->overlap_compute_ns > 0 && copies_asked > device::max_copies_behind_gate)
    throw input_error(source, "params.copies_per_sample",
                      fmt::format("expected at most {} with overlap_compute: non_blocking copies "
                                  "from page-locked memory are queued behind one gate kernel, and "
                                  "more would fill the driver's launch queue; got {}",
                                  device::max_copies_behind_gate, copies_asked));
  return t;
}

}  // namespace pinbench::kinds::transfer
