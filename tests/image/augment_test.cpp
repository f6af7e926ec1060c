#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "image/augment.hpp"

using namespace pinbench::image;

namespace {

bool same_box(const crop_box& a, const crop_box& b) {
  return a.left == b.left && a.top == b.top && a.width == b.width && a.height == b.height;
}

bool inside(const crop_box& box, int width, int height) {
  return box.width >= 1 && box.height >= 1 && box.left >= 0 && box.top >= 0 &&
         box.left + box.width <= width && box.top + box.height <= height;
}

rgb_image make_image(int width, int height) {
  rgb_image img;
  img.width = width;
  img.height = height;
  img.pixels.resize(img.bytes());
  return img;
}

rgb_image random_image(int width, int height, std::uint64_t seed) {
  rgb_image img = make_image(width, height);
  sample_rng rng(seed);
  for (auto& p : img.pixels) p = static_cast<std::uint8_t>(rng.next() >> 56);
  return img;
}

std::size_t pixel_index(const rgb_image& img, int x, int y, int c) {
  const auto pixel = static_cast<std::size_t>(y) * static_cast<std::size_t>(img.width) +
                     static_cast<std::size_t>(x);
  return pixel * 3 + static_cast<std::size_t>(c);
}

std::uint8_t& at(rgb_image& img, int x, int y, int c) {
  return img.pixels[pixel_index(img, x, y, c)];
}

std::uint8_t at(const rgb_image& img, int x, int y, int c) {
  return img.pixels[pixel_index(img, x, y, c)];
}

std::vector<std::uint8_t> to_uint8(const rgb_image& img, const crop_box& box, int crop, bool flip,
                                   resize_scratch& scratch) {
  std::vector<std::uint8_t> out(tensor_bytes(crop, tensor_format::uint8_chw));
  resize_to_tensor(img, box, crop, flip, tensor_format::uint8_chw,
                   reinterpret_cast<std::byte*>(out.data()), scratch);
  return out;
}

std::vector<float> to_float(const rgb_image& img, const crop_box& box, int crop, bool flip,
                            resize_scratch& scratch) {
  std::vector<float> out(static_cast<std::size_t>(crop) * static_cast<std::size_t>(crop) * 3);
  resize_to_tensor(img, box, crop, flip, tensor_format::float32_chw,
                   reinterpret_cast<std::byte*>(out.data()), scratch);
  return out;
}

std::size_t chw(int crop, int c, int y, int x) {
  return (static_cast<std::size_t>(c) * static_cast<std::size_t>(crop) +
          static_cast<std::size_t>(y)) *
             static_cast<std::size_t>(crop) +
         static_cast<std::size_t>(x);
}

// ToTensor + Normalize in float32, as torch computes them.
float normalised(int level, int channel) {
  constexpr std::array<float, 3> mean{0.485f, 0.456f, 0.406f};
  constexpr std::array<float, 3> std_dev{0.229f, 0.224f, 0.225f};
  const auto c = static_cast<std::size_t>(channel);
  return (static_cast<float>(level) / 255.0f - mean[c]) / std_dev[c];
}

// Pillow's antialiased bilinear weights, written the plain way: every source pixel of the
// axis weighted by the triangle 1 - |d| (d: distance between centres, in output pixels when
// shrinking), normalised to sum 1.
std::vector<std::vector<double>> reference_weights(int in, int out) {
  const double scale = static_cast<double>(in) / out;
  const double widen = std::max(scale, 1.0);
  std::vector<std::vector<double>> weights(static_cast<std::size_t>(out));
  for (int o = 0; o < out; ++o) {
    auto& w = weights[static_cast<std::size_t>(o)];
    const double centre = (o + 0.5) * scale;
    double sum = 0;
    for (int x = 0; x < in; ++x) {
      const double d = std::abs(x + 0.5 - centre) / widen;
      w.push_back(d < 1 ? 1 - d : 0);
      sum += w.back();
    }
    for (double& v : w) v /= sum;
  }
  return weights;
}

// The resize in double precision, one output pixel at a time, no rounding in between.
std::vector<std::uint8_t> reference_resize(const rgb_image& img, const crop_box& box, int crop,
                                           bool flip) {
  const auto wx = reference_weights(box.width, crop);
  const auto wy = reference_weights(box.height, crop);
  std::vector<std::uint8_t> out(tensor_bytes(crop, tensor_format::uint8_chw));
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < crop; ++y) {
      for (int x = 0; x < crop; ++x) {
        double sum = 0;
        for (int j = 0; j < box.height; ++j) {
          const double row_weight = wy[static_cast<std::size_t>(y)][static_cast<std::size_t>(j)];
          if (row_weight == 0) continue;
          for (int i = 0; i < box.width; ++i) {
            const double w = wx[static_cast<std::size_t>(x)][static_cast<std::size_t>(i)];
            sum += row_weight * w * at(img, box.left + i, box.top + j, c);
          }
        }
        const int level = std::clamp(static_cast<int>(std::floor(sum + 0.5)), 0, 255);
        out[chw(crop, c, y, flip ? crop - 1 - x : x)] = static_cast<std::uint8_t>(level);
      }
    }
  }
  return out;
}

