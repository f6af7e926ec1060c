#include "device/numa_placement.hpp"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace pinbench::device {

namespace {

// <linux/mempolicy.h>'s values, declared here so that no libnuma (nor its headers) is needed.
constexpr int mpol_preferred = 1;
constexpr unsigned long mpol_f_node = 1UL << 0;
constexpr unsigned long mpol_f_addr = 1UL << 1;

constexpr std::size_t bits_per_word = 8 * sizeof(unsigned long);
// Room for 4096 nodes and 8192 cpus: more than any kernel's NODES_SHIFT / NR_CPUS allows in
// practice, so the calls never fail with EINVAL for a mask too small.
constexpr std::size_t node_words = 4096 / bits_per_word;
constexpr std::size_t cpu_words = 8192 / bits_per_word;
// The kernel reads maxnode - 1 bits (numactl passes one more than it means, as do we).
constexpr unsigned long node_mask_bits = node_words * bits_per_word + 1;

long get_mempolicy(int* mode, unsigned long* nodes, unsigned long maxnode, const void* addr,
                   unsigned long flags) {
  return ::syscall(SYS_get_mempolicy, mode, nodes, maxnode, addr, flags);
}

long set_mempolicy(int mode, const unsigned long* nodes, unsigned long maxnode) {
  return ::syscall(SYS_set_mempolicy, mode, nodes, maxnode);
}

void set_bit(std::vector<unsigned long>& mask, std::size_t bit) {
  mask[bit / bits_per_word] |= 1UL << (bit % bits_per_word);
}

bool test_bit(const std::vector<unsigned long>& mask, std::size_t bit) {
  return bit / bits_per_word < mask.size() &&
         (mask[bit / bits_per_word] >> (bit % bits_per_word) & 1UL) != 0;
}

std::string errno_text(int e) {
  return std::strerror(e);
}

}  // namespace

numa_scope::numa_scope(const numa_target& target) : target_(target) {
  if (!target_.node) return;
  place_memory(*target_.node);
  if (!target_.cpus.empty()) place_threads(target_.cpus);
}

numa_scope::~numa_scope() {
  if (old_mode_) (void)set_mempolicy(*old_mode_, old_nodes_.data(), node_mask_bits);
  if (!old_cpus_.empty())
    (void)::sched_setaffinity(0, old_cpus_.size() * sizeof(unsigned long),
                              reinterpret_cast<const cpu_set_t*>(old_cpus_.data()));
}

void numa_scope::place_memory(int node) {
  if (static_cast<std::size_t>(node) >= node_words * bits_per_word) {
    problems_.push_back(fmt::format("node {} is beyond the nodes pinbench can name", node));
    return;
  }
  std::vector<unsigned long> saved(node_words, 0);
  int mode = 0;
  if (get_mempolicy(&mode, saved.data(), node_mask_bits, nullptr, 0) != 0) {
    problems_.push_back("get_mempolicy refused (" + errno_text(errno) + ")");
    return;
  }
  std::vector<unsigned long> wanted(node_words, 0);
  set_bit(wanted, static_cast<std::size_t>(node));
  if (set_mempolicy(mpol_preferred, wanted.data(), node_mask_bits) != 0) {
    problems_.push_back("set_mempolicy refused (" + errno_text(errno) + ")");
    return;
  }
  old_mode_ = mode;
  old_nodes_ = std::move(saved);
  memory_placed_ = true;
}

void numa_scope::place_threads(const std::string& cpus) {
  const auto listed = parse_cpulist(cpus);
  if (!listed) {
    problems_.push_back("the cpu list \"" + cpus + "\" cannot be read");
    return;
  }
  std::vector<unsigned long> allowed(cpu_words, 0);
  const std::size_t bytes = allowed.size() * sizeof(unsigned long);
  if (::sched_getaffinity(0, bytes, reinterpret_cast<cpu_set_t*>(allowed.data())) != 0) {
    problems_.push_back("sched_getaffinity refused (" + errno_text(errno) + ")");
    return;
  }
  // Only cpus this process may use (a container's cpuset may hold part of the node).
  std::vector<unsigned long> wanted(cpu_words, 0);
  bool any = false;
  for (int cpu : *listed)
    if (test_bit(allowed, static_cast<std::size_t>(cpu))) {
      set_bit(wanted, static_cast<std::size_t>(cpu));
      any = true;
    }
  if (!any) {
    problems_.push_back("none of the cpus " + cpus + " is allowed to this process");
    return;
  }
  if (::sched_setaffinity(0, bytes, reinterpret_cast<const cpu_set_t*>(wanted.data())) != 0) {
    problems_.push_back("sched_setaffinity refused (" + errno_text(errno) + ")");
    return;
  }
  old_cpus_ = std::move(allowed);
  threads_placed_ = true;
}

void numa_scope::observe(const void* addr) {
  if (!target_.node || addr == nullptr) return;
  int node = -1;
  if (get_mempolicy(&node, nullptr, 0, addr, mpol_f_node | mpol_f_addr) != 0) {
    problems_.push_back("the buffer's node cannot be read (get_mempolicy: " + errno_text(errno) +
                        ")");
    return;
  }
  buffer_node_ = node;
  if (node != *target_.node)
    problems_.push_back(fmt::format("the buffer's first page is on node {}", node));
}

bool numa_scope::placed() const noexcept {
  return target_.node && memory_placed_ && (threads_placed_ || target_.cpus.empty()) &&
         (!buffer_node_ || *buffer_node_ == *target_.node);
}

numa_record numa_scope::record() const {
  std::string reason = target_.reason;
  if (target_.node && !problems_.empty()) {
    reason += "; not placed: ";
    for (std::size_t i = 0; i < problems_.size(); ++i)
      reason += (i == 0 ? "" : ", ") + problems_[i];
  }
  return {.node = target_.node,
          .cpus = target_.cpus,
          .placed = placed(),
          .reason = std::move(reason),
          .requested = target_.requested,
          .buffer_node = buffer_node_};
}

}  // namespace pinbench::device
