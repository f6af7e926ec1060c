#include "dist/mpi.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "dist/mpi_plugin/pinbench_mpi.h"

namespace pinbench::dist {

namespace {

struct loaded_plugin {
  const pinbench_mpi_api* api = nullptr;
  std::string why_not;  ///< when api is null
};

loaded_plugin load(const std::string& path) {
  // RTLD_GLOBAL: Open MPI's own components, dlopen()ed by libmpi, expect its symbols global.
  // Never closed: libmpi does not expect to be unloaded.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return {nullptr, why != nullptr ? why : fmt::format("{}: cannot be loaded", path)};
  }
  auto get_api = reinterpret_cast<pinbench_mpi_get_api_fn>(::dlsym(handle, "pinbench_mpi_get_api"));
  if (get_api == nullptr) {
    return {nullptr, fmt::format("{}: no pinbench_mpi_get_api (not pinbench's MPI plugin?)", path)};
  }
  const pinbench_mpi_api* api = get_api(PINBENCH_MPI_API_VERSION);
  if (api == nullptr) {
    return {nullptr, fmt::format("{}: does not speak API version {} (from another pinbench "
                                 "build?)",
                                 path, PINBENCH_MPI_API_VERSION)};
  }
  return {api, {}};
}

// Loaded anew at each ask (dlopen of a loaded library only counts it), so that the answer
// follows PINBENCH_MPI_PLUGIN.
loaded_plugin plugin() {
  return load(mpi_plugin_path());
}

int pinbench_type(element e) {
  switch (e) {
    case element::f32:
      return PINBENCH_MPI_F32;
    case element::f64:
      return PINBENCH_MPI_F64;
    case element::i32:
      return PINBENCH_MPI_I32;
  }
  return PINBENCH_MPI_BYTE;
}

class mpi_communicator final : public communicator {
 public:
  mpi_communicator(const pinbench_mpi_api* api, int rank, int size)
      : api_(api), rank_(rank), size_(size) {}
  mpi_communicator(const mpi_communicator&) = delete;
  mpi_communicator& operator=(const mpi_communicator&) = delete;
  ~mpi_communicator() override {
    if (!broken_) (void)api_->finalize();
  }

  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return size_; }
  [[nodiscard]] std::string_view transport() const noexcept override {
    return to_string(transport_kind::mpi);
  }

  void barrier(timeout limit) override { check(api_->barrier(seconds(limit)), "barrier", limit); }

