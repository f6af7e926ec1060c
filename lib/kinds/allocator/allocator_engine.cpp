// The allocator engine: one sample is one whole run of the workload on a fresh allocator and
// upstream. Latencies vary run to run; the policy counters do not (same seed, same counters).
#include "kinds/allocator/allocator_engine.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "alloc/allocator.hpp"
#include "alloc/config.hpp"
#include "alloc/follow.hpp"
#include "alloc/pytorch_version.hpp"
#include "alloc/replay.hpp"
#include "alloc/summary.hpp"
#include "alloc/torch_snapshot.hpp"
#include "alloc/upstream.hpp"
#include "alloc/workload.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/stats.hpp"
#include "kinds/allocator/allocator_params.hpp"
#include "kinds/allocator/snapshot_json.hpp"
#include "measure/protocol.hpp"

namespace pinbench::kinds::allocator {

namespace {

constexpr auto lower = result::direction::lower;
constexpr auto none = result::direction::none;

// Latencies with bounded memory: every value up to `capacity`, then a uniform sample of them
// (reservoir sampling, deterministic), so that a huge trace cannot exhaust the host. Timed in
// batches, a value is one batch's time per call, and the totals give the mean per call.
class latency_log {
 public:
  explicit latency_log(std::size_t capacity, std::uint64_t seed)
      : capacity_(capacity), state_(seed * 0x9E3779B97F4A7C15ull | 1) {}

  /// `calls` consecutive calls that took `ns` together (1: a per-call time).
  void add_batch(std::int64_t ns, std::size_t calls) {
    total_ns_ += static_cast<double>(ns);
    calls_ += calls;
    add(static_cast<double>(ns) / static_cast<double>(calls));
  }
  /// Total time over total calls.
  [[nodiscard]] double mean_per_call() const noexcept {
    return calls_ == 0 ? 0 : total_ns_ / static_cast<double>(calls_);
  }

  void add(double ns) {
    ++seen_;
    if (kept_.size() < capacity_) {
      kept_.push_back(ns);
      return;
    }
    const std::uint64_t slot = next() % seen_;
    if (slot < capacity_) kept_[slot] = ns;
  }
  [[nodiscard]] bool empty() const noexcept { return kept_.empty(); }
  [[nodiscard]] const std::vector<double>& values() const noexcept { return kept_; }
  /// The value at quantile q (type 7, as summarize()).
  [[nodiscard]] double quantile(double q) const {
    std::vector<double> sorted = kept_;
    std::sort(sorted.begin(), sorted.end());
    return quantile_sorted(sorted, q);
  }

 private:
  std::uint64_t next() noexcept {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }
  std::size_t capacity_;
  std::uint64_t state_;
  std::uint64_t seen_ = 0;
  std::vector<double> kept_;
  double total_ns_ = 0;
  std::uint64_t calls_ = 0;
};

constexpr std::size_t max_call_samples = std::size_t{1} << 20;  // per run
constexpr std::size_t max_iteration_samples = 10000;            // per case

struct op_counts {
  std::uint64_t allocs = 0, frees = 0, ooms = 0, skipped_frees = 0, skipped_allocs = 0,
                empty_cache_calls = 0, iterations = 0;
  [[nodiscard]] nlohmann::json to_json() const {
    return {{"allocs", allocs},
            {"frees", frees},
            {"ooms", ooms},
            {"skipped_frees", skipped_frees},
            {"skipped_allocs", skipped_allocs},
            {"empty_cache_calls", empty_cache_calls},
            {"iterations", iterations}};
  }
};

// Allocated and reserved bytes over the workload, for the report's chart, in at most
// max_points points: each point holds the highest values over a run of consecutive calls (so
// that no peak is lost), and runs double in length whenever the points would overflow.
class timeline_recorder {
 public:
  static constexpr std::size_t max_points = 500;  // even: pairs merge exactly
  static constexpr std::size_t max_marks = 200;

  /// After every allocator call (alloc, free, empty_cache, an allocation that ran out of memory).
  void add(std::int64_t allocated, std::int64_t reserved) {
    const std::uint64_t call = calls_++;
    if (points_.empty() || call / width_ != points_.back().first_call / width_) {
      if (points_.size() == max_points) merge_pairs();
      if (points_.empty() || call / width_ != points_.back().first_call / width_) {
        points_.push_back({call, allocated, reserved});
        return;
      }
    }
    auto& p = points_.back();
    p.allocated = std::max(p.allocated, allocated);
    p.reserved = std::max(p.reserved, reserved);
  }

  /// An iteration mark of the workload: drawn as a boundary while there are few enough.
  void mark_iteration() {
    ++marks_seen_;
    if (marks_.size() < max_marks) marks_.push_back(calls_);
  }

