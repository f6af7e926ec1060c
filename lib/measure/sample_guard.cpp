#include "measure/sample_guard.hpp"

#include <atomic>

namespace pinbench::measure {

namespace {
std::atomic<sample_guard*> installed{nullptr};
}  // namespace

sample_guard* current_sample_guard() noexcept {
  return installed.load();
}

scoped_sample_guard::scoped_sample_guard(sample_guard& g) noexcept
    : previous_(installed.exchange(&g)) {}

scoped_sample_guard::~scoped_sample_guard() {
  installed.store(previous_);
}

}  // namespace pinbench::measure
