// A snapshot's device as a replay (alloc/snapshot_records.hpp): the requests as events, the
// memory the recording began with, and PyTorch's own decisions placed among the events.
//
// The start state is what the trace and the dump's `segments` imply together: walking the trace
// backwards from the segments at the dump undoes every segment_alloc/free and map/unmap, which
// leaves the segments (and mapped ranges) that existed before the first entry. The blocks live
// then are those the trace frees without having allocated them, and those live at the dump at
// an address the trace never touched. A block known only from its free has the size the
// allocator's rules give its request, with the piece after it that the rules would not have
// split off.
#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "alloc/allocator.hpp"
#include "alloc/snapshot_records.hpp"
#include "core/error.hpp"

namespace pinbench::alloc::detail {

// Named rather than anonymous: a unity build puts this file beside the other readers.
namespace snapshot_planning {

// PyTorch's fixed sizes, as the caching allocator uses them.
constexpr std::uint64_t kSmallBuffer = small_segment_bytes;  // a small-pool segment
constexpr std::uint64_t kLargePage = large_segment_bytes;    // a large-pool expandable page
constexpr std::uint64_t kSmallSize = small_request_limit;    // the largest small request

bool is_release(entry_kind k) noexcept {
  return k == entry_kind::segment_free || k == entry_kind::segment_unmap;
}

std::optional<decision_kind> decision_of(entry_kind k) noexcept {
  switch (k) {
    case entry_kind::segment_alloc:
      return decision_kind::segment_alloc;
    case entry_kind::segment_free:
      return decision_kind::segment_free;
    case entry_kind::segment_map:
      return decision_kind::segment_map;
    case entry_kind::segment_unmap:
      return decision_kind::segment_unmap;
    case entry_kind::oom:
      return decision_kind::oom;
    default:
      return std::nullopt;
  }
}

// Mapped ranges of expandable segments, each with the stream it serves.
class range_set {
 public:
  struct range {
    std::uint64_t end = 0;
    std::int64_t stream = 0;
  };

  void add(std::uint64_t from, std::uint64_t to, std::int64_t stream) {
    remove(from, to);
    ranges_[from] = {to, stream};
  }

  void remove(std::uint64_t from, std::uint64_t to) {
    auto it = ranges_.lower_bound(from);
    if (it != ranges_.begin() && std::prev(it)->second.end > from) --it;
    while (it != ranges_.end() && it->first < to) {
      const std::uint64_t start = it->first;
      const range r = it->second;
      it = ranges_.erase(it);
      if (start < from) ranges_[start] = {from, r.stream};
      if (r.end > to) {
        ranges_[to] = {r.end, r.stream};
        break;
      }
    }
  }

  [[nodiscard]] bool empty() const noexcept { return ranges_.empty(); }

  [[nodiscard]] bool overlaps(std::uint64_t from, std::uint64_t to) const {
    auto it = ranges_.lower_bound(to);
    if (it == ranges_.begin()) return false;
    return std::prev(it)->second.end > from;
  }

  /// Neighbouring ranges of one stream as one (as PyTorch's snapshot shows them).
  [[nodiscard]] std::map<std::uint64_t, range> joined() const {
    std::map<std::uint64_t, range> out;
    for (const auto& [start, r] : ranges_) {
      if (!out.empty()) {
        auto& last = std::prev(out.end())->second;
        if (last.end == start && last.stream == r.stream) {
          last.end = r.end;
          continue;
        }
      }
      out[start] = r;
    }
    return out;
  }

 private:
  std::map<std::uint64_t, range> ranges_;
};

// A block live at the start, as found.
struct start_candidate {
  std::uint64_t address = 0, requested = 0;
  std::optional<std::uint64_t> size{};  // known exactly (from the dump's segments)
  std::int64_t stream = 0;
  std::optional<std::size_t> end{};  // the entry whose free ends it
};

// A start segment while it is being put together.
struct start_piece {
  std::uint64_t address = 0, size = 0;
  std::int64_t stream = 0;
  bool small = false, expandable = false;
  std::vector<start_candidate> live{};
};

class planner {
 public:
  planner(const device_records& r, const std::string& at) : r_(r), at_(at) {}

  snapshot_replay_plan run() {
    out_.recorded = std::make_shared<recording>();
    out_.recorded->device = r_.device;
    number_streams();
    pair_requests();
    find_start_segments();
    find_start_blocks();
    group_reservations();
    emit();
    return std::move(out_);
  }

