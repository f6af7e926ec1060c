// `pinbench tune loader`: a baseline trial of PyTorch's default DataLoader measures what a batch
// costs the CPU; from it, the workers the step needs are estimated and walked to the fewest that
// hold the target; prefetch_factor and pinning are tried where they can matter; the winner is
// confirmed by a longer run. Every trial is a case of the loader kind, measured by the runner.
#include "tune/loader_tune.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/units.hpp"
#include "image/image_set.hpp"
#include "kinds/registry.hpp"

namespace pinbench::tune {

namespace {

using nlohmann::json;

constexpr const char* search_scenario = "tune-loader";
constexpr const char* confirm_scenario = "tune-loader-confirm";

// Two short trials whose gpu_busy differ by less than this are taken as equal: a trial is a few
// runs of a second or less, and a setting must win clearly to replace PyTorch's usual one.
constexpr double busy_tie = 0.03;
// A trial that misses the target by less than this may hold it with a deeper prefetch.
constexpr double near_miss = 0.05;
// Before the baseline measured it, a jpeg batch is guessed at this much CPU per sample
// (decode + RandomResizedCrop of an ImageNet-size photo): only to size the baseline trial.
constexpr double jpeg_guess_ns_per_sample = 3e6;

// One DataLoader setting.
struct setting {
  int workers = 0;
  int prefetch = 2;  // PyTorch's default; meaningless without workers
  bool pin = false;
  bool ring = false;  // pin_mode=ring (only when pinning)
  bool operator==(const setting&) const = default;
};

std::string py(bool b) {
  return b ? "True" : "False";
}

std::string label(const setting& s) {
  std::string l = fmt::format("num_workers={}", s.workers);
  if (s.workers > 0) l += fmt::format(", prefetch_factor={}", s.prefetch);
  l += ", pin_memory=" + py(s.pin);
  if (s.ring) l += ", pin_mode=ring";
  return l;
}

// What a trial measured, from its case's medians.
struct figures {
  bool measured = false;
  std::string problem;  // why there are no figures (the case failed, was cut)
  double busy = 0;      // gpu_busy from the first batch on (see steady_busy)
  double run_busy = 0;  // gpu_busy over the whole run, as the loader kind reports it
  double samples_per_s = 0;
  double batch_cpu_ns = 0;  // building one batch, by one worker
  double data_wait_ns = 0;  // the consumer waiting for a batch
  double pin_ns = 0;
  std::optional<double> read_ns, decode_ns, augment_ns;  // jpeg, per sample
};

// The loader kind's gpu_busy counts the device idle while the first batch is built: once per
// iter(DataLoader), i.e. once per epoch with persistent_workers=True, where an epoch is
// thousands of steps. A trial is a few dozen, so the first batch's wait is taken out:
// busy / (span - first batch), span = busy / gpu_busy.
double steady_busy(double run_busy, double busy_ns, double first_batch_ns) {
  if (run_busy <= 0 || busy_ns <= 0) return run_busy;
  const double rest = busy_ns / run_busy - first_batch_ns;
  if (rest <= 0) return run_busy;
  return std::clamp(busy_ns / rest, run_busy, 1.0);
}

figures read_figures(const result::case_result& c) {
  figures f;
  const auto run_busy = result::finite_median(c, "gpu_busy");
  const auto sps = result::finite_median(c, "samples_per_s");
  if (c.status == result::case_status::error || c.status == result::case_status::skipped) {
    f.problem = c.message.empty() ? std::string("the case failed") : c.message;
    return f;
  }
  if (!run_busy || !sps) {
    f.problem = "no sample was completed";
    return f;
  }
  f.measured = true;
  f.run_busy = *run_busy;
  f.samples_per_s = *sps;
  const auto median = [&](const char* name) { return result::finite_median(c, name).value_or(0); };
  f.batch_cpu_ns = median("batch_build_time");
  f.data_wait_ns = median("data_wait");
  f.pin_ns = median("pin_time");
  f.read_ns = result::finite_median(c, "read_time");
  f.decode_ns = result::finite_median(c, "decode_time");
  f.augment_ns = result::finite_median(c, "augment_time");
  const double steps = c.extra.value("steps_per_run", 0.0);
  f.busy = steady_busy(f.run_busy, median("compute_time") * steps, median("first_batch_time"));
  return f;
}

struct trial {
  setting s;
  std::string phase;  // "search" or "confirm"
  figures f;
  std::string scenario, case_id;
  std::uint64_t batches = 0;
  std::size_t runs = 0;  // timed runs (samples) the case took
  double elapsed_s = 0;
};

std::string fraction(double f) {
  return fmt::format("{:.2f}", f);
}
std::string percent(double f) {
  return fmt::format("{:.0f}%", f * 100);
}

class loader_tuner {
 public:
  loader_tuner(const loader_request& rq, const session& s)
      : rq_(rq),
        s_(s),
        cores_(std::max(1u, std::thread::hardware_concurrency())),
        max_workers_(rq.max_workers == 0 ? cores_ : rq.max_workers),
        step_ns_(static_cast<double>(rq.step_time_ns)),
        target_(rq.target_busy) {
    if (!rq.images.empty())
      images_ = std::filesystem::absolute(rq.images).lexically_normal().string();
    const double b = static_cast<double>(rq.batch_size);
    batch_cpu_ns_ = rq.images.empty() ? b * static_cast<double>(rq.cpu_per_sample_ns.value_or(0))
                                      : b * jpeg_guess_ns_per_sample;
    // The budget sizes the runs: a 2 min budget gives 0.5 s trials and 2 s confirming runs.
    const double budget = static_cast<double>(s.budget_ns());
    trial_run_ns_ = std::clamp(budget / 240, 0.1e9, 0.5e9);
    confirm_run_ns_ = std::clamp(budget / 60, 0.3e9, 2e9);
  }

