// memory_stats(): PyTorch's statistic semantics and its flat key names.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "alloc/allocator.hpp"

namespace pinbench::alloc {

// As PyTorch's increase_stat/decrease_stat: the peak follows increases only, and the running
// totals never go down.
void stat::increase(std::int64_t amount) {
  current += amount;
  if (current > peak) peak = current;
  allocated += amount;
}

void stat::decrease(std::int64_t amount) {
  current -= amount;
  freed += amount;
}

void stat_array::increase(bool small, std::int64_t amount) {
  all.increase(amount);
  (small ? small_pool : large_pool).increase(amount);
}

void stat_array::decrease(bool small, std::int64_t amount) {
  all.decrease(amount);
  (small ? small_pool : large_pool).decrease(amount);
}

void stat_array::reset_peak() {
  all.reset_peak();
  small_pool.reset_peak();
  large_pool.reset_peak();
}

void memory_stats::note_alloc(bool small, std::size_t block_size, std::size_t requested_size,
                              bool oversize) {
  allocation.increase(small, 1);
  allocated_bytes.increase(small, stat_bytes(block_size));
  active.increase(small, 1);
  active_bytes.increase(small, stat_bytes(block_size));
  requested_bytes.increase(small, stat_bytes(requested_size));
  if (oversize) oversize_allocations.increase(1);
}

void memory_stats::note_free(bool small, std::size_t block_size, std::size_t requested_size) {
  note_free_requested(small, block_size);
  note_free_completed(small, block_size, requested_size);
}

void memory_stats::note_free_requested(bool small, std::size_t block_size, bool oversize) {
  allocation.decrease(small, 1);
  allocated_bytes.decrease(small, stat_bytes(block_size));
  if (oversize) oversize_allocations.decrease(1);
}

void memory_stats::note_free_completed(bool small, std::size_t block_size,
                                       std::size_t requested_size) {
  active.decrease(small, 1);
  active_bytes.decrease(small, stat_bytes(block_size));
  requested_bytes.decrease(small, stat_bytes(requested_size));
}

void memory_stats::note_segment_alloc(bool small, std::size_t segment_size, bool oversize) {
  segment.increase(small, 1);
  reserved_bytes.increase(small, stat_bytes(segment_size));
  if (oversize) oversize_segments.increase(1);
}

void memory_stats::note_segment_free(bool small, std::size_t segment_size, bool oversize) {
  segment.decrease(small, 1);
  reserved_bytes.decrease(small, stat_bytes(segment_size));
  if (oversize) oversize_segments.decrease(1);
}

void memory_stats::reset_peaks() {
  for (stat_array* a : {&allocation, &segment, &active, &inactive_split, &allocated_bytes,
                        &reserved_bytes, &active_bytes, &inactive_split_bytes, &requested_bytes})
    a->reset_peak();
  oversize_allocations.reset_peak();
  oversize_segments.reset_peak();
}

std::map<std::string, std::int64_t> memory_stats::flatten() const {
  std::map<std::string, std::int64_t> out;
  auto put_stat = [&out](const std::string& prefix, const stat& s) {
    out[prefix + ".current"] = s.current;
    out[prefix + ".peak"] = s.peak;
    out[prefix + ".allocated"] = s.allocated;
    out[prefix + ".freed"] = s.freed;
  };
  auto put_array = [&put_stat](const std::string& name, const stat_array& a) {
    put_stat(name + ".all", a.all);
    put_stat(name + ".small_pool", a.small_pool);
    put_stat(name + ".large_pool", a.large_pool);
  };
  put_array("allocation", allocation);
  put_array("segment", segment);
  put_array("active", active);
  put_array("inactive_split", inactive_split);
  put_array("allocated_bytes", allocated_bytes);
  put_array("reserved_bytes", reserved_bytes);
  put_array("active_bytes", active_bytes);
  put_array("inactive_split_bytes", inactive_split_bytes);
  put_array("requested_bytes", requested_bytes);
  put_stat("oversize_allocations", oversize_allocations);
  put_stat("oversize_segments", oversize_segments);
  out["num_alloc_retries"] = num_alloc_retries;
  out["num_ooms"] = num_ooms;
  out["num_sync_all_streams"] = num_sync_all_streams;
  out["num_device_alloc"] = num_device_alloc;
  out["num_device_free"] = num_device_free;
  out["max_split_size"] = max_split_size;
  return out;
}

}  // namespace pinbench::alloc
