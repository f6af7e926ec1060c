// Faults and limits through the pinbench executable: device memory that runs out, pinned memory
// refused (fault switch and a real RLIMIT_MEMLOCK), a worker that throws, Ctrl-C at random
// points, outputs that cannot be written, a full disk, and sizes and matrices that are too big.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "skip.hpp"
#include "support.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using pinbench::testing::fresh_dir;
using pinbench::testing::outcome;
using pinbench::testing::read_text;
using pinbench::testing::run_pinbench;

namespace {

using clock_type = std::chrono::steady_clock;

// Sanitizer builds run slower; their runs raise this (PINBENCH_TEST_TIME_SCALE=5, say).
double time_scale() {
  const char* v = std::getenv("PINBENCH_TEST_TIME_SCALE");
  const double s = v != nullptr ? std::atof(v) : 1.0;
  return s >= 1 ? s : 1.0;
}

// Runs a shell command line and captures exit code, stdout and stderr (as run_pinbench does,
// for commands that wrap pinbench: prlimit, setpriv, unshare).
outcome run_shell(const std::string& cmd) {
  const fs::path err_file =
      fs::temp_directory_path() / ("pinbench-faults-test.stderr." + std::to_string(::getpid()));
  outcome o;
  FILE* p = ::popen((cmd + " 2>" + err_file.string()).c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) o.out.append(buf, n);
  const int status = ::pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_file);
  o.err.assign(std::istreambuf_iterator<char>(e), {});
  fs::remove(err_file);
  return o;
}

bool have(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

std::size_t lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

// Leftovers of write_file_atomic or check_writable in a directory.
std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp.") != std::string::npos || name.starts_with(".pinbench-write-check"))
      out.push_back(name);
  }
  return out;
}

std::string scenario(const std::string& name, const std::string& kind, const std::string& params,
                     const std::string& matrix, const std::string& sampling) {
  return R"({"schema": "pinbench.scenario/1", "name": ")" + name + R"(", "kind": ")" + kind +
         R"(", "params": )" + params + (matrix.empty() ? "" : R"(, "matrix": )" + matrix) +
         R"(, "sampling": )" + sampling + "}";
}

// A few samples, then stop: cases of tens of milliseconds.
const std::string k_short =
    R"({"warmup": 0, "min_samples": 2, "max_samples": 3, "min_time": "0", "timeout": "1s"})";

const std::string k_small_loader =
    R"({"dataset": {"samples": 64, "sample_bytes": "1KiB", "cpu_per_sample": "1us"},
        "batch_size": 8, "compute_per_batch": "100us"})";

const std::string k_small_allocator =
    R"({"layers": 2, "activation_bytes": "1MiB", "parameter_bytes": "256KiB", "iterations": 2,
        "device_memory": "1GiB"})";

const char* k_quick_sampling =
    " --set sampling.warmup=0 --set sampling.min_samples=2 --set sampling.max_samples=2"
    " --set sampling.min_time=0";

struct logged_case {
  std::string scenario, id, status;
  bool operator<(const logged_case& o) const {
    return std::tie(scenario, id, status) < std::tie(o.scenario, o.id, o.status);
  }
};

// The per-case lines on stderr: "pinbench: [3/12] NAME ID: STATUS (0.04 s)[: MESSAGE]".
std::vector<logged_case> logged_cases(const std::string& err) {
  static const std::regex line(R"(^pinbench: \[\d+/\d+\] (\S+) (\S+): (ok|error|interrupted)\b)");
  std::vector<logged_case> out;
  std::istringstream in(err);
  std::string l;
  std::smatch m;
  while (std::getline(in, l))
    if (std::regex_search(l, m, line)) out.push_back({m[1], m[2], m[3]});
  return out;
}

std::vector<logged_case> result_cases(const json& j) {
  std::vector<logged_case> out;
  for (const auto& s : j.at("scenarios"))
    for (const auto& c : s.at("cases"))
      out.push_back({s.at("name").get<std::string>(), c.at("id").get<std::string>(),
                     c.at("status").get<std::string>()});
  return out;
}

// A child pinbench with stdout and stderr in files, so that the test can signal it.
struct child {
  pid_t pid = -1;
  clock_type::time_point started;
};

