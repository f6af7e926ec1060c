// What every trial of one `pinbench tune` shares: the device measured on (opened once), the
// seed, the deadline the search must finish by, and the progress shown on stderr; and the one
// way a tuner measures cases: scenarios built in memory, run as `pinbench run` runs them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device/backend.hpp"
#include "device/platform.hpp"
#include "result/result.hpp"
#include "scenario/scenario.hpp"

namespace pinbench::tune {

class session {
 public:
  /// Opens the platform's home device (an error there is the caller's exit 3).
  session(const device::platform& platform, std::uint64_t seed, std::int64_t budget_ns, bool quiet,
          std::string command_line);

  [[nodiscard]] const device::platform& platform() const noexcept { return platform_; }
  [[nodiscard]] device::backend& device() const noexcept { return *device_; }
  [[nodiscard]] bool emulated() const noexcept { return device_->emulated(); }
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  [[nodiscard]] std::int64_t budget_ns() const noexcept { return budget_ns_; }
  /// Time left of --budget (negative once it is spent).
  [[nodiscard]] std::int64_t left_ns() const noexcept;
  [[nodiscard]] double elapsed_s() const noexcept;
  /// A stop was asked for (Ctrl-C, SIGTERM, SIGHUP): the search ends with what it measured.
  [[nodiscard]] static bool interrupted() noexcept;

  /// "pinbench: tune: LINE" on stderr, unless quiet.
  void progress(const std::string& line) const;

  /// Measures the scenarios as `pinbench run` does (plan, runner, the cases' samples in the
  /// result), on this session's device. A scenario that does not validate is an input_error.
  [[nodiscard]] result::run_result measure(std::vector<scenario::scenario> scenarios) const;

  /// A result with nothing in it yet: the run's facts and the environment block of this
  /// session's device (what a tune that measured no case through the runner still records).
  [[nodiscard]] result::run_result empty_result() const;

  /// A scenario of `kind` from its JSON (schema and kind filled in), checked as a file would be.
  [[nodiscard]] static scenario::scenario scenario_from(nlohmann::json doc,
                                                        const std::string& source);

 private:
  const device::platform& platform_;
  std::unique_ptr<device::backend> device_;
  std::uint64_t seed_;
  std::int64_t budget_ns_, started_ns_;
  bool quiet_;
  std::string command_line_;
};

/// One question's search, as every tune runs it (run_search): short trials, then the answer
/// confirmed by a full-length run through the runner, then the result with its tune block.
/// Each question is a strategy of its own (allocator_tune.cpp: PYTORCH_CUDA_ALLOC_CONF settings
/// screened by replays; loader_tune.cpp: DataLoader settings in measured trials).
class search_strategy {
 public:
  virtual ~search_strategy() = default;
  search_strategy() = default;
  search_strategy(const search_strategy&) = delete;
  search_strategy& operator=(const search_strategy&) = delete;

  /// The short trials, within the budget (leaving the confirming run its time).
  virtual void search() = 0;
  /// The chosen setting measured at full length; nothing after a stop signal.
  virtual void confirm() = 0;
  /// The result: the trials' cases and the tune block (question, trials, answer, verdict).
  [[nodiscard]] virtual result::run_result finish() = 0;

  /// Why the search ended early (none: it did not).
  [[nodiscard]] result::search_stop stopped_by() const noexcept { return stopped_by_; }

 protected:
  /// The search is cut short; a stop signal outranks a spent budget.
  void stop(result::search_stop why) noexcept {
    if (stopped_by_ != result::search_stop::interrupted) stopped_by_ = why;
  }
  [[nodiscard]] bool stopped() const noexcept { return stopped_by_ != result::search_stop::none; }

 private:
  result::search_stop stopped_by_ = result::search_stop::none;
};

/// The one loop of every tune: the strategy's search, its confirmation, its result, whose tune
/// block then records how long it all took and why it stopped early; a search stopped by a
/// signal makes an interrupted result.
[[nodiscard]] result::run_result run_search(const session& s, search_strategy& strategy);

/// Appends the scenarios of `more` to `into`; `into` takes `more`'s run facts when it has none.
void append(result::run_result& into, result::run_result more);

}  // namespace pinbench::tune
