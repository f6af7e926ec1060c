// Loading scenarios from files, directories and the built-ins; the bad-input fixtures.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>

#include "scenario/builtin.hpp"
#include "scenario/scenario.hpp"
#include "scenario_helpers.hpp"
#include "test_paths.hpp"

using namespace pinbench;
using namespace pinbench::scenario;
using pinbench::testing::input_error_of;
using pinbench::testing::transfer_doc;
namespace fs = std::filesystem;

namespace {

const fs::path bad_dir = fs::path(pinbench::testing::source_dir()) / "tests" / "data" / "bad";

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
class temp_dir {
 public:
  temp_dir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() / ("pinbench-scenario-test-" + std::to_string(::getpid()) +
                                         "-" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  [[nodiscard]] const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }

 private:
  fs::path path_;
};

std::vector<std::string> names_of(const std::vector<pinbench::scenario::scenario>& all) {
  std::vector<std::string> names;
  for (const auto& s : all) names.push_back(s.name);
  return names;
}

}  // namespace

TEST_CASE("every bad fixture is rejected with a one-line input_error", "[scenario][inputs]") {
  // What each fixture is about: the JSON path its error must name ("" for a syntax error).
  const std::map<std::string, std::string> expected_path = {
      {"bad-name-characters.json", "name"},
      {"duration-without-unit.json", "params.overlap_compute"},
      {"empty-matrix-list.json", "matrix.bytes"},
      {"integer-as-text.json", "params.copies_per_sample"},
      {"max-samples-below-min.json", "sampling.max_samples"},
      {"missing-name.json", "name"},
      {"negative-gate-threshold.json", "gate.bandwidth.threshold"},
      {"negative-size.json", "matrix.bytes[1]"},
      {"not-an-object.json", "(root)"},
      {"syntax-error-missing-comma.json", ""},
      {"unknown-enum-value.json", "params.memory"},
      {"unknown-kind.json", "kind"},
      {"unknown-param.json", "params.byts"},
      {"unknown-sampling-key.json", "sampling.min_sample"},
      {"unknown-top-level-key.json", "matrx"},
      {"wrong-schema.json", "schema"},
      {"zero-size.json", "params.bytes"},
  };
  std::size_t seen = 0;
  for (const auto& entry : fs::directory_iterator(bad_dir)) {
    const auto& path = entry.path();
    if (path.extension() != ".json") continue;
    ++seen;
    INFO(path.string());
    try {
      (void)load_scenario_file(path);
      FAIL("accepted a bad scenario");
    } catch (const input_error& e) {
      INFO(e.what());
      CHECK(e.file() == path.string());
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      const auto it = expected_path.find(path.filename().string());
      if (it != expected_path.end()) CHECK(e.json_path() == it->second);
    }
  }
  CHECK(seen >= expected_path.size());
}

TEST_CASE("a syntax error in a file names the file, line and column", "[scenario][inputs]") {
  const auto file = bad_dir / "syntax-error-missing-comma.json";
  CHECK(input_error_of([&] { (void)load_scenario_file(file); }) ==
        file.string() +
            ": line 4, column 8: JSON syntax error: unexpected string literal; expected '}'");
}

TEST_CASE("a missing file cannot be read", "[scenario][inputs]") {
  temp_dir dir;
  const auto missing = (dir.path() / "missing.json").string();
  CHECK(input_error_of([&] { (void)load_scenario_file(missing); }) ==
        missing + ": cannot read: No such file or directory");
  CHECK(input_error_of([&] { (void)load_inputs({missing}); }) ==
        missing + ": cannot read: No such file or directory");
}

