// `pinbench tune allocator`: the trace is read once; every setting tried is a replay of it on a
// fresh caching allocator over an emulated device of the given capacity (the allocator's
// decisions do not depend on the device, so candidates replay side by side on the cores); the
// setting in use and the answer are then measured by the allocator kind's engine, on the
// session's device, as `pinbench run` would measure them.
//
// The search, not a grid: (1) the setting in use; (2) each option changed alone from it;
// (3) greedily, the best so far combined with the best values of each option not yet changed,
// while that helps. Every step is ranked the same way: no OOM first, then the lowest peak
// reserved, the least fragmentation at that peak (reserved minus allocated), the fewest
// cudaMalloc/cudaFree calls, the fewest options set.
#include "tune/allocator_tune.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "alloc/config.hpp"
#include "alloc/replay.hpp"
#include "alloc/torch_snapshot.hpp"
#include "alloc/workload.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/units.hpp"
#include "kinds/allocator/allocator_engine.hpp"
#include "kinds/allocator/allocator_kind.hpp"
#include "kinds/allocator/allocator_params.hpp"
#include "kinds/params.hpp"

namespace pinbench::tune {

// Named rather than anonymous: a unity build puts this file beside loader_tune.cpp.
namespace allocator_search {

constexpr std::uint64_t mib = 1ull << 20;
// PyTorch refuses max_split_size_mb at or below its large-buffer size (20 MiB).
constexpr std::uint64_t min_split_mib = 21;
// Peak reserved within this share of the best counts as the same: the simpler setting wins.
constexpr double same_peak = 0.01;

// The options searched, in the order PYTORCH_CUDA_ALLOC_CONF is written.
// max_non_split_rounding_mb is kept as the program set it, or tried without: not searched.
enum class option { max_split, roundup, gc, expandable, non_split };
constexpr option all_options[] = {option::max_split, option::roundup, option::gc,
                                  option::expandable, option::non_split};

// 1.0 rather than 1: it reads as a fraction.
std::string fraction_text(double f) {
  std::string t = fmt::format("{}", f);
  return t.find('.') == std::string::npos ? t + ".0" : t;
}

// A setting: one text per option ("" = PyTorch's default for it), and the memory fraction
// the program sets (garbage collection is armed only by one).
struct setting {
  std::map<option, std::string> parts;
  std::optional<double> memory_fraction;

