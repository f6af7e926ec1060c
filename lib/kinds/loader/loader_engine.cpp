#include "kinds/loader/loader_engine.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "alloc/allocator.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/sysinfo.hpp"
#include "core/units.hpp"
#include "device/event_stock.hpp"
#include "device/numa_placement.hpp"
#include "image/jpeg.hpp"
#include "kinds/conditions_json.hpp"
#include "kinds/loader/loader_params.hpp"
#include "loader/jpeg_source.hpp"
#include "loader/loader.hpp"
#include "measure/protocol.hpp"

namespace pinbench::kinds::loader {

namespace {

constexpr auto higher = result::direction::higher;
constexpr auto lower = result::direction::lower;
constexpr auto none = result::direction::none;

using device::event_stock;

// One step on the device: the batch's device buffer and the events that time it.
struct step_record {
  void* device_batch = nullptr;
  std::size_t bytes = 0;
  std::size_t samples = 0;
  std::unique_ptr<device::event> copy_start, copy_done, compute_start, compute_end;
};

// What one timed run measured.
struct run_figures {
  double wall_ns = 0;
  std::uint64_t samples = 0, steps = 0;
  double first_batch_ns = 0;
  double busy_ns = 0, span_ns = 0;  // compute stream: busy time, and the run's device span
  std::vector<double> data_wait, copy_call, sync_wait, step, h2d, compute, build, pin;
  std::vector<double> read, decode, augment;  // jpeg: per sample
  std::uint64_t bytes_read = 0;
  std::uint64_t peak_pinned = 0;
  std::size_t max_outstanding_seen = 0, max_reorder = 0;
  std::vector<double> worker_startup, ipc;  // per epoch that started workers; per batch
  int worker_starts = 0;
  std::uint64_t peak_shm = 0;
  // Memory at the end of the run's last epoch: the workers' (process workers; median over
  // them) and this process's own. 0 where unreadable.
  double worker_pss = 0, worker_rss = 0, main_pss = 0;
  std::string problem;  // verification: "" when intact
  bool verified = false;
};

class loader_run {
 public:
  // The host memory check comes before the dataset, which allocates its in-memory block.
  loader_run(const loader_params& p, device::backend& dev)
      : p_(checked(p)), dev_(dev), data_(p.dataset), events_(dev) {
    copy_stream_ = dev_.create_stream();
    compute_stream_ = dev_.create_stream();
    run_start_ = dev_.create_event();
    upstream_ = alloc::make_backend_upstream(dev_, 0);
    device_alloc_ = alloc::make_caching_allocator(*upstream_, alloc::config{});
    if (p_.spec.pin_memory) {
      const std::size_t slot =
          pinbench::loader::batch_bytes(p_.spec.batch_size, p_.dataset.sample_bytes);
      pool_ = p_.mode == pinbench::loader::pin_mode::ring
                  ? pinbench::loader::make_pinned_ring(dev_, p_.ring_slots, slot, p_.pinned_limit)
                  : pinbench::loader::make_caching_host_allocator(dev_, p_.pinned_limit);
    }
  }

  ~loader_run() {
    // Nothing may be left queued on the streams when the buffers they use go away.
    dev_.synchronize(*copy_stream_);
    dev_.synchronize(*compute_stream_);
    for (auto& r : inflight_) device_alloc_->deallocate(r.device_batch);
  }

  [[nodiscard]] const pinbench::loader::dataset& data() const { return data_; }
  [[nodiscard]] pinbench::loader::pinned_pool* pool() const { return pool_.get(); }
  [[nodiscard]] std::uint64_t steps_per_run() const {
    const auto per_epoch = pinbench::loader::epoch_batches(p_.dataset.samples, p_.spec, 0).size();
    const std::uint64_t all = per_epoch * p_.epochs;
    return p_.batches == 0 ? all : std::min<std::uint64_t>(all, p_.batches);
  }

