// JPEG through libjpeg-turbo: an encode/decode round trip keeps the picture, the decode of a
// reference file is fixed and matches PIL's, broken files fail with libjpeg-turbo's message,
// absurd sizes are refused, and threads decode at once with identical results.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "image/image_set.hpp"
#include "image/jpeg.hpp"
#include "scratch_dir.hpp"
#include "support.hpp"
#include "test_paths.hpp"

using namespace pinbench::image;
namespace fs = std::filesystem;
using pinbench::testing::read_binary;
using pinbench::testing::scratch_dir;

namespace {

const fs::path reference_dir =
    fs::path(pinbench::testing::source_dir()) / "tests" / "data" / "jpeg";

void write_bytes(const fs::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

/// A binary PPM (P6, maxval 255), as PIL writes it.
rgb_image read_ppm(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::string magic;
  int maxval = 0;
  rgb_image img;
  in >> magic >> img.width >> img.height >> maxval;
  in.get();  // the single whitespace before the pixels
  REQUIRE(magic == "P6");
  REQUIRE(maxval == 255);
  img.pixels.resize(img.bytes());
  in.read(reinterpret_cast<char*>(img.pixels.data()), static_cast<std::streamsize>(img.bytes()));
  REQUIRE(in.gcount() == static_cast<std::streamsize>(img.bytes()));
  return img;
}

/// Peak signal-to-noise ratio in dB (infinite for identical pictures).
double psnr(const rgb_image& a, const rgb_image& b) {
  REQUIRE(a.pixels.size() == b.pixels.size());
  double squared = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i) {
    const double d = static_cast<double>(a.pixels[i]) - static_cast<double>(b.pixels[i]);
    squared += d * d;
  }
  if (squared == 0) return std::numeric_limits<double>::infinity();
  const double mse = squared / static_cast<double>(a.pixels.size());
  return 10.0 * std::log10(255.0 * 255.0 / mse);
}

/// FNV-1a over the pixels.
std::uint64_t checksum(const rgb_image& img) {
  std::uint64_t hash = 0xCBF29CE484222325ull;
  for (const std::uint8_t v : img.pixels) {
    hash ^= v;
    hash *= 0x100000001B3ull;
  }
  return hash;
}

/// The message of the image_error that `decode` throws, or a note that it threw none.
template <typename Call>
std::string image_error_of(Call&& call) {
  try {
    call();
  } catch (const image_error& e) {
    return e.what();
  }
  return "(no image_error)";
}

}  // namespace

TEST_CASE("jpeg: an encoded synthetic image decodes to nearly the same pixels", "[image][jpeg]") {
  const rgb_image original = synthesize_image(500, 375, 7);
  const std::vector<std::byte> file = encode_jpeg(original, 90);
  REQUIRE(file.size() > 4);
  CHECK(file[0] == std::byte{0xFF});  // SOI
  CHECK(file[1] == std::byte{0xD8});

  const jpeg_header header = read_jpeg_header(file);
  CHECK(header.width == 500);
  CHECK(header.height == 375);

  rgb_image decoded;
  decode_jpeg(file, decoded);
  REQUIRE(decoded.width == 500);
  REQUIRE(decoded.height == 375);
  REQUIRE(decoded.pixels.size() == decoded.bytes());
  CHECK(psnr(original, decoded) > 30.0);

  // A lower quality costs fidelity and saves bytes.
  const std::vector<std::byte> rough = encode_jpeg(original, 50);
  rgb_image rough_decoded;
  decode_jpeg(rough, rough_decoded);
  CHECK(rough.size() < file.size() * 2 / 3);
  CHECK(psnr(original, rough_decoded) < psnr(original, decoded));
}

