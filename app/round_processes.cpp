// Rounds of `run --repeat` in processes of their own; see round_processes.hpp.
#include "round_processes.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "result/result_io.hpp"

extern char** environ;

namespace pinbench::app {

const std::array<std::string_view, 9> options_rounds_set_themselves{
    "--backend",    // resolved here, so that every round measures the same device
    "--out",        // each round writes a scratch result; this process writes --out
    "--format",     // the round's stdout goes nowhere
    "--snapshot",   // the first round's process writes it
    "--repeat",     // given with --round
    "--rounds-in",  // only this process starts rounds
    "--round",      // which round the process is
    "--quiet",      // rounds are always quiet; this process reports their progress
    "--plan-fingerprint",
};

std::vector<std::string> round_run_args(const CLI::App& run, std::string_view backend) {
  std::vector<std::string> out{"run"};
  for (const CLI::Option* o : run.get_options()) {
    if (o->count() == 0 || (o->get_lnames().empty() && !o->get_positional())) continue;
    if (o->get_positional()) {
      out.insert(out.end(), o->results().begin(), o->results().end());
      continue;
    }
    const std::string name = "--" + o->get_lnames().front();
    if (std::find(options_rounds_set_themselves.begin(), options_rounds_set_themselves.end(),
                  name) != options_rounds_set_themselves.end())
      continue;
    if (o->get_expected_min() == 0) {
      // A flag, as given: a value typed with it ("--discard-on-throttle=false") goes along, or
      // the bare flag would turn it on.
      for (const auto& value : o->results())
        out.push_back(value.empty() ? name : name + "=" + value);
      continue;
    }
    for (const auto& value : o->results()) {
      out.push_back(name);
      out.push_back(value);
    }
  }
  out.emplace_back("--backend");
  out.emplace_back(backend);
  return out;
}

namespace {

namespace fs = std::filesystem;

// A private folder for the rounds' result files, removed with everything in it.
class scratch_dir {
 public:
  scratch_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/pinbench-rounds-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw environment_error("cannot make a folder for the rounds in " + tmpl + ": " +
                              std::strerror(errno));
    path_ = tmpl;
  }
  ~scratch_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  [[nodiscard]] const fs::path& path() const noexcept { return path_; }

 private:
  fs::path path_;
};

// Starts `argv` with stdout on /dev/null (the round's table is not shown; its result is read).
pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, args.front().c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw environment_error("cannot start a round (" + args.front() + "): " + std::strerror(rc));
  return pid;
}

// Waits for the round, passing a stop (Ctrl-C, SIGTERM, SIGHUP) on to it once, as SIGTERM. Returns
// its exit code (128 + signal).
int wait_for(pid_t pid) {
  bool forwarded = false;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      continue;
    }
    if (done < 0 && errno != EINTR)
      throw environment_error(std::string("lost a round's process: ") + std::strerror(errno));
    if (!forwarded && interrupt_requested()) {
      // SIGTERM, whatever stopped this process: a Ctrl-C at the terminal reached the round
      // too (same process group), and a second SIGINT would end it without its result.
      ::kill(pid, SIGTERM);
      forwarded = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

result::run_result run_rounds_in_processes(const round_process_plan& plan) {
  scratch_dir dir;
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<result::run_result> rounds;
  bool interrupted = false;
  for (std::uint32_t r = 0; r < plan.rounds && !interrupt_requested(); ++r) {
    const std::string out = (dir.path() / fmt::format("round-{}.json", r)).string();
    std::vector<std::string> args{self};
    args.insert(args.end(), plan.run_args.begin(), plan.run_args.end());
    for (const auto& a :
         {std::string("--repeat"), std::to_string(plan.rounds), std::string("--round"),
          std::to_string(r), std::string("--out"), out, std::string("--plan-fingerprint"),
          plan.fingerprint, std::string("--quiet")})
      args.push_back(a);
    if (r == 0 && !plan.snapshot.empty()) {
      args.emplace_back("--snapshot");
      args.push_back(plan.snapshot);
    }
    const std::int64_t t0 = now_ns();
    const int code = wait_for(spawn(args));
    // 0 and 1 (a failed case) leave a whole result; 130, 143 or 129 (a stop signal) one with
    // what the round completed.
    const bool stopped = is_interrupted_exit_code(code);
    if (code != 0 && code != 1 && !stopped)
      throw environment_error(fmt::format(
          "round {} of {} (a pinbench process of its own) exited with {}{}", r + 1, plan.rounds,
          code, code == exit_input ? ": it refused its input (the line above says why)" : ""));
    if (!fs::exists(out)) {
      // A round ended by the signal before it could install its handler has nothing to keep.
      if (stopped) {
        interrupted = true;
        break;
      }
      throw environment_error(fmt::format("round {} of {} wrote no result", r + 1, plan.rounds));
    }
    rounds.push_back(result::read_result_file(out));
    interrupted = interrupted || rounds.back().interrupted || stopped;
    if (!plan.quiet)
      std::fprintf(stderr, "pinbench: round %u of %u (its own process): %s (%.1f s)\n", r + 1,
                   plan.rounds, stopped ? "interrupted" : "done",
                   static_cast<double>(now_ns() - t0) / 1e9);
    if (stopped) break;
  }
  if (rounds.empty()) {
    result::run_result none;
    none.interrupted = true;
    return none;
  }
  auto merged = result::merge_runs(std::move(rounds));
  merged.interrupted = interrupted || interrupt_requested();
  return merged;
}

}  // namespace pinbench::app