 private:
  // Streams numbered in the order of their handles, so that pinbench's (stream, size, address)
  // order is PyTorch's, which compares cudaStream_t values; the default stream (0) is 0.
  void number_streams() {
    std::vector<std::int64_t> handles;
    for (const auto& e : r_.trace) handles.push_back(e.stream);
    for (const auto& s : r_.segments) handles.push_back(s.stream);
    std::sort(handles.begin(), handles.end(), [](std::int64_t a, std::int64_t b) {
      return static_cast<std::uint64_t>(a) < static_cast<std::uint64_t>(b);
    });
    handles.erase(std::unique(handles.begin(), handles.end()), handles.end());
    for (std::size_t i = 0; i < handles.size(); ++i)
      streams_[handles[i]] = static_cast<stream_id>(i);
  }
  [[nodiscard]] stream_id stream(std::int64_t handle) const { return streams_.at(handle); }

  // Pairs each alloc with the entry that ends it (its free_completed, else the free_requested
  // seen) and finds the frees of blocks the trace never allocated: blocks live at the start.
  void pair_requests() {
    const auto& trace = r_.trace;
    end_of_.assign(trace.size(), std::nullopt);
    struct open_alloc {
      std::size_t index;
      std::optional<std::size_t> requested;
    };
    std::unordered_map<std::uint64_t, open_alloc> live;
    std::unordered_set<std::uint64_t> allocated;
    std::unordered_map<std::uint64_t, std::size_t> start_open;  // address -> candidate
    std::unordered_set<std::uint64_t> start_seen;
    for (std::size_t i = 0; i < trace.size(); ++i) {
      const trace_record& e = trace[i];
      switch (e.kind) {
        case entry_kind::alloc:
          if (const auto it = live.find(e.address); it != live.end()) {
            // Allocated again without a free_completed: its free_requested is the best
            // evidence of when the block went.
            end_of_[it->second.index] = it->second.requested;
            live.erase(it);
          }
          live.emplace(e.address, open_alloc{i, std::nullopt});
          allocated.insert(e.address);
          allocs_.emplace_back(e.address, i);
          break;
        case entry_kind::free_requested:
          if (const auto it = live.find(e.address); it != live.end()) {
            it->second.requested = i;
          } else if (!allocated.contains(e.address) && start_seen.insert(e.address).second) {
            start_open[e.address] = start_freed_.size();
            start_freed_.push_back(
                {.address = e.address, .requested = e.size, .stream = e.stream, .end = i});
          }
          break;
        case entry_kind::free_completed:
          if (const auto it = live.find(e.address); it != live.end()) {
            end_of_[it->second.index] = i;
            live.erase(it);
          } else if (const auto s = start_open.find(e.address); s != start_open.end()) {
            start_freed_[s->second].end = i;
            start_open.erase(s);
          } else if (!allocated.contains(e.address) && start_seen.insert(e.address).second) {
            start_freed_.push_back(
                {.address = e.address, .requested = e.size, .stream = e.stream, .end = i});
          } else {
            ++dropped_frees_;
          }
          break;
        default:
          break;
      }
    }
    for (const auto& [address, a] : live) end_of_[a.index] = a.requested;
    std::sort(allocs_.begin(), allocs_.end());
    // Live at the dump, at an address the trace never touched: live since before it began.
    for (const auto& seg : r_.segments)
      for (const auto& b : seg.blocks)
        if (b.live && !allocated.contains(b.address) && !start_seen.contains(b.address))
          untouched_.push_back({.address = b.address,
                                .requested = b.requested_size,
                                .size = b.size,
                                .stream = seg.stream});
  }

