// One participant per process of the launch, over host memory: the launch's communicator
// runs the collectives (its MPI library, or its own over tcp).
#pragma once

#include <memory>

#include "collective/collective.hpp"
#include "dist/communicator.hpp"

namespace pinbench::collective {

/// A group of world.size() participants, this process being world.rank(). `world` must outlive
/// the group.
[[nodiscard]] std::unique_ptr<group> make_communicator_group(dist::communicator& world);

}  // namespace pinbench::collective
