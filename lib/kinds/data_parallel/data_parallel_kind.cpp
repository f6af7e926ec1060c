// Kind `data_parallel` (one model trained over several devices, DataParallel vs
// DistributedDataParallel): its params and their rules, its engine, table columns and charts.
#include "kinds/data_parallel/data_parallel_kind.hpp"

#include "core/units.hpp"
#include "kinds/data_parallel/data_parallel_engine.hpp"
#include "kinds/data_parallel/data_parallel_params.hpp"

namespace pinbench::kinds::data_parallel {

kind_spec describe() {
  // The defaults keep a host-backend step well under a second (tens of ms) yet large enough
  // that device 0's extra memory under dp and ddp's overlap show.
  return {.kind = kind_name,
          .help =
              "one training step over several devices, as torch.nn.DataParallel (dp) or "
              "DistributedDataParallel (ddp) runs it: step time, samples/s, communication time and "
              "how much backward hid, and each device's peak memory",
          .params =
              {
                  mode_choice.spec(
                      "dp: one process scatters the batch, replicates the model from device "
                      "0 every step, gathers outputs and reduces gradients on device 0; "
                      "ddp: every device keeps its model and all-reduces gradients in "
                      "buckets while backward runs"),
                  bounded("devices", param_type::integer, 2, 0, false, 1024,
                          "devices to train on (count; 0 = every device this process can drive; "
                          "more than it can drive: skipped)"),
                  bounded("batch_size", param_type::integer, 64, 1, false, 1e7,
                          "samples per step, the whole batch over every device (count)"),
                  bounded("sample_bytes", param_type::size, 64_KiB, 0, true,
                          static_cast<double>(1ull << 32), "input bytes per sample (size)"),
                  bounded("output_bytes", param_type::size, 64_KiB, 0, false,
                          static_cast<double>(1ull << 32),
                          "output bytes per sample: what dp gathers on device 0 (size)"),
                  bounded("activation_bytes", param_type::size, 256_KiB, 0, false,
                          static_cast<double>(1ull << 34),
                          "activation bytes per sample, held from forward until backward (size)"),
                  bounded("parameter_bytes", param_type::size, 64_MiB, 0, true,
                          static_cast<double>(1ull << 40),
                          "model size; the gradients are as big (size, a multiple of 4: float32)"),
                  bounded("bucket_bytes", param_type::size, 25_MiB, 0, true,
                          static_cast<double>(1ull << 40),
                          "ddp: gradients per all-reduce bucket, DDP's bucket_cap_mb (size, a "
                          "multiple of 4)"),
                  bounded("compute_per_batch", param_type::duration, 30'000'000, 0, false, 1e11,
                          "forward + backward of the whole batch on one device; each device runs "
                          "its share, a third forward and two thirds backward (duration)"),
                  boolean("pin_memory", true,
                          "the host batch is page-locked (true) or pageable (false)"),
                  boolean("verify", true,
                          "after sampling, one step with known values: ddp's all-reduced gradients "
                          "on every device, dp's replicated parameters and reduced gradients"),
              },
          .parse_case = parse_params,
          .make_engine = make_engine,
          .headlines = {{"step_time", true},
                        {"samples_per_s", true},
                        {"comm_time", true},
                        {"device0_extra_memory", true},
                        {"comm_overlap", false}},
          .figures = [](const result::scenario_result& s, const std::string& id_prefix) {
            return chart::sweep_charts(
                s, id_prefix,
                {{"samples-per-s", "samples_per_s", "devices"},
                 {"device0-extra-memory", "device0_extra_memory", "devices"}});
          }};
}

}  // namespace pinbench::kinds::data_parallel
