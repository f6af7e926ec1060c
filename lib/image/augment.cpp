// torchvision's ImageNet training transform in C++: RandomResizedCrop's box, Pillow's bilinear
// resize of that box, the horizontal flip, and ToTensor/Normalize or PILToTensor's layout.
#include "image/augment.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace pinbench::image {

// ---- random stream ---------------------------------------------------------------------------

std::uint64_t sample_rng::next() noexcept {
  state_ += 0x9e3779b97f4a7c15ULL;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double sample_rng::uniform(double lo, double hi) noexcept {
  const double unit = static_cast<double>(next() >> 11) * 0x1.0p-53;  // [0, 1)
  const double value = lo + (hi - lo) * unit;
  // lo + (hi - lo) * unit can round up to hi: keep the interval half-open (lo == hi gives lo).
  return value < hi ? value : std::nextafter(hi, lo);
}

int sample_rng::integer(int lo, int hi) noexcept {
  if (hi <= lo) return lo;
  // Multiply-shift of 32 random bits: bias below range / 2^32, far under anything measurable.
  const std::uint64_t range = static_cast<std::uint64_t>(static_cast<std::int64_t>(hi) - lo) + 1;
  const std::uint64_t offset = ((next() >> 32) * range) >> 32;
  return static_cast<int>(static_cast<std::int64_t>(lo) + static_cast<std::int64_t>(offset));
}

// ---- RandomResizedCrop.get_params ------------------------------------------------------------

namespace {

// Python's round(): halves go to the even neighbour (nearbyint in the default rounding mode).
double python_round(double x) {
  return std::nearbyint(x);
}

}  // namespace

crop_box random_resized_crop_box(int width, int height, sample_rng& rng,
                                 const resized_crop_params& params) {
  if (width <= 0 || height <= 0) return {};
  const double area = static_cast<double>(width) * static_cast<double>(height);
  const double log_ratio_min = std::log(params.ratio_min);
  const double log_ratio_max = std::log(params.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.uniform(params.scale_min, params.scale_max);
    const double aspect = std::exp(rng.uniform(log_ratio_min, log_ratio_max));
    // Compared as doubles first, so that a huge draw never overflows the conversion to int.
    const double w = python_round(std::sqrt(target_area * aspect));
    const double h = python_round(std::sqrt(target_area / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      crop_box box;
      box.width = static_cast<int>(w);
      box.height = static_cast<int>(h);
      box.top = rng.integer(0, height - box.height);  // torchvision draws the row first
      box.left = rng.integer(0, width - box.width);
      return box;
    }
  }
  // No draw fit: the central crop, its aspect ratio clamped into the bounds.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  double w = width;
  double h = height;
  if (in_ratio < params.ratio_min) {
    h = python_round(w / params.ratio_min);
  } else if (in_ratio > params.ratio_max) {
    w = python_round(h * params.ratio_max);
  }
  // Bounds such as ratio_min > 1 on a 1-pixel-wide image would round to 0: keep 1 x 1 at least.
  crop_box box;
  box.width = static_cast<int>(std::clamp(w, 1.0, static_cast<double>(width)));
  box.height = static_cast<int>(std::clamp(h, 1.0, static_cast<double>(height)));
  box.top = (height - box.height) / 2;
  box.left = (width - box.width) / 2;
  return box;
}

// ---- Pillow's bilinear resize ----------------------------------------------------------------

namespace {

// The filter taps of one axis, as Pillow's precompute_coeffs lays them out: output i's centre
// sits at (i + 0.5) * scale in the source, the triangle filter is widened by the scale when
// shrinking (antialiasing), and the window is clipped to the source. Taps whose weight is zero
// (the window's ends) are trimmed, which makes a same-size axis a plain copy.
struct axis_filter {
  int in_size;
  double scale;    // source pixels per output pixel
  double support;  // half-width of the window, in source pixels
  double inv_filter_scale;

  axis_filter(int in, int out) : in_size(in), scale(static_cast<double>(in) / out) {
    const double filter_scale = std::max(scale, 1.0);
    support = 1.0 * filter_scale;  // the bilinear (triangle) filter's support is 1
    inv_filter_scale = 1.0 / filter_scale;
  }

  [[nodiscard]] double centre(int i) const { return (i + 0.5) * scale; }

  [[nodiscard]] double weight(int i, int x) const {
    const double t = std::abs((x - centre(i) + 0.5) * inv_filter_scale);
    return t < 1.0 ? 1.0 - t : 0.0;
  }

  // Output i's taps: source indices [first, first + count), all of nonzero weight.
  void window(int i, int& first, int& count) const {
    const double c = centre(i);
    // Truncation as in Pillow; where it differs from floor (below 0) both clip to 0. Pillow's
    // own "+ 0.5 then truncate", not lround: the windows must be Pillow's to the pixel.
    // NOLINTBEGIN(bugprone-incorrect-roundings)
    int lo = std::max(static_cast<int>(c - support + 0.5), 0);
    int hi = std::min(static_cast<int>(c + support + 0.5), in_size);
    // NOLINTEND(bugprone-incorrect-roundings)
    while (hi - lo > 1 && weight(i, lo) == 0.0) ++lo;
    while (hi - lo > 1 && weight(i, hi - 1) == 0.0) --hi;
    first = lo;
    count = hi - lo;
  }
};

// Fills first/weights for `out` outputs with a fixed `taps` per output (the widest window),
// windows shifted left where needed so that first + taps stays inside the source and the
// unused taps weighted 0. Each weight is written `lanes` times in a row, ready to multiply a
// pixel's channels at once. `mirror` reverses the outputs (a horizontal flip for free).
// Returns taps.
int build_axis(int in, int out, bool mirror, int lanes, std::vector<std::int32_t>& first,
               std::vector<float>& weights) {
  const axis_filter filter(in, out);
  int taps = 1;
  for (int i = 0; i < out; ++i) {
    int lo = 0;
    int count = 0;
    filter.window(i, lo, count);
    taps = std::max(taps, count);
  }
  const auto per_output = static_cast<std::size_t>(taps) * static_cast<std::size_t>(lanes);
  if (first.size() < static_cast<std::size_t>(out)) first.resize(static_cast<std::size_t>(out));
  if (weights.size() < per_output * static_cast<std::size_t>(out)) {
    weights.resize(per_output * static_cast<std::size_t>(out));
  }
  for (int o = 0; o < out; ++o) {
    const int i = mirror ? out - 1 - o : o;
    int lo = 0;
    int count = 0;
    filter.window(i, lo, count);
    double sum = 0.0;
    for (int x = lo; x < lo + count; ++x) sum += filter.weight(i, x);
    const int start = std::min(lo, in - taps);  // taps <= in: every window fits in the source
    float* w = weights.data() + static_cast<std::size_t>(o) * per_output;
    std::fill_n(w, per_output, 0.0f);
    for (int x = lo; x < lo + count; ++x) {
      // On Pillow's grid of 2^-22 (its 8-bit path multiplies in fixed point): values exact in
      // float, so that ties round as Pillow rounds them.
      const double pillow = std::floor(filter.weight(i, x) / sum * 0x1p22 + 0.5) * 0x1p-22;
      const auto value = static_cast<float>(pillow);
      std::fill_n(w + static_cast<std::ptrdiff_t>(x - start) * lanes, lanes, value);
    }
    first[static_cast<std::size_t>(o)] = start;
  }
  return taps;
}

// The hot loops use GCC's generic vectors (also Clang's): four floats that compile to one SSE
// register on x86-64 (to NEON elsewhere). Plain loops over arrays are vectorised by GCC 12 at
// -O2 only when it needs no run-time overlap checks, and at -O3 its full unrolling undid the
// vectorisation of the 4-channel sums: the explicit vectors behave the same at every level.
using float4 = float __attribute__((vector_size(16)));
using int4 = std::int32_t __attribute__((vector_size(16)));

inline float4 load4(const float* p) {
  float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store4(float* p, float4 v) {
  std::memcpy(p, &v, sizeof v);
}

// Pillow rounds to 8 bits (half up) and clips to 0..255. The sums here are of non-negative
// terms, never below 0, so adding 0.5 and truncating rounds half up and only the top needs
// clipping (against the weights summing to a hair over 1).
inline int4 round_to_8bit(float4 v) {
  const int4 rounded = __builtin_convertvector(v + 0.5f, int4);
  const int4 over = rounded > 255;  // comparisons give -1 (all bits set) where true
  return (rounded & ~over) | (over & 255);
}

// Columns of the vertical pass handled at once: four registers of sums.
constexpr int block = 16;

constexpr std::array<float, 3> imagenet_mean{0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> imagenet_std{0.229f, 0.224f, 0.225f};

// `n` bytes of a source row as floats, then one 0 so that the row's last pixel can be read as
// four floats. (Blocks through a local array: GCC vectorises that form at -O2 and -O3, and
// widens bytes to floats with unpacks, which it does not do for generic vectors.)
void widen_row(const std::uint8_t* src, std::size_t n, float* line) {
  std::size_t j = 0;
  for (; j + block <= n; j += block) {
    float values[block];
    for (int l = 0; l < block; ++l) values[l] = src[j + l];
    std::memcpy(line + j, values, sizeof values);
  }
  for (; j < n; ++j) line[j] = src[j];
  line[n] = 0.0f;
}

// The horizontal pass over two source rows at once (they share the weights; `line0` and `line1`
// may be the same): the box's rows as RGB floats in, one float per output column into each
// channel's plane (`plane_size` floats apart) out, rounded to 8 bits as Pillow's intermediate
// image is. `weights` holds each tap's weight 4 times (build_axis with 4 lanes). Taps > 0 is
// the number of taps, known at compile time so that the loop over them unrolls; Taps == 0
// takes it from `taps`.
template <int Taps>
void horizontal_rows(const float* line0, const float* line1, const std::int32_t* first,
                     const float* weights, int taps, int crop, float* out0, float* out1,
                     std::size_t plane_size) {
  const int tap_count = Taps > 0 ? Taps : taps;
  for (int o = 0; o < crop; ++o) {
    const float* pixels0 = line0 + static_cast<std::ptrdiff_t>(first[o]) * 3;
    const float* pixels1 = line1 + static_cast<std::ptrdiff_t>(first[o]) * 3;
    const float* w = weights + static_cast<std::ptrdiff_t>(o) * tap_count * 4;
    // R, G, B, and the next pixel's R (unused), per row.
    float4 sum0 = {};
    float4 sum1 = {};
#pragma GCC unroll 8
    for (int k = 0; k < tap_count; ++k) {
      const float4 weight = load4(w + static_cast<std::ptrdiff_t>(k) * 4);
      sum0 += weight * load4(pixels0 + static_cast<std::ptrdiff_t>(k) * 3);
      sum1 += weight * load4(pixels1 + static_cast<std::ptrdiff_t>(k) * 3);
    }
    // The weights are >= 0 and sum to 1 (within float rounding), so each sum lies in
    // [0, 255 + 1e-4]: adding 0.5 and truncating rounds half up, with nothing to clip.
    const float4 rounded0 =
        __builtin_convertvector(__builtin_convertvector(sum0 + 0.5f, int4), float4);
    const float4 rounded1 =
        __builtin_convertvector(__builtin_convertvector(sum1 + 0.5f, int4), float4);
    const auto at = static_cast<std::size_t>(o);
    out0[at] = rounded0[0];
    out0[at + plane_size] = rounded0[1];
    out0[at + 2 * plane_size] = rounded0[2];
    out1[at] = rounded1[0];
    out1[at + plane_size] = rounded1[1];
    out1[at + 2 * plane_size] = rounded1[2];
  }
}

using horizontal_kernel = void (*)(const float*, const float*, const std::int32_t*, const float*,
                                   int, int, float*, float*, std::size_t);

// Windows of up to 8 taps (shrinking by up to ~3.5x) get an unrolled kernel.
horizontal_kernel horizontal_kernel_for(int taps) {
  constexpr std::array<horizontal_kernel, 9> by_taps{
      horizontal_rows<0>, horizontal_rows<1>, horizontal_rows<2>,
      horizontal_rows<3>, horizontal_rows<4>, horizontal_rows<5>,
      horizontal_rows<6>, horizontal_rows<7>, horizontal_rows<8>};
  return taps < static_cast<int>(by_taps.size()) ? by_taps[static_cast<std::size_t>(taps)]
                                                 : horizontal_rows<0>;
}

// The vertical pass for one output row of one channel: `taps` rows of the plane from `src`
// (`stride` floats apart, a multiple of block) weighted by `w`, a block of columns at a time.
// `emit(column, sums, count)` writes count <= block results from sums[block / 4].
template <typename Emit>
void vertical_row(const float* src, std::size_t stride, const float* w, int taps, int crop,
                  Emit&& emit) {
  static_assert(block == 16);
  for (int j = 0; j < crop; j += block) {
    // Four named sums, not an array: GCC 12 keeps a rolled loop over an array in memory.
    float4 sum0 = {};
    float4 sum1 = {};
    float4 sum2 = {};
    float4 sum3 = {};
    for (int k = 0; k < taps; ++k) {
      const float* row = src + static_cast<std::size_t>(k) * stride + j;
      const float wk = w[k];
      sum0 += wk * load4(row);
      sum1 += wk * load4(row + 4);
      sum2 += wk * load4(row + 8);
      sum3 += wk * load4(row + 12);
    }
    const float4 sums[block / 4] = {sum0, sum1, sum2, sum3};
    emit(j, sums, std::min(block, crop - j));
  }
}

}  // namespace

void resize_to_tensor(const rgb_image& in, const crop_box& box, int crop, bool flip,
                      tensor_format format, std::byte* out, resize_scratch& scratch) {
  if (crop <= 0) throw std::invalid_argument("resize_to_tensor: the crop size must be positive");
  if (box.width <= 0 || box.height <= 0 || box.left < 0 || box.top < 0 ||
      box.left > in.width - box.width || box.top > in.height - box.height ||
      in.pixels.size() < in.bytes()) {
    throw std::invalid_argument("resize_to_tensor: the crop box is not inside the image");
  }
  const int taps_x = build_axis(box.width, crop, flip, 4, scratch.x_first, scratch.x_weights);
  const int taps_y = build_axis(box.height, crop, false, 1, scratch.y_first, scratch.y_weights);
  const std::int32_t* x_first = scratch.x_first.data();
  const float* x_weights = scratch.x_weights.data();
  const std::int32_t* y_first = scratch.y_first.data();
  const float* y_weights = scratch.y_weights.data();

  // Only the box rows that some output row reads go through the horizontal pass.
  const int row_lo = y_first[0];
  const int row_hi = y_first[crop - 1] + taps_y;
  const auto rows = static_cast<std::size_t>(row_hi - row_lo);
  // The planes' rows are padded to whole blocks (zeros) for the vertical pass.
  const auto stride = (static_cast<std::size_t>(crop) + block - 1) / block * block;
  const std::size_t plane_size = rows * stride;
  const std::size_t line_size = static_cast<std::size_t>(box.width) * 3;
  // row_pass: the three planes of the horizontal pass, then two source rows as floats. It only
  // grows, so that warm calls allocate nothing.
  const std::size_t needed = 3 * plane_size + 2 * (line_size + 1);
  if (scratch.row_pass.size() < needed) scratch.row_pass.resize(needed);
  float* planes = scratch.row_pass.data();
  float* line0 = planes + 3 * plane_size;
  float* line1 = line0 + line_size + 1;

  const auto in_stride = static_cast<std::size_t>(in.width) * 3;
  const std::uint8_t* box_pixels = in.pixels.data() +
                                   static_cast<std::size_t>(box.top) * in_stride +
                                   static_cast<std::size_t>(box.left) * 3;
  const horizontal_kernel horizontal = horizontal_kernel_for(taps_x);
  for (int r = row_lo; r < row_hi; r += 2) {
    const bool pair = r + 1 < row_hi;
    widen_row(box_pixels + static_cast<std::size_t>(r) * in_stride, line_size, line0);
    if (pair) widen_row(box_pixels + static_cast<std::size_t>(r + 1) * in_stride, line_size, line1);
    float* out0 = planes + static_cast<std::size_t>(r - row_lo) * stride;
    float* out1 = pair ? out0 + stride : out0;
    horizontal(line0, pair ? line1 : line0, x_first, x_weights, taps_x, crop, out0, out1,
               plane_size);
    if (stride > static_cast<std::size_t>(crop)) {
      for (int c = 0; c < 3; ++c) {
        for (float* plane_row : {out0, out1}) {
          float* padding = plane_row + static_cast<std::size_t>(c) * plane_size;
          std::fill(padding + crop, padding + stride, 0.0f);
        }
      }
    }
  }

  const auto out_plane = static_cast<std::size_t>(crop) * static_cast<std::size_t>(crop);
  for (int c = 0; c < 3; ++c) {
    const float* plane = planes + static_cast<std::size_t>(c) * plane_size;
    for (int o = 0; o < crop; ++o) {
      const float* src = plane + static_cast<std::size_t>(y_first[o] - row_lo) * stride;
      const float* w = y_weights + static_cast<std::ptrdiff_t>(o) * taps_y;
      const std::size_t at =
          static_cast<std::size_t>(c) * out_plane + static_cast<std::size_t>(o) * crop;
      if (format == tensor_format::uint8_chw) {
        auto* dst = reinterpret_cast<std::uint8_t*>(out) + at;
        vertical_row(src, stride, w, taps_y, crop, [dst](int j, const float4* sums, int count) {
          std::int32_t values[block];
          for (int q = 0; q < block / 4; ++q) {
            const int4 rounded = round_to_8bit(sums[q]);
            std::memcpy(values + 4 * q, &rounded, sizeof rounded);
          }
          std::uint8_t bytes[block];
          for (int l = 0; l < block; ++l) bytes[l] = static_cast<std::uint8_t>(values[l]);
          if (count == block) {
            std::memcpy(dst + j, bytes, sizeof bytes);
          } else {
            for (int l = 0; l < count; ++l) dst[j + l] = bytes[l];
          }
        });
      } else {
        // ToTensor (/255) then Normalize, in float32 as torch computes them, from the 8-bit
        // value a PIL image would hold.
        const float mean = imagenet_mean[static_cast<std::size_t>(c)];
        const float std_dev = imagenet_std[static_cast<std::size_t>(c)];
        auto* dst = reinterpret_cast<float*>(out) + at;
        vertical_row(src, stride, w, taps_y, crop,
                     [dst, mean, std_dev](int j, const float4* sums, int count) {
                       float values[block];
                       for (int q = 0; q < block / 4; ++q) {
                         const float4 level =
                             __builtin_convertvector(round_to_8bit(sums[q]), float4);
                         store4(values + 4 * q, (level / 255.0f - mean) / std_dev);
                       }
                       if (count == block) {
                         std::memcpy(dst + j, values, sizeof values);
                       } else {
                         for (int l = 0; l < count; ++l) dst[j + l] = values[l];
                       }
                     });
      }
    }
  }
}

}  // namespace pinbench::image
