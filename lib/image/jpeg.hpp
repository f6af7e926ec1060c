// JPEG through libjpeg-turbo's TurboJPEG API: decode to interleaved RGB, encode (for the images
// pinbench generates). One handle per thread, so that loader workers decode at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace pinbench::image {

/// A file that is not a JPEG libjpeg-turbo can decode (corrupt, truncated, another format).
/// The message is libjpeg-turbo's own; the caller prefixes the file's path.
class image_error : public pinbench::error {
 public:
  using pinbench::error::error;
};

/// An 8-bit RGB image, rows top to bottom, pixels interleaved (R, G, B), no row padding.
struct rgb_image {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;  ///< width x height x 3 bytes

  [[nodiscard]] std::size_t bytes() const noexcept {
    return static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3;
  }
};

struct jpeg_header {
  int width = 0;
  int height = 0;
};

/// The pixels a decode may hold unless its caller allows more: 8192 x 8192, an RGB buffer of
/// 192 MiB (a loader worker keeps one), so that a few workers stay within a few hundred MiB.
inline constexpr std::uint64_t default_max_pixels = std::uint64_t{1} << 26;

/// The most pixels any image may have, whatever the budget: 2^28 (16384 x 16384).
inline constexpr std::uint64_t max_pixels_limit = std::uint64_t{1} << 28;

/// A header that declares more pixels than the decode's budget: refused before any buffer for
/// the pixels is allocated. The caller names the budget in its own terms (a param, say).
class pixel_budget_error : public image_error {
 public:
  pixel_budget_error(int width, int height, std::uint64_t budget);
  [[nodiscard]] int width() const noexcept { return width_; }
  [[nodiscard]] int height() const noexcept { return height_; }
  [[nodiscard]] std::uint64_t pixels() const noexcept;
  [[nodiscard]] std::uint64_t budget() const noexcept { return budget_; }

 private:
  int width_, height_;
  std::uint64_t budget_;
};

/// The image's size, from its header only. Throws image_error (pixel_budget_error when the
/// header declares more than `max_pixels`).
[[nodiscard]] jpeg_header read_jpeg_header(std::span<const std::byte> file,
                                           std::uint64_t max_pixels = max_pixels_limit);

/// Decodes a whole file to RGB into `out` (its storage is reused across calls). A warning from
/// libjpeg-turbo (a truncated file: "Premature end of JPEG file") is an error, as PIL treats it.
/// The header is read first: an image of more than `max_pixels` (width x height, computed in 64
/// bits) throws pixel_budget_error before `out` grows. Thread-safe: each thread has its own
/// decompressor.
void decode_jpeg(std::span<const std::byte> file, rgb_image& out,
                 std::uint64_t max_pixels = default_max_pixels);

/// Encodes `img` as a baseline JPEG with 4:2:0 chroma subsampling at `quality` (1-100).
[[nodiscard]] std::vector<std::byte> encode_jpeg(const rgb_image& img, int quality);

/// libjpeg-turbo's version as built in ("2.1.5"), for the result's environment.
[[nodiscard]] std::string jpeg_library_version();

}  // namespace pinbench::image
