// The names code writes a scenario with (tune's trials): each kind's `param::` constants and
// choices name params its spec declares, and set_param writes them where the loader reads them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "kinds/allocator/allocator_kind.hpp"
#include "kinds/allocator/allocator_params.hpp"
#include "kinds/loader/loader_kind.hpp"
#include "kinds/loader/loader_params.hpp"
#include "kinds/params.hpp"
#include "kinds/registry.hpp"

using namespace pinbench;

namespace {

bool declares(const kinds::kind_spec& k, std::string_view name) {
  return std::any_of(k.params.begin(), k.params.end(),
                     [&](const kinds::param_spec& p) { return p.name == name; });
}

}  // namespace

TEST_CASE("kinds: the param names code writes are the ones each kind declares", "[kinds]") {
  const auto allocator = kinds::allocator::describe();
  CHECK(allocator.kind == kinds::allocator::kind_name);
  CHECK(kinds::find(kinds::allocator::kind_name) != nullptr);
  namespace a = kinds::allocator;
  for (const char* name : {a::param::config, a::param::pytorch, a::param::device_memory,
                           a::param::memory_fraction, a::param::trace_file, a::param::trace_device})
    CHECK(declares(allocator, name));
  for (const auto name :
       {a::allocator_choice.param(), a::workload_choice.param(), a::timing_choice.param()})
    CHECK(declares(allocator, name));

  const auto loader = kinds::loader::describe();
  CHECK(loader.kind == kinds::loader::kind_name);
  namespace l = kinds::loader;
  for (const char* name :
       {l::param::samples, l::param::sample_bytes, l::param::cpu_per_sample, l::param::dir,
        l::param::crop, l::param::batch_size, l::param::num_workers, l::param::persistent_workers,
        l::param::prefetch_factor, l::param::pin_memory, l::param::non_blocking, l::param::epochs,
        l::param::batches, l::param::compute_per_batch}) {
    INFO(name);
    CHECK(declares(loader, name));
  }
  for (const auto name : {l::source_choice.param(), l::output_choice.param(),
                          l::pin_mode_choice.param(), l::worker_method_choice.param()})
    CHECK(declares(loader, name));
}

TEST_CASE("kinds: set_param writes a dotted name nested and a choice by its table's name",
          "[kinds]") {
  nlohmann::json params = nlohmann::json::object();
  kinds::set_param(params, kinds::loader::param::samples, 64);
  kinds::set_param(params, kinds::loader::source_choice, kinds::loader::source_kind::jpeg);
  kinds::set_param(params, kinds::loader::param::batch_size, 8);
  CHECK(params ==
        nlohmann::json{{"dataset", {{"samples", 64}, {"source", "jpeg"}}}, {"batch_size", 8}});
}
