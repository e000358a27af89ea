// The one replacement of the global allocation functions in a test binary: counts, then forwards
// to malloc/aligned_alloc. Under ThreadSanitizer, whose runtime defines the allocation functions
// itself, a sanitizer malloc hook counts instead (it sees every allocation operator new makes).
#include "allocation_counter.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_THREAD__)
#define MOSAIQ_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MOSAIQ_TEST_TSAN 1
#endif
#endif

#if defined(MOSAIQ_TEST_TSAN)
#include <sanitizer/allocator_interface.h>

namespace {
std::atomic<long> allocation_count{0};
void count_malloc(const volatile void*, std::size_t) { allocation_count.fetch_add(1, std::memory_order_relaxed); }
void ignore_free(const volatile void*) {}
const int hooks_installed = __sanitizer_install_malloc_and_free_hooks(count_malloc, ignore_free);
}  // namespace

long mosaiq::test::heap_allocations() noexcept {
  static_cast<void>(hooks_installed);
  return allocation_count.load(std::memory_order_relaxed);
}

#else

namespace {
std::atomic<long> allocation_count{0};

void* allocate(std::size_t bytes, std::size_t alignment) {
  allocation_count.fetch_add(1, std::memory_order_relaxed);
  if (bytes == 0) bytes = 1;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(bytes)
                : std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
// Out of line so GCC does not pair an inlined free() with operator new (-Wmismatched-new-delete).
[[gnu::noinline]] void release(void* p) noexcept { std::free(p); }
}  // namespace

long mosaiq::test::heap_allocations() noexcept { return allocation_count.load(std::memory_order_relaxed); }

void* operator new(std::size_t bytes) { return allocate(bytes, 0); }
void* operator new[](std::size_t bytes) { return allocate(bytes, 0); }
void* operator new(std::size_t bytes, std::align_val_t a) { return allocate(bytes, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t bytes, std::align_val_t a) { return allocate(bytes, static_cast<std::size_t>(a)); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }

#endif