int max_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  int worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

}  // namespace

// ---- sample_rng ------------------------------------------------------------------------------

TEST_CASE("sample_rng is splitmix64", "[image]") {
  sample_rng rng(0);
  // splitmix64's published first outputs for seed 0.
  CHECK(rng.next() == 0xe220a8397b1dcdafULL);
  CHECK(rng.next() == 0x6e789e6aa1b965f4ULL);
  CHECK(rng.next() == 0x06c45d188009454fULL);
}

TEST_CASE("sample_rng draws stay in their ranges and cover them", "[image]") {
  sample_rng rng(42);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = rng.uniform(-2.0, 3.0);
    REQUIRE(u >= -2.0);
    REQUIRE(u < 3.0);
    sum += u;
  }
  CHECK(sum / 100000 == Approx(0.5).margin(0.03));
  CHECK(rng.uniform(1.5, 1.5) == 1.5);

  std::array<int, 7> counts{};
  for (int i = 0; i < 70000; ++i) {
    const int v = rng.integer(-3, 3);
    REQUIRE(v >= -3);
    REQUIRE(v <= 3);
    ++counts[static_cast<std::size_t>(v + 3)];
  }
  for (int n : counts) CHECK(n == Approx(10000).margin(500));
  CHECK(rng.integer(5, 5) == 5);
  CHECK(rng.integer(0, 0) == 0);
}

// ---- random_resized_crop_box -----------------------------------------------------------------

TEST_CASE("crop boxes are inside the image and never empty", "[image]") {
  const std::vector<std::pair<int, int>> sizes{
      {1, 1},    {1, 2},   {2, 1},   {2, 3},     {3, 3},     {7, 5},     {1, 1000},
      {1000, 1}, {5, 400}, {400, 5}, {500, 375}, {375, 500}, {640, 480}, {4000, 3000}};
  for (const auto& [width, height] : sizes) {
    for (std::uint64_t seed = 0; seed < 500; ++seed) {
      sample_rng rng(seed);
      const crop_box box = random_resized_crop_box(width, height, rng);
      INFO(width << "x" << height << " seed " << seed << ": " << box.left << "," << box.top << " "
                 << box.width << "x" << box.height);
      REQUIRE(inside(box, width, height));
    }
  }
  // Bounds that round a 1-pixel side to nothing still give a pixel.
  sample_rng rng(1);
  const resized_crop_params narrow{0.08, 1.0, 3.0, 4.0};
  CHECK(inside(random_resized_crop_box(1, 50, rng, narrow), 1, 50));
  CHECK(inside(random_resized_crop_box(50, 1, rng, narrow), 50, 1));
}

TEST_CASE("scale 1 and ratio 1 on a square image give the whole image", "[image]") {
  const resized_crop_params whole{1.0, 1.0, 1.0, 1.0};
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    sample_rng rng(seed);
    CHECK(same_box(random_resized_crop_box(100, 100, rng, whole), crop_box{0, 0, 100, 100}));
  }
}

