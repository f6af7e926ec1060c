// A launch inside one test process: N communicators, one per thread, meeting through shared
// memory. Enough of dist::communicator for the collective groups and the kind's engine; the
// timeouts are not enforced (a test that hangs is a failure of its own).
#pragma once

#include <barrier>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "dist/communicator.hpp"

namespace pinbench::testing {

class thread_world {
 public:
  explicit thread_world(int n)
      : n_(n),
        step_(n),
        ptrs_(static_cast<std::size_t>(n)),
        texts_(static_cast<std::size_t>(n)),
        posted_(static_cast<std::size_t>(n)) {}

  class comm final : public dist::communicator {
   public:
    comm(thread_world& w, int rank) : w_(w), rank_(rank) {}
    [[nodiscard]] int rank() const noexcept override { return rank_; }
    [[nodiscard]] int size() const noexcept override { return w_.n_; }
    [[nodiscard]] std::string_view transport() const noexcept override { return "threads"; }

    void barrier(dist::timeout) override { w_.step_.arrive_and_wait(); }
    std::vector<std::string> all_gather(std::string_view mine, dist::timeout) override {
      text() = std::string(mine);
      w_.step_.arrive_and_wait();
      auto all = w_.texts_;
      w_.step_.arrive_and_wait();
      return all;
    }
    void broadcast(std::string& data, int root, dist::timeout) override {
      if (rank_ == root) text() = data;
      w_.step_.arrive_and_wait();
      data = w_.texts_[static_cast<std::size_t>(root)];
      w_.step_.arrive_and_wait();
    }
    void all_reduce_sum(const void* send, void* recv, std::size_t count, dist::element e,
                        dist::timeout) override {
      reduce(send, recv, count, e, 0);
    }
    void all_gather_block(const void* send, void* recv, std::size_t count, dist::element e,
                          dist::timeout) override {
      const std::size_t bytes = count * dist::size_of(e);
      post(send);
      for (int q = 0; q < w_.n_; ++q)
        std::memcpy(static_cast<char*>(recv) + bytes * static_cast<std::size_t>(q), ptr(q), bytes);
      w_.step_.arrive_and_wait();
    }
    void reduce_scatter_sum(const void* send, void* recv, std::size_t count, dist::element e,
                            dist::timeout) override {
      reduce(send, recv, count, e, count * static_cast<std::size_t>(rank_));
    }
    void broadcast_block(void* data, std::size_t count, dist::element e, int root,
                         dist::timeout) override {
      post(data);
      if (rank_ != root) std::memcpy(data, ptr(root), count * dist::size_of(e));
      w_.step_.arrive_and_wait();
    }
    // Pairwise, not collective: only the two ranks of a pair meet.
    void send_recv(const void* send, void* recv, std::size_t count, dist::element e, int peer,
                   dist::timeout) override {
      std::unique_lock lock(w_.mutex_);
      auto& mine = w_.posted_[static_cast<std::size_t>(rank_)];
      auto& theirs = w_.posted_[static_cast<std::size_t>(peer)];
      mine.ptr = send;
      ++mine.seq;
      w_.changed_.notify_all();
      w_.changed_.wait(lock, [&] { return theirs.seq >= mine.seq; });
      std::memcpy(recv, theirs.ptr, count * dist::size_of(e));
      ++mine.done;  // the peer may not change its send buffer before this copy
      w_.changed_.notify_all();
      w_.changed_.wait(lock, [&] { return theirs.done >= mine.done; });
    }
    void stop_others(std::string_view) noexcept override {}
    [[noreturn]] void abort(int, std::string_view) override { std::abort(); }

   private:
    std::string& text() { return w_.texts_[static_cast<std::size_t>(rank_)]; }
    const void* ptr(int q) { return w_.ptrs_[static_cast<std::size_t>(q)]; }
    void post(const void* p) {
      w_.ptrs_[static_cast<std::size_t>(rank_)] = p;
      w_.step_.arrive_and_wait();
    }
    // recv[i] = sum over ranks of send[first + i]; then everyone waits until all have read.
    void reduce(const void* send, void* recv, std::size_t count, dist::element e,
                std::size_t first) {
      post(send);
      switch (e) {
        case dist::element::f32:
          sum<float>(recv, count, first);
          break;
        case dist::element::f64:
          sum<double>(recv, count, first);
          break;
        case dist::element::i32:
          sum<std::int32_t>(recv, count, first);
          break;
      }
      w_.step_.arrive_and_wait();
    }
    template <class T>
    void sum(void* recv, std::size_t count, std::size_t first) {
      for (std::size_t i = 0; i < count; ++i) {
        T s = 0;
        for (int q = 0; q < w_.n_; ++q) s += static_cast<const T*>(ptr(q))[first + i];
        static_cast<T*>(recv)[i] = s;
      }
    }

    thread_world& w_;
    int rank_;
  };

 private:
  struct mailbox {
    const void* ptr = nullptr;
    std::uint64_t seq = 0, done = 0;
  };
  int n_;
  std::barrier<> step_;
  std::vector<const void*> ptrs_;
  std::vector<std::string> texts_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<mailbox> posted_;
};

}  // namespace pinbench::testing
