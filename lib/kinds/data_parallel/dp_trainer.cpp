// torch.nn.DataParallel's step: one process drives every device. Device 0 holds the model; each
// step scatters the batch, replicates the parameters from device 0 to the others, runs forward,
// gathers the outputs on device 0, runs backward, and reduce-adds every replica's gradients onto
// device 0. Each phase waits for the one before, so nothing hides the copies; and device 0
// carries the gathered outputs and the gradients it receives on top of what the others hold.
#include <functional>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "kinds/data_parallel/data_parallel_trainer.hpp"

namespace pinbench::kinds::data_parallel {

namespace {

class dp_trainer final : public trainer {
 public:
  dp_trainer(const data_parallel_params& p, device_set devices)
      : p_(p),
        layout_(make_layout(p, static_cast<int>(devices.size()))),
        devices_(std::move(devices)),
        // The host can add gradients only where device memory is host memory; the backend
        // interface has no add kernel for a real GPU.
        sum_on_host_(devices_[0]->dev().emulated()) {
    batch_ = make_host_batch(p_, layout_, devices_);
    device_slot& d0 = *devices_[0];
    // The module, allocated once. Values do not change the timing (GPUs add any float at full
    // speed; the host backend's fresh device memory is zeroed, so its sums see no denormal).
    params_ = d0.alloc(p_.parameter_bytes);
    grads_ = d0.alloc(p_.parameter_bytes);
  }

  step_times step() override { return run_step(nullptr); }

  std::string verify() override {
    std::string wrong;
    (void)run_step(&wrong);
    return wrong;
  }

  holdings device0_holdings() const override {
    const auto shard = static_cast<std::uint64_t>(layout_.shard[0]);
    const auto others = static_cast<std::uint64_t>(layout_.devices - 1);
    return {{"parameters", p_.parameter_bytes},
            {"gradients", p_.parameter_bytes},
            {"input_shard", shard * p_.sample_bytes},
            {"activations", shard * p_.activation_bytes},
            {"outputs", shard * p_.output_bytes},
            {"gathered_outputs", static_cast<std::uint64_t>(p_.batch_size) * p_.output_bytes},
            {"received_gradients", others * p_.parameter_bytes}};
  }

  std::string comm_path() const override {
    return "copies: scatter host->device, replicate and gather and reduce device->device";
  }

  std::string limitation() const override {
    if (sum_on_host_) return {};
    return "the reduce copies every replica's gradients to device 0 but does not add them: the "
           "backend has no add kernel (the copies are timed; the additions, a pass over device "
           "0's memory, are not; verification checks the replicated parameters only)";
  }

  device_set& devices() override { return devices_; }

 private:
  // Waits for every device's stream; returns the host-clock time since `since`.
  double wait_all(std::int64_t since) {
    for (auto& d : devices_) d->dev().synchronize(d->stream());
    return static_cast<double>(now_ns() - since);
  }