TEST_CASE("when no draw fits, the box is the centred crop with the ratio clamped", "[image]") {
  // No area fraction of 1000x10 has a side of at most 10 pixels with a ratio within 3/4..4/3.
  sample_rng rng(3);
  CHECK(same_box(random_resized_crop_box(1000, 10, rng), crop_box{493, 0, 13, 10}));
  CHECK(same_box(random_resized_crop_box(10, 1000, rng), crop_box{0, 493, 10, 13}));
  // An image within the ratio bounds, with areas that cannot fit: the whole image.
  const resized_crop_params too_large{2.0, 3.0, 3.0 / 4.0, 4.0 / 3.0};
  CHECK(same_box(random_resized_crop_box(100, 80, rng, too_large), crop_box{0, 0, 100, 80}));
  // Python's round() takes 5 / 2 = 2.5 to the even 2.
  const resized_crop_params wide{0.08, 1.0, 2.0, 3.0};
  CHECK(same_box(random_resized_crop_box(5, 100, rng, wide), crop_box{0, 49, 5, 2}));
}

TEST_CASE("crop areas and ratios follow torchvision's distribution", "[image]") {
  constexpr int draws = 40000;
  constexpr double side = 1000;
  SECTION("area fractions the image always fits: uniform in scale, log-uniform ratio") {
    const resized_crop_params small{0.08, 0.5, 3.0 / 4.0, 4.0 / 3.0};
    double area_sum = 0;
    double log_ratio_sum = 0;
    for (int i = 0; i < draws; ++i) {
      sample_rng rng(static_cast<std::uint64_t>(i));
      const crop_box box = random_resized_crop_box(1000, 1000, rng, small);
      const double area = box.width * box.height / (side * side);
      const double ratio = static_cast<double>(box.width) / box.height;
      REQUIRE(area >= 0.08 - 0.01);
      REQUIRE(area <= 0.5 + 0.01);
      REQUIRE(ratio >= 3.0 / 4.0 - 0.01);
      REQUIRE(ratio <= 4.0 / 3.0 + 0.01);
      area_sum += area;
      log_ratio_sum += std::log(ratio);
    }
    CHECK(area_sum / draws == Approx((0.08 + 0.5) / 2).epsilon(0.02));
    CHECK(log_ratio_sum / draws == Approx(0.0).margin(0.005));
  }
  SECTION("positions uniform over the room left") {
    double left_sum = 0;
    double top_sum = 0;
    double left_min = 1;
    double top_max = 0;
    for (int i = 0; i < draws; ++i) {
      sample_rng rng(static_cast<std::uint64_t>(i));
      const crop_box box = random_resized_crop_box(1000, 600, rng);
      const double left = static_cast<double>(box.left) / std::max(1000 - box.width, 1);
      const double top = static_cast<double>(box.top) / std::max(600 - box.height, 1);
      left_sum += left;
      top_sum += top;
      left_min = std::min(left_min, left);
      top_max = std::max(top_max, top);
    }
    CHECK(left_sum / draws == Approx(0.5).margin(0.01));
    CHECK(top_sum / draws == Approx(0.5).margin(0.01));
    CHECK(left_min < 0.01);
    CHECK(top_max > 0.99);
  }
  SECTION("the default scale (0.08, 1)") {
    double area_sum = 0;
    for (int i = 0; i < draws; ++i) {
      sample_rng rng(static_cast<std::uint64_t>(i));
      const crop_box box = random_resized_crop_box(1000, 1000, rng);
      const double area = box.width * box.height / (side * side);
      const double ratio = static_cast<double>(box.width) / box.height;
      REQUIRE(area >= 0.08 - 0.01);
      REQUIRE(area <= 1.0);
      REQUIRE(ratio >= 3.0 / 4.0 - 0.01);
      REQUIRE(ratio <= 4.0 / 3.0 + 0.01);
      area_sum += area;
    }
    // Not (0.08 + 1) / 2: a draw too large for the image at its ratio is drawn again, which
    // favours small areas. 0.478 is that procedure's mean on a square image (simulated, 4e5
    // draws).
    CHECK(area_sum / draws == Approx(0.478).epsilon(0.03));
  }
}

