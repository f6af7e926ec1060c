// PyTorch's native CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), reproduced on top
// of an upstream so that its policy can be measured anywhere. Names follow PyTorch's functions
// (get_free_block, alloc_block, release_available_cached_blocks, ...) so the two can be read
// side by side; where PyTorch's comments and code disagree, this follows the code.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "alloc/allocator.hpp"
#include "alloc/history.hpp"
#include "alloc/node_cache.hpp"
#include "alloc/oom.hpp"
#include "core/units.hpp"

namespace pinbench::alloc {

namespace {

using detail::history;
using detail::node_allocator;
using detail::node_cache;
using detail::trace_action;

constexpr std::size_t kMinBlockSize = 512;                       // every size rounds up to this
constexpr std::size_t kSmallSize = detail::small_request_limit;  // largest small-pool request
constexpr std::size_t kSmallBuffer = detail::small_segment_bytes;
constexpr std::size_t kMinLargeAlloc = std::size_t{10} << 20;  // below: a 20 MiB segment
constexpr std::size_t kLargeBuffer = detail::large_segment_bytes;
constexpr std::size_t kRoundLarge = std::size_t{2} << 20;  // large segments round to this
constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();
// PyTorch refuses anything from 1 EiB up before rounding, counting nothing; so do we (it also
// keeps the size arithmetic below far from overflow).
constexpr std::size_t kLargestRequest = detail::largest_request_bytes;

struct block_pool;
struct expandable_segment;

struct block {
  std::uintptr_t ptr = 0;
  std::size_t size = 0;
  std::size_t requested_size = 0;  // what the live owner asked for
  block_pool* pool = nullptr;
  block* prev = nullptr;  // neighbours in the same segment
  block* next = nullptr;
  expandable_segment* segment = nullptr;  // set for blocks of an expandable segment
  std::int64_t gc_count_base = 0;         // the pool's get_free_block count when cached
  stream_id stream = 0;
  bool allocated = false;
  bool mapped = true;  // false only for the unmapped address space of expandable segments

  [[nodiscard]] bool is_split() const noexcept { return prev != nullptr || next != nullptr; }
};

struct by_size {  // PyTorch's BlockComparatorSize: best fit is a lower_bound
  bool operator()(const block* a, const block* b) const noexcept {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};

struct by_address {
  bool operator()(const block* a, const block* b) const noexcept {
    if (a->stream != b->stream) return a->stream < b->stream;
    return a->ptr < b->ptr;
  }
};

using size_set = std::set<block*, by_size, node_allocator<block*>>;
using address_set = std::set<block*, by_address, node_allocator<block*>>;

struct block_pool {
  block_pool(bool is_small, node_cache* cache)
      : small(is_small),
        blocks(by_size{}, node_allocator<block*>(cache)),
        unmapped(by_address{}, node_allocator<block*>(cache)) {}

  const bool small;
  size_set blocks;       // cached (free, mapped) blocks
  address_set unmapped;  // unmapped address space of expandable segments
  std::int64_t get_free_blocks_call_count = 0;

  // Always insert through here: the block's garbage-collection age starts now.
  void insert(block* b) {
    b->gc_count_base = get_free_blocks_call_count;
    blocks.insert(b);
  }
  [[nodiscard]] std::int64_t age(const block* b) const noexcept {
    return get_free_blocks_call_count - b->gc_count_base;
  }
};

/// An address range reserved once and backed page by page (PyTorch's ExpandableSegment).
struct expandable_segment {
  std::uintptr_t base = 0;
  std::size_t page_bytes = 0;
  std::size_t pages = 0;
  std::vector<bool> page_mapped;

