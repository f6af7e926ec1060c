// Preloaded (LD_PRELOAD) into the plain suite by scripts/test.sh: the first time a process starts
// a thread, it appends the Catch test spec it runs under (PINBENCH_TEST_SPEC, which the test
// runner exports for every process it starts) to the file PINBENCH_THREAD_RECORD names. The TSan
// stage then runs only those tests: a test whose processes never start a thread has no two
// threads to race, and ThreadSanitizer has nothing to find there.
// Only C calls here: it runs inside every process of the suite, before the thread it records.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

using create_fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

std::atomic<bool> recorded{false};

void record_once() {
  if (recorded.exchange(true)) return;
  const char* record = std::getenv("PINBENCH_THREAD_RECORD");
  const char* spec = std::getenv("PINBENCH_TEST_SPEC");
  if (record == nullptr || spec == nullptr) return;
  const int fd = ::open(record, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // One write per line: O_APPEND keeps lines of concurrent processes whole.
  char line[4096];
  const std::size_t n = std::min(std::strlen(spec), sizeof line - 1);
  std::memcpy(line, spec, n);
  line[n] = '\n';
  (void)!::write(fd, line, n + 1);
  ::close(fd);
}

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                              void* arg) noexcept {
  static const auto next = reinterpret_cast<create_fn>(::dlsym(RTLD_NEXT, "pthread_create"));
  record_once();
  return next(thread, attr, start, arg);
}