  [[nodiscard]] nlohmann::json to_json() const {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& p : points_) points.push_back({p.first_call, p.allocated, p.reserved});
    nlohmann::json out{{"columns", {"call", "allocated_bytes", "reserved_bytes"}},
                       {"calls", calls_},
                       {"calls_per_point", width_},
                       {"points", std::move(points)}};
    // Too many marks would draw a solid block; then none are given.
    if (marks_seen_ <= max_marks) out["iterations"] = marks_;
    return out;
  }

 private:
  struct point {
    std::uint64_t first_call;
    std::int64_t allocated, reserved;
  };
  void merge_pairs() {
    std::vector<point> merged;
    merged.reserve(points_.size() / 2 + 1);
    for (std::size_t i = 0; i < points_.size(); i += 2) {
      point p = points_[i];
      if (i + 1 < points_.size()) {
        p.allocated = std::max(p.allocated, points_[i + 1].allocated);
        p.reserved = std::max(p.reserved, points_[i + 1].reserved);
      }
      merged.push_back(p);
    }
    points_ = std::move(merged);
    width_ *= 2;
  }

  std::vector<point> points_;
  std::vector<std::uint64_t> marks_;
  std::uint64_t calls_ = 0, width_ = 1, marks_seen_ = 0;
};

// The snapshot at peak as a compact map for the report: segments in address order (offsets
// from the lowest segment, so that runs compare), each with its blocks; neighbouring blocks of
// one state are joined. Bounded: at most max_segments segments and max_blocks blocks each.
nlohmann::json segment_map(const alloc::snapshot& s) {
  constexpr std::size_t max_segments = 256, max_blocks = 24;
  using nlohmann::json;
  std::uint64_t reserved = 0, allocated = 0;
  for (const auto& seg : s.segments) {
    reserved += seg.total_size;
    allocated += seg.allocated_size;
  }
  const std::uint64_t base = s.segments.empty() ? 0 : s.segments.front().address;
  json segments = json::array();
  for (const auto& seg : s.segments) {
    if (segments.size() == max_segments) break;
    json blocks = json::array();
    std::size_t kept = 0;
    bool cut = false;
    for (const auto& b : seg.blocks) {
      if (!blocks.empty() && blocks.back()["state"] == b.state) {
        blocks.back()["size"] = blocks.back()["size"].get<std::uint64_t>() + b.size;
        continue;
      }
      if (kept == max_blocks) {
        cut = true;
        break;
      }
      blocks.push_back({{"offset", b.address - seg.address}, {"size", b.size}, {"state", b.state}});
      ++kept;
    }
    json entry{{"offset", seg.address - base},
               {"size", seg.total_size},
               {"allocated_bytes", seg.allocated_size},
               {"pool", seg.segment_type},
               {"stream", seg.stream},
               {"blocks", std::move(blocks)}};
    if (seg.expandable) entry["expandable"] = true;
    if (cut) entry["blocks_cut"] = true;
    segments.push_back(std::move(entry));
  }
  return {{"reserved_bytes", reserved},
          {"allocated_bytes", allocated},
          {"segments_total", s.segments.size()},
          {"segments", std::move(segments)}};
}

struct run_output {
  latency_log alloc_ns{max_call_samples, 1}, free_ns{max_call_samples, 2};
  std::optional<double> hit_pair_ns;  ///< batch-timed cache-hit allocate+free, ns per pair
  std::vector<double> iteration_ns, empty_cache_ns;
  op_counts counts;
  std::string first_oom;
  /// Its event's index, where calls are made one at a time (per-call timing, observation).
  std::optional<std::uint64_t> first_oom_event;
  alloc::memory_stats stats;  ///< at the end of the workload, before leftovers are freed
  std::optional<alloc::snapshot> peak_snapshot;
  /// At the end of the workload, with the whole trace (an observation run with history).
  std::optional<alloc::snapshot> final_snapshot;
  /// A run that followed a PyTorch snapshot's decisions: how far it reproduced them.
  std::optional<alloc::decision_check> check;
  std::optional<timeline_recorder> timeline;
  bool interrupted = false;
};

// What an untimed observation run records besides the counters.
struct observe_options {
  bool timeline = false;          ///< allocated and reserved bytes after every call
  bool snapshot_at_peak = false;  ///< the snapshot taken when reserved memory peaked
  bool history = false;           ///< trace entries in that snapshot (run --snapshot)
  [[nodiscard]] bool any() const noexcept { return timeline || snapshot_at_peak || history; }
};

// Consecutive calls of one kind (allocs, or frees) timed together: two clock reads per batch
// rather than per call, so that the timer's own cost (about a cache hit's) is spread over many
// calls. 1 = every call timed alone, which keeps the per-call distribution (p99).
constexpr std::size_t batch_calls = 64;

// The cache-hit pair after a timed run: `hit_pairs` allocate+free of one cached size per batch.
constexpr std::size_t hit_pairs = 1000;
constexpr int hit_batches = 15;

// What a case runs with, resolved when it starts: the config by the release's rules, how the
// trace is read, and whether an observation run follows PyTorch's recorded decisions.
struct case_setup {
  alloc::config conf;
  std::string release_from;  ///< why conf.release: the param, the snapshot's format, the default
  alloc::trace_options trace;
  /// A PyTorch snapshot's facts; none for other workloads.
  std::shared_ptr<const alloc::torch_snapshot_facts> recorded;
  /// Observation runs follow PyTorch's decisions and check themselves against them (the
  /// caching allocator under the snapshot's own settings); else why not.
  bool follow = false;
  std::string not_followed;
  /// The counters come from the observation run on PyTorch's addresses.
  [[nodiscard]] bool trace_follows() const noexcept { return recorded != nullptr; }
};

// What the case records of a replay checked against PyTorch (info.pytorch_decisions).
nlohmann::json decisions_json(const alloc::torch_snapshot_facts& facts,
                              const std::optional<alloc::decision_check>& check,
                              const std::string& not_followed) {
  nlohmann::json d{
      {"pytorch", facts.pytorch_decisions},
      {"start_state",
       {{"segments", facts.start_segments}, {"live_blocks", facts.start_live_blocks}}}};
  if (facts.format)
    d["snapshot_format"] = {{"releases", facts.format->releases()},
                            {"evidence", facts.format->evidence}};
  if (!not_followed.empty()) {
    d["checked"] = false;
    d["why_not"] = not_followed;
    return d;
  }
  if (!check) {
    d["checked"] = false;
    d["why_not"] = "the observation run was interrupted";
    return d;
  }
  d["checked"] = true;
  d["replayed"] = check->replayed;
  d["identical"] = check->identical;
  d["reproduced"] = check->reproduced();
  d["empty_cache_from_trace"] = check->empty_cache_calls;
  d["failures_as_pytorch"] = check->forced_failures;
  d["pytorch_peak_reserved"] = check->pytorch_peak_reserved;
  d["device_bytes"] = check->device_bytes;
  if (check->device_limit) d["pytorch_device_limit"] = *check->device_limit;
  d["summary"] = check->summary();
  if (check->first) {
    const auto& f = *check->first;
    auto side = [](const std::optional<alloc::allocator_decision>& x) -> nlohmann::json {
      if (!x) return nullptr;
      return {{"action", alloc::to_string(x->kind)},
              {"address", x->address},
              {"size", x->size},
              {"stream", x->stream}};
    };
    d["first_divergence"] = {
        {"index", f.index},
        {"event", f.event},
        {"entry", f.entry ? nlohmann::json(*f.entry) : nlohmann::json(nullptr)},
        {"pytorch", side(f.pytorch)},
        {"pinbench", side(f.pinbench)},
        {"text", f.describe()}};
  }
  if (check->first_placement) {
    const auto& f = *check->first_placement;
    d["first_placement_difference"] = {
        {"event", f.event}, {"size", f.size}, {"pytorch", f.pytorch}, {"pinbench", f.pinbench}};
  }
  return d;
}

// One run: a fresh upstream and allocator, the workload's events applied in order. A
// snapshot's trace starts from the memory its recording began with.
class workload_run {
 public:
  workload_run(const allocator_params& p, const case_setup& setup, device::backend& dev,
               bool observing)
      : p_(p) {
    const alloc::config& conf = setup.conf;
    if (p.workload == workload_kind::trace) {
      events_ = alloc::open_trace(p.trace_file, setup.trace);
      recorded_ = events_->recorded();
    }
    const std::size_t capacity =
        p.device_memory != 0 ? p.device_memory : dev.device_memory().total_bytes;
    const bool follow = observing && recorded_ && p.allocator == allocator_type::caching;
    if (p.allocator == allocator_type::async) {
      if (!dev.supports_async_alloc())
        throw error(dev.emulated()
                        ? "allocator async (cudaMallocAsync) needs the cuda backend"
                        : "allocator async (cudaMallocAsync) is not supported by this device "
                          "or driver (no memory pools)");
      allocator_ = alloc::make_async_allocator(dev, p.device_memory);
    } else if (follow) {
      // The decisions depend on addresses only where PyTorch's would: PyTorch's addresses,
      // on an emulated device of the capacity, whatever the backend.
      follower_ = std::make_unique<alloc::decision_follower>(*recorded_, capacity, setup.follow);
    } else if (dev.emulated()) {
      // The arena costs no memory, so the emulated device can be as large as asked.
      upstream_ = alloc::make_arena_upstream(capacity);
    } else {
      upstream_ = alloc::make_backend_upstream(dev, p.device_memory);
    }
    alloc::upstream* const up =
        follower_ ? static_cast<alloc::upstream*>(follower_.get()) : upstream_.get();
    if (p.allocator == allocator_type::raw)
      allocator_ = alloc::make_raw_allocator(*up);
    else if (p.allocator == allocator_type::caching)
      allocator_ = alloc::make_caching_allocator(
          *up, conf, p.memory_fraction, follower_ && setup.follow ? follower_.get() : nullptr);
    switch (p.workload) {
      case workload_kind::training_loop:
        events_ = alloc::make_training_loop(p.loop);
        break;
      case workload_kind::random:
        events_ = alloc::make_random(p.random);
        break;
      case workload_kind::trace:
        break;
    }
    if (recorded_) alloc::adopt_start(*allocator_, *recorded_, live_, kept_);
  }