  [[nodiscard]] std::size_t bytes() const noexcept { return pages * page_bytes; }
};

struct range {
  std::uintptr_t ptr = 0;
  std::size_t size = 0;
};

// [2^k, 2^(k+1)) split into `divisions` equal steps; sizes round up to the next step.
// As PyTorch, a non-power-of-two `divisions` acts as the power of two below it.
std::size_t roundup_power2_next_division(std::size_t size, std::size_t divisions) {
  if (std::has_single_bit(size)) return size;
  const std::size_t floor = std::bit_floor(size);
  const std::size_t step = floor >> (std::bit_width(divisions) - 1);
  if (step == 0) return floor << 1;
  const std::size_t rounded_down = size & ~(step - 1);
  return rounded_down == size ? size : rounded_down + step;
}

// PyTorch's round_size; `use_divisions`: some entry of the table changes rounding.
std::size_t rounded_block_size(std::size_t size, const config& conf, bool use_divisions) {
  if (size < kMinBlockSize) return kMinBlockSize;
  if (use_divisions) {
    const std::size_t divisions = conf.divisions_for(size);
    // Before 2.4 one division went to roundup_power2_next_division, which returned the size
    // as it was: not even a multiple of 512.
    if (divisions == 1 && !conf.release.division_one_rounds()) return size;
    if (divisions > 1 && size > kMinBlockSize * divisions)
      return roundup_power2_next_division(size, divisions);
  }
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

bool uses_divisions(const config& conf) {
  const std::size_t above = conf.release.division_one_rounds() ? 1 : 0;
  return std::any_of(conf.roundup_power2_divisions.begin(), conf.roundup_power2_divisions.end(),
                     [above](std::size_t d) { return d > above; });
}

struct alloc_params {
  std::size_t size = 0;        // rounded request
  std::size_t alloc_size = 0;  // segment size a new cudaMalloc would get
  stream_id stream = 0;
  block_pool* pool = nullptr;
  block* found = nullptr;
};

void* as_pointer(std::uintptr_t p) noexcept {
  return reinterpret_cast<void*>(p);
}
std::uintptr_t as_address(const void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p);
}

// A new block `b` goes into its segment's address-ordered list right before `next`...
void link_before(block* b, block* next) noexcept {
  b->prev = next->prev;
  if (b->prev != nullptr) b->prev->next = b;
  b->next = next;
  next->prev = b;
}

// ...or right after `prev`.
void link_after(block* b, block* prev) noexcept {
  b->next = prev->next;
  if (b->next != nullptr) b->next->prev = b;
  b->prev = prev;
  prev->next = b;
}

class caching_allocator final : public device_allocator {
 public:
  caching_allocator(upstream& up, const config& conf, std::optional<double> memory_fraction,
                    decision_observer* observer)
      : up_(up),
        conf_(conf),
        max_split_(conf.max_split_size_bytes.value_or(kUnlimited)),
        max_non_split_(conf.max_non_split_rounding_bytes.value_or(kLargeBuffer)),
        observer_(observer) {
    // set_per_process_memory_fraction called by the program overrides the config's option.
    if (!memory_fraction) memory_fraction = conf.per_process_memory_fraction;
    if (memory_fraction && !(*memory_fraction >= 0.0 && *memory_fraction <= 1.0)) {
      throw input_error(fmt::format("memory fraction {} is not in [0, 1]", *memory_fraction));
    }
    if (conf.garbage_collection_threshold < 0.0 || conf.garbage_collection_threshold >= 1.0) {
      throw input_error(fmt::format("garbage_collection_threshold {} is not in [0, 1)",
                                    conf.garbage_collection_threshold));
    }
    // Up to 2.9 PyTorch's setMemoryFraction sets set_fraction whatever the value, 1.0 and 0
    // included: the limit (checked when a segment is added), the garbage collector and
    // "allowed" in the OOM message all follow from the call, not from the value. From 2.10 a
    // fraction of 1.0 sets none of them.
    set_fraction_ = memory_fraction.has_value() &&
                    !(conf.release.fraction_one_is_unlimited() && *memory_fraction >= 1.0);
    if (memory_fraction)
      allowed_max_ =
          static_cast<std::size_t>(*memory_fraction * static_cast<double>(up.capacity()));
    gc_enabled_ = set_fraction_ && conf.garbage_collection_threshold > 0.0;
    use_divisions_ = uses_divisions(conf);
    stats_.max_split_size = max_split_ == kUnlimited ? -1 : stat_bytes(max_split_);
    active_.reserve(1024);
  }

