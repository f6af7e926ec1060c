// Kind `collective` (nccl-tests' measurements): its params and their rules, its engine, table
// columns and charts.
#include "kinds/collective/collective_kind.hpp"

#include "core/units.hpp"
#include "kinds/collective/collective_engine.hpp"
#include "kinds/collective/collective_params.hpp"

namespace pinbench::kinds::collective {

kind_spec describe() {
  return {
      .kind = kind_name,
      .help =
          "collectives as NCCL runs them (all_reduce, all_gather, reduce_scatter, broadcast, "
          "send_recv): time, algbw and busbw as nccl-tests reports them, by size",
      .params =
          {
              op_choice.spec(
                  "the collective; send_recv exchanges buffers in pairs of ranks (0<->1, "
                  "2<->3, ...)"),
              bounded("bytes", param_type::size, 32_MiB, 0, true, static_cast<double>(1ull << 40),
                      "size of the collective as nccl-tests counts it: the larger of each rank's "
                      "send and receive buffers (size)"),
              dtype_choice.spec("element type; reductions are sums"),
              bounded("ranks", param_type::integer, 0, 0, false, 65536,
                      "participants (count; 0 = all: every process under a launch, else every "
                      "device this process can drive)"),
              boolean("in_place", false,
                      "run in place: one buffer per rank, as NCCL's in-place forms (true/false)"),
              bounded("iterations", param_type::integer, 0, 0, false, 1e6,
                      "collectives timed back to back as one sample (count; 0 = auto: enough for "
                      "about 1 ms)"),
              bounded("root", param_type::integer, 0, 0, false, 65535,
                      "the rank that broadcast sends from"),
              boolean("verify", true,
                      "check every rank's result against the expected sums after the case "
                      "(true/false)"),
          },
      .parse_case = parse_params,
      .make_engine = make_engine,
      .headlines = {{"time", true}, {"algbw", true}, {"busbw", true}},
      .figures = [](const result::scenario_result& s, const std::string& id_prefix) {
        return chart::sweep_charts(s, id_prefix,
                                   {{"busbw", "busbw", "bytes"}, {"time", "time", "bytes"}});
      }};
}

}  // namespace pinbench::kinds::collective
