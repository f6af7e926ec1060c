#include "loader/jpeg_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/pattern.hpp"
#include "image/jpeg.hpp"
#include "loader/loader.hpp"

namespace pinbench::loader {

namespace {

constexpr std::size_t skipped_files_kept = 10;

// What a worker thread keeps between samples, so that the hot path allocates nothing.
struct worker_scratch {
  std::vector<std::byte> file;
  image::rgb_image decoded;
  image::resize_scratch resize;
};

worker_scratch& scratch() {
  thread_local worker_scratch s;
  return s;
}

// The whole file into `buf` (resized to the file's size), as PIL reads it: open, read, close.
void read_file(const std::filesystem::path& path, std::vector<std::byte>& buf) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw loader_error(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw loader_error(fmt::format("{}: cannot stat: {}", path.string(), std::strerror(err)));
  }
  buf.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < buf.size()) {
    const ::ssize_t r = ::read(fd, buf.data() + done, buf.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const int err = errno;
      ::close(fd);
      throw loader_error(fmt::format("{}: cannot read: {}", path.string(),
                                     r == 0 ? "unexpected end of file" : std::strerror(err)));
    }
    done += static_cast<std::size_t>(r);
  }
  ::close(fd);
}

}  // namespace

std::uint64_t sample_fingerprint(const std::byte* data, std::size_t bytes,
                                 std::uint64_t index) noexcept {
  constexpr std::size_t stride_words = 61;  // prime: catches shifted rows and channels
  std::uint64_t h = mix64(index ^ 0x6A09E667F3BCC909ull);
  const std::size_t words = bytes / 8;
  for (std::size_t w = 0; w < words; w += stride_words) {
    std::uint64_t word = 0;
    std::memcpy(&word, data + 8 * w, 8);
    h = mix64(h ^ word);
  }
  if (words != 0) {
    std::uint64_t last = 0;
    std::memcpy(&last, data + 8 * (words - 1), 8);
    h = mix64(h ^ last);
  }
  return h == 0 ? 1 : h;
}

jpeg_source::jpeg_source(const dataset_spec& spec) : spec_(spec.jpeg) {
  if (spec_.folder) {
    images_ = spec_.folder;
  } else {
    image::generated_spec g = spec_.generate;
    if (g.images == 0) g.images = spec.samples;
    images_ = std::make_shared<const image::image_list>(image::ensure_generated(g));
  }
  if (images_->files.empty()) throw input_error("loader: the jpeg dataset has no image to read");
}

std::size_t jpeg_source::sample_bytes() const noexcept {
  return image::tensor_bytes(spec_.crop, spec_.format);
}

const image::image_entry& jpeg_source::file_for(std::uint64_t index) const noexcept {
  return images_->files[index % images_->files.size()];
}

void jpeg_source::drop_page_cache() const {
  for (const auto& f : images_->files) {
    const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // a missing file fails, with its name, when it is read
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

void jpeg_source::produce(std::uint64_t index, std::byte* out, std::uint64_t& checksum,
                          sample_cost& cost) const {
  const image::image_entry& entry = file_for(index);
  worker_scratch& s = scratch();
  const std::int64_t t0 = now_ns();
  read_file(entry.path, s.file);
  const std::int64_t t1 = now_ns();
  cost.read_ns = t1 - t0;
  cost.bytes_read = s.file.size();
  try {
    // The header first: an image over the budget is refused before its pixels are allocated.
    image::decode_jpeg(std::span<const std::byte>(s.file.data(), s.file.size()), s.decoded,
                       spec_.max_pixels);
  } catch (const image::image_error& e) {
    std::string reason = e.what();
    if (const auto* big = dynamic_cast<const image::pixel_budget_error*>(&e))
      reason = fmt::format(
          "{}x{} = {} pixels, over dataset.max_pixels {} (raise it to decode "
          "this image)",
          big->width(), big->height(), big->pixels(), big->budget());
    if (!spec_.skip_corrupt) throw loader_error(fmt::format("{}: {}", entry.path.string(), reason));
    std::memset(out, 0, sample_bytes());
    checksum = 0;
    cost.decode_ns = now_ns() - t1;
    cost.skipped = true;
    count_skip(entry, reason);
    return;
  }
  const std::int64_t t2 = now_ns();
  cost.decode_ns = t2 - t1;

  // The sample's own random stream: the same crop and flip in every epoch and in verification.
  image::sample_rng rng(mix64(spec_.seed ^ mix64(index + 0x9E3779B97F4A7C15ull)));
  const image::crop_box box =
      image::random_resized_crop_box(s.decoded.width, s.decoded.height, rng);
  const bool flip = rng.uniform(0.0, 1.0) < 0.5;
  image::resize_to_tensor(s.decoded, box, spec_.crop, flip, spec_.format, out, s.resize);
  cost.augment_ns = now_ns() - t2;
  checksum = sample_fingerprint(out, sample_bytes(), index);
}

void jpeg_source::count_skip(const image::image_entry& entry, const std::string& reason) const {
  skipped_.fetch_add(1);
  std::lock_guard lock(skipped_mutex_);
  if (skipped_files_.size() < skipped_files_kept)
    skipped_files_.push_back(fmt::format("{}: {}", entry.path.string(), reason));
}

void jpeg_source::count_skip_in_worker(std::uint64_t index) const {
  count_skip(file_for(index), "does not decode (skipped in a worker process)");
}

std::vector<std::string> jpeg_source::skipped_files() const {
  std::lock_guard lock(skipped_mutex_);
  return skipped_files_;
}

}  // namespace pinbench::loader