  ~caching_allocator() override {
    // Give everything back to the upstream, live blocks included: the allocator owns it all.
    try {
      std::vector<block*> heads;
      auto collect = [&heads](block* b) {
        if (b->segment == nullptr && b->prev == nullptr) heads.push_back(b);
      };
      for (block* b : small_.blocks) collect(b);
      for (block* b : large_.blocks) collect(b);
      for (auto& [ptr, b] : active_) collect(b);
      for (block* head : heads) {
        std::size_t bytes = 0;
        for (block* b = head; b != nullptr; b = b->next) bytes += b->size;
        up_.deallocate(as_pointer(head->ptr), bytes);
      }
      for (auto& seg : segments_) {
        for (std::size_t i = 0; i < seg->pages; ++i) {
          if (i < seg->page_mapped.size() && seg->page_mapped[i])
            up_.unmap(as_pointer(seg->base + i * seg->page_bytes), seg->page_bytes);
        }
        up_.release_address(as_pointer(seg->base), seg->bytes());
      }
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
    // Every block sits in exactly one of these; handing them back matters only when the node
    // cache is bypassed (sanitizer builds), otherwise the slabs go with cache_.
    for (block_pool* pool : {&small_, &large_}) {
      for (block* b : pool->blocks) delete_block(b);
      for (block* b : pool->unmapped) delete_block(b);
    }
    for (auto& [ptr, b] : active_) delete_block(b);
  }

  caching_allocator(const caching_allocator&) = delete;
  caching_allocator& operator=(const caching_allocator&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return "caching"; }

  [[nodiscard]] void* allocate(std::size_t bytes, stream_id stream) override {
    if (bytes == 0) return nullptr;
    if (bytes >= kLargestRequest) throw detail::make_too_large_error(bytes);
    alloc_params p;
    p.size = round_size(bytes);
    p.pool = p.size <= kSmallSize ? &small_ : &large_;
    p.alloc_size = caching_segment_size(p.size);
    p.stream = stream;

    bool found = get_free_block(p);
    if (!found) {
      if (gc_enabled_) garbage_collect_cached_blocks();
      found = alloc_block(p, false) ||
              (release_available_cached_blocks(p) && alloc_block(p, false)) ||
              (release_cached_blocks() && alloc_block(p, true));
    }
    if (!found) raise_oom(p);

    const bool split = should_split(p.found, p.size);
    block* const b = alloc_found_block(p, bytes, split);
    return as_pointer(b->ptr);
  }

  void deallocate(void* ptr) override {
    if (ptr == nullptr) return;
    const auto it = active_.find(as_address(ptr));
    if (it == active_.end()) {
      throw device_error(fmt::format("invalid device pointer: {}", ptr));
    }
    block* const b = it->second;
    active_.erase(it);
    free(b);
  }

  void empty_cache() override {
    history_.record(trace_action::empty_cache, 0, 0, 0);
    release_cached_blocks();
  }

  [[nodiscard]] memory_stats stats() const override { return stats_; }

  void reset_peak_stats() override { stats_.reset_peaks(); }

  [[nodiscard]] snapshot snapshot_of(bool with_trace) const override;

  void record_history(bool enabled, std::size_t max_entries) override {
    history_.set(enabled, max_entries);
  }

  [[nodiscard]] std::vector<void*> adopt(const start_state& start) override;

 private:
  // ---- sizes ------------------------------------------------------------------------------
  [[nodiscard]] std::size_t round_size(std::size_t size) const {
    return rounded_block_size(size, conf_, use_divisions_);
  }

  [[nodiscard]] bool should_split(const block* b, std::size_t size) const noexcept {
    const std::size_t remaining = b->size - size;
    // Expandable segments split like the small pool: their free tail can always be unmapped.
    if (b->pool->small || conf_.expandable_segments) return remaining >= kMinBlockSize;
    return size < max_split_ && remaining > kSmallSize;
  }

  // ---- blocks -----------------------------------------------------------------------------
  // Blocks come from the node cache (a heap allocation each would be on the hot path); the
  // caller names the fields that differ from a fresh block's (designated initializers).
  block* make_block(const block& fields) { return ::new (cache_.get(sizeof(block))) block(fields); }
  // A new block for another part of `of`'s segment: the same pool, stream and segment.
  block* make_piece_of(const block* of, std::uintptr_t ptr, std::size_t size, bool mapped) {
    return make_block({.ptr = ptr,
                       .size = size,
                       .pool = of->pool,
                       .segment = of->segment,
                       .stream = of->stream,
                       .mapped = mapped});
  }
  void delete_block(block* b) noexcept { cache_.put(b, sizeof(block)); }

  // ---- the cache hit path -----------------------------------------------------------------
  bool get_free_block(alloc_params& p) {
    block_pool& pool = *p.pool;
    // Block ages are only kept when the garbage collector can use them (as PyTorch).
    if (gc_enabled_) ++pool.get_free_blocks_call_count;
    block key;
    key.stream = p.stream;
    key.size = p.size;
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;

    if ((*it)->segment != nullptr) {
      // For best fit, a block followed by unmapped space counts as large as it could grow,
      // so a block that cannot grow is preferred when both fit.
      auto expandable_size = [](const block* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      auto next = std::next(it);
      while ((*it)->segment != nullptr && next != pool.blocks.end() &&
             (*next)->stream == p.stream && expandable_size(*next) < expandable_size(*it)) {
        it = next++;
      }
    }
    // An oversize block is never handed to a request below max_split_size...
    if (p.size < max_split_ && (*it)->size >= max_split_) return false;
    // ...and to a larger request only when it wastes less than max_non_split_rounding_mb.
    if (p.size >= max_split_ && (*it)->size >= p.size + max_non_split_) return false;
    p.found = *it;
    pool.blocks.erase(it);
    return true;
  }

  block* alloc_found_block(alloc_params& p, std::size_t orig_size, bool split) {
    block_pool& pool = *p.pool;
    const bool small = pool.small;
    block* b = p.found;
    const bool already_split = b->is_split();
    if (split) {
      block* const remaining = b;
      b = make_block({.ptr = remaining->ptr,
                      .size = p.size,
                      .pool = &pool,
                      .segment = remaining->segment,
                      .stream = p.stream});
      link_before(b, remaining);
      remaining->ptr += p.size;
      remaining->size -= p.size;
      pool.insert(remaining);
      // Expandable segments are left out of inactive_split, as in PyTorch.
      if (b->segment == nullptr) {
        if (already_split) {
          stats_.inactive_split_bytes.decrease(small, stat_bytes(b->size));
        } else {
          stats_.inactive_split_bytes.increase(small, stat_bytes(remaining->size));
          stats_.inactive_split.increase(small, 1);
        }
      }
    } else if (already_split && b->segment == nullptr) {
      stats_.inactive_split_bytes.decrease(small, stat_bytes(b->size));
      stats_.inactive_split.decrease(small, 1);
    }

    b->allocated = true;
    b->requested_size = orig_size;
    history_.record(trace_action::alloc, b->ptr, orig_size, b->stream);
    active_.emplace(b->ptr, b);
    stats_.note_alloc(small, b->size, orig_size, b->size >= max_split_);
    return b;
  }

  void free(block* b) {
    const bool small = b->pool->small;
    b->allocated = false;
    stats_.note_free_requested(small, b->size, b->size >= max_split_);
    history_.record(trace_action::free_requested, b->ptr, b->requested_size, b->stream);
    // No stream uses are recorded across streams here, so no events: the block is free now.
    free_block(b);
  }

  void free_block(block* b) {
    history_.record(trace_action::free_completed, b->ptr, b->requested_size, b->stream);
    block_pool& pool = *b->pool;
    const bool small = pool.small;
    const std::size_t original_size = b->size;
    const std::size_t requested = b->requested_size;
    b->requested_size = 0;

    std::int64_t net_inactive_blocks = 0;
    std::int64_t net_inactive_bytes = 0;
    for (block* candidate : {b->prev, b->next}) {
      const std::size_t subsumed = try_merge_blocks(b, candidate, pool);
      if (subsumed > 0) {
        net_inactive_blocks -= 1;
        net_inactive_bytes -= stat_bytes(subsumed);
      }
    }
    pool.insert(b);
    if (b->is_split()) {
      net_inactive_blocks += 1;
      net_inactive_bytes += stat_bytes(b->size);
    }
    if (b->segment == nullptr) {
      if (net_inactive_blocks > 0) stats_.inactive_split.increase(small, net_inactive_blocks);
      if (net_inactive_blocks < 0) stats_.inactive_split.decrease(small, -net_inactive_blocks);
      if (net_inactive_bytes > 0) stats_.inactive_split_bytes.increase(small, net_inactive_bytes);
      if (net_inactive_bytes < 0) stats_.inactive_split_bytes.decrease(small, -net_inactive_bytes);
    }
    stats_.note_free_completed(small, original_size, requested);
  }

  /// Merges free `src` into `dst` (its neighbour); returns the bytes taken over, 0 if none.
  std::size_t try_merge_blocks(block* dst, block* src, block_pool& pool) {
    if (src == nullptr || src->allocated || dst->mapped != src->mapped) return 0;
    // Out of its set first, while its key is intact.
    if (src->mapped) {
      pool.blocks.erase(src);
    } else {
      pool.unmapped.erase(src);
    }
    if (dst->prev == src) {
      dst->ptr = src->ptr;
      dst->prev = src->prev;
      if (dst->prev != nullptr) dst->prev->next = dst;
    } else {
      dst->next = src->next;
      if (dst->next != nullptr) dst->next->prev = dst;
    }
    const std::size_t subsumed = src->size;
    dst->size += subsumed;
    delete_block(src);
    return subsumed;
  }

  // ---- getting memory ---------------------------------------------------------------------
  bool alloc_block(alloc_params& p, bool is_retry) {
    const std::size_t size = p.alloc_size;
    if (is_retry) ++stats_.num_alloc_retries;
    // As PyTorch, the fraction is checked against the segment size even for expandable
    // segments, which then map only the pages they need.
    if (set_fraction_ && total_allocated_memory_ + size > allowed_max_) return false;
    if (conf_.expandable_segments) {
      p.found = try_allocate_expandable_block(p.stream, *p.pool, p.size);
      return p.found != nullptr;
    }
    void* const ptr = up_.allocate(size);
    if (ptr == nullptr) return false;

    total_allocated_memory_ += size;
    block* const b =
        make_block({.ptr = as_address(ptr), .size = size, .pool = p.pool, .stream = p.stream});
    stats_.note_segment_alloc(p.pool->small, size, size >= max_split_);
    ++stats_.num_device_alloc;
    note_decision(decision_kind::segment_alloc, b->ptr, size, p.stream);
    p.found = b;
    return true;
  }

  // Only whole, ordinary segments can go back with cudaFree.
  static bool releasable(const block* b) noexcept {
    return b->segment == nullptr && !b->is_split();
  }

  /// Frees the smallest cached oversize block that covers the request, or else the largest
  /// oversize blocks until as many bytes were freed. Only with max_split_size set.
  bool release_available_cached_blocks(const alloc_params& p) {
    if (max_split_ == kUnlimited) return false;
    block_pool& pool = *p.pool;
    block key;
    key.stream = p.stream;
    key.size = std::max(p.size, max_split_);
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != p.stream) {
      if (it == pool.blocks.begin()) return false;
      std::size_t released = 0;
      --it;  // the largest block of this stream, if it has any
      while (released < key.size && (*it)->size >= max_split_ && (*it)->stream == p.stream) {
        const auto cur = it;
        const bool first = cur == pool.blocks.begin();
        if (!first) --it;
        // PyTorch's loop assumes every oversize cached block is a whole segment; with
        // max_split_size above kLargeBuffer (as its config demands) that holds, and blocks of
        // expandable segments are skipped as newer PyTorch does.
        if (releasable(*cur)) {
          released += (*cur)->size;
          release_block(*cur);
        }
        if (first) break;
      }
      return released >= key.size;
    }
    if (!releasable(*it)) return false;
    release_block(*it);
    return true;
  }

  /// Synchronises, then frees every cached whole segment and unmaps the free pages of
  /// expandable segments (empty_cache, and the last resort before an OOM).
  bool release_cached_blocks() {
    ++stats_.num_sync_all_streams;
    up_.synchronize();
    release_blocks(large_);
    release_blocks(small_);
    return true;
  }

  void release_blocks(block_pool& pool) {
    std::vector<block*> to_unmap;
    for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
      block* const b = *it;
      ++it;  // release_block erases b
      if (b->segment != nullptr) {
        to_unmap.push_back(b);  // unmapping changes the set: done after the walk
      } else if (!b->is_split()) {
        release_block(b);
      }
    }
    // Merges in unmap_block only ever delete unmapped blocks, never a pending (mapped) entry.
    for (block* b : to_unmap) {
      unmap_block(b);
      if (!b->mapped && !b->is_split()) release_expandable_segment(b);
    }
  }

