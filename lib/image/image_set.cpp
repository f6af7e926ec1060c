#include "image/image_set.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numbers>
#include <random>
#include <string>
#include <system_error>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/pattern.hpp"

namespace pinbench::image {

namespace fs = std::filesystem;

namespace {

// Part of every generated set's hash: bump it whenever synthesize_image, the naming or the
// layout changes, so that sets made by an older pinbench are not taken for current ones.
constexpr std::uint64_t generator_version = 1;

constexpr const char* marker_name = ".complete";

/// A splitmix64-style stream (a counter through mix64): small, fast, the same everywhere.
class split_rng {
 public:
  explicit split_rng(std::uint64_t seed) noexcept : state_(seed) {}
  std::uint64_t next() noexcept {
    state_ += 0x9E3779B97F4A7C15ull;
    return mix64(state_);
  }
  /// Uniform integer in [lo, hi] (both included); the modulo bias is irrelevant here.
  int integer(int lo, int hi) noexcept {
    const auto span = static_cast<std::uint64_t>(static_cast<std::int64_t>(hi) - lo + 1);
    return lo + static_cast<int>(next() % span);
  }

 private:
  std::uint64_t state_;
};

// ---- synthesize_image ---------------------------------------------------------------------------
// Everything per pixel is integer arithmetic on tables (values in 1/16 of a level), so that the
// pixels do not depend on the compiler's floating-point contraction or the CPU's vector width.
// The work is done a row at a time in plain loops over arrays, which the compiler vectorizes.

constexpr int frac_bits = 4;  // fixed point: 16 = one level

/// A smooth random field: a lattice of random values `period` pixels apart, interpolated with a
/// smoothstep. Evaluated a row at a time: the vertical interpolation once per lattice column,
/// then the horizontal one across each lattice cell.
class value_noise {
 public:
  value_noise(int width, int height, int period, int amplitude, split_rng& rng)
      : width_(width),
        period_(period),
        columns_(width / period + 2),
        lattice_(static_cast<std::size_t>(columns_) *
                 static_cast<std::size_t>(height / period + 2)),
        row_(static_cast<std::size_t>(columns_)),
        weight_(static_cast<std::size_t>(period)) {
    for (int& v : lattice_) v = rng.integer(-amplitude, amplitude);
    for (int t = 0; t < period; ++t) weight_[static_cast<std::size_t>(t)] = smoothstep(t);
  }

  /// The field along row y, into out[0, width).
  void row(int y, int* out) {
    const int cell = y / period_;
    const int weight = smoothstep(y % period_);
    const int* above =
        &lattice_[static_cast<std::size_t>(cell) * static_cast<std::size_t>(columns_)];
    const int* below = above + columns_;
    for (int j = 0; j < columns_; ++j) {
      row_[static_cast<std::size_t>(j)] = above[j] + (((below[j] - above[j]) * weight) >> 8);
    }
    const int* w = weight_.data();
    for (int x0 = 0, j = 0; x0 < width_; x0 += period_, ++j) {
      const int left = row_[static_cast<std::size_t>(j)];
      const int step = row_[static_cast<std::size_t>(j) + 1] - left;
      const int n = std::min(period_, width_ - x0);
      for (int t = 0; t < n; ++t) out[x0 + t] = left + ((step * w[t]) >> 8);
    }
  }

 private:
  /// 3t^2 - 2t^3 for t = offset / period, in 1/256.
  [[nodiscard]] int smoothstep(int offset) const noexcept {
    const int t = (offset << 8) / period_;
    return (t * t * (3 * 256 - 2 * t)) >> 16;
  }