TEST_CASE("a seed fixes the box and the flip", "[image]") {
  const auto draw = [](std::uint64_t seed) {
    sample_rng rng(seed);
    const crop_box box = random_resized_crop_box(500, 375, rng);
    const bool flip = rng.uniform(0.0, 1.0) < 0.5;
    return std::make_tuple(box.left, box.top, box.width, box.height, flip);
  };
  std::set<std::tuple<int, int, int, int, bool>> distinct;
  int flips = 0;
  for (std::uint64_t seed = 1000; seed < 1200; ++seed) {
    CHECK(draw(seed) == draw(seed));
    distinct.insert(draw(seed));
    flips += std::get<4>(draw(seed)) ? 1 : 0;
  }
  CHECK(distinct.size() >= 195);
  CHECK(flips > 70);
  CHECK(flips < 130);
}

// ---- resize_to_tensor ------------------------------------------------------------------------

TEST_CASE("a constant image stays that constant", "[image]") {
  constexpr std::array<std::uint8_t, 3> colour{12, 200, 255};
  rgb_image img = make_image(123, 77);
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      for (int c = 0; c < 3; ++c) at(img, x, y, c) = colour[static_cast<std::size_t>(c)];
    }
  }
  resize_scratch scratch;
  for (const auto& [box, crop] :
       {std::pair{crop_box{0, 0, 123, 77}, 224}, std::pair{crop_box{10, 5, 60, 40}, 32},
        std::pair{crop_box{100, 70, 3, 2}, 17}}) {
    for (bool flip : {false, true}) {
      const auto bytes = to_uint8(img, box, crop, flip, scratch);
      const auto floats = to_float(img, box, crop, flip, scratch);
      for (int c = 0; c < 3; ++c) {
        for (int i = 0; i < crop * crop; ++i) {
          const std::size_t k = chw(crop, c, 0, 0) + static_cast<std::size_t>(i);
          REQUIRE(bytes[k] == colour[static_cast<std::size_t>(c)]);
          REQUIRE(floats[k] == normalised(colour[static_cast<std::size_t>(c)], c));
        }
      }
    }
  }
}

TEST_CASE("the whole image at its own size comes back exactly, in CHW", "[image]") {
  const rgb_image img = random_image(37, 37, 5);
  resize_scratch scratch;
  const auto out = to_uint8(img, crop_box{0, 0, 37, 37}, 37, false, scratch);
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 37; ++y) {
      for (int x = 0; x < 37; ++x) REQUIRE(out[chw(37, c, y, x)] == at(img, x, y, c));
    }
  }
  // A box of the same size elsewhere in a larger image: its pixels, exactly.
  const rgb_image big = random_image(90, 60, 6);
  const auto part = to_uint8(big, crop_box{20, 11, 37, 37}, 37, false, scratch);
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 37; ++y) {
      for (int x = 0; x < 37; ++x) REQUIRE(part[chw(37, c, y, x)] == at(big, 20 + x, 11 + y, c));
    }
  }
}

TEST_CASE("flip mirrors the columns", "[image]") {
  const rgb_image img = random_image(300, 200, 9);
  resize_scratch scratch;
  for (const auto& [box, crop] :
       {std::pair{crop_box{13, 7, 250, 180}, 64}, std::pair{crop_box{100, 50, 21, 30}, 50}}) {
    const auto plain = to_uint8(img, box, crop, false, scratch);
    const auto flipped = to_uint8(img, box, crop, true, scratch);
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < crop; ++y) {
        for (int x = 0; x < crop; ++x) {
          REQUIRE(flipped[chw(crop, c, y, x)] == plain[chw(crop, c, y, crop - 1 - x)]);
        }
      }
    }
  }
}