  void release_block(block* b) {
    block_pool& pool = *b->pool;
    ++stats_.num_device_free;
    note_decision(decision_kind::segment_free, b->ptr, b->size, b->stream);
    up_.deallocate(as_pointer(b->ptr), b->size);
    total_allocated_memory_ -= b->size;
    stats_.note_segment_free(pool.small, b->size, b->size >= max_split_);
    pool.blocks.erase(b);
    delete_block(b);
  }

  /// Frees cached blocks that have not been reused for long, without synchronising, until
  /// reserved memory is back under threshold x allowed. As PyTorch's code (its comments say
  /// "oldest first"): passes over the large pool free every unsplit block at least as old as
  /// the average, and a pass is finished even after the target is reached.
  void garbage_collect_cached_blocks() {
    const auto gc_threshold = static_cast<std::size_t>(conf_.garbage_collection_threshold *
                                                       static_cast<double>(allowed_max_));
    if (total_allocated_memory_ <= gc_threshold) return;
    const std::size_t target = total_allocated_memory_ - gc_threshold;
    std::size_t reclaimed = 0;

    // Blocks of expandable segments are left alone: release_block cannot free them.
    std::int64_t total_age = 0;
    std::int64_t freeable = 0;
    for (const block* b : large_.blocks) {
      if (releasable(b)) {
        total_age += large_.age(b);
        ++freeable;
      }
    }
    if (freeable == 0) return;

    bool freed_one = true;
    while (reclaimed < target && freed_one && freeable > 0) {
      const double age_threshold = static_cast<double>(total_age) / static_cast<double>(freeable);
      freed_one = false;
      for (auto it = large_.blocks.begin(); it != large_.blocks.end();) {
        block* const b = *it;
        ++it;
        if (releasable(b) && static_cast<double>(large_.age(b)) >= age_threshold) {
          freed_one = true;
          reclaimed += b->size;
          total_age -= large_.age(b);
          --freeable;
          release_block(b);
        }
      }
    }
  }