  int width_;
  int period_;
  int columns_;
  std::vector<int> lattice_;
  std::vector<int> row_;
  std::vector<int> weight_;
};

/// sin(2 pi cycles t / length + phase) * amplitude for t in [0, length), rounded.
std::vector<int> sine_table(int length, double cycles, double phase, double amplitude) {
  std::vector<int> table(static_cast<std::size_t>(length));
  const double step = 2.0 * std::numbers::pi * cycles / length;
  for (int t = 0; t < length; ++t) {
    table[static_cast<std::size_t>(t)] =
        static_cast<int>(std::lround(amplitude * std::sin(step * t + phase)));
  }
  return table;
}

using rgb_value = std::array<int, 3>;  // in 1/16 level

rgb_value random_colour(split_rng& rng) {
  // A dominant brightness with a moderate tint, as most real surfaces are.
  const int grey = rng.integer(20, 235);
  rgb_value colour;
  for (int& c : colour) c = std::clamp(grey + rng.integer(-45, 45), 0, 255) << frac_bits;
  return colour;
}

/// Three planes of width x height values in 1/16 level: the picture before texture and noise.
/// 16 bits are plenty (levels run to 4080) and halve the memory traffic.
struct planes {
  int width, height;
  std::vector<std::int16_t> values;

  planes(int w, int h)
      : width(w),
        height(h),
        values(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3) {}
  [[nodiscard]] std::int16_t* row(int channel, int y) noexcept {
    return &values[(static_cast<std::size_t>(channel) * static_cast<std::size_t>(height) +
                    static_cast<std::size_t>(y)) *
                   static_cast<std::size_t>(width)];
  }
};

/// Fills a rectangle or an ellipse of half-size (half_w, half_h) around (cx, cy), opaque or
/// half-transparent, with hard edges.
void paint_shape(planes& picture, int cx, int cy, int half_w, int half_h, bool ellipse,
                 const rgb_value& colour, bool half) {
  const int y0 = std::max(0, cy - half_h);
  const int y1 = std::min(picture.height, cy + half_h + 1);
  for (int y = y0; y < y1; ++y) {
    int reach = half_w;
    if (ellipse) {  // one square root per row gives the row's span
      const double dy = static_cast<double>(y - cy) / half_h;
      reach = static_cast<int>(half_w * std::sqrt(std::max(0.0, 1.0 - dy * dy)));
    }
    const int x0 = std::max(0, cx - reach);
    const int x1 = std::min(picture.width, cx + reach + 1);
    for (int c = 0; c < 3; ++c) {
      std::int16_t* p = picture.row(c, y);
      const auto value = static_cast<std::int16_t>(colour[static_cast<std::size_t>(c)]);
      if (half) {
        for (int x = x0; x < x1; ++x) p[x] = static_cast<std::int16_t>((p[x] + value) >> 1);
      } else {
        std::fill(p + x0, p + std::max(x0, x1), value);
      }
    }
  }
}

/// Objects with hard edges: a few large ones, then many small ones whose sizes follow a power
/// law (a "dead leaves" picture, whose spectrum falls off as a photograph's does). A small
/// one takes the colour under it, changed a little: detail on a surface, not confetti.
void paint_shapes(planes& picture, split_rng& rng) {
  const int width = picture.width;
  const int height = picture.height;
  const int smaller = std::min(width, height);
  const int large = 4 + rng.integer(0, 6);
  for (int s = 0; s < large; ++s) {
    const rgb_value colour = random_colour(rng);
    const int half_w = std::max(1, rng.integer(smaller / 12, smaller / 3));
    const int half_h = std::max(1, rng.integer(smaller / 12, smaller / 3));
    const int cx = rng.integer(0, width - 1);
    const int cy = rng.integer(0, height - 1);
    const bool ellipse = rng.integer(0, 1) == 0;
    paint_shape(picture, cx, cy, half_w, half_h, ellipse, colour, rng.integer(0, 3) == 0);
  }
  constexpr int pixels_per_leaf = 40;
  constexpr int leaf_contrast = 50;  // levels, at most
  const double min_radius = 1.5;
  const double max_radius = std::max(2.0, smaller / 10.0);
  const double ratio = (min_radius / max_radius) * (min_radius / max_radius);
  const auto leaves = static_cast<long long>(width) * height / pixels_per_leaf;
  for (long long s = 0; s < leaves; ++s) {
    // The inverse of the distribution function of a density proportional to r^-3.
    const double u = static_cast<double>(rng.next() >> 11) / 9007199254740992.0;  // [0, 1)
    const double radius = min_radius / std::sqrt(1.0 - u * (1.0 - ratio));
    const double aspect = 0.5 + static_cast<double>(rng.integer(0, 100)) / 100.0;
    const int half_w = std::max(1, static_cast<int>(radius * aspect));
    const int half_h = std::max(1, static_cast<int>(radius / aspect));
    const int cx = rng.integer(0, width - 1);
    const int cy = rng.integer(0, height - 1);
    const int shift = rng.integer(-leaf_contrast, leaf_contrast) << frac_bits;
    rgb_value colour;
    for (int c = 0; c < 3; ++c) {
      // Kept near the visible range: leaves painted on leaves must not wander off.
      colour[static_cast<std::size_t>(c)] =
          std::clamp(picture.row(c, cy)[cx] + shift + (rng.integer(-10, 10) << frac_bits),
                     -32 << frac_bits, 288 << frac_bits);
    }
    const bool ellipse = rng.integer(0, 1) == 0;
    paint_shape(picture, cx, cy, half_w, half_h, ellipse, colour, false);
  }
}

// ---- files --------------------------------------------------------------------------------------

std::string errno_text(int err) {
  return std::strerror(err);
}

std::string zero_padded(std::uint64_t value, std::size_t digits) {
  std::string text = std::to_string(value);
  if (text.size() < digits) text.insert(0, digits - text.size(), '0');
  return text;
}

std::size_t digits_of(std::uint64_t value) {
  return std::to_string(value).size();
}

bool has_jpeg_extension(const std::string& name) {
  // As torchvision: the lower-cased name ends with the extension (".jpg" alone counts too).
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.ends_with(".jpg") || lower.ends_with(".jpeg");
}

struct listing_problem {
  std::string message;  // empty: the listing succeeded
};

/// Lists `root` as torchvision's ImageFolder does: class folders are its subfolders (following
/// links) sorted by name; each is walked recursively, its folders in the order of their paths
/// and the files of each by name. Stops after `limit` files (0: all). Reports a problem instead
/// of throwing, so that each caller words its own error.
listing_problem list_image_folder(const fs::path& root, std::uint64_t limit, image_list& out) {
  out.root = root;
  out.files.clear();
  out.total_bytes = 0;
  std::error_code ec;
  std::vector<std::string> classes;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code kind_ec;
    if (it->is_directory(kind_ec)) classes.push_back(it->path().filename().string());
  }
  if (ec) return {ec.message()};
  std::sort(classes.begin(), classes.end());

