#include "dist/communicator.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "dist/mpi.hpp"
#include "dist/single.hpp"
#include "dist/tcp.hpp"

namespace pinbench::dist {

std::size_t size_of(element e) noexcept {
  switch (e) {
    case element::f32: return 4;
    case element::i32: return 4;
    case element::f64: return 8;
  }
  return 1;
}

namespace {

std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// torchrun's rendezvous: MASTER_ADDR, and the port after MASTER_PORT (which torchrun's agent
// may hold itself).
host_port torchrun_rendezvous() {
  std::string address = variable("MASTER_ADDR");
  std::string port = variable("MASTER_PORT");
  if (address.empty() || port.empty()) {
    throw environment_error(fmt::format(
        "launched by torchrun, but {} is not set: the tcp transport meets at MASTER_ADDR, port "
        "MASTER_PORT + 1 (or set PINBENCH_RENDEZVOUS=host:port)",
        address.empty() ? "MASTER_ADDR" : "MASTER_PORT"));
  }
  host_port at = parse_host_port(address + ":" + port, "environment MASTER_PORT");
  if (at.port == 65535) {
    throw input_error({}, "environment MASTER_PORT",
                      "expected a port below 65535 (pinbench listens on MASTER_PORT + 1), got "
                      "\"65535\"");
  }
  ++at.port;
  return at;
}

}  // namespace

std::unique_ptr<communicator> connect(const launch_info& launch, timeout limit) {
  // One process has no one to talk to, whatever started it: no MPI, no socket.
  if (launch.size <= 1) return make_single();
  if (std::string rendezvous = variable("PINBENCH_RENDEZVOUS"); !rendezvous.empty()) {
    auto at = parse_host_port(rendezvous, "environment PINBENCH_RENDEZVOUS");
    return connect_tcp(launch.rank, launch.size, at.host, at.port, limit);
  }
  if (launch.launcher == "torchrun") {
    auto at = torchrun_rendezvous();
    return connect_tcp(launch.rank, launch.size, at.host, at.port, limit);
  }
  if (launch.launcher == "mpirun" || launch.launcher == "srun") return connect_mpi(launch);
  throw environment_error(fmt::format("{} ranks, but no launcher pinbench knows (\"{}\")",
                                      launch.size, launch.launcher));
}

}  // namespace pinbench::dist
