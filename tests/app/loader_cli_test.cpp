// The loader kind through the pinbench executable: a run with its verdict in every format,
// load-time errors, and a failing worker recorded as a failed case.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "image/image_set.hpp"
#include "image/jpeg.hpp"
#include "support.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using pinbench::testing::fresh_dir;
using pinbench::testing::run_pinbench;

namespace {

const char* k_fast_loader =
    " --backend host --quiet --set sampling.min_samples=1 --set sampling.max_samples=1"
    " --set sampling.warmup=0 --set dataset.samples=64 --set dataset.sample_bytes=1KiB"
    " --set dataset.cpu_per_sample=1us --set compute_per_batch=100us --set batch_size=8";

}  // namespace

TEST_CASE("loader: a built-in runs end to end with its verdict in JSON, table and Markdown",
          "[app][loader]") {
  const fs::path dir = fresh_dir("loader");
  const std::string out = (dir / "r.json").string();
  const auto o = run_pinbench("run builtin:loader-workers --out " + out + k_fast_loader);
  INFO(o.err);
  REQUIRE(o.code == 0);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  const auto& s = j.at("scenarios").at(0);
  CHECK(s.at("kind") == "loader");
  CHECK(s.at("cases").size() == 5);
  const std::string verdict = s.at("verdict").get<std::string>();
  CHECK(verdict.find("busy") != std::string::npos);
  for (const auto& c : s.at("cases")) {
    CHECK(c.at("status") == "ok");
    CHECK(c.at("info").at("verified") == true);
  }

  const auto table =
      run_pinbench("run builtin:loader-workers --format table" + std::string(k_fast_loader));
  REQUIRE(table.code == 0);
  CHECK(table.out.find("verdict: ") != std::string::npos);
  CHECK(table.out.find("gpu_busy") != std::string::npos);
  const auto md =
      run_pinbench("run builtin:loader-workers --format md" + std::string(k_fast_loader));
  REQUIRE(md.code == 0);
  CHECK(md.out.find("- **verdict:** ") != std::string::npos);
}

TEST_CASE("loader: bad params exit 2 with one line, a failing worker is a failed case",
          "[app][loader]") {
  const fs::path dir = fresh_dir("loader-bad");
  const std::string out = (dir / "r.json").string();
  for (const std::string args : {"--set pin_mode=rings", "--set dataset.sample_byte=1KiB",
                                 "--set pin_mode=ring --set ring_slots=2 --set num_workers=4"}) {
    INFO(args);
    const auto o = run_pinbench("run builtin:loader-workers --out " + out + " " + args);
    CHECK(o.code == 2);
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(out));
  }

  const auto o = run_pinbench("run builtin:loader-workers --out " + out + k_fast_loader +
                              " --set dataset.fail_at_sample=20");
  CHECK(o.code == 1);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  const auto& cases = j.at("scenarios").at(0).at("cases");
  REQUIRE(cases.size() == 5);
  for (const auto& c : cases) {
    CHECK(c.at("status") == "error");
    CHECK(c.at("message").get<std::string>().find("sample 20") != std::string::npos);
  }
}

TEST_CASE(
    "loader: loader-machinery runs thread workers at 0 and 2 on free samples, and its "
    "reference file applies to the result",
    "[app][loader]") {
  const fs::path dir = fresh_dir("loader-machinery");
  const std::string out = (dir / "r.json").string();
  // Fewer samples and one run: what is checked here is the shape, not the speed (that is the
  // benchmark's: results/loader-peer-host/NOTES.md).
  const auto o = run_pinbench("run builtin:loader-machinery --backend host --quiet --out " + out +
                              " --set dataset.samples=512 --set sampling.warmup=0"
                              " --set sampling.min_samples=1 --set sampling.max_samples=1");
  INFO(o.err);
  REQUIRE(o.code == 0);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  const auto& cases = j.at("scenarios").at(0).at("cases");
  REQUIRE(cases.size() == 2);
  CHECK(cases.at(0).at("id") == "num_workers=0");
  CHECK(cases.at(1).at("id") == "num_workers=2");
  for (const auto& c : cases) {
    CHECK(c.at("status") == "ok");
    CHECK(c.at("info").at("verified") == true);
    CHECK(c.at("params").at("worker_method") == "thread");
    CHECK(c.at("params").at("dataset").at("sample_bytes") == "64");
  }
  CHECK(cases.at(1).at("info").at("worker_method") == "thread");
  // The references select this result and judge both cases: exit 0 (inside) or 1 (outside,
  // on a machine loaded by other tests), never a malformed file (2) or nothing judged (3).
  const std::string refs =
      (fs::path(pinbench::testing::source_dir()) / "results/loader-peer-host/machinery-refs.json")
          .string();
  const auto check = run_pinbench("check " + out + " --reference " + refs);
  INFO(check.out << check.err);
  CHECK((check.code == 0 || check.code == 1));
  CHECK(check.out.find("num_workers=2  samples_per_s") != std::string::npos);
}

