// The params of every scenario kind and the sampling keys: adding a kind is adding a kind_spec.
#include "scenario/schema.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "alloc/config.hpp"
#include "device/backend.hpp"
#include "core/error.hpp"
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

// Overlap cases queue every copy of a sample behind one gate (and the compute kernel behind
// another), so a sample cannot be split into gated chunks there.
void check_transfer_case(const json& params, const std::string& source) {
  const auto copies = params.at("copies_per_sample").get<std::int64_t>();
  const bool gated = params.at("mode").get<std::string>() == "non_blocking" &&
                     params.at("memory").get<std::string>() != "pageable" &&
                     params.at("memory").get<std::string>() != "pin_on_the_fly";
  if (gated && params.at("overlap_compute").get<std::int64_t>() > 0 &&
      copies > device::max_copies_behind_gate)
    throw input_error(source, "params.copies_per_sample",
                      fmt::format("expected at most {} with overlap_compute: non_blocking copies "
                                  "from page-locked memory are queued behind one gate kernel, and "
                                  "more would fill the driver's launch queue; got {}",
                                  device::max_copies_behind_gate, copies));
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
          bounded("copies_per_sample", param_type::integer, 0, 0, false, 1e6,
                  "copies timed together as one sample (count; 0 = auto: 16 for copies of 1 MiB "
                  "or less, else 1)"),
          bounded("overlap_compute", param_type::duration, 0, 0, false, std::nullopt,
                  "compute kernel run on another stream alongside the copies (duration; 0 = none)"),
          boolean("verify", true, "check that the copied bytes arrived intact (true/false)"),
      },
      .check_case = check_transfer_case};
}

param_spec text(std::string name, std::string def, std::string help) {
  param_spec p;
  p.name = std::move(name);
  p.type = param_type::string;
  p.default_value = std::move(def);
  p.help = std::move(help);
  return p;
}

// The loader's ring must hold every batch that can be pinned and not yet handed over, plus the
// one the consumer is copying: with fewer slots the pin thread could wait for a slot held by a
// batch queued behind the one the consumer waits for.
void check_loader_case(const json& params, const std::string& source) {
  const auto workers = params.at("num_workers").get<std::int64_t>();
  const auto prefetch = params.at("prefetch_factor").get<std::int64_t>();
  const auto slots = params.at("ring_slots").get<std::int64_t>();
  const std::int64_t needed = workers > 0 ? workers * prefetch + 1 : 1;
  if (slots != 0 && slots < needed)
    throw input_error(source, "params.ring_slots",
                      fmt::format("expected 0 (auto) or at least {} (num_workers x prefetch_factor "
                                  "+ 1 = {} x {} + 1), got {}",
                                  needed, workers, prefetch, slots));
  const auto& ds = params.at("dataset");
  if (ds.at("burst_length").get<std::int64_t>() > ds.at("burst_every").get<std::int64_t>())
    throw input_error(source, "params.dataset.burst_length",
                      fmt::format("expected at most dataset.burst_every ({}), got {}",
                                  ds.at("burst_every").get<std::int64_t>(),
                                  ds.at("burst_length").get<std::int64_t>()));
}

