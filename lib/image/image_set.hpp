// The images a jpeg dataset reads: generated once by pinbench (deterministic for their
// parameters, cached on disk by the parameters' hash) or a user's ImageFolder, read as it is.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "image/jpeg.hpp"

namespace pinbench::image {

/// One image file and its class (the index of its class folder, in sorted order).
struct image_entry {
  std::filesystem::path path;
  int label = 0;
};

struct image_list {
  std::filesystem::path root;      ///< the folder the files are in
  std::vector<image_entry> files;  ///< ImageFolder order: classes sorted, then file names
  std::uint64_t total_bytes = 0;   ///< the files' sizes added up
  bool generated = false;          ///< pinbench made them (false: the user's folder)
};

/// What generated images look like: sizes drawn uniformly in the ranges, JPEG quality, seed.
struct generated_spec {
  std::uint64_t images = 256;
  int min_width = 400, max_width = 600;  ///< around ImageNet's typical 500 x 375
  int min_height = 300, max_height = 450;
  int quality = 90;
  int classes = 10;  ///< class folders the images are spread over
  std::uint64_t seed = 0;
};

/// Where generated image sets are kept: $PINBENCH_CACHE_DIR, else $XDG_CACHE_HOME/pinbench,
/// else $HOME/.cache/pinbench, else $TMPDIR/pinbench-cache; image sets under images/<hash>.
[[nodiscard]] std::filesystem::path cache_root();

/// The folder a generated set lives in: cache_root()/images/<16 hex digits of the spec's hash>.
[[nodiscard]] std::filesystem::path generated_dir(const generated_spec& spec);

/// A photo-like test image (smooth colour fields, edges and shapes, sensor-like noise), so that
/// its JPEG is about as large and as costly to decode as a photograph of its size.
/// Deterministic for (width, height, seed).
[[nodiscard]] rgb_image synthesize_image(int width, int height, std::uint64_t seed);

/// The generated set for `spec`, made if it is not in the cache yet: written into a temporary
/// sibling folder and renamed into place, so that a set is either whole or absent (two
/// processes making the same set at once both end with the same complete folder). Ctrl-C stops
/// the generation (interrupted_error) and leaves nothing half-written.
/// Throws environment_error when the cache cannot be written (the message names the folder).
[[nodiscard]] image_list ensure_generated(const generated_spec& spec);

/// A user's folder in torchvision's ImageFolder layout (class subfolders holding *.jpg/*.jpeg,
/// any case), at most `limit` files (0 = all) in ImageFolder order. Never writes into it.
/// Throws input_error(source, json_path, ...) when the folder is missing, not a folder, or holds
/// no JPEG file.
[[nodiscard]] image_list scan_image_folder(const std::filesystem::path& dir, std::uint64_t limit,
                                           const std::string& source, const std::string& json_path);

/// How many times scan_image_folder listed a folder in this process (the test that a run lists
/// a user's folder once reads it).
[[nodiscard]] std::uint64_t image_folder_scans() noexcept;

}  // namespace pinbench::image