  for (std::size_t label = 0; label < classes.size(); ++label) {
    const fs::path class_dir = root / classes[label];
    // os.walk(followlinks=True), sorted by folder path; a folder met twice (a link loop) is
    // walked once.
    std::vector<fs::path> folders{class_dir};
    std::vector<std::pair<dev_t, ino_t>> seen;
    for (std::size_t next = 0; next < folders.size(); ++next) {
      struct stat info {};
      if (::stat(folders[next].c_str(), &info) != 0) continue;
      const std::pair<dev_t, ino_t> id{info.st_dev, info.st_ino};
      if (std::find(seen.begin(), seen.end(), id) != seen.end()) {
        folders.erase(folders.begin() + static_cast<std::ptrdiff_t>(next--));
        continue;
      }
      seen.push_back(id);
      for (fs::directory_iterator it(folders[next], ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code kind_ec;
        if (it->is_directory(kind_ec)) folders.push_back(it->path());
      }
      if (ec) return {folders[next].string() + ": " + ec.message()};
    }
    std::sort(folders.begin(), folders.end(),
              [](const fs::path& a, const fs::path& b) { return a.native() < b.native(); });

    for (const fs::path& folder : folders) {
      std::vector<std::pair<std::string, std::uint64_t>> names;
      for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code kind_ec;
        const std::string name = it->path().filename().string();
        // Regular files only (links followed): a dangling link or a FIFO is no image.
        if (!has_jpeg_extension(name) || !it->is_regular_file(kind_ec)) continue;
        const std::uintmax_t size = it->file_size(kind_ec);
        if (kind_ec) return {it->path().string() + ": " + kind_ec.message()};
        names.emplace_back(name, static_cast<std::uint64_t>(size));
      }
      if (ec) return {folder.string() + ": " + ec.message()};
      std::sort(names.begin(), names.end());
      for (const auto& [name, size] : names) {
        out.files.push_back({folder / name, static_cast<int>(label)});
        out.total_bytes += size;
        if (limit > 0 && out.files.size() >= limit) return {};
      }
    }
  }
  return {};
}

/// A temporary folder tree removed on scope exit unless released.
class temp_tree {
 public:
  explicit temp_tree(fs::path path) : path_(std::move(path)) {}
  ~temp_tree() {
    if (!path_.empty()) {
      std::error_code ignored;
      fs::remove_all(path_, ignored);
    }
  }
  temp_tree(const temp_tree&) = delete;
  temp_tree& operator=(const temp_tree&) = delete;
  [[nodiscard]] const fs::path& path() const noexcept { return path_; }
  void release() noexcept { path_.clear(); }