  [[nodiscard]] std::string text() const {
    std::string out;
    for (const option o : all_options) {
      const auto it = parts.find(o);
      if (it == parts.end() || it->second.empty()) continue;
      if (!out.empty()) out += ",";
      out += it->second;
    }
    return out;
  }
  [[nodiscard]] std::size_t options_set() const {
    return static_cast<std::size_t>(
        std::count_if(parts.begin(), parts.end(), [](const auto& p) { return !p.second.empty(); }));
  }
  [[nodiscard]] bool operator==(const setting& o) const {
    return text() == o.text() && memory_fraction == o.memory_fraction;
  }
};

// Each option of a config as the text that sets it alone ("" when it is the default).
setting setting_of(const alloc::config& c, std::optional<double> fraction) {
  setting s;
  s.memory_fraction = fraction;
  alloc::config only;
  only.max_split_size_bytes = c.max_split_size_bytes;
  s.parts[option::max_split] = only.to_string();
  only = {};
  only.roundup_power2_divisions = c.roundup_power2_divisions;
  s.parts[option::roundup] = only.to_string();
  only = {};
  only.garbage_collection_threshold = c.garbage_collection_threshold;
  s.parts[option::gc] = only.to_string();
  only = {};
  only.expandable_segments = c.expandable_segments;
  s.parts[option::expandable] = only.to_string();
  only = {};
  only.max_non_split_rounding_bytes = c.max_non_split_rounding_bytes;
  s.parts[option::non_split] = only.to_string();
  // A fraction in the config is the program's set_per_process_memory_fraction.
  if (!s.memory_fraction) s.memory_fraction = c.per_process_memory_fraction;
  return s;
}

struct trial_run {
  setting s;
  alloc::replay_outcome outcome;
  [[nodiscard]] std::uint64_t peak_reserved() const {
    return static_cast<std::uint64_t>(outcome.stats.reserved_bytes.all.peak);
  }
  [[nodiscard]] std::uint64_t fragmentation_at_peak() const {
    return outcome.reserved_at_peak - std::min(outcome.reserved_at_peak, outcome.allocated_at_peak);
  }
  [[nodiscard]] std::int64_t device_calls() const {
    return outcome.stats.num_device_alloc + outcome.stats.num_device_free;
  }
};

// True when a is better than b (the ranking of the file's comment).
bool better(const trial_run& a, const trial_run& b) {
  const auto& x = a.outcome;
  const auto& y = b.outcome;
  if ((x.ooms == 0) != (y.ooms == 0)) return x.ooms == 0;
  if (x.ooms != y.ooms) return x.ooms < y.ooms;
  if (x.first_oom_event != y.first_oom_event) return x.first_oom_event > y.first_oom_event;
  if (a.peak_reserved() != b.peak_reserved()) return a.peak_reserved() < b.peak_reserved();
  if (a.fragmentation_at_peak() != b.fragmentation_at_peak())
    return a.fragmentation_at_peak() < b.fragmentation_at_peak();
  if (a.device_calls() != b.device_calls()) return a.device_calls() < b.device_calls();
  if (a.s.options_set() != b.s.options_set()) return a.s.options_set() < b.s.options_set();
  return a.s.text() < b.s.text();
}

// What the trace asks of any allocator: its live bytes at their highest, and the sizes it
// requests (for max_split_size_mb's candidates).
struct trace_demand {
  std::uint64_t live_peak = 0;
  std::vector<std::uint64_t> large_sizes;  // requests above min_split_mib, sorted
  std::uint64_t allocs = 0;
};

trace_demand demand_of(const alloc::trace_events& trace) {
  trace_demand d;
  std::unordered_map<std::uint64_t, std::uint64_t> live;
  std::uint64_t now = 0;
  // The blocks live when a snapshot's recording began are live from the start.
  if (trace.recorded) {
    // Counted as requested, as the trace's own allocations are.
    for (const auto& seg : trace.recorded->start.segments)
      for (const auto& b : seg.live) {
        const std::uint64_t asked = b.requested_size != 0 ? b.requested_size : b.size;
        now += asked;
        if (b.id != 0) live.emplace(b.id, asked);
      }
    d.live_peak = now;
  }
  for (const auto& e : trace.events) {
    if (e.op == alloc::event::kind::alloc) {
      if (!live.emplace(e.id, e.size).second) continue;
      ++d.allocs;
      now += e.size;
      d.live_peak = std::max(d.live_peak, now);
      if (e.size > min_split_mib * mib) d.large_sizes.push_back(e.size);
    } else if (e.op == alloc::event::kind::free) {
      if (const auto it = live.find(e.id); it != live.end()) {
        now -= it->second;
        live.erase(it);
      }
    }
  }
  std::sort(d.large_sizes.begin(), d.large_sizes.end());
  return d;
}

// The values tried for each option, besides its default: max_split_size_mb from the trace's
// own large requests (quartiles and the 90th percentile, just above each size, so that blocks
// of that size and larger are never split); roundup in its single and per-interval forms;
// garbage collection at two thresholds.
std::map<option, std::vector<std::string>> option_values(const trace_demand& d) {
  std::map<option, std::vector<std::string>> v;
  auto& splits = v[option::max_split];
  for (const double q : {0.25, 0.5, 0.75, 0.9}) {
    if (d.large_sizes.empty()) break;
    const auto i = static_cast<std::size_t>(q * static_cast<double>(d.large_sizes.size() - 1));
    const std::uint64_t size_mib = (d.large_sizes[i] + mib - 1) / mib;
    const std::string text =
        "max_split_size_mb:" + std::to_string(std::max(min_split_mib, size_mib));
    if (std::find(splits.begin(), splits.end(), text) == splits.end()) splits.push_back(text);
  }
  v[option::roundup] = {"roundup_power2_divisions:1",
                        "roundup_power2_divisions:2",
                        "roundup_power2_divisions:4",
                        "roundup_power2_divisions:8",
                        "roundup_power2_divisions:16",
                        "roundup_power2_divisions:[64:8,256:4,1024:2,>:1]",
                        "roundup_power2_divisions:[64:1,256:2,1024:4,>:8]"};
  v[option::gc] = {"garbage_collection_threshold:0.6", "garbage_collection_threshold:0.8"};
  v[option::expandable] = {"expandable_segments:True"};
  return v;
}

// The same setting with one option set to `text` ("" = its default). Garbage collection needs
// a memory fraction: when the program sets none, the candidate sets 1.0 (and the answer says so).
setting with(const setting& base, option o, const std::string& text,
             std::optional<double> asked_fraction) {
  setting s = base;
  s.parts[o] = text;
  // The program's own fraction (asked, or in its config) when it has one.
  const std::optional<double> fraction = asked_fraction ? asked_fraction : base.memory_fraction;
  if (o == option::gc) s.memory_fraction = text.empty() ? fraction : fraction.value_or(1.0);
  return s;
}

// Replays the settings side by side, `jobs` at a time; each finished one is reported.
class screener {
 public:
  // `in_use`: the setting the snapshot's program ran with, whose replay follows PyTorch's
  // decisions and checks itself against them.
  screener(const alloc::trace_events& trace, std::uint64_t capacity, unsigned jobs,
           alloc::pytorch_release release, setting in_use, const session& s)
      : trace_(trace),
        capacity_(capacity),
        jobs_(jobs),
        release_(release),
        in_use_(std::move(in_use)),
        session_(s) {}

