// Reads allocation traces from files, choosing the reader by content: pinbench.trace/1 JSON
// (trace_json.cpp), an RMM replay CSV log (trace_csv.cpp) or a PyTorch memory snapshot pickle
// (trace_pickle.cpp). Memory stays bounded by the allocations live at a time, never by the
// length of the trace, except for a snapshot, which is read whole.
#include "alloc/trace_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "core/text.hpp"

namespace pinbench::alloc {

namespace detail {

std::string quote_snippet(std::string_view s) {
  constexpr std::size_t max_chars = 60;
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < max_chars; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (s.size() > max_chars) out += "...";
  return out + "\"";
}

std::ifstream open_input(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "", "cannot open the trace file");
  return in;
}

}  // namespace detail

namespace {

enum class trace_format { json_trace, csv_log, torch_pickle };

// By content, not by extension: a JSON trace starts with "{" (after spaces and a UTF-8 BOM), a
// pickle of protocol 2 or above with its PROTO opcode, 0x80.
trace_format detect_format(const std::string& path) {
  std::ifstream in = detail::open_input(path);
  char c = 0;
  bool first = true;
  while (in.get(c)) {
    const auto u = static_cast<unsigned char>(c);
    if (first && u == 0xEF) {  // UTF-8 byte order mark
      char bom[2] = {};
      if (in.read(bom, 2) && static_cast<unsigned char>(bom[0]) == 0xBB &&
          static_cast<unsigned char>(bom[1]) == 0xBF) {
        first = false;
        continue;
      }
      break;
    }
    if (first && u == 0x80) return trace_format::torch_pickle;
    first = false;
    const bool blank = trim(std::string_view(&c, 1)).empty();
    if (!blank) return c == '{' ? trace_format::json_trace : trace_format::csv_log;
  }
  throw input_error(path, "",
                    "the trace is empty: expected a pinbench.trace/1 JSON trace or an RMM log CSV");
}

}  // namespace

void check_trace_file(const std::string& path) {
  struct ::stat st {};  // the POSIX one, not alloc::stat
  if (::stat(path.c_str(), &st) != 0)
    throw input_error(path, "", std::string("cannot open the trace file: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw input_error(path, "", "is a directory, expected a trace file");
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISFIFO(st.st_mode)   ? "a FIFO (named pipe)"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "a file of an unknown type";
    throw input_error(path, "",
                      std::string("is ") + what +
                          ", expected a regular file (a trace is read twice: "
                          "once to tell its format, then to replay it)");
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw input_error(path, "", std::string("cannot open the trace file: ") + std::strerror(errno));
  ::close(fd);
  // A CSV log's reader checks its header row when it opens; a JSON trace's reader starts
  // parsing on a thread, so its "{" is all that is checked here; a snapshot pickle (hundreds of
  // MiB, read whole) is read when the case starts: its size and protocol are checked here.
  switch (detect_format(path)) {
    case trace_format::csv_log:
      (void)detail::open_csv_trace(path);
      break;
    case trace_format::torch_pickle:
      detail::check_pickle_trace(path);
      break;
    case trace_format::json_trace:
      break;
  }
}

std::unique_ptr<event_source> open_trace(const std::string& path, const trace_options& options) {
  switch (detect_format(path)) {
    case trace_format::json_trace:
      return detail::open_json_trace(path);
    case trace_format::torch_pickle:
      return detail::open_pickle_trace(path, options);
    case trace_format::csv_log:
      break;
  }
  return detail::open_csv_trace(path);
}

}  // namespace pinbench::alloc
