// Free lists for the nodes of the caching allocator's sets and maps (and its blocks): once warm,
// allocate/deallocate pairs cost no heap allocation, which keeps the measured hot path honest.
#pragma once

#include <array>
#include <cstddef>
#include <new>
#include <vector>

namespace pinbench::alloc::detail {

/// Hands out chunks of up to max_bytes in 16-byte size classes, recycling freed ones.
/// Larger requests (hash bucket arrays) go to operator new. Not thread-safe: one per allocator.
class node_cache {
 public:
  static constexpr std::size_t grain = 16;
  static constexpr std::size_t classes = 9;  // chunks of 16..128 bytes
  static constexpr std::size_t max_bytes = grain * (classes - 1);

  node_cache() = default;
  node_cache(const node_cache&) = delete;
  node_cache& operator=(const node_cache&) = delete;
  ~node_cache() {
    for (void* slab : slabs_) ::operator delete(slab);
  }

  [[nodiscard]] void* get(std::size_t bytes) {
#ifdef PINBENCH_ALLOC_NO_NODE_CACHE  // for sanitizer builds: every node its own heap object
    return ::operator new(bytes);
#endif
    const std::size_t c = class_of(bytes);
    if (c >= classes) return ::operator new(bytes);
    if (free_[c] == nullptr) refill(c);
    link* const l = free_[c];
    free_[c] = l->next;
    return l;
  }

  void put(void* p, std::size_t bytes) noexcept {
#ifdef PINBENCH_ALLOC_NO_NODE_CACHE
    ::operator delete(p);
    return;
#endif
    const std::size_t c = class_of(bytes);
    if (c >= classes) {
      ::operator delete(p);
      return;
    }
    auto* const l = static_cast<link*>(p);
    l->next = free_[c];
    free_[c] = l;
  }

 private:
  struct link {
    link* next;
  };

  static constexpr std::size_t class_of(std::size_t bytes) noexcept {
    return bytes == 0 ? 1 : (bytes + grain - 1) / grain;
  }

  void refill(std::size_t c) {
    constexpr std::size_t per_slab = 256;
    const std::size_t unit = c * grain;
    // Room first, so that push_back below cannot throw once the slab is allocated.
    if (slabs_.size() == slabs_.capacity()) slabs_.reserve(2 * slabs_.size() + 16);
    auto* const slab = static_cast<std::byte*>(::operator new(unit* per_slab));
    slabs_.push_back(slab);
    for (std::size_t i = per_slab; i-- > 0;) {
      auto* const l = reinterpret_cast<link*>(slab + i * unit);
      l->next = free_[c];
      free_[c] = l;
    }
  }

  std::array<link*, classes> free_{};
  std::vector<void*> slabs_;
};

/// A standard allocator over a node_cache, for std::set / std::unordered_map nodes.
template <class T>
class node_allocator {
 public:
  using value_type = T;
  static_assert(alignof(T) <= node_cache::grain, "node_cache chunks are 16-byte aligned");

  explicit node_allocator(node_cache* cache) noexcept : cache_(cache) {}
  template <class U>
  node_allocator(const node_allocator<U>& other) noexcept : cache_(other.cache()) {}

  // T is a container's node, or a pointer when the container stores pointers: sizeof(T) is
  // what is meant either way.
  [[nodiscard]] T* allocate(std::size_t n) {
    return static_cast<T*>(cache_->get(n * sizeof(T)));  // NOLINT(bugprone-sizeof-expression)
  }
  void deallocate(T* p, std::size_t n) noexcept {
    cache_->put(p, n * sizeof(T));  // NOLINT(bugprone-sizeof-expression)
  }

  [[nodiscard]] node_cache* cache() const noexcept { return cache_; }
  template <class U>
  bool operator==(const node_allocator<U>& other) const noexcept {
    return cache_ == other.cache();
  }

 private:
  node_cache* cache_;
};

}  // namespace pinbench::alloc::detail