  [[nodiscard]] std::vector<trial_run> run(const std::vector<setting>& settings) {
    std::vector<trial_run> out(settings.size());
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    std::mutex lock;
    const auto work = [&] {
      for (std::size_t i; (i = next++) < settings.size();) {
        if (session::interrupted()) return;
        try {
          out[i].s = settings[i];
          const bool follow = trace_.recorded && settings[i] == in_use_;
          out[i].outcome =
              alloc::replay(trace_, alloc::parse_config(settings[i].text(), {}, {}, release_),
                            capacity_, settings[i].memory_fraction,
                            follow ? alloc::follow_pytorch::yes : alloc::follow_pytorch::no);
          const std::lock_guard<std::mutex> hold(lock);
          report(out[i]);
        } catch (...) {
          const std::lock_guard<std::mutex> hold(lock);
          if (!failure) failure = std::current_exception();
          next = settings.size();
        }
      }
    };
    std::vector<std::thread> threads;
    const unsigned n = std::min<unsigned>(jobs_, static_cast<unsigned>(settings.size()));
    for (unsigned t = 1; t < n; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
    std::erase_if(out,
                  [](const trial_run& r) { return r.outcome.calls == 0 && r.s.parts.empty(); });
    std::erase_if(out, [](const trial_run& r) { return r.outcome.interrupted; });
    replays_ += out.size();
    for (const auto& r : out) replay_ns_ = std::max(replay_ns_, r.outcome.elapsed_ns);
    return out;
  }

  /// The longest replay so far: what the next stage's cost is estimated from.
  [[nodiscard]] std::int64_t replay_ns() const noexcept { return replay_ns_; }
  [[nodiscard]] unsigned jobs() const noexcept { return jobs_; }

 private:
  void report(const trial_run& r) const {
    session_.progress(fmt::format("replayed {}: {}, peak reserved {}", label(r.s),
                                  r.outcome.ooms == 0
                                      ? std::string("no OOM")
                                      : fmt::format("{} OOM(s), the first at events[{}]",
                                                    r.outcome.ooms, *r.outcome.first_oom_event),
                                  format_bytes(r.peak_reserved())));
  }

 public:
  static std::string label(const setting& s) {
    std::string text = s.text();
    if (text.empty()) text = "(PyTorch's defaults)";
    if (s.memory_fraction) text += " + memory fraction " + fraction_text(*s.memory_fraction);
    return text;
  }

 private:
  const alloc::trace_events& trace_;
  std::uint64_t capacity_;
  unsigned jobs_;
  alloc::pytorch_release release_;
  setting in_use_;
  const session& session_;
  std::size_t replays_ = 0;
  std::int64_t replay_ns_ = 0;
};

std::string oom_note(const alloc::replay_outcome& o) {
  return o.ooms == 0 ? std::string("no OOM")
                     : fmt::format("OOM at events[{}]{}", *o.first_oom_event,
                                   o.ooms > 1 ? fmt::format(" ({} in all)", o.ooms) : "");
}

std::string percent_change(double now, double before) {
  if (before <= 0) return "";
  return fmt::format("{:+.0f}%", 100.0 * (now - before) / before);
}

// A setting's case id, as the scenario loader names a case of these params: "config=...",
// with ",memory_fraction=..." when the program sets one.
std::string case_id_of(const setting& x) {
  namespace kind = kinds::allocator;
  std::string id = std::string(kind::param::config) + "=" + x.text();
  if (x.memory_fraction)
    id += "," + std::string(kind::param::memory_fraction) + "=" + fraction_text(*x.memory_fraction);
  return id;
}

// The case of the search scenario that holds one screening replay's figures.
result::case_result search_case(const trial_run& r, const nlohmann::json& params) {
  result::case_result c;
  c.id = case_id_of(r.s);
  c.params = params;
  kinds::set_param(c.params, kinds::allocator::param::config, r.s.text());
  if (r.s.memory_fraction)
    kinds::set_param(c.params, kinds::allocator::param::memory_fraction, *r.s.memory_fraction);
  c.stopped = result::stop_reason::single;
  c.elapsed_s = static_cast<double>(r.outcome.elapsed_ns) / 1e9;
  kinds::allocator::add_policy_metrics(c, r.outcome.stats);
  auto& cached = c.add("fragmentation_at_peak", "bytes", result::direction::lower);
  cached.deterministic = true;
  cached.samples.push_back(static_cast<double>(r.fragmentation_at_peak()));
  if (r.outcome.calls > 0) {
    c.add("replay_time_per_call", "ns", result::direction::lower)
        .samples.push_back(static_cast<double>(r.outcome.elapsed_ns) /
                           static_cast<double>(r.outcome.calls));
  }
  c.extra["memory_stats"] = r.outcome.stats.flatten();
  if (!r.outcome.first_oom.empty()) {
    c.extra["first_oom"] = r.outcome.first_oom;
    c.extra["first_oom_event"] = *r.outcome.first_oom_event;
  }
  c.extra["replay"] = "decisions only: one untimed replay on an emulated device of the capacity";
  return c;
}

std::vector<std::pair<std::string, std::string>> search_cells(const trial_run& r) {
  return {
      {"run", "search"},
      {"OOMs", r.outcome.ooms == 0 ? std::string("none") : std::to_string(r.outcome.ooms)},
      {"first OOM", r.outcome.ooms == 0 ? std::string("-")
                                        : fmt::format("events[{}]", *r.outcome.first_oom_event)},
      {"peak reserved", format_bytes(r.peak_reserved())},
      {"peak fragmentation", format_bytes(r.fragmentation_at_peak())},
      {"cudaMalloc", std::to_string(r.outcome.stats.num_device_alloc)},
      {"cudaFree", std::to_string(r.outcome.stats.num_device_free)},
      {"replay/call", r.outcome.calls == 0
                          ? std::string("-")
                          : format_duration_ns(static_cast<double>(r.outcome.elapsed_ns) /
                                               static_cast<double>(r.outcome.calls))}};
}

double median_of(const result::case_result& c, std::string_view metric) {
  return result::finite_median(c, metric).value_or(std::nan(""));
}

// What the engine measured for a confirmed setting, as the ranked table's row.
result::tune_trial confirm_trial(const result::case_result& c, const std::string& scenario,
                                 const std::string& label) {
  result::tune_trial t;
  t.label = label;
  t.scenario = scenario;
  t.case_id = c.id;
  t.phase = result::trial_phase::confirm;
  if (c.status != result::case_status::ok) {
    t.note = "the confirming run failed: " + c.message;
    return t;
  }
  const double ooms = median_of(c, "num_ooms");
  const double peak = median_of(c, "reserved_bytes.all.peak");
  t.value = peak;
  t.meets_goal = ooms == 0;
  std::string oom_cell = ooms == 0 ? "none" : fmt::format("{:.0f}", ooms);
  t.note = ooms == 0 ? "no OOM (engine)" : fmt::format("{:.0f} OOM(s) (engine)", ooms);
  std::string cached = "-";
  if (const auto& seg = c.extra.find("segments_at_peak"); seg != c.extra.end() && seg->is_object())
    cached = format_bytes(seg->value("reserved_bytes", std::uint64_t{0}) -
                          std::min(seg->value("reserved_bytes", std::uint64_t{0}),
                                   seg->value("allocated_bytes", std::uint64_t{0})));
  const auto latency = result::finite_median(c, "alloc_latency");
  const auto first_oom = c.extra.find("first_oom_event");
  t.cells = {
      {"run", "confirm"},
      {"OOMs", oom_cell},
      {"first OOM", first_oom != c.extra.end() && first_oom->is_number_unsigned()
                        ? fmt::format("events[{}]", first_oom->get<std::uint64_t>())
                        : std::string("-")},
      {"peak reserved", std::isnan(peak) ? "-" : format_bytes(static_cast<std::uint64_t>(peak))},
      {"peak fragmentation", cached},
      {"cudaMalloc", fmt::format("{:.0f}", median_of(c, "num_device_alloc"))},
      {"cudaFree", fmt::format("{:.0f}", median_of(c, "num_device_free"))},
      {"alloc latency", latency ? format_duration_ns(*latency) : "-"}};
  return t;
}

// A PyTorch snapshot pickle says more than its trace (its allocator settings, the request that
// failed, which device ran out); other traces say nothing more. Without --device, the device
// whose trace has the OOM is replayed (the last, if several have one); without an OOM, the
// device with the most events; `why` says which.
alloc::torch_snapshot_facts facts_of(const std::string& trace, std::optional<int> device,
                                     std::string& why) {
  if (!alloc::is_torch_snapshot(trace)) return {};
  if (device) {
    why = "--device";
    return alloc::read_torch_snapshot_facts(trace, *device);
  }
  std::vector<alloc::torch_snapshot_facts> all = alloc::read_torch_snapshot_devices(trace);
  if (all.empty()) return alloc::read_torch_snapshot_facts(trace, 0);  // says there are none
  std::size_t pick = 0;
  std::optional<std::size_t> with_oom;
  for (std::size_t d = 0; d < all.size(); ++d) {
    if (all[d].oom_size) with_oom = d;
    if (all[d].events > all[pick].events) pick = d;
  }
  if (all.size() == 1) {
    why = "the snapshot's only device";
  } else if (with_oom) {
    pick = *with_oom;
    why = fmt::format("the device whose trace has the OOM, of {}", all.size());
  } else {
    why = fmt::format("no trace has an OOM: the device with the most events ({}) of {}",
                      all[pick].events, all.size());
  }
  return std::move(all[pick]);
}

// What the replay under the settings in use says of itself, and what that means for the answer.
std::string self_check_line(const alloc::decision_check& c, alloc::pytorch_release release) {
  std::string text = fmt::format("your settings, replayed by PyTorch {}'s rules: {}",
                                 release.to_string(), c.summary());
  if (!c.reproduced())
    text +=
        ". The replay parted from PyTorch's decisions there: what follows that point (the "
        "OOM, the peak) is pinbench's reproduction, not your program's record, and the answer "
        "weighs the settings on it";
  return text;
}

// What is asked, resolved once: the trace and its device, the release whose rules decide, the
// device's memory, the setting the program ran with, the events and what they demand.
struct question {
  std::string trace, device_from;
  alloc::torch_snapshot_facts facts;
  int device = 0;
  alloc::pytorch_release release;
  std::string release_from;
  std::uint64_t capacity = 0;
  std::string capacity_from;
  setting in_use;
  alloc::trace_events events;
  trace_demand demand;
  unsigned jobs = 1;
};

question ask(const allocator_request& request, const session& s) {
  const std::string trace = std::filesystem::absolute(request.trace).lexically_normal().string();
  alloc::check_trace_file(trace);
  std::string device_from;
  const alloc::torch_snapshot_facts facts = facts_of(trace, request.device, device_from);
  const int device = facts.device;
  if (!device_from.empty() && !request.device)
    s.progress(fmt::format("replaying device_traces[{}]: {}", device, device_from));
  // The release whose rules decide: as asked, else the newest the snapshot's format allows.
  const alloc::chosen_release chosen_release =
      alloc::choose_release(request.pytorch, "--pytorch", &facts);
  const alloc::pytorch_release release = chosen_release.release;
  const std::string& release_from = chosen_release.why;
  // The device's memory: as given; else what the snapshot's OOM shows the program had (reserved
  // then, plus what the device still had free); else the CUDA device's total.
  std::uint64_t capacity = 0;
  std::string capacity_from = "--capacity";
  if (request.capacity) {
    capacity = *request.capacity;
    if (capacity < mib)
      throw input_error({}, "--capacity",
                        fmt::format("expected the device's memory, such as 80GiB, got {} (a "
                                    "number alone is bytes)",
                                    format_bytes(capacity)));
  } else if (facts.device_total > 0) {
    capacity = facts.device_total;
    capacity_from = "the snapshot's OOM: reserved then plus the device's free memory";
  } else if (!s.emulated()) {
    capacity = s.device().device_memory().total_bytes;
    capacity_from = "the CUDA device's total";
  } else {
    throw input_error({}, "--capacity",
                      "expected the GPU's memory (such as 80GiB): on the host backend there is no "
                      "device to read it from, and the trace records no OOM to infer it from");
  }
  alloc::config in_use_config = facts.settings.value_or(alloc::config{});
  in_use_config.release = release;
  if (const std::string why = alloc::unsupported_by(in_use_config, release); !why.empty())
    throw input_error(trace, "allocator_settings",
                      fmt::format("the settings the program ran with cannot be replayed by "
                                  "PyTorch {}'s rules ({}): {}",
                                  release.to_string(), release_from, why));
  const setting in_use = setting_of(in_use_config, request.memory_fraction);
  s.progress(fmt::format("reading {}", trace));
  alloc::trace_events events = [&] {
    const auto source = alloc::open_trace(trace, {.device = device});
    return alloc::read_all(*source);
  }();
  const trace_demand demand = demand_of(events);
  if (demand.allocs == 0)
    throw input_error(trace, facts.format ? fmt::format("device_traces[{}]", device) : "",
                      "expected allocations to replay, found none (was the history recorded "
                      "before the requests of interest?)");
  // Where PyTorch's cudaMalloc failed, its device could give no more: every setting is replayed
  // against that wall, not only the one that follows PyTorch there.
  if (events.recorded) {
    const auto probe = alloc::replay(events, alloc::parse_config(in_use.text(), {}, {}, release),
                                     capacity, in_use.memory_fraction, alloc::follow_pytorch::yes);
    if (probe.check && probe.check->device_limit && *probe.check->device_limit < capacity &&
        *probe.check->device_limit >= probe.check->pytorch_peak_reserved) {
      capacity_from = fmt::format(
          "PyTorch's failed cudaMalloc calls: its device gave no more than {} ({} {})",
          format_bytes(*probe.check->device_limit), capacity_from, format_bytes(capacity));
      capacity = *probe.check->device_limit;
      s.progress("capacity " + format_bytes(capacity) + ": " + capacity_from);
    }
  }
  const unsigned jobs =
      request.jobs != 0 ? request.jobs : std::max(1u, std::thread::hardware_concurrency());
  s.progress(
      fmt::format("{} events ({} allocations, live bytes peaking at {}) against {}; {} "
                  "replay(s) at a time",
                  events.events.size(), demand.allocs, format_bytes(demand.live_peak),
                  format_bytes(capacity), jobs));
  return {trace,  device_from,       facts,  device, release, release_from, capacity, capacity_from,
          in_use, std::move(events), demand, jobs};
}

// The allocator question's strategy: screen settings with replays (the one in use, each option
// changed alone, then the best combined with one more option while that helps), choose the
// simplest that does as well as the best, confirm it and the setting in use with the allocator
// engine, and word the answer.
class allocator_tuner final : public search_strategy {
 public:
  allocator_tuner(const allocator_request& request, const session& s)
      : request_(request), s_(s), q_(ask(request, s)) {}