  result::run_result run() {
    search();
    confirm();
    return finish();
  }

 private:
  // ---- measuring --------------------------------------------------------------------------

  // The time one batch takes in steady state, as the model expects it.
  [[nodiscard]] double interval_ns(const setting& st) const {
    const double parallel =
        st.workers == 0 ? 1.0 : std::min<double>(st.workers, static_cast<double>(cores_));
    return std::max(step_ns_, batch_cpu_ns_ / parallel);
  }

  [[nodiscard]] std::uint64_t batches_for(const setting& st, double run_ns) const {
    // Enough batches for every worker to deliver a few (the pipeline past its start).
    const double floor = st.workers == 0 ? 4.0 : 3.0 * st.workers + 4.0;
    const double n = std::ceil(run_ns / interval_ns(st));
    return static_cast<std::uint64_t>(std::clamp(n, floor, 5000.0));
  }

  // Predicted wall time of a case: its runs, each the first batch plus the steps, and setup;
  // scaled by what the trials so far took against their predictions.
  [[nodiscard]] double predicted_ns(const setting& st, std::uint64_t batches, double runs) const {
    const double one_run = batch_cpu_ns_ + static_cast<double>(batches) * interval_ns(st);
    return cost_ratio_ * (runs * one_run + 0.15e9);
  }

  [[nodiscard]] double confirm_reserve_ns(const setting& st) const {
    return predicted_ns(st, batches_for(st, confirm_run_ns_), confirm_runs);
  }

  [[nodiscard]] json dataset_params(std::uint64_t samples) const {
    if (!rq_.images.empty())
      return {{"source", "jpeg"},        {"dir", images_}, {"samples", samples},
              {"cpu_per_sample", "0us"}, {"crop", 224},    {"output", "float32"}};
    return {{"source", "memory"},
            {"samples", samples},
            {"cpu_per_sample", fmt::format("{}ns", rq_.cpu_per_sample_ns.value_or(0))},
            {"sample_bytes", rq_.sample_bytes.value_or(128_KiB)}};
  }

