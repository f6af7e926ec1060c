// What the trace readers share (internal to alloc/): opening a trace file, quoting its text in
// messages, and a reader per format. trace_reader.cpp picks the format by content.
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "alloc/workload.hpp"

namespace pinbench::alloc::detail {

/// The file, opened for reading in binary; throws input_error naming it when it cannot be.
[[nodiscard]] std::ifstream open_input(const std::string& path);

/// Quoted text for a message, short and on one line whatever the input holds.
[[nodiscard]] std::string quote_snippet(std::string_view s);

/// A pinbench.trace/1 JSON trace, parsed on a producer thread (trace_json.cpp).
[[nodiscard]] std::unique_ptr<event_source> open_json_trace(const std::string& path);

/// An RMM replay log, "Thread,Time,Action,Pointer,Size,Stream", read line by line (trace_csv.cpp).
[[nodiscard]] std::unique_ptr<event_source> open_csv_trace(const std::string& path);

/// A PyTorch memory snapshot pickle, read whole; device_traces[device] replayed
/// (trace_pickle.cpp).
[[nodiscard]] std::unique_ptr<event_source> open_pickle_trace(const std::string& path,
                                                              const trace_options& options);

/// What check_trace_file checks of a snapshot pickle without reading it: its size and protocol.
void check_pickle_trace(const std::string& path);

}  // namespace pinbench::alloc::detail
