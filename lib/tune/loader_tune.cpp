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
#include "kinds/loader/loader_engine.hpp"
#include "kinds/loader/loader_kind.hpp"
#include "kinds/loader/loader_params.hpp"
#include "kinds/params.hpp"

namespace pinbench::tune {

double steady_gpu_busy(double run_busy, double steps, double compute_ns, double first_batch_ns,
                       double ready_at_first) {
  if (run_busy <= 0 || compute_ns <= 0 || steps <= 1) return run_busy;
  const double ready = std::clamp(ready_at_first, 1.0, steps - 1);
  const double span = steps * compute_ns / run_busy;
  const double rest = span - first_batch_ns - ready * compute_ns;
  if (rest <= 0) return run_busy;
  return std::clamp((steps - ready) * compute_ns / rest, run_busy, 1.0);
}

namespace {

using nlohmann::json;
namespace kind = kinds::loader;

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

figures read_figures(const result::case_result& c, int workers) {
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
  f.busy = steady_gpu_busy(f.run_busy, steps, median("compute_time"), median("first_batch_time"),
                           std::max(1.0, static_cast<double>(workers)));
  return f;
}

struct trial {
  setting s;
  result::trial_phase phase = result::trial_phase::search;
  figures f;
  std::string scenario, case_id;
  std::uint64_t batches = 0;
  std::size_t runs = 0;  // timed runs (samples) the case took
  double elapsed_s = 0;
};

std::string percent(double f) {
  return fmt::format("{:.0f}%", f * 100);
}

class loader_tuner final : public search_strategy {
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

 private:
  // ---- measuring --------------------------------------------------------------------------

  // The time one batch takes in steady state, as the model expects it.
  [[nodiscard]] double interval_ns(const setting& st) const {
    const double parallel =
        st.workers == 0 ? 1.0 : std::min<double>(st.workers, static_cast<double>(cores_));
    return std::max(step_ns_, batch_cpu_ns_ / parallel);
  }

