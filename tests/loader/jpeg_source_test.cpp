// The loader's jpeg source: generated images through the whole epoch (every sample once, its
// bytes the same as a fresh decode and transform), per-sample costs, a corrupt file failing the
// worker with its path or counted with skip_corrupt, and the cold-cache path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "image/augment.hpp"
#include "image/image_set.hpp"
#include "image/jpeg.hpp"
#include "loader/dataset.hpp"
#include "loader/jpeg_source.hpp"
#include "loader/loader.hpp"
#include "loader_support.hpp"
#include "support.hpp"

using namespace pinbench;
using namespace pinbench::loader;
using namespace pinbench::loader::testing;
namespace fs = std::filesystem;

namespace {

// PINBENCH_CACHE_DIR pointed at a fresh folder for the test's lifetime, then removed.
class temp_cache {
 public:
  explicit temp_cache(const std::string& tag)
      : path_(fs::temp_directory_path() /
              ("pinbench-jpeg-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
    if (const char* old = std::getenv("PINBENCH_CACHE_DIR")) old_ = old, had_ = true;
    ::setenv("PINBENCH_CACHE_DIR", path_.c_str(), 1);
  }
  ~temp_cache() {
    if (had_)
      ::setenv("PINBENCH_CACHE_DIR", old_.c_str(), 1);
    else
      ::unsetenv("PINBENCH_CACHE_DIR");
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  temp_cache(const temp_cache&) = delete;
  temp_cache& operator=(const temp_cache&) = delete;
  [[nodiscard]] const fs::path& path() const noexcept { return path_; }

 private:
  fs::path path_;
  std::string old_;
  bool had_ = false;
};

// Small images and a small crop: the same code paths at a fraction of the cost (sanitizers).
dataset_spec small_jpeg_spec(std::uint64_t samples, std::uint64_t images,
                             image::tensor_format format = image::tensor_format::float32_chw) {
  dataset_spec spec;
  spec.source = dataset_spec::source_kind::jpeg;
  spec.samples = samples;
  spec.jpeg.generate.images = images;
  spec.jpeg.generate.min_width = 40;
  spec.jpeg.generate.max_width = 72;
  spec.jpeg.generate.min_height = 30;
  spec.jpeg.generate.max_height = 60;
  spec.jpeg.generate.classes = 3;
  spec.jpeg.generate.seed = 5;
  spec.jpeg.crop = 24;
  spec.jpeg.format = format;
  spec.jpeg.seed = 9;
  return spec;
}

}  // namespace

TEST_CASE("jpeg source: the sample is the transform's tensor, the same on every call",
          "[loader][image]") {
  const temp_cache cache("produce");
  for (const auto format : {image::tensor_format::uint8_chw, image::tensor_format::float32_chw}) {
    const dataset data(small_jpeg_spec(20, 7, format));
    REQUIRE(data.jpeg() != nullptr);
    CHECK(data.sample_bytes() == image::tensor_bytes(24, format));
    CHECK(data.jpeg()->images().files.size() == 7);
    CHECK(data.jpeg()->images().generated);
    CHECK(data.jpeg()->images().root.parent_path().parent_path() == cache.path());
    std::vector<std::byte> a(data.sample_bytes()), b(data.sample_bytes()), raw(data.sample_bytes());
    for (const std::uint64_t index : {0u, 6u, 7u, 19u}) {
      CAPTURE(index);
      sample_header ha, hb;
      sample_cost cost;
      data.produce(index, a.data(), ha, &cost);
      data.produce(index, b.data(), hb);
      data.raw_bytes(index, raw.data());
      CHECK(ha.index == index);
      CHECK(ha.checksum != 0);
      CHECK(ha.checksum == hb.checksum);
      CHECK(a == b);
      CHECK(a == raw);
      CHECK(cost.bytes_read == fs::file_size(data.jpeg()->images().files[index % 7].path));
      CHECK(cost.decode_ns > 0);
      CHECK(cost.augment_ns > 0);
      CHECK_FALSE(cost.skipped);
    }
    // Sample 7 reads the same file as sample 0, with its own crop and flip.
    sample_header h0, h7;
    data.produce(0, a.data(), h0);
    data.produce(7, b.data(), h7);
    CHECK(a != b);
  }
}

TEST_CASE("jpeg source: an epoch with workers delivers every sample once, intact, with costs",
          "[loader][image]") {
  const temp_cache cache("epoch");
  auto dev = host_backend();
  const dataset data(small_jpeg_spec(45, 45));
  const int workers = GENERATE(0, 2);
  CAPTURE(workers);
  const loader_spec spec = make_loader_spec(workers, pinning::per_batch, 8, /*shuffle=*/true);
  auto pool = make_pool(pinning::per_batch, *dev, spec, data.sample_bytes());
  std::map<std::uint64_t, int> seen;
  std::size_t costs = 0;
  std::vector<std::byte> want(data.sample_bytes());
  {
    epoch ep(data, spec, 0, *dev, pool.get());
    while (auto b = ep.next()) {
      REQUIRE(b->costs.size() == b->samples);
      costs += b->costs.size();
      const std::byte* bytes = b->data + b->samples * sizeof(sample_header);
      for (std::size_t j = 0; j < b->samples; ++j) {
        const std::uint64_t index = b->headers()[j].index;
        ++seen[index];
        data.raw_bytes(index, want.data());
        CHECK(std::memcmp(want.data(), bytes + j * want.size(), want.size()) == 0);
        CHECK(b->costs[j].bytes_read > 0);
      }
      ep.release(*b, nullptr);
    }
  }
  CHECK(seen.size() == 45);
  CHECK(costs == 45);
  for (const auto& [index, times] : seen) CHECK(times == 1);
}

TEST_CASE("jpeg source: a corrupt file fails with its path, or is counted with skip_corrupt",
          "[loader][image]") {
  const temp_cache cache("corrupt");
  // The user's folder: a copy of a generated set with one file cut short.
  const fs::path folder = cache.path() / "user";
  {
    const dataset made(small_jpeg_spec(6, 6));
    fs::copy(made.jpeg()->images().root, folder, fs::copy_options::recursive);
  }
  const auto count_entries = [&folder] {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::recursive_directory_iterator(folder)) ++n;
    return n;
  };
  const std::size_t entries_before = count_entries();
  const auto listed = image::scan_image_folder(folder, 0, "test.json", "params.dataset.dir");
  REQUIRE(listed.files.size() == 6);
  const fs::path broken = listed.files[2].path;
  fs::resize_file(broken, fs::file_size(broken) / 2);

