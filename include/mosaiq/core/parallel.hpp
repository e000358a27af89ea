// Running work on several threads. One concept, `parallel_executor`, is all the library asks of a
// thread pool: a thread count and `parallel_for(tasks, fn)` that calls fn(0) ... fn(tasks - 1), each
// exactly once, and returns when all have returned. An application plugs in the pool it already
// has by wrapping it in a type with these two members; `serial_executor` (the default everywhere)
// runs the tasks in order on the caller, and `thread_pool` is a built-in pool on std::jthread.
//
// Work is split into row bands (`row_bands`): a pure function of the row count and the band count,
// so every thread count gives the same bands for the same count, and every band writes rows no other
// band writes. Which thread runs a band never changes a result.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/simd/target.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// A non-owning reference to a callable `void(Args...)`: two pointers, no heap, so a pool can take it
/// without allocating. The callable must outlive the call it is passed to.
template <class... Args>
class function_ref {
 public:
  template <class F>
  requires(!std::same_as<std::remove_cvref_t<F>, function_ref> && std::invocable<F&, Args...>) function_ref(F& fn)
  noexcept  // NOLINT(google-explicit-constructor): built at every call site
      : object_(static_cast<const void*>(std::addressof(fn))),
        call_([](const void* o, Args... args) { (*static_cast<F*>(const_cast<void*>(o)))(args...); }) {}
  void operator()(Args... args) const { call_(object_, args...); }

 private:
  const void* object_;
  void (*call_)(const void*, Args...);
};

/// `void(std::size_t task)`: what parallel_for runs.
using task_function = function_ref<std::size_t>;
/// `void(std::size_t piece, std::size_t slot)`: what parallel_pieces runs.
using piece_function = function_ref<std::size_t, std::size_t>;

/// What the library needs of a thread pool. `thread_count()` is at least 1 and decides how work is
/// split; `parallel_for` may run tasks on any threads in any order, but each exactly once, and
/// must not return before every task has returned.
template <class E>
concept parallel_executor = requires(E& e, const E& ce, std::size_t tasks, task_function fn) {
  { ce.thread_count() } -> std::convertible_to<int>;
  e.parallel_for(tasks, fn);
};

/// Runs every task on the calling thread, in order: today's single-threaded behaviour.
struct serial_executor {
  static constexpr int thread_count() noexcept { return 1; }
  static void parallel_for(std::size_t tasks, task_function fn) {
    for (std::size_t t = 0; t < tasks; ++t) fn(t);
  }
};

/// Rows [first, last) of a band.
struct row_band {
  int first = 0;
  int last = 0;
  constexpr int rows() const noexcept { return last - first; }
  friend constexpr bool operator==(const row_band&, const row_band&) = default;
};

/// `rows` split into `count` bands of consecutive rows whose sizes differ by at most one (the
/// larger ones first). Band i depends on (rows, count, i) only.
struct row_bands {
  int rows = 0;
  int count = 1;
  /// At most `threads` bands and no empty band (at least one band, empty when rows is 0).
  static constexpr row_bands split(int rows, int threads) noexcept {
    return {rows, std::max(1, std::min(rows, threads))};
  }
  constexpr row_band operator[](int i) const noexcept {
    const int base = rows / count, extra = rows % count;
    const int first = i * base + std::min(i, extra);
    return {first, first + base + (i < extra ? 1 : 0)};
  }
};

/// The calling thread and `threads - 1` workers on std::jthread, created once. The caller runs a job's task
/// 0; the others are claimed one at a time from a shared counter (a compare-and-swap on one cache line), by
/// the caller and by every worker that is awake, so a worker the OS has not scheduled yet delays nothing: the caller
/// runs the tasks left and returns once every claimed task has returned (results depend on the tasks, never on which
/// thread runs them). Workers spin for a short while after a job (the next layer follows within microseconds) and then
/// sleep on an atomic wait. No heap after construction; the destructor stops and joins the workers. One parallel_for at
/// a time: calls from several threads at once must be serialized by the caller.
class thread_pool {
 public:
  /// `threads` (at least 1) includes the caller: thread_pool(2) starts one worker.
  explicit thread_pool(int threads) : threads_(std::max(1, threads)) {
    require(threads >= 1, errc::invalid_argument, "thread_pool: threads must be at least 1");
    workers_ = std::make_unique<std::jthread[]>(static_cast<std::size_t>(threads_ - 1));
    for (int w = 1; w < threads_; ++w) workers_[static_cast<std::size_t>(w - 1)] = std::jthread([this] { work(); });
  }
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;
  ~thread_pool() {
    stopping_.store(true, std::memory_order_relaxed);
    claims_.store((generation_ + 1) << 32 | closed, std::memory_order_release);
    claims_.notify_all();
    workers_.reset();  // joins every worker while the atomics they read still exist
  }

  int thread_count() const noexcept { return threads_; }