  void search() override {
    const session& s = s_;
    const allocator_request& request = request_;
    const setting& in_use = q_.in_use;
    const alloc::pytorch_release& release = q_.release;
    const trace_demand& demand = q_.demand;
    std::vector<trial_run>& tried = tried_;
    screener screen(q_.events, q_.capacity, q_.jobs, q_.release, q_.in_use, s_);
    const auto already = [&](const setting& x) {
      return std::any_of(tried.begin(), tried.end(), [&](const trial_run& t) { return t.s == x; });
    };
    // Keeps room for the confirming runs: two settings, each up to three runs timed per call and
    // one observed run (about 8 replays' time), and the runner's own start.
    const auto affordable = [&](std::size_t replays) -> std::size_t {
      const std::int64_t per = std::max<std::int64_t>(screen.replay_ns(), 1'000'000);
      const std::int64_t reserve =
          16 * per + std::min<std::int64_t>(1'000'000'000, s.budget_ns() / 10);
      const std::int64_t left = s.left_ns() - reserve;
      if (left <= 0) return 0;
      return std::min<std::size_t>(replays, static_cast<std::size_t>(left / per) * screen.jobs());
    };
    // The first stage (the setting in use) runs whatever the budget: without it there is no answer.
    const auto stage = [&](std::vector<setting> settings) {
      std::erase_if(settings, [&](const setting& x) { return already(x); });
      settings.erase(std::unique(settings.begin(), settings.end()), settings.end());
      const std::size_t n = tried.empty() ? settings.size() : affordable(settings.size());
      if (n < settings.size()) {
        stop(result::search_stop::budget);
        s.progress(
            fmt::format("the budget leaves time for {} of {} setting(s) of this step, and "
                        "for the confirming runs",
                        n, settings.size()));
        settings.resize(n);
      }
      if (settings.empty()) return std::vector<trial_run>{};
      auto done = screen.run(settings);
      if (session::interrupted()) stop(result::search_stop::interrupted);
      for (const auto& d : done) tried.push_back(d);
      return done;
    };

    std::vector<setting> first{in_use};
    // PyTorch's defaults beside a setting in use, under the program's own memory fraction.
    if (in_use.options_set() > 0) first.push_back(setting_of({}, request.memory_fraction));
    (void)stage(first);
    if (tried.empty()) throw interrupted_error();  // stopped before the first replay ended
    auto values = option_values(demand);
    if (!release.has_expandable_segments()) values.erase(option::expandable);
    // From 2.10 a fraction of 1.0 arms no collection: garbage_collection_threshold is tried only
    // under the program's own fraction below 1.0.
    if (release.fraction_one_is_unlimited() &&
        !(request.memory_fraction && *request.memory_fraction < 1.0) &&
        !(in_use.memory_fraction && *in_use.memory_fraction < 1.0)) {
      values.erase(option::gc);
      gc_not_tried_ = fmt::format(
          "garbage_collection_threshold not tried: PyTorch {} arms it only under a memory fraction "
          "below 1.0 (give --memory-fraction as the program sets it)",
          release.to_string());
      s.progress(gc_not_tried_);
    }
    // One option changed at a time from the setting in use.
    std::vector<setting> singles;
    for (const auto& [o, texts] : values) {
      for (const auto& text : texts)
        singles.push_back(with(in_use, o, text, request.memory_fraction));
      if (!in_use.parts.at(o).empty())
        singles.push_back(with(in_use, o, "", request.memory_fraction));
    }
    s.progress(fmt::format("{} setting(s): each option changed alone", singles.size()));
    const auto single_runs = stage(singles);
    // Each option's values, best first, as the single changes ranked them.
    std::map<option, std::vector<std::string>> ranked_values;
    {
      auto sorted = single_runs;
      std::sort(sorted.begin(), sorted.end(), better);
      for (const auto& r : sorted)
        for (const option o : all_options)
          if (r.s.parts.at(o) != in_use.parts.at(o)) ranked_values[o].push_back(r.s.parts.at(o));
    }
    // Greedy: the best so far, with each unchanged option at its two best values, while that helps.
    auto best = *std::min_element(tried.begin(), tried.end(), better);
    std::vector<option> changed;
    for (const option o : all_options)
      if (best.s.parts.at(o) != in_use.parts.at(o)) changed.push_back(o);
    while (!stopped()) {
      std::vector<setting> combos;
      for (const option o : all_options) {
        if (std::find(changed.begin(), changed.end(), o) != changed.end()) continue;
        const auto& texts = ranked_values[o];
        for (std::size_t i = 0; i < texts.size() && i < 2; ++i)
          combos.push_back(with(best.s, o, texts[i], request.memory_fraction));
      }
      if (combos.empty()) break;
      s.progress(fmt::format("{} setting(s): {} combined with one more option", combos.size(),
                             screener::label(best.s)));
      const auto runs = stage(combos);
      if (runs.empty()) break;
      const auto round_best = *std::min_element(runs.begin(), runs.end(), better);
      if (!better(round_best, best)) break;
      best = round_best;
      changed.clear();
      for (const option o : all_options)
        if (best.s.parts.at(o) != in_use.parts.at(o)) changed.push_back(o);
    }
  }

  void confirm() override {
    const session& s = s_;
    const setting& in_use = q_.in_use;
    const std::string& trace = q_.trace;
    const int device = q_.device;
    const alloc::pytorch_release& release = q_.release;
    const std::uint64_t capacity = q_.capacity;
    std::vector<trial_run>& tried = tried_;
    // The answer: the simplest setting that does as well as the best.
    std::sort(tried.begin(), tried.end(), better);
    const trial_run& top = tried.front();
    // Among those as good as the best (the same OOMs, as late, a peak within same_peak), the
    // fewest options: an option that changes nothing that matters is not part of an answer.
    const trial_run* chosen = &top;
    for (const auto& r : tried) {
      if (r.outcome.ooms != top.outcome.ooms ||
          r.outcome.first_oom_event != top.outcome.first_oom_event)
        continue;
      if (static_cast<double>(r.peak_reserved()) >
          static_cast<double>(top.peak_reserved()) * (1 + same_peak))
        continue;
      if (r.s.options_set() < chosen->s.options_set()) chosen = &r;
    }
    const auto baseline_it =
        std::find_if(tried.begin(), tried.end(), [&](const trial_run& r) { return r.s == in_use; });
    baseline_ = &*baseline_it;
    const trial_run& baseline = *baseline_;
    // Nothing better than what is in use: keep it.
    if (!better(*chosen, baseline) ||
        (baseline.outcome.ooms == 0 &&
         static_cast<double>(chosen->peak_reserved()) >=
             static_cast<double>(baseline.peak_reserved()) * (1 - same_peak)))
      chosen = &baseline;

    // The engine confirms the answer and the setting in use.
    // Every param by the kind's own names and choice tables: a renamed one fails to compile here.
    namespace kind = kinds::allocator;
    nlohmann::json& params = params_;
    kinds::set_param(params, kind::allocator_choice, kind::allocator_type::caching);
    kinds::set_param(params, kind::workload_choice, kind::workload_kind::trace);
    kinds::set_param(params, kind::param::trace_file, trace);
    kinds::set_param(params, kind::param::trace_device, device);
    kinds::set_param(params, kind::param::pytorch, release.to_string());
    kinds::set_param(params, kind::param::device_memory, capacity);
    kinds::set_param(params, kind::timing_choice, kind::timing_method::call);
    out_ = s.empty_result();
    result::run_result& out = out_;
    chosen_ = chosen;
    const std::string confirm_name = "tune-allocator-confirm";
    std::vector<const trial_run*> confirm{chosen};
    if (!(chosen->s == baseline.s)) confirm.push_back(&baseline);
    std::vector<result::tune_trial>& confirmed = confirmed_;
    if (stopped_by() != result::search_stop::interrupted) {
      s.progress(
          fmt::format("confirming {} with the allocator engine", screener::label(chosen->s)));
      std::vector<scenario::scenario> scenarios;
      for (std::size_t i = 0; i < confirm.size(); ++i) {
        nlohmann::json p = params;
        kinds::set_param(p, kind::param::config, confirm[i]->s.text());
        if (confirm[i]->s.memory_fraction)
          kinds::set_param(p, kind::param::memory_fraction, *confirm[i]->s.memory_fraction);
        const double timeout_s =
            std::max(0.5, static_cast<double>(std::max<std::int64_t>(s.left_ns(), 0)) / 2e9);
        nlohmann::json doc{
            {"name", fmt::format("{}-{}", confirm_name, i + 1)},
            {"description", "the answer and the setting in use, measured by the allocator engine"},
            {"kind", kind::kind_name},
            {"params", p},
            {"sampling",
             {{"warmup", 0},
              {"min_samples", 1},
              {"max_samples", 3},
              {"max_noise", 0.05},
              {"min_time", "0s"},
              {"timeout", fmt::format("{:.1f}s", timeout_s)}}}};
        scenarios.push_back(session::scenario_from(doc, "tune allocator"));
      }
      // One scenario per setting: the ids stay those of the search ("config=...").
      result::run_result measured = s.measure(std::move(scenarios));
      result::scenario_result merged;
      for (auto& sc : measured.scenarios) {
        if (merged.name.empty()) {
          merged.name = confirm_name;
          merged.description = sc.description;
          merged.kind = sc.kind;
          merged.source = sc.source;
          merged.verdict = sc.verdict;
        }
        for (auto& c : sc.cases) merged.cases.push_back(std::move(c));
      }
      measured.scenarios.clear();
      for (std::size_t i = 0; i < merged.cases.size() && i < confirm.size(); ++i) {
        auto& c = merged.cases[i];
        c.id = case_id_of(confirm[i]->s);
        confirmed.push_back(confirm_trial(c, confirm_name, screener::label(confirm[i]->s)));
      }
      out.scenarios.push_back(std::move(merged));
      out.environment = std::move(measured.environment);  // with the runner's warnings
      out.interrupted = measured.interrupted;
      out.interrupted_by = measured.interrupted_by;
      if (out.interrupted) stop(result::search_stop::interrupted);
    }
  }

  result::run_result finish() override {
    namespace kind = kinds::allocator;
    const session& s = s_;
    const allocator_request& request = request_;
    // Named one by one: clang 14 does not let a lambda capture a structured binding.
    const std::string& trace = q_.trace;
    const std::string& device_from = q_.device_from;
    const alloc::torch_snapshot_facts& facts = q_.facts;
    const int device = q_.device;
    const alloc::pytorch_release& release = q_.release;
    const std::string& release_from = q_.release_from;
    const std::uint64_t capacity = q_.capacity;
    const std::string& capacity_from = q_.capacity_from;
    const setting& in_use = q_.in_use;
    const alloc::trace_events& events = q_.events;
    const trace_demand& demand = q_.demand;
    const unsigned jobs = q_.jobs;
    const std::vector<trial_run>& tried = tried_;
    const trial_run* chosen = chosen_;
    const trial_run& baseline = *baseline_;
    const nlohmann::json& params = params_;
    result::run_result& out = out_;
    const std::vector<result::tune_trial>& confirmed = confirmed_;
    // The search's replays as cases, then the tune block.
    result::scenario_result search;
    search.name = "tune-allocator-search";
    search.kind = kind::kind_name;
    search.source = "tune allocator";
    search.description =
        "the trace replayed under each setting tried: the allocator's decisions, one untimed "
        "replay each on an emulated device of the capacity";
    nlohmann::json search_params = params;
    search_params.erase(std::string(kind::timing_choice.param()));
    result::tune_block t;
    t.question = result::tune_question::allocator;
    t.chart_metric = "reserved_bytes.all.peak";
    t.chart_unit = "bytes";
    t.chart_target = static_cast<double>(capacity);
    for (const auto& c : confirmed) t.trials.push_back(c);
    if (!confirmed.empty()) {
      t.chosen = 0;
      if (confirmed.size() > 1)
        t.baseline = 1;
      else
        t.baseline = 0;
    }
    for (const auto& r : tried) {
      result::case_result c = search_case(r, search_params);
      result::tune_trial trial;
      trial.label = screener::label(r.s);
      trial.scenario = search.name;
      trial.case_id = c.id;
      trial.phase = result::trial_phase::search;
      trial.value = static_cast<double>(r.peak_reserved());
      trial.meets_goal = r.outcome.ooms == 0;
      trial.note = oom_note(r.outcome);
      trial.cells = search_cells(r);
      t.trials.push_back(std::move(trial));
      search.cases.push_back(std::move(c));
    }
    out.scenarios.insert(out.scenarios.begin(), std::move(search));

    t.inputs = {
        {"trace", trace},
        {"device", device},
        {"device_from", device_from},
        {"pytorch", release.to_string()},
        {"pytorch_from", release_from},
        {"events", events.events.size()},
        {"allocations", demand.allocs},
        {"live_bytes_peak", demand.live_peak},
        {"capacity", capacity},
        {"capacity_from", capacity_from},
        {"memory_fraction", request.memory_fraction ? nlohmann::json(*request.memory_fraction)
                                                    : nlohmann::json(nullptr)},
        {"in_use", in_use.text()},
        {"in_use_from",
         facts.alloc_conf ? "the snapshot's allocator_settings" : "PyTorch's defaults"},
        {"jobs", jobs},
        {"replays", tried.size()}};
    if (facts.oom_size) {
      t.inputs["snapshot_oom"] = {{"size", *facts.oom_size},
                                  {"device_free", facts.oom_device_free.value_or(0)},
                                  {"event", facts.oom_event_index}};
    }
    if (!facts.notes.empty()) t.inputs["notes"] = facts.notes;
    if (!gc_not_tried_.empty()) t.inputs["not_tried"] = gc_not_tried_;
    const bool engine_says_ok = !confirmed.empty() && confirmed.front().meets_goal;
    // Where an event is, in the replay and, for a snapshot, in the snapshot's own trace.
    const auto at_event = [&](std::uint64_t i) {
      return events.recorded ? events.recorded->where(i) : fmt::format("events[{}]", i);
    };
    t.goal_met = engine_says_ok;
    const std::string backend_note =
        s.emulated()
            ? " Host backend: PyTorch's allocator decisions, replayed on an emulated device."
            : "";
    // What the allocator may reserve: the device, or the program's share of it.
    const std::uint64_t allowed =
        request.memory_fraction
            ? static_cast<std::uint64_t>(*request.memory_fraction * static_cast<double>(capacity))
            : capacity;
    const std::string allowed_text =
        request.memory_fraction
            ? fmt::format("{} the memory fraction {} allows of the device's {}",
                          format_bytes(allowed), fraction_text(*request.memory_fraction),
                          format_bytes(capacity))
            : "device's " + format_bytes(capacity);
    std::string in_use_label = in_use.text().empty() ? "PyTorch's defaults" : in_use.text();
    if (in_use.memory_fraction)
      in_use_label += " with memory fraction " + fraction_text(*in_use.memory_fraction);
    const std::string baseline_oom =
        baseline.outcome.ooms == 0
            ? std::string("no OOM")
            : fmt::format("OOM at events[{}]", *baseline.outcome.first_oom_event);
    if (chosen->outcome.ooms == 0 && chosen != &baseline) {
      const double change = static_cast<double>(chosen->peak_reserved());
      // Against a setting that ran out, its peak says little: the device's size does.
      const std::string peak_context =
          baseline.outcome.ooms == 0
              ? percent_change(change, static_cast<double>(baseline.peak_reserved())) + " vs " +
                    format_bytes(baseline.peak_reserved())
              : "of " + format_bytes(capacity);
      t.answer = fmt::format(
          "export PYTORCH_CUDA_ALLOC_CONF={}   # no OOM ({}: {}); peak reserved {} ({})",
          chosen->s.text().empty() ? "\"\"" : chosen->s.text(), in_use_label, baseline_oom,
          format_bytes(chosen->peak_reserved()), peak_context);
      if (chosen->s.memory_fraction && !request.memory_fraction)
        t.answer += fmt::format(
            "\ntorch.cuda.set_per_process_memory_fraction({})   # arms "
            "garbage_collection_threshold (PyTorch {})",
            fraction_text(*chosen->s.memory_fraction), release.to_string());
      const std::string confirmation =
          confirmed.empty() ? " (not confirmed: the search was stopped)"
          : engine_says_ok  ? " (confirmed by the allocator engine: num_ooms 0)"
                            : " (but the allocator engine's run had an OOM: see its case)";
      t.verdict =
          baseline.outcome.ooms == 0
              ? fmt::format("{} has no OOM on {} and reserves up to {}; {} reserves {} ({}){}.{}",
                            in_use_label, format_bytes(capacity),
                            format_bytes(baseline.peak_reserved()), screener::label(chosen->s),
                            format_bytes(chosen->peak_reserved()),
                            percent_change(change, static_cast<double>(baseline.peak_reserved())),
                            confirmation, backend_note)
              : fmt::format(
                    "{} runs out of memory on {} at {}, with {} reserved but "
                    "not allocated at its peak; {} replays the whole trace without an "
                    "OOM, peak reserved {}, {} of it not allocated{}.{}",
                    in_use_label, format_bytes(capacity),
                    at_event(*baseline.outcome.first_oom_event),
                    format_bytes(baseline.fragmentation_at_peak()), screener::label(chosen->s),
                    format_bytes(chosen->peak_reserved()),
                    format_bytes(chosen->fragmentation_at_peak()), confirmation, backend_note);
    } else if (chosen->outcome.ooms == 0) {
      t.answer = fmt::format(
          "# keep PYTORCH_CUDA_ALLOC_CONF as it is ({}): no OOM; none of {} "
          "settings reserves {:.0f}% less than its {}",
          in_use_label, tried.size(), same_peak * 100, format_bytes(baseline.peak_reserved()));
      t.verdict = fmt::format(
          "{} replays the trace with no OOM and the least memory reserved of "
          "{} settings tried.{}",
          in_use_label, tried.size(), backend_note);
    } else if (demand.live_peak > allowed) {
      // Nothing can help: the live allocations alone do not fit, whatever the allocator does.
      t.answer = fmt::format(
          "# no setting avoids the OOM: the trace's live allocations alone peak at {}, {} more "
          "than the {}",
          format_bytes(demand.live_peak), format_bytes(demand.live_peak - allowed), allowed_text);
      t.verdict = fmt::format(
          "No allocator setting can replay the trace in the {}: its live allocations need {} at "
          "once (the best of {} settings tried, {}, fails at {}): reduce the batch{}.{}",
          allowed_text, format_bytes(demand.live_peak), tried.size(), screener::label(chosen->s),
          at_event(*chosen->outcome.first_oom_event),
          request.memory_fraction ? ", raise the memory fraction" : ", or use a larger device",
          backend_note);
    } else if (stopped()) {
      // The search was cut before it could tell: say so, never "no setting".
      t.answer = fmt::format(
          "# not found: the search was cut short ({}) after {} setting(s) in {:.1f} s, none of "
          "which avoids the OOM; give it more --budget",
          stopped_by() == result::search_stop::budget ? "the budget was spent" : "interrupted",
          tried.size(), s.elapsed_s());
      t.verdict = fmt::format(
          "{} runs out of memory on {} at {}; the search stopped after {} setting(s), "
          "before it could find one that avoids it. The live allocations ({} at their peak) "
          "fit the device: a setting may well exist.{}",
          in_use_label, format_bytes(capacity), at_event(*baseline.outcome.first_oom_event),
          tried.size(), format_bytes(demand.live_peak), backend_note);
    } else {
      t.answer = fmt::format(
          "# no setting avoids the OOM: the live allocations peak at {}, within the {}, but none "
          "of {} settings leaves room for the rounding and caching",
          format_bytes(demand.live_peak), allowed_text, tried.size());
      t.verdict = fmt::format(
          "None of {} settings replays the trace without an OOM on {}: the best, {}, still fails "
          "at {}, though the live allocations ({} at their peak) fit: the allocator's "
          "rounding and cached blocks take the rest.{}",
          tried.size(), format_bytes(capacity), screener::label(chosen->s),
          at_event(*chosen->outcome.first_oom_event), format_bytes(demand.live_peak), backend_note);
    }
    if (baseline.outcome.check) {
      t.self_check = self_check_line(*baseline.outcome.check, release);
      t.inputs["pytorch_decisions"] = {{"pytorch", baseline.outcome.check->pytorch},
                                       {"identical", baseline.outcome.check->identical},
                                       {"reproduced", baseline.outcome.check->reproduced()},
                                       {"summary", baseline.outcome.check->summary()}};
    }
    out.tune = std::move(t);  // run_search adds how long it took and why it stopped early
    return std::move(out_);
  }

 private:
  const allocator_request& request_;
  const session& s_;
  question q_;
  std::vector<trial_run> tried_;         ///< every setting screened, ranked once confirm() chose
  std::string gc_not_tried_;             ///< why garbage_collection_threshold was not tried, if so
  const trial_run* chosen_ = nullptr;    ///< the answer, in tried_
  const trial_run* baseline_ = nullptr;  ///< the setting in use, in tried_
  nlohmann::json params_;                ///< the engine's params but the config
  result::run_result out_;               ///< the confirming runs' result
  std::vector<result::tune_trial> confirmed_;
};

}  // namespace allocator_search

result::run_result tune_allocator(const allocator_request& request, const session& s) {
  allocator_search::allocator_tuner tuner(request, s);
  return run_search(s, tuner);
}

}  // namespace pinbench::tune
