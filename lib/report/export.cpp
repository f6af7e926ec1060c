// Exports for the CI trackers (report/export.hpp).
#include "report/export.hpp"

#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_path.hpp"
#include "core/stats.hpp"

namespace pinbench::report {

namespace {

using ojson = nlohmann::ordered_json;

std::string case_key(const result::scenario_result& s, const result::case_result& c) {
  return s.name + "/" + (c.id.empty() ? std::string("default") : c.id);
}

// What a tracker may chart: a completed case's metric with a finite sample.
template <typename Visit>
void for_each_figure(const result::run_result& r, Visit&& visit) {
  for (const auto& s : r.scenarios)
    for (const auto& c : s.cases) {
      if (c.status != result::case_status::ok) continue;
      const std::string key = case_key(s, c);
      for (const auto& m : c.metrics) {
        const auto sum = result::finite_summary(m);
        if (sum.n == 0) continue;
        visit(key, c, m, sum);
      }
    }
}

// ---- Google Benchmark -------------------------------------------------------------------------

// The time units Google Benchmark knows are the only ones pinbench's time metrics use.
bool time_unit(std::string_view unit) {
  return unit == "ns" || unit == "us" || unit == "ms" || unit == "s";
}

// Bytes per second in one `unit` of a rate ("GB/s" -> 1e9); nullopt for other units.
std::optional<double> bytes_per_second_in(std::string_view unit) {
  static constexpr std::pair<std::string_view, double> rates[] = {
      {"B/s", 1},     {"KB/s", 1e3},     {"MB/s", 1e6},        {"GB/s", 1e9},
      {"TB/s", 1e12}, {"KiB/s", 1024.0}, {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0}};
  for (const auto& [name, scale] : rates)
    if (unit == name) return scale;
  return std::nullopt;
}

bool item_rate(std::string_view unit) {
  return unit == "samples/s" || unit == "items/s";
}

// One user counter of a benchmark: a metric of the case that shares the time metric's samples.
struct counter {
  std::string key;
  const result::metric* metric = nullptr;
  double scale = 1;
  /// A deterministic metric measured once (the allocator's policy counters): one value for the
  /// case, given in every entry.
  bool constant = false;
};

// One benchmark: a time metric and the counters that ride on it.
struct benchmark_family {
  std::string name;
  const result::metric* time = nullptr;
  std::vector<counter> counters;
};

bool same_samples(const result::metric& a, const result::metric& b) {
  return a.samples.size() == b.samples.size() && a.rounds == b.rounds;
}

// The benchmarks of one completed case, and how many of its metrics had no place.
std::vector<benchmark_family> families_of(const std::string& key, const result::case_result& c,
                                          std::size_t& left_out) {
  std::vector<benchmark_family> out;
  for (const auto& m : c.metrics)
    if (time_unit(m.unit) && result::finite_summary(m).n > 0)
      out.push_back({key + "/" + m.name, &m, {}});
  bool bytes_taken = false, items_taken = false;
  for (const auto& m : c.metrics) {
    if (result::finite_summary(m).n == 0) continue;
    if (time_unit(m.unit)) continue;
    benchmark_family* host = nullptr;
    for (auto& f : out)
      if (same_samples(*f.time, m)) {
        host = &f;
        break;
      }
    const bool constant =
        host == nullptr && m.deterministic && m.samples.size() == 1 && !out.empty();
    if (constant) host = &out.front();
    if (host == nullptr) {
      ++left_out;
      continue;
    }
    counter k{metric_label(m), &m, 1, constant};
    if (const auto scale = bytes_per_second_in(m.unit); scale && !bytes_taken) {
      k = {"bytes_per_second", &m, *scale, constant};
      bytes_taken = true;
    } else if (item_rate(m.unit) && !items_taken) {
      k = {"items_per_second", &m, 1, constant};
      items_taken = true;
    }
    host->counters.push_back(std::move(k));
  }
  return out;
}

// The four aggregates Google Benchmark writes after repetitions, over the finite values.
struct aggregate {
  const char* name;
  bool percentage;  ///< cv: a fraction, "aggregate_unit": "percentage"
};
constexpr aggregate aggregates[] = {
    {"mean", false}, {"median", false}, {"stddev", false}, {"cv", true}};

std::vector<double> finite_values(const result::metric& m, double scale) {
  std::vector<double> out;
  for (const double v : m.samples)
    if (std::isfinite(v)) out.push_back(v * scale);
  return out;
}

double aggregate_of(const std::vector<double>& values, const aggregate& a) {
  const summary s = summarize(values);
  const std::string_view name = a.name;
  if (name == "mean") return s.mean;
  if (name == "median") return s.median;
  if (name == "stddev") return s.stdev;
  return s.mean != 0 ? s.stdev / s.mean : 0;
}

ojson benchmark_context(const result::run_result& r) {
  ojson ctx = ojson::object();
  std::string date = r.created;  // ISO 8601 UTC, "...Z"; Google Benchmark writes "+00:00"
  if (!date.empty() && date.back() == 'Z') date.replace(date.size() - 1, 1, "+00:00");
  ctx["date"] = date;
  ctx["host_name"] = r.environment_text({"host", "hostname"});
  ctx["executable"] = "pinbench";
  if (const auto* cores = find_path(r.environment, {"host", "cores"});
      cores != nullptr && cores->is_number_integer())
    ctx["num_cpus"] = cores->get<long long>();
  if (const auto* mhz = find_path(r.environment, {"host", "cpu_mhz"});
      mhz != nullptr && mhz->is_number())
    ctx["mhz_per_cpu"] = static_cast<long long>(std::llround(mhz->get<double>()));
  ctx["json_schema_version"] = 1;
  const std::string backend = r.backend_name();
  ctx["pinbench_version"] = r.tool_version;
  ctx["pinbench_git"] = r.tool_git;
  ctx["pinbench_backend"] = backend;
  ctx["pinbench_emulated"] = r.emulated();
  ctx["pinbench_device"] = r.environment_text({"device", "name"});
  return ctx;
}

}  // namespace

std::string metric_label(const result::metric& m) {
  return m.unit.empty() ? m.name : m.name + " (" + m.unit + ")";
}

std::string to_bmf(const result::run_result& r) {
  ojson out = ojson::object();
  for_each_figure(r, [&](const std::string& key, const result::case_result&,
                         const result::metric& m, const summary& sum) {
    out[key][metric_label(m)] = {
        {"value", sum.median}, {"lower_value", sum.q1}, {"upper_value", sum.q3}};
  });
  return out.dump(2) + "\n";
}

tracker_arrays to_github_action_benchmark(const result::run_result& r) {
  ojson bigger = ojson::array(), smaller = ojson::array();
  tracker_arrays out;
  const std::string backend = r.backend_name();
  const std::string device = r.environment_text({"device", "name"});
  for_each_figure(r, [&](const std::string& key, const result::case_result& c,
                         const result::metric& m, const summary& sum) {
    if (m.better == result::direction::none) {
      ++out.left_out;
      return;
    }
    ojson item{{"name", key + " " + m.name},
               {"unit", m.unit},
               {"value", sum.median},
               {"range", fmt::format("± {:.4g}", (sum.q3 - sum.q1) / 2)},
               {"extra",
                fmt::format("backend: {}{}; device: {}; {} sample(s); stop: {}", backend,
                            r.emulated() ? " (emulated)" : "", device.empty() ? "unknown" : device,
                            sum.n, result::to_string(c.stopped))}};
    (m.better == result::direction::higher ? bigger : smaller).push_back(std::move(item));
  });
  out.bigger = bigger.dump(2) + "\n";
  out.smaller = smaller.dump(2) + "\n";
  return out;
}

benchmark_json to_google_benchmark(const result::run_result& r) {
  benchmark_json out;
  ojson benchmarks = ojson::array();
  std::size_t family_index = 0;
  for (const auto& s : r.scenarios)
    for (const auto& c : s.cases) {
      if (c.status != result::case_status::ok) continue;
      for (const auto& f : families_of(case_key(s, c), c, out.left_out)) {
        const auto& times = f.time->samples;
        const std::size_t repetitions = finite_values(*f.time, 1).size();
        const auto head = [&](ojson& e) {
          e["name"] = f.name;
          e["family_index"] = family_index;
          e["per_family_instance_index"] = 0;
          e["run_name"] = f.name;
        };
        std::size_t index = 0;
        for (std::size_t i = 0; i < times.size(); ++i) {
          if (!std::isfinite(times[i])) continue;
          ojson e = ojson::object();
          head(e);
          e["run_type"] = "iteration";
          e["repetitions"] = repetitions;
          e["repetition_index"] = index++;
          e["threads"] = 1;
          e["iterations"] = 1;
          e["real_time"] = times[i];
          e["cpu_time"] = times[i];
          e["time_unit"] = f.time->unit;
          for (const auto& k : f.counters)
            if (const double v = k.metric->samples[k.constant ? 0 : i]; std::isfinite(v))
              e[k.key] = v * k.scale;
          benchmarks.push_back(std::move(e));
        }
        if (repetitions >= 2)
          for (const auto& a : aggregates) {
            ojson e = ojson::object();
            head(e);
            e["name"] = f.name + "_" + a.name;  // keeps its place, first
            e["run_type"] = "aggregate";
            e["repetitions"] = repetitions;
            e["threads"] = 1;
            e["aggregate_name"] = a.name;
            e["aggregate_unit"] = a.percentage ? "percentage" : "time";
            e["iterations"] = repetitions;
            const double t = aggregate_of(finite_values(*f.time, 1), a);
            e["real_time"] = t;
            e["cpu_time"] = t;
            e["time_unit"] = f.time->unit;
            for (const auto& k : f.counters)
              if (const auto values = finite_values(*k.metric, k.scale); !values.empty())
                e[k.key] = aggregate_of(values, a);
            benchmarks.push_back(std::move(e));
          }
        ++family_index;
      }
    }
  ojson doc = ojson::object();
  doc["context"] = benchmark_context(r);
  doc["benchmarks"] = std::move(benchmarks);
  out.json = doc.dump(2) + "\n";
  return out;
}

}  // namespace pinbench::report
