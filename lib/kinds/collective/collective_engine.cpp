// Kind `collective`'s engine. A sample times `iterations` collectives on the host clock, as the
// group runs them (NCCL and the host ring: back to back and waited for once at the end,
// nccl-tests' method; time per collective = span / iterations). algbw = size / time, busbw = algbw
// x the op's bus factor (absent with one rank: nothing crosses a link). After sampling, every
// rank's result is checked against sums computed here.
#include "kinds/collective/collective_engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "collective/collective.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "kinds/collective/collective_params.hpp"
#include "kinds/conditions_json.hpp"
#include "measure/protocol.hpp"

namespace pinbench::kinds::collective {

namespace {

// ranks = 0 on the host backend: this many emulated devices.
constexpr int default_host_ranks = 4;

namespace cl = pinbench::collective;

constexpr auto higher = result::direction::higher;
constexpr auto lower = result::direction::lower;

/// iterations = 0: as many collectives per sample as last about this long together, so that a
/// sample of tiny collectives is not just the clock's and the wake-ups' cost.
constexpr double auto_sample_ns = 1e6;
constexpr int max_auto_iterations = 100'000;

/// What a receive buffer holds before a run: never a value a correct run leaves there.
constexpr double sentinel = -1;

// Rank r's element i before the collective: small integers, so every sum in every dtype is
// exact, whatever the order of the additions.
double sent_value(int rank, std::size_t i) {
  return static_cast<double>(rank + 1) * static_cast<double>(i % 7 + 1);
}

template <class F>
decltype(auto) with_type(cl::dtype t, F&& f) {
  switch (t) {
    case cl::dtype::float64:
      return f(double{});
    case cl::dtype::int32:
      return f(std::int32_t{});
    case cl::dtype::float32:
      break;
  }
  return f(float{});
}

// One local rank: its device, buffers (one buffer in place), and a host buffer and stream
// through which they are filled and read back.
struct participant {
  device::backend* dev = nullptr;
  int rank = 0;  // in the world
  std::unique_ptr<device::device_buffer> send, recv;
  std::unique_ptr<device::host_buffer> host;
  std::unique_ptr<device::stream> stream;

  [[nodiscard]] cl::rank_buffers buffers() const {
    void* s = send->data();
    return {s, recv ? static_cast<void*>(recv->data()) : s};
  }
};

class collective_run {
 public:
  collective_run(const collective_params& p, measure::run_context& ctx) : p_(p) {
    dist::communicator* world = ctx.world;
    if (world != nullptr && world->size() > 1) {
      world_ = world;
      if (p.ranks != 0 && p.ranks != world->size())
        throw error(fmt::format(
            "ranks={} but this launch has {} processes: under a launch a collective spans one "
            "rank per process (ranks 0 or {})",
            p.ranks, world->size(), world->size()));
      group_ = cl::make_world_group(*world, ctx.dev);
      devices_ = {&ctx.dev};
    } else {
      const int available = ctx.platform != nullptr ? std::max(ctx.platform->device_count(), 1) : 1;
      // "All" on the host backend is a few emulated devices, not the emulation's ceiling:
      // sixteen ring threads on a small machine measure the scheduler, not the ring.
      const int all = ctx.dev.emulated() ? std::min(available, default_host_ranks) : available;
      const int n = p.ranks == 0 ? all : p.ranks;
      if (n > available)
        throw unsupported_error(fmt::format("needs {} {}, this process sees {}", n,
                                            ctx.dev.emulated() ? "devices" : "GPUs", available));
      devices_.push_back(&ctx.dev);
      for (int i = 1; i < n; ++i) {
        opened_.push_back(ctx.platform->open(i));
        devices_.push_back(opened_.back().get());
      }
      group_ = cl::make_local_group(devices_);
    }
    const int n = group_->world_size();
    if (p.op == cl::op::broadcast && p.root >= n)
      throw error(fmt::format("root={} but the collective has {} ranks", p.root, n));
    shape_ = cl::shape_of(p.op, p.type, p.bytes, n);
    if (shape_.bytes(p.type) == 0)
      throw error(fmt::format("bytes={} holds no whole {} element per rank of {}: raise bytes",
                              p.bytes, cl::to_string(p.type), n));
    allocate();
    fill();
  }

  [[nodiscard]] cl::group& group() { return *group_; }
  [[nodiscard]] const cl::buffer_shape& shape() const { return shape_; }
  [[nodiscard]] dist::communicator* world() const { return world_; }

  void once() { repeated(1); }
  /// One sample's collectives: enqueued together, one wait after the last.
  void repeated(int iterations) {
    group_->run_repeated(iterations, p_.op, p_.type, shape_, buffers_, p_.root);
  }

  // Fresh inputs (and sentinels where results go), one run, then every local rank's result
  // against the expected values. "" when all match, else the first mismatch.
  std::string verify() {
    fill();
    once();
    for (auto& who : local_) {
      std::string problem = check(who);
      if (!problem.empty()) return problem;
    }
    return {};
  }

