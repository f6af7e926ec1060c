// The loader's dataset: memory and file sources give the same bytes, produce() writes the raw
// bytes and a deterministic checksum, the file is removed, the CPU work is deterministic and its
// calibration scales with cpu_per_sample, and the injected fault throws.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.hpp"
#include "loader/dataset.hpp"
#include "loader/loader.hpp"
#include "loader_support.hpp"
#include "scratch_dir.hpp"

using namespace pinbench;
using namespace pinbench::loader;
using namespace pinbench::loader::testing;
namespace fs = std::filesystem;
using pinbench::testing::scratch_dir;

namespace {

std::vector<std::byte> raw(const dataset& data, std::uint64_t index) {
  std::vector<std::byte> out(data.sample_bytes());
  data.raw_bytes(index, out.data());
  return out;
}

struct produced {
  std::vector<std::byte> bytes;
  sample_header header;
};

produced produce(const dataset& data, std::uint64_t index) {
  produced p;
  p.bytes.resize(data.sample_bytes());
  data.produce(index, p.bytes.data(), p.header);
  return p;
}

}  // namespace

TEST_CASE("dataset: produce writes the raw bytes and a header with index and checksum",
          "[loader]") {
  const dataset data(small_spec(64, 200, 2000));
  CHECK(data.size() == 64);
  CHECK(data.sample_bytes() == 200);
  CHECK(data.units_per_sample() > 0);
  for (const std::uint64_t index : {0u, 1u, 17u, 63u}) {
    CAPTURE(index);
    const produced first = produce(data, index);
    CHECK(first.header.index == index);
    CHECK(first.bytes == raw(data, index));
    CHECK(first.header.checksum != 0);
    // Produced again (the same sample in another epoch, by another worker): same result.
    const produced again = produce(data, index);
    CHECK(again.header.checksum == first.header.checksum);
    CHECK(again.bytes == first.bytes);
  }
  // The samples differ from one another, or a batch whose samples came out in the wrong slots
  // would still pass the byte comparison.
  CHECK(raw(data, 0) != raw(data, 1));
  CHECK(raw(data, 1) != raw(data, 63));
}

TEST_CASE("dataset: the file source holds the same bytes as the memory source, nothing is left",
          "[loader]") {
  const scratch_dir dir("loader-file");
  dataset_spec spec = small_spec(48, 1000, 1000);
  const dataset memory(spec);

  spec.source = dataset_spec::source_kind::file;
  spec.dir = dir.path();
  {
    const dataset on_disk(spec);
    REQUIRE(!on_disk.file().empty());
    // Made in the directory asked for. (Whether the name still exists while the dataset lives
    // is the implementation's choice: it may unlink the file at once and read it through its
    // descriptor, so that a killed process leaves nothing behind.)
    CHECK(on_disk.file().parent_path() == dir.path());
    on_disk.prepare_epoch();
    for (std::uint64_t index = 0; index < spec.samples; ++index) {
      CAPTURE(index);
      CHECK(raw(on_disk, index) == raw(memory, index));
      const produced from_file = produce(on_disk, index);
      const produced from_memory = produce(memory, index);
      CHECK(from_file.header.index == index);
      CHECK(from_file.header.checksum == from_memory.header.checksum);
      CHECK(from_file.bytes == from_memory.bytes);
    }
  }
  // The destructor removed the file: the directory is empty again.
  CHECK(fs::is_empty(dir.path()));
}

TEST_CASE("dataset: a cold cache evicts the file's pages and reads the same bytes again",
          "[loader]") {
  const scratch_dir dir("loader-cold");
  dataset_spec spec = small_spec(16, 4096);
  const dataset memory(spec);
  spec.source = dataset_spec::source_kind::file;
  spec.dir = dir.path();
  spec.cold_cache = true;
  const dataset cold(spec);
  for (int epoch = 0; epoch < 2; ++epoch) {
    cold.prepare_epoch();
    for (std::uint64_t index = 0; index < spec.samples; ++index) {
      CAPTURE(epoch, index);
      CHECK(raw(cold, index) == raw(memory, index));
    }
  }
}

TEST_CASE("dataset: a file that cannot be made is an environment error", "[loader]") {
  dataset_spec spec = small_spec(4, 64);
  spec.source = dataset_spec::source_kind::file;
  spec.dir = "/nonexistent-pinbench-dir/below";
  CHECK_THROWS_AS(dataset(spec), environment_error);
}

TEST_CASE("dataset: the injected fault throws loader_error for that sample only", "[loader]") {
  dataset_spec spec = small_spec(32, 128);
  spec.fail_at_sample = 5;
  const dataset data(spec);
  std::vector<std::byte> out(spec.sample_bytes);
  sample_header header;
  CHECK_NOTHROW(data.produce(4, out.data(), header));
  CHECK_THROWS_AS(data.produce(5, out.data(), header), loader_error);
  CHECK_NOTHROW(data.produce(6, out.data(), header));
}

TEST_CASE("dataset: bursts keep produce() exact", "[loader]") {
  dataset_spec spec = small_spec(40, 96, 1000);
  spec.burst_every = 10;
  spec.burst_length = 3;
  spec.burst_factor = 4.0;
  const dataset data(spec);
  for (std::uint64_t index = 0; index < spec.samples; ++index) {
    CAPTURE(index);
    const produced p = produce(data, index);
    CHECK(p.header.index == index);
    CHECK(p.bytes == raw(data, index));
  }
}

TEST_CASE("cpu_work is deterministic and depends on its inputs", "[loader]") {
  std::vector<std::byte> bytes(8192);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<std::byte>((i * 131u + 7u) & 0xffu);
  const std::uint64_t a = cpu_work(bytes.data(), bytes.size(), 1000, 42);
  CHECK(a == cpu_work(bytes.data(), bytes.size(), 1000, 42));
  CHECK(a != cpu_work(bytes.data(), bytes.size(), 1001, 42));
  CHECK(a != cpu_work(bytes.data(), bytes.size(), 1000, 43));
  std::vector<std::byte> other = bytes;
  other[10] = static_cast<std::byte>(std::to_integer<unsigned>(other[10]) ^ 0x5au);
  CHECK(a != cpu_work(other.data(), other.size(), 1000, 42));
}

TEST_CASE("cpu calibration is measured once and units scale with cpu_per_sample", "[loader]") {
  const cpu_calibration& calibration = calibrate_cpu_work();
  CHECK(calibration.ns_per_unit > 0);
  CHECK(calibration.trials > 0);
  CHECK(&calibrate_cpu_work() == &calibration);

  const dataset none(small_spec(1, 64, 0));
  const dataset small(small_spec(1, 64, 20'000));
  const dataset large(small_spec(1, 64, 200'000));
  CHECK(none.units_per_sample() == 0);
  CHECK(small.units_per_sample() > 0);
  CHECK(large.units_per_sample() > small.units_per_sample());
  // Arithmetic on one fixed calibration, not a timing: ten times the time, about ten times the
  // units (rounding allowed for).
  CHECK(large.units_per_sample() >= 5 * small.units_per_sample());
  CHECK(large.units_per_sample() <= 20 * small.units_per_sample());
}
