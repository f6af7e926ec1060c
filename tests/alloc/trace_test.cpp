// Trace readers: pinbench.trace/1 JSON (streamed) and RMM replay CSV logs, on small fixtures, on
// one bad fixture per kind of error, and on a large generated trace.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "alloc/workload.hpp"
#include "core/error.hpp"
#include "test_paths.hpp"

using namespace pinbench;
using namespace pinbench::alloc;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) {
  return pinbench::testing::source_dir() + "/tests/data/traces/" + name;
}

std::vector<event> read_all(const std::string& path) {
  auto source = open_trace(path);
  std::vector<event> out;
  event e;
  while (source->next(e)) out.push_back(e);
  return out;
}

struct failure {
  std::string message;
  std::size_t events_before = 0;  ///< delivered before the error surfaced
};

// Errors found before the first event come from open_trace, later ones from next(); both are
// the same input_error.
failure read_error(const std::string& path) {
  failure f;
  try {
    auto source = open_trace(path);
    event e;
    while (source->next(e)) ++f.events_before;
    f.message = "(no error)";
  } catch (const input_error& e) {
    f.message = e.what();
  }
  return f;
}

event alloc_of(std::uint64_t id, std::uint64_t size, std::uint32_t stream = 0) {
  event e;
  e.op = event::kind::alloc;
  e.id = id;
  e.size = size;
  e.stream = stream;
  return e;
}
event free_of(std::uint64_t id) {
  event e;
  e.op = event::kind::free;
  e.id = id;
  return e;
}
event mark(std::string label) {
  event e;
  e.op = event::kind::mark;
  e.label = std::move(label);
  return e;
}
event empty_cache() {
  event e;
  e.op = event::kind::empty_cache;
  return e;
}

void check_events(const std::vector<event>& got, const std::vector<event>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("event " << i);
    CHECK(got[i].op == expected[i].op);
    CHECK(got[i].id == expected[i].id);
    CHECK(got[i].size == expected[i].size);
    CHECK(got[i].stream == expected[i].stream);
    CHECK(got[i].label == expected[i].label);
  }
}

class temp_dir {
 public:
  temp_dir()
      : path_(fs::temp_directory_path() / ("pinbench-trace-test-" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  [[nodiscard]] std::string file(const std::string& name, const std::string& content = {}) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }

 private:
  fs::path path_;
};

// A JSON trace of `pairs` alloc/free pairs with up to 8 allocations live, written line by line.
std::string write_large_trace(const temp_dir& dir, std::uint64_t pairs) {
  const std::string path = dir.file("large.json");
  std::ofstream out(path);
  out << "{\"schema\": \"pinbench.trace/1\", \"events\": [\n";
  for (std::uint64_t i = 1; i <= pairs; ++i) {
    out << "{\"op\": \"alloc\", \"id\": " << i << ", \"size\": " << 512 * (1 + i % 64)
        << ", \"stream\": " << i % 2 << "},\n";
    if (i > 8) out << "{\"op\": \"free\", \"id\": " << i - 8 << "},\n";
  }
  for (std::uint64_t i = pairs > 8 ? pairs - 7 : 1; i <= pairs; ++i) {
    out << "{\"op\": \"free\", \"id\": " << i << "},\n";
  }
  out << "{\"op\": \"mark\", \"label\": \"end\"}\n]}\n";
  return path;
}

}  // namespace

TEST_CASE("a pinbench.trace/1 JSON trace is read event by event", "[alloc][trace]") {
  check_events(read_all(fixture("valid.json")),
               {alloc_of(1, 4096), alloc_of(2, 2097152, 1), free_of(1), mark("iteration"),
                alloc_of(3, 512), free_of(2),
                free_of(99),  // never allocated: passed on, the allocator run skips it
                empty_cache(), alloc_of(1, 1048576),  // an id may be reused once freed
                free_of(1), free_of(3), mark("iteration")});
}