  run_figures run(std::uint64_t run_number) {
    run_figures f;
    const std::uint64_t steps = steps_per_run();
    const std::size_t header_bytes = sizeof(pinbench::loader::sample_header) * p_.spec.batch_size;
    // Verification: each step's headers are copied on the device into this area; at the end
    // it is read back and checked against the sample order and what the host received. All of
    // its bookkeeping is done before the clock starts: the area is cleared (on the host backend
    // that is also its first touch: page faults inside the run made the free-sample figures
    // vary 15-20% from run to run on the 2-core VM, 5-8% without), the expected order is made
    // and the host's copy of the headers keeps the pages of the run before (a vector reserved
    // anew is fresh memory: its first touch would fault inside the run).
    std::vector<pinbench::loader::sample_header>& host_headers = host_headers_;
    host_headers.clear();
    std::vector<std::vector<std::uint64_t>> expected;
    device::device_buffer* verify_area = nullptr;
    if (p_.verify) {
      verify_area = cleared_verify_area(header_bytes * steps);
      for (std::uint64_t e = 0; e < p_.epochs; ++e) {
        auto order = pinbench::loader::epoch_batches(p_.dataset.samples, p_.spec,
                                                     run_number * p_.epochs + e);
        expected.insert(expected.end(), std::make_move_iterator(order.begin()),
                        std::make_move_iterator(order.end()));
      }
      host_headers.reserve(steps * p_.spec.batch_size);
    }
    if (pool_) pool_->reset_peak();
    // persistent_workers keeps the workers across the epochs of one timed run: each run is a
    // training of `epochs` epochs, which starts its workers once (worker_starts 1, not 0).
    kept_.pool.reset();

    dev_.record(*run_start_, *compute_stream_);
    const std::int64_t t0 = now_ns();
    std::uint64_t step_no = 0;
    // The last epoch stays open until the run is timed, so that its workers' memory can be
    // read after the clock stopped (and their shutdown is not in the run's time).
    std::optional<pinbench::loader::epoch> open;
    for (std::uint64_t e = 0; e < p_.epochs && step_no < steps; ++e) {
      // Each run draws its own shuffle orders: epoch numbers continue across runs.
      const std::uint64_t epoch_no = run_number * p_.epochs + e;
      open.reset();  // the previous epoch's workers stop before this one's start
      auto& it = open.emplace(data_, p_.spec, epoch_no, dev_, pool_.get(), &kept_);
      while (step_no < steps) {
        const std::int64_t s0 = now_ns();
        std::optional<pinbench::loader::batch> b = it.next();
        const std::int64_t s1 = now_ns();
        if (!b) break;
        if (step_no == 0) f.first_batch_ns = static_cast<double>(s1 - t0);
        f.data_wait.push_back(static_cast<double>(s1 - s0));
        f.build.push_back(static_cast<double>(b->build_ns));
        if (b->ipc_ns >= 0) f.ipc.push_back(static_cast<double>(b->ipc_ns));
        if (b->pinned) f.pin.push_back(static_cast<double>(b->pin_ns));
        for (const auto& cost : b->costs) {
          f.read.push_back(static_cast<double>(cost.read_ns));
          f.decode.push_back(static_cast<double>(cost.decode_ns));
          if (!cost.skipped) f.augment.push_back(static_cast<double>(cost.augment_ns));
          f.bytes_read += cost.bytes_read;
        }
        if (p_.verify) {
          const auto* h = b->headers();
          host_headers.insert(host_headers.end(), h, h + b->samples);
        }
        step(*b, it, step_no, verify_area, header_bytes, f);
        f.samples += b->samples;
        ++step_no;
        f.step.push_back(static_cast<double>(now_ns() - s0));
      }
      const auto st = it.stats();
      f.max_outstanding_seen = std::max(f.max_outstanding_seen, st.max_outstanding_seen);
      f.max_reorder = std::max(f.max_reorder, st.max_reorder_buffered);
      f.worker_starts += st.worker_starts;
      if (st.worker_starts > 0 && st.worker_startup_ns >= 0)
        f.worker_startup.push_back(static_cast<double>(st.worker_startup_ns));
      f.peak_shm = std::max(f.peak_shm, st.peak_shm_bytes);
    }
    // The run ends when the device finished the last step.
    std::optional<step_record> last;
    while (!inflight_.empty()) last = retire(f, /*keep=*/inflight_.size() == 1);
    f.wall_ns = static_cast<double>(now_ns() - t0);
    f.steps = step_no;
    if (last && last->compute_end) f.span_ns = dev_.elapsed_ns(*run_start_, *last->compute_end);
    if (pool_) f.peak_pinned = pool_->stats().peak_reserved_bytes;
    if (open) {
      read_memory(*open, f);
      open.reset();
    }

    if (p_.verify && last) {
      f.problem = verify(*last, verify_area, host_headers, expected, header_bytes);
      f.verified = f.problem.empty();
    }
    if (last) {
      device_alloc_->deallocate(last->device_batch);
      give_events(*last);
    }
    return f;
  }