 private:
  fs::path path_;
};

void write_whole_file(const fs::path& path, std::span<const std::byte> data) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    throw environment_error("cannot write \"" + path.string() + "\": " + errno_text(errno));
  }
  const std::size_t written = std::fwrite(data.data(), 1, data.size(), file);
  int err = written == data.size() ? 0 : errno;
  if (std::fclose(file) != 0 && err == 0) err = errno;
  if (err != 0 || written != data.size()) {
    throw environment_error("cannot write \"" + path.string() +
                            "\": " + errno_text(err != 0 ? err : EIO));
  }
}

std::string describe(const generated_spec& spec) {
  return "pinbench generated images, generator " + std::to_string(generator_version) + "\nimages " +
         std::to_string(spec.images) + "\nwidth " + std::to_string(spec.min_width) + "-" +
         std::to_string(spec.max_width) + "\nheight " + std::to_string(spec.min_height) + "-" +
         std::to_string(spec.max_height) + "\nquality " + std::to_string(spec.quality) +
         "\nclasses " + std::to_string(spec.classes) + "\nseed " + std::to_string(spec.seed) + "\n";
}

void check_spec(const generated_spec& spec) {
  if (spec.images == 0 || spec.classes < 1 || spec.min_width < 1 ||
      spec.min_width > spec.max_width || spec.min_height < 1 || spec.min_height > spec.max_height ||
      spec.quality < 1 || spec.quality > 100) {
    throw input_error(
        "invalid generated image set: images " + std::to_string(spec.images) + ", width " +
        std::to_string(spec.min_width) + "-" + std::to_string(spec.max_width) + ", height " +
        std::to_string(spec.min_height) + "-" + std::to_string(spec.max_height) + ", quality " +
        std::to_string(spec.quality) + ", classes " + std::to_string(spec.classes));
  }
}

image_list list_generated(const fs::path& dir, const generated_spec& spec) {
  // The marker repeats the spec: a folder of the same name made for another spec (a hash
  // collision, a hand-made copy) is not taken for this one.
  std::ifstream marker(dir / marker_name, std::ios::binary);
  const std::string recorded((std::istreambuf_iterator<char>(marker)),
                             std::istreambuf_iterator<char>());
  if (recorded != describe(spec)) {
    throw environment_error("the cached image set \"" + dir.string() + "\" was made for other " +
                            "parameters (see its " + marker_name +
                            "): remove it and it is made again");
  }
  image_list list;
  const listing_problem problem = list_image_folder(dir, 0, list);
  if (!problem.message.empty() || list.files.size() != spec.images) {
    throw environment_error("the cached image set \"" + dir.string() + "\" is damaged (" +
                            (problem.message.empty() ? std::to_string(list.files.size()) + " of " +
                                                           std::to_string(spec.images) + " images"
                                                     : problem.message) +
                            "): remove it and it is made again");
  }
  list.generated = true;
  return list;
}

std::uint64_t image_seed(const generated_spec& spec, std::uint64_t index) {
  return mix64(mix64(spec.seed ^ 0x5EEDF00DCAFEull) + index);
}

}  // namespace