TEST_CASE("jpeg: the reference file decodes to fixed pixels, as PIL decodes it", "[image][jpeg]") {
  const std::vector<std::byte> file = read_binary(reference_dir / "reference.jpg");
  rgb_image decoded;
  decode_jpeg(file, decoded);
  REQUIRE(decoded.width == 96);
  REQUIRE(decoded.height == 64);
  // Golden: libjpeg-turbo's default (islow) IDCT and fancy upsampling are exact integer code,
  // the same with or without SIMD. A change here means the decode itself changed.
  CHECK(checksum(decoded) == 0xC4551FF786D0F7CCull);

  const rgb_image pil = read_ppm(reference_dir / "reference_pil.ppm");
  REQUIRE(pil.width == 96);
  REQUIRE(pil.height == 64);
  // Debian's PIL decodes with libjpeg-turbo too: identical, in practice (infinite PSNR).
  const double db = psnr(pil, decoded);
  INFO("PSNR against PIL: " << db << " dB");
  CHECK(db > 40.0);
}

TEST_CASE("jpeg: a truncated file fails with libjpeg-turbo's message", "[image][jpeg]") {
  const scratch_dir dir("jpeg-truncated");
  const std::vector<std::byte> whole = encode_jpeg(synthesize_image(120, 90, 3), 90);
  const fs::path path = dir.path() / "truncated.jpg";
  write_bytes(
      path, std::vector<std::byte>(whole.begin(),
                                   whole.begin() + static_cast<std::ptrdiff_t>(whole.size() / 2)));
  const std::vector<std::byte> truncated = read_binary(path);
  REQUIRE(truncated.size() == whole.size() / 2);

  // The header is whole: the size is still known.
  const jpeg_header header = read_jpeg_header(truncated);
  CHECK(header.width == 120);
  CHECK(header.height == 90);

  rgb_image out;
  CHECK_THAT(image_error_of([&] { decode_jpeg(truncated, out); }),
             Catch::Contains("Premature end of JPEG file"));
  CHECK(out.pixels.empty());
  CHECK(out.width == 0);

  // Cut inside the headers: no size to report.
  const std::vector<std::byte> stub(whole.begin(), whole.begin() + 40);
  CHECK_THAT(image_error_of([&] { (void)read_jpeg_header(stub); }),
             Catch::Contains("Premature end of JPEG file"));
  CHECK_THAT(image_error_of([&] { decode_jpeg(stub, out); }),
             Catch::Contains("Premature end of JPEG file"));

  // The same handle (this thread's) decodes a good file afterwards.
  decode_jpeg(whole, out);
  CHECK(out.width == 120);
}

TEST_CASE("jpeg: bytes that are no JPEG fail with libjpeg-turbo's message", "[image][jpeg]") {
  const std::string text = "GIF89a, or anything else that is no JPEG";
  std::vector<std::byte> garbage(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) garbage[i] = static_cast<std::byte>(text[i]);
  rgb_image out;
  // 'G' 'I' = 0x47 0x49.
  CHECK_THAT(image_error_of([&] { decode_jpeg(garbage, out); }),
             Catch::Contains("Not a JPEG file: starts with 0x47 0x49"));
  CHECK_THAT(image_error_of([&] { (void)read_jpeg_header(garbage); }),
             Catch::Contains("Not a JPEG file"));
  CHECK_THAT(image_error_of([&] { decode_jpeg({}, out); }), Catch::Contains("empty"));
  CHECK_THAT(image_error_of([&] { (void)read_jpeg_header({}); }), Catch::Contains("empty"));
}

TEST_CASE("jpeg: a header claiming an absurd size is refused before any allocation",
          "[image][jpeg]") {
  std::vector<std::byte> file = encode_jpeg(synthesize_image(64, 48, 1), 90);
  // The baseline frame header: FF C0, length (2), precision (1), height (2), width (2).
  std::size_t sof = 0;
  for (std::size_t i = 0; i + 8 < file.size(); ++i) {
    if (file[i] == std::byte{0xFF} && file[i + 1] == std::byte{0xC0}) {
      sof = i;
      break;
    }
  }
  REQUIRE(sof > 0);
  for (const std::size_t at : {sof + 5, sof + 7}) {  // 60000 x 60000: 3.6e9 pixels
    file[at] = std::byte{0xEA};
    file[at + 1] = std::byte{0x60};
  }
  rgb_image out;
  CHECK_THAT(image_error_of([&] { (void)read_jpeg_header(file); }),
             Catch::Contains("60000 x 60000"));
  CHECK_THAT(image_error_of([&] { decode_jpeg(file, out); }), Catch::Contains("60000 x 60000"));
  CHECK(out.pixels.capacity() < 1000000);
}

