// Kind `transfer` (host<->device copies): its params and their rules, its engine, table columns and
// charts.
#include "kinds/transfer/transfer_kind.hpp"

#include "core/units.hpp"
#include "kinds/transfer/transfer_engine.hpp"
#include "kinds/transfer/transfer_params.hpp"

namespace pinbench::kinds::transfer {

kind_spec describe() {
  return {
      .kind = kind_name,
      .help =
          "host<->device copies: bandwidth, copy time and how long the caller is held, by "
          "memory kind, direction, mode and size",
      .params =
          {
              direction_choice.spec(
                  "which way data moves: host to device, device to host, or both at once"),
              memory_choice.spec(
                  "host buffer: malloc'd pageable, cudaHostAlloc'd pinned, pinned "
                  "write-combined, cudaHostRegister'ed, or pageable pinned per copy"),
              mode_choice.spec("blocking: copy, then wait for the stream; non_blocking: "
                               "cudaMemcpyAsync on a non-default stream"),
              bounded("bytes", param_type::size, 64_MiB, 0, true, static_cast<double>(1ull << 40),
                      "bytes per copy (size, e.g. \"64MiB\")"),
              bounded(
                  "copies_per_sample", param_type::integer, 0, 0, false, 1e6,
                  "copies timed together as one sample (count; 0 = auto: 16 for copies of 1 MiB "
                  "or less, else 1)"),
              bounded(
                  "overlap_compute", param_type::duration, 0, 0, false, std::nullopt,
                  "compute kernel run on another stream alongside the copies (duration; 0 = none)"),
              boolean("verify", true, "check that the copied bytes arrived intact (true/false)"),
          },
      .parse_case = parse_params,
      .make_engine = make_engine,
      // The columns a person looks at first.
      // link_fraction: bandwidth over the host link's ceiling (the case's extra link_ceiling).
      .headlines = {{"bandwidth", true},
                    {"link_fraction", false, "% of link"},
                    {"copy_time", true},
                    {"host_call_time", true},
                    {"overlap", false},
                    {"pin_time", false}},
      .figures = [](const result::scenario_result& s, const std::string& id_prefix) {
        return chart::sweep_charts(s, id_prefix,
                                   {{"bandwidth", "bandwidth", "bytes"},
                                    {"host-call-time", "host_call_time", "bytes"},
                                    {"overlap", "overlap", "bytes"}});
      }};
}

}  // namespace pinbench::kinds::transfer
