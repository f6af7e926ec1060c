// Process workers (worker_method: process): they are processes (their own pids, memory read
// from their own smaps), started at every epoch or once with persistent_workers, and a worker
// that throws or dies fails the epoch with its message or signal, within a bounded time,
// leaving no process and no shared-memory segment behind.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "loader/dataset.hpp"
#include "loader/loader.hpp"
#include "loader/process_workers.hpp"
#include "loader_support.hpp"

using namespace pinbench;
using namespace pinbench::loader;
using namespace pinbench::loader::testing;

namespace {

loader_spec process_spec(int workers, pinning pin, std::size_t batch = 8) {
  loader_spec spec = make_loader_spec(workers, pin, batch);
  spec.method = worker_method::process;
  return spec;
}

// Consumes an epoch to its end; returns the batches delivered.
std::size_t drain_epoch(epoch& ep) {
  std::size_t n = 0;
  while (auto b = ep.next()) {
    ++n;
    ep.release(*b, nullptr);
  }
  return n;
}

bool process_exists(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno != ESRCH;
}

// This process's shared-memory segments still named in /dev/shm.
std::size_t segments_left() {
  const std::string prefix = "pinbench-" + std::to_string(::getpid()) + "-";
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  return n;
}

// No child of this process is left, running or unreaped.
bool no_children() {
  int status = 0;
  return ::waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD;
}

}  // namespace