TEST_CASE("a horizontal gradient shrunk stays monotonic", "[image]") {
  rgb_image img = make_image(400, 300);
  for (int y = 0; y < 300; ++y) {
    for (int x = 0; x < 400; ++x) {
      at(img, x, y, 0) = static_cast<std::uint8_t>(x * 255 / 399);
      at(img, x, y, 1) = static_cast<std::uint8_t>(255 - x * 255 / 399);
      at(img, x, y, 2) = 128;
    }
  }
  resize_scratch scratch;
  const auto out = to_uint8(img, crop_box{0, 0, 400, 300}, 64, false, scratch);
  const auto flipped = to_uint8(img, crop_box{0, 0, 400, 300}, 64, true, scratch);
  for (int y = 0; y < 64; ++y) {
    for (int x = 1; x < 64; ++x) {
      REQUIRE(out[chw(64, 0, y, x)] >= out[chw(64, 0, y, x - 1)]);
      REQUIRE(out[chw(64, 1, y, x)] <= out[chw(64, 1, y, x - 1)]);
      REQUIRE(flipped[chw(64, 0, y, x)] <= flipped[chw(64, 0, y, x - 1)]);
    }
    CHECK(out[chw(64, 0, y, 0)] < 10);
    CHECK(out[chw(64, 0, y, 63)] > 245);
  }
}

TEST_CASE("the resize matches a plain double-precision reference within one level", "[image]") {
  resize_scratch scratch;
  sample_rng draws(77);
  for (int trial = 0; trial < 24; ++trial) {
    const int width = draws.integer(1, 160);
    const int height = draws.integer(1, 160);
    const rgb_image img = random_image(width, height, static_cast<std::uint64_t>(trial));
    crop_box box;
    box.width = draws.integer(1, width);
    box.height = draws.integer(1, height);
    box.left = draws.integer(0, width - box.width);
    box.top = draws.integer(0, height - box.height);
    // Shrinking, enlarging, and both at once (a wide box to a square).
    const int crop = std::array{1, 5, 16, 33, 64, 100}[static_cast<std::size_t>(trial % 6)];
    const bool flip = trial % 2 == 1;
    INFO("image " << width << "x" << height << " box " << box.left << "," << box.top << " "
                  << box.width << "x" << box.height << " crop " << crop << " flip " << flip);
    const auto out = to_uint8(img, box, crop, flip, scratch);
    CHECK(max_difference(out, reference_resize(img, box, crop, flip)) <= 1);
    const auto floats = to_float(img, box, crop, flip, scratch);
    for (std::size_t i = 0; i < out.size(); ++i) {
      REQUIRE(floats[i] == normalised(out[i], static_cast<int>(i / (out.size() / 3))));
    }
  }
}

TEST_CASE("black-and-white stripes keep to 0..255 both ways", "[image]") {
  rgb_image img = make_image(97, 61);
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      for (int c = 0; c < 3; ++c) at(img, x, y, c) = (x / 2 + y) % 2 == 0 ? 255 : 0;
    }
  }
  resize_scratch scratch;
  for (int crop : {8, 31, 200}) {
    const crop_box box{0, 0, 97, 61};
    CHECK(max_difference(to_uint8(img, box, crop, false, scratch),
                         reference_resize(img, box, crop, false)) <= 1);
  }
  rgb_image white = make_image(50, 40);
  std::fill(white.pixels.begin(), white.pixels.end(), std::uint8_t{255});
  const auto out = to_uint8(white, crop_box{3, 2, 41, 29}, 77, false, scratch);
  CHECK(std::all_of(out.begin(), out.end(), [](std::uint8_t v) { return v == 255; }));
}