TEST_CASE("an RMM replay CSV log is read with pointers and streams mapped", "[alloc][trace]") {
  // Stream 0x0 is seen first (index 0), 0x7f8a38001020 second (index 1). The failed allocation,
  // the zero-byte allocation and the free of (nil) make no event; the pointer allocated again
  // after its free gets a new id (3); the free of a pointer never allocated gets an id nothing
  // owns (4).
  check_events(read_all(fixture("valid.csv")),
               {alloc_of(1, 1024, 0), alloc_of(2, 2048, 1), free_of(1), alloc_of(3, 512, 1),
                free_of(4), free_of(2), free_of(3)});
}

TEST_CASE("the format is detected by content, not by the file name", "[alloc][trace]") {
  const temp_dir dir;
  std::ifstream json_in(fixture("valid.json")), csv_in(fixture("valid.csv"));
  const std::string json_text{std::istreambuf_iterator<char>(json_in), {}};
  const std::string csv_text{std::istreambuf_iterator<char>(csv_in), {}};
  CHECK(read_all(dir.file("trace.csv", "\n  " + json_text)).size() == 12);
  CHECK(read_all(dir.file("trace.json", csv_text)).size() == 7);
  CHECK(read_all(dir.file("bom.json", "\xEF\xBB\xBF" + json_text)).size() == 12);

  const std::string empty = dir.file("empty.json", " \n");
  CHECK(read_error(empty).message ==
        empty + ": the trace is empty: expected a pinbench.trace/1 JSON trace or an RMM log CSV");
  // A pickle (its PROTO byte first) is read as a PyTorch memory snapshot, whatever its name.
  const std::string pickle = dir.file("snapshot.json", std::string("\x80\x04\x95", 3));
  CHECK(read_error(pickle).message ==
        pickle +
            ": offset 2: opcode FRAME (0x95) needs 8 more byte(s), but the input ends "
            "after 0 (truncated?)");
  std::ifstream snapshot_in(fixture("snapshot-p4.pickle"), std::ios::binary);
  const std::string snapshot_bytes{std::istreambuf_iterator<char>(snapshot_in), {}};
  // Its six requests, and the free of the block live when its recording began.
  CHECK(read_all(dir.file("trace.csv", snapshot_bytes)).size() == 7);
  const std::string missing = dir.file("x") + "-missing";
  CHECK(read_error(missing).message == missing + ": cannot open the trace file");
}

TEST_CASE("bad JSON traces: one error per kind, with file and JSON path", "[alloc][trace]") {
  struct bad_case {
    const char* file;
    const char* message;
    std::size_t events_before;
  };
  const bad_case cases[] = {
      {"json-wrong-schema.json", R"(schema: expected "pinbench.trace/1", got "pinbench.trace/2")",
       0},
      {"json-missing-schema.json", R"(missing "schema": expected "schema": "pinbench.trace/1")", 1},
      {"json-unknown-top-key.json", R"(evnts: unknown key (did you mean "events"?))", 0},
      {"json-events-not-array.json", "events: expected an array of events, got an object", 0},
      {"json-event-not-object.json", "events[1]: expected an event object, got 1", 1},
      {"json-unknown-op.json",
       R"(events[1].op: expected "alloc", "free", "empty_cache" or "mark", got "aloc" (did you mean "alloc"?))",
       1},
      {"json-negative-size.json", "events[2].size: expected a positive integer, got -4", 2},
      {"json-zero-size.json", "events[0].size: expected a positive integer, got 0", 0},
      {"json-fractional-size.json", "events[0].size: expected a positive integer, got 4096.5", 0},
      {"json-string-id.json", R"(events[0].id: expected a non-negative integer, got "1")", 0},
      {"json-negative-stream.json",
       "events[0].stream: expected a stream index (an integer from 0 to 4294967295), got -1", 0},
      {"json-unknown-key.json", R"(events[0].sise: unknown key (did you mean "size"?))", 0},
      {"json-missing-op.json", R"(events[0]: missing "op")", 0},
      {"json-missing-size.json", R"(events[0]: missing "size" (op "alloc"))", 0},
      {"json-missing-label.json", R"(events[0]: missing "label" (op "mark"))", 0},
      {"json-not-applicable.json", R"(events[1].size: does not apply to op "free")", 1},
      {"json-duplicate-key.json", R"(events[0]: duplicate key "id")", 0},
      {"json-duplicate-id.json", "events[1].id: id 1 is allocated again before it was freed", 1},
      {"json-syntax.json",
       "line 4, column 34: syntax error while parsing object - unexpected string literal; "
       "expected '}'",
       0},
      {"json-truncated.json",
       "line 5, column 1: syntax error while parsing value - unexpected end of input; expected "
       "'[', '{', or a literal",
       1},
  };
  for (const auto& c : cases) {
    const std::string path = fixture(std::string("bad/") + c.file);
    INFO(c.file);
    const failure f = read_error(path);
    CHECK(f.message == path + ": " + c.message);
    CHECK(f.events_before == c.events_before);
    CHECK(f.message.find('\n') == std::string::npos);
  }
}

