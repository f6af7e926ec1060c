// Image sets: the cache folder's location, synthetic pictures (deterministic, photo-sized
// JPEGs), generated sets (ImageFolder layout, made once and reused, deterministic, nothing left
// behind on Ctrl-C, a clear error when the cache cannot be written) and users' folders read in
// torchvision's ImageFolder order without writing into them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "image/image_set.hpp"
#include "image/jpeg.hpp"
#include "scratch_dir.hpp"
#include "support.hpp"

using namespace pinbench;
using namespace pinbench::image;
namespace fs = std::filesystem;
using pinbench::testing::read_binary;
using pinbench::testing::scratch_dir;

namespace {

/// Sets (or, with nullopt, unsets) an environment variable for its lifetime.
class env_override {
 public:
  env_override(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) {
      ::setenv(name_.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ~env_override() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  env_override(const env_override&) = delete;
  env_override& operator=(const env_override&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

/// Clears the interrupt flag however the test ends.
struct interrupt_reset {
  interrupt_reset() = default;
  ~interrupt_reset() { clear_interrupt(); }
  interrupt_reset(const interrupt_reset&) = delete;
  interrupt_reset& operator=(const interrupt_reset&) = delete;
};

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

generated_spec small_spec(std::uint64_t seed) {
  generated_spec spec;
  spec.images = 12;
  spec.min_width = 64;
  spec.max_width = 96;
  spec.min_height = 48;
  spec.max_height = 72;
  spec.quality = 85;
  spec.classes = 3;
  spec.seed = seed;
  return spec;
}

/// Every path under `root` with its size and modification time: what "unchanged" means.
std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> snapshot(
    const fs::path& root) {
  std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> out;
  out[root.string()] = {0, fs::last_write_time(root)};
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    out[entry.path().string()] = {entry.is_regular_file() ? entry.file_size() : 0,
                                  entry.last_write_time()};
  }
  return out;
}

std::string relative(const image_entry& entry, const fs::path& root) {
  return entry.path.lexically_relative(root).generic_string();
}

}  // namespace

TEST_CASE("image set: the cache root follows the environment", "[image][image_set]") {
  {
    const env_override cache("PINBENCH_CACHE_DIR", "/somewhere/cache");
    CHECK(cache_root() == fs::path("/somewhere/cache"));
  }
  const env_override cache("PINBENCH_CACHE_DIR", std::nullopt);
  {
    const env_override xdg("XDG_CACHE_HOME", "/xdg");
    CHECK(cache_root() == fs::path("/xdg/pinbench"));
  }
  const env_override xdg("XDG_CACHE_HOME", std::nullopt);
  {
    const env_override home("HOME", "/home/someone");
    CHECK(cache_root() == fs::path("/home/someone/.cache/pinbench"));
  }
  const env_override home("HOME", std::nullopt);
  const env_override tmp("TMPDIR", "/scratch");
  CHECK(cache_root() == fs::path("/scratch/pinbench-cache"));
}

TEST_CASE("image set: the generated folder is named by the whole spec", "[image][image_set]") {
  const env_override cache("PINBENCH_CACHE_DIR", "/cache");
  const generated_spec spec = small_spec(1);
  const fs::path dir = generated_dir(spec);
  CHECK(dir.parent_path() == fs::path("/cache/images"));
  const std::string name = dir.filename().string();
  CHECK(name.size() == 16);
  CHECK(name.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(generated_dir(small_spec(1)) == dir);

  // Every field counts.
  std::vector<generated_spec> variants(8, spec);
  variants[0].images += 1;
  variants[1].min_width += 1;
  variants[2].max_width += 1;
  variants[3].min_height += 1;
  variants[4].max_height += 1;
  variants[5].quality += 1;
  variants[6].classes += 1;
  variants[7].seed += 1;
  std::vector<fs::path> dirs{dir};
  for (const generated_spec& variant : variants) dirs.push_back(generated_dir(variant));
  std::sort(dirs.begin(), dirs.end());
  CHECK(std::adjacent_find(dirs.begin(), dirs.end()) == dirs.end());
}

TEST_CASE("image set: synthetic pictures are deterministic and compress like photographs",
          "[image][image_set]") {
  const rgb_image a = synthesize_image(500, 375, 11);
  CHECK(a.width == 500);
  CHECK(a.height == 375);
  REQUIRE(a.pixels.size() == a.bytes());
  CHECK(synthesize_image(500, 375, 11).pixels == a.pixels);
  CHECK(synthesize_image(500, 375, 12).pixels != a.pixels);

  // ImageNet's JPEGs (about 500 x 375) average about 110 KB: a synthetic one at quality 90
  // must be in the same range, neither a flat picture nor pure noise.
  std::size_t total = 0;
  constexpr int samples = 4;
  for (std::uint64_t seed = 0; seed < samples; ++seed) {
    const std::size_t size = encode_jpeg(synthesize_image(500, 375, seed), 90).size();
    INFO("seed " << seed << ": " << size << " bytes");
    CHECK(size > 40000);
    CHECK(size < 200000);
    total += size;
  }
  CHECK(total / samples > 60000);
  CHECK(total / samples < 160000);

  // Odd and tiny sizes work too.
  const rgb_image tiny = synthesize_image(1, 1, 5);
  CHECK(tiny.pixels.size() == 3);
  CHECK(synthesize_image(333, 7, 5).pixels.size() == 333u * 7 * 3);
  CHECK_THROWS_AS(synthesize_image(0, 10, 5), image_error);
}

TEST_CASE("image set: a generated set is an ImageFolder, made once, deterministic",
          "[image][image_set]") {
  const scratch_dir cache_dir("image-set-generated");
  const env_override cache("PINBENCH_CACHE_DIR", cache_dir.path().string());
  const generated_spec spec = small_spec(1);

  const image_list list = ensure_generated(spec);
  CHECK(list.generated);
  CHECK(list.root == generated_dir(spec));
  REQUIRE(list.files.size() == spec.images);
  CHECK(fs::is_regular_file(list.root / ".complete"));

  // class_000 .. class_002 only, image i in class i % 3, in ImageFolder order.
  std::vector<std::string> folders;
  for (const auto& entry : fs::directory_iterator(list.root)) {
    if (entry.is_directory()) folders.push_back(entry.path().filename().string());
  }
  std::sort(folders.begin(), folders.end());
  CHECK(folders == std::vector<std::string>{"class_000", "class_001", "class_002"});
  std::vector<std::string> expected;
  for (int c = 0; c < 3; ++c) {
    for (std::uint64_t i = static_cast<std::uint64_t>(c); i < spec.images; i += 3) {
      std::string number = std::to_string(i);
      number.insert(0, 6 - number.size(), '0');
      expected.push_back("class_00" + std::to_string(c) + "/img_" + number + ".jpg");
    }
  }
  std::uint64_t bytes = 0;
  for (std::size_t k = 0; k < list.files.size(); ++k) {
    const image_entry& entry = list.files[k];
    CHECK(relative(entry, list.root) == expected[k]);
    CHECK(entry.label == static_cast<int>(k / 4));
    bytes += fs::file_size(entry.path);
    // Sizes drawn in the ranges; each file decodes.
    const std::vector<std::byte> file = read_binary(entry.path);
    const jpeg_header header = read_jpeg_header(file);
    CHECK(header.width >= spec.min_width);
    CHECK(header.width <= spec.max_width);
    CHECK(header.height >= spec.min_height);
    CHECK(header.height <= spec.max_height);
    rgb_image img;
    CHECK_NOTHROW(decode_jpeg(file, img));
  }
  CHECK(list.total_bytes == bytes);

  // Not all of one size: the sizes are drawn per image.
  std::vector<int> widths;
  for (const image_entry& entry : list.files)
    widths.push_back(read_jpeg_header(read_binary(entry.path)).width);
  std::sort(widths.begin(), widths.end());
  CHECK(std::unique(widths.begin(), widths.end()) - widths.begin() > 3);

  // A second call reuses the set: the same list, no file rewritten, no temporary left over.
  const auto before = snapshot(list.root);
  const image_list again = ensure_generated(spec);
  CHECK(again.root == list.root);
  CHECK(again.total_bytes == list.total_bytes);
  REQUIRE(again.files.size() == list.files.size());
  for (std::size_t k = 0; k < list.files.size(); ++k) {
    CHECK(again.files[k].path == list.files[k].path);
    CHECK(again.files[k].label == list.files[k].label);
  }
  CHECK(snapshot(list.root) == before);
  std::vector<std::string> in_images;
  for (const auto& entry : fs::directory_iterator(cache_dir.path() / "images")) {
    in_images.push_back(entry.path().filename().string());
  }
  CHECK(in_images == std::vector<std::string>{list.root.filename().string()});

  // Made again from nothing, the set is byte for byte the same.
  std::vector<std::vector<std::byte>> first_files;
  for (const image_entry& entry : list.files) first_files.push_back(read_binary(entry.path));
  fs::remove_all(list.root);
  const image_list remade = ensure_generated(spec);
  REQUIRE(remade.files.size() == first_files.size());
  for (std::size_t k = 0; k < first_files.size(); ++k) {
    CHECK(read_binary(remade.files[k].path) == first_files[k]);
  }

  // Another seed: another folder, other pictures.
  const image_list other = ensure_generated(small_spec(2));
  CHECK(other.root != list.root);
  REQUIRE(other.files.size() == spec.images);
  CHECK(read_binary(other.files[0].path) != first_files[0]);
}

TEST_CASE("image set: a spec that describes no images is an input error", "[image][image_set]") {
  const scratch_dir cache_dir("image-set-bad-spec");
  const env_override cache("PINBENCH_CACHE_DIR", cache_dir.path().string());
  generated_spec spec = small_spec(1);
  spec.images = 0;
  CHECK_THROWS_AS(ensure_generated(spec), input_error);
  spec = small_spec(1);
  spec.min_width = spec.max_width + 1;
  CHECK_THROWS_AS(ensure_generated(spec), input_error);
  spec = small_spec(1);
  spec.quality = 0;
  CHECK_THROWS_AS(ensure_generated(spec), input_error);
  spec = small_spec(1);
  spec.classes = 0;
  CHECK_THROWS_AS(ensure_generated(spec), input_error);
  CHECK_FALSE(fs::exists(cache_dir.path() / "images"));
}

TEST_CASE("image set: a damaged cached set is reported, not used", "[image][image_set]") {
  const scratch_dir cache_dir("image-set-damaged");
  const env_override cache("PINBENCH_CACHE_DIR", cache_dir.path().string());
  const generated_spec spec = small_spec(5);
  const image_list list = ensure_generated(spec);

  fs::remove(list.files[4].path);
  CHECK_THROWS_WITH(ensure_generated(spec),
                    Catch::Contains(list.root.string()) && Catch::Contains("11 of 12 images"));

  write_text(list.files[4].path, "back");
  write_text(list.root / ".complete", "made by something else\n");
  CHECK_THROWS_WITH(ensure_generated(spec), Catch::Contains("other parameters"));
  CHECK_THROWS_AS(ensure_generated(spec), environment_error);
}

TEST_CASE("image set: Ctrl-C during generation leaves nothing behind", "[image][image_set]") {
  const scratch_dir cache_dir("image-set-interrupt");
  const env_override cache("PINBENCH_CACHE_DIR", cache_dir.path().string());
  const interrupt_reset reset;
  request_interrupt();
  CHECK_THROWS_AS(ensure_generated(small_spec(3)), interrupted_error);
  clear_interrupt();
  CHECK(fs::is_empty(cache_dir.path() / "images"));  // no set, no temporary folder

  // Afterwards the set is made as usual.
  CHECK(ensure_generated(small_spec(3)).files.size() == 12);
}

TEST_CASE("image set: a cache that cannot be written is an environment error naming it",
          "[image][image_set]") {
  const scratch_dir scratch("image-set-unwritable");
  // A file where the cache folder's parent should be: no folder can be made under it, even as
  // root (who may write anywhere else).
  write_text(scratch.path() / "file", "not a folder");
  const fs::path cache_path = scratch.path() / "file" / "cache";
  const env_override cache("PINBENCH_CACHE_DIR", cache_path.string());
  try {
    (void)ensure_generated(small_spec(4));
    FAIL("no environment_error");
  } catch (const environment_error& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains((cache_path / "images").string()));
    CHECK_THAT(message, Catch::Contains("Not a directory"));
  }
}

TEST_CASE("image set: a user's folder is read in ImageFolder order", "[image][image_set]") {
  const scratch_dir scratch("image-set-scan");
  const fs::path root = scratch.path() / "data";
  write_text(root / "b_class" / "z.JPG", "zz");
  write_text(root / "b_class" / "a.jpeg", "aaa");
  write_text(root / "b_class" / "notes.txt", "not an image");
  write_text(root / "b_class" / "sub" / "c.jpg", "cccc");
  write_text(root / "b_class" / "sub" / "deep" / "f.jpg", "ffffff");
  // os.walk's folders are sorted by path: ".../sub" < ".../sub-2" < ".../sub/deep" ('-' < '/').
  write_text(root / "b_class" / "sub-2" / "d.Jpeg", "d");
  write_text(root / "a_class" / "2.jpg", "22");
  write_text(root / "a_class" / "10.jpg", "1010");
  write_text(root / "a_class" / "x.png", "png");
  fs::create_directories(root / "c_empty");
  write_text(root / "d_class" / "e.jpg", "eeeee");
  write_text(root / "loose.jpg", "not in a class folder");
  const auto before = snapshot(root);

  const image_list list = scan_image_folder(root, 0, "scenario.json", "datasets[0].path");
  CHECK_FALSE(list.generated);
  CHECK(list.root == root);
  std::vector<std::string> names;
  std::vector<int> labels;
  for (const image_entry& entry : list.files) {
    names.push_back(relative(entry, root));
    labels.push_back(entry.label);
  }
  CHECK(names == std::vector<std::string>{"a_class/10.jpg", "a_class/2.jpg", "b_class/a.jpeg",
                                          "b_class/z.JPG", "b_class/sub/c.jpg",
                                          "b_class/sub-2/d.Jpeg", "b_class/sub/deep/f.jpg",
                                          "d_class/e.jpg"});
  // The empty class folder still takes its index, as in torchvision's class_to_idx.
  CHECK(labels == std::vector<int>{0, 0, 1, 1, 1, 1, 1, 3});
  CHECK(list.total_bytes == 4 + 2 + 3 + 2 + 4 + 1 + 6 + 5);

  const image_list limited = scan_image_folder(root, 3, "scenario.json", "datasets[0].path");
  REQUIRE(limited.files.size() == 3);
  CHECK(relative(limited.files[2], root) == "b_class/a.jpeg");
  CHECK(limited.total_bytes == 4 + 2 + 3);

  CHECK(snapshot(root) == before);  // nothing written, not even a timestamp changed
}

TEST_CASE("image set: a missing, empty or wrong folder is an input error at its JSON path",
          "[image][image_set]") {
  const scratch_dir scratch("image-set-scan-errors");
  const auto message_of = [](const fs::path& dir) -> std::string {
    try {
      (void)scan_image_folder(dir, 0, "scenario.json", "datasets[0].path");
    } catch (const input_error& e) {
      CHECK(e.file() == "scenario.json");
      CHECK(e.json_path() == "datasets[0].path");
      return e.what();
    }
    return "(no input_error)";
  };
  const std::string prefix =
      "scenario.json: datasets[0].path: expected an existing folder of "
      "JPEG images (ImageFolder layout: one subfolder per class), got \"";

  const fs::path missing = scratch.path() / "missing";
  CHECK(message_of(missing) == prefix + missing.string() + "\": no such folder");
  CHECK_FALSE(fs::exists(missing));

  const fs::path file = scratch.path() / "file.jpg";
  write_text(file, "a file");
  CHECK(message_of(file) == prefix + file.string() + "\": not a folder");

  const fs::path empty = scratch.path() / "empty";
  fs::create_directories(empty);
  CHECK_THAT(message_of(empty),
             Catch::StartsWith(prefix + empty.string() + "\"") &&
                 Catch::Contains("holds no .jpg/.jpeg file in class subfolders"));
  CHECK(fs::is_empty(empty));

  // Images at the top and images of another type only: still nothing ImageFolder would read.
  const fs::path flat = scratch.path() / "flat";
  write_text(flat / "a.jpg", "x");
  write_text(flat / "class" / "b.png", "x");
  CHECK_THAT(message_of(flat), Catch::Contains("holds no .jpg/.jpeg file in class subfolders"));
}