TEST_CASE("the resize gives Pillow's output for a small image", "[image]") {
  // Image.fromarray(a).crop((1, 1, 6, 5)).resize((n, n), Image.BILINEAR) with Pillow 9.4, a the
  // 7x5 image below, as CHW.
  rgb_image img = make_image(7, 5);
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 7; ++x) {
      for (int c = 0; c < 3; ++c)
        at(img, x, y, c) = static_cast<std::uint8_t>((x * 37 + y * 91 + c * 53) % 256);
    }
  }
  const crop_box box{1, 1, 5, 4};
  resize_scratch scratch;
  const std::vector<std::uint8_t> shrunk{138, 153, 108, 98,  83,  141, 134, 152, 70,
                                         148, 166, 84,  78,  136, 194, 187, 105, 123,
                                         124, 79,  137, 131, 160, 119, 163, 101, 100};
  CHECK(to_uint8(img, box, 3, false, scratch) == shrunk);
  const std::vector<std::uint8_t> enlarged{
      128, 144, 167, 190, 214, 237, 116, 20,  151, 139, 126, 149, 173, 196, 111, 43,  196, 128,
      43,  66,  90,  113, 100, 88,  178, 110, 25,  48,  72,  95,  118, 134, 95,  83,  70,  93,
      117, 140, 163, 179, 77,  93,  116, 139, 143, 126, 145, 161, 122, 138, 161, 184, 148, 51,
      62,  78,  145, 161, 184, 207, 151, 14,  21,  37,  181, 197, 220, 243, 187, 50,  57,  73,
      140, 156, 179, 202, 166, 69,  80,  96,  57,  73,  96,  119, 123, 106, 125, 141, 39,  55,
      78,  101, 125, 148, 171, 187, 84,  100, 123, 146, 170, 193, 216, 232, 130, 146, 165, 148,
      152, 175, 198, 214, 175, 191, 202, 105, 69,  92,  115, 131, 198, 214, 221, 84,  28,  51,
      74,  90,  234, 138, 17,  40,  64,  87,  110, 126, 193, 125, 40,  63,  87,  110, 133, 149,
      110, 98,  85,  108, 132, 155, 178, 194, 92,  108, 131, 154, 158, 141, 160, 176, 137, 153,
      176, 199, 163, 66,  77,  93,  183, 171, 158, 181, 145, 48,  59,  75,  228, 160, 75,  98,
      102, 85,  104, 120, 251, 155, 34,  57,  81,  104, 127, 143};
  CHECK(to_uint8(img, box, 8, false, scratch) == enlarged);
}

TEST_CASE("scratch reused across sizes gives what fresh scratch gives", "[image]") {
  const rgb_image img = random_image(500, 375, 11);
  const std::vector<std::tuple<crop_box, int, bool>> calls{{crop_box{0, 0, 500, 375}, 224, false},
                                                           {crop_box{50, 20, 60, 300}, 96, true},
                                                           {crop_box{400, 300, 7, 9}, 224, false},
                                                           {crop_box{1, 2, 333, 222}, 17, true},
                                                           {crop_box{0, 0, 500, 375}, 224, true}};
  resize_scratch reused;
  for (const auto& [box, crop, flip] : calls) {
    resize_scratch fresh;
    CHECK(to_uint8(img, box, crop, flip, reused) == to_uint8(img, box, crop, flip, fresh));
    CHECK(to_float(img, box, crop, flip, reused) == to_float(img, box, crop, flip, fresh));
  }
}

TEST_CASE("a box outside the image is refused", "[image]") {
  const rgb_image img = random_image(20, 10, 1);
  resize_scratch scratch;
  std::vector<std::byte> out(tensor_bytes(8, tensor_format::float32_chw));
  const auto resize = [&](crop_box box, int crop) {
    resize_to_tensor(img, box, crop, false, tensor_format::uint8_chw, out.data(), scratch);
  };
  CHECK_THROWS_AS(resize(crop_box{15, 0, 6, 10}, 8), std::invalid_argument);
  CHECK_THROWS_AS(resize(crop_box{0, 1, 20, 10}, 8), std::invalid_argument);
  CHECK_THROWS_AS(resize(crop_box{-1, 0, 5, 5}, 8), std::invalid_argument);
  CHECK_THROWS_AS(resize(crop_box{0, 0, 0, 5}, 8), std::invalid_argument);
  CHECK_THROWS_AS(resize(crop_box{0, 0, 5, 5}, 0), std::invalid_argument);
  CHECK_NOTHROW(resize(crop_box{0, 0, 20, 10}, 8));
}