  workload_run(const workload_run&) = delete;
  workload_run& operator=(const workload_run&) = delete;

  ~workload_run() {
    // Live blocks go back before the allocator goes, so that a real device gets its memory back.
    try {
      for (auto& [id, ptr] : live_) allocator_->deallocate(ptr);
      for (void* ptr : kept_) allocator_->deallocate(ptr);
      live_.clear();
      allocator_->empty_cache();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
  }

  /// Applies every event, allocs and frees in batches of up to `batch` consecutive calls of
  /// one kind timed together; an observation run (batch 1) also records what `observe` asks for
  /// (the snapshot is the one taken when reserved memory reached its highest point).
  void execute(run_output& out, std::size_t batch, const observe_options& observe = {}) {
    // The whole trace, from the first request to the last, as PyTorch's history keeps it.
    if (observe.history) allocator_->record_history(true, std::size_t{1} << 24);
    if (observe.timeline) out.timeline.emplace();
    observe_ = observe;
    std::int64_t iteration_ns = 0;
    std::uint64_t n = 0;
    pending_.clear();
    alloc::event e;
    while (events_->next(e)) {
      current_event_ = n;
      if (follower_) follower_->at_event(n);
      if ((++n & 1023U) == 0 && interrupt_requested()) {
        out.interrupted = true;
        break;
      }
      if (e.op == alloc::event::kind::alloc || e.op == alloc::event::kind::free) {
        if (!pending_.empty() && (pending_.front().op != e.op || pending_.size() == batch ||
                                  (e.op == alloc::event::kind::alloc && pending_has(e.id))))
          iteration_ns += flush(out);
        pending_.push_back(std::move(e));
        // One call at a time: each is made while its event is the one in hand (a run that
        // follows PyTorch needs it, and an OOM's event is known).
        if (batch == 1) iteration_ns += flush(out);
        continue;
      }
      iteration_ns += flush(out);
      switch (e.op) {
        case alloc::event::kind::empty_cache:
          iteration_ns += timed_empty_cache(out);
          observe_call(out);
          break;
        case alloc::event::kind::mark:
          if (e.label != "iteration") break;
          ++out.counts.iterations;
          if (out.timeline) out.timeline->mark_iteration();
          if (p_.empty_cache_every > 0 &&
              out.counts.iterations % static_cast<std::uint64_t>(p_.empty_cache_every) == 0) {
            iteration_ns += timed_empty_cache(out);
            observe_call(out);
          }
          out.iteration_ns.push_back(static_cast<double>(iteration_ns));
          iteration_ns = 0;
          break;
        default:
          break;
      }
    }
    if (!out.interrupted) (void)flush(out);
    out.stats = allocator_->stats();
    if (observe.snapshot_at_peak && !out.peak_snapshot)
      out.peak_snapshot = allocator_->take_segments();
    if (observe.history) out.final_snapshot = allocator_->take_snapshot();
    if (follower_ && !out.interrupted) out.check = follower_->check();
  }

  /// The cost of a cache hit: allocate and free the last size the workload allocated, over and
  /// over, `hit_pairs` pairs per timed batch; the median batch's ns per pair. Nothing when the
  /// pairs were not all hits (the allocator had to reach the device) or ran out of memory.
  [[nodiscard]] std::optional<double> time_hit_pairs() {
    if (!last_size_) return std::nullopt;
    const std::size_t size = *last_size_;
    const std::uint32_t stream = last_stream_;
    try {
      allocator_->deallocate(allocator_->allocate(size, stream));  // now it is cached
      const auto device_allocs = allocator_->stats().num_device_alloc;
      std::vector<double> per_pair;
      for (int b = 0; b < hit_batches; ++b) {
        const std::int64_t t0 = now_ns();
        for (std::size_t i = 0; i < hit_pairs; ++i)
          allocator_->deallocate(allocator_->allocate(size, stream));
        per_pair.push_back(static_cast<double>(now_ns() - t0) / static_cast<double>(hit_pairs));
      }
      if (allocator_->stats().num_device_alloc != device_allocs) return std::nullopt;
      std::sort(per_pair.begin(), per_pair.end());
      return quantile_sorted(per_pair, 0.5);
    } catch (const alloc::oom_error&) {
      return std::nullopt;
    }
  }

 private:
  [[nodiscard]] bool pending_has(std::uint64_t id) const {
    return std::any_of(pending_.begin(), pending_.end(),
                       [&](const alloc::event& p) { return p.id == id; });
  }

  // After each call of an observation run: one point of the timeline (stats() is a copy: no
  // cost to the timed runs, which do not observe) and the snapshot when reserved memory peaks.
  void observe_call(run_output& out) {
    if (!observe_.any()) return;
    const auto st = allocator_->stats();
    if (out.timeline)
      out.timeline->add(st.allocated_bytes.all.current, st.reserved_bytes.all.current);
    if (observe_.snapshot_at_peak && st.reserved_bytes.all.current > best_reserved_) {
      best_reserved_ = st.reserved_bytes.all.current;
      out.peak_snapshot = allocator_->take_segments();
    }
  }

  // Runs the pending calls; returns the time they took.
  std::int64_t flush(run_output& out) {
    if (pending_.empty()) return 0;
    const std::int64_t spent =
        pending_.front().op == alloc::event::kind::alloc ? run_allocs(out) : run_frees(out);
    pending_.clear();
    return spent;
  }

  // The pending allocs, timed as batches: a batch cut by an out-of-memory error is not a
  // latency sample (its time mixes hits with the failed search); the calls after it form the
  // next batch. Ids still live are skipped before timing (a trace that reuses one).
  std::int64_t run_allocs(run_output& out) {
    std::erase_if(pending_, [&](const alloc::event& a) {
      if (!live_.contains(a.id)) return false;
      ++out.counts.skipped_allocs;
      return true;
    });
    ptrs_.assign(pending_.size(), nullptr);
    std::int64_t spent = 0;
    std::size_t begin = 0;
    while (begin < pending_.size()) {
      std::size_t i = begin;
      const std::int64_t t0 = now_ns();
      try {
        for (; i < pending_.size(); ++i) {
          ptrs_[i] = allocator_->allocate(pending_[i].size, pending_[i].stream);
          if (follower_)
            follower_->on_placement(reinterpret_cast<std::uintptr_t>(ptrs_[i]), pending_[i].size);
          observe_call(out);
        }
      } catch (const alloc::oom_error& oom) {
        spent += now_ns() - t0;
        // Out of memory is a result: the allocation is skipped, and so is its free.
        ++out.counts.ooms;
        if (out.first_oom.empty()) {
          out.first_oom = oom.what();
          if (pending_.size() == 1) out.first_oom_event = current_event_;
        }
        failed_.insert(pending_[i].id);
        keep_allocated(out, begin, i);
        observe_call(out);
        begin = i + 1;
        continue;
      }
      const std::int64_t t1 = now_ns();
      spent += t1 - t0;
      if (i > begin) out.alloc_ns.add_batch(t1 - t0, i - begin);
      keep_allocated(out, begin, i);
      begin = i;
    }
    return spent;
  }

  void keep_allocated(run_output& out, std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) live_.emplace(pending_[k].id, ptrs_[k]);
    out.counts.allocs += end - begin;
    if (end > begin) {
      last_size_ = pending_[end - 1].size;
      last_stream_ = pending_[end - 1].stream;
    }
  }