 private:
  // The verification area, made once and zeroed before each run (an h2d copy of zeros, since
  // the backend has no memset), so that a header a run failed to copy never reads as last run's.
  device::device_buffer* cleared_verify_area(std::size_t bytes) {
    bytes = std::max<std::size_t>(1, bytes);
    if (!verify_area_ || verify_area_->bytes() < bytes) {
      verify_area_ = dev_.alloc_device(bytes);
      verify_zeros_ = dev_.alloc_host(bytes, device::host_kind::pageable);
      std::memset(verify_zeros_->data(), 0, bytes);
    }
    dev_.copy_async(verify_area_->data(), verify_zeros_->data(), bytes, device::copy_dir::h2d,
                    *copy_stream_);
    dev_.synchronize(*copy_stream_);
    return verify_area_.get();
  }

  // Per step: device memory from the caching allocator, the copy on the copy stream (and the
  // headers into the verification area), the compute stream waits for it and computes. At most
  // two steps are in flight: before the next batch is taken, the one before this is retired.
  void step(pinbench::loader::batch& b, pinbench::loader::epoch& it, std::uint64_t step_no,
            device::device_buffer* verify_area, std::size_t header_bytes, run_figures& f) {
    step_record r;
    r.bytes = b.bytes;
    r.samples = b.samples;
    r.device_batch = device_alloc_->allocate(b.bytes, copy_stream_id);
    r.copy_start = events_.take();
    r.copy_done = events_.take();

    const std::int64_t c0 = now_ns();
    dev_.record(*r.copy_start, *copy_stream_);
    dev_.copy_async(r.device_batch, b.data, b.bytes, device::copy_dir::h2d, *copy_stream_);
    if (verify_area != nullptr)
      dev_.copy_async(verify_area->data() + step_no * header_bytes, r.device_batch,
                      b.samples * sizeof(pinbench::loader::sample_header), device::copy_dir::d2d,
                      *copy_stream_);
    dev_.record(*r.copy_done, *copy_stream_);
    it.release(b, copy_stream_.get());  // pinned memory: reusable once the copy completed
    if (!p_.non_blocking) dev_.synchronize(*r.copy_done);
    f.copy_call.push_back(static_cast<double>(now_ns() - c0));

    dev_.wait(*compute_stream_, *r.copy_done);
    if (p_.compute_ns > 0) {
      r.compute_start = events_.take();
      r.compute_end = events_.take();
      dev_.record(*r.compute_start, *compute_stream_);
      dev_.launch_compute(*compute_stream_, p_.compute_ns);
      dev_.record(*r.compute_end, *compute_stream_);
    } else {
      r.compute_end = events_.take();
      dev_.record(*r.compute_end, *compute_stream_);
    }
    inflight_.push_back(std::move(r));
    if (inflight_.size() > 2) {
      const std::int64_t w0 = now_ns();
      retire(f, false);
      f.sync_wait.push_back(static_cast<double>(now_ns() - w0));
    } else {
      f.sync_wait.push_back(0);
    }
  }

  // Waits for the oldest step in flight, takes its device times, frees its device memory
  // (unless `keep`: the last step is kept for verification, then freed by the caller).
  std::optional<step_record> retire(run_figures& f, bool keep) {
    step_record r = std::move(inflight_.front());
    inflight_.pop_front();
    dev_.synchronize(*r.compute_end);
    f.h2d.push_back(dev_.elapsed_ns(*r.copy_start, *r.copy_done));
    if (r.compute_start) {
      const double c = dev_.elapsed_ns(*r.compute_start, *r.compute_end);
      f.compute.push_back(c);
      f.busy_ns += c;
    }
    if (keep) return r;
    device_alloc_->deallocate(r.device_batch);
    give_events(r);
    return std::nullopt;
  }

  void give_events(step_record& r) {
    events_.give(std::move(r.copy_start));
    events_.give(std::move(r.copy_done));
    events_.give(std::move(r.compute_start));
    events_.give(std::move(r.compute_end));
  }

