#include "kinds/transfer/transfer_engine.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/pattern.hpp"
#include "core/sysinfo.hpp"
#include "core/units.hpp"
#include "device/numa_placement.hpp"
#include "kinds/conditions_json.hpp"
#include "kinds/transfer/transfer_params.hpp"
#include "kinds/transfer/transfer_verdict.hpp"
#include "measure/protocol.hpp"

namespace pinbench::kinds::transfer {

namespace {

constexpr auto higher = result::direction::higher;
constexpr auto lower = result::direction::lower;
constexpr auto none = result::direction::none;

using device::copy_dir;
using device::host_kind;

/// A sample whose gate timed out is void and measured again; this many in a row fail the case.
constexpr int max_void_samples_in_a_row = 3;

host_kind host_kind_for(host_memory memory) {
  switch (memory) {
    case host_memory::pinned:
      return host_kind::pinned;
    case host_memory::pinned_wc:
      return host_kind::pinned_wc;
    case host_memory::registered:
      return host_kind::registered;
    case host_memory::pageable:
    case host_memory::pin_on_the_fly:
      break;  // pin_on_the_fly's user-side buffer is pageable
  }
  return host_kind::pageable;
}

// One direction of copies: its host buffer(s), device buffer and stream. For pin_on_the_fly the
// user's data stays pageable and every copy goes through one of two pinned slots, as
// `.pin_memory().to(non_blocking=True)` does through PyTorch's caching host allocator.
struct lane {
  copy_dir dir = copy_dir::h2d;
  std::unique_ptr<device::host_buffer> host;
  std::unique_ptr<device::device_buffer> dev;
  std::unique_ptr<device::stream> stream;
  std::unique_ptr<device::event> start, end;
  struct slot {
    std::unique_ptr<device::host_buffer> buf;
    std::unique_ptr<device::event> done;
    bool pending = false;
  };
  std::vector<slot> slots;  // pin_on_the_fly only
  std::size_t next_slot = 0;
};

struct copy_cost {
  double host_call_ns = 0;  // how long the calling thread was held
  double pin_ns = 0;        // of which: the host copy into / out of pinned memory
};

struct sample {
  double transfer_ns = 0;   // the time that bandwidth and copy_time are computed from
  double host_call_ns = 0;  // per copy
  double pin_ns = 0;        // per copy
  double wall_ns = 0;       // copies (and compute) from start to completion, for overlap
  bool void_gate = false;   // a gate let its stream go before the release: timing is void
};

// The host backend's ceiling: a host memcpy of the case's size between the very buffers its
// first lane copies between (on the host backend device memory is host memory), timed before
// sampling, between every two samples and after them; the best of all. The same buffers and
// the same moments as the copies, because a memcpy's speed depends on both: two fresh buffers of
// 64 MiB, or a burst timed before sampling on a loaded machine, read 30-35% low, and pinned
// copies, themselves one memcpy each, then reached 140-160% "of link". The best, not the
// median: a ceiling is what the machine can do, and other load only ever slows a memcpy down.
class memcpy_ceiling {
 public:
  memcpy_ceiling(std::byte* to, const std::byte* from, std::size_t bytes)
      : bytes_(bytes), to_(to), from_(from) {}

  // One warm-up batch, then batches until at least min_batches and min_time_ns have passed.
  void measure() {
    constexpr int min_batches = 5, max_batches = 100;
    constexpr std::int64_t min_time_ns = 50'000'000;
    const std::int64_t start = now_ns();
    (void)time_batch();  // warms up
    for (int batch = 1; batch <= max_batches; ++batch) {
      keep(time_batch());
      if (batch >= min_batches && now_ns() - start >= min_time_ns) break;
    }
  }

  /// One more batch, taken between two samples: the machine's state while the case ran.
  void measure_between_samples() { keep(time_batch()); }

