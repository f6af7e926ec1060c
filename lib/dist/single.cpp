#include "dist/single.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace pinbench::dist {

namespace {

class single final : public communicator {
 public:
  [[nodiscard]] int rank() const noexcept override { return 0; }
  [[nodiscard]] int size() const noexcept override { return 1; }
  [[nodiscard]] std::string_view transport() const noexcept override {
    return to_string(transport_kind::single);
  }

  void barrier(timeout) override {}
  std::vector<std::string> all_gather(std::string_view mine, timeout) override {
    return {std::string(mine)};
  }
  void broadcast(std::string&, int root, timeout) override { check_rank(root, "broadcast root"); }

  void all_reduce_sum(const void* send, void* recv, std::size_t count, element e,
                      timeout) override {
    copy(send, recv, count, e);
  }
  void all_gather_block(const void* send, void* recv, std::size_t count, element e,
                        timeout) override {
    copy(send, recv, count, e);
  }
  void reduce_scatter_sum(const void* send, void* recv, std::size_t count, element e,
                          timeout) override {
    copy(send, recv, count, e);
  }
  void broadcast_block(void*, std::size_t, element, int root, timeout) override {
    check_rank(root, "broadcast_block root");
  }
  void send_recv(const void* send, void* recv, std::size_t count, element e, int peer,
                 timeout) override {
    check_rank(peer, "send_recv peer");
    copy(send, recv, count, e);
  }

  void stop_others(std::string_view) noexcept override {}  // there are none

  [[noreturn]] void abort(int exit_code, std::string_view why) override {
    // `why` as given: the caller says which rank and why in its own words.
    std::fprintf(stderr, "%.*s\n", static_cast<int>(why.size()), why.data());
    std::fflush(stderr);
    std::_Exit(exit_code);
  }

 private:
  static void copy(const void* send, void* recv, std::size_t count, element e) {
    // memmove: in place (send == recv) is allowed.
    if (count > 0 && send != recv) std::memmove(recv, send, count * size_of(e));
  }
  static void check_rank(int r, const char* what) {
    if (r != 0) throw error(fmt::format("{} {} is outside [0, 1)", what, r));
  }
};

}  // namespace

std::unique_ptr<communicator> make_single() {
  return std::make_unique<single>();
}

}  // namespace pinbench::dist