  // The pending frees, timed as one batch; ids looked up (and forgotten) before timing.
  std::int64_t run_frees(run_output& out) {
    ptrs_.clear();
    for (const auto& f : pending_) {
      const auto it = live_.find(f.id);
      if (it == live_.end()) {
        if (failed_.erase(f.id) == 0) ++out.counts.skipped_frees;
        continue;
      }
      ptrs_.push_back(it->second);
      live_.erase(it);
    }
    if (ptrs_.empty()) return 0;
    const std::int64_t t0 = now_ns();
    for (void* ptr : ptrs_) {
      allocator_->deallocate(ptr);
      observe_call(out);
    }
    const std::int64_t spent = now_ns() - t0;
    out.free_ns.add_batch(spent, ptrs_.size());
    out.counts.frees += ptrs_.size();
    return spent;
  }

  std::int64_t timed_empty_cache(run_output& out) {
    const std::int64_t t0 = now_ns();
    allocator_->empty_cache();
    const std::int64_t spent = now_ns() - t0;
    out.empty_cache_ns.push_back(static_cast<double>(spent));
    ++out.counts.empty_cache_calls;
    return spent;
  }

  const allocator_params& p_;
  // Declared in this order so that the allocator is destroyed before its upstream.
  std::unique_ptr<alloc::event_source> events_;
  std::shared_ptr<const alloc::recording> recorded_;
  std::unique_ptr<alloc::decision_follower> follower_;  // an upstream too
  std::unique_ptr<alloc::upstream> upstream_;
  std::unique_ptr<alloc::device_allocator> allocator_;
  std::unordered_map<std::uint64_t, void*> live_;
  std::vector<void*> kept_;  // blocks of the start state that the trace never frees
  std::unordered_set<std::uint64_t> failed_;  // ids whose allocation ran out of memory
  std::vector<alloc::event> pending_;         // the batch being gathered
  std::vector<void*> ptrs_;                   // its pointers
  observe_options observe_;
  std::int64_t best_reserved_ = -1;
  std::uint64_t current_event_ = 0;       // the index of the event in hand
  std::optional<std::size_t> last_size_;  // the workload's last successful allocation
  std::uint32_t last_stream_ = 0;
};

// One timed run: the workload in batches of `batch` calls, then (caching allocator) the
// cache-hit pairs on the state the workload left.
run_output run_timed(const allocator_params& p, const case_setup& setup, device::backend& dev,
                     std::size_t batch) {
  run_output out;
  workload_run run(p, setup, dev, false);
  run.execute(out, batch);
  if (!out.interrupted && p.allocator == allocator_type::caching)
    out.hit_pair_ns = run.time_hit_pairs();
  return out;
}

// One untimed run that watches every call.
run_output run_observed(const allocator_params& p, const case_setup& setup, device::backend& dev,
                        const observe_options& observe) {
  run_output out;
  workload_run run(p, setup, dev, true);
  run.execute(out, 1, observe);
  return out;
}

std::string device_label(device::backend& dev) {
  if (dev.emulated()) return "host backend (emulated device)";
  const auto name = dev.describe().name;
  return "device 0 (" + (name.empty() ? std::string(dev.name()) : name) + ")";
}

// A policy counter of the first run as a metric with one sample. The workload and the
// allocator's decisions follow from the seed and the scenario alone (no clock, no thread
// timing), so the engine declares these deterministic: `compare` judges them exactly.
void add_deterministic(result::case_result& r, const std::string& name, double value,
                       const std::string& unit, result::direction better) {
  result::metric& m = r.add(name, unit, better);
  m.deterministic = true;
  m.samples.push_back(value);
}
void add_counter(result::case_result& r, const std::string& name, std::int64_t value,
                 const std::string& unit, result::direction better) {
  add_deterministic(r, name, static_cast<double>(value), unit, better);
}

class allocator_engine final : public measure::engine {
 public:
  [[nodiscard]] result::case_result run_case(const measure::case_spec& c,
                                             measure::run_context& ctx) override {
    allocator_params p = measure::params_of<allocator_params>(c);
    p.loop.seed = p.random.seed = ctx.seed;
    result::case_result r;
    const case_setup setup = set_up(p, c.source, r);
    const alloc::config& conf = setup.conf;
    if (p.allocator != allocator_type::caching && (!conf.to_string().empty() || p.memory_fraction))
      r.warnings.push_back("config and memory_fraction apply to the caching allocator only; the " +
                           std::string(allocator_choice.name(p.allocator)) +
                           " allocator ignores them");

    // Batch timing, unless the scenario asks for the per-call distribution (or replays a
    // trace, where it is the default): the timer costs about as much as a cache hit.
    const bool per_call =
        p.timing == timing_method::call ||
        (p.timing == timing_method::automatic && p.workload == workload_kind::trace);
    const std::size_t batch = per_call ? 1 : batch_calls;

    // Timed metrics first, in the order the result lists them; the policy counters follow.
    // Per call: the median and p99 of each run's calls. Batched: each run's mean per call.
    const auto alloc_latency = measure::declare(r, "alloc_latency", "ns", lower);
    const auto alloc_p99 = measure::declare(r, "alloc_latency_p99", "ns", lower);
    const auto free_latency = measure::declare(r, "free_latency", "ns", lower);
    const auto free_p99 = measure::declare(r, "free_latency_p99", "ns", lower);
    const auto hit_pair = measure::declare(r, "hit_pair_latency", "ns", lower);
    const auto iteration_time = measure::declare(r, "iteration_time", "ns", lower);
    const auto empty_cache_time = measure::declare(r, "empty_cache_time", "ns", lower);
    latency_log iterations(max_iteration_samples, ctx.seed + 3);
    latency_log empty_cache(max_iteration_samples, ctx.seed + 4);
    const auto record = [&](const latency_log& log, const measure::metric_handle& typical,
                            const measure::metric_handle& p99) {
      if (log.empty()) return;
      typical.add(per_call ? log.quantile(0.5) : log.mean_per_call());
      if (per_call) p99.add(log.quantile(0.99));
    };

    std::optional<run_output> first;
    std::uint64_t runs = 0, runs_without_hits = 0;
    measure::measure_case(r, c.sampling,
                          {.warm_up = [&] { (void)run_timed(p, setup, ctx.dev, batch); },
                           .sample = [&]() -> std::optional<double> {
                             run_output out = run_timed(p, setup, ctx.dev, batch);
                             if (out.interrupted)
                               return std::nullopt;  // a partial run is not a sample
                             ++runs;
                             record(out.alloc_ns, alloc_latency, alloc_p99);
                             record(out.free_ns, free_latency, free_p99);
                             if (out.hit_pair_ns)
                               hit_pair.add(*out.hit_pair_ns);
                             else if (p.allocator == allocator_type::caching)
                               ++runs_without_hits;
                             for (double v : out.iteration_ns) iterations.add(v);
                             for (double v : out.empty_cache_ns) empty_cache.add(v);
                             const double headline = alloc_latency.get().samples.empty()
                                                         ? 0
                                                         : alloc_latency.get().samples.back();
                             if (!first) first = std::move(out);
                             return headline;
                           }});

    iteration_time.get().samples = iterations.values();
    empty_cache_time.get().samples = empty_cache.values();
    // A metric without samples (no frees, no iterations, no empty_cache) is left out.
    std::erase_if(r.metrics, [](const result::metric& m) { return m.samples.empty(); });

    // Its own untimed run: observing (and recording history) would slow down the timed runs.
    // It gives the report its timeline and segment map, `run --snapshot` its snapshot, and a
    // snapshot's replay its check against PyTorch's decisions.
    std::optional<run_output> seen;
    if (r.stopped != result::stop_reason::interrupted) {
      seen =
          run_observed(p, setup, ctx.dev,
                       {.timeline = true, .snapshot_at_peak = true, .history = ctx.want_snapshots});
      if (seen->interrupted) seen.reset();
    }
    // Policy results are deterministic: one run's counters stand for every run. A snapshot's
    // are those of the run on PyTorch's addresses, the same on every backend.
    const run_output& policy = seen && setup.trace_follows() ? *seen : *first;
    add_policy_metrics(r, policy.stats);
    r.extra["memory_stats"] = policy.stats.flatten();
    r.extra["memory_summary"] = alloc::memory_summary(policy.stats, device_label(ctx.dev));
    if (!policy.first_oom.empty()) r.extra["first_oom"] = policy.first_oom;
    if (policy.first_oom_event) r.extra["first_oom_event"] = *policy.first_oom_event;
    r.extra["ops"] = policy.counts.to_json();
    r.extra["runs"] = runs;
    r.extra["timing"] = {
        {"method",
         std::string(timing_choice.name(per_call ? timing_method::call : timing_method::batch))},
        {"batch_calls", batch},
        {"hit_pairs_per_batch", hit_pairs},
        {"hit_batches", hit_batches},
        {"timer_read_ns", timer_overhead().read_ns}};
    if (runs_without_hits > 0)
      r.warnings.push_back(fmt::format(
          "hit_pair_latency: {} of {} runs left out: the repeated size was not served from the "
          "cache (or ran out of memory)",
          runs_without_hits, runs));
    r.extra["config"] = p.allocator == allocator_type::caching ? conf.to_string() : std::string();
    if (p.allocator == allocator_type::caching) {
      r.extra["memory_fraction"] =
          p.memory_fraction ? nlohmann::json(*p.memory_fraction) : nlohmann::json("unset");
      r.extra["pytorch"] = {{"release", conf.release.to_string()},
                            {"release_from", setup.release_from},
                            {"choices", alloc::pytorch_release_choices(conf.release)}};
    }
    if (setup.recorded) {
      nlohmann::json d = decisions_json(*setup.recorded, seen ? seen->check : std::nullopt,
                                        setup.follow ? std::string() : setup.not_followed);
      if (setup.follow && seen && seen->check)
        d["releases_reproducing"] = releases_reproducing(p, setup, ctx.dev);
      r.extra["pytorch_decisions"] = std::move(d);
    }
    if (policy.counts.skipped_frees > 0)
      r.warnings.push_back(
          fmt::format("{} free(s) of unknown ids were skipped", policy.counts.skipped_frees));

    if (seen) {
      if (seen->timeline) r.extra["timeline"] = seen->timeline->to_json();
      if (seen->peak_snapshot) r.extra["segments_at_peak"] = segment_map(*seen->peak_snapshot);
      if (ctx.want_snapshots && seen->final_snapshot)
        r.snapshot = snapshot_json(*seen->final_snapshot, conf);
    }
    return r;
  }

