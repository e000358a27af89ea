// Runtime misuse (null pointers, mismatched extents, misaligned arenas) is reported through one
// routable hook instead of being left to corrupt memory.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

enum class errc {
  ok = 0,
  null_pointer,
  shape_mismatch,
  bad_alignment,
  invalid_argument,
  blob_mismatch,
};

constexpr std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::ok:
      return "ok";
    case errc::null_pointer:
      return "null pointer";
    case errc::shape_mismatch:
      return "shape mismatch";
    case errc::bad_alignment:
      return "bad alignment";
    case errc::invalid_argument:
      return "invalid argument";
    case errc::blob_mismatch:
      return "weights blob mismatch";
  }
  return "unknown";
}

/// Result of an operation that can fail on bad runtime input.
struct status {
  errc code = errc::ok;
  const char* message = "";
  constexpr bool ok() const noexcept { return code == errc::ok; }
  constexpr explicit operator bool() const noexcept { return ok(); }
};

/// Where a misuse was detected. source_location would do, but clang 14 with libstdc++ 12
/// (Debian bookworm's sanitizer toolchain) does not provide it; the builtins work everywhere.
struct source_location {
  const char* file = "";
  unsigned line = 0;
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           unsigned line = __builtin_LINE()) noexcept {
    return {file, line};
  }
  constexpr const char* file_name() const noexcept { return file; }
  constexpr unsigned line_number() const noexcept { return line; }
};

/// Called on misuse. The default prints the message and aborts; a user may throw instead,
/// log and abort differently, or (in tests) record the call. If it returns, the kernel that
/// detected the misuse returns without touching memory.
using error_handler = void (*)(errc, const char* message, source_location where);

namespace detail {
inline void default_error_handler(errc code, const char* message, source_location where) {
  std::fprintf(stderr, "mosaiq: %s: %s (%s:%u)\n", to_string(code).data(), message, where.file_name(),
               where.line_number());
  std::abort();
}
inline std::atomic<error_handler>& handler_slot() noexcept {
  static std::atomic<error_handler> slot{&default_error_handler};
  return slot;
}
}  // namespace detail

/// Installs a handler; returns the previous one. Passing nullptr restores the default.
inline error_handler set_error_handler(error_handler handler) noexcept {
  return detail::handler_slot().exchange(handler ? handler : &detail::default_error_handler);
}

/// Reports misuse through the installed handler when `condition` is false. Returns `condition`
/// so callers can bail out: `if (!require(p != nullptr, errc::null_pointer, "...")) return;`
inline bool require(bool condition, errc code, const char* message,
                    source_location where = source_location::current()) {
  if (condition) [[likely]]
    return true;
  detail::handler_slot().load()(code, message, where);
  return false;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