  // ---- expandable segments ----------------------------------------------------------------
  /// The lowest-address free-or-unmapped run of this stream's segments with room for `size`,
  /// or a new segment's whole (unmapped) range.
  block* find_expandable_block(stream_id stream, block_pool& pool, std::size_t size) {
    auto allocatable = [](const block* b) { return b != nullptr && !b->allocated; };
    auto has_room = [&](const block* b) {
      std::size_t bytes = 0;
      while (bytes < size && allocatable(b)) {
        bytes += b->size;
        b = b->next;
      }
      return bytes >= size;
    };
    block key;
    key.stream = stream;
    for (auto it = pool.unmapped.lower_bound(&key);
         it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
      block* c = *it;
      // A free mapped block just before the unmapped range can be part of the run.
      if (allocatable(c->prev)) c = c->prev;
      if (has_room(c)) return c;
    }

    const std::size_t page = page_bytes(pool);
    const std::size_t pages = reservation_pages(page);
    // A request larger than a whole segment could never be mapped (the segment already
    // exceeds the device); PyTorch reserves one anyway and fails to map it. Failing before the
    // reservation gives the same outcome without piling up unused address ranges.
    if (pages * page < size) return nullptr;
    void* const base = up_.reserve_address(pages * page);
    auto seg = std::make_unique<expandable_segment>();
    seg->base = as_address(base);
    seg->page_bytes = page;
    seg->pages = pages;
    block* const c = make_block({.ptr = seg->base,
                                 .size = seg->bytes(),
                                 .pool = &pool,
                                 .segment = seg.get(),
                                 .stream = stream,
                                 .mapped = false});
    segments_.push_back(std::move(seg));
    pool.unmapped.insert(c);
    return c;
  }

  static std::size_t page_bytes(const block_pool& pool) noexcept {
    return pool.small ? kSmallBuffer : kLargeBuffer;
  }

  // An expandable segment's address space: 1 1/8 of the device, as PyTorch's, so that pages
  // unmapped early in the segment can be mapped again at its end.
  [[nodiscard]] std::size_t reservation_pages(std::size_t page) const {
    const std::size_t capacity = up_.capacity();
    return std::max<std::size_t>(1, (capacity + capacity / 8 + page - 1) / page);
  }

  /// Maps whole pages covering [ptr, ptr + size); all or nothing. Size 0 means out of memory.
  range map_pages(expandable_segment& seg, std::uintptr_t ptr, std::size_t size) {
    const std::size_t begin = (ptr - seg.base) / seg.page_bytes;
    const std::size_t end = (ptr + size - seg.base + seg.page_bytes - 1) / seg.page_bytes;
    if (seg.page_mapped.size() < end) seg.page_mapped.resize(end, false);
    // One physical allocation per page, as PyTorch (cuMemCreate per page): a failure part
    // way gives back the pages of this call.
    for (std::size_t i = begin; i < end; ++i) {
      if (!up_.map(as_pointer(seg.base + i * seg.page_bytes), seg.page_bytes)) {
        for (std::size_t j = begin; j < i; ++j) {
          up_.unmap(as_pointer(seg.base + j * seg.page_bytes), seg.page_bytes);
          seg.page_mapped[j] = false;
        }
        return {ptr, 0};
      }
      seg.page_mapped[i] = true;
    }
    return {seg.base + begin * seg.page_bytes, (end - begin) * seg.page_bytes};
  }

  /// Unmaps the pages lying wholly inside [ptr, ptr + size).
  range unmap_pages(expandable_segment& seg, std::uintptr_t ptr, std::size_t size) {
    const std::size_t begin = (ptr - seg.base + seg.page_bytes - 1) / seg.page_bytes;
    const std::size_t end = (ptr + size - seg.base) / seg.page_bytes;
    if (begin >= end) return {ptr, 0};
    for (std::size_t i = begin; i < end; ++i) {
      up_.unmap(as_pointer(seg.base + i * seg.page_bytes), seg.page_bytes);
      seg.page_mapped[i] = false;
    }
    return {seg.base + begin * seg.page_bytes, (end - begin) * seg.page_bytes};
  }

