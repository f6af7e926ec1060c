// The one-line verdict of a data_parallel scenario, from its cases' medians.
#pragma once

#include <string>

#include "device/backend.hpp"
#include "result/result.hpp"

namespace pinbench::kinds::data_parallel {

/// With dp and ddp cases that differ in mode only: how many times the samples/s of dp ddp
/// reaches, and how far device 0's peak memory rises above the others' under each ("ddp: 1.7x
/// the samples/s of dp (host backend, 2 emulated devices); dp's device 0 peaks 96 MiB above the
/// others, ddp's 0 B"). Otherwise the fastest case. Empty when no case succeeded.
[[nodiscard]] std::string verdict(const result::scenario_result& s, device::platform_kind kind);

}  // namespace pinbench::kinds::data_parallel