TEST_CASE("bad CSV logs: one error per kind, with file and line", "[alloc][trace]") {
  const std::pair<const char*, const char*> cases[] = {
      {"csv-header.csv",
       R"(line 1: expected a pinbench.trace/1 JSON trace (starting with "{") or the RMM log header "Thread,Time,Action,Pointer,Size,Stream", got "Thread,Time,Action,Pointer,Size")"},
      {"csv-fields.csv",
       "line 3: expected 6 comma-separated fields (Thread,Time,Action,Pointer,Size,Stream), got 4"},
      {"csv-action.csv",
       R"(line 3: expected Action to be allocate, free or "allocate failure", got "alloc")"},
      {"csv-pointer.csv",
       R"(line 3: expected a hexadecimal Pointer such as 0x7f3a00000000, got "0x7fZZ")"},
      {"csv-size.csv", R"(line 3: expected a decimal byte count in column Size, got "-4")"},
      {"csv-stream.csv",
       R"(line 3: expected a Stream handle (hexadecimal 0x... or decimal), got "stream1")"},
      {"csv-duplicate-pointer.csv",
       "line 3: pointer 0x7f0000000000 is allocated again before it was freed"},
  };
  for (const auto& [file, message] : cases) {
    const std::string path = fixture(std::string("bad/") + file);
    INFO(file);
    const failure f = read_error(path);
    CHECK(f.message == path + ": " + message);
    CHECK(f.events_before == (std::string(file) == "csv-header.csv" ? 0u : 1u));
  }
}

TEST_CASE("a large JSON trace is streamed", "[alloc][trace][slow]") {
  const temp_dir dir;
  constexpr std::uint64_t pairs = 500'000;  // 1,000,001 events
  const std::string path = write_large_trace(dir, pairs);
  auto source = open_trace(path);
  event e;
  std::uint64_t allocs = 0, frees = 0, others = 0, last_alloc_id = 0;
  bool ordered = true;
  while (source->next(e)) {
    if (e.op == event::kind::alloc) {
      ++allocs;
      ordered = ordered && e.id == last_alloc_id + 1 && e.size == 512 * (1 + e.id % 64) &&
                e.stream == e.id % 2;
      last_alloc_id = e.id;
    } else if (e.op == event::kind::free) {
      ++frees;
    } else {
      ++others;
    }
  }
  CHECK(allocs == pairs);
  CHECK(frees == pairs);
  CHECK(others == 1);
  CHECK(ordered);
  CHECK_FALSE(source->next(e));  // stays at the end

  // Dropping a source half way stops its parser thread without reading the rest.
  for (int round = 0; round < 3; ++round) {
    auto partial = open_trace(path);
    for (int i = 0; i < 10 + round * 5000; ++i) REQUIRE(partial->next(e));
  }
}

TEST_CASE("a trace converted from a PyTorch snapshot is readable", "[alloc][trace]") {
  // tests/data/traces/from_torch.json is what scripts/torch_snapshot_to_trace.py writes for the
  // snapshot built in tests/scripts/test_torch_snapshot_to_trace.py (that test checks it).
  const auto events = read_all(fixture("from_torch.json"));
  REQUIRE_FALSE(events.empty());
  std::size_t allocs = 0, frees = 0;
  for (const auto& ev : events) {
    if (ev.op == event::kind::alloc) ++allocs;
    if (ev.op == event::kind::free) ++frees;
  }
  CHECK(allocs == 4);
  CHECK(frees == 3);
}