  // One step; with `wrong`, known values go in and what came out is checked into it.
  step_times run_step(std::string* wrong) {
    const int n = layout_.devices;
    const std::uint64_t P = p_.parameter_bytes;
    device_slot& d0 = *devices_[0];
    step_times t;
    const std::int64_t t0 = now_ns();
    std::vector<std::unique_ptr<device::host_buffer>> staging;
    if (wrong != nullptr) staging = make_staging(devices_, P);
    const auto note = [&](std::string problem) {
      if (wrong != nullptr && wrong->empty()) *wrong = std::move(problem);
    };

    // Scatter: each device's shard of the batch, host to device, on its own stream.
    std::int64_t c0 = now_ns();
    std::vector<tensor> inputs;
    for (int k = 0; k < n; ++k) {
      device_slot& d = *devices_[k];
      const std::size_t bytes = static_cast<std::size_t>(layout_.shard[k]) * p_.sample_bytes;
      inputs.push_back(d.alloc(bytes));
      d.dev().copy_async(inputs.back().data(), batch_[k]->data(), bytes, device::copy_dir::h2d,
                         d.stream());
    }
    t.comm_ns += wait_all(c0);

    // Replicate: fresh replica parameters on every other device each step, copied from device
    // 0 on the destination's stream.
    if (wrong != nullptr) upload(d0, *staging[0], params_.data(), P, parameter_value);
    c0 = now_ns();
    std::vector<tensor> replica_params(n);
    for (int k = 1; k < n; ++k) {
      device_slot& d = *devices_[k];
      replica_params[k] = d.alloc(P);
      d.dev().copy_async(replica_params[k].data(), params_.data(), P, device::copy_dir::d2d,
                         d.stream());
    }
    t.comm_ns += wait_all(c0);
    if (wrong != nullptr)
      for (int k = 1; k < n; ++k)
        note(check(*devices_[k], *staging[k], replica_params[k].data(), P,
                   fmt::format("device {}'s replicated parameters", k), parameter_value));

    // Forward on every device.
    std::vector<tensor> activations, outputs;
    for (int k = 0; k < n; ++k) {
      device_slot& d = *devices_[k];
      const auto shard = static_cast<std::uint64_t>(layout_.shard[k]);
      activations.push_back(d.alloc(shard * p_.activation_bytes));
      outputs.push_back(d.alloc(shard * p_.output_bytes));
      d.dev().launch_compute(d.stream(), layout_.forward_ns[k]);
    }
    (void)wait_all(t0);

    // Gather: every device's outputs into one batch-sized tensor on device 0.
    c0 = now_ns();
    tensor gathered = d0.alloc(static_cast<std::size_t>(p_.batch_size) * p_.output_bytes);
    for (int k = 0; k < n; ++k)
      d0.dev().copy_async(gathered.data() + layout_.first_sample[k] * p_.output_bytes,
                          outputs[k].data(), outputs[k].bytes(), device::copy_dir::d2d,
                          d0.stream());
    d0.dev().synchronize(d0.stream());
    t.comm_ns += static_cast<double>(now_ns() - c0);

    // Backward on every device: the replicas' gradients are new each step; device 0's go into
    // the module's own. Autograd frees the activations as backward consumes them.
    std::vector<tensor> replica_grads(n);
    for (int k = 1; k < n; ++k) replica_grads[k] = devices_[k]->alloc(P);
    for (int k = 0; k < n; ++k)
      devices_[k]->dev().launch_compute(devices_[k]->stream(), layout_.backward_ns[k]);
    (void)wait_all(t0);
    activations.clear();
    if (wrong != nullptr)
      for (int k = 0; k < n; ++k)
        upload(*devices_[k], *staging[k], k == 0 ? grads_.data() : replica_grads[k].data(), P,
               [k](std::size_t i) { return gradient_value(k, i); });

    // Reduce-add: device 0 receives every replica's gradients into buffers of its own, then
    // adds them onto its gradients.
    c0 = now_ns();
    std::vector<tensor> received;
    for (int k = 1; k < n; ++k) {
      received.push_back(d0.alloc(P));
      d0.dev().copy_async(received.back().data(), replica_grads[k].data(), P, device::copy_dir::d2d,
                          d0.stream());
    }
    d0.dev().synchronize(d0.stream());
    t.comm_ns += static_cast<double>(now_ns() - c0);
    if (sum_on_host_) {
      float* sum = as_floats(grads_.data());
      const std::size_t count = P / sizeof(float);
      for (auto& r : received) {
        const float* add = as_floats(r.data());
        for (std::size_t i = 0; i < count; ++i) sum[i] += add[i];
      }
    }
    if (wrong != nullptr && sum_on_host_)
      note(check(d0, *staging[0], grads_.data(), P, "device 0's reduced gradients",
                 [n](std::size_t i) { return gradient_sum(n, i); }));

    t.step_ns = static_cast<double>(now_ns() - t0);
    t.exposed_comm_ns = t.comm_ns;  // every copy waits for, and is waited for by, device work
    return t;
  }

  data_parallel_params p_;
  layout layout_;
  device_set devices_;  // first: destroyed after everything allocated on it
  bool sum_on_host_;
  std::vector<std::unique_ptr<device::host_buffer>> batch_;
  tensor params_, grads_;  // the module on device 0
};

}  // namespace

std::unique_ptr<trainer> make_dp_trainer(const data_parallel_params& p, device_set devices) {
  return std::make_unique<dp_trainer>(p, std::move(devices));
}

}  // namespace pinbench::kinds::data_parallel
