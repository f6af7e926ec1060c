// `pinbench run`'s command line as parsed (cmd_run.cpp); each round's process of `--repeat` is
// given the options it was given (round_processes.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scenario/scenario.hpp"

namespace pinbench::app {

struct run_args {
  std::vector<std::string> inputs;
  std::vector<std::string> sets;
  std::string backend = "auto";
  std::string out;
  std::string format = "table";
  std::uint64_t seed = 1;
  bool quiet = false;
  std::string host_capacity;
  std::vector<std::string> host_faults;
  std::uint64_t max_cases = scenario::default_max_cases;
  std::string snapshot;
  std::uint32_t repeat = 1;
  std::string rounds_in = "processes";
  std::optional<std::uint32_t> round;  ///< hidden: this process is that round of `repeat`
  /// Hidden, with `round`: the plan::fingerprint of the process that started this round.
  std::string plan_fingerprint;
  std::string telemetry_device = "auto";  ///< NVML device watched: auto, off or an index
  bool discard_on_throttle = false;
  std::string numa = "auto";  ///< auto, none or a node number (device::parse_numa_request)
  double rank_timeout_s = 0;  ///< under a launch: 0 = twice the longest case timeout + 1 min
};

}  // namespace pinbench::app
