// Placing a case's host memory and copying threads on a NUMA node, without libnuma: the
// set_mempolicy, get_mempolicy and sched_setaffinity system calls.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "device/numa.hpp"

namespace pinbench::device {

/// What a case records of its placement (as the case extra `numa`: kinds/conditions_json.hpp).
struct numa_record {
  std::optional<int> node;  ///< none: no node was chosen
  std::string cpus;
  bool placed = false;
  std::string reason;  ///< why this node, and "; not placed: ..." when placement failed
  std::string requested;
  std::optional<int> buffer_node;  ///< where the first page of the observed buffer lies
};

/// Applies a numa_target to the calling thread while it lives, and restores the thread's
/// previous memory policy and affinity when it ends.
///
/// Scope: one case. An engine makes it before the case's buffers, streams and workers: pages
/// first touched by this thread prefer the node (MPOL_PREFERRED: a full node falls back rather
/// than ending in the OOM killer; the page actually used is checked with observe()), and the
/// threads the case starts (the host backend's stream threads, the loader's workers) inherit
/// both the policy and the cpus. Not once per run: the runner's thread also runs other kinds
/// (and, in tests, the CLI in-process), which must not inherit a placement they did not ask for.
///
/// Never fatal: where a call is refused (EPERM under a container's seccomp profile) placed() is
/// false and the reason says which call and why.
class numa_scope {
 public:
  explicit numa_scope(const numa_target& target);
  ~numa_scope();
  numa_scope(const numa_scope&) = delete;
  numa_scope& operator=(const numa_scope&) = delete;

  /// Records the node of the page at `addr` (touched memory: get_mempolicy with MPOL_F_NODE |
  /// MPOL_F_ADDR); a page off the target node makes placed() false.
  void observe(const void* addr);

  [[nodiscard]] bool placed() const noexcept;
  /// What the case records: buffer_node only when observe() could read it.
  [[nodiscard]] numa_record record() const;

 private:
  void place_memory(int node);
  void place_threads(const std::string& cpus);

  numa_target target_;
  std::vector<std::string> problems_;  // why placement failed, each part once
  bool memory_placed_ = false, threads_placed_ = false;
  std::optional<int> buffer_node_;
  // What to restore.
  std::optional<int> old_mode_;
  std::vector<unsigned long> old_nodes_;
  std::vector<unsigned long> old_cpus_;
};

}  // namespace pinbench::device
