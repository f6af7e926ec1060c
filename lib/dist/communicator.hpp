// The processes of one launch talking to each other: how ranks agree on what to run, stay in
// step case by case, run host-memory collectives and send their results to rank 0. Every call is
// collective (all ranks make it, in the same order) and bounded in time: a rank that died or
// hangs makes the others throw rank_lost_error within `timeout`, never wait forever.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "dist/launch.hpp"

namespace pinbench::dist {

/// Another rank did not answer in time, or its connection broke. The run cannot go on.
class rank_lost_error : public error {
 public:
  /// `lost`: the rank that is missing when the transport can tell (-1: it cannot, as MPI's
  /// collectives cannot); `stopped_by_lead`: not a loss seen here but rank 0 stopping the
  /// launch after one (communicator::stop_others), so this rank keeps quiet.
  explicit rank_lost_error(const std::string& what, int lost = -1, bool stopped_by_lead = false)
      : error(what), lost_(lost), stopped_by_lead_(stopped_by_lead) {}
  [[nodiscard]] int lost_rank() const noexcept { return lost_; }
  [[nodiscard]] bool stopped_by_lead() const noexcept { return stopped_by_lead_; }

 private:
  int lost_;
  bool stopped_by_lead_;
};

/// Element types of the host collectives.
enum class element { f32, f64, i32 };
[[nodiscard]] std::size_t size_of(element e) noexcept;

using timeout = std::chrono::milliseconds;
/// A limit in seconds, for messages and for MPI's double-valued waits.
[[nodiscard]] inline double seconds(timeout limit) noexcept {
  return static_cast<double>(limit.count()) / 1000.0;
}

class communicator {
 public:
  virtual ~communicator() = default;
  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  /// "single" (one process), "mpi" (the MPI library the launch brought), "tcp" (pinbench's own
  /// sockets: torchrun, srun without PMIx, PINBENCH_RENDEZVOUS; choose_transport).
  [[nodiscard]] virtual std::string_view transport() const noexcept = 0;

  virtual void barrier(timeout limit) = 0;
  /// Every rank's bytes, in rank order (lengths may differ).
  [[nodiscard]] virtual std::vector<std::string> all_gather(std::string_view mine,
                                                            timeout limit) = 0;
  /// Root's bytes to every rank (`data` is replaced on the others).
  virtual void broadcast(std::string& data, int root, timeout limit) = 0;

  // Host-memory collectives with MPI's semantics (MPI: its own implementation), element-wise
  // sum. `count` is per rank as in MPI: all_gather and reduce_scatter's block.
  virtual void all_reduce_sum(const void* send, void* recv, std::size_t count, element e,
                              timeout limit) = 0;
  virtual void all_gather_block(const void* send, void* recv, std::size_t count, element e,
                                timeout limit) = 0;
  virtual void reduce_scatter_sum(const void* send, void* recv, std::size_t count, element e,
                                  timeout limit) = 0;
  virtual void broadcast_block(void* data, std::size_t count, element e, int root,
                               timeout limit) = 0;
  /// Sends `count` elements to `peer` and receives as many from it (a pairwise exchange). Every
  /// rank calls it at once, each with its partner: a rank's partner names it back, and a rank
  /// without one names itself (tcp runs it as a collective through rank 0).
  virtual void send_recv(const void* send, void* recv, std::size_t count, element e, int peer,
                         timeout limit) = 0;

  /// After a loss: tells every rank still connected that the launch is stopping (so that none
  /// of them takes rank 0 for the lost one), without waiting for them; best effort. tcp sends
  /// a notice; MPI has nothing to send (abort ends the others).
  virtual void stop_others(std::string_view why) noexcept = 0;

  /// Ends every rank of the launch now with `exit_code` after printing `why` on this rank's
  /// stderr (MPI_Abort; tcp: the other ranks see the broken connection). Never returns.
  [[noreturn]] virtual void abort(int exit_code, std::string_view why) = 0;
};

/// How the ranks of a launch talk: single (one process, no one to talk to), MPI, or sockets.
enum class transport_kind { single, mpi, tcp };
/// "single", "mpi" or "tcp": for results and messages (communicator::transport()).
[[nodiscard]] std::string_view to_string(transport_kind k) noexcept;

/// Which transport a launch's ranks use, and why: what connect() does and `pinbench info` says.
struct transport_choice {
  transport_kind transport = transport_kind::single;
  std::string why;           ///< in words, with the variables that decided it
  std::string address_from;  ///< tcp: where host and port came from, for messages
  std::string host;          ///< tcp: where rank 0 listens and the others connect
  int port = 0;
  std::uint64_t launch_token = 0;  ///< tcp: the same on every rank of this launch (srun: job, step)
};

/// What `pinbench info` says of MPI here: "" when the support loads, else why not.
[[nodiscard]] std::string mpi_unavailable_reason();

/// The transport of a launch, from the environment (`getenv`; empty: the process's own):
/// - one process: single;
/// - PINBENCH_TRANSPORT=mpi|tcp (default auto) forces one; PINBENCH_RENDEZVOUS=host:port
///   makes it tcp at that address unless mpi is forced;
/// - torchrun: tcp at MASTER_ADDR, port MASTER_PORT + 1;
/// - mpirun: MPI;
/// - srun: MPI when the step offers PMIx (environment_error when the MPI support does not
///   load: `mpi_reason` returns why), else tcp on the step's first node at a port derived from
///   the job and step ids (PINBENCH_RENDEZVOUS_PORT overrides it; dist/slurm.hpp). Only what
///   srun gives every task decides, so that every rank chooses alike.
/// Throws input_error (exit 2) for a malformed variable, environment_error (exit 3) when the
/// launch's transport cannot be had (a variable it needs is missing, rank 0 is not on the node
/// the others will look for it on).
[[nodiscard]] transport_choice choose_transport(
    const launch_info& launch, const getenv_fn& getenv = {},
    const std::function<std::string()>& mpi_reason = mpi_unavailable_reason);

/// The communicator for this launch, over choose_transport's transport: bounded by `limit` to
/// meet the others (tcp). Throws environment_error (exit 3) when the transport cannot be had,
/// naming it and why.
[[nodiscard]] std::unique_ptr<communicator> connect(const launch_info& launch, timeout limit);

}  // namespace pinbench::dist
