// Finding and loading libnccl.so.2 with dlopen, and resolving its calls.
#include "collective/nccl/nccl_library.hpp"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"

namespace pinbench::collective::nccl {

namespace {

constexpr const char* soname = "libnccl.so.2";

// Where PyTorch's pip wheels put NCCL (the nvidia-nccl-cu* package), under each Python's
// package folders: system, /usr/local, the user's, an active virtualenv or conda env.
std::vector<std::string> wheel_patterns() {
  const std::string wheel = "nvidia/nccl/lib/libnccl.so.2";
  std::vector<std::string> roots = {
      "/usr/lib/python3/dist-packages",        "/usr/lib/python3*/site-packages",
      "/usr/lib/python3*/dist-packages",       "/usr/local/lib/python3*/site-packages",
      "/usr/local/lib/python3*/dist-packages", "/opt/conda/lib/python3*/site-packages"};
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0')
      roots.push_back(std::string(v) + "/lib/python3*/site-packages");
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    roots.push_back(std::string(home) + "/.local/lib/python3*/site-packages");
  for (auto& r : roots) r += "/" + wheel;
  return roots;
}

std::vector<std::string> expand(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  return out;
}

std::string version_text(int code) {
  // NCCL 2.9 on: major*10000 + minor*100 + patch; before: major*1000 + minor*100 + patch.
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

template <class F>
bool resolve(void* handle, const char* name, F& out, std::string& missing) {
  void* sym = ::dlsym(handle, name);
  if (sym == nullptr) {
    missing += missing.empty() ? name : fmt::format(", {}", name);
    return false;
  }
  out = reinterpret_cast<F>(sym);
  return true;
}

// Resolves every call from a library dlopen'ed from `what`; fills `why` when it cannot serve.
bool try_load(const std::string& what, library& lib, std::string& why) {
  void* handle = ::dlopen(what.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    why = e != nullptr ? e : what + ": cannot be loaded";
    return false;
  }
  std::string missing;
  resolve(handle, "ncclGetVersion", lib.get_version, missing);
  resolve(handle, "ncclGetUniqueId", lib.get_unique_id, missing);
  resolve(handle, "ncclCommInitAll", lib.comm_init_all, missing);
  resolve(handle, "ncclCommInitRank", lib.comm_init_rank, missing);
  resolve(handle, "ncclCommDestroy", lib.comm_destroy, missing);
  resolve(handle, "ncclGroupStart", lib.group_start, missing);
  resolve(handle, "ncclGroupEnd", lib.group_end, missing);
  resolve(handle, "ncclAllReduce", lib.all_reduce, missing);
  resolve(handle, "ncclAllGather", lib.all_gather, missing);
  resolve(handle, "ncclReduceScatter", lib.reduce_scatter, missing);
  resolve(handle, "ncclBroadcast", lib.broadcast, missing);
  resolve(handle, "ncclSend", lib.send, missing);
  resolve(handle, "ncclRecv", lib.recv, missing);
  resolve(handle, "ncclGetErrorString", lib.get_error_string, missing);
  if (!missing.empty()) {
    why = fmt::format("{} lacks {} (NCCL 2.7 or newer is needed)", what, missing);
    ::dlclose(handle);
    return false;
  }
  int code = 0;
  if (lib.get_version(&code) != ncclSuccess) {
    why = what + ": ncclGetVersion failed";
    ::dlclose(handle);
    return false;
  }
  lib.version = version_text(code);
  // The file the loader chose: the default search only says "libnccl.so.2".
  Dl_info info{};
  lib.path =
      ::dladdr(reinterpret_cast<void*>(lib.get_version), &info) != 0 && info.dli_fname != nullptr
          ? info.dli_fname
          : what;
  return true;  // kept loaded for the life of the process
}

struct loaded {
  library lib;
  bool usable = false;
  std::string reason;
};

loaded find_and_load() {
  std::vector<std::string> candidates;
  if (const char* v = std::getenv("PINBENCH_NCCL_LIBRARY"); v != nullptr && *v != '\0')
    candidates.emplace_back(v);
  candidates.emplace_back(soname);
  candidates.emplace_back("/usr/local/cuda/lib64/libnccl.so.2");
  for (const auto& pattern : wheel_patterns())
    for (auto& path : expand(pattern)) candidates.push_back(std::move(path));

  loaded out;
  std::vector<std::string> failures;
  for (const auto& c : candidates) {
    std::string why;
    if (try_load(c, out.lib, why)) {
      out.usable = true;
      return out;
    }
    // "not found" for the default search and the fixed path is the usual case: kept short.
    failures.push_back(why);
  }
  out.lib = {};
  out.reason = fmt::format(
      "no usable NCCL library (libnccl.so.2; set PINBENCH_NCCL_LIBRARY to its path): {}",
      fmt::join(failures, "; "));
  return out;
}

}  // namespace

void library::check(ncclResult_t status, const char* call) const {
  if (status == ncclSuccess) return;
  const char* text = get_error_string != nullptr ? get_error_string(status) : nullptr;
  throw device_error(fmt::format("{} failed: {} (ncclResult {})", call,
                                 text != nullptr ? text : "unknown error",
                                 static_cast<int>(status)));
}

const library* load(std::string* reason) {
  static const loaded state = find_and_load();
  if (!state.usable) {
    if (reason != nullptr) *reason = state.reason;
    return nullptr;
  }
  return &state.lib;
}

}  // namespace pinbench::collective::nccl
