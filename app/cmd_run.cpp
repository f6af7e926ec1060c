// `pinbench run`: validate every input, then measure, then report (table, JSON, CSV, Markdown).
#include <cstdio>
#include <unistd.h>

#include <fmt/format.h>

#include "bench/engine.hpp"
#include "commands.hpp"
#include "core/atomic_file.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/units.hpp"
#include "report/report.hpp"
#include "scenario/scenario.hpp"

namespace pinbench::app {

namespace {

struct run_args {
  std::vector<std::string> inputs;
  std::vector<std::string> sets;
  std::string backend = "auto";
  std::string out;
  std::string format = "table";
  std::uint64_t seed = 1;
  bool quiet = false;
  std::string host_capacity;
  std::string snapshot;
};

// "[3/12] transfer-size memory=pinned,bytes=1MiB" on one rewritten stderr line, shown only on a
// terminal and only once the run has lasted a second.
class progress_line {
 public:
  explicit progress_line(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO) != 0) {}
  void on_case(std::size_t index, std::size_t total, const std::string& scenario,
               const std::string& id) {
    if (!enabled_ || now_ns() - start_ns_ < 1'000'000'000) return;
    std::string line = fmt::format("[{}/{}] {} {}", index + 1, total, scenario, id);
    if (line.size() > 100) line = line.substr(0, 97) + "...";
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    shown_ = true;
  }
  ~progress_line() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool enabled_;
  bool shown_ = false;
  std::int64_t start_ns_ = now_ns();
};

std::string render(const bench::run_result& r, const std::string& format) {
  if (format == "json") return report::to_json(r).dump(2) + "\n";
  if (format == "csv") return report::to_csv(r);
  if (format == "md") return report::to_markdown(r);
  return report::to_table(r, ::isatty(STDOUT_FILENO) != 0);
}

// `--snapshot FILE`: every snapshot the engines took, one file, written whole or not at all.
std::size_t write_snapshots(const bench::run_result& r, const std::string& path) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& s : r.scenarios)
    for (const auto& c : s.cases)
      if (!c.snapshot.is_null())
        cases.push_back({{"scenario", s.name}, {"case", c.id}, {"snapshot", c.snapshot}});
  const std::size_t n = cases.size();
  const nlohmann::json doc{{"schema", "pinbench.snapshots/1"}, {"cases", std::move(cases)}};
  write_file_atomic(path, doc.dump() + "\n");
  return n;
}

int run(const run_args& a) {
  // Everything that can be wrong with the input is found before anything is measured.
  const auto overrides = scenario::parse_overrides(a.sets);
  const auto scenarios = scenario::load_inputs(a.inputs);
  for (const auto& s : scenarios) scenario::check_overrides(s, overrides);
  std::size_t total = 0;
  for (const auto& s : scenarios) total += scenario::expand(s, overrides).size();
  if (!a.out.empty()) check_writable(a.out);
  if (a.snapshot == "-")
    throw input_error({}, "--snapshot", "expected a file path (snapshots are too big for stdout)");
  if (!a.snapshot.empty()) check_writable(a.snapshot);

  device::backend_options opts;
  if (!a.host_capacity.empty()) {
    const auto cap = parse_bytes(a.host_capacity);
    if (!cap || *cap == 0)
      throw input_error({}, "--host-capacity",
                        "expected a positive size such as \"16GiB\", got \"" + a.host_capacity + "\"");
    opts.host_device_capacity = *cap;
  }
  auto dev = device::make_backend(a.backend, opts);
  if (!a.quiet)
    std::fprintf(stderr, "pinbench: %zu scenario(s), %zu case(s) on the %s backend%s\n",
                 scenarios.size(), total, std::string(dev->name()).c_str(),
                 dev->name() == "host" ? " (host emulation: no GPU figures)" : "");

  install_interrupt_handler();
  progress_line progress(!a.quiet);
  bench::run_options ro;
  ro.overrides = overrides;
  ro.seed = a.seed;
  ro.command_line = command_line();
  ro.want_snapshots = !a.snapshot.empty();
  ro.on_case = [&](std::size_t i, std::size_t n, const std::string& s, const std::string& id) {
    progress.on_case(i, n, s, id);
  };
  const bench::run_result result = bench::run_scenarios(scenarios, *dev, ro);

  // With --out - the JSON goes to stdout and replaces the table.
  if (!a.out.empty()) write_file_atomic(a.out, report::to_json(result).dump(2) + "\n");
  if (a.out != "-") {
    const std::string text = render(result, a.format);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  if (!a.out.empty() && a.out != "-" && !a.quiet)
    std::fprintf(stderr, "pinbench: result written to %s\n", a.out.c_str());
  if (!a.snapshot.empty()) {
    const std::size_t n = write_snapshots(result, a.snapshot);
    if (!a.quiet)
      std::fprintf(stderr, "pinbench: %zu snapshot(s) written to %s%s\n", n, a.snapshot.c_str(),
                   n == 0 ? " (only allocator cases take snapshots)" : "");
  }
  if (result.interrupted) {
    std::fprintf(stderr, "pinbench: interrupted: the result holds every case completed so far\n");
    return exit_interrupted;
  }
  return result.any_failed() ? exit_case_failed : exit_ok;
}

}  // namespace

runner add_run(CLI::App& app) {
  auto a = std::make_shared<run_args>();
  auto* sub = app.add_subcommand(
      "run", "Run scenarios (files, directories, builtin:NAME; none = the built-in quick suite)");
  sub->add_option("inputs", a->inputs, "Scenario files, directories of them, or builtin:NAME");
  sub->add_option("--set", a->sets, "Override a param for every case: KEY=VALUE (repeatable)")
      ->type_name("KEY=VALUE");
  sub->add_option("--backend", a->backend, "Device backend: auto (cuda when usable), cuda, host")
      ->check(CLI::IsMember({"auto", "cuda", "host"}))
      ->capture_default_str();
  sub->add_option("--out", a->out, "Write the pinbench.result/1 JSON here ('-' = stdout)")
      ->type_name("FILE");
  sub->add_option("--format", a->format, "What stdout shows: table, json, csv, md")
      ->check(CLI::IsMember({"table", "json", "csv", "md"}))
      ->capture_default_str();
  sub->add_option("--seed", a->seed, "Seed for every random choice (recorded in the result)")
      ->capture_default_str();
  sub->add_option("--host-capacity", a->host_capacity,
                  "Host backend: emulated device memory (default: half of host memory)")
      ->type_name("SIZE");
  sub->add_option("--snapshot", a->snapshot,
                  "Allocator cases: write a memory snapshot (torch.cuda.memory._snapshot() "
                  "structure, taken at peak reserved memory) of each case to this JSON file")
      ->type_name("FILE");
  sub->add_flag("--quiet,-q", a->quiet, "No progress or log lines on stderr");
  return [a] { return run(*a); };
}

}  // namespace pinbench::app
