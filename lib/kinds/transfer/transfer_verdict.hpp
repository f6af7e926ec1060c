// The one-line verdict of a transfer scenario: whether pinning pays, from the cases' medians.
#pragma once

#include <string>

#include "device/backend.hpp"
#include "result/result.hpp"

namespace pinbench::kinds::transfer {

/// From cases that differ in `memory` only (where several such groups exist, the one with the
/// largest copies speaks), each part that the scenario's cases allow, joined by "; ":
///   - non_blocking without compute: how much of the copy the caller is held, pinned against
///     pageable ("non_blocking 32 MiB h2d: the caller is held 1% of a pinned copy, 86% of a
///     pageable one: only pinned memory leaves the host free");
///   - with overlap_compute: how much of the copy compute hides, pinned against pageable;
///   - pin_on_the_fly: its bandwidth against a pinned source's, and the pinning per copy.
/// Otherwise the fastest case. The backend closes the line. Empty when no case succeeded.
[[nodiscard]] std::string verdict(const result::scenario_result& s, device::platform_kind kind);

}  // namespace pinbench::kinds::transfer