  // The case that measures `st`: one timed run = `batches` steps (over as many passes of a
  // small image folder as that takes).
  [[nodiscard]] scenario::scenario case_for(const setting& st, std::uint64_t batches,
                                            bool confirming, double timeout_ns) {
    const std::uint64_t samples = batches * rq_.batch_size;
    // A folder smaller than a run is read over again, an epoch (and the workers' start) per pass.
    std::uint64_t epochs = 1;
    if (!images_.empty()) {
      const std::uint64_t files =
          image::scan_image_folder(images_, samples, {}, "--images").files.size();
      image_files_ = std::max(image_files_, files);
      epochs = (samples + files - 1) / files;
    }
    json matrix = {{"num_workers", {st.workers}}, {"pin_memory", {st.pin}}};
    if (st.workers > 0) matrix["prefetch_factor"] = {st.prefetch};
    if (st.pin) matrix["pin_mode"] = {st.ring ? "ring" : "per_batch"};
    json doc = {
        {"name", confirming ? confirm_scenario : search_scenario},
        {"description", confirming
                            ? "pinbench tune loader: the chosen DataLoader setting, a longer run"
                            : "pinbench tune loader: short trials of DataLoader settings"},
        {"kind", "loader"},
        {"params",
         {{"dataset", dataset_params(samples)},
          {"batch_size", rq_.batch_size},
          {"compute_per_batch", fmt::format("{}ns", rq_.step_time_ns)},
          {"batches", batches},
          {"epochs", epochs},
          {"non_blocking", true}}},
        {"matrix", matrix},
        {"sampling",
         {{"warmup", confirming ? 0 : 1},
          {"min_samples", confirming ? 3 : 2},
          {"max_samples", 3},
          {"max_noise", 0.03},
          {"min_time", "0s"},
          {"timeout", fmt::format("{}ms", std::max<std::int64_t>(
                                              1, static_cast<std::int64_t>(timeout_ns / 1e6)))}}}};
    return session::scenario_from(std::move(doc), "tune loader");
  }

  // The result's scenarios, one per phase: each new case joins the scenario of its name.
  void absorb(result::run_result more) {
    if (result_.created.empty()) {
      append(result_, std::move(more));
      return;
    }
    result_.interrupted = result_.interrupted || more.interrupted;
    if (result_.interrupted_by.empty()) result_.interrupted_by = more.interrupted_by;
    for (auto& sc : more.scenarios) {
      const auto it = std::find_if(result_.scenarios.begin(), result_.scenarios.end(),
                                   [&](const auto& have) { return have.name == sc.name; });
      if (it == result_.scenarios.end()) {
        result_.scenarios.push_back(std::move(sc));
        continue;
      }
      for (auto& c : sc.cases) it->cases.push_back(std::move(c));
    }
  }

  // Measures `st` as a case of its own; the trial's index, or nullopt after Ctrl-C.
  std::optional<std::size_t> measure(const setting& st, bool confirming, std::uint64_t batches) {
    if (session::interrupted()) {
      stopped_by_ = "interrupted";
      return std::nullopt;
    }
    const double runs = confirming ? confirm_runs : trial_runs;
    const double expected = predicted_ns(st, batches, runs);
    // Sampling stops at the timeout (after at least one sample): twice what is expected,
    // never past the budget.
    const double keep = confirming ? 0.0 : confirm_reserve_ns(st);
    const double left = static_cast<double>(s_.left_ns());
    const double timeout = std::max(1e6, std::min(2 * expected, left - keep));
    s_.progress(fmt::format("{} {}: {} batches per run, about {:.1f} s",
                            confirming ? "confirm" : "trial", label(st), batches, expected / 1e9));
    result::run_result r = s_.measure({case_for(st, batches, confirming, timeout)});
    trial t;
    t.s = st;
    t.phase = confirming ? "confirm" : "search";
    t.batches = batches;
    if (!r.scenarios.empty() && !r.scenarios.front().cases.empty()) {
      const auto& sc = r.scenarios.front();
      const auto& c = sc.cases.front();
      t.scenario = sc.name;
      t.case_id = c.id;
      t.f = read_figures(c);
      t.elapsed_s = c.elapsed_s;
      if (const auto* m = c.find("samples_per_s")) t.runs = m->samples.size();
    } else {
      t.f.problem = "not measured";
    }
    const bool cut = r.interrupted;
    absorb(std::move(r));
    if (t.f.measured) {
      // Later predictions learn from this one (bounded: one odd trial must not stall the search).
      const double predicted =
          predicted_ns(st, batches, static_cast<double>(t.runs) + (confirming ? 0.0 : 1.0)) /
          cost_ratio_;
      cost_ratio_ = std::clamp(t.elapsed_s * 1e9 / predicted, 0.5, 4.0);
      s_.progress(fmt::format("  gpu_busy {}, {:.0f} samples/s, a batch {} of CPU{}",
                              fraction(t.f.busy), t.f.samples_per_s,
                              format_duration_ns(t.f.batch_cpu_ns),
                              t.f.busy >= target_ ? ": holds the target" : ""));
    } else {
      s_.progress("  no figures: " + t.f.problem);
    }
    trials_.push_back(std::move(t));
    if (cut || session::interrupted()) stopped_by_ = "interrupted";
    return trials_.size() - 1;
  }