  void parallel_for(std::size_t tasks, task_function fn) {
    if (tasks == 0) return;
    if (threads_ == 1 || tasks == 1 || tasks >= closed) {
      for (std::size_t t = 0; t < tasks; ++t) fn(t);
      return;
    }
    job_ = fn;
    done_.store(0, std::memory_order_relaxed);
    tasks_.store(tasks, std::memory_order_release);
    const std::uint64_t generation = ++generation_;
    // Published with task 0 claimed: it is always the caller's (parallel_pieces relies on it to keep rows on
    // one core from layer to layer).
    claims_.store(generation << 32 | 1, std::memory_order_release);  // publishes job_, tasks_ and done_
    claims_.notify_all();
    fn(0);
    done_.fetch_add(1, std::memory_order_acq_rel);
    run_claimed(generation, fn, tasks);
    std::size_t finished = done_.load(std::memory_order_acquire);
    while (finished != tasks) finished = wait_for_change(done_, finished);
    // Close the job before the next one rewrites tasks_: a worker that read this job's claim word and
    // then the next job's task count fails its compare-and-swap (tasks_'s release orders this store first).
    claims_.store(generation << 32 | closed, std::memory_order_relaxed);
  }

 private:
  // Pause iterations before a thread sleeps: long enough to cover the gap between two layers.
  static constexpr int spin_limit = 1 << 14;
  // The claim word: the job's generation in the high 32 bits, the next unclaimed task in the low 32
  // (`closed` once every task has returned).
  static constexpr std::uint64_t closed = 0xFFFFFFFFu;

  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__) || defined(__arm__)
    asm volatile("yield");
#endif
  }

  /// Claims and runs tasks of job `generation` until none is left. `fn` and `tasks` are the job's when
  /// the caller passes them; a worker reads them after its first successful claim.
  void run_claimed(std::uint64_t generation, std::optional<task_function> fn, std::size_t tasks) {
    std::uint64_t word = claims_.load(std::memory_order_acquire);
    for (;;) {
      if ((word >> 32) != (generation & closed)) return;
      const std::uint64_t next = word & closed;
      if (next >= tasks) return;
      if (!claims_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire))
        continue;
      if (!fn) fn = job_;  // the claim's acquire orders the caller's job_ before this read
      (*fn)(static_cast<std::size_t>(next));
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == tasks) done_.notify_one();
      word = claims_.load(std::memory_order_acquire);
    }
  }

  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      std::uint64_t word = claims_.load(std::memory_order_acquire);
      while ((word >> 32) == seen) word = wait_for_change(claims_, word);
      if (stopping_.load(std::memory_order_relaxed)) return;
      seen = word >> 32;
      // The task count of job `seen` or of a later one; the claim in run_claimed fails on a later one.
      run_claimed(seen, std::nullopt, tasks_.load(std::memory_order_acquire));
    }
  }

  /// Spins, then sleeps, until `value` differs from `old`; returns the new value.
  template <class V>
  static V wait_for_change(const std::atomic<V>& value, V old) noexcept {
    for (int spin = 0; spin < spin_limit; ++spin) {
      const V now = value.load(std::memory_order_acquire);
      if (now != old) return now;
      pause();
      // More threads than cores: let the thread that would change `value` run.
      if (spin % 256 == 255) std::this_thread::yield();
    }
    for (;;) {
      value.wait(old, std::memory_order_acquire);
      const V now = value.load(std::memory_order_acquire);
      if (now != old) return now;
    }
  }

  int threads_;
  std::unique_ptr<std::jthread[]> workers_;
  std::uint64_t generation_ = 0;  // the caller's count of jobs
  alignas(64) std::atomic<std::uint64_t> claims_{0};
  std::atomic<std::size_t> tasks_{0};
  std::atomic<bool> stopping_{false};
  alignas(64) std::atomic<std::size_t> done_{0};
  // Written by the caller before claims_ publishes a job, read by a worker after a claim of it.
  std::optional<task_function> job_;
};

/// Calls fn(band, task) for every band of `rows` split over the executor's threads, one task each.
template <parallel_executor E, class F>
void parallel_rows(E& exec, int rows, F&& fn) {
  const row_bands bands = row_bands::split(rows, exec.thread_count());
  auto task = [&](std::size_t t) { fn(bands[static_cast<int>(t)], t); };
  exec.parallel_for(static_cast<std::size_t>(bands.count), task);
}

/// `rows` split into pieces for `bands` tasks: up to `per_task` pieces a task, none under `min_rows` rows
/// (never fewer pieces than bands). A pure function of its arguments, like row_bands::split.
constexpr row_bands split_pieces(int rows, int bands, int per_task, int min_rows) noexcept {
  const int fitting = rows / std::max(1, min_rows);
  return row_bands::split(rows, std::max(bands, std::min(bands * per_task, fitting)));
}