namespace {

// loader-jpeg-workers made small: tiny generated images, a small crop, one run per case.
const char* k_fast_jpeg =
    " --backend host --quiet --set sampling.min_samples=1 --set sampling.max_samples=1"
    " --set sampling.warmup=0 --set dataset.samples=24 --set batch_size=8"
    " --set dataset.min_width=48 --set dataset.max_width=80 --set dataset.min_height=40"
    " --set dataset.max_height=64 --set dataset.crop=32";

}  // namespace

TEST_CASE("loader: jpeg on generated images, then on a user's folder, then a corrupt file",
          "[app][loader][image]") {
  const fs::path dir = fresh_dir("loader-jpeg");
  // Generated images go to the cache named by PINBENCH_CACHE_DIR (inherited by pinbench).
  ::setenv("PINBENCH_CACHE_DIR", (dir / "cache").c_str(), 1);
  const std::string out = (dir / "gen.json").string();
  auto o = run_pinbench("run builtin:loader-jpeg-workers --out " + out + k_fast_jpeg);
  INFO(o.err);
  REQUIRE(o.code == 0);
  fs::path images_dir;
  {
    std::ifstream in(out);
    const auto j = nlohmann::json::parse(in);
    const auto& s = j.at("scenarios").at(0);
    REQUIRE(s.at("cases").size() == 4);
    CHECK(s.at("verdict").get<std::string>().find("decode") != std::string::npos);
    for (const auto& c : s.at("cases")) {
      CHECK(c.at("status") == "ok");
      CHECK(c.at("info").at("verified") == true);
      const auto& images = c.at("info").at("images");
      CHECK(images.at("generated") == true);
      CHECK(images.at("files") == 24);
      images_dir = images.at("dir").get<std::string>();
      for (const char* want : {"decode_time", "augment_time", "read_time"})
        CHECK(c.at("metrics").at(want).at("samples").size() == 24);  // one per sample
      CHECK(c.at("metrics").at("bytes_read").at("samples").at(0).get<double>() ==
            c.at("info").at("images").at("file_bytes").get<double>());
    }
  }
  REQUIRE(fs::is_directory(images_dir));
  CHECK(images_dir.string().rfind((dir / "cache").string(), 0) == 0);

  // The same images as a user's folder: read where they are, nothing written there.
  const fs::path folder = dir / "user";
  fs::copy(images_dir, folder, fs::copy_options::recursive);
  const std::string user_out = (dir / "user.json").string();
  o = run_pinbench("run builtin:loader-jpeg-workers --out " + user_out + k_fast_jpeg +
                   " --set dataset.dir=" + folder.string() + " --set num_workers=2");
  REQUIRE(o.code == 0);
  {
    std::ifstream in(user_out);
    const auto j = nlohmann::json::parse(in);
    const auto& c = j.at("scenarios").at(0).at("cases").at(0);
    CHECK(c.at("status") == "ok");
    CHECK(c.at("info").at("images").at("generated") == false);
    CHECK(c.at("info").at("images").at("dir") == folder.string());
  }

  // A truncated file: every case fails naming it, the run goes on; with skip_corrupt it counts.
  fs::path victim;
  for (const auto& e : fs::recursive_directory_iterator(folder))
    if (e.path().extension() == ".jpg") victim = e.path();
  REQUIRE(!victim.empty());
  fs::resize_file(victim, fs::file_size(victim) / 3);
  o = run_pinbench("run builtin:loader-jpeg-workers --out " + user_out + k_fast_jpeg +
                   " --set dataset.dir=" + folder.string());
  CHECK(o.code == 1);
  {
    std::ifstream in(user_out);
    const auto j = nlohmann::json::parse(in);
    const auto& cases = j.at("scenarios").at(0).at("cases");
    REQUIRE(cases.size() == 4);
    for (const auto& c : cases) {
      CHECK(c.at("status") == "error");
      CHECK(c.at("message").get<std::string>().find(victim.string()) != std::string::npos);
    }
  }
  o = run_pinbench("run builtin:loader-jpeg-workers --out " + user_out + k_fast_jpeg +
                   " --set dataset.dir=" + folder.string() +
                   " --set dataset.skip_corrupt=true --set num_workers=1");
  CHECK(o.code == 0);
  {
    std::ifstream in(user_out);
    const auto j = nlohmann::json::parse(in);
    const auto& c = j.at("scenarios").at(0).at("cases").at(0);
    CHECK(c.at("status") == "ok");
    CHECK(c.at("info").at("corrupt_skipped").at("samples").get<int>() >= 1);
  }
  ::unsetenv("PINBENCH_CACHE_DIR");
  fs::remove_all(dir);
}