  // Whether a search trial of `st` still fits, leaving the confirming run its time.
  [[nodiscard]] bool fits(const setting& st) {
    if (!stopped_by_.empty()) return false;
    const double need =
        predicted_ns(st, batches_for(st, trial_run_ns_), trial_runs) + confirm_reserve_ns(st);
    if (static_cast<double>(s_.left_ns()) >= need) return true;
    stopped_by_ = "budget";
    return false;
  }

  std::optional<std::size_t> try_search(const setting& st) {
    for (std::size_t i = 0; i < trials_.size(); ++i)
      if (trials_[i].phase == "search" && trials_[i].s == st) return i;
    if (!fits(st)) return std::nullopt;
    return measure(st, false, batches_for(st, trial_run_ns_));
  }

  [[nodiscard]] bool holds(std::size_t i) const {
    return trials_[i].f.measured && trials_[i].f.busy >= target_;
  }
  [[nodiscard]] double busy(std::size_t i) const {
    return trials_[i].f.measured ? trials_[i].f.busy : -1;
  }

  // ---- the search -------------------------------------------------------------------------

  void search() {
    // PyTorch's default DataLoader: what a batch costs the CPU when nothing runs beside it.
    const setting defaults{};
    const auto base = measure(defaults, false, batches_for(defaults, 0.6 * trial_run_ns_));
    if (!base || !trials_[*base].f.measured) return;
    baseline_ = *base;
    if (trials_[*base].f.batch_cpu_ns > 0) batch_cpu_ns_ = trials_[*base].f.batch_cpu_ns;
    if (holds(*base)) {
      chosen_ = *base;
      refine_pinning();
      return;
    }

    // Workers: busy grows with them while the CPU keeps up, so the model's first guess is the
    // batch's CPU time over the step time the target allows; then a bisection between the most
    // workers seen failing and the fewest seen holding.
    const int max_w = static_cast<int>(max_workers_);
    int lo = 0;                     // the most workers seen failing (0: the baseline)
    std::optional<std::size_t> hi;  // the trial with the fewest workers seen holding
    std::optional<std::size_t> lo_trial;
    const auto pinned = [](int w) { return setting{w, 2, true, false}; };
    int next =
        std::clamp(static_cast<int>(std::ceil(target_ * batch_cpu_ns_ / step_ns_)), 1, max_w);
    while (next > lo && next <= max_w && (!hi || next < trials_[*hi].s.workers)) {
      const auto t = try_search(pinned(next));
      if (!t) break;
      if (!trials_[*t].f.measured) {
        ceiling_problem_ = trials_[*t].f.problem;  // more workers cannot run either
        break;
      }
      if (holds(*t)) {
        hi = *t;
      } else {
        if (lo_trial && lo >= 1 && next > lo && saturated(*lo_trial, *t)) {
          saturated_at_ = lo;
          lo = next;
          lo_trial = *t;
          break;
        }
        lo = next;
        lo_trial = *t;
      }
      if (hi) {
        const int h = trials_[*hi].s.workers;
        if (h - lo <= 1) break;
        next = lo + (h - lo) / 2;
      } else {
        if (lo >= max_w) break;
        // Busy is about proportional to the workers while the CPU is what limits it.
        const double b = std::max(busy(*lo_trial), 0.05);
        next = std::clamp(static_cast<int>(std::ceil(lo * target_ / b)), lo + 1, max_w);
      }
    }

    if (hi) {
      chosen_ = *hi;
      // One worker fewer missed by a little: a deeper prefetch may absorb what it missed.
      if (lo_trial && lo >= 1 && busy(*lo_trial) >= target_ - near_miss)
        if (const auto t = try_search({lo, 4, true, false}); t && holds(*t)) chosen_ = *t;
    } else {
      chosen_ = best_search();
      if (trials_[*chosen_].s.workers > 0) {
        setting deeper = trials_[*chosen_].s;
        deeper.prefetch = 4;
        if (const auto t = try_search(deeper); t && busy(*t) > busy(*chosen_) + busy_tie)
          chosen_ = *t;
      }
    }
    refine_pinning();
  }