fs::path cache_root() {
  const auto variable = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? std::string(value) : std::string();
  };
  if (std::string dir = variable("PINBENCH_CACHE_DIR"); !dir.empty()) return dir;
  // The XDG spec ignores a relative XDG_CACHE_HOME.
  if (std::string dir = variable("XDG_CACHE_HOME"); !dir.empty() && dir.front() == '/') {
    return fs::path(dir) / "pinbench";
  }
  if (std::string home = variable("HOME"); !home.empty())
    return fs::path(home) / ".cache" / "pinbench";
  std::string tmp = variable("TMPDIR");
  if (tmp.empty()) tmp = "/tmp";
  return fs::path(tmp) / "pinbench-cache";
}

fs::path generated_dir(const generated_spec& spec) {
  std::uint64_t hash = mix64(generator_version + 0x1A6E5E7ull);
  const auto add = [&hash](std::uint64_t value) {
    hash = mix64(hash ^ mix64(value + 0x9E3779B97F4A7C15ull));
  };
  add(spec.images);
  for (int value : {spec.min_width, spec.max_width, spec.min_height, spec.max_height, spec.quality,
                    spec.classes}) {
    add(static_cast<std::uint64_t>(static_cast<std::int64_t>(value)));
  }
  add(spec.seed);
  static constexpr char hex[] = "0123456789abcdef";
  std::string name(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4) name[static_cast<std::size_t>(i)] = hex[hash & 0xF];
  return cache_root() / "images" / name;
}