 private:
  [[nodiscard]] std::size_t elem() const { return cl::size_of(p_.type); }
  // Elements of the one buffer in place: the larger of the two.
  [[nodiscard]] std::size_t in_place_count() const {
    return std::max(shape_.send_count, shape_.recv_count);
  }

  void allocate() {
    for (int i = 0; i < group_->local_count(); ++i) {
      participant who;
      who.dev = devices_[static_cast<std::size_t>(i)];
      who.rank = group_->first_rank() + i;
      if (p_.in_place) {
        who.send = who.dev->alloc_device(in_place_count() * elem());
      } else {
        who.send = who.dev->alloc_device(shape_.send_count * elem());
        who.recv = who.dev->alloc_device(shape_.recv_count * elem());
      }
      who.host = who.dev->alloc_host(in_place_count() * elem(), device::host_kind::pageable);
      who.stream = who.dev->create_stream();
      local_.push_back(std::move(who));
    }
    for (const auto& who : local_) buffers_.push_back(who.buffers());
  }

  // Each rank's inputs, copied in through its backend (device memory is not the host's on CUDA).
  void fill() {
    for (auto& who : local_) {
      if (p_.in_place) {
        inputs(who.rank, in_place_count(), who.host->data());
        upload(who, who.send->data(), in_place_count() * elem());
      } else {
        inputs(who.rank, shape_.send_count, who.host->data());
        upload(who, who.send->data(), shape_.send_count * elem());
        sentinels(shape_.recv_count, who.host->data());
        upload(who, who.recv->data(), shape_.recv_count * elem());
      }
    }
  }

  // What rank r's send buffer (or its one buffer in place) holds before a run, written to `out`.
  void inputs(int rank, std::size_t count, std::byte* out) const {
    with_type(p_.type, [&](auto zero) {
      using T = decltype(zero);
      auto* v = reinterpret_cast<T*>(out);
      if (p_.in_place && p_.op == cl::op::all_gather) {
        // Only this rank's own block is input; the others are results to come.
        const std::size_t block = shape_.send_count, first = block * static_cast<std::size_t>(rank);
        for (std::size_t i = 0; i < count; ++i)
          v[i] = static_cast<T>(i >= first && i < first + block ? sent_value(rank, i - first)
                                                                : sentinel);
      } else {
        for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<T>(sent_value(rank, i));
      }
    });
  }

  void sentinels(std::size_t count, std::byte* out) const {
    with_type(p_.type, [&](auto zero) {
      using T = decltype(zero);
      auto* v = reinterpret_cast<T*>(out);
      std::fill(v, v + count, static_cast<T>(sentinel));
    });
  }

  // The first `bytes` of the rank's host buffer to `dst` on its device, and back.
  static void upload(participant& who, std::byte* dst, std::size_t bytes) {
    who.dev->copy_async(dst, who.host->data(), bytes, device::copy_dir::h2d, *who.stream);
    who.dev->synchronize(*who.stream);
  }
  static const std::byte* download(participant& who, const std::byte* src, std::size_t bytes) {
    who.dev->copy_async(who.host->data(), src, bytes, device::copy_dir::d2h, *who.stream);
    who.dev->synchronize(*who.stream);
    return who.host->data();
  }

  // Where rank r's result lies in the buffer read back, and what element i there must hold.
  [[nodiscard]] std::string check(participant& who) const {
    const int n = group_->world_size(), r = who.rank;
    const double all = static_cast<double>(n) * static_cast<double>(n + 1) / 2;  // sum of rank+1
    std::size_t first = 0, count = shape_.recv_count;
    if (p_.in_place && p_.op == cl::op::reduce_scatter)
      first = shape_.recv_count * static_cast<std::size_t>(r);
    const auto expected = [&](std::size_t i) -> double {
      switch (p_.op) {
        case cl::op::all_reduce:
          return all * static_cast<double>(i % 7 + 1);
        case cl::op::all_gather: {
          const std::size_t block = shape_.send_count;
          return sent_value(static_cast<int>(i / block), i % block);
        }
        case cl::op::reduce_scatter:
          return all * static_cast<double>(
                           (i - first + shape_.recv_count * static_cast<std::size_t>(r)) % 7 + 1);
        case cl::op::broadcast:
          return sent_value(p_.root, i);
        case cl::op::send_recv:
          return sent_value((r ^ 1) < n ? (r ^ 1) : r, i);
      }
      return 0;
    };
    const std::byte* src = who.recv ? who.recv->data() : who.send->data();
    const std::size_t held = who.recv ? shape_.recv_count : in_place_count();
    const std::byte* back = download(who, src, held * elem());
    return with_type(p_.type, [&](auto zero) -> std::string {
      using T = decltype(zero);
      const auto* v = reinterpret_cast<const T*>(back);
      for (std::size_t i = first; i < first + count; ++i) {
        const T want = static_cast<T>(expected(i));
        if (v[i] != want)
          return fmt::format("rank {}, element {}: expected {}, got {}", r, i,
                             static_cast<double>(want), static_cast<double>(v[i]));
      }
      return std::string();
    });
  }

