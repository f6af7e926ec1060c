// The fuzz targets' bodies and their oracle (see targets.hpp).
#include "fuzz/targets.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <typeinfo>
#include <vector>

#include "alloc/config.hpp"
#include "alloc/replay.hpp"
#include "alloc/workload.hpp"
#include "core/error.hpp"
#include "core/pickle.hpp"
#include "scenario/scenario.hpp"

namespace pinbench::fuzz {

namespace {

// Expanding a matrix of many cases costs time, not coverage: the fuzz target stops at this many.
constexpr std::size_t max_expanded_cases = 1000;

// Runs one input through `body` and sorts the outcome: accepted, rejected with a one-line
// pinbench::error, or a violation of the oracle.
template <typename Body>
verdict judge(Body&& body) {
  try {
    body();
    return {true, {}};
  } catch (const oracle_violation&) {
    throw;
  } catch (const pinbench::error& e) {
    const std::string_view message = e.what();
    if (message.find_first_of("\r\n") != std::string_view::npos)
      throw oracle_violation("a pinbench::error message spans several lines: " +
                             std::string(message));
    if (message.empty()) throw oracle_violation("a pinbench::error with an empty message");
    return {false, std::string(message)};
  } catch (const std::exception& e) {
    throw oracle_violation(std::string("an exception other than pinbench::error escaped (") +
                           typeid(e).name() + "): " + e.what());
  }
}

// Holds the input in an anonymous memory file, so that the path-based reader can open it
// without touching the disk; the descriptor closes with the object.
class memory_file {
 public:
  explicit memory_file(std::string_view bytes) : fd_(::memfd_create("pinbench-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fd_);
        throw std::runtime_error(std::string("memfd write: ") + std::strerror(errno));
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  memory_file(const memory_file&) = delete;
  memory_file& operator=(const memory_file&) = delete;
  ~memory_file() { ::close(fd_); }
  // Opening /proc/self/fd/N gives a fresh description of the same file, at offset 0.
  [[nodiscard]] std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

void drain_trace(const memory_file& file, std::size_t input_bytes) {
  auto source = alloc::open_trace(file.path());
  alloc::event e;
  std::size_t events = 0;
  while (source->next(e)) ++events;
  // Every event takes at least a few bytes of input; more events than bytes is a reader
  // inventing events.
  if (events > input_bytes)
    throw oracle_violation("more events (" + std::to_string(events) + ") than input bytes");
}

verdict trace(std::string_view input) {
  // Outside judge(): a failing memfd is the harness's problem, not the reader's.
  const memory_file file(input);
  return judge([&] { drain_trace(file, input.size()); });
}

}  // namespace

verdict scenario_parser(std::string_view input) {
  return judge([&] {
    const std::size_t nul = input.find('\0');
    const std::string_view text = input.substr(0, nul);
    std::vector<std::string> set_args;
    for (std::size_t at = nul; at != std::string_view::npos;) {
      const std::size_t next = input.find('\0', at + 1);
      set_args.emplace_back(
          input.substr(at + 1, next == std::string_view::npos ? next : next - at - 1));
      at = next;
    }
    const scenario::scenario s = scenario::parse_scenario(text, "fuzz.json");
    const auto overrides = scenario::parse_overrides(set_args);
    scenario::check_overrides(s, overrides);
    std::size_t cases = 1;
    for (const auto& axis : s.matrix) cases *= axis.raw.size();
    if (cases > max_expanded_cases) return;
    for (const auto& c : scenario::expand(s, overrides)) {
      if (c.id.empty()) throw oracle_violation("a case with an empty id");
      (void)scenario::display_params(s.kind, c.params);
    }
  });
}

verdict json_trace(std::string_view input) {
  return trace(input);
}

verdict csv_trace(std::string_view input) {
  return trace(input);
}

verdict pickle(std::string_view input) {
  const memory_file file(input);
  return judge([&] {
    const nlohmann::json value = read_pickle(input, "fuzz.pickle");
    (void)value.dump();  // invalid UTF-8 must have been replaced: dump() would throw
    drain_trace(file, input.size());
    // A snapshot that reads is replayed from its start state, following PyTorch's decisions:
    // whatever the recording says, the replay ends in a result or an error.
    auto source = alloc::open_trace(file.path());
    const alloc::trace_events t = alloc::read_all(*source);
    if (t.events.size() <= 100000)
      (void)alloc::replay(t, alloc::config{}, std::uint64_t{1} << 30, std::nullopt,
                          alloc::follow_pytorch::yes);
  });
}

verdict alloc_conf(std::string_view input) {
  return judge([&] {
    const alloc::config c = alloc::parse_config(input, "", "PYTORCH_CUDA_ALLOC_CONF");
    const std::string canonical = c.to_string();
    alloc::config again;
    try {
      again = alloc::parse_config(canonical, "", "PYTORCH_CUDA_ALLOC_CONF");
    } catch (const pinbench::error& e) {
      throw oracle_violation("the canonical form \"" + canonical + "\" is rejected: " + e.what());
    }
    if (again.to_string() != canonical || again.max_split_size_bytes != c.max_split_size_bytes ||
        again.roundup_power2_divisions != c.roundup_power2_divisions ||
        again.garbage_collection_threshold != c.garbage_collection_threshold ||
        again.expandable_segments != c.expandable_segments)
      throw oracle_violation("the canonical form \"" + canonical +
                             "\" does not parse back to the same options");
  });
}

std::span<const target> all_targets() {
  static constexpr std::array<target, 5> targets = {{{"scenario", scenario_parser},
                                                     {"json_trace", json_trace},
                                                     {"csv_trace", csv_trace},
                                                     {"pickle", pickle},
                                                     {"alloc_conf", alloc_conf}}};
  return targets;
}

int run_or_abort(verdict (*fn)(std::string_view), const std::uint8_t* data, std::size_t size) {
  try {
    (void)fn(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pinbench fuzz: %s\n", e.what());
    std::abort();
  }
  return 0;
}

}  // namespace pinbench::fuzz