  // The segment_alloc/free and map/unmap entries undone, from the last to the first, starting
  // from the segments at the dump: what is left existed before the first entry.
  void find_start_segments() {
    std::map<std::uint64_t, start_piece> whole;
    range_set mapped;
    for (const auto& s : r_.segments) {
      if (s.expandable) {
        mapped.add(s.address, s.address + s.size, s.stream);
      } else {
        whole[s.address] = {.address = s.address,
                            .size = s.size,
                            .stream = s.stream,
                            .small = s.small.value_or(s.size == kSmallBuffer)};
      }
    }
    for (std::size_t i = r_.trace.size(); i-- > 0;) {
      const trace_record& e = r_.trace[i];
      switch (e.kind) {
        case entry_kind::segment_alloc:
          whole.erase(e.address);
          break;
        case entry_kind::segment_free:
          whole[e.address] = {.address = e.address,
                              .size = e.size,
                              .stream = e.stream,
                              .small = e.size == kSmallBuffer};
          break;
        case entry_kind::segment_map:
          mapped.remove(e.address, e.address + e.size);
          break;
        case entry_kind::segment_unmap:
          mapped.add(e.address, e.address + e.size, e.stream);
          break;
        default:
          break;
      }
    }
    for (auto& [address, piece] : whole) pieces_.push_back(std::move(piece));
    for (const auto& [start, r] : mapped.joined()) {
      // Its pool is found with its reservation's (group_reservations).
      pieces_.push_back(
          {.address = start, .size = r.end - start, .stream = r.stream, .expandable = true});
    }
    std::sort(pieces_.begin(), pieces_.end(),
              [](const start_piece& a, const start_piece& b) { return a.address < b.address; });
    for (std::size_t i = 1; i < pieces_.size(); ++i)
      if (pieces_[i - 1].address + pieces_[i - 1].size > pieces_[i].address)
        fail(
            fmt::format("the segments existing when the recording began overlap (the trace's "
                        "segment entries and the dump's segments disagree): one at {:#x} of {} "
                        "bytes, one at {:#x}",
                        pieces_[i - 1].address, pieces_[i - 1].size, pieces_[i].address));
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw input_error(r_.source, at_, message);
  }

  start_piece* piece_holding(std::uint64_t address) {
    auto it = std::upper_bound(pieces_.begin(), pieces_.end(), address,
                               [](std::uint64_t a, const start_piece& p) { return a < p.address; });
    if (it == pieces_.begin()) return nullptr;
    --it;
    return address < it->address + it->size ? &*it : nullptr;
  }

  void find_start_blocks() {
    std::vector<start_candidate> all = start_freed_;
    all.insert(all.end(), untouched_.begin(), untouched_.end());
    std::size_t orphans = 0;
    for (const auto& c : all) {
      start_piece* piece = piece_holding(c.address);
      if (piece == nullptr) {
        // In no segment that the trace or the dump shows (a snapshot without its segments):
        // a segment of its own, as a cudaMalloc for it would have been.
        const std::uint64_t block = c.size.value_or(caching_block_size(c.requested, r_.settings));
        start_piece own{.address = c.address,
                        .size = caching_segment_size(block),
                        .stream = c.stream,
                        .small = block <= kSmallSize};
        auto at =
            std::upper_bound(pieces_.begin(), pieces_.end(), c.address,
                             [](std::uint64_t a, const start_piece& p) { return a < p.address; });
        piece = &*pieces_.insert(at, std::move(own));
        ++orphans;
      }
      piece->live.push_back(c);
    }
    if (orphans > 0)
      out_.notes.push_back(fmt::format(
          "{} block(s) live when the recording began lie in no segment the snapshot shows: each "
          "was given a segment of its own",
          orphans));
    for (auto& piece : pieces_) size_blocks(piece);
  }

  // Sizes the blocks known only from their free: the rounded request, plus the rest of the
  // free space after it that the allocator would not have split off. The free space ends at the
  // next live block, or where the trace allocates while the block is live: an allocation takes
  // a free block from its start, so a free block began there.
  void size_blocks(start_piece& piece) {
    auto& live = piece.live;
    std::sort(live.begin(), live.end(), [](const start_candidate& a, const start_candidate& b) {
      return a.address < b.address;
    });
    const std::uint64_t max_split = r_.settings.max_split_size_bytes.value_or(UINT64_MAX);
    for (std::size_t k = 0; k < live.size(); ++k) {
      start_candidate& c = live[k];
      std::uint64_t boundary =
          k + 1 < live.size() ? live[k + 1].address : piece.address + piece.size;
      if (c.size) {
        c.size = std::min(*c.size, boundary - c.address);
        continue;
      }
      auto a = std::upper_bound(allocs_.begin(), allocs_.end(),
                                std::pair<std::uint64_t, std::size_t>{c.address, SIZE_MAX});
      for (; a != allocs_.end() && a->first < boundary; ++a) {
        if (!c.end || a->second < *c.end) {
          boundary = a->first;
          break;
        }
      }
      const std::uint64_t rounded = caching_block_size(c.requested, r_.settings);
      std::uint64_t size = std::min(rounded, boundary - c.address);
      const std::uint64_t rest = boundary - c.address - size;
      // Large pool: a remainder of 1 MiB or less is not split off, nor anything for an
      // oversize request. The small pool and expandable segments split any remainder.
      if (!piece.small && !piece.expandable && (rounded >= max_split || rest <= kSmallSize))
        size += rest;
      c.size = size;
    }
  }

