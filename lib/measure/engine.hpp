// What a kind's engine is: it measures one case at a time and may conclude over a scenario.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "device/backend.hpp"
#include "device/numa.hpp"
#include "device/platform.hpp"
#include "dist/communicator.hpp"
#include "measure/case.hpp"
#include "result/result.hpp"

namespace pinbench::measure {

struct run_context {
  device::backend& dev;
  std::uint64_t seed = 0;
  /// `run --snapshot`: engines that can (allocator) put a memory snapshot in case_result::snapshot.
  bool want_snapshots = false;
  /// The launch's processes (mpirun, srun, torchrun), always set by the runner: size 1 when
  /// not launched. Kinds that span processes (collective) run on it; the others ignore it.
  dist::communicator* world = nullptr;
  /// The platform `dev` belongs to, for kinds that drive several devices (data_parallel,
  /// collective): how many this process may drive, and each one opened as a backend of its own.
  /// Null: only `dev` can be used.
  const device::platform* platform = nullptr;
  /// Where the host buffers and copying threads of `dev`'s cases belong (`run --numa`), decided
  /// once per run; kinds that copy through host memory (transfer, loader) apply it per case
  /// with device::numa_scope. The default: no placement.
  device::numa_target numa{};
};

/// Runs the cases of one kind. Throws on a failed case; the runner records it and goes on.
class engine {
 public:
  virtual ~engine() = default;
  /// Runs one case: builds what it measures, then measure_case (measure/protocol.hpp) for the
  /// warm-up, the samples and verification (sample_loop::verify).
  [[nodiscard]] virtual result::case_result run_case(const case_spec& c, run_context& ctx) = 0;
  /// A one-line conclusion over the scenario's cases once they ran ("" when the kind has none),
  /// measured on a platform of `kind`.
  [[nodiscard]] virtual std::string verdict(const result::scenario_result&,
                                            device::platform_kind /*kind*/) const {
    return {};
  }
};

}  // namespace pinbench::measure