// `own_group`: the child leads a process group of its own, as a terminal's foreground job does
// (kill(-pid) then signals it and every process it starts, as Ctrl-C at a terminal does).
child spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err,
            bool own_group = false) {
  std::vector<std::string> argv{pinbench::testing::pinbench_exe()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const std::string out_s = out.string(), err_s = err.string();
  child c;
  c.started = clock_type::now();
  c.pid = ::fork();
  REQUIRE(c.pid >= 0);
  if (c.pid == 0) {
    if (own_group) ::setpgid(0, 0);
    const int o = ::open(out_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) ::_exit(126);
    ::dup2(o, STDOUT_FILENO);
    ::dup2(e, STDERR_FILENO);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  return c;
}

// Waits for the child; gives up (SIGKILL) after `limit`. The wait status, -1 when killed.
// Threads of process `pid` (/proc/PID/status), 0 when it is gone.
int threads_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  return 0;
}

// Waits until a child process of `parent` runs more than one thread: a round of `run --repeat`
// on the host backend is then inside its case (its streams are threads made by the case).
// False when none did within `limit`.
bool wait_until_child_runs_threads(pid_t parent, std::chrono::milliseconds limit) {
  const auto deadline = clock_type::now() + limit;
  while (clock_type::now() < deadline) {
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(it->path() / "stat");
      std::string text((std::istreambuf_iterator<char>(stat)), {});
      // "pid (comm) state ppid ...": the comm may hold spaces, the last ')' ends it.
      const auto close = text.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(text.substr(close + 1));
      std::string state;
      long ppid = 0;
      rest >> state >> ppid;
      if (ppid == parent && threads_of(std::atoi(name.c_str())) > 1) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int wait_for(const child& c, std::chrono::milliseconds limit) {
  const auto deadline = clock_type::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid) return status;
    if (clock_type::now() > deadline) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// `run --repeat 3` (each round a process of its own) of one transfer case that would take a
// minute, its result to dir/r.json; returns once the first round is inside that case. Not a fixed
// delay: on a loaded machine the round may take seconds to start its case.
child start_long_rounds(const fs::path& dir, bool own_group) {
  write(dir / "s.json",
        scenario("long", "transfer", R"({"bytes": "4MiB", "copies_per_sample": 8})", "",
                 R"({"warmup": 1, "min_samples": 1000000, "max_samples": 1000000,
                     "max_noise": 0, "min_time": "60s", "timeout": "60s"})"));
  const child c = spawn({"run", (dir / "s.json").string(), "--backend", "host", "--repeat", "3",
                         "--out", (dir / "r.json").string()},
                        dir / "stdout", dir / "stderr", own_group);
  REQUIRE(wait_until_child_runs_threads(
      c.pid, std::chrono::milliseconds(static_cast<int>(30'000 * time_scale()))));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return c;
}

// When the child has written its first byte to `file` (its stderr); now() after `limit`.
clock_type::time_point wait_for_output(const fs::path& file, std::chrono::milliseconds limit) {
  const auto deadline = clock_type::now() + limit;
  std::error_code ec;
  while (clock_type::now() < deadline) {
    const auto size = fs::file_size(file, ec);
    if (!ec && size > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return clock_type::now();
}

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

}  // namespace

// ---- 1. device memory that runs out ---------------------------------------------------------

TEST_CASE("faults: device memory runs out: counted by the allocator, a failed case elsewhere",
          "[app][faults]") {
  const fs::path dir = fresh_dir("faults-oom");
  const fs::path out = dir / "r.json";

  SECTION("allocator: the emulated device's capacity (--host-capacity) is exhausted") {
    write(dir / "a.json", scenario("oom-alloc", "allocator",
                                   R"({"layers": 4, "activation_bytes": "16MiB", "iterations": 2,
                       "device_memory": 0})",
                                   "", k_short));
    const auto o = run_pinbench("run " + (dir / "a.json").string() +
                                " --backend host --host-capacity 48MiB --out " + out.string());
    INFO(o.err);
    REQUIRE(o.code == 0);  // an OOM inside the workload is a result, not a failure
    const auto c = read_json(out)["scenarios"][0]["cases"][0];
    CHECK(c["status"] == "ok");
    CHECK(c["metrics"]["num_ooms"]["samples"][0].get<double>() > 0);
    CHECK(c["info"]["first_oom"].get<std::string>().find("out of memory") != std::string::npos);
    CHECK(c["info"]["ops"]["ooms"].get<int>() > 0);
  }

  SECTION("transfer and loader: the case fails with one line, the next case runs") {
    write(dir / "t.json", scenario("oom-transfer", "transfer", R"({"memory": "pinned"})",
                                   R"({"bytes": ["64KiB", "4MiB", "128KiB"]})", k_short));
    write(dir / "u.json", scenario("oom-loader", "loader", k_small_loader, "", k_short));
    // 1 MiB of device memory: 4 MiB copies cannot be had, nor the loader's 2 MiB segment.
    const auto o = run_pinbench("run " + dir.string() + " --backend host --host-capacity 1MiB" +
                                " --out " + out.string());
    INFO(o.err);
    CHECK(o.code == 1);
    const auto j = read_json(out);
    const auto& t = j["scenarios"][0]["cases"];
    REQUIRE(t.size() == 3);
    CHECK(t[0]["status"] == "ok");
    CHECK(t[1]["status"] == "error");
    CHECK(t[2]["status"] == "ok");  // the run went on after the failed case
    const auto msg = t[1]["message"].get<std::string>();
    CHECK(msg.find("out of device memory") != std::string::npos);
    CHECK(msg.find("capacity 1 MiB") != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
    const auto& l = j["scenarios"][1]["cases"];
    REQUIRE(l.size() == 1);
    CHECK(l[0]["status"] == "error");
    CHECK(l[0]["message"].get<std::string>().find("out of") != std::string::npos);
    CHECK(l[0]["message"].get<std::string>().find('\n') == std::string::npos);
    // The log names each failed case with its message, one line each.
    const auto log = logged_cases(o.err);
    REQUIRE(log.size() == 4);
    CHECK(log[1].status == "error");
    const auto at = o.err.find("oom-transfer bytes=4MiB: error (");
    REQUIRE(at != std::string::npos);
    const auto line = o.err.substr(at, o.err.find('\n', at) - at);
    CHECK(line.find("s): host backend: out of device memory") != std::string::npos);
  }
  fs::remove_all(dir);
}

// ---- 2. pinned memory refused ---------------------------------------------------------------

TEST_CASE("faults: --host-fault refuse-pinning: the run goes on unlocked, the result says so",
          "[app][faults]") {
  const fs::path dir = fresh_dir("faults-pin");
  const fs::path out = dir / "r.json";
  write(dir / "t.json", scenario("pin-transfer", "transfer", R"({"bytes": "256KiB"})",
                                 R"({"memory": ["pinned", "registered"]})", k_short));
  write(dir / "u.json", scenario("pin-loader", "loader", k_small_loader,
                                 R"({"pin_mode": ["per_batch", "ring"]})", k_short));
  const auto o = run_pinbench("run " + dir.string() +
                              " --backend host --host-fault refuse-pinning --out " + out.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  const auto j = read_json(out);
  for (const auto& s : j["scenarios"])
    for (const auto& c : s["cases"]) CHECK(c["status"] == "ok");
  const std::string warnings = j["environment"]["warnings"].dump();
  CHECK(warnings.find("--host-fault refuse-pinning") != std::string::npos);
  CHECK(warnings.find("not page-locked") != std::string::npos);

  const auto help = run_pinbench("run --help");
  CHECK(help.out.find("--host-fault") != std::string::npos);
  CHECK(help.out.find("refuse-pinning") != std::string::npos);
  const auto bad = run_pinbench("run builtin:transfer-modes --host-fault refuse-everything");
  CHECK(bad.code == 2);
  CHECK(lines(bad.err) == 1);
  fs::remove_all(dir);
}

TEST_CASE("faults: --host-fault gate-timeouts=N: void samples are taken again, or fail the case",
          "[app][faults]") {
  const fs::path dir = fresh_dir("faults-gate");
  const fs::path out = dir / "r.json";
  write(dir / "t.json",
        scenario("gated", "transfer", R"({"bytes": "256KiB", "memory": "pinned"})", "{}", k_short));
  // Two gates time out: those two samples are void and measured again; the case is ok.
  auto o = run_pinbench("run " + (dir / "t.json").string() +
                        " --backend host --host-fault gate-timeouts=2 --out " + out.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  auto j = read_json(out);
  const auto& c = j["scenarios"][0]["cases"][0];
  CHECK(c["status"] == "ok");
  CHECK(c["info"]["void_samples"] == 2);
  CHECK(c["warnings"].dump().find("void") != std::string::npos);
  CHECK(c["metrics"]["bandwidth"]["samples"].size() >= 2);
  // Both were taken again: nothing published stands behind them, so no run-level warning.
  CHECK(j["environment"]["warnings"].dump().find("not valid") == std::string::npos);

  // Every gate times out: after three void samples in a row the case fails with the reason,
  // and the run goes on to exit 1 with the result written.
  o = run_pinbench("run " + (dir / "t.json").string() +
                   " --backend host --host-fault gate-timeouts=1000 --out " + out.string());
  CHECK(o.code == 1);
  j = read_json(out);
  CHECK(j["scenarios"][0]["cases"][0]["status"] == "error");
  CHECK(j["scenarios"][0]["cases"][0]["message"].get<std::string>().find("gate was not released") !=
        std::string::npos);

  const auto bad = run_pinbench("run builtin:transfer-modes --host-fault gate-timeouts=0");
  CHECK(bad.code == 2);
  CHECK(lines(bad.err) == 1);
  fs::remove_all(dir);
}

TEST_CASE("faults: --host-fault no-host-register: registered cases are skipped with the reason",
          "[app][faults]") {
  const fs::path dir = fresh_dir("faults-register");
  const fs::path out = dir / "r.json";
  write(dir / "t.json", scenario("reg", "transfer", R"({"bytes": "256KiB"})",
                                 R"({"memory": ["pinned", "registered"]})", k_short));
  const auto o =
      run_pinbench("run " + (dir / "t.json").string() +
                   " --backend host --host-fault no-host-register --out " + out.string());
  INFO(o.err);
  REQUIRE(o.code == 0);  // skipped is neither passed nor failed
  CHECK(o.out.find("skipped") != std::string::npos);
  CHECK(o.out.find("1 skipped") != std::string::npos);
  const auto j = read_json(out);
  const auto& cases = j["scenarios"][0]["cases"];
  CHECK(cases[0]["status"] == "ok");
  CHECK(cases[1]["status"] == "skipped");
  CHECK(cases[1]["message"].get<std::string>().find("cudaDevAttrHostRegisterSupported") !=
        std::string::npos);
  // A skipped case reads back, and reports render it.
  const auto report = run_pinbench("report " + out.string() + " --md -");
  CHECK(report.code == 0);
  CHECK(report.out.find("skipped") != std::string::npos);
  fs::remove_all(dir);
}

// Tagged [mlock]: the sanitizers' runtimes replace mlock with a no-op, so the sanitizer builds
// leave this test out (tests/CMakeLists.txt) rather than pass it without a limit to hit.
TEST_CASE("faults: a real RLIMIT_MEMLOCK of 64 KiB: warnings name it, pinned_limit quotes it",
          "[app][faults][mlock]") {
  if (!have("prlimit") || !have("setpriv")) {
    pinbench::testing::skip_case("prlimit or setpriv (util-linux) is missing");
    return;
  }
  // As root, CAP_IPC_LOCK lets mlock ignore the limit: the child runs without it.
  const std::string wrap =
      "prlimit --memlock=65536:65536 setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock ";
  if (run_shell(wrap + "true").code != 0) {
    pinbench::testing::skip_case("setpriv cannot drop CAP_IPC_LOCK here");
    return;
  }
  const fs::path dir = fresh_dir("faults-memlock");
  const fs::path out = dir / "r.json";
  const fs::path in = dir / "in";  // scenarios only: a directory input loads every *.json
  fs::create_directories(in);
  write(in / "t.json", scenario("memlock-transfer", "transfer",
                                R"({"memory": "pinned", "bytes": "1MiB"})", "", k_short));
  write(in / "u.json", scenario("memlock-loader", "loader", k_small_loader, "", k_short));
  auto o = run_shell(wrap + pinbench::testing::pinbench_exe() + " run " + in.string() +
                     " --backend host --out " + out.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  auto j = read_json(out);
  for (const auto& s : j["scenarios"])
    for (const auto& c : s["cases"]) CHECK(c["status"] == "ok");
  const std::string warnings = j["environment"]["warnings"].dump();
  CHECK(warnings.find("RLIMIT_MEMLOCK 64 KiB") != std::string::npos);
  CHECK(j["environment"]["host"]["memlock_limit_bytes"] == 65536);

  // The loader's pinned_limit: the failed case quotes both limits.
  write(in / "u.json", scenario("memlock-loader", "loader",
                                k_small_loader.substr(0, k_small_loader.rfind('}')) +
                                    R"(, "pinned_limit": "4KiB"})",
                                "", k_short));
  fs::remove(in / "t.json");
  o = run_shell(wrap + pinbench::testing::pinbench_exe() + " run " + in.string() +
                " --backend host --out " + out.string());
  CHECK(o.code == 1);
  j = read_json(out);
  const auto msg = j["scenarios"][0]["cases"][0]["message"].get<std::string>();
  CHECK(msg.find("pinned_limit 4 KiB") != std::string::npos);
  CHECK(msg.find("RLIMIT_MEMLOCK 64 KiB") != std::string::npos);
  fs::remove_all(dir);
}

// ---- 3. a worker that throws ----------------------------------------------------------------

TEST_CASE("faults: a loader worker that throws fails its case, the next case runs, exit 1",
          "[app][faults]") {
  const fs::path dir = fresh_dir("faults-worker");
  const fs::path out = dir / "r.json";
  // Sample 40 exists only in the 64-sample dataset: that case fails, the 32-sample one not.
  write(dir / "u.json", scenario("worker", "loader",
                                 R"({"dataset": {"sample_bytes": "1KiB", "cpu_per_sample": "1us",
                                 "fail_at_sample": 40}, "batch_size": 8, "num_workers": 2,
                     "compute_per_batch": "100us"})",
                                 R"({"dataset.samples": [64, 32]})", k_short));
  const auto o = run_pinbench("run " + dir.string() + " --backend host --out " + out.string());
  INFO(o.err);
  CHECK(o.code == 1);
  const json cases = read_json(out)["scenarios"][0]["cases"];
  REQUIRE(cases.size() == 2);
  CHECK(cases[0]["status"] == "error");
  const auto msg = cases[0]["message"].get<std::string>();
  CHECK(msg.find("worker") != std::string::npos);
  CHECK(msg.find("sample 40") != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(cases[1]["status"] == "ok");
  CHECK(o.err.find("worker dataset.samples=64: error (") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("faults: a stuck loader worker fails its case after the timeout, nothing left behind",
          "[app][faults]") {
  const fs::path dir = fresh_dir("faults-stuck-worker");
  const fs::path out = dir / "r.json";
  // Sample 40 hangs in the 64-sample dataset only; 0.5 s of timeout, then the next case runs.
  write(dir / "u.json", scenario("stuck", "loader",
                                 R"({"dataset": {"sample_bytes": "1KiB", "cpu_per_sample": "1us",
                                 "hang_at_sample": 40}, "batch_size": 8, "num_workers": 2,
                     "worker_method": "process", "timeout": "500ms",
                     "compute_per_batch": "100us"})",
                                 R"({"dataset.samples": [64, 32]})", k_short));
  const auto o = run_pinbench("run " + dir.string() + " --backend host --out " + out.string());
  INFO(o.err);
  CHECK(o.code == 1);
  const json cases = read_json(out)["scenarios"][0]["cases"];
  REQUIRE(cases.size() == 2);
  CHECK(cases[0]["status"] == "error");
  const auto msg = cases[0]["message"].get<std::string>();
  CHECK(msg.find("timed out after 500") != std::string::npos);
  CHECK(msg.find("worker 1 (pid ") != std::string::npos);
  CHECK(msg.find("batch 5") != std::string::npos);
  CHECK(cases[1]["status"] == "ok");
  // The stuck worker was killed with its case: no process runs with this run's command line
  // (a forked worker keeps its parent's).
  std::size_t left = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    std::ifstream in(e.path() / "cmdline");
    const std::string cmdline((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    if (cmdline.find(out.string()) != std::string::npos) ++left;
  }
  CHECK(left == 0);
  fs::remove_all(dir);
}

// ---- 4. Ctrl-C ------------------------------------------------------------------------------

TEST_CASE("faults: SIGINT at random points: exit 130 within a second, every completed case kept",
          "[app][faults][signal][timing]") {
  const fs::path dir = fresh_dir("faults-sigint");
  const fs::path in = dir / "in";
  fs::create_directories(in);
  // Cases of about 60 ms each (max_noise 0 never converges): most signals land inside one.
  const std::string k_60ms =
      R"({"warmup": 0, "min_samples": 1, "max_samples": 100000, "max_noise": 0,
          "min_time": "60ms", "timeout": "60ms"})";
  write(in / "a.json", scenario("sig-alloc", "allocator", k_small_allocator,
                                R"({"allocator": ["caching", "raw"]})", k_60ms));
  write(in / "l.json",
        scenario("sig-loader", "loader", k_small_loader, R"({"num_workers": [0, 2]})", k_60ms));
  write(in / "t.json", scenario("sig-transfer", "transfer", R"({"copies_per_sample": 4})",
                                R"({"bytes": ["16KiB", "64KiB", "256KiB", "1MiB"],
                                    "memory": ["pageable", "pinned"]})",
                                k_60ms));
  const fs::path out = dir / "r.json", so = dir / "stdout", se = dir / "stderr";
  const std::vector<std::string> args{"run",  in.string(), "--backend",
                                      "host", "--out",     out.string()};
  const double scale = time_scale();
  const auto hard_limit = std::chrono::milliseconds(static_cast<int>(60'000 * scale));

  // Once through without a signal: how long the run takes, and that it logs every case.
  const child full = spawn(args, so, se);
  const int full_status = wait_for(full, hard_limit);
  const double full_s = seconds_since(full.started);
  INFO(read_text(se));
  REQUIRE(WIFEXITED(full_status));
  REQUIRE(WEXITSTATUS(full_status) == 0);
  REQUIRE(logged_cases(read_text(se)).size() == 12);

  const char* seed_env = std::getenv("PINBENCH_TEST_SEED");
  const auto seed = seed_env != nullptr
                        ? static_cast<std::uint32_t>(std::strtoul(seed_env, nullptr, 10))
                        : static_cast<std::uint32_t>(std::random_device{}());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> anywhere(0.0, full_s);
  // Right after start-up, three random points, and near the end. The points count from the
  // first line pinbench writes (after its SIGINT handler is in place): before main, a sanitizer
  // runtime alone can take longer than a short delay, and no program can catch a signal there.
  const std::vector<double> delays{0.0, anywhere(rng), anywhere(rng), anywhere(rng), full_s * 0.85};
  for (const double delay : delays) {
    // Printed, so that a failure can be replayed with PINBENCH_TEST_SEED.
    INFO("PINBENCH_TEST_SEED=" << seed << ", full run " << full_s << " s, SIGINT after " << delay
                               << " s");
    fs::remove(out);
    fs::remove(se);  // wait_for_output must see this run's first line, not the last run's
    const child c = spawn(args, so, se);
    const auto ready = wait_for_output(se, hard_limit);
    std::this_thread::sleep_until(ready + std::chrono::duration<double>(delay));
    const auto signalled = clock_type::now();
    REQUIRE(::kill(c.pid, SIGINT) == 0);
    const int status = wait_for(c, hard_limit);
    const double exit_s = seconds_since(signalled);
    const std::string err = read_text(se);
    INFO("stderr:\n" << err);
    REQUIRE(status != -1);
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 0 && logged_cases(err).size() == 12) {
      // This run was quicker than the first one and had ended before the signal was sent.
      WARN("the run ended before SIGINT after " << delay << " s");
      continue;
    }
    CHECK(WEXITSTATUS(status) == 130);
    CHECK(exit_s < 1.0 * scale);
    // The result parses and holds exactly the cases the log says completed.
    REQUIRE(fs::exists(out));
    const json j = read_json(out);
    CHECK(j["schema"] == "pinbench.result/1");
    auto logged = logged_cases(err);
    auto kept = result_cases(j);
    std::sort(logged.begin(), logged.end());
    std::sort(kept.begin(), kept.end());
    CHECK(logged.size() == kept.size());
    CHECK(std::equal(logged.begin(), logged.end(), kept.begin(), kept.end(),
                     [](const logged_case& a, const logged_case& b) {
                       return a.scenario == b.scenario && a.id == b.id && a.status == b.status;
                     }));
    if (kept.size() < 12) CHECK(j["interrupted"] == true);
    CHECK(temp_files(dir).empty());
  }
  fs::remove_all(dir);
}

namespace {

// The processes whose parent is `parent` now (from /proc/PID/stat's fourth field).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const auto close = line.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// Shared-memory segments a loader worker process named in /dev/shm ("pinbench-PID-N").
std::size_t shm_segments_of(pid_t worker) {
  const std::string prefix = fmt::format("pinbench-{}-", worker);
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev/shm", ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  return n;
}

}  // namespace

TEST_CASE("faults: SIGINT inside a long case of each kind ends the run within a second",
          "[app][faults][signal][timing]") {
  const fs::path dir = fresh_dir("faults-sigint-long");
  // Cases that would sample for a minute (max_noise 0 never converges).
  const std::string minute =
      R"({"warmup": 1, "min_samples": 1000000, "max_samples": 1000000, "max_noise": 0,
          "min_time": "60s", "timeout": "60s"})";
  const std::map<std::string, std::string> kinds{
      {"transfer",
       scenario("long", "transfer", R"({"bytes": "4MiB", "copies_per_sample": 8})", "", minute)},
      {"loader", scenario("long", "loader",
                          R"({"dataset": {"samples": 4096, "sample_bytes": "4KiB",
                                          "cpu_per_sample": "20us", "source": "file"},
                              "batch_size": 16})",
                          "", minute)},
      {"allocator",
       scenario("long", "allocator",
                R"({"workload": "random", "count": 200000, "max_bytes": "4MiB"})", "", minute)},
  };
  const double scale = time_scale();
  std::mt19937 rng(7);
  for (const auto& [kind, text] : kinds) {
    const double delay = std::uniform_real_distribution<double>(0.3, 0.8)(rng) * scale;
    INFO(kind << ", SIGINT after " << delay << " s");
    write(dir / "s.json", text);
    const fs::path out = dir / "r.json";
    fs::remove(out);
    const child c =
        spawn({"run", (dir / "s.json").string(), "--backend", "host", "--out", out.string()},
              dir / "stdout", dir / "stderr");
    // The loader's worker processes (its default): Ctrl-C must stop them with pinbench. They
    // start after the dataset's files are written, which a sanitizer tree on a loaded machine
    // can take seconds over: wait for them, then for the random delay.
    std::vector<pid_t> workers;
    if (kind == "loader") {
      const auto give_up = clock_type::now() + std::chrono::duration<double>(20.0 * scale);
      while ((workers = children_of(c.pid)).empty() && clock_type::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      REQUIRE(!workers.empty());
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    for (const pid_t w : children_of(c.pid))  // a new epoch may have started new ones
      if (std::find(workers.begin(), workers.end(), w) == workers.end()) workers.push_back(w);
    const auto signalled = clock_type::now();
    REQUIRE(::kill(c.pid, SIGINT) == 0);
    const int status = wait_for(c, std::chrono::milliseconds(static_cast<int>(30'000 * scale)));
    const double exit_s = seconds_since(signalled);
    INFO(read_text(dir / "stderr"));
    REQUIRE(status != -1);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    CHECK(exit_s < 1.0 * scale);
    for (const pid_t w : workers) {
      INFO("worker process " << w);
      CHECK((::kill(w, 0) != 0 && errno == ESRCH));
      CHECK(shm_segments_of(w) == 0);
    }
    const json j = read_json(out);
    CHECK(j["interrupted"] == true);
    for (const auto& c2 : j["scenarios"][0]["cases"]) CHECK(c2["status"] == "interrupted");
  }
  fs::remove_all(dir);
}

TEST_CASE("faults: SIGINT during run --repeat with rounds in processes: exit 130, round kept",
          "[app][faults][signal][timing]") {
  const fs::path dir = fresh_dir("faults-sigint-rounds");
  const double scale = time_scale();
  const fs::path out = dir / "r.json";
  const child c = start_long_rounds(dir, /*own_group=*/false);
  const auto signalled = clock_type::now();
  REQUIRE(::kill(c.pid, SIGINT) == 0);  // the parent only: it passes the signal on
  const int status = wait_for(c, std::chrono::milliseconds(static_cast<int>(30'000 * scale)));
  const double exit_s = seconds_since(signalled);
  INFO(read_text(dir / "stderr"));
  REQUIRE(status != -1);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(exit_s < 2.0 * scale);
  const json j = read_json(out);
  CHECK(j["interrupted"] == true);
  REQUIRE(j["scenarios"][0]["cases"].size() == 1);
  CHECK(j["scenarios"][0]["cases"][0]["status"] == "interrupted");
  CHECK(read_text(dir / "stderr").find("round 1 of 3 (its own process): interrupted") !=
        std::string::npos);
  fs::remove_all(dir);
}

// ---- 5. an output that cannot be written ----------------------------------------------------

TEST_CASE("faults: an input that is a FIFO or a device is exit 2 at once, never waited on",
          "[app][faults]") {
  const fs::path dir = fresh_dir("faults-fifo");
  const fs::path fifo = dir / "s.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // `timeout` ends a pinbench that waits for a writer: exit 124 instead of a hung test.
  const std::string exe = "timeout 30 " + pinbench::testing::pinbench_exe();
  auto o = run_shell(exe + " validate " + fifo.string());
  CHECK(o.code == 2);
  CHECK(o.err == "pinbench: error: " + fifo.string() +
                     ": is a FIFO (named pipe), expected a regular file\n");
  o = run_shell(exe + " run " + fifo.string() + " --backend host --out " +
                (dir / "r.json").string());
  CHECK(o.code == 2);
  CHECK(o.err.find("is a FIFO") != std::string::npos);
  o = run_shell(exe + " validate /dev/zero");
  CHECK(o.code == 2);
  CHECK(o.err == "pinbench: error: /dev/zero: is a character device, expected a regular file\n");
  // A result file may come through a pipe, but one without a writer reads as empty.
  o = run_shell(exe + " report " + fifo.string());
  CHECK(o.code == 2);
  CHECK(lines(o.err) == 1);
  CHECK(o.err.find(fifo.string() + ": not valid JSON") != std::string::npos);
  o = run_shell(exe + " compare " + fifo.string() + " " + fifo.string());
  CHECK(o.code == 2);
  CHECK(o.err.find(fifo.string() + ": not valid JSON") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("faults: an output path that cannot be written is exit 2 before anything is measured",
          "[app][faults]") {
  const fs::path dir = fresh_dir("faults-out");
  write(dir / "file", "x");
  // A case that would sample for a minute if it ran.
  const std::string slow =
      " --backend host --set sampling.min_time=60s --set sampling.max_noise=0"
      " --set sampling.max_samples=1000000 --set sampling.timeout=60s";
  const std::vector<std::pair<std::string, std::string>> paths{
      {(dir / "file" / "r.json").string(), "is not a directory"},
      {(dir / "missing" / "r.json").string(), "does not exist"},
      {dir.string(), "is a directory"},
      {"/proc/self/r.json", "cannot write"},
  };
  for (const auto& [path, expect] : paths) {
    for (const std::string opt : {"--out", "--snapshot"}) {
      INFO(opt << " " << path);
      const auto t0 = clock_type::now();
      const auto o = run_pinbench("run builtin:transfer-modes " + opt + " " + path + slow);
      CHECK(o.code == 2);
      CHECK(lines(o.err) == 1);
      CHECK(o.err.find(path) != std::string::npos);
      CHECK(o.err.find(expect) != std::string::npos);
      CHECK(o.out.empty());                          // no table: nothing was measured
      CHECK(seconds_since(t0) < 20 * time_scale());  // a measured case would take a minute
    }
  }
  CHECK(temp_files(dir).empty());
  fs::remove_all(dir);
}

// ---- 6. a full disk -------------------------------------------------------------------------

TEST_CASE("faults: a result that cannot be saved: exit 3, the table shown, the old file intact",
          "[app][faults]") {
  const fs::path dir = fresh_dir("faults-full");
  const fs::path out = dir / "r.json";
  const std::string run_args =
      std::string(" run builtin:transfer-modes --backend host --set bytes=64KiB") +
      k_quick_sampling + " --out ";

  SECTION("/dev/full: ENOSPC") {
    const auto o = run_pinbench(run_args + "/dev/full");
    CHECK(o.code == 3);
    CHECK(o.out.find("transfer-modes") != std::string::npos);  // what was measured is shown
    CHECK(o.err.find("/dev/full: write failed: No space left on device") != std::string::npos);
  }

  SECTION("a file size limit (prlimit --fsize): EFBIG, not a SIGXFSZ kill") {
    if (!have("prlimit")) {
      WARN("prlimit (util-linux) is missing: the file size limit test is skipped");
      return;
    }
    write(out, "the old result\n");
    // Stderr goes to a file, also under the limit: 16 KiB leaves room for it, not the result.
    const auto o = run_shell("prlimit --fsize=16384 " + pinbench::testing::pinbench_exe() +
                             run_args + out.string() +
                             " --set sampling.min_samples=200"
                             " --set sampling.max_samples=200");
    INFO(o.err);
    CHECK(o.code == 3);
    CHECK(o.out.find("transfer-modes") != std::string::npos);
    CHECK(o.err.find(out.string() + ": write failed: File too large") != std::string::npos);
    CHECK(o.err.find("previous file is unchanged") != std::string::npos);
    CHECK(read_text(out) == "the old result\n");
    CHECK(temp_files(dir).empty());
  }

  SECTION("a tiny tmpfs in a private mount namespace: ENOSPC") {
    if (!have("unshare") ||
        run_shell("unshare -rm sh -c 'mount -t tmpfs -o size=8k tmpfs " + dir.string() + "'")
                .code != 0) {
      WARN("unshare -rm with a tmpfs mount is not permitted here: the tmpfs test is skipped");
      return;
    }
    const fs::path mnt = dir / "mnt";
    fs::create_directories(mnt);
    // Two pages: the old file takes one, the result needs more than the other.
    const std::string result = (mnt / "r.json").string();
    write(dir / "script.sh",
          "mount -t tmpfs -o size=8k tmpfs " + mnt.string() + " || exit 99\n" +
              "printf 'the old result\\n' > " + result + "\n" + pinbench::testing::pinbench_exe() +
              run_args + result + "\nrc=$?\ncp " + result + " " + (dir / "after").string() +
              "\nls -A " + mnt.string() + " > " + (dir / "listing").string() + "\nexit $rc\n");
    const auto o = run_shell("unshare -rm sh " + (dir / "script.sh").string());
    INFO(o.err);
    CHECK(o.code == 3);
    CHECK(o.out.find("transfer-modes") != std::string::npos);
    CHECK(o.err.find("No space left on device") != std::string::npos);
    CHECK(read_text(dir / "after") == "the old result\n");
    CHECK(read_text(dir / "listing") == "r.json\n");  // no temporary file left behind
  }
  fs::remove_all(dir);
}

// ---- 7. limits ------------------------------------------------------------------------------

TEST_CASE("limits: 1TiB sizes fail their case (never mapped), overflowing sizes are exit 2",
          "[app][faults][limits]") {
  const fs::path dir = fresh_dir("faults-huge");
  const fs::path out = dir / "r.json";
  const std::string base = " --backend host --out " + out.string() + std::string(k_quick_sampling);

  SECTION("transfer bytes=1TiB, also with a device capacity that would allow it") {
    write(dir / "t.json",
          scenario("huge", "transfer", "{}", R"({"bytes": ["1TiB", "64KiB"]})", k_short));
    for (const std::string capacity : {"", " --host-capacity 2TiB"}) {
      INFO(capacity);
      const auto t0 = clock_type::now();
      const auto o = run_pinbench("run " + (dir / "t.json").string() + base + capacity);
      CHECK(o.code == 1);
      CHECK(seconds_since(t0) < 30 * time_scale());
      const json cases = read_json(out)["scenarios"][0]["cases"];
      REQUIRE(cases.size() == 2);
      CHECK(cases[0]["status"] == "error");
      CHECK(cases[0]["message"].get<std::string>().find("1 TiB") != std::string::npos);
      CHECK(cases[1]["status"] == "ok");
    }
  }

  SECTION("loader batches of a terabyte; allocator requests of a terabyte") {
    const auto o = run_pinbench("run builtin:loader-workers" + base +
                                " --set dataset.sample_bytes=1GiB --set batch_size=1024"
                                " --set num_workers=2");
    CHECK(o.code == 1);
    const json l = read_json(out)["scenarios"][0]["cases"][0];
    CHECK(l["status"] == "error");
    CHECK(l["message"].get<std::string>().find("host memory") != std::string::npos);

    const auto a = run_pinbench("run builtin:allocator-caching-vs-raw" + base +
                                " --set activation_bytes=1TiB --set layers=2 --set iterations=1");
    INFO(a.err);
    CHECK(a.code == 0);  // the allocator counts the OOMs: a result
    const json allocator = read_json(out);
    for (const auto& c : allocator["scenarios"][0]["cases"]) {
      CHECK(c["status"] == "ok");
      CHECK(c["metrics"]["num_ooms"]["samples"][0].get<double>() > 0);
    }
  }

  SECTION("sizes beyond the schema or beyond 64 bits are refused at load") {
    for (const std::string set : {"bytes=2TiB", "bytes=18446744073709551616",
                                  "bytes=99999999999999999999TiB", "bytes=1e30", "bytes=-1"}) {
      INFO(set);
      const auto o = run_pinbench("run builtin:transfer-modes --set " + set + base);
      CHECK(o.code == 2);
      CHECK(lines(o.err) == 1);
      CHECK(o.err.find("bytes") != std::string::npos);
      CHECK_FALSE(fs::exists(out));
    }
    const auto o =
        run_pinbench("run builtin:loader-workers --set dataset.sample_bytes=1TiB" + base);
    CHECK(o.code == 2);
    CHECK(o.err.find("<= 1GiB") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("limits: a matrix of millions of cases is refused with its exact count",
          "[app][faults][limits]") {
  const fs::path dir = fresh_dir("faults-matrix");
  const auto values = [](int n, int from) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += (i > 0 ? ", " : "") + std::to_string(from + i);
    return s + "]";
  };
  // 1000 x 1000 = 1,000,000 cases.
  write(dir / "million.json", scenario("million", "transfer", "{}",
                                       R"({"bytes": )" + values(1000, 4096) +
                                           R"(, "copies_per_sample": )" + values(1000, 1) + "}",
                                       k_short));
  // Seven axes of 1000 values: 10^21 cases, beyond 64 bits.
  std::string seven = "{";
  for (const char* p : {"dataset.samples", "dataset.sample_bytes", "dataset.burst_every",
                        "dataset.fail_at_sample", "batch_size", "epochs", "batches"})
    seven += std::string(seven.size() > 1 ? ", " : "") + "\"" + p + "\": " + values(1000, 1);
  write(dir / "huge.json", scenario("huge", "loader", "{}", seven + "}", k_short));
  // 40 x 40 = 1600 cases, for --max-cases.
  write(dir / "some.json", scenario("some", "transfer", "{}",
                                    R"({"bytes": )" + values(40, 4096) +
                                        R"(, "copies_per_sample": )" + values(40, 1) + "}",
                                    k_short));

  for (const std::string cmd : {"run", "validate"}) {
    INFO(cmd);
    const auto o = run_pinbench(cmd + " " + (dir / "million.json").string() +
                                (cmd == "run" ? " --out " + (dir / "r.json").string() : ""));
    CHECK(o.code == 2);
    CHECK(lines(o.err) == 1);
    CHECK(o.err.find("million.json: matrix: expands to 1000000 cases (1000 bytes x 1000 "
                     "copies_per_sample), more than the limit of 100000") != std::string::npos);
    CHECK(o.err.find("--max-cases") != std::string::npos);
    CHECK(o.out.empty());
  }
  auto o = run_pinbench("validate " + (dir / "huge.json").string());
  CHECK(o.code == 2);
  CHECK(o.err.find("expands to 1000000000000000000000 cases") != std::string::npos);
  o = run_pinbench("validate " + (dir / "huge.json").string() +
                   " --max-cases 18446744073709551615");
  CHECK(o.code == 2);  // more than any limit can allow
  CHECK(o.err.find("1000000000000000000000") != std::string::npos);

  o = run_pinbench("validate " + (dir / "some.json").string() + " --max-cases 1000");
  CHECK(o.code == 2);
  CHECK(o.err.find("expands to 1600 cases") != std::string::npos);
  CHECK(o.err.find("limit of 1000;") != std::string::npos);
  o = run_pinbench("validate " + (dir / "some.json").string() + " --max-cases 2000");
  CHECK(o.code == 0);
  CHECK(o.out.find("1600 case(s)") != std::string::npos);
  // --set drops an axis: 40 cases are within the default limit.
  o = run_pinbench("validate " + (dir / "some.json").string() +
                   " --set copies_per_sample=1 --max-cases 40");
  CHECK(o.code == 0);
  o = run_pinbench("run " + (dir / "some.json").string() + " --max-cases 0");
  CHECK(o.code == 2);
  fs::remove_all(dir);
}

TEST_CASE("limits: a raised --max-cases bounds memory: validate counts, run refuses at once",
          "[app][faults][limits]") {
  const fs::path dir = fresh_dir("faults-billion");
  const auto values = [](int n) {
    std::string s = "[";
    for (int i = 1; i <= n; ++i) s += (i > 1 ? ", " : "") + std::to_string(i);
    return s + "]";
  };
  // 1000 x 1000 x 1000 = 10^9 cases: at about 1 KiB each, a terabyte if they were built.
  write(dir / "billion.json",
        scenario("billion", "loader", "{}",
                 R"({"dataset.samples": )" + values(1000) + R"(, "batch_size": )" + values(1000) +
                     R"(, "batches": )" + values(1000) + "}",
                 k_short));
  const std::string file = (dir / "billion.json").string();
  auto t0 = clock_type::now();
  auto o = run_pinbench("validate " + file + " --max-cases 2000000000");
  INFO(o.err);
  CHECK(o.code == 0);
  CHECK(o.out.find("1000000000 case(s)") != std::string::npos);
  CHECK(o.out.find("counted only: run builds at most 1000000 cases of one scenario") !=
        std::string::npos);
  CHECK(seconds_since(t0) < 60 * time_scale());

  t0 = clock_type::now();
  o = run_pinbench("run " + file + " --max-cases 2000000000 --backend host --out " +
                   (dir / "r.json").string());
  CHECK(o.code == 2);
  CHECK(lines(o.err) == 1);
  CHECK(o.err.find("billion.json: matrix: expands to 1000000000 cases (1000 dataset.samples x "
                   "1000 batch_size x 1000 batches), more than pinbench builds for one scenario "
                   "(1000000, whatever --max-cases says)") != std::string::npos);
  CHECK(seconds_since(t0) < 60 * time_scale());
  CHECK_FALSE(fs::exists(dir / "r.json"));
  // Within the default limit nothing changes: the count, then every case checked.
  o = run_pinbench("validate " + file + " --set batch_size=8 --set batches=1");
  CHECK(o.code == 0);
  CHECK(o.out.find("1000 case(s)") != std::string::npos);
  CHECK(o.out.find("counted only") == std::string::npos);
  fs::remove_all(dir);
}

// ---- 8. what a soak run compares ------------------------------------------------------------

TEST_CASE("the result records the process's peak RSS and open descriptors", "[app][faults]") {
  const fs::path dir = fresh_dir("faults-process");
  const fs::path out = dir / "r.json";
  const auto o = run_pinbench("run builtin:transfer-modes --backend host --set bytes=64KiB --out " +
                              out.string() + k_quick_sampling);
  REQUIRE(o.code == 0);
  const auto p = read_json(out)["process"];
  CHECK(p["peak_rss_bytes"].get<std::uint64_t>() > (1u << 20));
  CHECK(p["open_fds_at_end"].get<std::uint64_t>() >= 3);  // stdin, stdout, stderr at least
  CHECK(p["open_fds_at_end"].get<std::uint64_t>() < 64);
  fs::remove_all(dir);
}

// ---- 8. nothing lost, nothing overwritten -----------------------------------------------------

namespace {

// Eight cases of a second each (they sample until their timeout): a signal lands inside one.
std::string eight_cases() {
  return scenario("eight", "transfer", R"({"bytes": "64KiB"})",
                  R"({"direction": ["h2d", "d2h"], "copies_per_sample": [1, 2, 3, 4]})",
                  R"({"warmup": 0, "min_samples": 1000000, "max_samples": 1000000,
                      "max_noise": 0, "min_time": "1s", "timeout": "1s"})");
}

// What a stopped run kept: every case "ok" but the last, which the signal may have cut short
// ("interrupted"); the log's finished cases are exactly the result's.
void check_kept(const json& j, const std::string& err, const char* signal_name) {
  CHECK(j.value("interrupted", false));
  CHECK(j.value("interrupted_by", "") == std::string(signal_name));
  const auto kept = result_cases(j);
  REQUIRE(!kept.empty());
  CHECK(kept.front().status == "ok");  // signalled after a case and a half: one completed
  CHECK(kept.size() < 8);
  for (std::size_t i = 0; i + 1 < kept.size(); ++i) CHECK(kept[i].status == "ok");
  CHECK(logged_cases(err).size() == kept.size());
}

std::string file_mode(const fs::path& p) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o",
                static_cast<unsigned>(fs::status(p).permissions() & fs::perms::mask));
  return buf;
}

}  // namespace

TEST_CASE("faults: SIGTERM (twice, as timeout sends it) and SIGHUP keep what was measured",
          "[app][faults][signal][slow]") {
  const fs::path dir = fresh_dir("faults-sigterm");
  write(dir / "s.json", eight_cases());
  const fs::path out = dir / "r.json";
  const auto limit = std::chrono::milliseconds(static_cast<int>(60'000 * time_scale()));
  for (const auto& [signo, name, code] :
       {std::tuple{SIGTERM, "SIGTERM", 143}, std::tuple{SIGHUP, "SIGHUP", 129}}) {
    INFO(name);
    fs::remove(out);
    fs::remove(dir / "stderr");
    const child c =
        spawn({"run", (dir / "s.json").string(), "--backend", "host", "--out", out.string()},
              dir / "stdout", dir / "stderr");
    // A case and a half after the first line (the handler is in place by then): at least one
    // case completed, one cut short.
    std::this_thread::sleep_until(wait_for_output(dir / "stderr", limit) +
                                  std::chrono::milliseconds(1500));
    REQUIRE(::kill(c.pid, signo) == 0);
    if (signo == SIGTERM) REQUIRE(::kill(c.pid, signo) == 0);  // a second one does not kill it
    const int status = wait_for(c, limit);
    const std::string err = read_text(dir / "stderr");
    INFO(err);
    REQUIRE(status != -1);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == code);
    REQUIRE(fs::exists(out));
    check_kept(read_json(out), err, name);
    CHECK(err.find(std::string("interrupted by ") + name) != std::string::npos);
  }

  if (have("timeout")) {
    // As the issue's user runs it: `timeout` signals pinbench, then its process group.
    fs::remove(out);
    const auto o = run_shell(
        fmt::format("timeout --preserve-status -s TERM 3 {} run {} --backend host --out {}",
                    pinbench::testing::pinbench_exe(), (dir / "s.json").string(), out.string()));
    INFO(o.err);
    CHECK(o.code == 143);
    REQUIRE(fs::exists(out));  // 3 s: the handler is in place long before, even under ASan
    const json j = read_json(out);
    CHECK(j.value("interrupted", false));
    CHECK(j.value("interrupted_by", "") == std::string("SIGTERM"));
    CHECK(logged_cases(o.err).size() == result_cases(j).size());
  }

  {  // A signal ignored when pinbench starts (nohup) stays ignored.
    fs::remove(out);
    const auto o = run_shell(
        fmt::format("trap '' HUP; {} run {} --backend host --out {} --set sampling.timeout=100ms "
                    "--set sampling.min_time=100ms & pid=$!; sleep 0.5; kill -HUP $pid; wait $pid",
                    pinbench::testing::pinbench_exe(), (dir / "s.json").string(), out.string()));
    INFO(o.err);
    CHECK(o.code == 0);
    REQUIRE(fs::exists(out));
    CHECK_FALSE(read_json(out).value("interrupted", true));
    CHECK(result_cases(read_json(out)).size() == 8);
  }
  CHECK(temp_files(dir).empty());
  fs::remove_all(dir);
}

TEST_CASE(
    "faults: an output that is also an input, or another output, is exit 2 and files stay intact",
    "[app][faults][outputs]") {
  const fs::path dir = fresh_dir("faults-alias");
  write(dir / "s.json", eight_cases());
  fs::create_directories(dir / "scenarios");
  write(dir / "scenarios" / "t.json", eight_cases());
  const fs::path a = dir / "a.json", b = dir / "b.json";
  REQUIRE(run_pinbench("run builtin:transfer-modes --backend host --set bytes=64KiB -q --out " +
                       a.string() + k_quick_sampling)
              .code == 0);
  fs::copy_file(a, b);
  fs::create_directory_symlink(dir, dir / "again");
  fs::create_symlink(dir / "s.json", dir / "link.json");
  fs::create_hard_link(dir / "s.json", dir / "hard.json");
  fs::create_directories(dir / "history");
  fs::copy_file(a, dir / "history" / "1.json");
  const std::string s = (dir / "s.json").string();
  const std::string quick = " --backend host" + std::string(k_quick_sampling);
  // An allocator scenario replaying a trace: the trace is an input too.
  write(dir / "trace.json", R"({"schema": "pinbench.trace/1", "events": [
      {"op": "alloc", "id": 1, "size": 4096, "stream": 0}, {"op": "free", "id": 1}]})");
  write(dir / "replay.json",
        scenario("replay", "allocator", R"({"workload": "trace", "trace_file": "trace.json"})", "",
                 k_short));

  // Each: the command, and the two paths its one-line error must name.
  const std::vector<std::tuple<std::string, std::string, std::string>> refused{
      {"run " + s + quick + " --out " + s, "--out", "the scenario file"},
      {"run " + (dir / "replay.json").string() + quick + " --out " +
           (dir / "again" / "trace.json").string(),
       "--out", "the case input"},
      {"run " + s + quick + " --out " + (dir / "link.json").string(), "link.json", "s.json"},
      {"run " + s + quick + " --out " + (dir / "hard.json").string(), "hard.json", "s.json"},
      {"run " + (dir / "scenarios").string() + quick + " --out " +
           (dir / "again" / "scenarios" / "t.json").string(),
       "--out", "t.json"},
      {"run builtin:transfer-modes" + quick + " --out " + (dir / "x.json").string() +
           " --snapshot " + (dir / "again" / "x.json").string(),
       "--snapshot", "--out"},
      {"compare " + a.string() + " " + b.string() + " --out " + a.string(), "--out",
       "the baseline"},
      {"compare " + a.string() + " " + b.string() + " --md " + b.string(), "--md",
       "the current result"},
      {"compare " + (dir / "history").string() + " " + b.string() + " --junit " +
           (dir / "history" / "1.json").string(),
       "--junit", "the baseline"},
      {"report " + a.string() + " --html " + a.string(), "--html", "the result"},
      {"report " + a.string() + " --html " + (dir / "x.html").string() + " --md " +
           (dir / "x.html").string(),
       "--md", "--html"},
  };
  const std::string scenario_text = read_text(dir / "s.json");
  const std::string trace_text = read_text(dir / "trace.json");
  const std::string a_text = read_text(a), b_text = read_text(b),
                    history_text = read_text(dir / "history" / "1.json");
  for (const auto& [args, first, second] : refused) {
    INFO(args);
    const auto o = run_pinbench(args);
    INFO(o.err);
    CHECK(o.code == 2);
    CHECK(lines(o.err) == 1);
    CHECK(o.err.find(first) != std::string::npos);
    CHECK(o.err.find(second) != std::string::npos);
    CHECK(o.out.empty());
    CHECK(read_text(dir / "s.json") == scenario_text);
    CHECK(read_text(dir / "trace.json") == trace_text);
    CHECK(read_text(a) == a_text);
    CHECK(read_text(b) == b_text);
    CHECK(read_text(dir / "history" / "1.json") == history_text);
    CHECK_FALSE(fs::exists(dir / "x.json"));
    CHECK_FALSE(fs::exists(dir / "x.html"));
  }
  // The same file as baseline and current is an A/A comparison, not an output: allowed.
  CHECK(run_pinbench("compare " + a.string() + " " + a.string()).code == 0);
  CHECK(temp_files(dir).empty());
  fs::remove_all(dir);
}

TEST_CASE("faults: a replaced result keeps its mode, a new one the umask, a read-only one stays",
          "[app][faults][outputs]") {
  const fs::path dir = fresh_dir("faults-mode");
  const fs::path out = dir / "r.json";
  const std::string run = pinbench::testing::pinbench_exe() +
                          " run builtin:transfer-modes --backend host --set bytes=64KiB -q" +
                          k_quick_sampling + " --out " + out.string() + " >/dev/null";
  REQUIRE(run_shell("umask 077 && " + run).code == 0);
  CHECK(file_mode(out) == "0600");
  fs::permissions(out, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  REQUIRE(run_shell("umask 022 && " + run).code == 0);
  CHECK(file_mode(out) == "0640");
  fs::remove(out);
  REQUIRE(run_shell("umask 022 && " + run).code == 0);
  CHECK(file_mode(out) == "0644");

  // A file nobody may write is not replaced, even by root: exit 2 before anything is measured.
  fs::permissions(out, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string before = read_text(out);
  const auto o = run_shell(run);
  CHECK(o.code == 2);
  CHECK(o.err.find("read-only (mode 0444)") != std::string::npos);
  CHECK(read_text(out) == before);
  const auto r = run_pinbench("report " + out.string() + " --md " + out.string() + ".md");
  CHECK(r.code == 0);
  fs::permissions(dir / "r.json.md", fs::perms::owner_read);
  CHECK(run_pinbench("report " + out.string() + " --md " + out.string() + ".md").code == 2);
  CHECK(file_mode(out) == "0444");
  CHECK(temp_files(dir).empty());
  fs::remove_all(dir);
}

TEST_CASE("faults: a file made read-only after the check is not replaced: save_error (exit 3)",
          "[app][faults][outputs]") {
  const fs::path dir = fresh_dir("faults-save-error");
  const fs::path out = dir / "r.json";
  write(out, "old\n");
  pinbench::check_writable(out);
  fs::permissions(out, fs::perms::owner_read);
  CHECK_THROWS_AS(pinbench::write_file_atomic(out, "new\n"), pinbench::save_error);
  CHECK(read_text(out) == "old\n");
  CHECK(temp_files(dir).empty());
  fs::remove_all(dir);
}

TEST_CASE("faults: compare with nothing gated in common exits 3, and so do save failures",
          "[app][faults][compare]") {
  const fs::path dir = fresh_dir("faults-compare-empty");
  const fs::path a = dir / "a.json", b = dir / "b.json";
  REQUIRE(run_pinbench("run builtin:transfer-modes --backend host --set bytes=64KiB -q --out " +
                       a.string() + k_quick_sampling)
              .code == 0);
  REQUIRE(run_pinbench("run builtin:transfer-pin-on-the-fly --backend host --set bytes=64KiB -q "
                       "--out " +
                       b.string() + k_quick_sampling)
              .code == 0);
  const auto o = run_pinbench("compare " + a.string() + " " + b.string());
  CHECK(o.code == 3);
  CHECK(o.out.find("nothing to compare") != std::string::npos);
  CHECK(o.out.find("baseline: transfer-modes; current: transfer-pin-on-the-fly") !=
        std::string::npos);
  CHECK(run_pinbench("compare " + a.string() + " " + b.string() + " --allow-empty").code == 0);
  CHECK(run_pinbench("compare " + a.string() + " " + b.string() + " --fail-on never").code == 0);

  const auto full = run_pinbench("compare " + a.string() + " " + a.string() + " --out /dev/full");
  CHECK(full.code == 3);
  CHECK(full.err.find("/dev/full: write failed: No space left on device") != std::string::npos);
  CHECK(run_pinbench("report " + a.string() + " --md /dev/full").code == 3);
  fs::remove_all(dir);
}

TEST_CASE("faults: Ctrl-C at a terminal reaches the round too, and the round is still kept",
          "[app][faults][signal][slow]") {
  const fs::path dir = fresh_dir("faults-sigint-group");
  const fs::path out = dir / "r.json";
  const double scale = time_scale();
  const child c = start_long_rounds(dir, /*own_group=*/true);
  REQUIRE(::kill(-c.pid, SIGINT) == 0);  // pinbench and its round, at once
  const int status = wait_for(c, std::chrono::milliseconds(static_cast<int>(30'000 * scale)));
  INFO(read_text(dir / "stderr"));
  REQUIRE(status != -1);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  REQUIRE(fs::exists(out));
  const json j = read_json(out);
  CHECK(j["interrupted"] == true);
  REQUIRE(j["scenarios"].size() == 1);
  REQUIRE(j["scenarios"][0]["cases"].size() == 1);
  CHECK(j["scenarios"][0]["cases"][0]["status"] == "interrupted");
  fs::remove_all(dir);
}