 private:
  // The release, the config by its rules, and for a PyTorch snapshot what it recorded.
  static case_setup set_up(const allocator_params& p, const std::string& source,
                           result::case_result& r) {
    case_setup s;
    std::optional<alloc::torch_snapshot_facts> facts;
    if (p.workload == workload_kind::trace && alloc::is_torch_snapshot(p.trace_file))
      facts = alloc::read_torch_snapshot_facts(p.trace_file, p.trace_device);
    const auto chosen =
        alloc::choose_release(p.pytorch, "the pytorch param", facts ? &*facts : nullptr);
    const alloc::pytorch_release release = chosen.release;
    s.release_from = chosen.why;
    if (p.config_text == "snapshot") {
      s.conf = facts && facts->settings ? *facts->settings : alloc::config{};
      s.conf.release = release;
      if (const std::string why = alloc::unsupported_by(s.conf, release); !why.empty())
        throw input_error(source, "params.config",
                          fmt::format("\"snapshot\": its allocator_settings cannot be replayed by "
                                      "PyTorch {}'s rules: {}",
                                      release.to_string(), why));
      if (!facts)
        r.warnings.push_back(
            "config \"snapshot\": the trace is not a PyTorch snapshot: PyTorch's defaults");
    } else {
      s.conf = config_for(p, release, source);
    }
    s.trace = {.device = p.trace_device};
    if (!facts) return s;
    s.recorded = std::make_shared<alloc::torch_snapshot_facts>(*facts);
    // PyTorch's decisions are followed under the settings the program ran with, only.
    s.follow = p.allocator == allocator_type::caching;
    if (p.allocator != allocator_type::caching) {
      s.not_followed = fmt::format("the {} allocator makes other decisions than PyTorch's",
                                   allocator_choice.name(p.allocator));
    } else if (facts->settings &&
               (!alloc::same_options(*facts->settings, s.conf) ||
                (facts->settings->per_process_memory_fraction &&
                 facts->settings->per_process_memory_fraction !=
                     (p.memory_fraction ? p.memory_fraction
                                        : s.conf.per_process_memory_fraction)))) {
      alloc::config theirs = *facts->settings;
      theirs.release = release;
      s.follow = false;
      s.not_followed = fmt::format(
          "the case's config \"{}\" is not the snapshot's allocator_settings \"{}\" (config "
          "\"snapshot\" replays under them); replayed from the recorded start state",
          s.conf.to_string(), theirs.to_string());
    }
    return s;
  }