  std::vector<std::string> all_gather(std::string_view mine, timeout limit) override {
    int length = count_of(mine.size(), "all_gather");
    std::vector<int> lengths(static_cast<std::size_t>(size_));
    check(api_->allgather(&length, lengths.data(), 1, PINBENCH_MPI_I32, seconds(limit)),
          "all_gather", limit);
    std::vector<int> offsets(lengths.size());
    std::size_t total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = count_of(total, "all_gather");
      total += static_cast<std::size_t>(lengths[r]);
    }
    std::string all(total, '\0');
    check(api_->allgatherv(mine.data(), length, all.data(), lengths.data(), offsets.data(),
                           PINBENCH_MPI_BYTE, seconds(limit)),
          "all_gather", limit);
    std::vector<std::string> parts(lengths.size());
    for (std::size_t r = 0; r < parts.size(); ++r) {
      parts[r] =
          all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r]));
    }
    return parts;
  }

  void broadcast(std::string& data, int root, timeout limit) override {
    check_rank(root, "broadcast root");
    int length = rank_ == root ? count_of(data.size(), "broadcast") : 0;
    check(api_->bcast(&length, 1, PINBENCH_MPI_I32, root, seconds(limit)), "broadcast", limit);
    if (rank_ != root) data.assign(static_cast<std::size_t>(length), '\0');
    check(api_->bcast(data.data(), length, PINBENCH_MPI_BYTE, root, seconds(limit)), "broadcast",
          limit);
  }

  void all_reduce_sum(const void* send, void* recv, std::size_t count, element e,
                      timeout limit) override {
    check(api_->allreduce_sum(send, recv, count_of(count, "all_reduce_sum"), pinbench_type(e),
                              seconds(limit)),
          "all_reduce_sum", limit);
  }

  void all_gather_block(const void* send, void* recv, std::size_t count, element e,
                        timeout limit) override {
    check(api_->allgather(send, recv, count_of(count, "all_gather_block"), pinbench_type(e),
                          seconds(limit)),
          "all_gather_block", limit);
  }

  void reduce_scatter_sum(const void* send, void* recv, std::size_t count, element e,
                          timeout limit) override {
    check(api_->reduce_scatter_block_sum(send, recv, count_of(count, "reduce_scatter_sum"),
                                         pinbench_type(e), seconds(limit)),
          "reduce_scatter_sum", limit);
  }

  void broadcast_block(void* data, std::size_t count, element e, int root, timeout limit) override {
    check_rank(root, "broadcast_block root");
    check(api_->bcast(data, count_of(count, "broadcast_block"), pinbench_type(e), root,
                      seconds(limit)),
          "broadcast_block", limit);
  }

  void send_recv(const void* send, void* recv, std::size_t count, element e, int peer,
                 timeout limit) override {
    check_rank(peer, "send_recv peer");
    check(api_->sendrecv(send, recv, count_of(count, "send_recv"), pinbench_type(e), peer,
                         seconds(limit)),
          "send_recv", limit);
  }

  // MPI has no message that reaches a rank blocked in a collective: abort ends them instead.
  void stop_others(std::string_view) noexcept override {}

  [[noreturn]] void abort(int exit_code, std::string_view why) override {
    // `why` as given: the caller says which rank and why in its own words.
    std::fprintf(stderr, "%.*s\n", static_cast<int>(why.size()), why.data());
    std::fflush(stderr);
    api_->abort(exit_code);
    ::_exit(exit_code);  // MPI_Abort does not return; should it, this rank still ends
  }

 private:
  void check(int status, const char* what, timeout limit) {
    if (status == PINBENCH_MPI_OK) return;
    broken_ = true;
    if (status == PINBENCH_MPI_TIMEOUT) {
      throw rank_lost_error(
          fmt::format("rank {}: no answer within {:g} s in {} (another rank died or hangs)", rank_,
                      seconds(limit), what));
    }
    throw rank_lost_error(fmt::format("rank {}: {}: {}", rank_, what, api_->last_error()));
  }

  int count_of(std::size_t count, const char* what) const {
    if (count > static_cast<std::size_t>(INT_MAX)) {
      throw error(
          fmt::format("rank {}: {}: {} elements exceed MPI's int count", rank_, what, count));
    }
    return static_cast<int>(count);
  }

  void check_rank(int r, const char* what) const {
    if (r < 0 || r >= size_) {
      throw error(fmt::format("rank {}: {} {} is outside [0, {})", rank_, what, r, size_));
    }
  }

  const pinbench_mpi_api* api_;
  int rank_, size_;
  bool broken_ = false;
};

}  // namespace

std::string mpi_plugin_path() {
  if (const char* path = std::getenv("PINBENCH_MPI_PLUGIN"); path != nullptr && *path != '\0') {
    return path;
  }
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "libpinbench_mpi.so";  // the loader's search path, then
  return (exe.parent_path() / "libpinbench_mpi.so").string();
}

std::string mpi_unavailable_reason() {
  return plugin().why_not;
}

std::unique_ptr<communicator> connect_mpi(const launch_info& launch) {
  const auto loaded = plugin();
  if (loaded.api == nullptr) {
    throw environment_error(fmt::format(
        "launched by {} with {} ranks, but MPI support cannot be loaded: {} (build pinbench "
        "where MPI is found, or point PINBENCH_MPI_PLUGIN at libpinbench_mpi.so)",
        to_string(launch.launcher), launch.size, loaded.why_not));
  }
  int rank = -1;
  int size = 0;
  if (loaded.api->init(&rank, &size) != PINBENCH_MPI_OK) {
    throw environment_error(fmt::format("MPI cannot start: {}", loaded.api->last_error()));
  }
  auto world = std::make_unique<mpi_communicator>(loaded.api, rank, size);
  if (rank != launch.rank || size != launch.size) {
    throw environment_error(fmt::format(
        "MPI says this is rank {} of {}, {}'s environment rank {} of {}: is pinbench's MPI "
        "(the one libpinbench_mpi.so links) the launcher's?",
        rank, size, to_string(launch.launcher), launch.rank, launch.size));
  }
  return world;
}

}  // namespace pinbench::dist
