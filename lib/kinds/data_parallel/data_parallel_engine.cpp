#include "kinds/data_parallel/data_parallel_engine.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kinds/data_parallel/data_parallel_devices.hpp"
#include "kinds/data_parallel/data_parallel_params.hpp"
#include "kinds/data_parallel/data_parallel_trainer.hpp"
#include "kinds/data_parallel/data_parallel_verdict.hpp"
#include "measure/protocol.hpp"

namespace pinbench::kinds::data_parallel {

namespace {

constexpr auto higher = result::direction::higher;
constexpr auto lower = result::direction::lower;

// A step's peaks, one per device.
using step_peaks = std::vector<peak_memory>;

bool same(const step_peaks& a, const step_peaks& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const peak_memory& x, const peak_memory& y) {
                      return x.allocated == y.allocated && x.reserved == y.reserved;
                    });
}

// Device 0's peak beyond the largest of the others' (0 with one device: nothing to exceed).
double device0_extra(const step_peaks& s) {
  std::uint64_t others = 0;
  for (std::size_t k = 1; k < s.size(); ++k) others = std::max(others, s[k].allocated);
  return s.size() < 2 || s[0].allocated < others ? 0.0
                                                 : static_cast<double>(s[0].allocated - others);
}

// Peak memory follows from the scenario alone: the same tensors are allocated in the same order
// every step, and the caching allocator's decisions depend on nothing else. When every sampled
// step agreed, one value is recorded as deterministic (compare judges it exactly); otherwise
// every step's value, judged statistically, and a warning.
void add_memory_metric(result::case_result& r, const std::string& name,
                       const std::vector<double>& per_step) {
  result::metric& m = r.add(name, "bytes", lower);
  const bool agreed = std::all_of(per_step.begin(), per_step.end(),
                                  [&](double v) { return v == per_step.front(); });
  m.deterministic = agreed;
  if (agreed)
    m.samples.push_back(per_step.front());
  else
    m.samples = per_step;
}

class data_parallel_engine final : public measure::engine {
 public:
  [[nodiscard]] result::case_result run_case(const measure::case_spec& c,
                                             measure::run_context& ctx) override {
    const auto& p = measure::params_of<data_parallel_params>(c);
    const int n = p.devices != 0            ? p.devices
                  : ctx.platform != nullptr ? ctx.platform->device_count()
                                            : 1;
    device_set devices = open_devices(ctx, n);
    auto run =
        p.ddp() ? make_ddp_trainer(p, std::move(devices)) : make_dp_trainer(p, std::move(devices));
    device_set& devs = run->devices();

    result::case_result r;
    const auto step_time = measure::declare(r, "step_time", "ns", lower);
    const auto samples_per_s = measure::declare(r, "samples_per_s", "samples/s", higher);
    const auto comm_time = measure::declare(r, "comm_time", "ns", lower);
    const auto exposed = measure::declare(r, "exposed_comm_time", "ns", lower);
    std::optional<measure::metric_handle> overlap;
    if (p.ddp()) overlap = measure::declare(r, "comm_overlap", "fraction", higher);

    std::vector<step_peaks> peaks;
    measure::measure_case(r, c.sampling,
                          {.warm_up = [&] { (void)run->step(); },
                           .sample = [&]() -> std::optional<double> {
                             for (auto& d : devs) d->reset_peaks();
                             const step_times t = run->step();
                             step_peaks& s = peaks.emplace_back();
                             for (auto& d : devs) s.push_back(d->peaks());
                             step_time.add(t.step_ns);
                             samples_per_s.add(t.step_ns > 0 ? p.batch_size * 1e9 / t.step_ns : 0);
                             comm_time.add(t.comm_ns);
                             exposed.add(t.exposed_comm_ns);
                             // The share of the all-reduces that backward hid: 1 = none left over
                             // after it.
                             if (overlap && t.comm_ns > 0)
                               overlap->add(1 - t.exposed_comm_ns / t.comm_ns);
                             return t.step_ns;
                           }});
    if (overlap && overlap->get().samples.empty())
      std::erase_if(r.metrics, [](const result::metric& m) { return m.name == "comm_overlap"; });

    if (!peaks.empty()) {
      for (int k = 0; k < n; ++k) {
        std::vector<double> allocated, reserved;
        for (const auto& s : peaks) {
          allocated.push_back(static_cast<double>(s[k].allocated));
          reserved.push_back(static_cast<double>(s[k].reserved));
        }
        add_memory_metric(r, fmt::format("peak_memory.dev{}", k), allocated);
        add_memory_metric(r, fmt::format("peak_reserved.dev{}", k), reserved);
      }
      std::vector<double> extra;
      extra.reserve(peaks.size());
      for (const auto& s : peaks) extra.push_back(device0_extra(s));
      add_memory_metric(r, "device0_extra_memory", extra);
      if (!std::all_of(peaks.begin(), peaks.end(),
                       [&](const step_peaks& s) { return same(s, peaks.front()); }))
        r.warnings.push_back("peak memory differed between steps; every step's value is recorded");

      auto& by_device = r.extra["peak_memory"];
      by_device = nlohmann::json::array();
      for (int k = 0; k < n; ++k)
        by_device.push_back({{"device", k},
                             {"allocated_bytes", peaks.front()[k].allocated},
                             {"reserved_bytes", peaks.front()[k].reserved}});
    }

    auto& holds = r.extra["device0_holds"];
    holds = nlohmann::json::object();
    for (const auto& [role, bytes] : run->device0_holdings()) holds[role] = bytes;
    const layout l = make_layout(p, n);
    r.extra["devices"] = n;
    r.extra["shards"] = l.shard;
    if (p.ddp()) r.extra["buckets"] = l.buckets.size();
    r.extra["comm"] = run->comm_path();
    r.extra["timing"] =
        "host clock per step; comm_time: dp the scatter, replicate, gather and reduce copies, "
        "ddp the time inside all-reduce; exposed_comm_time: what no device work hid";
    if (const std::string why = run->limitation(); !why.empty()) r.warnings.push_back(why);
    // The devices' own backends (a pinned shard left unlocked, say): the run reports only its
    // own device's. Taken before verification, whose staging buffers are no part of the steps.
    for (int k = 0; k < n; ++k)
      for (const auto& w : devs[k]->dev().warnings()) {
        std::string line = fmt::format("device {}: {}", k, w);
        if (std::find(r.warnings.begin(), r.warnings.end(), line) == r.warnings.end())
          r.warnings.push_back(std::move(line));
      }

    // The protocol's verification step, run here rather than by measure_case: after the above.
    if (p.verify) measure::verify_case(r, [&] { return run->verify(); });
    return r;
  }

  [[nodiscard]] std::string verdict(const result::scenario_result& s,
                                    device::platform_kind kind) const override {
    return data_parallel::verdict(s, kind);
  }
};

}  // namespace

std::unique_ptr<measure::engine> make_engine() {
  return std::make_unique<data_parallel_engine>();
}

}  // namespace pinbench::kinds::data_parallel