  // The rule sets of other releases, each replayed on the trace for its decisions alone: those
  // whose replay reproduces PyTorch's decisions.
  static nlohmann::json releases_reproducing(const allocator_params& p, const case_setup& setup,
                                             device::backend& dev) {
    const auto source = alloc::open_trace(p.trace_file, setup.trace);
    const alloc::trace_events trace = alloc::read_all(*source);
    const std::uint64_t capacity =
        p.device_memory != 0 ? p.device_memory : dev.device_memory().total_bytes;
    nlohmann::json out = nlohmann::json::array();
    for (const auto release : alloc::distinct_rule_sets()) {
      alloc::config conf = setup.conf;  // a snapshot's own settings are a table: any release
      conf.release = release;
      if (!alloc::unsupported_by(conf, release).empty()) continue;
      if (p.config_text != "snapshot") {
        try {
          conf = config_for(p, release, {});
        } catch (const input_error&) {
          continue;  // the config is not one this release reads
        }
      }
      const auto outcome =
          alloc::replay(trace, conf, capacity, p.memory_fraction, alloc::follow_pytorch::yes);
      if (outcome.check && outcome.check->reproduced()) out.push_back(alloc::releases_of(release));
    }
    return out;
  }
};

}  // namespace

void add_policy_metrics(result::case_result& r, const alloc::memory_stats& s) {
  const std::string bytes = "bytes", count = "count";
  // How much the workload asked for: the allocator does not choose these.
  add_counter(r, "allocated_bytes.all.peak", s.allocated_bytes.all.peak, bytes, none);
  add_counter(r, "requested_bytes.all.peak", s.requested_bytes.all.peak, bytes, none);
  add_counter(r, "active_bytes.all.peak", s.active_bytes.all.peak, bytes, none);
  // What the allocator's policy costs in device memory and device calls.
  add_counter(r, "reserved_bytes.all.peak", s.reserved_bytes.all.peak, bytes, lower);
  add_counter(r, "reserved_bytes.all.current", s.reserved_bytes.all.current, bytes, lower);
  add_counter(r, "inactive_split_bytes.all.peak", s.inactive_split_bytes.all.peak, bytes, lower);
  add_counter(r, "inactive_split_bytes.all.current", s.inactive_split_bytes.all.current, bytes,
              lower);
  add_counter(r, "segment.all.peak", s.segment.all.peak, count, none);
  add_counter(r, "allocation.all.allocated", s.allocation.all.allocated, count, none);
  add_counter(r, "num_device_alloc", s.num_device_alloc, count, lower);
  add_counter(r, "num_device_free", s.num_device_free, count, lower);
  add_counter(r, "num_alloc_retries", s.num_alloc_retries, count, lower);
  add_counter(r, "num_ooms", s.num_ooms, count, lower);
  add_counter(r, "num_sync_all_streams", s.num_sync_all_streams, count, lower);
  add_counter(r, "oversize_allocations.peak", s.oversize_allocations.peak, count, none);
  add_counter(r, "oversize_segments.peak", s.oversize_segments.peak, count, none);
  const double reserved = static_cast<double>(s.reserved_bytes.all.peak);
  const double fragmentation =
      reserved > 0 ? 1 - static_cast<double>(s.allocated_bytes.all.peak) / reserved : 0;
  add_deterministic(r, "fragmentation", fragmentation, "fraction", lower);
}

std::unique_ptr<measure::engine> make_engine() {
  return std::make_unique<allocator_engine>();
}

}  // namespace pinbench::kinds::allocator
