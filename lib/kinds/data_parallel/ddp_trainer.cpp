// DistributedDataParallel's step: every device holds the whole model and its gradients, takes
// its own shard of the batch, and all-reduces the gradients bucket by bucket while backward is
// still running (each bucket starts as soon as backward has made it ready on every device).
#include <future>
#include <span>

#include <fmt/format.h>

#include "collective/collective.hpp"
#include "core/clock.hpp"
#include "kinds/data_parallel/data_parallel_trainer.hpp"

namespace pinbench::kinds::data_parallel {

namespace {

// The collectives module, spelled in full: kinds::collective is the kind of that name.
namespace coll = pinbench::collective;

class ddp_trainer final : public trainer {
 public:
  ddp_trainer(const data_parallel_params& p, device_set devices)
      : p_(p),
        layout_(make_layout(p, static_cast<int>(devices.size()))),
        devices_(std::move(devices)) {
    std::vector<device::backend*> backends;
    for (auto& d : devices_) backends.push_back(&d->dev());
    group_ = coll::make_local_group(std::span<device::backend* const>(backends));
    batch_ = make_host_batch(p_, layout_, devices_);
    for (auto& d : devices_) {
      // Allocated once, as a module's parameters and their .grad are. Their values do not
      // change the timing: GPUs add any float at full speed, and the host backend's fresh
      // device memory is zeroed (no denormal to slow the host ring's sums).
      params_.push_back(d->alloc(p_.parameter_bytes));
      grads_.push_back(d->alloc(p_.parameter_bytes));
      auto& ready = bucket_ready_.emplace_back();
      for (std::size_t b = 0; b < layout_.buckets.size(); ++b)
        ready.push_back(d->dev().create_event());
    }
  }

  step_times step() override {
    const std::int64_t t0 = now_ns();
    const int n = layout_.devices;
    std::vector<tensor> inputs, activations, outputs;
    for (int k = 0; k < n; ++k) {
      device_slot& d = *devices_[k];
      const auto shard = static_cast<std::uint64_t>(layout_.shard[k]);
      // Its own shard of the batch (each DDP process loads its own), then forward, then
      // backward one bucket's worth at a time, marking each bucket ready.
      inputs.push_back(d.alloc(shard * p_.sample_bytes));
      d.dev().copy_async(inputs.back().data(), batch_[k]->data(), shard * p_.sample_bytes,
                         device::copy_dir::h2d, d.stream());
      activations.push_back(d.alloc(shard * p_.activation_bytes));
      outputs.push_back(d.alloc(shard * p_.output_bytes));
      d.dev().launch_compute(d.stream(), layout_.forward_ns[k]);
      for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
        const double share =
            static_cast<double>(layout_.buckets[b]) / static_cast<double>(p_.parameter_bytes);
        d.dev().launch_compute(
            d.stream(),
            static_cast<std::int64_t>(static_cast<double>(layout_.backward_ns[k]) * share));
        d.dev().record(*bucket_ready_[k][b], d.stream());
      }
    }

    // The communication thread (DDP's reducer hands ready buckets to NCCL's stream): it starts
    // once everything is queued, so that it never waits on an event not yet recorded.
    std::future<double> comm = std::async(std::launch::async, [this, n] {
      double in_all_reduce_ns = 0;
      std::uint64_t offset = 0;
      for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
        for (int k = 0; k < n; ++k) devices_[k]->dev().synchronize(*bucket_ready_[k][b]);
        std::vector<coll::rank_buffers> buffers;
        for (int k = 0; k < n; ++k) {
          std::byte* bucket = grads_[k].data() + offset;
          buffers.push_back({bucket, bucket});  // in place, as DDP reduces its bucket views
        }
        const auto shape =
            coll::shape_of(coll::op::all_reduce, coll::dtype::float32, layout_.buckets[b], n);
        const std::int64_t c0 = now_ns();
        group_->run(coll::op::all_reduce, coll::dtype::float32, shape, buffers);
        in_all_reduce_ns += static_cast<double>(now_ns() - c0);
        offset += layout_.buckets[b];
      }
      return in_all_reduce_ns;
    });

    for (auto& d : devices_) d->dev().synchronize(d->stream());
    const std::int64_t backward_done = now_ns();
    step_times t;
    t.comm_ns = comm.get();
    const std::int64_t end = now_ns();
    t.step_ns = static_cast<double>(end - t0);
    // What the all-reduces took beyond backward: the part of them nothing hid.
    t.exposed_comm_ns = std::min(t.comm_ns, static_cast<double>(end - backward_done));
    return t;
  }

  std::string verify() override {
    const int n = layout_.devices;
    auto staging = make_staging(devices_, p_.parameter_bytes);
    for (int k = 0; k < n; ++k)
      upload(*devices_[k], *staging[k], grads_[k].data(), p_.parameter_bytes,
             [k](std::size_t i) { return gradient_value(k, i); });
    (void)step();
    for (int k = 0; k < n; ++k) {
      std::string wrong = check(*devices_[k], *staging[k], grads_[k].data(), p_.parameter_bytes,
                                fmt::format("device {}'s all-reduced gradients", k),
                                [n](std::size_t i) { return gradient_sum(n, i); });
      if (!wrong.empty()) return wrong;
    }
    return {};
  }

  holdings device0_holdings() const override {
    const auto shard = static_cast<std::uint64_t>(layout_.shard[0]);
    return {{"parameters", p_.parameter_bytes},
            {"gradients", p_.parameter_bytes},
            {"input_shard", shard * p_.sample_bytes},
            {"activations", shard * p_.activation_bytes},
            {"outputs", shard * p_.output_bytes}};
  }

  std::string comm_path() const override {
    return fmt::format("all-reduce of {} bucket(s) through {}", layout_.buckets.size(),
                       group_->describe());
  }

  device_set& devices() override { return devices_; }

 private:
  data_parallel_params p_;
  layout layout_;
  device_set devices_;  // first: destroyed after everything allocated on it
  std::unique_ptr<coll::group> group_;
  std::vector<std::unique_ptr<device::host_buffer>> batch_;
  std::vector<tensor> params_, grads_;
  std::vector<std::vector<std::unique_ptr<device::event>>> bucket_ready_;
};

}  // namespace

std::unique_ptr<trainer> make_ddp_trainer(const data_parallel_params& p, device_set devices) {
  return std::make_unique<ddp_trainer>(p, std::move(devices));
}

}  // namespace pinbench::kinds::data_parallel
