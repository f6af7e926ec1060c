// The kind registry: every scenario kind described once, in its own folder (kinds/<kind>/), and
// found here by name. `run`, `validate`, `list`, `report` and `compare` take everything they
// know about a kind from its description: no code outside kinds/ names a kind.
// docs/architecture.md walks through adding one.
#pragma once

#include <string_view>
#include <vector>

#include "kinds/kind_spec.hpp"

namespace pinbench::kinds {

/// Every kind, the built-in ones first in a fixed order (transfer, loader, allocator,
/// collective, data_parallel), then those added.
[[nodiscard]] std::vector<const kind_spec*> all();

/// The kind of that name, or nullptr.
[[nodiscard]] const kind_spec* find(std::string_view kind);

/// Registers a kind beyond the built-in ones (a test's toy kind). Throws std::invalid_argument
/// when the name is taken. Register before running anything: the registry is not locked.
void add(kind_spec kind);

/// A kind registered for this object's life (a test's toy kind): removed again when it goes,
/// so that other code in the same process sees the built-in kinds only. Nest them, never
/// interleave: the registry is a stack beyond the built-in kinds.
class scoped_kind {
 public:
  explicit scoped_kind(kind_spec kind);
  ~scoped_kind();
  scoped_kind(const scoped_kind&) = delete;
  scoped_kind& operator=(const scoped_kind&) = delete;
};

}  // namespace pinbench::kinds
