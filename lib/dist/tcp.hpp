// The tcp communicator, for launches without MPI (torchrun): a star through rank 0. Rank 0
// listens, the others connect to it; each collective gathers every rank's part at rank 0, which
// computes the answer and sends each rank its share. Ranks must share a byte order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dist/communicator.hpp"

namespace pinbench::dist {

/// Rank 0 listens on host:port and waits for the `size - 1` others; they connect, retrying while
/// rank 0 is not listening yet. Both give up within `limit` (rank_lost_error naming who is
/// missing). On this transport send_recv is collective too: every rank calls it, each with its
/// partner (a rank's partner names it back; a rank may name itself). `launch` is the same on
/// every rank of one launch: rank 0 drops a connection that carries another.
[[nodiscard]] std::unique_ptr<communicator> connect_tcp(int rank, int size, const std::string& host,
                                                        int port, timeout limit,
                                                        std::uint64_t launch = 0);

/// "host:port" or "[v6 address]:port" (PINBENCH_RENDEZVOUS's form) split in two; input_error
/// naming `what` when it is not of that form or the port is outside [1, 65535].
struct host_port {
  std::string host;
  int port = 0;
};
[[nodiscard]] host_port parse_host_port(const std::string& text, const std::string& what);

}  // namespace pinbench::dist