  // Order and exactly-once from the headers that went through the device; the last batch's
  // bytes in full against the dataset.
  std::string verify(const step_record& last, device::device_buffer* verify_area,
                     const std::vector<pinbench::loader::sample_header>& host_headers,
                     const std::vector<std::vector<std::uint64_t>>& expected,
                     std::size_t header_bytes) {
    std::vector<pinbench::loader::sample_header> device_headers(host_headers.size());
    // Headers sit at step * header_bytes; partial batches leave gaps, so read step by step.
    auto back = dev_.alloc_host(std::max<std::size_t>(1, verify_area->bytes()),
                                device::host_kind::pageable);
    dev_.copy_async(back->data(), verify_area->data(), verify_area->bytes(), device::copy_dir::d2h,
                    *copy_stream_);
    dev_.synchronize(*copy_stream_);
    std::size_t at = 0;
    for (std::size_t s = 0; s < expected.size() && at < host_headers.size(); ++s) {
      const auto& want = expected[s];
      const std::size_t n = std::min(want.size(), host_headers.size() - at);
      std::memcpy(device_headers.data() + at, back->data() + s * header_bytes,
                  n * sizeof(pinbench::loader::sample_header));
      for (std::size_t j = 0; j < n; ++j) {
        if (device_headers[at + j].index != want[j])
          return fmt::format("step {} position {}: sample {} arrived where sample {} was due", s, j,
                             device_headers[at + j].index, want[j]);
        if (device_headers[at + j].checksum != host_headers[at + j].checksum ||
            device_headers[at + j].index != host_headers[at + j].index)
          return fmt::format(
              "step {} position {}: the header on the device differs from the "
              "one the host received",
              s, j);
      }
      at += n;
    }
    if (at != host_headers.size()) return "more samples arrived than the sample order holds";

    // The last batch in full: headers, then each sample's bytes as the dataset made them.
    auto last_back = dev_.alloc_host(last.bytes, device::host_kind::pageable);
    dev_.copy_async(last_back->data(), last.device_batch, last.bytes, device::copy_dir::d2h,
                    *copy_stream_);
    dev_.synchronize(*copy_stream_);
    std::vector<std::byte> want(data_.sample_bytes());
    const auto* heads = reinterpret_cast<const pinbench::loader::sample_header*>(last_back->data());
    const std::byte* bytes =
        last_back->data() + last.samples * sizeof(pinbench::loader::sample_header);
    for (std::size_t j = 0; j < last.samples; ++j) {
      pinbench::loader::sample_header h;
      std::memcpy(&h, heads + j, sizeof h);
      data_.raw_bytes(h.index, want.data());
      if (std::memcmp(want.data(), bytes + j * want.size(), want.size()) != 0)
        return fmt::format("the last batch's sample {} did not arrive intact", h.index);
    }
    return {};
  }

  // Host memory the run will touch: pageable batches for every outstanding batch and worker,
  // pinned blocks (rounded up to powers of two) as many, and the dataset's in-memory block.
  static const loader_params& checked(const loader_params& p) {
    check_host_memory(p);
    return p;
  }

  static void check_host_memory(const loader_params& p) {
    const std::uint64_t batch =
        pinbench::loader::batch_bytes(p.spec.batch_size, p.dataset.sample_bytes);
    const std::uint64_t in_flight = pinbench::loader::max_outstanding(p.spec) +
                                    static_cast<std::uint64_t>(p.spec.num_workers) + 3;
    // Saturating: with the largest params the products overflow 64 bits.
    const auto times = [](std::uint64_t x, std::uint64_t y) {
      return y != 0 && x > UINT64_MAX / y ? UINT64_MAX : x * y;
    };
    std::uint64_t need = times(batch, in_flight);
    if (p.spec.pin_memory) {
      const std::uint64_t pinned = times(std::bit_ceil(batch), in_flight);
      need = need > UINT64_MAX - pinned ? UINT64_MAX : need + pinned;
    }
    const std::uint64_t available = read_host_info().available_bytes;
    if (available != 0 && need > available)
      throw out_of_memory(fmt::format(
          "the loader needs about {} of host memory ({} batches of {} in flight), {} available; "
          "use a smaller batch_size, fewer num_workers or a smaller prefetch_factor",
          format_bytes(need), in_flight, format_bytes(batch), format_bytes(available)));
  }

  static void read_memory(const pinbench::loader::epoch& it, run_figures& f) {
    std::vector<double> pss, rss;
    for (const auto& m : it.worker_memory()) {
      pss.push_back(static_cast<double>(m.pss_bytes));
      rss.push_back(static_cast<double>(m.rss_bytes));
    }
    const auto median = [](std::vector<double>& v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      const std::size_t h = v.size() / 2;
      return v.size() % 2 == 1 ? v[h] : (v[h - 1] + v[h]) / 2;
    };
    f.worker_pss = median(pss);
    f.worker_rss = median(rss);
    if (const auto self = pinbench::loader::read_process_memory())
      f.main_pss = static_cast<double>(self->pss_bytes);
  }

