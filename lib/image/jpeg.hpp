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

/// The image's size, from its header only. Throws image_error.
[[nodiscard]] jpeg_header read_jpeg_header(std::span<const std::byte> file);

/// Decodes a whole file to RGB into `out` (its storage is reused across calls). A warning from
/// libjpeg-turbo (a truncated file: "Premature end of JPEG file") is an error, as PIL treats it.
/// Thread-safe: each thread has its own decompressor.
void decode_jpeg(std::span<const std::byte> file, rgb_image& out);

/// Encodes `img` as a baseline JPEG with 4:2:0 chroma subsampling at `quality` (1-100).
[[nodiscard]] std::vector<std::byte> encode_jpeg(const rgb_image& img, int quality);

/// libjpeg-turbo's version as built in ("2.1.5"), for the result's environment.
[[nodiscard]] std::string jpeg_library_version();

}  // namespace pinbench::image