TEST_CASE("jpeg: an image over the pixel budget is refused from its header, before its buffer",
          "[image][jpeg]") {
  // A 64 x 48 picture whose header claims 16000 x 16000: 256000000 pixels, a 768 MB RGB buffer
  // (within the absolute 2^28 limit, over the default budget of 2^26).
  std::vector<std::byte> file = encode_jpeg(synthesize_image(64, 48, 1), 90);
  REQUIRE(pinbench::testing::declare_jpeg_size(file, 16000, 16000));
  rgb_image out;
  try {
    decode_jpeg(file, out);
    FAIL("a 16000x16000 header was decoded");
  } catch (const pixel_budget_error& e) {
    CHECK(e.width() == 16000);
    CHECK(e.height() == 16000);
    CHECK(e.pixels() == 256000000u);
    CHECK(e.budget() == default_max_pixels);
    CHECK(std::string(e.what()) ==
          "16000x16000 = 256000000 pixels, over the decode's budget of 67108864 pixels");
  }
  CHECK(out.pixels.capacity() < 1000000);  // nothing was allocated for the pixels
  CHECK(default_max_pixels == 8192u * 8192u);
  CHECK(read_jpeg_header(file).width == 16000);  // the header alone is read at any budget
  CHECK_THROWS_AS((void)read_jpeg_header(file, default_max_pixels), pixel_budget_error);

  // The budget is the caller's: one pixel short refuses, the exact size decodes.
  const std::vector<std::byte> small = encode_jpeg(synthesize_image(64, 48, 1), 90);
  CHECK_THAT(image_error_of([&] { decode_jpeg(small, out, 64 * 48 - 1); }),
             Catch::Contains("64x48 = 3072 pixels, over the decode's budget of 3071"));
  decode_jpeg(small, out, 64 * 48);
  CHECK(out.width == 64);
  CHECK(out.height == 48);
}

TEST_CASE("jpeg: threads decoding at once get identical pixels", "[image][jpeg]") {
  std::vector<std::vector<std::byte>> files;
  std::vector<rgb_image> expected(3);
  for (std::uint64_t seed = 0; seed < expected.size(); ++seed) {
    files.push_back(
        encode_jpeg(synthesize_image(300 + static_cast<int>(seed) * 20, 200, seed), 90));
    decode_jpeg(files.back(), expected[seed]);
  }
  constexpr int thread_count = 4;
  constexpr int rounds = 12;
  // Each thread records whether every decode matched; the assertions stay on this thread.
  std::vector<int> mismatches(thread_count, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      rgb_image out;  // reused across sizes, as a loader worker does
      for (int r = 0; r < rounds; ++r) {
        const auto which = static_cast<std::size_t>((r + t) % 3);
        try {
          decode_jpeg(files[which], out);
          if (out.width != expected[which].width || out.pixels != expected[which].pixels) {
            ++mismatches[static_cast<std::size_t>(t)];
          }
        } catch (...) {
          ++mismatches[static_cast<std::size_t>(t)];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const int count : mismatches) CHECK(count == 0);
}

TEST_CASE("jpeg: encode refuses what it cannot encode", "[image][jpeg]") {
  rgb_image img = synthesize_image(16, 16, 0);
  CHECK_THAT(image_error_of([&] { (void)encode_jpeg(img, 0); }), Catch::Contains("quality"));
  CHECK_THAT(image_error_of([&] { (void)encode_jpeg(img, 101); }), Catch::Contains("quality"));
  img.pixels.pop_back();
  CHECK_THAT(image_error_of([&] { (void)encode_jpeg(img, 90); }), Catch::Contains("bytes"));
  CHECK_THAT(image_error_of([&] { (void)encode_jpeg(rgb_image{}, 90); }), Catch::Contains("size"));
}

TEST_CASE("jpeg: the library version is a dotted number", "[image][jpeg]") {
  const std::string version = jpeg_library_version();
  INFO(version);
  CHECK(version.size() >= 3);
  CHECK(version.find_first_not_of("0123456789.x") == std::string::npos);
  CHECK(version.front() != '.');
}