  // Expandable segments: PyTorch reserves an address range per stream and pool when it first
  // maps into one, and gives it back when empty_cache() (or the retry path) leaves nothing of
  // it mapped; the next map of that stream and pool reserves anew, often at the same address.
  // The trace is walked forward with the reservations live at each point: those live at the
  // start (their base the lowest address known of them) are adopted; each made during the trace
  // is reserved again by the replay, in the same order, at its first map's address, its base.
  //
  // A map's pool is told by its size (a small request maps at most two 2 MiB pages, a large
  // one whole 20 MiB pages); a range of the start state's by the dump's segment_type where it
  // still shows, else by the first entry that maps or unmaps in it, else by its size.
  void group_reservations() {
    struct reservation {
      std::uint64_t base = UINT64_MAX;
      range_set mapped;
      std::vector<start_piece*> pieces;
    };
    using key = std::pair<std::int64_t, bool>;  // stream, small pool
    std::map<key, reservation> live;
    for (auto& p : pieces_) {
      if (!p.expandable) continue;
      p.small = start_pool(p);
      reservation& r = live[{p.stream, p.small}];
      r.base = std::min(r.base, p.address);
      r.mapped.add(p.address, p.address + p.size, p.stream);
      r.pieces.push_back(&p);
    }
    std::vector<std::unique_ptr<reservation>> gone;  // kept for the start pieces' bases
    for (const trace_record& e : r_.trace) {
      if (e.kind == entry_kind::segment_map) {
        const key k{e.stream, e.size % kLargePage != 0};
        auto it = live.find(k);
        if (it == live.end()) {
          it = live.emplace(k, reservation{}).first;
          it->second.base = e.address;
          out_.recorded->reservation_bases.push_back(e.address);
        } else if (!it->second.pieces.empty()) {
          it->second.base = std::min(it->second.base, e.address);
        }
        it->second.mapped.add(e.address, e.address + e.size, e.stream);
      } else if (e.kind == entry_kind::segment_unmap) {
        for (const bool small : {false, true}) {
          const auto it = live.find({e.stream, small});
          if (it == live.end() || !it->second.mapped.overlaps(e.address, e.address + e.size))
            continue;
          it->second.mapped.remove(e.address, e.address + e.size);
          if (it->second.mapped.empty()) {  // released with its last page
            if (!it->second.pieces.empty())
              gone.push_back(std::make_unique<reservation>(std::move(it->second)));
            live.erase(it);
          }
          break;
        }
      }
    }
    const auto record = [&](const reservation& r) {
      for (start_piece* p : r.pieces) reservation_of_[p->address] = r.base;
    };
    for (const auto& [k, r] : live) record(r);
    for (const auto& r : gone) record(*r);
    // PyTorch maps whole pages from its reservation's base.
    for (const auto& p : pieces_) {
      if (!p.expandable) continue;
      const std::uint64_t page = p.small ? kSmallBuffer : kLargePage;
      const std::uint64_t base = reservation_of_.at(p.address);
      if ((p.address - base) % page != 0 || p.size % page != 0)
        fail(
            fmt::format("an expandable range mapped when the recording began, at {:#x} of {} "
                        "bytes, is not made of whole {} MiB pages from {:#x}",
                        p.address, p.size, page >> 20, base));
    }
  }

  // The pool of a range mapped when the recording began: the dump's segment_type; else what
  // the first request made in it, or map into it, says (a request up to 1 MiB is the small
  // pool's; a map's size as above); an unmap only by a size no large page makes; else its size.
  [[nodiscard]] bool start_pool(const start_piece& p) const {
    for (const auto& seg : r_.segments)
      if (seg.expandable && seg.small && seg.address < p.address + p.size &&
          p.address < seg.address + seg.size)
        return *seg.small;
    const auto inside = [&](const trace_record& e) {
      return e.stream == p.stream && e.address < p.address + p.size && p.address <= e.address;
    };
    for (const trace_record& e : r_.trace) {
      if (e.kind == entry_kind::alloc && inside(e))
        return caching_block_size(e.size, r_.settings) <= kSmallSize;
      if (e.kind == entry_kind::segment_map && inside(e)) return e.size % kLargePage != 0;
      if (e.kind == entry_kind::segment_unmap && inside(e) && e.size % kLargePage != 0) return true;
    }
    if (!p.live.empty())
      return caching_block_size(p.live.front().requested, r_.settings) <= kSmallSize;
    return p.size % kLargePage != 0;
  }