  bool map_block(block* to_map, std::size_t size) {
    const range mapped = map_pages(*to_map->segment, to_map->ptr, size);
    if (mapped.size == 0) return false;

    block_pool& pool = *to_map->pool;
    pool.unmapped.erase(to_map);
    to_map->mapped = true;
    if (mapped.size < to_map->size) {
      block* const rest = make_piece_of(to_map, to_map->ptr + mapped.size,
                                        to_map->size - mapped.size, /*mapped=*/false);
      link_after(rest, to_map);
      pool.unmapped.insert(rest);
      to_map->size = mapped.size;
    }
    try_merge_blocks(to_map, to_map->prev, pool);
    try_merge_blocks(to_map, to_map->next, pool);
    pool.insert(to_map);

    total_allocated_memory_ += mapped.size;
    stats_.reserved_bytes.increase(pool.small, stat_bytes(mapped.size));
    // PyTorch counts each mapping as a device allocation but not as a segment.
    ++stats_.num_device_alloc;
    note_decision(decision_kind::segment_map, mapped.ptr, mapped.size, to_map->stream);
    return true;
  }

  void unmap_block(block* b) {
    const range unmapped = unmap_pages(*b->segment, b->ptr, b->size);
    if (unmapped.size == 0) return;
    block_pool& pool = *b->pool;
    pool.blocks.erase(b);

    const std::size_t before = unmapped.ptr - b->ptr;
    if (before > 0) {  // prev? -> before -> b
      block* const f = make_piece_of(b, b->ptr, before, /*mapped=*/true);
      link_before(f, b);
      pool.insert(f);
    }
    const std::size_t after = b->size - before - unmapped.size;
    if (after > 0) {  // b -> after -> next?
      block* const f = make_piece_of(b, unmapped.ptr + unmapped.size, after, /*mapped=*/true);
      link_after(f, b);
      pool.insert(f);
    }
    b->ptr = unmapped.ptr;
    b->size = unmapped.size;
    b->mapped = false;
    try_merge_blocks(b, b->prev, pool);
    try_merge_blocks(b, b->next, pool);
    pool.unmapped.insert(b);

    total_allocated_memory_ -= unmapped.size;
    stats_.reserved_bytes.decrease(pool.small, stat_bytes(unmapped.size));
    ++stats_.num_device_free;
    note_decision(decision_kind::segment_unmap, unmapped.ptr, unmapped.size, b->stream);
  }

  void release_expandable_segment(block* b) {
    expandable_segment* const seg = b->segment;
    b->pool->unmapped.erase(b);
    up_.release_address(as_pointer(seg->base), seg->bytes());
    std::erase_if(segments_, [seg](const auto& s) { return s.get() == seg; });
    delete_block(b);
  }

  block* try_allocate_expandable_block(stream_id stream, block_pool& pool, std::size_t size) {
    block* candidate = find_expandable_block(stream, pool, size);
    if (candidate == nullptr) return nullptr;
    // The candidate starts a run of free/unmapped blocks with room for size:
    // unmapped -> null, unmapped -> free -> ..., or free -> unmapped -> ...
    if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size))) {
      return nullptr;
    }
    while (candidate->size < size) {
      // free -> unmapped -> ...: mapping the next one merges the free block into it
      block* const next = candidate->next;
      // has_room promised unmapped space right after a short candidate; stay safe regardless.
      if (next == nullptr || next->mapped || next->allocated) return nullptr;
      const std::size_t remaining = size - candidate->size;
      if (!map_block(next, std::min(remaining, next->size))) return nullptr;
      candidate = next;
    }
    pool.blocks.erase(candidate);
    return candidate;
  }

  // ---- the start state ---------------------------------------------------------------------
  /// Fills [from, from + bytes) of a segment whose memory is at `base` with the recorded blocks
  /// (`recorded` is where the segment started in the recording): free gaps cached, live blocks
  /// allocated, all linked in address order after `prev`. Returns the last block made.
  block* lay_out(block_pool& pool, expandable_segment* segment, std::uintptr_t base,
                 const start_segment& seg, block* prev, std::vector<void*>& live_out) {
    const bool small = pool.small;
    std::uintptr_t at = base;
    const std::uintptr_t end = base + seg.size;
    std::size_t pieces = 0;
    std::vector<block*> free_pieces;
    auto link = [&](block* b) {
      if (prev != nullptr) link_after(b, prev);
      prev = b;
      ++pieces;
    };
    for (const start_block& live : seg.live) {
      if (live.address < seg.address || live.address - seg.address < at - base || live.size == 0 ||
          live.address - seg.address + live.size > seg.size)
        throw device_error(fmt::format(
            "start state: the block at {:#x} of {} bytes does not fit its segment at {:#x} of {} "
            "bytes after the blocks before it",
            live.address, live.size, seg.address, seg.size));
      const std::uintptr_t block_at = base + (live.address - seg.address);
      if (block_at > at) {
        block* gap = make_block({.ptr = at,
                                 .size = block_at - at,
                                 .pool = &pool,
                                 .segment = segment,
                                 .stream = seg.stream});
        link(gap);
        free_pieces.push_back(gap);
      }
      block* b = make_block({.ptr = block_at,
                             .size = live.size,
                             .pool = &pool,
                             .segment = segment,
                             .stream = seg.stream});
      b->allocated = true;
      b->requested_size = live.requested_size != 0 ? live.requested_size : live.size;
      link(b);
      active_.emplace(b->ptr, b);
      stats_.note_alloc(small, b->size, b->requested_size, b->size >= max_split_);
      live_out.push_back(as_pointer(b->ptr));
      at = block_at + live.size;
    }
    if (at < end) {
      block* gap = make_block(
          {.ptr = at, .size = end - at, .pool = &pool, .segment = segment, .stream = seg.stream});
      link(gap);
      free_pieces.push_back(gap);
    }
    for (block* b : free_pieces) {
      pool.insert(b);
      // A free piece of a split segment is an inactive split (expandable segments left out).
      if (segment == nullptr && pieces > 1) {
        stats_.inactive_split.increase(small, 1);
        stats_.inactive_split_bytes.increase(small, stat_bytes(b->size));
      }
    }
    return prev;
  }