  // More workers that bought less than a fifth of the gain a CPU-bound loader would get.
  [[nodiscard]] bool saturated(std::size_t fewer, std::size_t more) const {
    const double w0 = trials_[fewer].s.workers, w1 = trials_[more].s.workers;
    const double ideal = busy(fewer) * (w1 / w0 - 1);
    return busy(more) - busy(fewer) < 0.2 * ideal;
  }

  [[nodiscard]] std::size_t best_search() const {
    std::size_t best = baseline_.value_or(0);
    for (std::size_t i = 0; i < trials_.size(); ++i) {
      if (trials_[i].phase != "search" || !trials_[i].f.measured) continue;
      if (busy(i) > busy(best) + busy_tie || (std::fabs(busy(i) - busy(best)) <= busy_tie &&
                                              trials_[i].s.workers < trials_[best].s.workers))
        best = i;
    }
    return best;
  }

  // Pinning at the chosen workers: pin_memory=True is kept unless it is worse (the other one
  // holds the target where it does not, or is clearly busier); the ring is tried when pinning
  // takes a noticeable part of the step.
  void refine_pinning() {
    if (!chosen_) return;
    setting other = trials_[*chosen_].s;
    other.pin = !other.pin;
    other.ring = false;
    if (const auto t = try_search(other)) {
      const std::size_t pinned = trials_[*t].s.pin ? *t : *chosen_;
      const std::size_t unpinned = trials_[*t].s.pin ? *chosen_ : *t;
      // Twice the tie: pinned memory is what makes non_blocking copies asynchronous on a GPU,
      // and a short trial's few points are within a busy machine's noise.
      const bool unpinned_better = (holds(unpinned) && !holds(pinned)) ||
                                   busy(unpinned) > busy(pinned) + 2 * busy_tie;
      chosen_ = unpinned_better ? unpinned : pinned;
    }
    const trial& c = trials_[*chosen_];
    if (c.s.pin && c.f.pin_ns > 0.1 * step_ns_) {
      setting ring = c.s;
      ring.ring = true;
      if (const auto t = try_search(ring);
          t && (busy(*t) > busy(*chosen_) + busy_tie || (holds(*t) && !holds(*chosen_))))
        chosen_ = *t;
    }
  }

  // ---- confirming -------------------------------------------------------------------------

  void confirm() {
    if (!chosen_ || stopped_by_ == "interrupted") return;
    const setting st = trials_[*chosen_].s;
    std::uint64_t batches = batches_for(st, confirm_run_ns_);
    // Shorter when the budget is short, never shorter than the trial.
    const double left = static_cast<double>(s_.left_ns());
    while (batches > trials_[*chosen_].batches && predicted_ns(st, batches, confirm_runs) > left)
      batches = std::max(trials_[*chosen_].batches, batches * 3 / 4);
    if (predicted_ns(st, batches, confirm_runs) > left) {
      if (stopped_by_.empty()) stopped_by_ = "budget";
      return;
    }
    if (const auto t = measure(st, true, batches); t && trials_[*t].f.measured) confirmed_ = *t;
  }

  // ---- the answer -------------------------------------------------------------------------