TEST_CASE("a scenario path that is not a regular file is refused by its type, unopened",
          "[scenario][inputs]") {
  temp_dir dir;
  const fs::path fifo = dir.path() / "fifo.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Opening a FIFO for reading waits for a writer: the load runs aside, and a writer is let in
  // if it has not returned in time, so that a regression fails here instead of hanging.
  auto load = std::async(std::launch::async, [&] {
    return input_error_of([&] { (void)load_inputs({fifo.string()}); });
  });
  if (load.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
    FAIL("loading a FIFO waited for a writer");
  }
  CHECK(load.get() == fifo.string() + ": is a FIFO (named pipe), expected a regular file");

  CHECK(input_error_of([] { (void)load_inputs({"/dev/zero"}); }) ==
        "/dev/zero: is a character device, expected a regular file");

  const fs::path socket_path = dir.path() / "socket.json";
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(sock >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(socket_path.string().size() < sizeof address.sun_path);
  std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
  REQUIRE(::bind(sock, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  CHECK(input_error_of([&] { (void)load_scenario_file(socket_path); }) ==
        socket_path.string() + ": is a socket, expected a regular file");
  ::close(sock);
  // A directory keeps its meaning: the scenarios in it.
  dir.write("a.json", transfer_doc({}, "in-dir"));
  CHECK(names_of(load_inputs({dir.path().string()})) == std::vector<std::string>{"in-dir"});
}

TEST_CASE("a directory gives every *.json in it, sorted by file name", "[scenario][inputs]") {
  temp_dir dir;
  dir.write("b.json", transfer_doc({}, "second"));
  dir.write("a.json", transfer_doc({}, "first"));
  dir.write("notes.txt", "not a scenario");
  fs::create_directories(dir.path() / "nested");
  dir.write("nested/c.json", transfer_doc({}, "nested-is-not-read"));

  const auto all = load_inputs({dir.path().string()});
  CHECK(names_of(all) == std::vector<std::string>{"first", "second"});
  CHECK(all[0].source == (dir.path() / "a.json").string());

  // Files and directories mix, in argument order.
  const auto mixed =
      load_inputs({(dir.path() / "nested" / "c.json").string(), dir.path().string()});
  CHECK(names_of(mixed) == std::vector<std::string>{"nested-is-not-read", "first", "second"});
}

TEST_CASE("a directory without scenarios is an error", "[scenario][inputs]") {
  temp_dir dir;
  dir.write("readme.txt", "nothing here");
  CHECK(input_error_of([&] { (void)load_inputs({dir.path().string()}); }) ==
        dir.path().string() + ": no scenario files (*.json) in this directory");
}

TEST_CASE("one bad file stops everything", "[scenario][inputs]") {
  temp_dir dir;
  dir.write("a.json", transfer_doc({}, "good"));
  const auto bad = dir.write("b.json", transfer_doc(R"("params": {"bytes": 0})", "bad"));
  CHECK(input_error_of([&] { (void)load_inputs({dir.path().string()}); }) ==
        bad.string() + R"(: params.bytes: expected a positive size such as "64MiB", got 0)");
}

TEST_CASE("a scenario name may appear only once per run", "[scenario][inputs]") {
  temp_dir dir;
  const auto a = dir.write("a.json", transfer_doc({}, "same"));
  const auto b = dir.write("b.json", transfer_doc({}, "same"));
  CHECK(input_error_of([&] {
          (void)load_inputs({a.string(), b.string()});
        }) == b.string() + R"(: name: scenario "same" is also defined in )" + a.string());
}

TEST_CASE("builtin:NAME loads an embedded scenario", "[scenario][inputs]") {
  CHECK(input_error_of([] {
          (void)load_inputs({"builtin:no-such-scenario-here"});
        }).starts_with("builtin:no-such-scenario-here: no built-in scenario of that name"));
  CHECK(input_error_of([] {
          (void)load_inputs({"builtin:no-such-scenario-here"});
        }).ends_with("; see pinbench list"));
  for (const auto& b : builtin_files()) {
    INFO(b.name);
    const auto all = load_inputs({"builtin:" + std::string(b.name)});
    REQUIRE(all.size() == 1);
    CHECK(all[0].source == b.source);
    CHECK(b.source == "scenarios/" + std::string(b.name) + ".json");
    // A near miss suggests the real name.
    const std::string typo = "builtin:" + std::string(b.name) + "x";
    CHECK(input_error_of([&] {
            (void)load_inputs({typo});
          }).find("(did you mean \"" + std::string(b.name) + "\"?)") != std::string::npos);
  }
}

TEST_CASE("every built-in scenario validates and expands", "[scenario][inputs]") {
  for (const auto& b : builtin_files()) {
    INFO(b.source);
    const auto s = parse_scenario(b.text, std::string(b.source));
    const auto cases = expand(s);
    CHECK_FALSE(cases.empty());
  }
}

TEST_CASE("no argument gives the built-ins tagged quick", "[scenario][inputs]") {
  std::vector<std::string> quick;
  for (const auto& b : builtin_files()) {
    const auto s = parse_scenario(b.text, std::string(b.source));
    if (std::find(s.tags.begin(), s.tags.end(), "quick") != s.tags.end()) quick.push_back(s.name);
  }
  if (quick.empty()) {
    CHECK(input_error_of([] { (void)load_inputs({}); }).find("quick") != std::string::npos);
  } else {
    CHECK(names_of(load_inputs({})) == quick);
  }
}
