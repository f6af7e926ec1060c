// `pinbench run`: validate every input, then measure, then report (table, JSON, CSV, Markdown).
#include <unistd.h>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "commands.hpp"
#include "core/atomic_file.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/sysinfo.hpp"
#include "core/units.hpp"
#include "dist/communicator.hpp"
#include "gate/compare.hpp"
#include "report/report.hpp"
#include "result/result_io.hpp"
#include "round_processes.hpp"
#include "run/ranks.hpp"
#include "run/runner.hpp"
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
  std::vector<std::string> host_faults;
  std::uint64_t max_cases = scenario::default_max_cases;
  std::string snapshot;
  std::uint32_t repeat = 1;
  std::string rounds_in = "processes";
  std::optional<std::uint32_t> round;  ///< hidden: this process is that round of `repeat`
  double rank_timeout_s = 0;  ///< under a launch: 0 = twice the longest case timeout + 1 min
};

// What each round's process is given: everything that shapes the measurement, the backend as
// resolved here (so that every round measures the same device).
std::vector<std::string> round_run_args(const run_args& a, std::string_view backend) {
  std::vector<std::string> out{"run"};
  out.insert(out.end(), a.inputs.begin(), a.inputs.end());
  for (const auto& s : a.sets) {
    out.emplace_back("--set");
    out.push_back(s);
  }
  for (const auto& f : a.host_faults) {
    out.emplace_back("--host-fault");
    out.push_back(f);
  }
  if (!a.host_capacity.empty()) {
    out.emplace_back("--host-capacity");
    out.push_back(a.host_capacity);
  }
  for (const auto& x : {std::string("--backend"), std::string(backend), std::string("--seed"),
                        std::to_string(a.seed), std::string("--max-cases"),
                        std::to_string(a.max_cases)})
    out.push_back(x);
  return out;
}

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

// "pinbench: [3/12] transfer-size bytes=1MiB: ok (0.42 s)", one line per finished case (a failed
// one with its message after it), for logs (stderr not a terminal): which cases completed is
// known even if the run is cut short.
class case_log {
 public:
  explicit case_log(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO) == 0) {}
  void on_done(std::size_t index, std::size_t total, const std::string& scenario,
               const result::case_result& c) const {
    if (!enabled_) return;
    std::string line = fmt::format("pinbench: [{}/{}] {} {}: {} ({:.2f} s){}{}", index + 1, total,
                                   scenario, c.id, result::to_string(c.status), c.elapsed_s,
                                   c.message.empty() ? "" : ": ", c.message);
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::fprintf(stderr, "%s\n", line.c_str());
  }

 private:
  bool enabled_;
};

// "gate-timeouts=N" (N >= 1) as a count; nothing for any other text.
std::optional<std::size_t> gate_timeouts_fault(std::string_view f) {
  constexpr std::string_view prefix = "gate-timeouts=";
  if (!f.starts_with(prefix)) return std::nullopt;
  f.remove_prefix(prefix.size());
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), n);
  if (ec != std::errc{} || end != f.data() + f.size() || n == 0) return std::nullopt;
  return n;
}

// "slow=P%" (or a fraction, "slow=0.2"): how much longer the host backend's copies and compute
// take; nothing for any other text.
std::optional<double> slow_fault(std::string_view f) {
  constexpr std::string_view prefix = "slow=";
  if (!f.starts_with(prefix)) return std::nullopt;
  const auto v = gate::parse_threshold(f.substr(prefix.size()));
  if (!v || *v <= 0 || *v > 10) return std::nullopt;
  return v;
}

std::string render(const result::run_result& r, const std::string& format) {
  if (format == "json") return result::to_json(r).dump(2) + "\n";
  if (format == "csv") return report::to_csv(r);
  if (format == "md") return report::to_markdown(r);
  return report::to_table(r, ::isatty(STDOUT_FILENO) != 0);
}