  [[nodiscard]] std::string answer(const setting& st) const {
    std::string args = fmt::format("ds, batch_size={}", rq_.batch_size);
    if (st.workers > 0)
      args += fmt::format(", num_workers={}, prefetch_factor={}", st.workers, st.prefetch);
    args += ", pin_memory=" + py(st.pin);
    if (st.workers > 0) args += ", persistent_workers=True";
    std::string code = "loader = DataLoader(" + args + ")";
    if (st.pin) {
      code += "\nbatch = batch.to(device, non_blocking=True)";
      if (st.ring)
        code +=
            "\n# pin_mode=ring measured better: copy each batch into a few pinned buffers "
            "reused in turn (torch.empty(..., pin_memory=True)) rather than pin_memory's "
            "per-batch blocks";
    }
    return code;
  }

  [[nodiscard]] std::string cpu_per_batch_text(const trial& t) const {
    std::string text = format_duration_ns(t.f.batch_cpu_ns);
    if (t.f.read_ns && t.f.decode_ns && t.f.augment_ns)
      return text + fmt::format(
                        " of read+decode+augment (read {} + decode {} + augment {} per sample x "
                        "{})",
                        format_duration_ns(*t.f.read_ns), format_duration_ns(*t.f.decode_ns),
                        format_duration_ns(*t.f.augment_ns), rq_.batch_size);
    return text + " of CPU";
  }

  // Why no setting held the target, with the measured figures: what the cores could give at
  // the baseline's cost per batch, and what the workers got when they ran side by side.
  [[nodiscard]] std::string limit_text(const trial& best) const {
    if (!ceiling_problem_.empty()) return "more workers could not run: " + ceiling_problem_;
    const trial& base = trials_[baseline_.value_or(0)];
    const double needed = target_ / (step_ns_ / 1e9);  // batches/s at the target
    const unsigned usable = std::min(max_workers_, cores_);
    const double supply = usable / (base.f.batch_cpu_ns / 1e9);
    std::string what = fmt::format(
        "what limits it is the CPU: a batch takes {} per worker, so {} {} give at most {:.1f} "
        "batches/s against the {:.1f} the step ({}) needs at {} busy",
        cpu_per_batch_text(base), usable,
        max_workers_ < cores_ ? "workers (--max-workers)" : "cores", supply, needed,
        format_duration_ns(step_ns_), fraction(target_));
    // The trial with the most workers (the slowest batches among those): what the workers got
    // when they ran side by side.
    const trial* most = nullptr;
    for (const auto& t : trials_)
      if (t.f.measured && t.s.workers > 0 &&
          (most == nullptr || t.s.workers > most->s.workers ||
           (t.s.workers == most->s.workers && t.f.batch_cpu_ns > most->f.batch_cpu_ns)))
        most = &t;
    constexpr double contended = 1.3;  // a batch this much slower with workers side by side
    if (most != nullptr && most->f.batch_cpu_ns > contended * base.f.batch_cpu_ns)
      what += fmt::format(
          "; with {} workers a batch took {} each ({:.1f} batches/s): the cores were not free "
          "(the main thread's copies and pinning, other processes)",
          most->s.workers, format_duration_ns(most->f.batch_cpu_ns),
          most->s.workers / (most->f.batch_cpu_ns / 1e9));
    else if (saturated_at_ > 0)
      what += fmt::format("; more workers than {} did not help: the cores are busy", saturated_at_);
    if (max_workers_ < cores_ && best.s.workers >= static_cast<int>(max_workers_))
      what += fmt::format("; up to {} workers (the cores) may do better", cores_);
    return what;
  }

  [[nodiscard]] std::vector<std::pair<std::string, std::string>> cells(const trial& t) const {
    if (!t.f.measured) return {{"gpu_busy", "-"}};
    std::vector<std::pair<std::string, std::string>> c = {
        {"gpu_busy", fraction(t.f.busy)},
        {"samples/s", fmt::format("{:.0f}", t.f.samples_per_s)},
        {"data wait", format_duration_ns(t.f.data_wait_ns)},
        {"batch CPU", format_duration_ns(t.f.batch_cpu_ns)}};
    if (t.f.decode_ns) c.emplace_back("decode", format_duration_ns(*t.f.decode_ns));
    if (t.f.augment_ns) c.emplace_back("augment", format_duration_ns(*t.f.augment_ns));
    c.emplace_back("pin", t.s.pin ? format_duration_ns(t.f.pin_ns) : "-");
    c.emplace_back("batches x runs", fmt::format("{} x {}", t.batches, t.runs));
    return c;
  }

