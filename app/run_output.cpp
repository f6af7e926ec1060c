// What `pinbench run` shows and writes after the cases ran.
#include "run_output.hpp"

#include <unistd.h>
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/pickle.hpp"
#include "kinds/registry.hpp"
#include "report/report.hpp"
#include "result/result_io.hpp"
#include "run/runner.hpp"

namespace pinbench::app {

progress_line::progress_line(bool enabled)
    : enabled_(enabled && ::isatty(STDERR_FILENO) != 0), start_ns_(now_ns()) {}

progress_line::~progress_line() {
  if (shown_) std::fprintf(stderr, "\r\033[K");
}

void progress_line::on_case(std::size_t index, std::size_t total, const std::string& scenario,
                            const std::string& id) {
  if (!enabled_ || now_ns() - start_ns_ < 1'000'000'000) return;
  std::string line = fmt::format("[{}/{}] {} {}", index + 1, total, scenario, id);
  if (line.size() > 100) line = line.substr(0, 97) + "...";
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  shown_ = true;
}

case_log::case_log(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO) == 0) {}

void case_log::on_done(std::size_t index, std::size_t total, const std::string& scenario,
                       const result::case_result& c) const {
  if (!enabled_) return;
  std::string line = fmt::format("pinbench: [{}/{}] {} {}: {} ({:.2f} s){}{}", index + 1, total,
                                 scenario, c.id, result::to_string(c.status), c.elapsed_s,
                                 c.message.empty() ? "" : ": ", c.message);
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::fprintf(stderr, "%s\n", line.c_str());
}

namespace {

std::string render(const result::run_result& r, const std::string& format) {
  if (format == "json") return result::to_json(r).dump(2) + "\n";
  if (format == "csv") return report::to_csv(r);
  if (format == "md") return report::to_markdown(r);
  return report::to_table(r, ::isatty(STDOUT_FILENO) != 0);
}

// `--snapshot FILE`: every snapshot the engines took, one file, written whole or not at all; a
// .pickle the one case's, in the form PyTorch's memory viewer opens.
std::size_t write_snapshots(const result::run_result& r, const std::string& path) {
  nlohmann::json cases = nlohmann::json::array();
  const kinds::kind_spec* kind_of_first = nullptr;
  for (const auto& s : r.scenarios)
    for (const auto& c : s.cases)
      if (!c.snapshot.is_null()) {
        if (cases.empty()) kind_of_first = kinds::find(s.kind);
        cases.push_back({{"scenario", s.name}, {"case", c.id}, {"snapshot", c.snapshot}});
      }
  const std::size_t n = cases.size();
  if (snapshot_as_pickle(path)) {
    if (n == 0) return 0;
    if (kind_of_first == nullptr || !kind_of_first->viewer_snapshot)
      throw input_error({}, "--snapshot",
                        "expected a .json file: this case's kind has no viewer's form to pickle");
    write_file_atomic(path, write_pickle(kind_of_first->viewer_snapshot(cases[0]["snapshot"])));
    return n;
  }
  const nlohmann::json doc{{"schema", "pinbench.snapshots/1"}, {"cases", std::move(cases)}};
  write_file_atomic(path, doc.dump() + "\n");
  return n;
}

}  // namespace

bool snapshot_as_pickle(const std::string& path) {
  return path.ends_with(".pickle") || path.ends_with(".pkl");
}

bool save(const std::string& path, const std::string& content, const char* what) {
  try {
    write_file_atomic(path, content);
    return true;
  } catch (const error& e) {
    std::fprintf(stderr, "pinbench: error: %s: the %s was not saved%s\n", e.what(), what,
                 path == "-" ? "" : " (any previous file is unchanged)");
    return false;
  }
}

int report_outcome(run::outcome& done, const output_options& o, dist::communicator& world) {
  result::run_result& result = done.result;
  if (!done.writer) {
    // Rank 0 reports for every rank; the others' exit code says how their own cases went.
    if (done.lost) {
      std::fprintf(stderr, "pinbench: error: %s\n",
                   result.lost_rank.value("message", std::string()).c_str());
      return exit_environment;
    }
    return done.interrupted ? interrupted_exit_code(result.interrupted_by)
                            : (result.any_failed() ? exit_case_failed : exit_ok);
  }

  // The table first: if the result file cannot be written, what was measured is still shown.
  // With --out - the JSON goes to stdout and replaces the table.
  if (o.out != "-") {
    const std::string text = render(result, o.format);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  bool saved = true;
  if (!o.out.empty()) {
    if (!o.launched) result.process = run::process_block();
    saved = save(o.out, result::to_json(result).dump(2) + "\n", "result");
    if (saved && o.out != "-" && !o.quiet)
      std::fprintf(stderr, "pinbench: result written to %s\n", o.out.c_str());
  }
  if (!o.snapshot.empty() && !o.snapshots_written) {
    try {
      const std::size_t n = write_snapshots(result, o.snapshot);
      if (!o.quiet)
        std::fprintf(stderr, "pinbench: %zu snapshot(s) written to %s%s\n", n, o.snapshot.c_str(),
                     n == 0 ? " (only allocator cases take snapshots)" : "");
    } catch (const error& e) {
      std::fprintf(stderr, "pinbench: error: %s: the snapshots were not saved\n", e.what());
      saved = false;
    }
  }
  if (done.lost) {
    // The others may still wait in a call: end the whole launch (MPI_Abort; tcp: they were told).
    world.abort(
        exit_environment,
        fmt::format(
            "pinbench: error: {}: {}", result.lost_rank.value("message", std::string()),
            saved && !o.out.empty()
                ? fmt::format("rank {} wrote the cases it completed to {}", world.rank(), o.out)
                : std::string("what this rank measured is in the table above")));
  }
  if (done.interrupted) {
    std::fprintf(stderr, "pinbench: interrupted by %s: %s\n",
                 result.interrupted_by.empty() ? "another rank" : result.interrupted_by.c_str(),
                 saved ? "the result holds every case completed so far"
                       : "what was measured is in the table above");
    return interrupted_exit_code(result.interrupted_by);
  }
  if (!saved) return exit_environment;
  return result.any_failed() ? exit_case_failed : exit_ok;
}

}  // namespace pinbench::app
