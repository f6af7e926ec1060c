// `pinbench run`: the command line, then a plan (every input loaded, checked and expanded
// once), then run::execute, then what the run shows and writes (run_output.hpp).
#include <algorithm>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/text.hpp"
#include "device/numa.hpp"
#include "device/platform.hpp"
#include "dist/communicator.hpp"
#include "round_processes.hpp"
#include "run/case_telemetry.hpp"
#include "run/execute.hpp"
#include "run/plan.hpp"
#include "run_args.hpp"
#include "run_output.hpp"

namespace pinbench::app {

namespace {

// Under a launch: how long a rank waits for the others when they first meet (rendezvous,
// connect, the same-inputs check): --rank-timeout, or two minutes (loading the inputs and
// opening the device, before the check, may take a while on a busy node).
dist::timeout first_meeting(const run_args& a) {
  if (a.rank_timeout_s > 0)
    return dist::timeout(
        std::max<std::int64_t>(1, static_cast<std::int64_t>(a.rank_timeout_s * 1000)));
  return std::chrono::minutes(2);
}

// A round's process (`--round`) plans again from the options it was given: it measures only
// what the process that started it planned.
void check_round_plan(const run_args& a, const std::string& fingerprint) {
  if (!a.round) return;
  if (a.plan_fingerprint.empty())
    throw input_error(
        {}, "--round",
        "is given by `run --repeat` to its rounds' processes, with --plan-fingerprint");
  if (a.plan_fingerprint != fingerprint)
    throw input_error(
        {}, "--plan-fingerprint",
        fmt::format("round {} of {} planned {} and the process that started it planned {}: the "
                    "round's command line or inputs differ from its (a scenario file changed "
                    "between the two?); nothing was measured",
                    *a.round + 1, a.repeat, fingerprint, a.plan_fingerprint));
}

int run_here(const CLI::App& cli, const run_args& a, const dist::launch_info& launch,
             dist::communicator& world) {
  const bool launched = world.size() > 1;
  const bool quiet = a.quiet || world.rank() != 0;  // rank 0 reports for every rank
  // Everything that can be wrong with the input is found before anything is measured.
  run::plan_settings settings{{},
                              a.seed,
                              a.max_cases,
                              a.repeat,
                              dist::timeout(static_cast<std::int64_t>(a.rank_timeout_s * 1000))};
  const run::plan plan = run::make_plan(a.inputs, a.sets, std::move(settings));
  if (a.snapshot == "-")
    throw input_error({}, "--snapshot", "expected a file path (snapshots are too big for stdout)");
  check_distinct_files(plan.input_files, {{"--out", a.out}, {"--snapshot", a.snapshot}});
  // PyTorch's viewer opens one snapshot: a pickle holds one case's.
  if (snapshot_as_pickle(a.snapshot) && plan.total_cases != 1)
    throw input_error({}, "--snapshot",
                      fmt::format("{} is a pickle, which holds one case's snapshot (what PyTorch's "
                                  "memory viewer opens), and the run has {} cases: run one case "
                                  "(a scenario of one, or --set to fix its matrix), or write JSON",
                                  a.snapshot, plan.total_cases));
  if (world.rank() == 0 && !a.out.empty()) check_writable(a.out);
  if (world.rank() == 0 && !a.snapshot.empty()) check_writable(a.snapshot);
  const bool in_processes = a.repeat > 1 && a.rounds_in == "processes" && !a.round;
  if (launched && in_processes)
    throw input_error({}, "--rounds-in",
                      "under a launcher the rounds run in the launched processes: add "
                      "--rounds-in one-process");
  // A node this machine does not have is bad input, found before anything is opened.
  const auto numa = device::parse_numa_request(a.numa, device::online_nodes());
  // One GPU per process of a node: under a launch the local rank picks it.
  const auto choice = device::parse_backend_choice(a.backend);
  if (!choice)
    throw input_error(
        {}, "--backend",
        "expected " + quoted_list(device::backend_choice_names()) + ", got \"" + a.backend + "\"");
  const auto platform =
      device::open_platform(*choice, device::parse_host_options(a.host_capacity, a.host_faults),
                            launched ? launch.local_rank : -1);

  run::execute_options x;
  x.platform = &platform;
  x.world = &world;
  x.launch = launch;
  x.first_meeting = first_meeting(a);
  x.platform_settings = {platform.name(), a.host_faults, a.host_capacity};
  // What a round must measure alike besides the plan and the platform: how its cases are
  // watched and placed.
  nlohmann::json round_settings = x.platform_settings;
  round_settings.push_back({a.telemetry_device, a.numa, a.discard_on_throttle});
  const std::string fingerprint = plan.fingerprint(round_settings);
  check_round_plan(a, fingerprint);
  x.measuring.command_line = command_line();
  x.measuring.want_snapshots = !a.snapshot.empty();
  x.measuring.only_round = a.round;
  x.measuring.telemetry_device = a.telemetry_device;
  x.measuring.discard_on_throttle = a.discard_on_throttle;
  x.measuring.numa = numa;
  auto progress = std::make_unique<progress_line>(!quiet);  // cleared before the table
  const case_log log(!quiet);
  x.measuring.on_case = [&](std::size_t i, std::size_t n, const std::string& s,
                            const std::string& id) { progress->on_case(i, n, s, id); };
  x.measuring.on_case_done = [&](std::size_t i, std::size_t n, const std::string& s,
                                 const result::case_result& c) { log.on_done(i, n, s, c); };
  if (in_processes)  // each round opens the device itself: this process holds none of it
    x.measure_elsewhere = [&] {
      return run_rounds_in_processes(
          {round_run_args(cli, platform.name()), a.repeat, a.snapshot, fingerprint, a.quiet});
    };
  x.on_start = [&] {
    if (quiet) return;
    const std::string rounds = a.repeat > 1 ? fmt::format(" x {} rounds{}", a.repeat,
                                                          in_processes ? " (a process each)" : "")
                                            : "";
    const std::string ranks = launched ? fmt::format(", {} ranks ({}, {})", world.size(),
                                                     to_string(launch.launcher), world.transport())
                                       : "";
    std::fprintf(stderr, "pinbench: %zu scenario(s), %llu case(s)%s on the %s backend%s%s\n",
                 plan.scenarios.size(), static_cast<unsigned long long>(plan.total_cases),
                 rounds.c_str(), std::string(platform.name()).c_str(),
                 platform.emulated() ? " (host emulation: no GPU figures)" : "", ranks.c_str());
  };
  run::outcome done = run::execute(plan, x);
  progress.reset();
  return report_outcome(done, {a.format, a.out, a.snapshot, in_processes, a.quiet, launched},
                        world);
}

int run(const CLI::App& cli, const run_args& a) {
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
    return run_here(cli, a, launch, *world);
  } catch (const dist::rank_lost_error& e) {
    // The others may be waiting in a collective: end the whole launch, with a non-zero code.
    world->abort(exit_environment,
                 fmt::format("pinbench: error: {}: stopping every rank", e.what()));
  }
  return exit_environment;  // not reached: abort ends the process
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
      ->check(CLI::IsMember(device::backend_choice_names()))
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
                  "Allocator cases: write each case's memory snapshot, taken at the end of its "
                  "workload with the whole trace, to this JSON file (torch.cuda.memory._snapshot() "
                  "structure); FILE.pickle: the one case's, as PyTorch pickles it, for its memory "
                  "viewer")
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
          [](const std::string& f) {
            device::backend_options scratch;
            return device::apply_host_fault(f, scratch);
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
  sub->add_option("--plan-fingerprint", a->plan_fingerprint, "")->group("");
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
  sub->add_option("--telemetry-device", a->telemetry_device,
                  "The GPU whose NVML telemetry (clocks, throttle reasons, power, link) each "
                  "case records: auto = the CUDA device measured (none on the host backend), "
                  "off, or an NVML device index")
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            return run::parse_telemetry_device(v)
                       ? std::string()
                       : "expected auto, off or an NVML device index, got \"" + v + "\"";
          },
          "auto|off|N"))
      ->capture_default_str();
  sub->add_flag("--discard-on-throttle", a->discard_on_throttle,
                "Throw away a sample taken while the watched GPU's clocks were throttled "
                "(power, thermal, HW slowdown) and take it again, as nvbench does; the count "
                "is in the case's telemetry");
  sub->add_option("--numa", a->numa,
                  "Transfer and loader cases: put host buffers and copying threads on this NUMA "
                  "node: auto = the GPU's (host backend: node 0), none = where the kernel puts "
                  "them, or a node number; every case records the node and whether it held")
      ->type_name("auto|none|N")
      ->capture_default_str();
  sub->add_flag("--quiet,-q", a->quiet,
                "No progress or log lines on stderr (by default, when stderr is not a "
                "terminal, one line per finished case)");
  return [a, sub] { return run(*sub, *a); };
}

}  // namespace pinbench::app