  [[nodiscard]] std::string note(const trial& t) const {
    if (!t.f.measured) return t.f.problem;
    std::string n = fmt::format("device idle {} waiting for data", percent(1 - t.f.busy));
    if (t.phase == "confirm")
      n += fmt::format("; gpu_busy over the whole runs, the first batch included: {}",
                       fraction(t.f.run_busy));
    return n;
  }

  [[nodiscard]] std::string verdict() const {
    const std::string host =
        s_.emulated()
            ? " (host backend: an emulated device; the CPU side (workers, decode) is real, the "
              "copies and pinning are emulated.)"
            : "";
    if (!chosen_) {
      if (!trials_.empty() && !trials_.front().f.measured)
        return "the baseline trial failed: " + trials_.front().f.problem + host;
      return "nothing was measured before the search was stopped" + host;
    }
    const trial& c = trials_[*chosen_];
    const trial* lower = nullptr;  // one worker fewer, as measured
    for (const auto& t : trials_)
      if (t.phase == "search" && t.f.measured && t.s.workers == c.s.workers - 1 && !t.s.ring &&
          (!lower || t.f.busy > lower->f.busy))
        lower = &t;
    const std::string why_not_fewer =
        lower == nullptr
            ? ""
            : fmt::format("; {} cannot (gpu_busy {}): a batch takes {} against the {} step",
                          lower->s.workers == 0   ? std::string("num_workers=0")
                          : lower->s.workers == 1 ? std::string("1 worker")
                                                  : fmt::format("{} workers", lower->s.workers),
                          fraction(lower->f.busy), cpu_per_batch_text(*lower),
                          format_duration_ns(step_ns_));
    if (confirmed_) {
      const trial& k = trials_[*confirmed_];
      if (k.f.busy >= target_)
        return fmt::format(
            "{} keeps the device {} busy (target {}) in the confirming run ({} "
            "batches x {} runs, {:.0f} samples/s){}.{}",
            label(c.s), fraction(k.f.busy), fraction(target_), k.batches, k.runs, k.f.samples_per_s,
            why_not_fewer, host);
      if (holds(*chosen_))
        return fmt::format(
            "{} held the target in its short trial ({}) but {} in the confirming "
            "run, under the target {}: it is at the edge on this machine; {}.{}",
            label(c.s), fraction(c.f.busy), fraction(k.f.busy), fraction(target_),
            c.s.workers < static_cast<int>(max_workers_) ? std::string("one worker more gives room")
                                                         : limit_text(c),
            host);
      return fmt::format(
          "no setting reaches {} busy on this machine; the best, {}, keeps the "
          "device {} busy in the confirming run; {}.{}",
          fraction(target_), label(c.s), fraction(k.f.busy), limit_text(c), host);
    }
    return fmt::format("{} {} in a short trial (gpu_busy {}), not confirmed by a longer run{}.{}",
                       label(c.s), holds(*chosen_) ? "held the target" : "was the best",
                       fraction(c.f.busy), holds(*chosen_) ? "" : "; " + limit_text(c), host);
  }

  [[nodiscard]] json inputs() const {
    json in = json::object();
    if (!rq_.images.empty()) {
      in["images"] = images_;
      in["image_files_read"] = image_files_;  // the most any trial read (its batches x batch size)
    } else {
      in["cpu_per_sample"] =
          format_duration_ns(static_cast<double>(rq_.cpu_per_sample_ns.value_or(0)));
      in["sample_bytes"] = format_bytes(rq_.sample_bytes.value_or(128_KiB));
    }
    in["batch_size"] = rq_.batch_size;
    in["step_time"] = format_duration_ns(step_ns_);
    in["target_busy"] = target_;
    in["max_workers"] = max_workers_;
    in["cores"] = cores_;
    return in;
  }