// `--snapshot FILE`: every snapshot the engines took, one file, written whole or not at all.
std::size_t write_snapshots(const result::run_result& r, const std::string& path) {
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

// Figures a soak run compares from run to run, taken just before the result is written.
nlohmann::json process_block() {
  const process_info p = read_process_info();
  return {{"peak_rss_bytes", p.peak_rss_bytes}, {"open_fds_at_end", p.open_fds}};
}

// Writes a file that holds what was measured; a failure (disk full, file too large) is one
// line on stderr and false: the old file, if any, is left as it was (write_file_atomic).
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

// Under a launch: how long a rank waits for the others when they first meet (rendezvous,
// connect, the first message): --rank-timeout, or two minutes (loading the inputs and opening
// the device may take a while on a busy node).
dist::timeout first_meeting(const run_args& a) {
  if (a.rank_timeout_s > 0)
    return dist::timeout(std::max<std::int64_t>(1, static_cast<std::int64_t>(a.rank_timeout_s * 1000)));
  return std::chrono::minutes(2);
}

// The scenario files a run read (built-ins are none): what no output may replace.
std::vector<named_file> scenario_files(const std::vector<scenario::scenario>& scenarios) {
  std::vector<named_file> files;
  for (const auto& s : scenarios)
    if (!s.builtin) files.push_back({"the scenario file", s.source});
  return files;
}

int run_here(const run_args& a, const dist::launch_info& launch, dist::communicator& world);

// After a loss, which rank writes what was measured: rank 0, or rank 1 when rank 0 is the one
// lost; none when rank 0 stopped the launch (it writes).
bool writes_after_loss(int rank, const nlohmann::json& lost_rank) {
  if (lost_rank.value("stopped_by_lead", false)) return false;
  const auto r = lost_rank.find("rank");
  const bool lead_lost = r != lost_rank.end() && r->is_number_integer() && r->get<int>() == 0;
  return rank == (lead_lost ? 1 : 0);
}

int run(const run_args& a) {
  // From here on Ctrl-C, SIGTERM and SIGHUP keep what was measured: even during loading they
  // lead to exit 128 + the signal with a (then empty) result, never to a process killed
  // halfway through a write.
  install_interrupt_handler();
  // A malformed launcher environment is bad input (exit 2), found before anything else.
  const auto launch = dist::detect_launch();
  std::unique_ptr<dist::communicator> world;
  try {
    world = dist::connect(launch, first_meeting(a));
  } catch (const dist::rank_lost_error& e) {
    std::fprintf(stderr, "pinbench: error: %s\n", e.what());
    return exit_environment;
  }
  try {
    return run_here(a, launch, *world);
  } catch (const dist::rank_lost_error& e) {
    // The others may be waiting in a collective: end the whole launch, with a non-zero code.
    world->abort(exit_environment, fmt::format("pinbench: error: {}: stopping every rank", e.what()));
  }
  return exit_environment;  // not reached: abort ends the process
}

int run_here(const run_args& a, const dist::launch_info& launch, dist::communicator& world) {
  const bool launched = world.size() > 1;
  const bool lead = world.rank() == 0;  // the rank that reports and writes
  const bool quiet = a.quiet || !lead;
  // Everything that can be wrong with the input is found before anything is measured.
  const auto overrides = scenario::parse_overrides(a.sets);
  const auto scenarios = scenario::load_inputs(a.inputs);
  for (const auto& s : scenarios) scenario::check_overrides(s, overrides);
  std::size_t total = 0;
  std::vector<named_file> inputs = scenario_files(scenarios);
  for (const auto& s : scenarios) {
    const auto cases = scenario::expand(s, overrides, a.max_cases);
    total += cases.size();
    for (const auto& c : cases)
      if (c.typed)
        for (auto& f : c.typed->input_files()) inputs.push_back({"the case input", std::move(f)});
  }
  if (a.snapshot == "-")
    throw input_error({}, "--snapshot", "expected a file path (snapshots are too big for stdout)");
  check_distinct_files(inputs, {{"--out", a.out}, {"--snapshot", a.snapshot}});
  if (lead && !a.out.empty()) check_writable(a.out);
  if (lead && !a.snapshot.empty()) check_writable(a.snapshot);
  if (launched && a.repeat > 1 && a.rounds_in == "processes" && !a.round)
    throw input_error({}, "--rounds-in",
                      "under a launcher the rounds run in the launched processes: add "
                      "--rounds-in one-process");

  device::backend_options opts;
  if (!a.host_capacity.empty()) {
    const auto cap = parse_bytes(a.host_capacity);
    if (!cap || *cap == 0)
      throw input_error({}, "--host-capacity",
                        "expected a positive size such as \"16GiB\", got \"" + a.host_capacity + "\"");
    opts.host_device_capacity = *cap;
  }
  for (const auto& f : a.host_faults) {
    if (f == "refuse-pinning") opts.host_refuse_pinning = true;
    if (f == "no-host-register") opts.host_no_register = true;
    if (const auto n = gate_timeouts_fault(f)) opts.host_gate_timeouts = *n;
    if (const auto slow = slow_fault(f)) opts.host_slowdown = *slow;
  }
  // One GPU per process of a node: the local rank picks it (wrapping when there are more
  // processes than GPUs, which then share one).
  const auto cuda = device::cuda_availability();
  if (launched && cuda.usable && cuda.device_count > 0)
    opts.cuda_device = launch.local_rank % cuda.device_count;
  auto dev = device::make_backend(a.backend, opts);
  if (!a.host_faults.empty() && dev->name() != "host")
    throw input_error({}, "--host-fault",
                      "applies to the host backend only; add --backend host (this run would use "
                      "the " + std::string(dev->name()) + " backend)");

  run::run_options ro;
  ro.overrides = overrides;
  ro.seed = a.seed;
  ro.command_line = command_line();
  ro.want_snapshots = !a.snapshot.empty();
  ro.max_cases = a.max_cases;
  ro.repeat = a.repeat;
  ro.only_round = a.round;
  ro.world = &world;
  ro.rank_timeout = dist::timeout(static_cast<std::int64_t>(a.rank_timeout_s * 1000));
  const std::string backend_name(dev->name());
  ro.device_count = backend_name == "cuda" ? cuda.device_count : device::max_emulated_devices;
  ro.open_device = [opts, backend_name](int index) {
    auto o = opts;
    o.cuda_device = index;
    return device::make_backend(backend_name, o);
  };
  if (launched) {
    // Different inputs on different ranks would measure different things under one name, and
    // a collective would wait for a partner that never comes: refuse before anything runs.
    const nlohmann::json settings{backend_name, a.seed, a.repeat, a.host_faults, a.host_capacity};
    run::check_same_inputs(world, run::run_fingerprint(scenarios, overrides, settings, a.max_cases),
                           first_meeting(a));
  }

  if (!quiet)
    std::fprintf(stderr, "pinbench: %zu scenario(s), %zu case(s)%s on the %s backend%s%s\n",
                 scenarios.size(), total,
                 a.repeat > 1 ? fmt::format(" x {} rounds{}", a.repeat,
                                            a.rounds_in == "processes" ? " (a process each)" : "")
                                    .c_str()
                              : "",
                 backend_name.c_str(),
                 dev->name() == "host" ? " (host emulation: no GPU figures)" : "",
                 launched ? fmt::format(", {} ranks ({}, {})", world.size(), launch.launcher,
                                        world.transport())
                                .c_str()
                          : "");

  const bool in_processes = a.repeat > 1 && a.rounds_in == "processes" && !a.round;
  result::run_result result;
  if (in_processes) {
    round_process_plan plan;
    plan.run_args = round_run_args(a, dev->name());
    plan.rounds = a.repeat;
    plan.snapshot = a.snapshot;
    plan.quiet = a.quiet;
    dev.reset();  // each round opens the device itself: this process holds none of its memory
    result = run_rounds_in_processes(plan);
    result.command_line = command_line();
  } else {
    progress_line progress(!quiet);
    const case_log log(!quiet);
    ro.on_case = [&](std::size_t i, std::size_t n, const std::string& s, const std::string& id) {
      progress.on_case(i, n, s, id);
    };
    ro.on_case_done = [&](std::size_t i, std::size_t n, const std::string& s,
                          const result::case_result& c) { log.on_done(i, n, s, c); };
    result = run::run_scenarios(scenarios, *dev, ro);
  }
  if (launched) {
    result.process = process_block();
    const auto entry = run::rank_entry(launch, result.environment);
    if (result.lost_rank.is_null()) {
      try {
        result = run::gather_ranks(world, result, entry, run::rank_timeout_of(scenarios, ro));
      } catch (const dist::rank_lost_error& e) {
        result.lost_rank = run::lost_rank_json(e);
      }
    }
    // After a loss the ranks cannot meet again: the result is this rank's own cases.
    if (!result.lost_rank.is_null()) result = run::merge_ranks({result}, {entry});
    result.command_line = command_line();
  }
  // A signal after the last case still says "interrupted" by its exit code; the result is whole.
  const bool interrupted = result.interrupted || interrupt_requested();
  // The signal this process got names the stop; else the one another rank or round got.
  if (interrupted && interrupt_requested()) result.interrupted_by = interrupt_signal_name();
  const bool lost = !result.lost_rank.is_null();
  // Rank 0 reports for every rank; the others' exit code says how their own cases went. After
  // a loss, the rank that writes is rank 0, or rank 1 when rank 0 is the one lost.
  const bool writer = lost ? writes_after_loss(world.rank(), result.lost_rank) : lead;
  if (lost && writer)
    world.stop_others("rank " + std::to_string(world.rank()) + " writes the result");
  if (!writer) {
    if (lost) {
      std::fprintf(stderr, "pinbench: error: %s\n",
                   result.lost_rank.value("message", std::string()).c_str());
      return exit_environment;
    }
    return interrupted ? interrupted_exit_code(result.interrupted_by)
                       : (result.any_failed() ? exit_case_failed : exit_ok);
  }

  // The table first: if the result file cannot be written, what was measured is still shown.
  // With --out - the JSON goes to stdout and replaces the table.
  if (a.out != "-") {
    const std::string text = render(result, a.format);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  bool saved = true;
  if (!a.out.empty()) {
    if (!launched) result.process = process_block();
    saved = save(a.out, result::to_json(result).dump(2) + "\n", "result");
    if (saved && a.out != "-" && !a.quiet)
      std::fprintf(stderr, "pinbench: result written to %s\n", a.out.c_str());
  }
  if (!a.snapshot.empty() && !in_processes) {  // with rounds in processes, the first wrote it
    try {
      const std::size_t n = write_snapshots(result, a.snapshot);
      if (!a.quiet)
        std::fprintf(stderr, "pinbench: %zu snapshot(s) written to %s%s\n", n, a.snapshot.c_str(),
                     n == 0 ? " (only allocator cases take snapshots)" : "");
    } catch (const error& e) {
      std::fprintf(stderr, "pinbench: error: %s: the snapshots were not saved\n", e.what());
      saved = false;
    }
  }
  if (lost) {
    // The others may still wait in a call: end the whole launch (MPI_Abort; tcp: they were told).
    world.abort(
        exit_environment,
        fmt::format(
            "pinbench: error: {}: {}", result.lost_rank.value("message", std::string()),
            saved && !a.out.empty()
                ? fmt::format("rank {} wrote the cases it completed to {}", world.rank(), a.out)
                : std::string("what this rank measured is in the table above")));
  }
  if (interrupted) {
    std::fprintf(stderr, "pinbench: interrupted by %s: %s\n",
                 result.interrupted_by.empty() ? "another rank" : result.interrupted_by.c_str(),
                 saved ? "the result holds every case completed so far"
                       : "what was measured is in the table above");
    return interrupted_exit_code(result.interrupted_by);
  }
  if (!saved) return exit_environment;
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
  sub->add_option("--host-fault", a->host_faults,
                  "Host backend fault switch, to see how a run copes (repeatable): "
                  "refuse-pinning = every pinned allocation falls back to unlocked memory, "
                  "with a warning in the result; no-host-register = the device says "
                  "cudaHostRegister is unsupported (registered cases are skipped); "
                  "gate-timeouts=N = the first N gates let their stream go unreleased, as a "
                  "timed-out gate kernel does (those samples are void); slow=P% = every copy "
                  "and compute takes P% longer (a known regression for testing a gate)")
      ->check(CLI::Validator(
          [](const std::string& f) -> std::string {
            if (f == "refuse-pinning" || f == "no-host-register" || gate_timeouts_fault(f) ||
                slow_fault(f))
              return {};
            return "expected refuse-pinning, no-host-register, gate-timeouts=N (N a positive "
                   "count) or slow=P% (0 < P <= 1000), got \"" + f + "\"";
          },
          "FAULT"))
      ->type_name("FAULT");
  sub->add_option("--repeat", a->repeat,
                  "Measure every case in this many rounds (cases interleaved in a seeded random "
                  "order each round; samples keep their round): `compare` then judges with the "
                  "spread between rounds, which within-round samples cannot see")
      ->check(CLI::Range(std::uint32_t{1}, std::uint32_t{1000}))
      ->capture_default_str();
  sub->add_option("--rounds-in", a->rounds_in,
                  "With --repeat: processes = each round in a fresh pinbench process (sees what "
                  "differs from run to run: placement, heap, clock); one-process = every round "
                  "in this one (cheaper; sees drift only)")
      ->check(CLI::IsMember({"processes", "one-process"}))
      ->capture_default_str();
  // The rounds' processes are started with this; not for people.
  sub->add_option("--round", a->round, "")->group("");
  sub->add_option("--max-cases", a->max_cases,
                  fmt::format("Refuse a scenario whose matrix expands to more cases than "
                              "this (at most {} are built for one scenario, whatever this says)",
                              scenario::max_built_cases))
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{UINT64_MAX}))
      ->capture_default_str();
  sub->add_option("--rank-timeout", a->rank_timeout_s,
                  "Under mpirun, srun or torchrun: how long a rank waits for the others before "
                  "it declares one lost and stops the launch (seconds; 0 = twice the longest "
                  "case timeout plus a minute)")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  sub->add_flag("--quiet,-q", a->quiet,
                "No progress or log lines on stderr (by default, when stderr is not a "
                "terminal, one line per finished case)");
  return [a] { return run(*a); };
}

}  // namespace pinbench::app
