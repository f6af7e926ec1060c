// Generated allocation workloads (a training loop, RMM's random pattern), produced lazily so that
// memory stays bounded by what is live, and identical for a seed on every platform.
#include "alloc/workload.hpp"

#include <algorithm>
#include <deque>
#include <utility>

#include "core/error.hpp"

namespace pinbench::alloc {

namespace {

// splitmix64: tiny, good enough for workload shapes, and — unlike std::uniform_*_distribution —
// gives the same numbers with every standard library.
class rng {
 public:
  explicit rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, n); n > 0. Rejection keeps it unbiased.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    std::uint64_t x = next();
    while (x < threshold) x = next();
    return x % n;
  }

  /// Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

event make_alloc(std::uint64_t id, std::uint64_t size) {
  event e;
  e.op = event::kind::alloc;
  e.id = id;
  e.size = size;
  return e;
}

event make_free(std::uint64_t id) {
  event e;
  e.op = event::kind::free;
  e.id = id;
  return e;
}

event make_mark(std::string label) {
  event e;
  e.op = event::kind::mark;
  e.label = std::move(label);
  return e;
}

// An event source that refills a small buffer one phase at a time.
class buffered_source : public event_source {
 public:
  bool next(event& out) final {
    while (pending_.empty()) {
      if (!refill()) return false;
    }
    out = std::move(pending_.front());
    pending_.pop_front();
    return true;
  }

 protected:
  /// Appends the next batch of events to pending_; false when the workload is over.
  virtual bool refill() = 0;
  std::deque<event> pending_;
};

class training_loop_source final : public buffered_source {
 public:
  explicit training_loop_source(training_loop_spec spec)
      : spec_(std::move(spec)), rng_(spec_.seed), layers_(static_cast<std::size_t>(spec_.layers)) {}

 private:
  // base ± 10%: base - base/10 plus a uniform draw over 20% of base.
  std::uint64_t jitter(std::uint64_t base) { return base - base / 10 + rng_.below(base / 5 + 1); }

  bool refill() override {
    if (!started_) {
      started_ = true;
      parameter_bytes_.resize(layers_);
      parameter_ids_.resize(layers_);
      for (std::size_t l = 0; l < layers_; ++l) {
        parameter_bytes_[l] = std::max<std::uint64_t>(1, jitter(spec_.parameter_bytes));
        parameter_ids_[l] = next_id_++;
        pending_.push_back(make_alloc(parameter_ids_[l], parameter_bytes_[l]));
      }
      return true;
    }
    if (iteration_ < spec_.iterations) {
      emit_iteration();
      ++iteration_;
      return true;
    }
    if (!finished_) {
      finished_ = true;
      for (std::size_t l = 0; l < layers_; ++l) pending_.push_back(make_free(parameter_ids_[l]));
      return true;
    }
    return false;
  }

  void emit_iteration() {
    const int batch =
        spec_.batch_sizes.empty()
            ? spec_.base_batch
            : spec_.batch_sizes[static_cast<std::size_t>(iteration_) % spec_.batch_sizes.size()];
    const std::uint64_t activation_base = spec_.activation_bytes *
                                          static_cast<std::uint64_t>(batch) /
                                          static_cast<std::uint64_t>(spec_.base_batch);
    std::vector<std::uint64_t> activations(layers_), gradients(layers_), temporaries(layers_);
    // Forward: one activation per layer, kept for the backward pass.
    for (std::size_t l = 0; l < layers_; ++l) {
      activations[l] = next_id_++;
      pending_.push_back(
          make_alloc(activations[l], std::max<std::uint64_t>(512, jitter(activation_base))));
    }
    // Backward, last layer first: its gradient appears, then its activation is released.
    for (std::size_t l = layers_; l-- > 0;) {
      gradients[l] = next_id_++;
      pending_.push_back(make_alloc(gradients[l], parameter_bytes_[l]));
      pending_.push_back(make_free(activations[l]));
    }
    // Optimizer step: one temporary per parameter, then temporaries and gradients go.
    for (std::size_t l = 0; l < layers_; ++l) {
      temporaries[l] = next_id_++;
      pending_.push_back(make_alloc(temporaries[l], parameter_bytes_[l]));
    }
    for (std::size_t l = 0; l < layers_; ++l) pending_.push_back(make_free(temporaries[l]));
    for (std::size_t l = 0; l < layers_; ++l) pending_.push_back(make_free(gradients[l]));
    pending_.push_back(make_mark("iteration"));
  }

  training_loop_spec spec_;
  rng rng_;
  std::size_t layers_;
  std::vector<std::uint64_t> parameter_bytes_, parameter_ids_;
  std::uint64_t next_id_ = 1;
  int iteration_ = 0;
  bool started_ = false, finished_ = false;
};

class random_source final : public buffered_source {
 public:
  explicit random_source(const random_spec& spec) : spec_(spec), rng_(spec.seed) {}

 private:
  bool refill() override {
    if (done_ops_ < spec_.count) {
      ++done_ops_;
      const bool alloc = live_.empty() || rng_.unit() < spec_.alloc_probability;
      if (alloc) {
        const std::uint64_t size = 1 + rng_.below(spec_.max_bytes);
        live_.push_back(next_id_);
        pending_.push_back(make_alloc(next_id_++, size));
      } else {
        // Swap-and-pop keeps removal O(1); the order it leaves is deterministic too.
        const auto k = static_cast<std::size_t>(rng_.below(live_.size()));
        pending_.push_back(make_free(live_[k]));
        live_[k] = live_.back();
        live_.pop_back();
      }
      if (spec_.mark_every != 0 && done_ops_ % spec_.mark_every == 0) {
        pending_.push_back(make_mark("iteration"));
      }
      return true;
    }
    if (!live_.empty()) {
      for (const std::uint64_t id : live_) pending_.push_back(make_free(id));
      live_.clear();
      return true;
    }
    return false;
  }

  random_spec spec_;
  rng rng_;
  std::vector<std::uint64_t> live_;
  std::uint64_t next_id_ = 1;
  std::uint64_t done_ops_ = 0;
};

}  // namespace

std::unique_ptr<event_source> make_training_loop(const training_loop_spec& spec) {
  const std::string where = "training_loop";
  if (spec.layers < 1) {
    throw input_error("", where, "layers must be at least 1, got " + std::to_string(spec.layers));
  }
  if (spec.iterations < 0) {
    throw input_error("", where,
                      "iterations must not be negative, got " + std::to_string(spec.iterations));
  }
  if (spec.base_batch < 1) {
    throw input_error("", where,
                      "base_batch must be at least 1, got " + std::to_string(spec.base_batch));
  }
  for (const int b : spec.batch_sizes) {
    if (b < 1) {
      throw input_error("", where, "batch sizes must be at least 1, got " + std::to_string(b));
    }
  }
  if (spec.parameter_bytes == 0) {
    throw input_error("", where, "parameter_bytes must be positive");
  }
  return std::make_unique<training_loop_source>(spec);
}

std::unique_ptr<event_source> make_random(const random_spec& spec) {
  const std::string where = "random";
  if (spec.max_bytes == 0) throw input_error("", where, "max_bytes must be positive");
  if (!(spec.alloc_probability >= 0.0 && spec.alloc_probability <= 1.0)) {
    throw input_error(
        "", where,
        "alloc_probability must be between 0 and 1, got " + std::to_string(spec.alloc_probability));
  }
  return std::make_unique<random_source>(spec);
}

}  // namespace pinbench::alloc