  result::run_result finish() {
    // Each phase's scenario gets the loader kind's own verdict over its cases.
    if (const auto* kind = kinds::find("loader"); kind != nullptr && kind->make_engine) {
      const auto engine = kind->make_engine();
      for (auto& sc : result_.scenarios) sc.verdict = engine->verdict(sc);
    }
    result::tune_block t;
    t.question = "loader";
    t.inputs = inputs();
    // Shown in order of the setting (workers, then prefetch, pinning), the confirming run last.
    std::vector<std::size_t> order(trials_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const auto key = [&](std::size_t i) {
        const auto& s = trials_[i].s;
        return std::tuple(trials_[i].phase == "confirm", s.workers, s.prefetch, !s.pin, s.ring);
      };
      return key(a) < key(b);
    });
    for (const std::size_t i : order) {
      const trial& tr = trials_[i];
      result::tune_trial out;
      out.label = label(tr.s);
      out.scenario = tr.scenario;
      out.case_id = tr.case_id;
      out.phase = tr.phase;
      if (tr.f.measured) out.value = tr.f.busy;
      out.meets_goal = holds(i);
      out.note = note(tr);
      out.cells = cells(tr);
      const std::size_t shown = t.trials.size();
      if (confirmed_ == i || (!confirmed_ && chosen_ == i)) t.chosen = shown;
      if (baseline_ == i) t.baseline = shown;
      t.trials.push_back(std::move(out));
    }
    t.goal_met = confirmed_ && holds(*confirmed_);
    if (chosen_) t.answer = answer(trials_[*chosen_].s);
    t.verdict = verdict();
    t.chart_metric = "gpu_busy";
    t.chart_unit = "fraction";
    t.chart_target = target_;
    t.elapsed_s = s_.elapsed_s();
    t.stopped_by = stopped_by_;
    result_.tune = std::move(t);
    return std::move(result_);
  }

  static constexpr double trial_runs = 3.5;  // a warm-up and two or three samples
  static constexpr double confirm_runs = 3;

  const loader_request& rq_;
  const session& s_;
  unsigned cores_, max_workers_;
  double step_ns_, target_;
  double batch_cpu_ns_ = 0;  // a batch's CPU time: a guess, then the baseline's measure
  double trial_run_ns_ = 0, confirm_run_ns_ = 0;
  double cost_ratio_ = 1;
  std::string images_;             // --images, absolute: the cases' dataset.dir
  std::uint64_t image_files_ = 0;  // the most files a case read
  result::run_result result_;
  std::vector<trial> trials_;
  std::optional<std::size_t> baseline_, chosen_, confirmed_;
  int saturated_at_ = 0;
  std::string ceiling_problem_;
  std::string stopped_by_;
};

}  // namespace

void check_loader_request(const loader_request& rq) {
  const bool images = !rq.images.empty(), synthetic = rq.cpu_per_sample_ns.has_value();
  if (images == synthetic)
    throw input_error({}, "--images",
                      "expected exactly one of --images DIR (your JPEGs) or --cpu-per-sample "
                      "DURATION (your dataset's CPU time per sample)");
  if (rq.sample_bytes && !synthetic)
    throw input_error({}, "--sample-bytes",
                      "goes with --cpu-per-sample only (with --images a sample is the 224x224 "
                      "crop as float32)");
  if (rq.cpu_per_sample_ns && *rq.cpu_per_sample_ns > 10'000'000'000)
    throw input_error({}, "--cpu-per-sample", "expected at most 10s per sample");
  if (rq.sample_bytes && *rq.sample_bytes > (std::uint64_t{1} << 30))
    throw input_error({}, "--sample-bytes", "expected at most 1GiB per sample");
  if (rq.step_time_ns <= 0 || rq.step_time_ns > 100'000'000'000)
    throw input_error({}, "--step-time",
                      "expected the model's device time per batch, above 0 and at most 100s");
  if (!(rq.target_busy > 0 && rq.target_busy <= 1))
    throw input_error(
        {}, "--target-busy",
        fmt::format("expected a fraction above 0 and at most 1, got {}", rq.target_busy));
  if (rq.batch_size == 0) throw input_error({}, "--batch-size", "expected at least 1");
  if (images) (void)image::scan_image_folder(rq.images, 1, {}, "--images");
}

result::run_result tune_loader(const loader_request& request, const session& s) {
  check_loader_request(request);
  return loader_tuner(request, s).run();
}

}  // namespace pinbench::tune