namespace detail {
/// Pieces [next, end) of one task, taken from the front by the task and from the back by tasks that ran out of
/// their own: both ends in one word, so that a take is one compare-and-swap. Alone on its cache line.
class alignas(64) piece_range {
 public:
  void assign(std::size_t first, std::size_t last) noexcept {
    word_.store(std::uint64_t(last) << 32 | first, std::memory_order_relaxed);
  }
  bool take_front(std::size_t& piece) noexcept { return take(piece, true); }
  bool take_back(std::size_t& piece) noexcept { return take(piece, false); }

 private:
  bool take(std::size_t& piece, bool front) noexcept {
    std::uint64_t word = word_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t next = word & 0xFFFFFFFFu, end = word >> 32;
      if (next >= end) return false;
      const std::uint64_t taken = front ? word + 1 : word - (std::uint64_t(1) << 32);
      if (word_.compare_exchange_weak(word, taken, std::memory_order_relaxed)) {
        piece = static_cast<std::size_t>(front ? next : end - 1);
        return true;
      }
    }
  }
  std::atomic<std::uint64_t> word_{0};
};

/// The pieces of one parallel_pieces call, a consecutive run of them owned by each task.
class piece_ranges {
 public:
  static constexpr std::size_t most_slots = 64;
  piece_ranges(std::size_t pieces, std::size_t slots) noexcept : slots_(std::min({slots, pieces, most_slots})) {
    const row_bands owned = row_bands::split(static_cast<int>(pieces), static_cast<int>(slots_));
    for (std::size_t s = 0; s < slots_; ++s)
      ranges_[s].assign(std::size_t(owned[int(s)].first), std::size_t(owned[int(s)].last));
  }
  std::size_t slots() const noexcept { return slots_; }
  /// Task `slot`: its own pieces first to last, then the last pieces left to the others. Not inlined, and
  /// `each` is type-erased: a network's per-layer code stays about as small as with one band per task (a
  /// larger unit changes what the compiler inlines in the kernels).
  [[gnu::noinline]] void run(std::size_t slot, piece_function each) {
    std::size_t piece = 0;
    while (ranges_[slot].take_front(piece)) each(piece, slot);
    for (std::size_t other = 1; other < slots_; ++other)
      while (ranges_[(slot + other) % slots_].take_back(piece)) each(piece, slot);
  }

 private:
  std::size_t slots_;
  std::array<piece_range, most_slots> ranges_;
};
}  // namespace detail

/// Calls fn(piece, slot) once for every piece in [0, pieces), on `slots` tasks of the executor: task s owns
/// the s-th of `slots` consecutive runs of pieces (as row_bands splits rows) and takes them first to last,
/// then takes the last pieces left to other tasks; `slot` is the task's (its workspace slice). So a thread
/// that starts late, or loses its CPU for a while, holds back at most the piece it is on, while on a pool
/// whose threads keep their task (thread_pool: the caller runs task 0) each thread works on the same rows
/// layer after layer, which its core's caches still hold. pthreadpool, under XNNPACK, splits its loops the
/// same way. Which thread runs a piece never changes a result.
template <parallel_executor E, class F>
void parallel_pieces(E& exec, std::size_t pieces, std::size_t slots, F&& fn) {
  detail::piece_ranges ranges(pieces, slots);
  const piece_function each(fn);
  auto task = [&](std::size_t slot) { ranges.run(slot, each); };
  exec.parallel_for(ranges.slots(), task);
}

/// Bytes between two bands' workspace slices: a whole number of cache lines, so that no two threads
/// write one line.
constexpr std::size_t workspace_slice_stride(std::size_t bytes) noexcept { return (bytes + 63) / 64 * 64; }

/// Workspace a parallel_run of Kernel (depthwise, pointwise, conv2d: kernels with run_rows) on `in`
/// needs for up to `threads` threads: one slice of Kernel::workspace_bytes(in) per band.
template <class Kernel>
constexpr std::size_t parallel_workspace_bytes(shape in, int threads) noexcept {
  return workspace_slice_stride(Kernel::workspace_bytes(in)) * static_cast<std::size_t>(std::max(1, threads));
}

/// Runs `kernel` on the executor's threads, one band of output rows each; bit-identical to
/// kernel(in, out, workspace). `workspace` holds parallel_workspace_bytes<Kernel>(in, threads).
template <parallel_executor E, class Kernel, class T>
void parallel_run(E& exec, const Kernel& kernel, tensor_view<const T> in, tensor_view<T> out,
                  std::span<std::byte> workspace) {
  const row_bands bands = row_bands::split(out.height(), exec.thread_count());
  const std::size_t slice = Kernel::workspace_bytes(in.dims());
  if (!require(workspace.size() >= parallel_workspace_bytes<Kernel>(in.dims(), bands.count), errc::invalid_argument,
               "parallel_run: workspace smaller than parallel_workspace_bytes(input, threads)"))
    return;
  auto task = [&](std::size_t t) {
    kernel.run_rows(in, out, workspace.subspan(t * workspace_slice_stride(slice), slice), bands[static_cast<int>(t)]);
  };
  exec.parallel_for(static_cast<std::size_t>(bands.count), task);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