TEST_CASE("process workers are processes, each with its own memory", "[loader][process]") {
  auto dev = host_backend();
  const dataset data(small_spec(256, 4096, 1'000));
  const loader_spec spec = process_spec(3, pinning::per_batch);
  auto pool = make_pool(pinning::per_batch, *dev, spec, data.sample_bytes());
  std::vector<process_memory> mem;
  {
    epoch ep(data, spec, 0, *dev, pool.get());
    CHECK(drain_epoch(ep) == 256 / 8);
    mem = ep.worker_memory();
  }
  REQUIRE(mem.size() == 3);
  std::set<pid_t> pids;
  for (const auto& m : mem) {
    pids.insert(m.pid);
    CHECK(m.pid != ::getpid());
    CHECK(m.rss_bytes > 0);
    CHECK(m.pss_bytes > 0);
    CHECK(m.pss_bytes <= m.rss_bytes);
    CHECK_FALSE(process_exists(m.pid));  // stopped with the epoch
  }
  CHECK(pids.size() == 3);
  const auto self = read_process_memory();
  REQUIRE(self.has_value());
  CHECK(self->pid == ::getpid());
  CHECK(self->pss_bytes > 0);
  CHECK(no_children());
  CHECK(segments_left() == 0);
}

TEST_CASE("process workers start at every epoch, or once with persistent_workers",
          "[loader][process]") {
  auto dev = host_backend();
  const dataset data(small_spec(64, 512));
  for (const bool persistent : {false, true}) {
    CAPTURE(persistent);
    loader_spec spec = process_spec(2, pinning::off);
    spec.persistent_workers = persistent;
    kept_workers kept;
    std::vector<int> starts;
    std::vector<std::set<pid_t>> pids;
    for (std::uint64_t e = 0; e < 3; ++e) {
      epoch ep(data, spec, e, *dev, nullptr, &kept);
      CHECK(drain_epoch(ep) == 64 / 8);
      starts.push_back(ep.stats().worker_starts);
      std::set<pid_t> p;
      for (const auto& m : ep.worker_memory()) p.insert(m.pid);
      pids.push_back(p);
    }
    if (persistent) {
      CHECK(starts == std::vector<int>{1, 0, 0});
      CHECK(pids[0] == pids[2]);
      REQUIRE(kept.pool != nullptr);
      CHECK(process_exists(kept.pool->pid(0)));
      kept.pool.reset();
    } else {
      CHECK(starts == std::vector<int>{1, 1, 1});
      CHECK(pids[0] != pids[1]);
      CHECK(kept.pool == nullptr);
    }
    CHECK(no_children());
  }
}

TEST_CASE("persistent workers survive an epoch abandoned mid-way", "[loader][process]") {
  auto dev = host_backend();
  const dataset data(small_spec(160, 512));
  loader_spec spec = process_spec(2, pinning::per_batch);
  spec.persistent_workers = true;
  auto pool = make_pool(pinning::per_batch, *dev, spec, data.sample_bytes());
  kept_workers kept;
  {
    epoch ep(data, spec, 0, *dev, pool.get(), &kept);
    auto b = ep.next();  // the queue fills; the rest of the epoch is abandoned
    REQUIRE(b.has_value());
    ep.release(*b, nullptr);
  }
  epoch next(data, spec, 1, *dev, pool.get(), &kept);
  CHECK(next.stats().worker_starts == 0);
  CHECK(drain_epoch(next) == 160 / 8);
}

TEST_CASE("a process worker that throws fails the epoch with its message, nothing left behind",
          "[loader][process]") {
  const pinning pin = GENERATE(pinning::off, pinning::per_batch);
  auto dev = host_backend(64_MiB);
  dataset_spec ds = small_spec(200, 128, 1'000);
  ds.fail_at_sample = 37;
  const dataset data(ds);
  const loader_spec spec = process_spec(2, pin);
  auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
  std::string message;
  must_finish("a failing process worker", [&] {
    epoch ep(data, spec, 0, *dev, pool.get());
    try {
      (void)drain_epoch(ep);
    } catch (const loader_error& e) {
      message = e.what();
    }
  });
  CHECK_THAT(message, Catch::Contains("worker") && Catch::Contains("37"));
  CHECK(no_children());
  CHECK(segments_left() == 0);
}

TEST_CASE("a process worker that dies fails the epoch with its signal", "[loader][process]") {
  auto dev = host_backend(64_MiB);
  // 5 ms per sample: the worker is still busy when it is killed.
  const dataset data(small_spec(64, 256, 5'000'000));
  const loader_spec spec = process_spec(2, pinning::off, 4);
  std::string message;
  must_finish("a killed process worker", [&] {
    epoch ep(data, spec, 0, *dev, nullptr);
    auto b = ep.next();
    REQUIRE(b.has_value());
    ep.release(*b, nullptr);
    const auto mem = ep.worker_memory();
    REQUIRE_FALSE(mem.empty());
    ::kill(mem.front().pid, SIGKILL);
    try {
      (void)drain_epoch(ep);
    } catch (const loader_error& e) {
      message = e.what();
    }
  });
  CHECK_THAT(message, Catch::Contains("killed by signal 9"));
  CHECK(no_children());
  CHECK(segments_left() == 0);
}

TEST_CASE("a /dev/shm too small for the batches in flight is refused with the size needed",
          "[loader][process]") {
  const dataset data(small_spec(4, 1_MiB));
  loader_spec spec = process_spec(4, pinning::off, 1'000'000);  // 4 MiB x 1e6: terabytes
  try {
    check_shared_memory(spec, data);
    FAIL("no refusal");
  } catch (const environment_error& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("/dev/shm has") && Catch::Contains("need about") &&
                      Catch::Contains("--shm-size"));
    CHECK(m.find('\n') == std::string::npos);
  }
}

TEST_CASE("a stuck worker fails the epoch after the timeout, and is stopped", "[loader][process]") {
  const worker_method method = GENERATE(worker_method::thread, worker_method::process);
  const bool persistent = GENERATE(false, true);
  INFO((method == worker_method::process ? "process" : "thread")
       << (persistent ? ", persistent" : ""));
  auto dev = host_backend(64_MiB);
  dataset_spec ds = small_spec(160, 128, 1'000);
  ds.hang_at_sample = 41;  // batch 5 of 8-sample batches: worker 1's
  const dataset data(ds);
  loader_spec spec = process_spec(2, pinning::off);
  spec.method = method;
  spec.persistent_workers = persistent;
  spec.timeout_ns = 300'000'000;
  kept_workers kept;
  std::string message;
  std::size_t delivered = 0;
  std::vector<pid_t> pids;
  must_finish("a stuck worker", [&] {
    {
      epoch ep(data, spec, 0, *dev, nullptr, &kept);
      for (const auto& m : ep.worker_memory()) pids.push_back(m.pid);
      try {
        delivered = drain_epoch(ep);
      } catch (const loader_error& e) {
        message = e.what();
      }
    }
    // The stuck worker is not kept: the next epoch starts its own and completes.
    ds.hang_at_sample = -1;
    const dataset healthy(ds);
    epoch next(healthy, spec, 1, *dev, nullptr, &kept);
    CHECK(next.stats().worker_starts == 1);
    CHECK(drain_epoch(next) == 160 / 8);
  });
  CHECK(delivered == 0);
  CHECK_THAT(message, Catch::Contains("timed out after 300") && Catch::Contains("worker 1") &&
                          Catch::Contains("batch 5"));
  if (method == worker_method::process) {
    CHECK_THAT(message, Catch::Contains("pid"));
    for (const pid_t pid : pids) CHECK_FALSE(process_exists(pid));
  }
  kept.pool.reset();
  CHECK(no_children());
  CHECK(segments_left() == 0);
}

TEST_CASE("without a timeout, the stuck worker holds the epoch until it is stopped",
          "[loader][process]") {
  auto dev = host_backend(64_MiB);
  dataset_spec ds = small_spec(64, 128, 1'000);
  ds.hang_at_sample = 20;
  const dataset data(ds);
  const loader_spec spec = process_spec(2, pinning::off);
  must_finish("an epoch abandoned with a stuck worker", [&] {
    epoch ep(data, spec, 0, *dev, nullptr);
    for (int i = 0; i < 2; ++i) {  // batches 0 and 1 come; batch 2 never does
      auto b = ep.next();
      REQUIRE(b.has_value());
      ep.release(*b, nullptr);
    }
  });  // the destructor kills the stuck worker after its grace
  CHECK(no_children());
  CHECK(segments_left() == 0);
}