  [[nodiscard]] device::link_ceiling result() const {
    if (!(best_ns_ > 0))
      return {.reason = "a host memcpy of " + format_bytes(bytes_) +
                        " was too short for the clock to resolve"};
    const double gbps = static_cast<double>(bytes_) / best_ns_;  // bytes per ns == GB/s
    return {.gbps = gbps,
            .source = fmt::format("host memcpy of {} measured in this run: {:.1f} GB/s (the best "
                                  "of {} timings, before, between and after the samples)",
                                  format_bytes(bytes_), gbps, batches_)};
  }

 private:
  // Small copies are timed in batches of about 16 MiB, so that the clock resolves a batch.
  [[nodiscard]] double time_batch() {
    const std::size_t per_batch = std::clamp<std::size_t>((16u << 20) / bytes_, 1, 4096);
    const std::int64_t t0 = now_ns();
    for (std::size_t i = 0; i < per_batch; ++i) std::memcpy(to_, from_, bytes_);
    return static_cast<double>(now_ns() - t0) / static_cast<double>(per_batch);
  }

  void keep(double ns) {
    ++batches_;
    if (ns > 0 && (best_ns_ == 0 || ns < best_ns_)) best_ns_ = ns;
  }

  std::size_t bytes_;
  std::byte* to_;
  const std::byte* from_;
  double best_ns_ = 0;
  int batches_ = 0;
};

class transfer_run {
 public:
  transfer_run(const transfer_params& p, device::backend& dev) : p_(p), dev_(dev) {
    check_host_memory();
    const bool both = p.direction == copy_direction::bidirectional;
    if (both || p.direction == copy_direction::h2d) add_lane(copy_dir::h2d);
    if (both || p.direction == copy_direction::d2h) add_lane(copy_dir::d2h);
    if (p.overlap_compute_ns > 0) {
      compute_stream_ = dev_.create_stream();
      compute_start_ = dev_.create_event();
      compute_end_ = dev_.create_event();
    }
    // Gated copies (transfer_params::gated); with overlap the compute kernel waits behind a
    // gate too, so both start together.
    use_gate_ = p.gated();
  }

  [[nodiscard]] bool page_locked_source() const { return p_.page_locked_source(); }
  [[nodiscard]] bool use_gate() const { return use_gate_; }
  [[nodiscard]] std::size_t lanes() const { return lanes_.size(); }

  /// The host backend's ceiling between the first lane's own buffers, in its direction (device
  /// memory is host memory there: backend::host_link's measure_host_memcpy).
  [[nodiscard]] memcpy_ceiling memcpy_ceiling_for() {
    auto& l = lanes_.front();
    if (l.dir == copy_dir::h2d) return {l.dev->data(), l.host->data(), p_.bytes};
    return {l.host->data(), l.dev->data(), p_.bytes};
  }
  /// The first lane's host buffer (touched): where NUMA placement is checked.
  [[nodiscard]] const void* host_data() const { return lanes_.front().host->data(); }

  [[nodiscard]] std::vector<std::string> unlocked_warnings() const {
    std::vector<std::string> w;
    for (const auto& l : lanes_) {
      if (page_locked_source() && !l.host->page_locked())
        w.push_back("the " + std::string(device::to_string(l.host->kind())) +
                    " host buffer could not be page-locked; it was measured unlocked");
      for (const auto& s : l.slots)
        if (!s.buf->page_locked())
          w.push_back("a pinned staging slot could not be page-locked; it was measured unlocked");
    }
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
    return w;
  }

  /// Gated chunks per sample: a gate holds at most max_copies_behind_gate copies per lane.
  [[nodiscard]] int chunk_copies() const {
    return use_gate_ ? std::min(p_.copies, device::max_copies_behind_gate) : p_.copies;
  }

