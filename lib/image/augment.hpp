// The training transform torchvision's ImageNet recipe applies to a decoded image:
// RandomResizedCrop(crop) + RandomHorizontalFlip + ToTensor (+ Normalize), in C++.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "image/jpeg.hpp"

namespace pinbench::image {

/// A deterministic random stream (splitmix64): one per sample, seeded from the run's seed and
/// the sample's index, so that a sample's crop and flip are the same wherever it is produced.
class sample_rng {
 public:
  explicit sample_rng(std::uint64_t seed) noexcept : state_(seed) {}
  [[nodiscard]] std::uint64_t next() noexcept;
  /// Uniform in [lo, hi).
  [[nodiscard]] double uniform(double lo, double hi) noexcept;
  /// Uniform integer in [lo, hi] (both included).
  [[nodiscard]] int integer(int lo, int hi) noexcept;

 private:
  std::uint64_t state_;
};

/// A region of an image, in pixels; always inside the image it was drawn for.
struct crop_box {
  int left = 0;
  int top = 0;
  int width = 0;
  int height = 0;
};

/// torchvision's RandomResizedCrop parameters (scale of the area, aspect ratio w/h).
struct resized_crop_params {
  double scale_min = 0.08;
  double scale_max = 1.0;
  double ratio_min = 3.0 / 4.0;
  double ratio_max = 4.0 / 3.0;
};

/// torchvision's RandomResizedCrop.get_params: up to 10 draws of an area fraction (uniform in
/// scale) and a log-uniform aspect ratio, the first that fits placed uniformly; else the
/// central crop with the ratio clamped to the bounds.
[[nodiscard]] crop_box random_resized_crop_box(int width, int height, sample_rng& rng,
                                               const resized_crop_params& params = {});

enum class tensor_format {
  uint8_chw,    ///< 3 x crop x crop bytes, as torchvision's PILToTensor
  float32_chw,  ///< 3 x crop x crop floats: ToTensor (/255) then Normalize with ImageNet's
                ///< mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225)
};

/// Bytes of one output sample.
[[nodiscard]] constexpr std::size_t tensor_bytes(int crop, tensor_format f) noexcept {
  return static_cast<std::size_t>(crop) * static_cast<std::size_t>(crop) * 3 *
         (f == tensor_format::uint8_chw ? 1 : 4);
}

/// Working memory for resize_to_tensor, kept per worker thread so that the hot path allocates
/// nothing after the first sample.
struct resize_scratch {
  std::vector<float> row_pass;        // the horizontal pass's output
  std::vector<std::int32_t> x_first;  // per output column: first source column
  std::vector<float> x_weights;       // per output column: its filter's weights
  std::vector<std::int32_t> y_first;
  std::vector<float> y_weights;
};

/// Crops `box` out of `in`, resizes it to crop x crop with PIL's bilinear filter (a triangle
/// filter widened by the scale factor when shrinking, i.e. antialiased, as
/// torchvision's resize of a PIL image does), mirrors it left-right when `flip`, and writes it
/// to `out` (tensor_bytes(crop, format) bytes) in CHW order.
void resize_to_tensor(const rgb_image& in, const crop_box& box, int crop, bool flip,
                      tensor_format format, std::byte* out, resize_scratch& scratch);

}  // namespace pinbench::image