  static constexpr alloc::stream_id copy_stream_id = 1;

  loader_params p_;
  device::backend& dev_;
  pinbench::loader::dataset data_;
  event_stock events_;
  std::unique_ptr<device::stream> copy_stream_, compute_stream_;
  std::unique_ptr<device::event> run_start_;
  std::unique_ptr<device::device_buffer> verify_area_;  // see cleared_verify_area()
  std::unique_ptr<device::host_buffer> verify_zeros_;
  std::vector<pinbench::loader::sample_header> host_headers_;  // reused: see run()
  std::unique_ptr<alloc::upstream> upstream_;
  std::unique_ptr<alloc::device_allocator> device_alloc_;
  std::unique_ptr<pinbench::loader::pinned_pool> pool_;
  pinbench::loader::kept_workers kept_;  // persistent_workers: across one run's epochs
  std::deque<step_record> inflight_;
};

// What the jpeg source read: which images, what the transform makes, what was skipped.
void describe_images(const pinbench::loader::jpeg_source& src, const loader_params& p,
                     result::case_result& r) {
  const auto& images = src.images();
  const auto& j = p.dataset.jpeg;
  nlohmann::ordered_json info = {
      {"dir", images.root.string()},
      {"generated", images.generated},
      {"files", images.files.size()},
      {"file_bytes", images.total_bytes},
      {"crop", j.crop},
      {"output",
       j.format == image::tensor_format::uint8_chw ? "uint8 CHW" : "float32 CHW, normalised"},
      {"transform",
       "RandomResizedCrop(scale 0.08-1, ratio 3/4-4/3) + RandomHorizontalFlip, "
       "drawn per sample from (seed, index)"},
      {"decoder", "libjpeg-turbo " + image::jpeg_library_version()}};
  if (images.generated)
    info["generated_as"] = {
        {"width", fmt::format("{}-{}", j.generate.min_width, j.generate.max_width)},
        {"height", fmt::format("{}-{}", j.generate.min_height, j.generate.max_height)},
        {"quality", j.generate.quality}};
  r.extra["images"] = info;
  if (src.skipped() != 0) {
    r.extra["corrupt_skipped"] = {{"samples", src.skipped()}, {"first", src.skipped_files()}};
    r.warnings.push_back(
        fmt::format("{} sample(s) came from files that do not decode and were "
                    "left zero (skip_corrupt); first: {}",
                    src.skipped(), src.skipped_files().front()));
  }
}

class loader_engine final : public measure::engine {
 public:
  [[nodiscard]] result::case_result run_case(const measure::case_spec& c,
                                             measure::run_context& ctx) override {
    loader_params p = measure::params_of<loader_params>(c);
    p.spec.seed = ctx.seed;
    p.dataset.jpeg.seed = ctx.seed;
    p.dataset.jpeg.generate.seed = ctx.seed;
    const bool jpeg = p.dataset.source == pinbench::loader::dataset_spec::source_kind::jpeg;
    result::case_result r;
    // Before the pinned pool, streams and workers exist, for the whole case (see numa_scope).
    device::numa_scope numa(ctx.numa);
    loader_run run(p, ctx.dev);
    if (const std::byte* block = run.data().memory_block(); block != nullptr) numa.observe(block);

    // Every metric is declared before sampling, in the order the result lists them.
    const bool compute = p.compute_ns > 0;
    using measure::declare;
    using measure::metric_handle;
    const auto samples_per_s = declare(r, "samples_per_s", "samples/s", higher);
    const auto batches_per_s = declare(r, "batches_per_s", "batches/s", higher);
    std::optional<metric_handle> gpu_busy, compute_time, pin_time, peak_pinned;
    if (compute) gpu_busy = declare(r, "gpu_busy", "fraction", higher);
    const auto epoch_time = declare(r, "epoch_time", "ns", lower);
    const auto first_batch_time = declare(r, "first_batch_time", "ns", lower);
    const auto data_wait = declare(r, "data_wait", "ns", lower);
    const auto copy_call_time = declare(r, "copy_call_time", "ns", lower);
    const auto sync_wait = declare(r, "sync_wait", "ns", none);
    const auto step_time = declare(r, "step_time", "ns", lower);
    const auto h2d_time = declare(r, "h2d_time", "ns", lower);
    if (compute) compute_time = declare(r, "compute_time", "ns", none);
    const auto batch_build_time = declare(r, "batch_build_time", "ns", lower);
    std::optional<metric_handle> read_time, decode_time, augment_time, bytes_read;
    if (jpeg) {
      read_time = declare(r, "read_time", "ns", lower);
      decode_time = declare(r, "decode_time", "ns", lower);
      augment_time = declare(r, "augment_time", "ns", lower);
      bytes_read = declare(r, "bytes_read", "bytes", none);
    }
    if (p.spec.pin_memory) {
      pin_time = declare(r, "pin_time", "ns", lower);
      peak_pinned = declare(r, "peak_pinned_bytes", "bytes", lower);
    }
    const auto max_outstanding = declare(r, "max_outstanding", "count", none);
    const bool workers = p.spec.num_workers > 0;
    const bool processes = workers && p.spec.method == pinbench::loader::worker_method::process;
    std::optional<metric_handle> startup_time, starts, ipc_time, shm_bytes, worker_pss, worker_rss;
    if (workers) {
      startup_time = declare(r, "worker_startup_time", "ns", lower);
      starts = declare(r, "worker_starts", "count", none);
    }
    if (processes) {
      ipc_time = declare(r, "ipc_time", "ns", lower);
      shm_bytes = declare(r, "shm_bytes", "bytes", lower);
      worker_pss = declare(r, "worker_pss_bytes", "bytes", lower);
      worker_rss = declare(r, "worker_rss_bytes", "bytes", none);
    }
    const auto main_pss = declare(r, "main_pss_bytes", "bytes", none);

    std::uint64_t run_number = 0;
    bool verified = true;
    std::string problem;
    std::size_t max_outstanding_seen = 0, max_reorder = 0;
    measure::measure_case(
        r, c.sampling,
        {.warm_up = [&] { (void)run.run(run_number++); },
         .sample = [&]() -> std::optional<double> {
           const run_figures f = run.run(run_number++);
           const double seconds = f.wall_ns / 1e9;
           const double sps = static_cast<double>(f.samples) / seconds;
           samples_per_s.add(sps);
           batches_per_s.add(static_cast<double>(f.steps) / seconds);
           if (gpu_busy) gpu_busy->add(f.span_ns > 0 ? std::min(1.0, f.busy_ns / f.span_ns) : 0.0);
           epoch_time.add(f.wall_ns / static_cast<double>(p.epochs));
           first_batch_time.add(f.first_batch_ns);
           data_wait.append(f.data_wait);
           copy_call_time.append(f.copy_call);
           sync_wait.append(f.sync_wait);
           step_time.append(f.step);
           h2d_time.append(f.h2d);
           if (compute_time) compute_time->append(f.compute);
           batch_build_time.append(f.build);
           if (jpeg) {
             read_time->append(f.read);
             decode_time->append(f.decode);
             augment_time->append(f.augment);
             bytes_read->add(static_cast<double>(f.bytes_read));
           }
           if (pin_time) pin_time->append(f.pin);
           if (peak_pinned) peak_pinned->add(static_cast<double>(f.peak_pinned));
           max_outstanding.add(static_cast<double>(f.max_outstanding_seen));
           if (startup_time) startup_time->append(f.worker_startup);
           if (starts) starts->add(f.worker_starts);
           if (ipc_time) ipc_time->append(f.ipc);
           if (shm_bytes) shm_bytes->add(static_cast<double>(f.peak_shm));
           if (worker_pss && f.worker_pss > 0) worker_pss->add(f.worker_pss);
           if (worker_rss && f.worker_rss > 0) worker_rss->add(f.worker_rss);
           if (f.main_pss > 0) main_pss.add(f.main_pss);
           max_outstanding_seen = std::max(max_outstanding_seen, f.max_outstanding_seen);
           max_reorder = std::max(max_reorder, f.max_reorder);
           if (p.verify && !f.problem.empty() && problem.empty()) problem = f.problem;
           verified = verified && (!p.verify || f.verified);
           return sps;
         }});

    const auto& cal = pinbench::loader::calibrate_cpu_work();
    r.extra["batch_bytes"] =
        pinbench::loader::batch_bytes(p.spec.batch_size, p.dataset.sample_bytes);
    r.extra["steps_per_run"] = run.steps_per_run();
    r.extra["max_outstanding_bound"] =
        p.spec.num_workers > 0 ? pinbench::loader::max_outstanding(p.spec) : 1;
    r.extra["max_outstanding_seen"] = max_outstanding_seen;
    r.extra["max_reorder_buffered"] = max_reorder;
    r.extra["worker_method"] =
        !workers    ? "none (built in the consuming thread)"
        : processes ? (p.spec.persistent_workers ? "process (fork; persistent_workers)"
                                                 : "process (fork; started every epoch)")
                    : "thread";
    if (const auto* src = run.data().jpeg(); src != nullptr) describe_images(*src, p, r);
    r.extra["numa"] = numa_json(numa.record());
    r.extra["cpu_work"] = {{"ns_per_unit", cal.ns_per_unit},
                           {"units_per_sample", run.data().units_per_sample()}};
    if (run.pool() != nullptr) {
      const auto st = run.pool()->stats();
      r.extra["pinned_pool"] = {{"mode", std::string(run.pool()->name())},
                                {"host_allocs", st.host_allocs},
                                {"reuses", st.reuses},
                                {"waits", st.waits},
                                {"reserved_bytes", st.reserved_bytes}};
    }
    r.extra["timing"] =
        "samples_per_s, epoch_time: host clock from the start of the run (workers are started "
        "inside it, as iter() does) to the last step's compute "
        "done; gpu_busy: compute-stream busy time (events) over the run's span on the device";
    if (p.verify) {
      r.extra["verify_note"] =
          "order and exactly-once checked on headers copied back from the device; the last "
          "batch's bytes compared in full";
      // Each run verified itself as it was sampled: what they found is recorded, even when
      // interrupted (without failing the case then).
      measure::record_verification(r, problem, verified);
    }
    return r;
  }

