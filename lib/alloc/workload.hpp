// Allocation workloads as a stream of events: generated (training loop, RMM's random pattern)
// or read from traces (pinbench.trace/1 JSON, RMM replay CSV). Streamed: memory stays bounded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "alloc/recording.hpp"

namespace pinbench::alloc {

struct event {
  enum class kind { alloc, free, empty_cache, mark };
  kind op = kind::alloc;
  std::uint64_t id = 0;      ///< alloc/free: pairs a free with its alloc
  std::uint64_t size = 0;    ///< alloc: bytes
  std::uint32_t stream = 0;  ///< alloc: stream index (0 = default)
  std::string label;         ///< mark: "iteration" ends one iteration of the workload
};

/// A source of events, read one at a time.
class event_source {
 public:
  virtual ~event_source() = default;
  /// The next event, or false at the end.
  [[nodiscard]] virtual bool next(event& out) = 0;
  /// What a PyTorch snapshot recorded beside its requests: the memory the recording began
  /// with and PyTorch's own decisions (alloc/recording.hpp). None for other traces and for
  /// generated workloads.
  [[nodiscard]] virtual std::shared_ptr<const recording> recorded() const { return nullptr; }
};

/// training_loop: parameters allocated once; per iteration, activations allocated layer by layer
/// (forward) and freed in reverse (backward) with a gradient allocated per layer, then optimizer
/// temporaries; "iteration" mark after each. Activation sizes scale with the batch size of the
/// iteration (cycling through `batch_sizes`, or fixed at `base_batch`).
struct training_loop_spec {
  int layers = 24;
  std::uint64_t activation_bytes = 64ull << 20;  ///< per layer at base_batch
  std::uint64_t parameter_bytes = 16ull << 20;   ///< per layer
  int iterations = 20;
  int base_batch = 32;
  std::vector<int> batch_sizes;  ///< empty = always base_batch
  std::uint64_t seed = 1;        ///< jitter of sizes (deterministic)
};

/// RMM's random_allocations pattern: `count` operations; with probability `alloc_probability`
/// allocate a uniform random size in [1, max_bytes], else free a random live allocation; every
/// live allocation freed at the end; a mark every `mark_every` operations (0 = never).
struct random_spec {
  std::uint64_t count = 10000;
  std::uint64_t max_bytes = 8ull << 20;
  double alloc_probability = 0.6;
  std::uint64_t seed = 1;
  std::uint64_t mark_every = 1000;
};

[[nodiscard]] std::unique_ptr<event_source> make_training_loop(const training_loop_spec& spec);
[[nodiscard]] std::unique_ptr<event_source> make_random(const random_spec& spec);

/// How open_trace reads a file that holds more than one trace.
struct trace_options {
  /// A PyTorch memory snapshot (pickle): the device whose device_traces entry is replayed.
  int device = 0;
};

/// Opens a trace file, its format told by content: pinbench.trace/1 JSON (schema checked), an
/// RMM replay log CSV (header "Thread,Time,Action,Pointer,Size,Stream"; actions
/// allocate/free; pointers mapped to ids), or a PyTorch memory snapshot pickle (first byte
/// 0x80, as torch.cuda.memory._dump_snapshot writes it; device_traces[options.device] mapped
/// as scripts/torch_snapshot_to_trace.py maps it, and each oom entry an allocation of the size
/// that failed; see alloc/torch_snapshot.hpp). Throws input_error("FILE: line N: ...",
/// "FILE: events[i].op: ...", "FILE: device_traces[0][5].addr: ..." or "FILE: offset N: ...")
/// for bad input. JSON traces are parsed event by event (SAX), so memory stays bounded for huge
/// traces; a snapshot is read whole (at most 2 GiB).
[[nodiscard]] std::unique_ptr<event_source> open_trace(const std::string& path,
                                                       const trace_options& options = {});

/// What open_trace() would find wrong before the first event, checked without reading further
/// (for validate): the path must name a regular file (not a directory, a device such as
/// /dev/zero, a FIFO or a socket: found with stat, before anything is opened) that can be read,
/// and its format must be known: JSON by its "{", the RMM log by its header row, a snapshot
/// pickle by its PROTO opcode (protocol 2 to 5) and its size (the device is checked when it is
/// read).
/// Throws input_error(path, ..., why).
void check_trace_file(const std::string& path);

}  // namespace pinbench::alloc