  // One timed sample: copies_per_sample copies on every lane, with compute when asked. Gated
  // copies go in chunks, each timed between its own events; the sample's time is their sum.
  sample measure(bool with_compute) {
    sample s;
    const int chunk = chunk_copies();
    const std::int64_t t0 = now_ns();
    std::int64_t held_ns = 0;  // blocking: the caller is held for the whole of every call
    for (int done = 0; done < p_.copies; done += chunk) {
      const int n = std::min(chunk, p_.copies - done);
      const bool compute = with_compute && done == 0;  // overlap cases have one chunk (schema)
      std::vector<std::unique_ptr<device::gate>> gates;
      if (use_gate_) {
        for (auto& l : lanes_) gates.push_back(dev_.launch_gate(*l.stream));
        if (compute) gates.push_back(dev_.launch_gate(*compute_stream_));
      }
      for (auto& l : lanes_) dev_.record(*l.start, *l.stream);
      const std::int64_t c0 = now_ns();
      for (int k = 0; k < n; ++k)
        for (auto& l : lanes_) {
          const copy_cost c = issue_copy(l);
          s.host_call_ns += c.host_call_ns;
          s.pin_ns += c.pin_ns;
        }
      held_ns += now_ns() - c0;
      if (compute) {
        dev_.record(*compute_start_, *compute_stream_);
        dev_.launch_compute(*compute_stream_, p_.overlap_compute_ns);
        dev_.record(*compute_end_, *compute_stream_);
      }
      for (auto& l : lanes_) dev_.record(*l.end, *l.stream);
      for (auto& g : gates) g->release();
      for (auto& l : lanes_) dev_.synchronize(*l.end);
      if (compute) dev_.synchronize(*compute_stream_);
      for (const auto& g : gates) s.void_gate = s.void_gate || g->timed_out();
      if (s.void_gate)  // taken again (run_case): no run-level "not valid" warning for it
        for (auto& g : gates) g->discard_timing();
      if (!p_.blocking()) s.transfer_ns += event_span_ns(false);
      if (use_gate_) s.wall_ns += event_span_ns(compute);
    }
    // Ungated, the overlap is judged on the host clock: the caller's own time is part of it.
    if (!use_gate_) s.wall_ns = static_cast<double>(now_ns() - t0);
    if (p_.blocking()) s.transfer_ns = static_cast<double>(held_ns);

    const double copies = static_cast<double>(p_.copies) * static_cast<double>(lanes_.size());
    s.host_call_ns /= copies;
    s.pin_ns /= copies;
    return s;
  }

  // Compute alone as the overlap baseline, on the same clock as the overlapped sample: device
  // events behind a gate when the copies are gated, else the host clock.
  double measure_compute_alone() {
    if (use_gate_) {
      auto g = dev_.launch_gate(*compute_stream_);
      dev_.record(*compute_start_, *compute_stream_);
      dev_.launch_compute(*compute_stream_, p_.overlap_compute_ns);
      dev_.record(*compute_end_, *compute_stream_);
      g->release();
      dev_.synchronize(*compute_end_);
      return dev_.elapsed_ns(*compute_start_, *compute_end_);
    }
    const std::int64_t t0 = now_ns();
    dev_.launch_compute(*compute_stream_, p_.overlap_compute_ns);
    dev_.synchronize(*compute_stream_);
    return static_cast<double>(now_ns() - t0);
  }

  // Copies one fresh pattern through the measured path and reads it back another way.
  // Returns an empty string when the data arrived intact, else what was wrong.
  std::string verify(std::uint64_t seed) {
    for (auto& l : lanes_) {
      auto check = dev_.alloc_host(p_.bytes, host_kind::pageable);
      auto& s = *l.stream;
      if (l.dir == copy_dir::h2d) {
        fill_pattern(l.host->data(), p_.bytes, seed);
        issue_copy(l);
        dev_.synchronize(s);
        dev_.copy_async(check->data(), l.dev->data(), p_.bytes, copy_dir::d2h, s);
        dev_.synchronize(s);
        if (std::memcmp(check->data(), l.host->data(), p_.bytes) != 0)
          return "h2d data did not arrive intact";
      } else {
        fill_pattern(check->data(), p_.bytes, seed);
        dev_.copy_async(l.dev->data(), check->data(), p_.bytes, copy_dir::h2d, s);
        dev_.synchronize(s);
        std::memset(l.host->data(), 0, p_.bytes);
        issue_copy(l);
        dev_.synchronize(s);
        if (std::memcmp(check->data(), l.host->data(), p_.bytes) != 0)
          return "d2h data did not arrive intact";
      }
    }
    return {};
  }