kind_spec loader_kind() {
  return {
      .kind = "loader",
      .help =
          "a DataLoader feeding the device: workers build batches with real CPU work, a pin "
          "stage, copies and device compute per step; reports samples/s and whether the device "
          "waited for data",
      .params =
          {
              bounded("dataset.samples", param_type::integer, 2048, 1, false, 1e9,
                      "samples in the dataset, per epoch (count)"),
              bounded("dataset.sample_bytes", param_type::size, 128_KiB, 0, true,
                      static_cast<double>(1ull << 30), "bytes per sample (size)"),
              bounded("dataset.cpu_per_sample", param_type::duration, 100'000, 0, false, 1e10,
                      "real CPU work per sample, calibrated on this CPU (duration; 0 = none)"),
              enumeration("dataset.source", {"memory", "file"}, "memory",
                          "memory: samples copied out of an in-memory block; file: pread from a "
                          "file pinbench writes (page cache and I/O are real)"),
              enumeration("dataset.cache", {"warm", "cold"}, "warm",
                          "file: warm keeps the page cache; cold drops the file's pages before "
                          "every epoch (posix_fadvise)"),
              text("dataset.dir", "",
                   "file: the directory the dataset file is written to (\"\" = $TMPDIR or /tmp)"),
              bounded("dataset.burst_every", param_type::integer, 0, 0, false, 1e12,
                      "bursty cost: every this many samples a burst starts (count; 0 = none)"),
              bounded("dataset.burst_length", param_type::integer, 0, 0, false, 1e12,
                      "bursty cost: samples per burst (count, at most burst_every)"),
              bounded("dataset.burst_factor", param_type::number, 1.0, 1, false, 1e4,
                      "bursty cost: a sample in a burst costs this many times cpu_per_sample"),
              bounded("dataset.fail_at_sample", param_type::integer, -1, -1, false, 1e12,
                      "fault switch: producing this sample throws, as a failing worker would "
                      "(index; -1 = never)"),
              bounded("batch_size", param_type::integer, 64, 1, false, 1e6,
                      "samples per batch (count)"),
              bounded("num_workers", param_type::integer, 2, 0, false, 256,
                      "worker threads building batches (count; 0 = built in the consuming "
                      "thread)"),
              bounded("prefetch_factor", param_type::integer, 2, 1, false, 64,
                      "batches outstanding per worker, as PyTorch counts them (count)"),
              boolean("pin_memory", true,
                      "copy each batch into page-locked memory before the device copy"),
              enumeration("pin_mode", {"per_batch", "ring"}, "per_batch",
                          "per_batch: one pin thread, blocks from a caching host allocator; "
                          "ring: preallocated pinned slots reused under events"),
              bounded("ring_slots", param_type::integer, 0, 0, false, 4096,
                      "ring: slots (count; 0 = num_workers x prefetch_factor + 1)"),
              bounded("pinned_limit", param_type::size, std::uint64_t{0}, 0, false,
                      static_cast<double>(1ull << 44),
                      "page-locked memory the pin stage may hold (size; 0 = no limit)"),
              boolean("non_blocking", true,
                      "copy on a side stream that the compute stream waits for, without "
                      "holding the consumer; false: copy, then wait"),
              boolean("shuffle", false, "a new sample order every epoch (seeded)"),
              boolean("drop_last", false, "drop the last batch when it is not full"),
              bounded("epochs", param_type::integer, 1, 1, false, 1e6,
                      "epochs per timed run (count)"),
              bounded("batches", param_type::integer, 0, 0, false, 1e9,
                      "steps per timed run at most (count; 0 = every batch of every epoch)"),
              bounded("compute_per_batch", param_type::duration, 2'000'000, 0, false, 1e11,
                      "device work per step, on the compute stream (duration; 0 = none)"),
              boolean("verify", true,
                      "check order and exactly-once delivery on data copied back from the "
                      "device (adds one small device-to-device copy per step)"),
          },
      .check_case = check_loader_case,
  };
}

// The allocator's config is checked when the scenario loads, so a typo in it stops the run
// before anything is measured. "env" is read from the environment when the case starts.
std::string config_problem(const json& v) {
  const auto& text = v.get_ref<const std::string&>();
  if (text == "env") return {};
  try {
    (void)alloc::parse_config(text, {}, {});
  } catch (const input_error& e) {
    return e.what();
  }
  return {};
}

void check_allocator_case(const json& params, const std::string& source) {
  if (params.at("workload") == "trace" && params.at("trace_file").get<std::string>().empty())
    throw input_error(source, "params.trace_file", "required when workload is \"trace\"");
}

