// The single communicator and how connect() picks a transport. The tcp communicator has its own
// file; MPI runs under mpirun in tests/dist_probe/.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/mpi.hpp"
#include "support.hpp"
#include "test_paths.hpp"

using namespace pinbench::dist;
using namespace std::chrono_literals;
using pinbench::testing::free_loopback_port;

namespace {

// Sets (or unsets, with nullopt) an environment variable for one scope.
class scoped_env {
 public:
  scoped_env(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
  ~scoped_env() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

launch_info launched_by(launcher_kind launcher, int rank, int size) {
  launch_info info;
  info.launcher = launcher;
  info.rank = rank;
  info.size = size;
  return info;
}

}  // namespace

TEST_CASE("element sizes", "[dist]") {
  CHECK(size_of(element::f32) == 4);
  CHECK(size_of(element::f64) == 8);
  CHECK(size_of(element::i32) == 4);
}

TEST_CASE("single: one rank, every call a copy or nothing", "[dist]") {
  auto world = connect(launch_info{}, 1s);
  REQUIRE(world->transport() == "single");
  CHECK(world->rank() == 0);
  CHECK(world->size() == 1);
  world->barrier(1ms);
  CHECK(world->all_gather("abc", 1ms) == std::vector<std::string>{"abc"});
  std::string data = "kept";
  world->broadcast(data, 0, 1ms);
  CHECK(data == "kept");
  CHECK_THROWS_AS(world->broadcast(data, 1, 1ms), pinbench::error);

  const std::vector<double> send{1.5, 2.5, -3};
  std::vector<double> recv(3);
  world->all_reduce_sum(send.data(), recv.data(), 3, element::f64, 1ms);
  CHECK(recv == send);
  std::vector<int> ints{1, 2, 3, 4};
  std::vector<int> out(4);
  world->all_gather_block(ints.data(), out.data(), 4, element::i32, 1ms);
  CHECK(out == ints);
  std::vector<float> floats{1, 2};
  std::vector<float> block(2);
  world->reduce_scatter_sum(floats.data(), block.data(), 2, element::f32, 1ms);
  CHECK(block == floats);
  world->broadcast_block(floats.data(), 2, element::f32, 0, 1ms);
  CHECK(floats == std::vector<float>{1, 2});
  std::fill(block.begin(), block.end(), 0.0f);
  world->send_recv(floats.data(), block.data(), 2, element::f32, 0, 1ms);
  CHECK(block == floats);
  world->all_reduce_sum(floats.data(), floats.data(), 2, element::f32, 1ms);  // in place
  CHECK(floats == std::vector<float>{1, 2});
}

TEST_CASE("connect: one process is single whatever launched it", "[dist]") {
  scoped_env plugin("PINBENCH_MPI_PLUGIN", "/nonexistent/libpinbench_mpi.so");
  CHECK(connect(launched_by(launcher_kind::mpirun, 0, 1), 1s)->transport() == "single");
  CHECK(connect(launched_by(launcher_kind::torchrun, 0, 1), 1s)->transport() == "single");
}

TEST_CASE("connect: PINBENCH_RENDEZVOUS forces tcp under any launcher", "[dist]") {
  scoped_env rendezvous("PINBENCH_RENDEZVOUS", "127.0.0.1:" + std::to_string(free_loopback_port()));
  std::string transport_of_1;
  std::thread one([&] {
    try {
      auto world = connect(launched_by(launcher_kind::mpirun, 1, 2), 5s);
      transport_of_1 = world->transport();
      world->barrier(5s);
    } catch (const std::exception& e) {
      transport_of_1 = e.what();
    }
  });
  auto world = connect(launched_by(launcher_kind::mpirun, 0, 2), 5s);
  CHECK(world->transport() == "tcp");
  world->barrier(5s);
  one.join();
  CHECK(transport_of_1 == "tcp");
}

TEST_CASE("connect: torchrun meets at MASTER_ADDR, port MASTER_PORT + 1", "[dist]") {
  scoped_env rendezvous("PINBENCH_RENDEZVOUS", std::nullopt);
  SECTION("it works") {
    const int port = free_loopback_port();
    scoped_env addr("MASTER_ADDR", "127.0.0.1");
    scoped_env master_port("MASTER_PORT", std::to_string(port - 1));
    std::string failed_1;
    std::thread one([&] {
      try {
        connect(launched_by(launcher_kind::torchrun, 1, 2), 5s)->barrier(5s);
      } catch (const std::exception& e) {
        failed_1 = e.what();
      }
    });
    auto world = connect(launched_by(launcher_kind::torchrun, 0, 2), 5s);
    CHECK(world->transport() == "tcp");
    world->barrier(5s);
    one.join();
    CHECK(failed_1.empty());
  }
  SECTION("without MASTER_ADDR") {
    scoped_env addr("MASTER_ADDR", std::nullopt);
    scoped_env master_port("MASTER_PORT", "29500");
    CHECK_THROWS_AS(connect(launched_by(launcher_kind::torchrun, 1, 2), 1s),
                    pinbench::environment_error);
    CHECK_THROWS_WITH(connect(launched_by(launcher_kind::torchrun, 1, 2), 1s),
                      Catch::Contains("MASTER_ADDR is not set"));
  }
  SECTION("a malformed MASTER_PORT") {
    scoped_env addr("MASTER_ADDR", "127.0.0.1");
    scoped_env master_port("MASTER_PORT", "port");
    CHECK_THROWS_AS(connect(launched_by(launcher_kind::torchrun, 1, 2), 1s), pinbench::input_error);
    CHECK_THROWS_WITH(connect(launched_by(launcher_kind::torchrun, 1, 2), 1s),
                      Catch::Contains("environment MASTER_PORT"));
  }
}

TEST_CASE("connect: mpirun without the MPI plugin is an environment error naming why", "[dist]") {
  scoped_env rendezvous("PINBENCH_RENDEZVOUS", std::nullopt);
  scoped_env plugin("PINBENCH_MPI_PLUGIN", "/nonexistent/libpinbench_mpi.so");
  CHECK_THROWS_AS(connect(launched_by(launcher_kind::mpirun, 0, 2), 1s),
                  pinbench::environment_error);
  CHECK_THROWS_WITH(connect(launched_by(launcher_kind::mpirun, 0, 2), 1s),
                    Catch::Contains("launched by mpirun with 2 ranks, but MPI support cannot be "
                                    "loaded: /nonexistent/libpinbench_mpi.so"));
  // srun without PMIx falls back to tcp, which needs the step's nodes (none here).
  CHECK_THROWS_AS(connect(launched_by(launcher_kind::srun, 1, 2), 1s), pinbench::environment_error);
  CHECK_THROWS_WITH(connect(launched_by(launcher_kind::srun, 1, 2), 1s),
                    Catch::Contains("needs SLURM_STEP_NODELIST or SLURM_JOB_NODELIST"));
  CHECK_THAT(mpi_unavailable_reason(), Catch::Contains("/nonexistent/libpinbench_mpi.so"));
}

TEST_CASE("the MPI plugin is found beside the executable, or where PINBENCH_MPI_PLUGIN says",
          "[dist]") {
  {
    scoped_env unset("PINBENCH_MPI_PLUGIN", std::nullopt);
    auto beside =
        std::filesystem::read_symlink("/proc/self/exe").parent_path() / "libpinbench_mpi.so";
    CHECK(mpi_plugin_path() == beside.string());
  }
  scoped_env set("PINBENCH_MPI_PLUGIN", "/opt/x/libpinbench_mpi.so");
  CHECK(mpi_plugin_path() == "/opt/x/libpinbench_mpi.so");
  // The plugin this build made (when MPI was found) loads, without MPI being started.
  auto built =
      std::filesystem::path(pinbench::testing::pinbench_exe()).parent_path() / "libpinbench_mpi.so";
  if (std::filesystem::exists(built)) {
    scoped_env real("PINBENCH_MPI_PLUGIN", built.string());
    CHECK(mpi_unavailable_reason().empty());
  }
}
