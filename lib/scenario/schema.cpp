// The params of every scenario kind and the sampling keys: adding a kind is adding a kind_spec.
#include "scenario/schema.hpp"

#include <algorithm>

#include "core/units.hpp"
#include "scenario/scenario.hpp"

namespace pinbench::scenario {

namespace {

using nlohmann::json;

param_spec enumeration(std::string name, std::vector<std::string> choices, std::string def,
                       std::string help) {
  param_spec p;
  p.name = std::move(name);
  p.type = param_type::enumeration;
  p.default_value = std::move(def);
  p.choices = std::move(choices);
  p.help = std::move(help);
  return p;
}

param_spec bounded(std::string name, param_type type, json def, double min, bool min_exclusive,
                   std::optional<double> max, std::string help) {
  param_spec p;
  p.name = std::move(name);
  p.type = type;
  p.default_value = std::move(def);
  p.min = min;
  p.min_exclusive = min_exclusive;
  p.max = max;
  p.help = std::move(help);
  return p;
}

param_spec boolean(std::string name, bool def, std::string help) {
  param_spec p;
  p.name = std::move(name);
  p.type = param_type::boolean;
  p.default_value = def;
  p.help = std::move(help);
  return p;
}

kind_spec transfer_kind() {
  return {
      .kind = "transfer",
      .help =
          "host<->device copies: bandwidth, copy time and how long the caller is held, by "
          "memory kind, direction, mode and size",
      .params = {
          enumeration("direction", {"h2d", "d2h", "bidirectional"}, "h2d",
                      "which way data moves: host to device, device to host, or both at once"),
          enumeration("memory", {"pageable", "pinned", "pinned_wc", "registered", "pin_on_the_fly"},
                      "pinned",
                      "host buffer: malloc'd pageable, cudaHostAlloc'd pinned, pinned "
                      "write-combined, cudaHostRegister'ed, or pageable pinned per copy"),
          enumeration(
              "mode", {"blocking", "non_blocking"}, "non_blocking",
              "blocking: copy, then wait for the stream; non_blocking: cudaMemcpyAsync on a non-default stream"),
          bounded("bytes", param_type::size, 64_MiB, 0, true, static_cast<double>(1ull << 40),
                  "bytes per copy (size, e.g. \"64MiB\")"),
          bounded("copies_per_sample", param_type::integer, 1, 1, false, 1e6,
                  "copies timed together as one sample (count)"),
          bounded("overlap_compute", param_type::duration, 0, 0, false, std::nullopt,
                  "compute kernel run on another stream alongside the copies (duration; 0 = none)"),
          boolean("verify", true, "check that the copied bytes arrived intact (true/false)"),
      }};
}

}  // namespace

const param_spec* kind_spec::find(std::string_view name) const {
  const auto it = std::find_if(params.begin(), params.end(),
                               [&](const param_spec& p) { return p.name == name; });
  return it == params.end() ? nullptr : &*it;
}

std::vector<std::string> kind_spec::names() const {
  std::vector<std::string> out;
  for (const auto& p : params) out.push_back(p.name);
  return out;
}

const std::vector<kind_spec>& kinds() {
  static const std::vector<kind_spec> all = {transfer_kind()};
  return all;
}

const kind_spec* find_kind(std::string_view kind) {
  const auto& all = kinds();
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const kind_spec& k) { return k.kind == kind; });
  return it == all.end() ? nullptr : &*it;
}

const std::vector<param_spec>& sampling_params() {
  // Defaults come from struct sampling, so the struct and the schema cannot drift apart.
  static const sampling d;
  static const std::vector<param_spec> all = {
      bounded("warmup", param_type::integer, d.warmup, 0, false, 1e6,
              "untimed runs before sampling starts (count)"),
      bounded("min_samples", param_type::integer, d.min_samples, 1, false, 1e6,
              "samples taken at least (count)"),
      bounded("max_samples", param_type::integer, d.max_samples, 1, false, 1e6,
              "samples taken at most, >= min_samples (count)"),
      bounded("max_noise", param_type::number, d.max_noise, 0, false, std::nullopt,
              "relative standard deviation at which sampling may stop (fraction: 0.01 = 1%)"),
      bounded("min_time", param_type::duration, d.min_time_ns, 0, false, std::nullopt,
              "time spent sampling at least, unless max_samples comes first (duration)"),
      bounded("timeout", param_type::duration, d.timeout_ns, 0, true, std::nullopt,
              "time after which sampling a case stops with what it has (duration)"),
  };
  return all;
}

}  // namespace pinbench::scenario