kind_spec allocator_kind() {
  param_spec config =
      text("config", "",
           "caching allocator options in PYTORCH_CUDA_ALLOC_CONF syntax (\"max_split_size_mb:128,"
           "expandable_segments:True\"); \"env\" reads PYTORCH_CUDA_ALLOC_CONF at run time");
  config.check = config_problem;
  param_spec probability =
      bounded("alloc_probability", param_type::number, 0.6, 0, true, std::nullopt,
              "random: chance that an operation allocates rather than frees (0 < p < 1)");
  probability.check = [](const json& v) {
    return v.get<double>() < 1 ? std::string()
                               : fmt::format("expected a number < 1, got {}", v.get<double>());
  };
  param_spec batch_sizes;
  batch_sizes.name = "batch_sizes";
  batch_sizes.type = param_type::integer_list;
  batch_sizes.default_value = json::array();
  batch_sizes.min = 1;
  batch_sizes.max = 1e6;
  batch_sizes.help =
      "training_loop: batch size of each iteration, cycled (list such as [32, 48, 64]; "
      "[] = always base_batch); activations scale with batch / base_batch";
  return {
      .kind = "allocator",
      .help =
          "a device allocator (PyTorch's caching allocator, or cudaMalloc per request) driven by "
          "a training loop, a random pattern or a trace: latencies, memory_stats counters, "
          "fragmentation and out-of-memory errors",
      .params =
          {
              enumeration("allocator", {"caching", "raw", "async"}, "caching",
                          "caching: PyTorch's native caching allocator; raw: cudaMalloc/cudaFree "
                          "per request; async: cudaMallocAsync (cuda only)"),
              config,
              bounded("device_memory", param_type::size, 8_GiB, 0, false,
                      static_cast<double>(1ull << 50),
                      "device memory the allocator may use (size; host backend: the emulated "
                      "capacity; cuda: a cap; 0 = the device's total)"),
              bounded("memory_fraction", param_type::number, 1.0, 0, true, 1.0,
                      "share of device_memory the caching allocator may reserve "
                      "(set_per_process_memory_fraction; 0 < f <= 1)"),
              bounded("empty_cache_every", param_type::integer, 0, 0, false, 1e9,
                      "call empty_cache after every N-th iteration (count; 0 = never)"),
              enumeration("workload", {"training_loop", "random", "trace"}, "training_loop",
                          "training_loop: generated forward/backward pattern; random: RMM's "
                          "random allocations; trace: replay trace_file"),
              bounded("layers", param_type::integer, 24, 1, false, 1e5,
                      "training_loop: layers of the model (count)"),
              bounded("activation_bytes", param_type::size, 64_MiB, 0, true,
                      static_cast<double>(1ull << 44),
                      "training_loop: activation size per layer at base_batch (size)"),
              bounded("parameter_bytes", param_type::size, 16_MiB, 0, true,
                      static_cast<double>(1ull << 44),
                      "training_loop: parameter size per layer (size)"),
              bounded("iterations", param_type::integer, 20, 1, false, 1e7,
                      "training_loop: training steps per run (count)"),
              bounded("base_batch", param_type::integer, 32, 1, false, 1e6,
                      "training_loop: the batch size that activation_bytes is given for (count)"),
              batch_sizes,
              bounded("count", param_type::integer, 10000, 1, false, 1e9,
                      "random: operations per run (count)"),
              bounded("max_bytes", param_type::size, 8_MiB, 0, true,
                      static_cast<double>(1ull << 40),
                      "random: allocation sizes are uniform in [1, max_bytes] (size)"),
              probability,
              text("trace_file", "",
                   "trace: a pinbench.trace/1 JSON or RMM replay CSV file (relative to the "
                   "scenario file; required when workload is \"trace\")"),
          },
      .check_case = check_allocator_case,
  };
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
  static const std::vector<kind_spec> all = {transfer_kind(), loader_kind(), allocator_kind()};
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
