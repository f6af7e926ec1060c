#include "image/jpeg.hpp"

#include <string>

#include <turbojpeg.h>

#if __has_include(<jconfig.h>)
#include <jconfig.h>
#endif

namespace pinbench::image {

namespace {

/// A TurboJPEG handle that lives as long as its thread.
class turbo_handle {
 public:
  explicit turbo_handle(tjhandle handle) noexcept : handle_(handle) {}
  ~turbo_handle() {
    if (handle_ != nullptr) tjDestroy(handle_);
  }
  turbo_handle(const turbo_handle&) = delete;
  turbo_handle& operator=(const turbo_handle&) = delete;
  [[nodiscard]] tjhandle get() const noexcept { return handle_; }

 private:
  tjhandle handle_;
};

std::string library_message(tjhandle handle) {
  const char* text = tjGetErrorStr2(handle);
  return text != nullptr && *text != '\0' ? std::string(text)
                                          : std::string("unknown libjpeg-turbo error");
}

// One handle per thread: a handle holds libjpeg's state and is not safe to share.
tjhandle decompressor() {
  thread_local const turbo_handle holder(tjInitDecompress());
  if (holder.get() == nullptr) {
    throw image_error("cannot create a JPEG decompressor: " + library_message(nullptr));
  }
  return holder.get();
}

tjhandle compressor() {
  thread_local const turbo_handle holder(tjInitCompress());
  if (holder.get() == nullptr) {
    throw image_error("cannot create a JPEG compressor: " + library_message(nullptr));
  }
  return holder.get();
}

const unsigned char* bytes_of(std::span<const std::byte> file) {
  return reinterpret_cast<const unsigned char*>(file.data());
}

// 2^28 pixels (16384 x 16384) is far beyond any photograph; a header claiming more is corrupt
// or hostile, and decoding it would allocate gigabytes.
void check_size(int width, int height) {
  if (width <= 0 || height <= 0 ||
      static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(height) > max_pixels_limit) {
    throw image_error("unsupported image size " + std::to_string(width) + " x " +
                      std::to_string(height) + " (at most 2^28 pixels)");
  }
}

jpeg_header header_of(tjhandle handle, std::span<const std::byte> file, std::uint64_t budget) {
  if (file.empty()) throw image_error("empty file, not a JPEG");
  jpeg_header header;
  int subsampling = 0;
  int colorspace = 0;
  if (tjDecompressHeader3(handle, bytes_of(file), file.size(), &header.width, &header.height,
                          &subsampling, &colorspace) != 0) {
    throw image_error(library_message(handle));
  }
  // Data that ends before the frame header is only a warning to libjpeg-turbo 2.1: the call
  // succeeds and leaves the size unset.
  if (header.width == 0 && header.height == 0) {
    throw image_error("Premature end of JPEG file (before the image size)");
  }
  check_size(header.width, header.height);
  // Both sides are positive ints: their product fits in 64 bits.
  if (static_cast<std::uint64_t>(header.width) * static_cast<std::uint64_t>(header.height) > budget)
    throw pixel_budget_error(header.width, header.height, budget);
  return header;
}

}  // namespace

pixel_budget_error::pixel_budget_error(int width, int height, std::uint64_t budget)
    : image_error(
          std::to_string(width) + "x" + std::to_string(height) + " = " +
          std::to_string(static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(height)) +
          " pixels, over the decode's budget of " + std::to_string(budget) + " pixels"),
      width_(width),
      height_(height),
      budget_(budget) {}

std::uint64_t pixel_budget_error::pixels() const noexcept {
  return static_cast<std::uint64_t>(width_) * static_cast<std::uint64_t>(height_);
}

jpeg_header read_jpeg_header(std::span<const std::byte> file, std::uint64_t max_pixels) {
  return header_of(decompressor(), file, max_pixels);
}

void decode_jpeg(std::span<const std::byte> file, rgb_image& out, std::uint64_t max_pixels) {
  const tjhandle handle = decompressor();
  const jpeg_header header = header_of(handle, file, max_pixels);
  out.width = header.width;
  out.height = header.height;
  out.pixels.resize(out.bytes());
  // Default DCT and fancy upsampling, as PIL decodes; a warning (truncated data) aborts.
  if (tjDecompress2(handle, bytes_of(file), file.size(), out.pixels.data(), header.width, 0,
                    header.height, TJPF_RGB, TJFLAG_STOPONWARNING) != 0) {
    std::string message = library_message(handle);
    out.width = 0;
    out.height = 0;
    out.pixels.clear();  // keeps the capacity for the next call
    throw image_error(message);
  }
}

std::vector<std::byte> encode_jpeg(const rgb_image& img, int quality) {
  check_size(img.width, img.height);
  if (img.pixels.size() != img.bytes()) {
    throw image_error("image of " + std::to_string(img.width) + " x " + std::to_string(img.height) +
                      " holds " + std::to_string(img.pixels.size()) + " bytes, not " +
                      std::to_string(img.bytes()));
  }
  if (quality < 1 || quality > 100) {
    throw image_error("JPEG quality " + std::to_string(quality) + " is not in 1-100");
  }
  const tjhandle handle = compressor();
  unsigned char* encoded = nullptr;  // allocated by libjpeg-turbo, released with tjFree
  unsigned long encoded_size = 0;
  if (tjCompress2(handle, img.pixels.data(), img.width, 0, img.height, TJPF_RGB, &encoded,
                  &encoded_size, TJSAMP_420, quality, 0) != 0) {
    std::string message = library_message(handle);
    tjFree(encoded);
    throw image_error(message);
  }
  const auto* first = reinterpret_cast<const std::byte*>(encoded);
  std::vector<std::byte> out(first, first + encoded_size);
  tjFree(encoded);
  return out;
}

std::string jpeg_library_version() {
#ifdef LIBJPEG_TURBO_VERSION_NUMBER
  // MMMmmmppp, e.g. 2001005 for 2.1.5.
  constexpr long number = LIBJPEG_TURBO_VERSION_NUMBER;
  return std::to_string(number / 1000000) + "." + std::to_string(number / 1000 % 1000) + "." +
         std::to_string(number % 1000);
#else
  return "2.x";
#endif
}

}  // namespace pinbench::image
