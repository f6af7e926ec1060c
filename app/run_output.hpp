// What `pinbench run` shows and writes once a plan is executed: the table (or JSON, CSV,
// Markdown) on stdout, the result and snapshot files, the closing lines on stderr and the exit
// code; and the progress it shows while the cases run.
#pragma once

#include <cstdint>
#include <string>

#include "dist/communicator.hpp"
#include "result/result.hpp"
#include "run/execute.hpp"

namespace pinbench::app {

/// `--snapshot FILE` ends in .pickle or .pkl: the one case's snapshot as PyTorch pickles it.
[[nodiscard]] bool snapshot_as_pickle(const std::string& path);

/// "[3/12] transfer-size memory=pinned,bytes=1MiB" on one rewritten stderr line, shown only on
/// a terminal and only once the run has lasted a second.
class progress_line {
 public:
  explicit progress_line(bool enabled);
  ~progress_line();
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;
  void on_case(std::size_t index, std::size_t total, const std::string& scenario,
               const std::string& id);

 private:
  bool enabled_;
  bool shown_ = false;
  std::int64_t start_ns_;
};

/// "pinbench: [3/12] transfer-size bytes=1MiB: ok (0.42 s)", one line per finished case (a
/// failed one with its message after it), for logs (stderr not a terminal): which cases
/// completed is known even if the run is cut short.
class case_log {
 public:
  explicit case_log(bool enabled);
  void on_done(std::size_t index, std::size_t total, const std::string& scenario,
               const result::case_result& c) const;

 private:
  bool enabled_;
};

struct output_options {
  std::string format = "table";    ///< what stdout shows: table, json, csv, md
  std::string out;                 ///< `--out`: the result file ("-" = stdout), "" = none
  std::string snapshot;            ///< `--snapshot`: the snapshots file, "" = none
  bool snapshots_written = false;  ///< the round processes wrote the snapshots already
  bool quiet = false;
  bool launched = false;
};

/// Writes a file that holds what was measured ("-" = stdout). A failure (disk full, file too
/// large) is one line on stderr naming `what` and false; the old file, if any, is unchanged.
[[nodiscard]] bool save(const std::string& path, const std::string& content, const char* what);

/// Shows and writes what the run measured (on the writing rank), ends the launch after a lost
/// rank, and returns the exit code: 0, 1 (a case failed), 3 (a file not saved, a rank lost) or
/// 128 + the signal that stopped the run.
[[nodiscard]] int report_outcome(run::outcome& done, const output_options& options,
                                 dist::communicator& world);

}  // namespace pinbench::app