  [[noreturn]] void start_does_not_fit(const start_state& start) const {
    throw input_error(fmt::format(
        "the recorded start state holds {} reserved ({} live), more than the device's {} can "
        "take: give the replay the GPU's memory (tune allocator's --capacity, an allocator "
        "case's device_memory)",
        format_bytes(start.reserved_bytes()), format_bytes(start.live_bytes()),
        format_bytes(up_.capacity())));
  }

  // ---- decisions --------------------------------------------------------------------------
  /// A device call or an out-of-memory error: into the trace, and to the observer.
  void note_decision(decision_kind kind, std::uintptr_t address, std::size_t size,
                     stream_id stream) {
    history_.record(trace_action_of(kind), address, size, stream);
    if (observer_ != nullptr)
      observer_->on_decision({.kind = kind,
                              .address = kind == decision_kind::oom ? 0 : address,
                              .size = size,
                              .stream = stream});
  }

  static trace_action trace_action_of(decision_kind kind) noexcept {
    switch (kind) {
      case decision_kind::segment_alloc:
        return trace_action::segment_alloc;
      case decision_kind::segment_free:
        return trace_action::segment_free;
      case decision_kind::segment_map:
        return trace_action::segment_map;
      case decision_kind::segment_unmap:
        return trace_action::segment_unmap;
      case decision_kind::oom:
        break;
    }
    return trace_action::oom;
  }

  // ---- out of memory ----------------------------------------------------------------------
  [[noreturn]] void raise_oom(const alloc_params& p) {
    // PyTorch's oom trace entry carries the device's free bytes in its address field.
    note_decision(decision_kind::oom, detail::device_free_bytes(up_), p.size, p.stream);
    ++stats_.num_ooms;
    throw detail::make_caching_oom_error(
        up_, {p.alloc_size, current_allocated(), current_reserved(), allowed_for_message()});
  }

  [[nodiscard]] std::uint64_t current_allocated() const noexcept {
    return static_cast<std::uint64_t>(stats_.allocated_bytes.all.current);
  }
  [[nodiscard]] std::uint64_t current_reserved() const noexcept {
    return static_cast<std::uint64_t>(stats_.reserved_bytes.all.current);
  }
  [[nodiscard]] std::optional<std::uint64_t> allowed_for_message() const noexcept {
    if (!set_fraction_) return std::nullopt;
    return allowed_max_;
  }

  upstream& up_;
  const config conf_;
  const std::size_t max_split_;
  const std::size_t max_non_split_;  // max_non_split_rounding_mb: kLargeBuffer unless set
  decision_observer* const observer_;
  bool set_fraction_ = false;
  bool gc_enabled_ = false;
  bool use_divisions_ = false;
  std::size_t allowed_max_ = 0;
  std::size_t total_allocated_memory_ = 0;  // reserved bytes (segments, mapped pages)

  // Declared before everything that takes nodes from it, so it is destroyed after them.
  node_cache cache_;
  block_pool large_{false, &cache_};
  block_pool small_{true, &cache_};
  std::unordered_map<std::uintptr_t, block*, std::hash<std::uintptr_t>,
                     std::equal_to<std::uintptr_t>,
                     node_allocator<std::pair<const std::uintptr_t, block*>>>
      active_{0, std::hash<std::uintptr_t>{}, std::equal_to<std::uintptr_t>{},
              node_allocator<std::pair<const std::uintptr_t, block*>>(&cache_)};
  std::vector<std::unique_ptr<expandable_segment>> segments_;

  memory_stats stats_;
  history history_;
};