  // The events in trace order: allocations with fresh ids, each free where its block went back
  // (the start state's blocks too), an empty_cache where the program called it, and every
  // segment entry and oom as one of PyTorch's decisions.
  void emit() {
    const auto& trace = r_.trace;
    recording& rec = *out_.recorded;
    std::uint64_t next_id = 1;
    // The start state's blocks take ids of their own, above any the trace's allocations get,
    // so that those are numbered as the JSON conversion numbers them.
    std::uint64_t next_start_id = start_block_ids;

    // The start state, with ids for the blocks the trace frees.
    std::unordered_map<std::size_t, std::vector<std::uint64_t>> frees_at;  // entry -> ids
    for (const auto& piece : pieces_) {
      start_segment seg{.address = piece.address,
                        .size = piece.size,
                        .stream = stream(piece.stream),
                        .small = piece.small,
                        .expandable = piece.expandable};
      if (piece.expandable) seg.reservation = reservation_of_.at(piece.address);
      for (const auto& c : piece.live) {
        start_block b{
            .address = c.address, .size = c.size.value_or(0), .requested_size = c.requested};
        if (c.end) {
          b.id = next_start_id++;
          frees_at[*c.end].push_back(b.id);
        }
        seg.live.push_back(b);
      }
      rec.start.segments.push_back(std::move(seg));
    }

    std::unordered_map<std::size_t, std::vector<std::size_t>> allocs_ended_at;
    for (std::size_t a = 0; a < end_of_.size(); ++a)
      if (end_of_[a]) allocs_ended_at[*end_of_[a]].push_back(a);

    std::unordered_map<std::size_t, std::uint64_t> ids;  // alloc entry -> event id
    constexpr std::uint64_t no_event = UINT64_MAX;
    std::uint64_t release_event = no_event;  // the empty_cache event of this release run
    bool in_release = false;
    auto& events = out_.events;
    for (std::size_t i = 0; i < trace.size(); ++i) {
      const trace_record& e = trace[i];
      if (e.kind == entry_kind::other) continue;
      if (!is_release(e.kind)) {
        in_release = false;
      } else if (!in_release) {
        in_release = true;
        release_event = no_event;
        if (release_by_empty_cache(i)) {
          event ec;
          ec.op = event::kind::empty_cache;
          release_event = events.size();
          events.push_back(std::move(ec));
          rec.entries.push_back(i);
          ++rec.empty_cache_calls;
        } else {
          ++rec.retry_releases;
        }
      }
      if (const auto d = decision_of(e.kind)) {
        recorded_decision rd;
        rd.decision = {.kind = *d,
                       .address = *d == decision_kind::oom ? 0 : e.address,
                       .size = e.size,
                       .stream = stream(e.stream)};
        rd.entry = i;
        rd.event = release_event != no_event && is_release(e.kind) ? release_event : events.size();
        rec.decisions.push_back(rd);
      }
      switch (e.kind) {
        case entry_kind::alloc:
        case entry_kind::oom: {
          if (e.kind == entry_kind::oom) {
            out_.oom_entry = i;
            out_.oom_event_index = events.size();
          }
          if (e.size == 0) break;
          const std::uint64_t id = next_id++;
          if (e.kind == entry_kind::alloc) ids[i] = id;
          event ev;
          ev.op = event::kind::alloc;
          ev.id = id;
          ev.size = e.size;
          ev.stream = stream(e.stream);
          rec.placements.resize(events.size() + 1, 0);
          if (e.kind == entry_kind::alloc) rec.placements.back() = e.address;
          events.push_back(std::move(ev));
          rec.entries.push_back(i);
          break;
        }
        case entry_kind::free_requested:
        case entry_kind::free_completed: {
          if (const auto it = allocs_ended_at.find(i); it != allocs_ended_at.end()) {
            for (const std::size_t a : it->second) {
              const auto id = ids.find(a);
              if (id == ids.end()) continue;  // a zero-byte alloc: never replayed
              push_free(id->second, i);
            }
          }
          if (const auto it = frees_at.find(i); it != frees_at.end())
            for (const std::uint64_t id : it->second) push_free(id, i);
          break;
        }
        default:
          break;
      }
    }

    auto& notes = out_.notes;
    if (!rec.start.empty())
      notes.push_back(fmt::format(
          "the recording began with {} segment(s) ({} bytes reserved) and {} live block(s) "
          "({} bytes): the replay starts from them",
          rec.start.segments.size(), rec.start.reserved_bytes(), rec.start.live_blocks(),
          rec.start.live_bytes()));
    if (dropped_frees_ > 0)
      notes.push_back(fmt::format("dropped {} free(s) of blocks freed twice", dropped_frees_));
    std::size_t still_live = 0;
    for (const auto& [a, id] : ids)
      if (!end_of_[a]) ++still_live;
    if (still_live > 0)
      notes.push_back(
          fmt::format("{} allocation(s) are still live at the end of the trace", still_live));
    if (rec.empty_cache_calls > 0)
      notes.push_back(fmt::format(
          "{} run(s) of segment_free/segment_unmap between requests replayed as empty_cache()",
          rec.empty_cache_calls));
    if (out_.oom_entry)
      notes.push_back(fmt::format(
          "{}[{}]: the oom request of {} bytes is replayed as an allocation that is never freed",
          at_, *out_.oom_entry, trace[*out_.oom_entry].size));
  }

