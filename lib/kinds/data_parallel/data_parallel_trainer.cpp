// What the two data-parallel steps share: the split of batch and work, the host batch, and the
// known values that verification writes and checks.
#include "kinds/data_parallel/data_parallel_trainer.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::kinds::data_parallel {

layout make_layout(const data_parallel_params& p, int devices) {
  if (devices > p.batch_size)
    throw input_error(fmt::format("batch_size {} gives no sample to some of the {} devices",
                                  p.batch_size, devices));
  layout l;
  l.devices = devices;
  std::uint64_t first = 0;
  for (int k = 0; k < devices; ++k) {
    const int shard = p.batch_size / devices + (k < p.batch_size % devices ? 1 : 0);
    l.shard.push_back(shard);
    l.first_sample.push_back(first);
    first += static_cast<std::uint64_t>(shard);
    const double share = static_cast<double>(p.compute_per_batch_ns) * shard / p.batch_size;
    const auto forward = static_cast<std::int64_t>(share / 3);
    l.forward_ns.push_back(forward);
    l.backward_ns.push_back(static_cast<std::int64_t>(share) - forward);
  }
  for (std::uint64_t done = 0; done < p.parameter_bytes; done += p.bucket_bytes)
    l.buckets.push_back(std::min(p.bucket_bytes, p.parameter_bytes - done));
  return l;
}

std::vector<std::unique_ptr<device::host_buffer>> make_host_batch(const data_parallel_params& p,
                                                                  const layout& l,
                                                                  device_set& devices) {
  std::vector<std::unique_ptr<device::host_buffer>> shards;
  for (int k = 0; k < l.devices; ++k) {
    const std::size_t bytes = static_cast<std::size_t>(l.shard[k]) * p.sample_bytes;
    auto& shard = shards.emplace_back(devices[k]->dev().alloc_host(
        bytes, p.pin_memory ? device::host_kind::pinned : device::host_kind::pageable));
    // 0x3f3f3f3f is the float 0.747: whatever later reuses these bytes as floats sums them fast.
    std::memset(shard->data(), 0x3f, bytes);
  }
  return shards;
}

// Halves and small integers: every sum over up to a few thousand devices is exact in float.
float gradient_value(int device, std::size_t i) noexcept {
  return static_cast<float>(device + 1) + static_cast<float>(i % 13) * 0.5f;
}

float gradient_sum(int devices, std::size_t i) noexcept {
  const auto n = static_cast<float>(devices);
  return n * (n + 1) / 2 + n * static_cast<float>(i % 13) * 0.5f;
}

float parameter_value(std::size_t i) noexcept {
  return static_cast<float>(i % 7) + 0.25f;
}

// Through pinned memory written and read in place: a pageable copy is staged chunk by chunk, and
// every extra buffer costs page faults; verification should not weigh on a run.
std::vector<std::unique_ptr<device::host_buffer>> make_staging(device_set& devices,
                                                               std::size_t bytes) {
  std::vector<std::unique_ptr<device::host_buffer>> out;
  for (auto& d : devices) out.push_back(d->dev().alloc_host(bytes, device::host_kind::pinned));
  return out;
}

void upload(device_slot& d, device::host_buffer& staging, std::byte* dst, std::size_t bytes,
            const std::function<float(std::size_t)>& fn) {
  float* const values = as_floats(staging.data());
  for (std::size_t i = 0; i < bytes / sizeof(float); ++i) values[i] = fn(i);
  d.dev().copy_async(dst, staging.data(), bytes, device::copy_dir::h2d, d.stream());
  d.dev().synchronize(d.stream());
}

std::string check(device_slot& d, device::host_buffer& staging, const std::byte* src,
                  std::size_t bytes, const std::string& what,
                  const std::function<float(std::size_t)>& expected) {
  d.dev().copy_async(staging.data(), src, bytes, device::copy_dir::d2h, d.stream());
  d.dev().synchronize(d.stream());
  const float* const values = as_floats(staging.data());
  for (std::size_t i = 0; i < bytes / sizeof(float); ++i)
    if (values[i] != expected(i))
      return fmt::format("{}: element {} is {}, expected {}", what, i, values[i], expected(i));
  return {};
}

}  // namespace pinbench::kinds::data_parallel
