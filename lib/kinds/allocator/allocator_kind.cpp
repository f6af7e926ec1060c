// Kind `allocator` (a device allocator driven by a workload): its params and their rules, its
// engine, table columns and charts.
#include "kinds/allocator/allocator_kind.hpp"

#include <fmt/format.h>

#include "alloc/config.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "kinds/allocator/allocator_engine.hpp"
#include "kinds/allocator/allocator_figures.hpp"
#include "kinds/allocator/allocator_params.hpp"
#include "kinds/allocator/snapshot_json.hpp"

namespace pinbench::kinds::allocator {

namespace {

using nlohmann::json;

// The scenario's own config is checked as it loads, so that a typo stops even `validate`
// (each expanded case's config is then parsed into its params); "env" is read when the case
// starts.
std::string config_problem(const json& v) {
  const auto& text = v.get_ref<const std::string&>();
  if (text == "env" || text == "snapshot") return {};
  try {
    (void)alloc::parse_config(text, {}, {});
  } catch (const input_error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

kind_spec describe() {
  param_spec config =
      text(param::config, "",
           "caching allocator options in PYTORCH_CUDA_ALLOC_CONF syntax (\"max_split_size_mb:128,"
           "expandable_segments:True\"); \"env\" reads PYTORCH_CUDA_ALLOC_CONF at run time; "
           "\"snapshot\" takes a PyTorch snapshot's allocator_settings (PyTorch's defaults when "
           "it has none)");
  config.check = config_problem;
  param_spec pytorch =
      text(param::pytorch, "",
           "the PyTorch release whose caching-allocator rules decide (2.0 to 2.10; later "
           "releases follow 2.10's); \"\": 2.10, or for a snapshot the newest release its "
           "format allows");
  pytorch.check = [](const json& v) -> std::string {
    const auto& t = v.get_ref<const std::string&>();
    if (t.empty()) return {};
    try {
      (void)alloc::parse_pytorch_release(t, {}, {});
    } catch (const input_error& e) {
      return e.message();
    }
    return {};
  };
  param_spec probability =
      bounded("alloc_probability", param_type::number, 0.6, 0, true, std::nullopt,
              "random: chance that an operation allocates rather than frees (0 < p < 1)");
  probability.check = [](const json& v) {
    return v.get<double>() < 1 ? std::string()
                               : fmt::format("expected a number < 1, got {}", v.get<double>());
  };
  // Left out, it is as if set_per_process_memory_fraction was never called; given, 1.0 and 0
  // included, it is as if it was (PyTorch 2.6: the limit, garbage collection, "allowed").
  param_spec memory_fraction =
      bounded(param::memory_fraction, param_type::number, nullptr, 0, false, 1.0,
              "torch.cuda.set_per_process_memory_fraction(f) for the caching allocator: reserved "
              "memory may not exceed f x device_memory (0 <= f <= 1; unset: never called)");
  memory_fraction.optional = true;
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
      .kind = kind_name,
      .help =
          "a device allocator (PyTorch's caching allocator, or cudaMalloc per request) driven by "
          "a training loop, a random pattern or a trace: latencies, memory_stats counters, "
          "fragmentation and out-of-memory errors",
      .params =
          {
              allocator_choice.spec(
                  "caching: PyTorch's native caching allocator; raw: cudaMalloc/cudaFree "
                  "per request; async: cudaMallocAsync (cuda only)"),
              config,
              bounded(param::device_memory, param_type::size, 8_GiB, 0, false,
                      static_cast<double>(1ull << 50),
                      "device memory the allocator may use (size; host backend: the emulated "
                      "capacity; cuda: a cap; 0 = the device's total)"),
              memory_fraction,
              bounded("empty_cache_every", param_type::integer, 0, 0, false, 1e9,
                      "call empty_cache after every N-th iteration (count; 0 = never)"),
              timing_choice.spec(
                  "how alloc_latency and free_latency are timed: batch (runs of up to 64 "
                  "consecutive allocs, or frees, between two clock reads: the mean per "
                  "call, free of the timer's cost), call (each call alone: its median and "
                  "p99, each including one clock read), auto (call for a trace, else "
                  "batch)"),
              pytorch,
              workload_choice.spec(
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
              text(param::trace_file, "",
                   "trace: a pinbench.trace/1 JSON, RMM replay CSV or PyTorch memory snapshot "
                   "pickle file (relative to the scenario file; required when workload is "
                   "\"trace\")"),
              bounded(param::trace_device, param_type::integer, 0, 0, false, 1e4,
                      "pickle snapshot: whose device_traces entry is replayed (device index)"),
          },
      .parse_case = parse_params,
      .make_engine = make_engine,
      .headlines = {{"alloc_latency", false},
                    {"free_latency", false},
                    {"hit_pair_latency", false},
                    {"iteration_time", false},
                    {"empty_cache_time", false},
                    {"allocated_bytes.all.peak", false},
                    {"reserved_bytes.all.peak", false},
                    {"fragmentation", false},
                    {"num_device_alloc", false},
                    {"num_alloc_retries", false},
                    {"num_ooms", false}},
      .figures = figures,
      .viewer_snapshot = torch_pickle_form};
}

}  // namespace pinbench::kinds::allocator