  void push_free(std::uint64_t id, std::size_t entry) {
    event ev;
    ev.op = event::kind::free;
    ev.id = id;
    out_.events.push_back(std::move(ev));
    out_.recorded->entries.push_back(entry);
  }

  // A release run came from an allocation's retry path when that allocation's segment_alloc or
  // segment_map (or its oom) follows it and none of the segments released could have served
  // it from the cache (get_free_block would have found it: the cudaMalloc that failed was never
  // tried). Any other run came from an empty_cache() call of the program.
  [[nodiscard]] bool release_by_empty_cache(std::size_t first) const {
    const auto& trace = r_.trace;
    // The stack recorded with the entry says, when there is one.
    if (trace[first].by_empty_cache) return *trace[first].by_empty_cache;
    std::size_t j = first;
    while (j < trace.size() && (is_release(trace[j].kind) || trace[j].kind == entry_kind::other))
      ++j;
    if (j == trace.size()) return true;
    const entry_kind next = trace[j].kind;
    if (next != entry_kind::segment_alloc && next != entry_kind::segment_map &&
        next != entry_kind::oom)
      return true;
    std::size_t request = j;
    while (request < trace.size() && trace[request].kind != entry_kind::alloc &&
           trace[request].kind != entry_kind::oom)
      ++request;
    if (request == trace.size()) return false;
    const trace_record& wanted = trace[request];
    const std::uint64_t size = caching_block_size(wanted.size, r_.settings);
    const std::uint64_t max_split = r_.settings.max_split_size_bytes.value_or(UINT64_MAX);
    const std::uint64_t window = r_.settings.max_non_split_rounding_bytes.value_or(kLargePage);
    for (std::size_t k = first; k < j; ++k) {
      const trace_record& e = trace[k];
      if (e.kind != entry_kind::segment_free || e.stream != wanted.stream) continue;
      const bool same_pool = (e.size == kSmallBuffer) == (size <= kSmallSize);
      // get_free_block's rules for oversize blocks and requests.
      const bool fits =
          e.size >= size && (size < max_split ? e.size < max_split : e.size < size + window);
      if (same_pool && fits) return true;
    }
    return false;
  }

  const device_records& r_;
  const std::string& at_;
  snapshot_replay_plan out_;
  std::map<std::int64_t, stream_id> streams_;
  std::vector<std::optional<std::size_t>> end_of_;
  std::vector<std::pair<std::uint64_t, std::size_t>> allocs_;  // (address, entry), sorted
  std::vector<start_candidate> start_freed_, untouched_;
  std::uint64_t dropped_frees_ = 0;
  std::vector<start_piece> pieces_;
  std::unordered_map<std::uint64_t, std::uint64_t> reservation_of_;  // range -> its base
};

}  // namespace snapshot_planning

snapshot_replay_plan plan_snapshot_replay(const device_records& records, const std::string& at) {
  return snapshot_planning::planner(records, at).run();
}

}  // namespace pinbench::alloc::detail
