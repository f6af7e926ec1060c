// The registry's contents: one line per built-in kind.
#include "kinds/registry.hpp"

#include <deque>
#include <stdexcept>

#include "kinds/allocator/allocator_kind.hpp"
#include "kinds/collective/collective_kind.hpp"
#include "kinds/data_parallel/data_parallel_kind.hpp"
#include "kinds/loader/loader_kind.hpp"
#include "kinds/transfer/transfer_kind.hpp"

namespace pinbench::kinds {

namespace {

// A deque: registering a kind never moves the ones already handed out.
std::deque<kind_spec>& registered() {
  static std::deque<kind_spec> kinds = [] {
    std::deque<kind_spec> built_in;
    built_in.push_back(transfer::describe());
    built_in.push_back(loader::describe());
    built_in.push_back(allocator::describe());
    built_in.push_back(collective::describe());
    built_in.push_back(data_parallel::describe());
    return built_in;
  }();
  return kinds;
}

}  // namespace

std::vector<const kind_spec*> all() {
  std::vector<const kind_spec*> out;
  for (const auto& k : registered()) out.push_back(&k);
  return out;
}

const kind_spec* find(std::string_view kind) {
  for (const auto& k : registered())
    if (k.kind == kind) return &k;
  return nullptr;
}

scoped_kind::scoped_kind(kind_spec kind) {
  add(std::move(kind));
}

scoped_kind::~scoped_kind() {
  registered().pop_back();
}

void add(kind_spec kind) {
  if (find(kind.kind) != nullptr)
    throw std::invalid_argument("kind \"" + kind.kind + "\" is registered already");
  registered().push_back(std::move(kind));
}

}  // namespace pinbench::kinds