 private:
  void add_lane(copy_dir dir) {
    lane l;
    l.dir = dir;
    l.dev = dev_.alloc_device(p_.bytes);  // first: a capacity refusal is cheap
    l.host = dev_.alloc_host(p_.bytes, host_kind_for(p_.memory));
    l.stream = dev_.create_stream();
    l.start = dev_.create_event();
    l.end = dev_.create_event();
    if (p_.pin_on_the_fly()) {
      for (int i = 0; i < 2; ++i)
        l.slots.push_back(
            {dev_.alloc_host(p_.bytes, host_kind::pinned), dev_.create_event(), false});
    }
    fill_pattern(l.host->data(), p_.bytes, 1);
    lanes_.push_back(std::move(l));
  }

  // Touching more host memory than is available would end in the OOM killer, not an error.
  void check_host_memory() const {
    const int lanes = p_.direction == copy_direction::bidirectional ? 2 : 1;
    // Per lane: the buffer, a pageable buffer for verification, two pinned slots on the fly.
    const std::uint64_t per_lane = p_.bytes * (p_.pin_on_the_fly() ? 4u : 2u);
    const std::uint64_t need = per_lane * static_cast<std::uint64_t>(lanes);
    const std::uint64_t available = read_host_info().available_bytes;
    if (available != 0 && (p_.bytes > available || need > available))
      throw out_of_memory(fmt::format("needs {} of host memory for {} copies, {} available",
                                      format_bytes(need), format_bytes(p_.bytes),
                                      format_bytes(available)));
  }

  copy_cost issue_copy(lane& l) {
    copy_cost c;
    const std::int64_t t0 = now_ns();
    if (!p_.pin_on_the_fly()) {
      if (l.dir == copy_dir::h2d)
        dev_.copy_async(l.dev->data(), l.host->data(), p_.bytes, copy_dir::h2d, *l.stream);
      else
        dev_.copy_async(l.host->data(), l.dev->data(), p_.bytes, copy_dir::d2h, *l.stream);
      if (p_.blocking()) dev_.synchronize(*l.stream);
    } else if (l.dir == copy_dir::h2d) {
      // A slot may be reused only once the copy that reads it has completed.
      auto& slot = l.slots[l.next_slot];
      l.next_slot = (l.next_slot + 1) % l.slots.size();
      if (slot.pending) dev_.synchronize(*slot.done);
      const std::int64_t p0 = now_ns();
      std::memcpy(slot.buf->data(), l.host->data(), p_.bytes);
      c.pin_ns = static_cast<double>(now_ns() - p0);
      dev_.copy_async(l.dev->data(), slot.buf->data(), p_.bytes, copy_dir::h2d, *l.stream);
      dev_.record(*slot.done, *l.stream);
      slot.pending = true;
      if (p_.blocking()) dev_.synchronize(*l.stream);
    } else {
      // Device to pinned, then out to the user's pageable buffer: the caller waits for both.
      auto& slot = l.slots[0];
      dev_.copy_async(slot.buf->data(), l.dev->data(), p_.bytes, copy_dir::d2h, *l.stream);
      dev_.synchronize(*l.stream);
      const std::int64_t p0 = now_ns();
      std::memcpy(l.host->data(), slot.buf->data(), p_.bytes);
      c.pin_ns = static_cast<double>(now_ns() - p0);
    }
    c.host_call_ns = static_cast<double>(now_ns() - t0);
    return c;
  }

  // From the earliest start event to the latest end event over all lanes, and over the
  // compute stream's pair when `with_compute`.
  double event_span_ns(bool with_compute) {
    std::vector<std::pair<device::event*, device::event*>> pairs;
    for (auto& l : lanes_) pairs.emplace_back(l.start.get(), l.end.get());
    if (with_compute) pairs.emplace_back(compute_start_.get(), compute_end_.get());
    device::event* first = pairs.front().first;
    for (const auto& [start, end] : pairs)
      if (dev_.elapsed_ns(*first, *start) < 0) first = start;
    double span = 0;
    for (const auto& [start, end] : pairs) span = std::max(span, dev_.elapsed_ns(*first, *end));
    return span;
  }

