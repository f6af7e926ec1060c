#include "dist/communicator.hpp"

#include <fmt/format.h>

#include "dist/environment.hpp"
#include "dist/mpi.hpp"
#include "dist/single.hpp"
#include "dist/slurm.hpp"
#include "dist/tcp.hpp"

namespace pinbench::dist {

std::size_t size_of(element e) noexcept {
  switch (e) {
    case element::f32:
      return 4;
    case element::i32:
      return 4;
    case element::f64:
      return 8;
  }
  return 1;
}

std::string_view to_string(transport_kind k) noexcept {
  switch (k) {
    case transport_kind::single:
      return "single";
    case transport_kind::mpi:
      return "mpi";
    case transport_kind::tcp:
      return "tcp";
  }
  return "?";
}

namespace {

transport_choice mpi_because(std::string why) {
  return {transport_kind::mpi, std::move(why), {}, {}, 0, 0};
}

transport_choice tcp_at(const host_port& at, std::string why, std::string address_from) {
  return {transport_kind::tcp, std::move(why), std::move(address_from), at.host, at.port, 0};
}

// PINBENCH_TRANSPORT: none (auto: the launcher decides), mpi or tcp; single is not a choice.
std::optional<transport_kind> forced_transport(const environment& env) {
  const std::string text = env.get("PINBENCH_TRANSPORT").value_or("auto");
  if (text == "auto") return std::nullopt;
  for (const auto k : {transport_kind::mpi, transport_kind::tcp})
    if (text == to_string(k)) return k;
  throw input_error({}, "environment PINBENCH_TRANSPORT",
                    fmt::format("expected auto, mpi or tcp, got \"{}\"", text));
}

// torchrun's rendezvous: MASTER_ADDR, and the port after MASTER_PORT (which torchrun's agent
// may hold itself).
host_port torchrun_rendezvous(const environment& env) {
  auto address = env.get("MASTER_ADDR");
  auto port = env.get("MASTER_PORT");
  if (!address || !port) {
    throw environment_error(fmt::format(
        "launched by torchrun, but {} is not set: the tcp transport meets at MASTER_ADDR, port "
        "MASTER_PORT + 1 (or set PINBENCH_RENDEZVOUS=host:port)",
        !address ? "MASTER_ADDR" : "MASTER_PORT"));
  }
  host_port at = parse_host_port(*address + ":" + *port, "environment MASTER_PORT");
  if (at.port == 65535) {
    throw input_error({}, "environment MASTER_PORT",
                      "expected a port below 65535 (pinbench listens on MASTER_PORT + 1), got "
                      "\"65535\"");
  }
  ++at.port;
  return at;
}

// An srun step over tcp: the others look for rank 0 on the step's first node, so rank 0 must
// run there (srun's block and cyclic distributions put it there; an arbitrary one may not).
transport_choice srun_tcp(const launch_info& launch, const environment& env, std::string why) {
  const auto at = slurm::step_rendezvous(env);
  if (launch.rank == 0) {
    if (auto node = env.get("SLURMD_NODENAME"); node && *node != at.host) {
      throw environment_error(fmt::format(
          "rank 0 runs on {} (SLURMD_NODENAME), not on {} where the other ranks look for it "
          "({}): set PINBENCH_RENDEZVOUS={}:PORT for every rank",
          *node, at.host, at.from, *node));
    }
  }
  return {transport_kind::tcp,
          fmt::format("{}; rendezvous: {}", why, at.from),
          at.from,
          at.host,
          at.port,
          at.token};
}

// Every rank of a step must choose alike, or they never meet: only what the step gives all its
// tasks (the PMI variables) decides, never what one node happens to have. A step that offers
// PMIx where the MPI support does not load is refused, not taken over tcp by some ranks only.
// `forced` is none (auto) or tcp (PINBENCH_TRANSPORT=mpi is settled before).
transport_choice srun_transport(const launch_info& launch, const environment& env,
                                std::optional<transport_kind> forced,
                                const std::function<std::string()>& mpi_reason) {
  if (forced == transport_kind::tcp) return srun_tcp(launch, env, "PINBENCH_TRANSPORT=tcp");
  const auto offer = slurm::offered_pmi(env);
  using kind = slurm::pmi_offer::kind;
  if (offer.offered == kind::pmix) {
    if (std::string cannot = mpi_reason(); !cannot.empty()) {
      throw environment_error(fmt::format(
          "srun's step offers PMIx ({}), but MPI support cannot be loaded here: {} (set "
          "PINBENCH_TRANSPORT=tcp for every rank to meet without MPI)",
          offer.evidence, cannot));
    }
    return mpi_because(fmt::format("srun's step offers PMIx ({})", offer.evidence));
  }
  if (offer.offered == kind::pmi2) {
    return srun_tcp(launch, env,
                    fmt::format("srun's step offers PMI-2 only ({}), and pinbench starts MPI "
                                "under srun from PMIx; PINBENCH_TRANSPORT=mpi tries MPI anyway",
                                offer.evidence));
  }
  return srun_tcp(launch, env,
                  fmt::format("srun's step offers no PMI to start MPI from ({})", offer.evidence));
}

}  // namespace

transport_choice choose_transport(const launch_info& launch, const getenv_fn& getenv,
                                  const std::function<std::string()>& mpi_reason) {
  // One process has no one to talk to, whatever started it: no MPI, no socket.
  if (launch.size <= 1) return {transport_kind::single, "one process", {}, {}, 0, 0};
  const environment env(getenv);
  const auto forced = forced_transport(env);
  if (forced != transport_kind::mpi) {
    if (auto rendezvous = env.get("PINBENCH_RENDEZVOUS")) {
      return tcp_at(parse_host_port(*rendezvous, "environment PINBENCH_RENDEZVOUS"),
                    fmt::format("PINBENCH_RENDEZVOUS={}", *rendezvous), "PINBENCH_RENDEZVOUS");
    }
  }
  if (forced == transport_kind::mpi) return mpi_because("PINBENCH_TRANSPORT=mpi");
  switch (launch.launcher) {
    case launcher_kind::srun:
      return srun_transport(launch, env, forced, mpi_reason);
    case launcher_kind::torchrun:
      return tcp_at(torchrun_rendezvous(env), "torchrun: MASTER_ADDR, port MASTER_PORT + 1",
                    "MASTER_ADDR, port MASTER_PORT + 1");
    case launcher_kind::mpirun:
      if (forced == transport_kind::tcp) {
        throw environment_error(
            "PINBENCH_TRANSPORT=tcp under mpirun needs PINBENCH_RENDEZVOUS=host:port (where rank "
            "0 listens)");
      }
      return mpi_because("launched by mpirun");
    case launcher_kind::none:
      break;
  }
  throw environment_error(fmt::format("{} ranks, but no launcher pinbench knows (\"{}\")",
                                      launch.size, to_string(launch.launcher)));
}

std::unique_ptr<communicator> connect(const launch_info& launch, timeout limit) {
  const auto choice = choose_transport(launch);
  switch (choice.transport) {
    case transport_kind::single:
      return make_single();
    case transport_kind::mpi:
      return connect_mpi(launch);
    case transport_kind::tcp:
      break;
  }
  // A port another program holds, a name that does not resolve, a rank 0 that is not there:
  // say where the address came from, and how to pick another.
  const std::string hint = fmt::format(
      " (rank 0's address: {}; PINBENCH_RENDEZVOUS=host:port picks another{})", choice.address_from,
      launch.launcher == launcher_kind::srun ? ", PINBENCH_RENDEZVOUS_PORT another port" : "");
  try {
    return connect_tcp(launch.rank, launch.size, choice.host, choice.port, limit,
                       choice.launch_token);
  } catch (const rank_lost_error& e) {
    throw rank_lost_error(e.what() + hint, e.lost_rank(), e.stopped_by_lead());
  } catch (const environment_error& e) {
    throw environment_error(e.what() + hint);
  }
}

}  // namespace pinbench::dist
