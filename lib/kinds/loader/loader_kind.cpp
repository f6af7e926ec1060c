// Kind `loader` (a DataLoader feeding the device): its params and their rules, its engine, table
// columns and charts.
#include "kinds/loader/loader_kind.hpp"

#include "core/units.hpp"
#include "image/jpeg.hpp"
#include "kinds/loader/loader_engine.hpp"
#include "kinds/loader/loader_params.hpp"

namespace pinbench::kinds::loader {

kind_spec describe() {
  return {
      .kind = kind_name,
      .help =
          "a DataLoader feeding the device: workers build batches with real CPU work, a pin "
          "stage, copies and device compute per step; reports samples/s and whether the device "
          "waited for data",
      .params =
          {
              bounded(param::samples, param_type::integer, 2048, 1, false, 1e9,
                      "samples in the dataset, per epoch (count; jpeg with dataset.dir: at "
                      "most the folder's images)"),
              bounded(param::sample_bytes, param_type::size, 128_KiB, 0, true,
                      static_cast<double>(1ull << 30), "bytes per sample (size)"),
              bounded(param::cpu_per_sample, param_type::duration, 100'000, 0, false, 1e10,
                      "real CPU work per sample, calibrated on this CPU (duration; 0 = none)"),
              source_choice.spec(
                  "memory: samples copied out of an in-memory block; file: pread from a "
                  "file pinbench writes (page cache and I/O are real); jpeg: JPEG files "
                  "read, decoded (libjpeg-turbo) and augmented as torchvision's "
                  "ImageNet recipe does"),
              cache_choice.spec(
                  "file, jpeg: warm keeps the page cache; cold drops the files' pages "
                  "before every epoch (posix_fadvise)"),
              text(param::dir, "",
                   "file: the directory the dataset file is written to (\"\" = $TMPDIR or "
                   "/tmp); jpeg: an ImageFolder of the user's JPEGs, read as they are (\"\" = "
                   "images pinbench generates into its cache)"),
              bounded("dataset.images", param_type::integer, 0, 0, false, 1e7,
                      "jpeg, generated: distinct images, read in turn (count; 0 = one per "
                      "sample)"),
              bounded("dataset.min_width", param_type::integer, 400, 8, false, 8192,
                      "jpeg, generated: image widths are drawn from min_width..max_width "
                      "(pixels)"),
              bounded("dataset.max_width", param_type::integer, 600, 8, false, 8192,
                      "jpeg, generated: see min_width (pixels)"),
              bounded("dataset.min_height", param_type::integer, 300, 8, false, 8192,
                      "jpeg, generated: image heights are drawn from min_height..max_height "
                      "(pixels)"),
              bounded("dataset.max_height", param_type::integer, 450, 8, false, 8192,
                      "jpeg, generated: see min_height (pixels)"),
              bounded("dataset.quality", param_type::integer, 90, 1, false, 100,
                      "jpeg, generated: JPEG quality (1-100)"),
              bounded(param::crop, param_type::integer, 224, 8, false, 4096,
                      "jpeg: RandomResizedCrop's output size (pixels, square)"),
              output_choice.spec("jpeg: float32 = ToTensor + Normalize (ImageNet mean/std), CHW; "
                                 "uint8 = the 8-bit pixels, CHW"),
              bounded("dataset.max_pixels", param_type::integer, image::default_max_pixels, 1,
                      false, static_cast<double>(image::max_pixels_limit),
                      "jpeg: an image whose header declares more pixels (width x height) is "
                      "refused before it is decoded; a worker's RGB buffer takes 3 bytes per "
                      "pixel (count; at most 2^28)"),
              boolean("dataset.skip_corrupt", false,
                      "jpeg: a file that does not decode is counted and its sample left zero, "
                      "instead of failing the case"),
              bounded("dataset.burst_every", param_type::integer, 0, 0, false, 1e12,
                      "bursty cost: every this many samples a burst starts (count; 0 = none)"),
              bounded("dataset.burst_length", param_type::integer, 0, 0, false, 1e12,
                      "bursty cost: samples per burst (count, at most burst_every)"),
              bounded("dataset.burst_factor", param_type::number, 1.0, 1, false, 1e4,
                      "bursty cost: a sample in a burst costs this many times cpu_per_sample"),
              bounded("dataset.fail_at_sample", param_type::integer, -1, -1, false, 1e12,
                      "fault switch: producing this sample throws, as a failing worker would "
                      "(index; -1 = never)"),
              bounded("dataset.hang_at_sample", param_type::integer, -1, -1, false, 1e12,
                      "fault switch: producing this sample never finishes, as a worker stuck "
                      "in a lock or a read (index; -1 = never; see timeout)"),
              bounded(param::batch_size, param_type::integer, 64, 1, false, 1e6,
                      "samples per batch (count)"),
              bounded(param::num_workers, param_type::integer, 2, 0, false, 256,
                      "workers building batches (count; 0 = built in the consuming thread)"),
              worker_method_choice.spec(
                  "process: forked worker processes, each batch collated into a "
                  "shared-memory segment (/dev/shm) and handed over a Unix socket, as "
                  "PyTorch's DataLoader workers; thread: worker threads of this process, "
                  "batches in its own memory"),
              boolean(param::persistent_workers, false,
                      "process: keep the worker processes from one epoch to the next; false "
                      "starts them at every epoch, as PyTorch does"),
              bounded("timeout", param_type::duration, 0, 0, false, 3.6e12,
                      "with workers: how long to wait for one batch before the case fails, as "
                      "DataLoader(timeout=) (duration; 0 = for ever, as PyTorch)"),
              bounded(param::prefetch_factor, param_type::integer, 2, 1, false, 64,
                      "batches outstanding per worker, as PyTorch counts them (count)"),
              boolean(param::pin_memory, true,
                      "copy each batch into page-locked memory before the device copy"),
              pin_mode_choice.spec(
                  "per_batch: one pin thread, blocks from a caching host allocator; "
                  "ring: preallocated pinned slots reused under events"),
              bounded("ring_slots", param_type::integer, 0, 0, false, 4096,
                      "ring: slots (count; 0 = num_workers x prefetch_factor + 1)"),
              bounded("pinned_limit", param_type::size, std::uint64_t{0}, 0, false,
                      static_cast<double>(1ull << 44),
                      "page-locked memory the pin stage may hold (size; 0 = no limit)"),
              boolean(param::non_blocking, true,
                      "copy on a side stream that the compute stream waits for, without "
                      "holding the consumer; false: copy, then wait"),
              boolean("shuffle", false, "a new sample order every epoch (seeded)"),
              boolean("drop_last", false, "drop the last batch when it is not full"),
              bounded(param::epochs, param_type::integer, 1, 1, false, 1e6,
                      "epochs per timed run (count)"),
              bounded(param::batches, param_type::integer, 0, 0, false, 1e9,
                      "steps per timed run at most (count; 0 = every batch of every epoch)"),
              bounded(param::compute_per_batch, param_type::duration, 2'000'000, 0, false, 1e11,
                      "device work per step, on the compute stream (duration; 0 = none)"),
              boolean("verify", true,
                      "check order and exactly-once delivery on data copied back from the "
                      "device (adds one small device-to-device copy per step)"),
          },
      .parse_case = parse_params,
      .make_engine = make_engine,
      .headlines = {{"samples_per_s", false},
                    {"gpu_busy", false},
                    {"data_wait", false},
                    {"copy_call_time", false},
                    {"h2d_time", false},
                    {"pin_time", false},
                    {"peak_pinned_bytes", false},
                    {"decode_time", false},
                    {"augment_time", false}},
      .figures = [](const result::scenario_result& s, const std::string& id_prefix) {
        return chart::sweep_charts(
            s, id_prefix, {{"samples-per-s", "samples_per_s", ""}, {"gpu-busy", "gpu_busy", ""}});
      }};
}

}  // namespace pinbench::kinds::loader