  const collective_params& p_;
  dist::communicator* world_ = nullptr;                   // set under a launch only
  std::vector<std::unique_ptr<device::backend>> opened_;  // devices 1.. of this process
  std::vector<device::backend*> devices_;
  std::unique_ptr<cl::group> group_;  // after the devices it runs on, destroyed before them
  cl::buffer_shape shape_;
  std::vector<participant> local_;
  std::vector<cl::rank_buffers> buffers_;
};

// Under a launch every rank must agree on whatever changes how many collectives it runs.
int agreed_iterations(collective_run& run, int asked) {
  if (asked > 0) return asked;
  double fastest = 0;
  for (int i = 0; i < 3; ++i) {
    const std::int64_t t0 = now_ns();
    run.once();
    const auto span = static_cast<double>(now_ns() - t0);
    fastest = i == 0 ? span : std::min(fastest, span);
  }
  int iterations = static_cast<int>(std::clamp(std::ceil(auto_sample_ns / std::max(fastest, 1.0)),
                                               1.0, static_cast<double>(max_auto_iterations)));
  if (auto* world = run.world()) {
    std::string said = std::to_string(iterations);
    world->broadcast(said, 0, cl::world_timeout);
    iterations = std::stoi(said);
  }
  return iterations;
}

class collective_engine final : public measure::engine {
 public:
  [[nodiscard]] result::case_result run_case(const measure::case_spec& c,
                                             measure::run_context& ctx) override {
    const auto& p = measure::params_of<collective_params>(c);
    result::case_result r;
    collective_run run(p, ctx);
    const int n = run.group().world_size();
    const double size = static_cast<double>(run.shape().bytes(p.type));
    const double factor = cl::bus_factor(p.op, n);

    const auto time = measure::declare(r, "time", "ns", lower);
    const auto algbw = measure::declare(r, "algbw", "GB/s", higher);
    // With one rank busbw would be 0 (factor 0) and a gate would compare 0 with 0: absent.
    std::optional<measure::metric_handle> busbw;
    if (n > 1) busbw = measure::declare(r, "busbw", "GB/s", higher);

    int iterations = p.iterations;
    measure::sample_loop loop{
        .warm_up = [&] { run.once(); },
        .before_sampling = [&] { iterations = agreed_iterations(run, p.iterations); },
        .sample = [&]() -> std::optional<double> {
          const std::int64_t t0 = now_ns();
          run.repeated(iterations);
          const auto span = static_cast<double>(now_ns() - t0);
          if (!(span > 0))
            throw error(
                fmt::format("{} collectives measured {} ns: too short for the clock; "
                            "raise iterations",
                            iterations, span));
          const double per = span / iterations;
          const double gbps = size / per;  // bytes per ns == GB/s
          time.add(per);
          algbw.add(gbps);
          if (busbw) busbw->add(gbps * factor);
          return gbps;
        }};
    if (auto* world = run.world())
      loop.agree_to_stop = [world](bool stop) {
        std::string said(1, stop ? '1' : '0');
        world->broadcast(said, 0, cl::world_timeout);
        return said == "1";
      };
    if (p.verify)
      loop.verify = [&] {
        std::string problem = run.verify();
        // Under a launch every rank reports whether all of them got the right values.
        if (auto* world = run.world()) {
          const auto all = world->all_gather(problem, cl::world_timeout);
          problem.clear();
          for (const auto& said : all)
            if (!said.empty()) {
              problem = said;
              break;
            }
        }
        return problem;
      };
    measure::measure_case(r, c.sampling, loop);

    r.extra["group"] = run.group().describe();
    r.extra["ranks"] = n;
    r.extra["local_ranks"] = run.group().local_count();
    r.extra["bus_factor"] = factor;
    if (!busbw)
      r.extra["busbw_reason"] = "one rank: no data crosses a link, so there is no bus bandwidth";
    r.extra["shape"] = {{"send_count", run.shape().send_count},
                        {"recv_count", run.shape().recv_count},
                        {"bytes", run.shape().bytes(p.type)},
                        {"dtype", cl::to_string(p.type)}};
    r.extra["iterations"] = iterations;
    // busbw over a link ceiling needs the link the data crosses, which no group can name.
    r.extra["link_ceiling"] = link_ceiling_json({.reason = run.group().no_ceiling_reason()});
    r.extra["timing"] = fmt::format("host clock around {} collective{}, {}", iterations,
                                    iterations == 1 ? "" : "s", run.group().iteration_timing());
    return r;
  }
};

}  // namespace

std::unique_ptr<measure::engine> make_engine() {
  return std::make_unique<collective_engine>();
}

}  // namespace pinbench::kinds::collective