rgb_image synthesize_image(int width, int height, std::uint64_t seed) {
  if (width <= 0 || height <= 0 || static_cast<long long>(width) * height > (1LL << 28)) {
    throw image_error("cannot synthesize an image of " + std::to_string(width) + " x " +
                      std::to_string(height));
  }
  split_rng rng(mix64(seed ^ 0x1BADB002ull) + static_cast<std::uint64_t>(width) * 65537u +
                static_cast<std::uint64_t>(height));
  const auto w = static_cast<std::size_t>(width);

  // 1. A base colour with a linear gradient and low-frequency waves (separable products of a
  //    wave along x and one along y, one weight per channel): sky, walls, light falloff.
  const rgb_value start = random_colour(rng);
  constexpr int waves = 3;
  std::array<std::vector<int>, waves> wave_x, wave_y;  // in 1/256
  std::array<rgb_value, waves> wave_weight{};          // in 1/16 level
  for (int k = 0; k < waves; ++k) {
    const auto draw = [&rng](int lo, int hi, double scale) { return rng.integer(lo, hi) * scale; };
    const auto i = static_cast<std::size_t>(k);
    wave_x[i] = sine_table(width, draw(50, 350, 0.01), draw(0, 6283, 0.001), 256);
    wave_y[i] = sine_table(height, draw(50, 350, 0.01), draw(0, 6283, 0.001), 256);
    for (int& weight : wave_weight[i]) weight = rng.integer(-30, 30) << frac_bits;
  }
  std::array<int, 3> slope_x{}, slope_y{};  // in 1/16 level per 64 pixels
  for (std::size_t c = 0; c < 3; ++c) {
    slope_x[c] = rng.integer(-40, 40) * 16 * 64 / std::max(width, 64);
    slope_y[c] = rng.integer(-40, 40) * 16 * 64 / std::max(height, 64);
  }
  // 16-bit factors: the compiler multiplies eight at once (pmaddwd) even on baseline x86-64.
  std::array<std::vector<std::int16_t>, waves> wave_x16;
  for (std::size_t k = 0; k < waves; ++k) wave_x16[k].assign(wave_x[k].begin(), wave_x[k].end());
  std::vector<int> ramp(w);
  planes picture(width, height);
  for (int c = 0; c < 3; ++c) {
    const auto ci = static_cast<std::size_t>(c);
    for (int x = 0; x < width; ++x) ramp[static_cast<std::size_t>(x)] = (slope_x[ci] * x) >> 6;
    for (int y = 0; y < height; ++y) {
      const int row_start = start[ci] + ((slope_y[ci] * y) >> 6);
      std::array<std::int16_t, waves> gain{};  // each wave's weight on this row, in 1/16 level
      for (std::size_t k = 0; k < waves; ++k) {
        gain[k] = static_cast<std::int16_t>(
            (wave_weight[k][ci] * wave_y[k][static_cast<std::size_t>(y)]) >> 8);
      }
      const std::int16_t* wx0 = wave_x16[0].data();
      const std::int16_t* wx1 = wave_x16[1].data();
      const std::int16_t* wx2 = wave_x16[2].data();
      const int* ramp_x = ramp.data();
      std::int16_t* out = picture.row(c, y);
      for (int x = 0; x < width; ++x) {
        out[x] = static_cast<std::int16_t>(
            row_start + ramp_x[x] +
            ((wx0[x] * gain[0] + wx1[x] * gain[1] + wx2[x] * gain[2]) >> 8));
      }
    }
  }

  // 2. Objects with hard edges.
  paint_shapes(picture, rng);

  // 3. Texture (mostly luminance, as in photographs: foliage, fabric, stone), strong in some
  //    regions and faint in others, pixel-sized grain where it is strong, and sensor noise on
  //    each channel.
  value_noise coarse(width, height, 48, 24 << frac_bits, rng);
  value_noise medium(width, height, 10, 24 << frac_bits, rng);
  value_noise fine(width, height, 2, 64 << frac_bits, rng);
  value_noise detail_mask(width, height, 96, 256, rng);  // where the texture is strong
  rgb_value channel_gain{};                              // in 1/256
  for (int& gain : channel_gain) gain = rng.integer(200, 300);
  constexpr int grain_amplitude = 12;  // levels, at most
  constexpr int noise_amplitude = 3;   // levels, at most

  rgb_image img;
  img.width = width;
  img.height = height;
  img.pixels.resize(img.bytes());
  std::vector<int> coarse_row(w), medium_row(w), fine_row(w), mask_row(w), texture(w), value(w);
  // Two random bytes per triangular noise value: one for the grain and three for the channels.
  std::vector<std::uint8_t> noise_bytes(w * 8 + 8);
  std::uint64_t noise_state = rng.next() | 1;
  for (int y = 0; y < height; ++y) {
    for (std::size_t i = 0; i < noise_bytes.size(); i += 8) {  // xorshift64
      noise_state ^= noise_state << 13;
      noise_state ^= noise_state >> 7;
      noise_state ^= noise_state << 17;
      std::memcpy(&noise_bytes[i], &noise_state, 8);
    }
    const std::uint8_t* noise = noise_bytes.data();
    coarse.row(y, coarse_row.data());
    medium.row(y, medium_row.data());
    fine.row(y, fine_row.data());
    detail_mask.row(y, mask_row.data());
    for (std::size_t x = 0; x < w; ++x) {
      const int strength = std::clamp(mask_row[x] + 224, 0, 256);  // in 1/256
      const int grain =
          ((noise[2 * x] + noise[2 * x + 1] - 255) * grain_amplitude) >> (8 - frac_bits);
      texture[x] = coarse_row[x] + (((medium_row[x] + fine_row[x] + grain) * strength) >> 8);
    }
    std::uint8_t* out = &img.pixels[static_cast<std::size_t>(y) * w * 3];
    for (int c = 0; c < 3; ++c) {
      const int gain = channel_gain[static_cast<std::size_t>(c)];
      const std::int16_t* base = picture.row(c, y);
      const std::uint8_t* channel_noise = noise + 2 * w * static_cast<std::size_t>(c + 1);
      for (std::size_t x = 0; x < w; ++x) {
        const int sensor =
            ((channel_noise[2 * x] + channel_noise[2 * x + 1] - 255) * noise_amplitude) >>
            (8 - frac_bits);
        const int v = base[x] + ((texture[x] * gain) >> 8) + sensor;
        value[x] = std::clamp((v + (1 << (frac_bits - 1))) >> frac_bits, 0, 255);
      }
      for (std::size_t x = 0; x < w; ++x)
        out[x * 3 + static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(value[x]);
    }
  }
  return img;
}

image_list ensure_generated(const generated_spec& spec) {
  check_spec(spec);
  const fs::path dir = generated_dir(spec);
  std::error_code ec;
  if (fs::exists(dir / marker_name, ec)) return list_generated(dir, spec);

  const fs::path parent = dir.parent_path();
  fs::create_directories(parent, ec);
  if (ec) {
    throw environment_error("cannot create the image cache folder \"" + parent.string() +
                            "\": " + ec.message());
  }
  // A name no other process picks: the pid, and randomness for two threads of one process.
  std::random_device entropy;
  const std::uint64_t tag = mix64((static_cast<std::uint64_t>(entropy()) << 32) ^ entropy());
  temp_tree temp(dir.string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                 zero_padded(tag % 1000000000ull, 9));
  if (!fs::create_directory(temp.path(), ec) || ec) {
    throw environment_error("cannot write into the image cache folder \"" + parent.string() +
                            "\": " + (ec ? ec.message() : std::string("the name is taken")));
  }

  const std::size_t class_digits =
      std::max<std::size_t>(3, digits_of(static_cast<std::uint64_t>(spec.classes - 1)));
  const std::size_t image_digits = std::max<std::size_t>(6, digits_of(spec.images - 1));
  std::vector<fs::path> class_dirs;
  for (int c = 0; c < spec.classes; ++c) {
    class_dirs.push_back(temp.path() /
                         ("class_" + zero_padded(static_cast<std::uint64_t>(c), class_digits)));
    if (!fs::create_directory(class_dirs.back(), ec) || ec) {
      throw environment_error("cannot create \"" + class_dirs.back().string() +
                              "\": " + ec.message());
    }
  }
  for (std::uint64_t i = 0; i < spec.images; ++i) {
    if (interrupt_requested()) throw interrupted_error();  // temp removes the partial set
    split_rng size_rng(mix64(spec.seed + 0xD1CEull) ^ mix64(i));
    const int width = size_rng.integer(spec.min_width, spec.max_width);
    const int height = size_rng.integer(spec.min_height, spec.max_height);
    const rgb_image img = synthesize_image(width, height, image_seed(spec, i));
    const std::vector<std::byte> jpeg = encode_jpeg(img, spec.quality);
    const fs::path& class_dir =
        class_dirs[static_cast<std::size_t>(i % static_cast<std::uint64_t>(spec.classes))];
    write_whole_file(class_dir / ("img_" + zero_padded(i, image_digits) + ".jpg"), jpeg);
  }
  const std::string marker = describe(spec);
  write_whole_file(temp.path() / marker_name,
                   std::as_bytes(std::span<const char>(marker.data(), marker.size())));

  if (::rename(temp.path().c_str(), dir.c_str()) == 0) {
    temp.release();
  } else {
    const int err = errno;
    // Another process finished the same set first: its copy is as good as ours (and ours is
    // removed with `temp`).
    if (!fs::exists(dir / marker_name, ec)) {
      throw environment_error(
          "cannot move the generated images into \"" + dir.string() + "\": " + errno_text(err) +
          (fs::exists(dir, ec)
               ? " (a folder without \"" + std::string(marker_name) + "\" is in the way: remove it)"
               : ""));
    }
  }
  return list_generated(dir, spec);
}

namespace {
std::atomic<std::uint64_t> folder_scans{0};
}  // namespace

std::uint64_t image_folder_scans() noexcept {
  return folder_scans.load();
}

image_list scan_image_folder(const fs::path& dir, std::uint64_t limit, const std::string& source,
                             const std::string& json_path) {
  folder_scans.fetch_add(1);
  const std::string expected =
      "expected an existing folder of JPEG images (ImageFolder layout: one subfolder per class), "
      "got \"" +
      dir.string() + "\": ";
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (!fs::exists(status)) {
    throw input_error(
        source, json_path,
        expected +
            (ec && ec != std::errc::no_such_file_or_directory ? ec.message() : "no such folder"));
  }
  if (!fs::is_directory(status)) throw input_error(source, json_path, expected + "not a folder");
  image_list list;
  const listing_problem problem = list_image_folder(dir, limit, list);
  if (!problem.message.empty()) throw input_error(source, json_path, expected + problem.message);
  if (list.files.empty()) {
    throw input_error(source, json_path, expected + "holds no .jpg/.jpeg file in class subfolders");
  }
  list.generated = false;
  return list;
}

}  // namespace pinbench::image
