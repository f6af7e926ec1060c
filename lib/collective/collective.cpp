// Names of ops and element types, nccl-tests' bus factors and the buffers behind a size.
#include "collective/collective.hpp"

#include <algorithm>

namespace pinbench::collective {

std::string_view to_string(op o) noexcept {
  switch (o) {
    case op::all_reduce:
      return "all_reduce";
    case op::all_gather:
      return "all_gather";
    case op::reduce_scatter:
      return "reduce_scatter";
    case op::broadcast:
      return "broadcast";
    case op::send_recv:
      return "send_recv";
  }
  return "?";
}

std::optional<op> op_from(std::string_view name) noexcept {
  for (const op o :
       {op::all_reduce, op::all_gather, op::reduce_scatter, op::broadcast, op::send_recv})
    if (to_string(o) == name) return o;
  return std::nullopt;
}

std::string_view to_string(dtype t) noexcept {
  switch (t) {
    case dtype::float32:
      return "float32";
    case dtype::float64:
      return "float64";
    case dtype::int32:
      return "int32";
  }
  return "?";
}

std::optional<dtype> dtype_from(std::string_view name) noexcept {
  for (const dtype t : {dtype::float32, dtype::float64, dtype::int32})
    if (to_string(t) == name) return t;
  return std::nullopt;
}

std::size_t size_of(dtype t) noexcept {
  return t == dtype::float64 ? 8 : 4;
}

double bus_factor(op o, int ranks) noexcept {
  const double n = std::max(ranks, 1);
  switch (o) {
    case op::all_reduce:
      return 2 * (n - 1) / n;
    case op::all_gather:
    case op::reduce_scatter:
      return (n - 1) / n;
    case op::broadcast:
    case op::send_recv:
      return 1;
  }
  return 1;
}

std::uint64_t buffer_shape::bytes(dtype t) const noexcept {
  return static_cast<std::uint64_t>(std::max(send_count, recv_count)) * size_of(t);
}

buffer_shape shape_of(op o, dtype t, std::uint64_t bytes, int ranks) noexcept {
  const std::size_t n = static_cast<std::size_t>(std::max(ranks, 1));
  const auto count = static_cast<std::size_t>(bytes / size_of(t));
  buffer_shape s;
  switch (o) {
    case op::all_gather:  // the size is the gathered buffer: n blocks of the send buffer
      s.send_count = count / n;
      s.recv_count = s.send_count * n;
      break;
    case op::reduce_scatter:  // the size is the send buffer: n blocks of the result
      s.recv_count = count / n;
      s.send_count = s.recv_count * n;
      break;
    case op::all_reduce:
    case op::broadcast:
    case op::send_recv:
      s.send_count = s.recv_count = count;
      break;
  }
  return s;
}

}  // namespace pinbench::collective