  [[nodiscard]] std::string verdict(const result::scenario_result& s,
                                    device::platform_kind /*kind*/) const override {
    return kinds::loader::verdict(s);
  }
};

}  // namespace

namespace {

// Process workers beside thread workers in one scenario: the best of each, and what processes
// cost (their medians over the process cases): start-up per epoch, IPC per batch, memory per
// worker. "" when the scenario does not hold both.
// A case id without the parts that name its workers: cases with the same rest are compared.
std::string without_workers(const std::string& id) {
  std::string rest;
  std::size_t from = 0;
  while (from <= id.size()) {
    const std::size_t comma = std::min(id.find(',', from), id.size());
    const std::string part = id.substr(from, comma - from);
    if (!part.starts_with("worker_method=") && !part.starts_with("num_workers=") && !part.empty())
      rest += (rest.empty() ? "" : ",") + part;
    from = comma + 1;
  }
  return rest;
}

// Thread workers against process workers, like with like (the cases that differ only in their
// workers), with what processes cost: start-up per epoch, IPC per batch, memory per worker.
std::string worker_method_verdict(const result::scenario_result& s) {
  struct best {
    double sps = 0;
    const result::case_result* c = nullptr;
  };
  std::map<std::string, std::pair<best, best>> groups;  // rest of the id -> (threads, processes)
  std::vector<double> startup, ipc, pss;
  const auto median_of = [](const result::case_result& c, std::string_view metric) {
    const result::metric* m = c.find(metric);
    return m != nullptr && !m->samples.empty() ? m->summarize().median : -1.0;
  };
  for (const auto& c : s.cases) {
    // Cases with workers only: without them both methods are the same main-thread loader.
    if (c.status != result::case_status::ok || c.find("worker_starts") == nullptr) continue;
    const double sps = median_of(c, "samples_per_s");
    auto& [threads, processes] = groups[without_workers(c.id)];
    const bool process = c.find("ipc_time") != nullptr;  // only process workers declare it
    best& b = process ? processes : threads;
    if (sps > b.sps) b = {sps, &c};
    if (!process) continue;
    if (const double v = median_of(c, "worker_startup_time"); v >= 0) startup.push_back(v);
    if (const double v = median_of(c, "ipc_time"); v >= 0) ipc.push_back(v);
    if (const double v = median_of(c, "worker_pss_bytes"); v >= 0) pss.push_back(v);
  }
  std::string compared;
  for (const auto& [rest, pair] : groups) {
    const auto& [threads, processes] = pair;
    if (threads.c == nullptr || processes.c == nullptr) continue;
    const auto workers = [](const result::case_result* c) {
      return fmt::format("{} workers", c->params.value(param::num_workers, 0));
    };
    compared += fmt::format(
        "{}{}processes {:.0f} samples/s at best ({}), threads {:.0f} ({}): {:.2f}x",
        compared.empty() ? "" : "; ", rest.empty() ? "" : rest + ": ", processes.sps,
        workers(processes.c), threads.sps, workers(threads.c), processes.sps / threads.sps);
  }
  if (compared.empty()) return {};
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const std::string cost_startup = startup.empty() ? "-" : format_duration_ns(median(startup));
  const std::string cost_ipc = ipc.empty() ? "-" : format_duration_ns(median(ipc));
  const std::string cost_memory =
      pss.empty() ? "-" : format_bytes(static_cast<std::uint64_t>(median(pss)));
  return fmt::format(
      "worker processes (PyTorch's) against threads: {}; what processes cost (medians over their "
      "cases): start-up {} per epoch, IPC {} per batch, {} PSS per worker",
      compared, cost_startup, cost_ipc, cost_memory);
}

}  // namespace

std::string verdict(const result::scenario_result& s) {
  struct point {
    const result::case_result* c;
    double sps, busy;
    bool has_busy;
  };
  std::vector<point> pts;
  for (const auto& c : s.cases) {
    if (c.status != result::case_status::ok) continue;
    const result::metric* sps = c.find("samples_per_s");
    if (sps == nullptr || sps->samples.empty()) continue;
    const result::metric* busy = c.find("gpu_busy");
    const bool has_busy = busy != nullptr && !busy->samples.empty();
    pts.push_back({&c, sps->summarize().median, has_busy ? busy->summarize().median : 0, has_busy});
  }
  if (pts.empty()) return {};
  const auto name = [](const result::case_result* c) {
    return c->id.empty() ? std::string("default") : c->id;
  };
  if (std::string v = worker_method_verdict(s); !v.empty()) return v;
  const auto pct = [](double f) { return fmt::format("{:.0f}%", f * 100); };
  const auto rate = [](double v) { return fmt::format("{:.0f} samples/s", v); };
  const auto fastest = std::max_element(
      pts.begin(), pts.end(), [](const point& a, const point& b) { return a.sps < b.sps; });
  const bool all_busy =
      std::all_of(pts.begin(), pts.end(), [](const point& p) { return p.has_busy; });
  if (!all_busy) {
    std::string v = fmt::format("fastest: {} at {}", name(fastest->c), rate(fastest->sps));
    // A jpeg pipeline: how far the best case is from the worst, and where a sample's time goes.
    if (const result::metric* decode = fastest->c->find("decode_time");
        decode != nullptr && !decode->samples.empty()) {
      const auto slowest = std::min_element(
          pts.begin(), pts.end(), [](const point& a, const point& b) { return a.sps < b.sps; });
      if (slowest != fastest)
        v += fmt::format(", {:.2f}x {}", fastest->sps / slowest->sps, name(slowest->c));
      const result::metric* augment = fastest->c->find("augment_time");
      const result::metric* read = fastest->c->find("read_time");
      const auto median = [](const result::metric* m) {
        return m != nullptr && !m->samples.empty() ? format_duration_ns(m->summarize().median)
                                                   : std::string("-");
      };
      v += fmt::format("; per sample (median): read {}, decode {}, augment {}", median(read),
                       median(decode), median(augment));
    }
    return v;
  }

  const auto idlest = std::min_element(
      pts.begin(), pts.end(), [](const point& a, const point& b) { return a.busy < b.busy; });
  const auto busiest = std::max_element(pts.begin(), pts.end(), [](const point& a, const point& b) {
    return a.busy < b.busy || (a.busy == b.busy && a.sps < b.sps);
  });
  constexpr double busy_enough = 0.9;
  if (idlest->busy >= busy_enough)
    return fmt::format(
        "compute-bound: the device was busy at least {} of the time in every case; "
        "fastest: {} at {}",
        pct(idlest->busy), name(fastest->c), rate(fastest->sps));
  if (pts.size() == 1)
    return fmt::format("data-bound: the device waited {} of the time ({})", pct(1 - idlest->busy),
                       rate(idlest->sps));
  return fmt::format("data-bound at {}: the device waited {} of the time; {} reaches {} busy ({})",
                     name(idlest->c), pct(1 - idlest->busy), name(busiest->c), pct(busiest->busy),
                     rate(busiest->sps));
}

std::unique_ptr<measure::engine> make_engine() {
  return std::make_unique<loader_engine>();
}

}  // namespace pinbench::kinds::loader