std::vector<void*> caching_allocator::adopt(const start_state& start) {
  // Each segment's live pointers go to its place in the order of `start`.
  std::vector<std::vector<void*>> per_segment(start.segments.size());
  for (std::size_t i = 0; i < start.segments.size(); ++i) {
    const start_segment& seg = start.segments[i];
    if (seg.expandable) continue;
    block_pool& pool = seg.small ? small_ : large_;
    void* const ptr = up_.allocate(seg.size);
    if (ptr == nullptr) start_does_not_fit(start);
    total_allocated_memory_ += seg.size;
    stats_.note_segment_alloc(pool.small, seg.size, seg.size >= max_split_);
    (void)lay_out(pool, nullptr, as_address(ptr), seg, nullptr, per_segment[i]);
  }
  // Expandable segments: one address range per reservation, its recorded ranges mapped.
  for (const std::uint64_t reservation : start.reservations()) {
    std::vector<std::size_t> ranges;
    for (std::size_t i = 0; i < start.segments.size(); ++i)
      if (start.segments[i].expandable && start.segments[i].reservation == reservation)
        ranges.push_back(i);
    const start_segment& first = start.segments[ranges.front()];
    block_pool& pool = first.small ? small_ : large_;
    const std::size_t page = page_bytes(pool);
    const std::size_t capacity = up_.capacity();
    std::size_t pages = reservation_pages(page);
    // PyTorch reserves 1 1/8 of its device; a recording made on a larger device may map beyond
    // this one's, but not without bound (a page flag each is kept).
    const std::size_t most_pages = pages * 64;
    for (const std::size_t i : ranges) {
      const start_segment& r = start.segments[i];
      if (r.address < reservation || (r.address - reservation) % page != 0 || r.size % page != 0)
        throw device_error(fmt::format(
            "start state: the expandable range at {:#x} of {} bytes is not made of whole {} "
            "pages from its reservation at {:#x}",
            r.address, r.size, format_bytes(page), reservation));
      const std::uint64_t reach = (r.address - reservation + r.size) / page;
      if (reach > most_pages)
        throw input_error(fmt::format(
            "start state: the expandable range at {:#x} lies {} beyond its reservation's start, "
            "more than this device's {} could reserve",
            r.address, format_bytes(r.address - reservation), format_bytes(capacity)));
      pages = std::max<std::size_t>(pages, static_cast<std::size_t>(reach));
    }
    auto seg = std::make_unique<expandable_segment>();
    seg->page_bytes = page;
    seg->pages = pages;
    seg->base = as_address(up_.reserve_address(pages * page));
    seg->page_mapped.assign(pages, false);
    expandable_segment* const segment = seg.get();
    segments_.push_back(std::move(seg));
    block* prev = nullptr;
    std::uintptr_t at = segment->base;
    auto unmapped_until = [&](std::uintptr_t to) {
      if (to <= at) return;
      block* b = make_block({.ptr = at,
                             .size = to - at,
                             .pool = &pool,
                             .segment = segment,
                             .stream = first.stream,
                             .mapped = false});
      if (prev != nullptr) link_after(b, prev);
      prev = b;
      pool.unmapped.insert(b);
      at = to;
    };
    for (const std::size_t i : ranges) {
      const start_segment& r = start.segments[i];
      const std::uintptr_t from = segment->base + (r.address - reservation);
      unmapped_until(from);
      if (map_pages(*segment, from, r.size).size == 0) start_does_not_fit(start);
      total_allocated_memory_ += r.size;
      stats_.reserved_bytes.increase(pool.small, stat_bytes(r.size));
      prev = lay_out(pool, segment, from, r, prev, per_segment[i]);
      at = from + r.size;
    }
    unmapped_until(segment->base + segment->bytes());
  }
  std::vector<void*> out;
  for (auto& ptrs : per_segment) out.insert(out.end(), ptrs.begin(), ptrs.end());
  return out;
}

snapshot caching_allocator::snapshot_of(bool with_trace) const {
  snapshot out;
  std::vector<const block*> all;
  all.reserve(small_.blocks.size() + large_.blocks.size() + active_.size());
  all.insert(all.end(), small_.blocks.begin(), small_.blocks.end());
  all.insert(all.end(), large_.blocks.begin(), large_.blocks.end());
  for (const auto& [ptr, b] : active_) all.push_back(b);

  for (const block* head : all) {
    // One segment per contiguous mapped range (for expandable segments, as PyTorch).
    if (head->prev != nullptr && head->prev->mapped) continue;
    segment_info seg;
    seg.address = head->ptr;
    seg.stream = head->stream;
    seg.segment_type = head->pool->small ? "small" : "large";
    seg.expandable = head->segment != nullptr;
    for (const block* b = head; b != nullptr && b->mapped; b = b->next) {
      block_info info;
      info.address = b->ptr;
      info.size = b->size;
      info.requested_size = b->allocated ? b->requested_size : 0;
      info.state = b->allocated ? "active_allocated" : "inactive";
      seg.total_size += b->size;
      if (b->allocated) {
        seg.allocated_size += b->size;
        seg.active_size += b->size;
        seg.requested_size += b->requested_size;
      }
      seg.blocks.push_back(std::move(info));
    }
    out.segments.push_back(std::move(seg));
  }
  std::sort(out.segments.begin(), out.segments.end(),
            [](const segment_info& a, const segment_info& b) { return a.address < b.address; });
  if (with_trace) out.trace = history_.entries();
  return out;
}

}  // namespace

std::size_t caching_segment_size(std::size_t block) noexcept {
  if (block <= kSmallSize) return kSmallBuffer;
  if (block < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((block + kRoundLarge - 1) / kRoundLarge);
}

std::size_t caching_block_size(std::size_t request, const config& conf) {
  return rounded_block_size(request, conf, uses_divisions(conf));
}

std::unique_ptr<device_allocator> make_caching_allocator(upstream& up, const config& conf,
                                                         std::optional<double> memory_fraction,
                                                         decision_observer* observer) {
  return std::make_unique<caching_allocator>(up, conf, memory_fraction, observer);
}

}  // namespace pinbench::alloc
