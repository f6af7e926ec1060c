// Kind `loader`'s params: read once per case, with the rules across them.
#include "kinds/loader/loader_params.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "image/image_set.hpp"
#include "measure/input_cache.hpp"

namespace pinbench::kinds::loader {

namespace {

using nlohmann::json;

// The loader's ring must hold every batch that can be pinned and not yet handed over, plus the
// one the consumer is copying: with fewer slots the pin thread could wait for a slot held by a
// batch queued behind the one the consumer waits for.
void check_loader_case(const json& params, const std::string& source) {
  const auto workers = params.at(param::num_workers).get<std::int64_t>();
  const auto prefetch = params.at(param::prefetch_factor).get<std::int64_t>();
  const auto slots = params.at("ring_slots").get<std::int64_t>();
  const std::int64_t needed = workers > 0 ? workers * prefetch + 1 : 1;
  if (slots != 0 && slots < needed)
    throw input_error(source, "params.ring_slots",
                      fmt::format("expected 0 (auto) or at least {} (num_workers x prefetch_factor "
                                  "+ 1 = {} x {} + 1), got {}",
                                  needed, workers, prefetch, slots));
  const auto& ds = params.at("dataset");
  for (const char* dim : {"width", "height"}) {
    const auto lo = ds.at(fmt::format("min_{}", dim)).get<std::int64_t>();
    const auto hi = ds.at(fmt::format("max_{}", dim)).get<std::int64_t>();
    if (lo > hi)
      throw input_error(source, fmt::format("params.dataset.max_{}", dim),
                        fmt::format("expected at least dataset.min_{} ({}), got {}", dim, lo, hi));
  }
  if (ds.at("burst_length").get<std::int64_t>() > ds.at("burst_every").get<std::int64_t>())
    throw input_error(source, "params.dataset.burst_length",
                      fmt::format("expected at most dataset.burst_every ({}), got {}",
                                  ds.at("burst_every").get<std::int64_t>(),
                                  ds.at("burst_length").get<std::int64_t>()));
}

loader_params read(const nlohmann::json& p, const std::string& source) {
  loader_params l;
  const auto& d = p.at("dataset");
  l.dataset.samples = d.at("samples").get<std::uint64_t>();
  l.dataset.sample_bytes = d.at("sample_bytes").get<std::size_t>();
  l.dataset.cpu_per_sample_ns = d.at("cpu_per_sample").get<std::int64_t>();
  l.dataset.source = source_choice.parse(p, source);
  l.dataset.cold_cache = cache_choice.parse(p, source) == page_cache::cold;
  l.dataset.dir = d.at("dir").get<std::string>();
  l.dataset.burst_every = d.at("burst_every").get<std::uint64_t>();
  l.dataset.burst_length = d.at("burst_length").get<std::uint64_t>();
  l.dataset.burst_factor = d.at("burst_factor").get<double>();
  l.dataset.fail_at_sample = d.at("fail_at_sample").get<std::int64_t>();
  l.dataset.hang_at_sample = d.at("hang_at_sample").get<std::int64_t>();
  auto& j = l.dataset.jpeg;
  j.generate.images = d.at("images").get<std::uint64_t>();
  j.generate.min_width = d.at("min_width").get<int>();
  j.generate.max_width = d.at("max_width").get<int>();
  j.generate.min_height = d.at("min_height").get<int>();
  j.generate.max_height = d.at("max_height").get<int>();
  j.generate.quality = d.at("quality").get<int>();
  j.crop = d.at("crop").get<int>();
  j.format = output_choice.parse(p, source);
  j.skip_corrupt = d.at("skip_corrupt").get<bool>();
  j.max_pixels = d.at("max_pixels").get<std::uint64_t>();
  if (l.dataset.source == source_kind::jpeg)
    l.dataset.sample_bytes = image::tensor_bytes(j.crop, j.format);
  l.spec.batch_size = p.at(param::batch_size).get<std::size_t>();
  l.spec.num_workers = p.at(param::num_workers).get<int>();
  l.spec.prefetch_factor = p.at(param::prefetch_factor).get<int>();
  l.spec.pin_memory = p.at(param::pin_memory).get<bool>();
  l.spec.shuffle = p.at("shuffle").get<bool>();
  l.spec.drop_last = p.at("drop_last").get<bool>();
  l.spec.method = worker_method_choice.parse(p, source);
  l.spec.persistent_workers = p.at(param::persistent_workers).get<bool>();
  l.spec.timeout_ns = p.at("timeout").get<std::int64_t>();
  l.mode = pin_mode_choice.parse(p, source);
  l.ring_slots = p.at("ring_slots").get<std::size_t>();
  if (l.ring_slots == 0)
    l.ring_slots = l.spec.num_workers > 0 ? pinbench::loader::max_outstanding(l.spec) + 1 : 2;
  l.pinned_limit = p.at("pinned_limit").get<std::size_t>();
  l.non_blocking = p.at(param::non_blocking).get<bool>();
  l.epochs = p.at(param::epochs).get<std::uint64_t>();
  l.batches = p.at(param::batches).get<std::uint64_t>();
  l.compute_ns = p.at(param::compute_per_batch).get<std::int64_t>();
  l.verify = p.at("verify").get<bool>();
  return l;
}

}  // namespace

std::shared_ptr<const measure::case_params> parse_params(const nlohmann::json& params,
                                                         const std::string& source) {
  check_loader_case(params, source);
  loader_params l = read(params, source);
  // A user's image folder is checked now, at validate: a missing or empty one is exit 2 before
  // anything runs. Its listing is kept for the run, made once for every case that reads the
  // same folder up to the same count; the epoch is at most the folder.
  if (l.dataset.source == pinbench::loader::dataset_spec::source_kind::jpeg &&
      !l.dataset.dir.empty()) {
    const std::string dir = l.dataset.dir.string();
    const std::uint64_t limit = l.dataset.samples;
    l.dataset.jpeg.folder = measure::cached_input<image::image_list>(
        fmt::format("image folder\n{}\n{}", dir, limit),
        [&] { return image::scan_image_folder(dir, limit, source, "params.dataset.dir"); });
    l.dataset.samples =
        std::min<std::uint64_t>(l.dataset.samples, l.dataset.jpeg.folder->files.size());
  }
  return std::make_shared<const loader_params>(std::move(l));
}

}  // namespace pinbench::kinds::loader
