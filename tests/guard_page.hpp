// A buffer whose last byte sits right before a PROT_NONE page, for tests that prove a kernel reads
// nothing past the view it is given (the read faults and the test binary fails).
#pragma once

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace mosaiq::test {

class guarded_bytes {
 public:
  /// `bytes` writable bytes ending exactly at an inaccessible page; ok() says whether the mapping worked.
  explicit guarded_bytes(std::size_t bytes) {
    const long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    page_ = static_cast<std::size_t>(page);
    const std::size_t data_pages = (bytes + page_ - 1) / page_;
    if (posix_memalign(&memory_, page_, (data_pages + 1) * page_) != 0) {
      memory_ = nullptr;
      return;
    }
    guard_ = static_cast<std::uint8_t*>(memory_) + data_pages * page_;
    if (mprotect(guard_, page_, PROT_NONE) != 0) guard_ = nullptr;
    data_ = guard_ ? guard_ - bytes : nullptr;
  }
  ~guarded_bytes() {
    if (guard_) mprotect(guard_, page_, PROT_READ | PROT_WRITE);
    std::free(memory_);
  }
  guarded_bytes(const guarded_bytes&) = delete;
  guarded_bytes& operator=(const guarded_bytes&) = delete;

  bool ok() const { return data_ != nullptr; }
  std::uint8_t* data() const { return data_; }

 private:
  void* memory_ = nullptr;
  std::uint8_t* guard_ = nullptr;
  std::uint8_t* data_ = nullptr;
  std::size_t page_ = 0;
};

}  // namespace mosaiq::test
#endif