TEST_CASE("loader: images over dataset.max_pixels fail the case by name, in bounded memory",
          "[app][loader][image]") {
  const fs::path dir = fresh_dir("loader-jpeg-huge");
  // Eight ~1 KB files whose headers declare 16000 x 16000 (a 768 MB RGB buffer each), read by
  // four workers: each would hold one such buffer if the header were not checked first.
  fs::create_directories(dir / "photos" / "class_a");
  std::vector<std::byte> big =
      pinbench::image::encode_jpeg(pinbench::image::synthesize_image(64, 48, 1), 90);
  REQUIRE(pinbench::testing::declare_jpeg_size(big, 16000, 16000));
  for (int i = 0; i < 8; ++i)
    pinbench::testing::write_binary(
        dir / "photos" / "class_a" / ("big_" + std::to_string(i) + ".jpg"), big);
  const std::string out = (dir / "r.json").string();
  const std::string base = "run builtin:loader-jpeg-workers --out " + out + k_fast_jpeg +
                           " --set dataset.dir=" + (dir / "photos").string() +
                           " --set num_workers=4 --set batch_size=1 --set dataset.samples=8";
  auto o = run_pinbench(base);
  INFO(o.err);
  CHECK(o.code == 1);
  {
    std::ifstream in(out);
    const auto j = nlohmann::json::parse(in);
    const auto& c = j.at("scenarios").at(0).at("cases").at(0);
    CHECK(c.at("status") == "error");
    const auto message = c.at("message").get<std::string>();
    CHECK(message.find((dir / "photos" / "class_a").string() + "/big_") != std::string::npos);
    CHECK(message.find(".jpg: 16000x16000 = 256000000 pixels, over dataset.max_pixels 67108864 "
                       "(raise it to decode this image)") != std::string::npos);
    CHECK(j.at("process").at("peak_rss_bytes").get<std::uint64_t>() < (std::uint64_t{512} << 20));
  }
  // The budget is a param with bounds: 0 and more than 2^28 are refused at load.
  for (const char* bad : {"0", "268435457"}) {
    o = run_pinbench(base + " --set dataset.max_pixels=" + bad);
    CHECK(o.code == 2);
    CHECK(o.err.find("dataset.max_pixels") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("loader: a missing or empty image folder is exit 2 at validate", "[app][loader][image]") {
  const fs::path dir = fresh_dir("loader-jpeg-bad");
  fs::create_directories(dir / "empty" / "class_a");
  for (const fs::path& bad : {dir / "missing", dir / "empty"}) {
    INFO(bad);
    const auto o =
        run_pinbench("validate builtin:loader-jpeg-workers --set dataset.dir=" + bad.string());
    CHECK(o.code == 2);
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK(o.err.find("params.dataset.dir") != std::string::npos);
    CHECK(o.err.find(bad.string()) != std::string::npos);
  }
  CHECK(fs::is_empty(dir / "empty" / "class_a"));  // nothing written into a user's folder
  fs::remove_all(dir);
}
