// nccl-tests' figures: bus factors, the buffers behind a size, the names of ops and types.
#include <catch2/catch.hpp>

#include "collective/collective.hpp"

namespace pinbench::collective {

TEST_CASE("bus factors are nccl-tests'", "[collective]") {
  CHECK(bus_factor(op::all_reduce, 1) == 0);
  CHECK(bus_factor(op::all_reduce, 4) == Approx(1.5));
  CHECK(bus_factor(op::all_reduce, 8) == Approx(1.75));
  CHECK(bus_factor(op::all_gather, 4) == Approx(0.75));
  CHECK(bus_factor(op::reduce_scatter, 2) == Approx(0.5));
  CHECK(bus_factor(op::broadcast, 8) == 1);
  CHECK(bus_factor(op::send_recv, 8) == 1);
}

TEST_CASE("a size is the larger buffer, in whole elements and whole blocks", "[collective]") {
  auto s = shape_of(op::all_reduce, dtype::float32, 1024, 4);
  CHECK(s.send_count == 256);
  CHECK(s.recv_count == 256);
  CHECK(s.bytes(dtype::float32) == 1024);
  s = shape_of(op::all_reduce, dtype::float64, 1023, 4);  // rounded down to whole elements
  CHECK(s.send_count == 127);
  CHECK(s.bytes(dtype::float64) == 1016);
  s = shape_of(op::all_gather, dtype::float32, 1000, 3);  // 250 elements -> 3 blocks of 83
  CHECK(s.send_count == 83);
  CHECK(s.recv_count == 249);
  CHECK(s.bytes(dtype::float32) == 996);
  s = shape_of(op::reduce_scatter, dtype::int32, 1000, 3);
  CHECK(s.send_count == 249);
  CHECK(s.recv_count == 83);
  CHECK(s.bytes(dtype::int32) == 996);
  s = shape_of(op::all_gather, dtype::float32, 8, 4);  // less than one element per rank
  CHECK(s.bytes(dtype::float32) == 0);
  s = shape_of(op::send_recv, dtype::float64, 64, 5);
  CHECK(s.send_count == 8);
  CHECK(s.recv_count == 8);
}

TEST_CASE("ops and element types have names both ways", "[collective]") {
  for (const op o :
       {op::all_reduce, op::all_gather, op::reduce_scatter, op::broadcast, op::send_recv})
    CHECK(op_from(to_string(o)) == o);
  for (const dtype t : {dtype::float32, dtype::float64, dtype::int32})
    CHECK(dtype_from(to_string(t)) == t);
  CHECK_FALSE(op_from("allreduce"));
  CHECK_FALSE(dtype_from("half"));
  CHECK(size_of(dtype::float64) == 8);
  CHECK(size_of(dtype::int32) == 4);
}

TEST_CASE("NCCL's availability says why not", "[collective]") {
  const auto s = nccl_availability();
#ifndef PINBENCH_HAVE_CUDA
  CHECK_FALSE(s.usable);
  CHECK(s.reason == "built without CUDA");
#else
  CHECK((s.usable ? !s.version.empty() && !s.library.empty() : !s.reason.empty()));
#endif
}

}  // namespace pinbench::collective
