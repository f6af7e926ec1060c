// `pinbench tune allocator TRACE` and `pinbench tune loader`: the command lines, then the tuner
// (lib/tune/), then what stdout shows (the ranked trials and the answer, or the result as
// JSON), the result file and the exit code.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "alloc/pytorch_version.hpp"
#include "commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "device/platform.hpp"
#include "report/report.hpp"
#include "result/result_io.hpp"
#include "result/tune.hpp"
#include "run_output.hpp"
#include "tune/allocator_tune.hpp"
#include "tune/loader_tune.hpp"
#include "tune/session.hpp"

namespace pinbench::app {

namespace {

// What both questions share on the command line.
struct common_args {
  std::string backend = "auto";
  std::string host_capacity;
  std::string budget = "2min";
  std::string out;
  std::string format = "table";
  std::uint64_t seed = 1;
  bool quiet = false;
};

struct allocator_args {
  common_args common;
  std::string trace, capacity, pytorch;
  std::optional<double> memory_fraction;
  std::optional<int> device;
  unsigned jobs = 0;
};

struct loader_args {
  common_args common;
  std::string images, cpu_per_sample, sample_bytes, step_time;
  std::uint64_t batch_size = 64;
  double target_busy = 0.95;
  unsigned max_workers = 0;
};

std::uint64_t size_option(const std::string& text, const char* option) {
  const auto v = parse_bytes(text);
  if (!v || *v == 0)
    throw input_error({}, option, "expected a size such as 80GiB or 512MiB, got \"" + text + "\"");
  return *v;
}

std::int64_t duration_option(const std::string& text, const char* option, bool zero_ok) {
  const auto v = parse_duration_ns(text);
  if (!v || (*v == 0 && !zero_ok))
    throw input_error({}, option,
                      "expected a duration such as 15ms, 3ms or 2min, got \"" + text + "\"");
  return *v;
}

void add_common(CLI::App* sub, common_args& a) {
  sub->add_option("--backend", a.backend,
                  "Device backend: auto (cuda when usable), cuda, host (an emulated device: its "
                  "figures are labelled as such)")
      ->check(CLI::IsMember(device::backend_choice_names()))
      ->capture_default_str();
  sub->add_option("--host-capacity", a.host_capacity,
                  "Host backend: emulated device memory (default: half of host memory)")
      ->type_name("SIZE");
  sub->add_option("--budget", a.budget,
                  "Wall time the whole search may take, confirming runs included (duration)")
      ->capture_default_str();
  sub->add_option("--out", a.out,
                  "Write the pinbench.result/1 JSON here (every setting tried a case, the answer "
                  "in its `tune` block; '-' = stdout)")
      ->type_name("FILE");
  sub->add_option("--format", a.format,
                  "What stdout shows: table (the ranked trials and the answer) or json (the "
                  "result document)")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  sub->add_option("--seed", a.seed, "Seed for every random choice (recorded in the result)")
      ->capture_default_str();
  sub->add_flag("--quiet,-q", a.quiet, "No progress lines on stderr");
}

// Shows and writes the tuner's result; the exit code: 0 the goal is met, 1 no setting met it
// (the best one is still the answer), 3 the result could not be saved, 128 + a signal.
int report_tune(const result::run_result& r, const common_args& a) {
  if (a.out != "-") {
    const std::string text =
        a.format == "json" ? result::to_json(r).dump(2) + "\n" : report::tune_text(r);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  bool saved = true;
  if (!a.out.empty()) {
    saved = save(a.out, result::to_json(r).dump(2) + "\n", "result");
    if (saved && a.out != "-" && !a.quiet)
      std::fprintf(stderr, "pinbench: result written to %s\n", a.out.c_str());
  }
  if (r.interrupted) {
    std::fprintf(stderr, "pinbench: interrupted by %s: the answer is from the trials completed\n",
                 r.interrupted_by.empty() ? "a signal" : r.interrupted_by.c_str());
    return interrupted_exit_code(r.interrupted_by);
  }
  if (!saved) return exit_environment;
  return r.tune && r.tune->goal_met ? exit_ok : exit_case_failed;
}

// Everything about the command line that is wrong is found before the device is opened.
template <typename Tune>
int tune_with(const common_args& a, const std::vector<named_file>& inputs, Tune&& tune) {
  install_interrupt_handler();
  const std::int64_t budget = duration_option(a.budget, "--budget", false);
  if (!a.out.empty()) {
    check_distinct_files(inputs, {{"--out", a.out}});
    if (a.out != "-") check_writable(a.out);
  }
  const auto choice = device::parse_backend_choice(a.backend);
  if (!choice)
    throw input_error(
        {}, "--backend",
        "expected " + quoted_list(device::backend_choice_names()) + ", got \"" + a.backend + "\"");
  const auto platform =
      device::open_platform(*choice, device::parse_host_options(a.host_capacity, {}), -1);
  const tune::session s(platform, a.seed, budget, a.quiet, command_line());
  if (!a.quiet && s.emulated())
    std::fprintf(stderr,
                 "pinbench: tune: on the host backend (an emulated device: host figures, not "
                 "GPU figures)\n");
  return report_tune(tune(s), a);
}

int tune_allocator(const allocator_args& a) {
  tune::allocator_request request;
  request.trace = a.trace;
  if (!a.capacity.empty()) request.capacity = size_option(a.capacity, "--capacity");
  request.memory_fraction = a.memory_fraction;
  request.device = a.device;
  if (!a.pytorch.empty())
    request.pytorch = alloc::parse_pytorch_release(a.pytorch, {}, "--pytorch");
  request.jobs = a.jobs;
  return tune_with(a.common, {{"the trace", a.trace}},
                   [&](const tune::session& s) { return tune::tune_allocator(request, s); });
}

// --images is a whole folder: an --out inside it (or the folder itself) would replace or join
// the user's JPEGs. check_distinct_files compares files; this compares the folder's tree.
void check_out_outside_images(const std::string& out, const std::string& images) {
  if (out.empty() || out == "-" || images.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path o = fs::weakly_canonical(fs::absolute(out, ec), ec);
  const fs::path dir = fs::weakly_canonical(fs::absolute(images, ec), ec);
  if (o.empty() || dir.empty()) return;
  const auto [at_dir, at_out] = std::mismatch(dir.begin(), dir.end(), o.begin(), o.end());
  const bool inside = at_dir == dir.end() || (std::next(at_dir) == dir.end() && at_dir->empty());
  if (inside)
    throw input_error(fmt::format(
        "--out {} is inside --images {}: an output never replaces an input", out, images));
}

int tune_loader(const loader_args& a) {
  tune::loader_request request;
  request.images = a.images;
  if (!a.cpu_per_sample.empty())
    request.cpu_per_sample_ns = duration_option(a.cpu_per_sample, "--cpu-per-sample", true);
  if (!a.sample_bytes.empty()) request.sample_bytes = size_option(a.sample_bytes, "--sample-bytes");
  request.batch_size = a.batch_size;
  request.step_time_ns = duration_option(a.step_time, "--step-time", true);
  request.target_busy = a.target_busy;
  request.max_workers = a.max_workers;
  tune::check_loader_request(request);  // before the device is opened
  check_out_outside_images(a.common.out, a.images);
  std::vector<named_file> inputs;
  if (!a.images.empty()) inputs.push_back({"--images", a.images});
  return tune_with(a.common, inputs,
                   [&](const tune::session& s) { return tune::tune_loader(request, s); });
}

}  // namespace

runner add_tune(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "tune",
      "Answer a question with measurements: which allocator setting avoids an OOM, "
      "which DataLoader settings keep the GPU busy");
  sub->require_subcommand(1);

  auto alloc = std::make_shared<allocator_args>();
  auto* a = sub->add_subcommand(
      std::string(result::to_string(result::tune_question::allocator)),
      "Find the PYTORCH_CUDA_ALLOC_CONF that avoids a trace's out-of-memory error with the least "
      "memory reserved: replays TRACE under the setting in use, searches the options, confirms");
  a->add_option("trace", alloc->trace,
                "A PyTorch snapshot pickle (torch.cuda.memory._dump_snapshot), a "
                "pinbench.trace/1 JSON or an RMM replay log CSV")
      ->required();
  a->add_option("--capacity", alloc->capacity,
                "The device's memory (size; default: what a snapshot's OOM shows the program "
                "had, reserved then plus the device's free memory; else the CUDA device's total; "
                "else required)")
      ->type_name("SIZE");
  a->add_option("--memory-fraction", alloc->memory_fraction,
                "torch.cuda.set_per_process_memory_fraction(F) as the program calls it")
      ->check(CLI::Range(0.0, 1.0));
  a->add_option("--device", alloc->device,
                "A snapshot's device whose trace is replayed (default: the device whose trace "
                "has the OOM; without one, the device with the most events)")
      ->check(CLI::Range(0, 1023));
  a->add_option("--pytorch", alloc->pytorch,
                "The PyTorch release whose allocator rules decide (2.0 to 2.10; later releases "
                "follow 2.10's; default: the newest a snapshot's format allows, else 2.10)")
      ->type_name("X.Y");
  a->add_option("--jobs", alloc->jobs, "Candidates replayed side by side (0 = the cores)")
      ->check(CLI::Range(0u, 256u))
      ->capture_default_str();
  add_common(a, alloc->common);

  auto loader = std::make_shared<loader_args>();
  auto* l = sub->add_subcommand(
      std::string(result::to_string(result::tune_question::loader)),
      "Find the DataLoader settings (num_workers, prefetch_factor, pin_memory) that keep the "
      "device busy: short measured trials from your data, the fewest workers that hold the "
      "target, confirmed by a full-length run");
  l->add_option("--images", loader->images,
                "An ImageFolder of your JPEGs, decoded and augmented as torchvision's training "
                "transform does")
      ->type_name("DIR");
  l->add_option("--cpu-per-sample", loader->cpu_per_sample,
                "Instead of --images: the CPU time your dataset's __getitem__ takes (duration; "
                "0 = the samples are ready, the loader only collates and copies)")
      ->type_name("DURATION");
  l->add_option("--sample-bytes", loader->sample_bytes,
                "With --cpu-per-sample: the bytes of one sample as it reaches the device (size; "
                "default 128KiB)")
      ->type_name("SIZE");
  l->add_option("--batch-size", loader->batch_size, "Samples per batch")->capture_default_str();
  l->add_option("--step-time", loader->step_time,
                "The model's device time per batch (duration), measured on your GPU")
      ->type_name("DURATION")
      ->required();
  l->add_option("--target-busy", loader->target_busy,
                "The fraction of the time the device must be busy (gpu_busy)")
      ->capture_default_str();
  l->add_option("--max-workers", loader->max_workers, "The most workers tried (0 = the cores)")
      ->capture_default_str();
  add_common(l, loader->common);

  return [sub, a, l, alloc, loader] {
    if (a->parsed()) return tune_allocator(*alloc);
    if (l->parsed()) return tune_loader(*loader);
    (void)sub;
    return static_cast<int>(exit_input);
  };
}

}  // namespace pinbench::app