  dataset_spec spec = small_jpeg_spec(6, 0);
  spec.jpeg.folder = std::make_shared<const image::image_list>(
      image::scan_image_folder(folder, 0, "test.json", "params.dataset.dir"));
  std::vector<std::byte> out(image::tensor_bytes(24, spec.jpeg.format));
  sample_header h;
  {
    const dataset data(spec);
    data.produce(1, out.data(), h);  // a whole file decodes
    try {
      data.produce(2, out.data(), h);
      FAIL("a truncated file decoded");
    } catch (const loader_error& e) {
      const std::string what = e.what();
      CHECK(what.find(broken.string()) != std::string::npos);
    }
  }
  spec.jpeg.skip_corrupt = true;
  const dataset data(spec);
  sample_cost cost;
  data.produce(2, out.data(), h, &cost);
  CHECK(cost.skipped);
  CHECK(h.checksum == 0);
  CHECK(std::all_of(out.begin(), out.end(), [](std::byte b) { return b == std::byte{0}; }));
  CHECK(data.jpeg()->skipped() == 1);
  REQUIRE(data.jpeg()->skipped_files().size() == 1);
  CHECK(data.jpeg()->skipped_files()[0].find(broken.string()) != std::string::npos);
  // Nothing was written into the user's folder.
  CHECK(count_entries() == entries_before);
}

TEST_CASE("jpeg source: an image over dataset.max_pixels fails with its path and both sizes",
          "[loader][image]") {
  const temp_cache cache("budget");
  const fs::path folder = cache.path() / "photos";
  fs::create_directories(folder / "class_a");
  std::vector<std::byte> big = image::encode_jpeg(image::synthesize_image(64, 48, 3), 90);
  REQUIRE(pinbench::testing::declare_jpeg_size(big, 16000, 16000));
  pinbench::testing::write_binary(folder / "class_a" / "big.jpg", big);
  pinbench::testing::write_binary(folder / "class_a" / "small.jpg",
                                  image::encode_jpeg(image::synthesize_image(64, 48, 4), 90));

  dataset_spec spec = small_jpeg_spec(2, 0);
  spec.jpeg.folder = std::make_shared<const image::image_list>(
      image::scan_image_folder(folder, 0, "test.json", "params.dataset.dir"));
  REQUIRE(spec.jpeg.folder->files.size() == 2);
  REQUIRE(spec.jpeg.folder->files[0].path.filename() == "big.jpg");
  CHECK(spec.jpeg.max_pixels == 67108864u);  // the default: 8192 x 8192
  std::vector<std::byte> out(image::tensor_bytes(24, spec.jpeg.format));
  sample_header h;
  const std::string expected = (folder / "class_a" / "big.jpg").string() +
                               ": 16000x16000 = 256000000 pixels, over dataset.max_pixels "
                               "67108864 (raise it to decode this image)";
  {
    const dataset data(spec);
    data.produce(1, out.data(), h);  // the small one decodes
    try {
      data.produce(0, out.data(), h);
      FAIL("a 16000x16000 image was decoded");
    } catch (const loader_error& e) {
      CHECK(std::string(e.what()) == expected);
    }
  }
  // A budget below the small image refuses it too; skip_corrupt counts a refused image.
  spec.jpeg.max_pixels = 64 * 48 - 1;
  spec.jpeg.skip_corrupt = true;
  const dataset data(spec);
  sample_cost cost;
  data.produce(1, out.data(), h, &cost);
  CHECK(cost.skipped);
  REQUIRE(data.jpeg()->skipped_files().size() == 1);
  CHECK(data.jpeg()->skipped_files()[0].find("64x48 = 3072 pixels, over dataset.max_pixels 3071") !=
        std::string::npos);
}

TEST_CASE("jpeg source: cold-cache epochs still read every file", "[loader][image]") {
  const temp_cache cache("cold");
  dataset_spec spec = small_jpeg_spec(10, 10);
  spec.cold_cache = true;
  const dataset data(spec);
  data.prepare_epoch();
  std::vector<std::byte> out(data.sample_bytes());
  sample_header h;
  sample_cost cost;
  data.produce(3, out.data(), h, &cost);
  CHECK(cost.bytes_read == fs::file_size(data.jpeg()->images().files[3].path));
}