  transfer_params p_;
  device::backend& dev_;
  std::vector<lane> lanes_;
  std::unique_ptr<device::stream> compute_stream_;
  std::unique_ptr<device::event> compute_start_, compute_end_;
  bool use_gate_ = false;
};

// Both directions at once may use both directions of a PCIe link (it is full duplex), but only
// when the two lanes' copies overlap: blocking copies, and pin_on_the_fly's d2h lane, wait for
// each copy, so the lanes take turns. A host memcpy ceiling is never doubled: both directions'
// copies share one memory bus there.
device::link_ceiling for_lanes(device::link_ceiling c, std::size_t lanes, bool lanes_overlap,
                               bool host_memcpy) {
  if (!c.gbps || lanes < 2) return c;
  if (host_memcpy) {
    c.source += "; both directions share the memory bus: one memcpy's, not two";
  } else if (!lanes_overlap) {
    c.source += "; one direction's: the two directions' copies wait for each other";
  } else {
    c.source = fmt::format("{} x {:.1f} GB/s, one per direction: {}", lanes, *c.gbps, c.source);
    *c.gbps *= static_cast<double>(lanes);
  }
  return c;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

class transfer_engine final : public measure::engine {
 public:
  [[nodiscard]] result::case_result run_case(const measure::case_spec& c,
                                             measure::run_context& ctx) override {
    const auto& p = measure::params_of<transfer_params>(c);
    if (p.memory == host_memory::registered) {
      const std::string why = ctx.dev.host_register_unsupported();
      if (!why.empty()) throw unsupported_error(why);
    }
    result::case_result r;
    // Before the buffers and streams exist, for the whole case (see numa_scope for why).
    device::numa_scope numa(ctx.numa);
    transfer_run run(p, ctx.dev);
    numa.observe(run.host_data());
    r.warnings = run.unlocked_warnings();

    // A sample whose gate timed out measured the enqueueing too: it is void and taken again.
    std::size_t void_samples = 0;
    int void_in_a_row = 0;
    const auto take = [&](bool with_compute) {
      for (;;) {
        const sample s = run.measure(with_compute);
        if (!s.void_gate) {
          void_in_a_row = 0;
          return s;
        }
        ++void_samples;
        if (++void_in_a_row >= max_void_samples_in_a_row)
          throw device_error(fmt::format(
              "a gate was not released within {} s on {} samples in a row (the host thread "
              "issuing the copies was held that long), so no valid sample could be taken",
              device::gate_timeout_ns / 1'000'000'000, max_void_samples_in_a_row));
        throw_if_interrupted();
      }
    };

    const bool with_compute = p.overlap_compute_ns > 0;
    const double total_bytes = static_cast<double>(p.bytes) * static_cast<double>(p.copies) *
                               static_cast<double>(run.lanes());
    const auto bandwidth = measure::declare(r, "bandwidth", "GB/s", higher);
    const auto copy_time = measure::declare(r, "copy_time", "ns", lower);
    const auto host_call = measure::declare(r, "host_call_time", "ns", lower);
    std::optional<measure::metric_handle> overlap, pin_time;
    if (with_compute) overlap = measure::declare(r, "overlap", "fraction", higher);
    if (p.pin_on_the_fly()) pin_time = measure::declare(r, "pin_time", "ns", lower);

    // The ceiling for link_fraction, read after the warm-up (an idle GPU's link has trained up
    // again by then); the host backend's memcpy is measured before, between and after the samples.
    device::link_ceiling ceiling;
    std::optional<memcpy_ceiling> host_memcpy;
    // Overlap needs each part alone as the baseline: median of a few runs, after warm-up.
    double copy_alone_ns = 0, compute_alone_ns = 0;
    measure::measure_case(
        r, c.sampling,
        {.warm_up = [&] { (void)take(with_compute); },
         .before_sampling =
             [&] {
               ceiling = ctx.dev.host_link();
               if (ceiling.measure_host_memcpy) {
                 host_memcpy.emplace(run.memcpy_ceiling_for());
                 host_memcpy->measure();
               }
               if (!with_compute) return;
               std::vector<double> copies, computes;
               for (int i = 0; i < 3; ++i) {
                 copies.push_back(take(false).wall_ns);
                 computes.push_back(run.measure_compute_alone());
               }
               copy_alone_ns = median_of(copies);
               compute_alone_ns = median_of(computes);
               r.extra["copy_alone_ns"] = copy_alone_ns;
               r.extra["compute_alone_ns"] = compute_alone_ns;
             },
         .sample = [&]() -> std::optional<double> {
           const sample s = take(with_compute);
           if (host_memcpy) host_memcpy->measure_between_samples();
           // A span the clock could not resolve would be an infinite bandwidth: fail instead.
           if (!(s.transfer_ns > 0))
             throw error(fmt::format(
                 "a sample of {} x {} copies measured {} ns: too short for the clock to "
                 "resolve; raise copies_per_sample",
                 p.copies, format_bytes(p.bytes), s.transfer_ns));
           const double gbps = total_bytes / s.transfer_ns;  // bytes per ns == GB/s
           bandwidth.add(gbps);
           copy_time.add(s.transfer_ns / static_cast<double>(p.copies));
           host_call.add(s.host_call_ns);
           if (pin_time) pin_time->add(s.pin_ns);
           if (overlap) {
             // The share of the shorter part hidden behind the longer one: 1 = fully overlapped.
             const double hidden = copy_alone_ns + compute_alone_ns - s.wall_ns;
             const double shorter = std::min(copy_alone_ns, compute_alone_ns);
             overlap->add(std::clamp(hidden / shorter, 0.0, 1.0));
           }
           return gbps;
         },
         .verify =
             p.verify ? measure::verify_fn([&] { return run.verify(ctx.seed + 7); }) : nullptr});

    // link_fraction: every bandwidth sample over the ceiling, one for one.
    if (host_memcpy) {
      host_memcpy->measure();
      ceiling = host_memcpy->result();
    }
    ceiling = for_lanes(std::move(ceiling), run.lanes(), !p.blocking() && !p.pin_on_the_fly(),
                        host_memcpy.has_value());
    if (ceiling.gbps) {
      // Shown, never gated: bandwidth is gated already, and a ceiling measured again in each run
      // (the host backend's memcpy) would move the fraction with no change in the copies.
      const auto link_fraction = measure::declare(r, "link_fraction", "fraction", none);
      for (const double gbps : bandwidth.get().samples) link_fraction.add(gbps / *ceiling.gbps);
    }
    r.extra["link_ceiling"] = link_ceiling_json(ceiling);
    r.extra["bytes_per_copy"] = p.bytes;
    r.extra["copies_per_sample"] = p.copies;
    r.extra["numa"] = numa_json(numa.record());
    const std::string batch =
        p.copies == 1 ? std::string("one copy") : fmt::format("a batch of {} copies", p.copies);
    const int chunks = (p.copies + run.chunk_copies() - 1) / run.chunk_copies();
    if (p.blocking())
      r.extra["timing"] = fmt::format("host clock: the time the caller is held, over {}", batch);
    else if (run.use_gate())
      r.extra["timing"] =
          chunks == 1 ? fmt::format("device events around {} queued behind a gate", batch)
                      : fmt::format("device events around {}, in {} gated chunks of at most {}",
                                    batch, chunks, run.chunk_copies());
    else
      r.extra["timing"] = fmt::format("device events around {}", batch);
    if (run.use_gate()) r.extra["gated_chunks"] = chunks;
    if (void_samples > 0) {
      r.extra["void_samples"] = void_samples;
      r.warnings.push_back(fmt::format(
          "{} sample(s) were void (a gate timed out before its release) and were taken again",
          void_samples));
    }
    return r;
  }

  [[nodiscard]] std::string verdict(const result::scenario_result& s,
                                    device::platform_kind kind) const override {
    return kinds::transfer::verdict(s, kind);
  }
};

}  // namespace

std::unique_ptr<measure::engine> make_engine() {
  return std::make_unique<transfer_engine>();
}

}  // namespace pinbench::kinds::transfer