  [[nodiscard]] std::uint64_t batches_for(const setting& st, double run_ns) const {
    // Enough batches for every worker to deliver a few, and for what the workers can hold
    // (workers x prefetch_factor) to be a small part of the run: what they buffered while the
    // first batch was awaited is then not taken for throughput.
    const double floor =
        st.workers == 0 ? 4.0
                        : std::max(3.0 * st.workers + 4.0, 4.0 * st.workers * st.prefetch + 8.0);
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

  // The dataset of a trial: the user's images, or generated samples of the CPU cost given.
  void set_dataset(json& params, std::uint64_t samples) const {
    kinds::set_param(params, kind::param::samples, samples);
    if (!rq_.images.empty()) {
      kinds::set_param(params, kind::source_choice, kind::source_kind::jpeg);
      kinds::set_param(params, kind::param::dir, images_);
      kinds::set_param(params, kind::param::cpu_per_sample, "0us");
      kinds::set_param(params, kind::param::crop, 224);
      kinds::set_param(params, kind::output_choice, image::tensor_format::float32_chw);
      return;
    }
    kinds::set_param(params, kind::source_choice, kind::source_kind::memory);
    kinds::set_param(params, kind::param::cpu_per_sample,
                     fmt::format("{}ns", rq_.cpu_per_sample_ns.value_or(0)));
    kinds::set_param(params, kind::param::sample_bytes, rq_.sample_bytes.value_or(128_KiB));
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
    // Every param by the kind's own names and choice tables: a renamed one fails to compile
    // here. The setting tried is the matrix (one value each), so that it names the case.
    json matrix = json::object();  // keyed by the params' whole (dotted) names
    matrix[kind::param::num_workers] = {st.workers};
    matrix[kind::param::pin_memory] = {st.pin};
    if (st.workers > 0) matrix[kind::param::prefetch_factor] = {st.prefetch};
    if (st.pin)
      matrix[std::string(kind::pin_mode_choice.param())] = {std::string(kind::pin_mode_choice.name(
          st.ring ? pinbench::loader::pin_mode::ring : pinbench::loader::pin_mode::per_batch))};
    json params = json::object();
    set_dataset(params, samples);
    kinds::set_param(params, kind::param::batch_size, rq_.batch_size);
    kinds::set_param(params, kind::param::compute_per_batch, fmt::format("{}ns", rq_.step_time_ns));
    kinds::set_param(params, kind::param::batches, batches);
    kinds::set_param(params, kind::param::epochs, epochs);
    // What the answer recommends: process workers kept from epoch to epoch.
    kinds::set_param(params, kind::worker_method_choice, pinbench::loader::worker_method::process);
    kinds::set_param(params, kind::param::persistent_workers, true);
    kinds::set_param(params, kind::param::non_blocking, true);
    json doc = {
        {"name", confirming ? confirm_scenario : search_scenario},
        {"description", confirming
                            ? "pinbench tune loader: the chosen DataLoader setting, a longer run"
                            : "pinbench tune loader: short trials of DataLoader settings"},
        {"kind", kind::kind_name},
        {"params", std::move(params)},
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
      stop(result::search_stop::interrupted);
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
    t.phase = confirming ? result::trial_phase::confirm : result::trial_phase::search;
    t.batches = batches;
    if (!r.scenarios.empty() && !r.scenarios.front().cases.empty()) {
      const auto& sc = r.scenarios.front();
      const auto& c = sc.cases.front();
      t.scenario = sc.name;
      t.case_id = c.id;
      t.f = read_figures(c, st.workers);
      t.elapsed_s = c.elapsed_s;
      if (const auto* m = c.find("samples_per_s")) t.runs = m->samples.size();
    } else {
      t.f.problem = "not measured";
    }
    const bool cut = r.interrupted;
    if (cut && !t.f.measured)
      t.f.problem = "interrupted (Ctrl-C or a signal) before a run completed";
    absorb(std::move(r));
    if (t.f.measured) {
      // Later predictions learn from this one (bounded: one odd trial must not stall the search).
      const double predicted =
          predicted_ns(st, batches, static_cast<double>(t.runs) + (confirming ? 0.0 : 1.0)) /
          cost_ratio_;
      cost_ratio_ = std::clamp(t.elapsed_s * 1e9 / predicted, 0.5, 4.0);
      s_.progress(fmt::format("  gpu_busy {}, {:.0f} samples/s, a batch {} of CPU{}",
                              busy_text(t.f.busy), t.f.samples_per_s,
                              format_duration_ns(t.f.batch_cpu_ns),
                              t.f.busy >= target_ ? ": holds the target" : ""));
    } else {
      s_.progress("  no figures: " + t.f.problem);
    }
    trials_.push_back(std::move(t));
    if (cut || session::interrupted()) stop(result::search_stop::interrupted);
    return trials_.size() - 1;
  }

  // Whether a search trial of `st` still fits, leaving the confirming run its time.
  [[nodiscard]] bool fits(const setting& st) {
    if (stopped()) return false;
    const double need =
        predicted_ns(st, batches_for(st, trial_run_ns_), trial_runs) + confirm_reserve_ns(st);
    if (static_cast<double>(s_.left_ns()) >= need) return true;
    stop(result::search_stop::budget);
    return false;
  }

  std::optional<std::size_t> try_search(const setting& st) {
    for (std::size_t i = 0; i < trials_.size(); ++i)
      if (trials_[i].phase == result::trial_phase::search && trials_[i].s == st) return i;
    if (!fits(st)) return std::nullopt;
    return measure(st, false, batches_for(st, trial_run_ns_));
  }

  [[nodiscard]] bool holds(std::size_t i) const {
    return trials_[i].f.measured && trials_[i].f.busy >= target_;
  }
  [[nodiscard]] double busy(std::size_t i) const {
    return trials_[i].f.measured ? trials_[i].f.busy : -1;
  }

  // ---- the search (the strategy's three steps: search, confirm, finish; run_search runs them)

  void search() override {
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
        // More workers cannot run either, unless a signal cut the trial.
        if (stopped_by() != result::search_stop::interrupted)
          ceiling_problem_ = trials_[*t].f.problem;
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
      if (trials_[i].phase != result::trial_phase::search || !trials_[i].f.measured) continue;
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
      const bool unpinned_better =
          (holds(unpinned) && !holds(pinned)) || busy(unpinned) > busy(pinned) + 2 * busy_tie;
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

  // The search's pick is confirmed by a longer run; while it misses the target and the budget
  // lasts, the next candidate is confirmed too (one worker more than the best confirmed so
  // far), and the answer is the best confirmed. More workers than cores are confirmed only after
  // the best setting at the cores, and chosen only when they clearly helped.
  void confirm() override {
    if (!chosen_ || stopped_by() == result::search_stop::interrupted) return;
    std::vector<setting> queue;
    const setting pick = trials_[*chosen_].s;
    if (pick.workers > static_cast<int>(cores_)) {
      std::optional<std::size_t> at_cores;
      for (std::size_t i = 0; i < trials_.size(); ++i)
        if (trials_[i].phase == result::trial_phase::search && trials_[i].f.measured &&
            trials_[i].s.workers > 0 && trials_[i].s.workers <= static_cast<int>(cores_) &&
            (!at_cores || busy(i) > busy(*at_cores)))
          at_cores = i;
      setting fewer = pick;
      fewer.workers = static_cast<int>(cores_);
      queue.push_back(at_cores ? trials_[*at_cores].s : fewer);
    }
    queue.push_back(pick);
    constexpr int max_confirms = 4;
    for (int n = 0; n < max_confirms && !queue.empty(); ++n) {
      const setting st = queue.front();
      queue.erase(queue.begin());
      const auto t = confirm_one(st);
      if (!t) break;
      if (trials_[*t].f.measured) pick_confirmed();
      if (confirmed_ && holds(*confirmed_) &&
          (queue.empty() || trials_[*confirmed_].s.workers <= static_cast<int>(cores_)))
        break;
      if (queue.empty() && confirmed_) {
        setting more = trials_[*confirmed_].s;
        ++more.workers;
        if (more.workers <= static_cast<int>(max_workers_) && !confirmed_setting(more))
          queue.push_back(more);
      }
    }
  }

  [[nodiscard]] bool confirmed_setting(const setting& st) const {
    return std::any_of(trials_.begin(), trials_.end(), [&](const trial& t) {
      return t.phase == result::trial_phase::confirm && t.s == st;
    });
  }

  // One confirming run of `st`, its length what the budget allows (never shorter than the
  // search's trials); nullopt when the budget or a signal stopped it.
  std::optional<std::size_t> confirm_one(const setting& st) {
    if (stopped_by() == result::search_stop::interrupted) return std::nullopt;
    const std::uint64_t shortest = batches_for(st, trial_run_ns_);
    std::uint64_t batches = std::max(shortest, batches_for(st, confirm_run_ns_));
    const double left = static_cast<double>(s_.left_ns());
    while (batches > shortest && predicted_ns(st, batches, confirm_runs) > left)
      batches = std::max(shortest, batches * 3 / 4);
    if (predicted_ns(st, batches, confirm_runs) > left) {
      stop(result::search_stop::budget);
      return std::nullopt;
    }
    return measure(st, true, batches);
  }

  // The best confirming run: one that holds the target over one that does not, then the
  // busiest (within the tie, the fewest workers); more workers than cores only where they hold
  // the target and the best at the cores does not. Where nothing holds it, the CPU is the limit:
  // workers past the cores then only take CPU from the training loop's own thread.
  void pick_confirmed() {
    const auto better = [&](std::size_t i, std::size_t j) {
      if (holds(i) != holds(j)) return holds(i);
      if (holds(i)) return trials_[i].s.workers < trials_[j].s.workers;
      if (std::fabs(busy(i) - busy(j)) <= busy_tie)
        return trials_[i].s.workers < trials_[j].s.workers;
      return busy(i) > busy(j);
    };
    std::optional<std::size_t> best, best_at_cores;
    for (std::size_t i = 0; i < trials_.size(); ++i) {
      if (trials_[i].phase != result::trial_phase::confirm || !trials_[i].f.measured) continue;
      if (!best || better(i, *best)) best = i;
      if (trials_[i].s.workers <= static_cast<int>(cores_) &&
          (!best_at_cores || better(i, *best_at_cores)))
        best_at_cores = i;
    }
    if (best && best_at_cores && best != best_at_cores) {
      if (!(holds(*best) && !holds(*best_at_cores))) best = best_at_cores;
    }
    confirmed_ = best;
  }

  // ---- the answer -------------------------------------------------------------------------

  [[nodiscard]] std::string answer(const setting& st) const {
    std::string args = fmt::format("ds, batch_size={}", rq_.batch_size);
    if (st.workers > 0)
      args += fmt::format(", num_workers={}, prefetch_factor={}", st.workers, st.prefetch);
    args += ", pin_memory=" + py(st.pin);
    if (st.workers > 0) args += ", persistent_workers=True";
    std::string code = "loader = DataLoader(" + args + ")";
    if (!goal_met())
      code = fmt::format(
                 "# best found, does not hold the target: gpu_busy {} < {}{}\n",
                 busy_text(best_busy()), target_text(),
                 confirmed_ ? " in its confirming run" : " in its short trial (not confirmed)") +
             code;
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

  [[nodiscard]] bool goal_met() const { return confirmed_ && holds(*confirmed_); }
  // The trial the answer is: the best confirmed, else the search's pick.
  [[nodiscard]] std::optional<std::size_t> answer_trial() const {
    return confirmed_ ? confirmed_ : chosen_;
  }
  [[nodiscard]] double best_busy() const {
    const auto a = answer_trial();
    return a ? trials_[*a].f.busy : 0;
  }

  // A gpu_busy figure: 2 digits, 3 near the target, so that a miss never reads as the target.
  [[nodiscard]] std::string busy_text(double f) const {
    return std::fabs(f - target_) < 0.01 ? fmt::format("{:.3f}", f) : fmt::format("{:.2f}", f);
  }
  [[nodiscard]] std::string target_text() const { return fmt::format("{}", target_); }

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

  // Why no setting held the target, with the measured figures: what the workers built side by
  // side against what the step needs. The CPU is named only when that capacity is short.
  [[nodiscard]] std::string limit_text(const trial& best) const {
    if (!ceiling_problem_.empty()) return "more workers could not run: " + ceiling_problem_;
    const double needed = target_ / (step_ns_ / 1e9);  // batches/s at the target
    const double got = best.f.samples_per_s / static_cast<double>(rq_.batch_size);
    // The trial with the most workers (the slowest batches among those): what the workers
    // built when they ran side by side, each batch its wall time.
    const trial* most = nullptr;
    for (const auto& t : trials_)
      if (t.f.measured && t.s.workers > 0 && t.f.batch_cpu_ns > 0 &&
          (most == nullptr || t.s.workers > most->s.workers ||
           (t.s.workers == most->s.workers && t.f.batch_cpu_ns > most->f.batch_cpu_ns)))
        most = &t;
    const trial* base = baseline_ ? &trials_[*baseline_] : nullptr;
    const trial* by = most != nullptr ? most : base;
    std::string what;
    if (by == nullptr || by->f.batch_cpu_ns <= 0) {
      what = fmt::format(
          "the runs got {:.1f} batches/s against the {:.1f} the step ({}) needs at {} busy", got,
          needed, format_duration_ns(step_ns_), target_text());
    } else {
      const int w = std::max(1, by->s.workers);
      const double capacity = w / (by->f.batch_cpu_ns / 1e9);
      const std::string who = by->s.workers == 0 ? std::string("num_workers=0 (the main thread)")
                                                 : workers_text(w) + " side by side";
      if (capacity < needed) {
        what = fmt::format(
            "what limits it is the CPU: with {} a batch took {} each, at most {:.1f} batches/s "
            "against the {:.1f} the step ({}) needs at {} busy",
            who, cpu_per_batch_text(*by), capacity, needed, format_duration_ns(step_ns_),
            target_text());
        if (by != base && base != nullptr && base->f.batch_cpu_ns > 0 &&
            by->f.batch_cpu_ns > 1.3 * base->f.batch_cpu_ns)
          what += fmt::format(
              " (alone, num_workers=0 built one in {}: the cores were not free "
              "for all of them)",
              format_duration_ns(base->f.batch_cpu_ns));
        if (saturated_at_ > 0)
          what += fmt::format("; more than {} did not help", workers_text(saturated_at_));
        if (max_workers_ < cores_ && best.s.workers >= static_cast<int>(max_workers_))
          what += fmt::format("; up to {} workers (the cores) may do better", cores_);
      } else {
        what = fmt::format(
            "the batches' CPU does not explain it: with {} a batch took {} each, {:.1f} "
            "batches/s, above the {:.1f} the step ({}) needs at {} busy, yet the run got {:.1f} "
            "batches/s (the wait is elsewhere: the main thread's copies and pinning, the start of "
            "each run, other processes)",
            who, cpu_per_batch_text(*by), capacity, needed, format_duration_ns(step_ns_),
            target_text(), got);
      }
    }
    if (stopped_by() == result::search_stop::budget)
      what += "; the budget ended before more settings were confirmed";
    if (stopped_by() == result::search_stop::interrupted) what += "; the search was interrupted";
    return what;
  }

  static std::string workers_text(int n) {
    if (n == 0) return "num_workers=0";
    return n == 1 ? std::string("1 worker") : fmt::format("{} workers", n);
  }

  [[nodiscard]] std::vector<std::pair<std::string, std::string>> cells(const trial& t) const {
    if (!t.f.measured) return {{"gpu_busy", "-"}};
    std::vector<std::pair<std::string, std::string>> c = {
        {"gpu_busy", busy_text(t.f.busy)},
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
    if (t.phase == result::trial_phase::confirm)
      n += fmt::format("; gpu_busy over the whole runs, the first batch included: {}",
                       busy_text(t.f.run_busy));
    return n;
  }

  [[nodiscard]] std::string verdict() const {
    std::string host =
        s_.emulated()
            ? " (host backend: an emulated device; the CPU side (workers, decode) is real, the "
              "copies and pinning are emulated.)"
            : "";
    if (rq_.images.empty() && rq_.cpu_per_sample_ns.value_or(0) == 0)
      host =
          " (--cpu-per-sample 0: the samples cost no CPU; the loader only collates and copies "
          "them.)" +
          host;
    if (!chosen_) {
      if (!trials_.empty() && !trials_.front().f.measured)
        return "the baseline trial failed: " + trials_.front().f.problem + host;
      return "nothing was measured before the search was stopped" + host;
    }
    const trial& c = trials_[*answer_trial()];
    const trial* lower = nullptr;  // one worker fewer, as measured
    for (const auto& t : trials_)
      if (t.f.measured && t.s.workers == c.s.workers - 1 && !t.s.ring &&
          (!lower || t.f.busy > lower->f.busy))
        lower = &t;
    const std::string why_not_fewer =
        lower == nullptr
            ? ""
            : fmt::format("; {} cannot (gpu_busy {}): a batch takes {} against the {} step",
                          workers_text(lower->s.workers), busy_text(lower->f.busy),
                          cpu_per_batch_text(*lower), format_duration_ns(step_ns_));
    if (!confirmed_)
      return fmt::format("{} {} in a short trial (gpu_busy {}), not confirmed by a longer run{}.{}",
                         label(c.s), holds(*chosen_) ? "held the target" : "was the best",
                         busy_text(c.f.busy), holds(*chosen_) ? "" : "; " + limit_text(c), host);
    // The other confirming runs, as measured.
    std::string others;
    for (std::size_t i = 0; i < trials_.size(); ++i)
      if (trials_[i].phase == result::trial_phase::confirm && i != *confirmed_)
        others += fmt::format("{}{} {}", others.empty() ? "; also confirmed: " : ", ",
                              label(trials_[i].s),
                              trials_[i].f.measured ? busy_text(trials_[i].f.busy)
                                                    : "(" + trials_[i].f.problem + ")");
    const std::string run =
        fmt::format("{} batches x {} runs, {:.0f} samples/s", c.batches, c.runs, c.f.samples_per_s);
    if (holds(*confirmed_))
      return fmt::format(
          "{} keeps the device {} busy (target {}) in the confirming run ({}){}{}.{}", label(c.s),
          busy_text(c.f.busy), target_text(), run, why_not_fewer, others, host);
    std::string trial_busy;
    for (const auto& t : trials_)
      if (t.phase == result::trial_phase::search && t.s == c.s && t.f.measured)
        trial_busy = fmt::format("; its short trial: {}", busy_text(t.f.busy));
    return fmt::format(
        "no setting held the target {} in a confirming run; the best confirmed, {}, keeps the "
        "device {} busy ({}{}){}; {}.{}",
        target_text(), label(c.s), busy_text(c.f.busy), run, trial_busy, others, limit_text(c),
        host);
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

  result::run_result finish() override {
    // Each phase's scenario gets the loader kind's own verdict over its cases.
    {
      const auto engine = kind::make_engine();
      for (auto& sc : result_.scenarios) sc.verdict = engine->verdict(sc, s_.platform().kind());
    }
    result::tune_block t;
    t.question = result::tune_question::loader;
    t.inputs = inputs();
    // Shown in order of the setting (workers, then prefetch, pinning), the confirming run last.
    std::vector<std::size_t> order(trials_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const auto key = [&](std::size_t i) {
        const auto& s = trials_[i].s;
        return std::tuple(trials_[i].phase == result::trial_phase::confirm, s.workers, s.prefetch,
                          !s.pin, s.ring);
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
    t.goal_met = goal_met();
    if (const auto a = answer_trial()) t.answer = answer(trials_[*a].s);
    t.verdict = verdict();
    t.chart_metric = "gpu_busy";
    t.chart_unit = "fraction";
    t.chart_target = target_;
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
  if (rq.batch_size == 0 || rq.batch_size > 1'000'000)
    throw input_error({}, "--batch-size",
                      fmt::format("expected 1 to 1000000 samples, got {}", rq.batch_size));
  if (rq.max_workers > 256)
    throw input_error({}, "--max-workers",
                      fmt::format("expected 0 (the cores) to 256, got {}", rq.max_workers));
  if (images) (void)image::scan_image_folder(rq.images, 1, {}, "--images");
}

result::run_result tune_loader(const loader_request& request, const session& s) {
  check_loader_request(request);
  loader_tuner tuner(request, s);
  return run_search(s, tuner);
}

}  // namespace pinbench::tune
