// Intel AMX (Advanced Matrix Extensions, Sapphire Rapids and later): run-time detection, the
// operating system's tile-state permission, and the int8 tile GEMM microkernel the pointwise
// kernel (and conv2d through it) runs when AMX is usable.
//
// Where it exists. The AMX path is part of the x86-64 Linux AVX-512 VNNI build (-mavx512vnni
// -mavx512bw -mavx512vl -mavx512dq): MOSAIQ_HAS_AMX_PATH is 1 there and 0 elsewhere (scalar, AVX2,
// AVX-512 without VNNI, NEON, other systems, or MOSAIQ_NO_AMX defined). No -mamx-* flag is needed:
// the tile instructions are written as inline assembly (which the assembler accepts whatever the
// compile target), and they only run after amx::enabled() said yes, so a binary built this way still
// runs on any AVX-512 VNNI CPU and falls back to the VNNI path where AMX is missing.
// Inline assembly rather than GCC 12's <immintrin.h> intrinsics: its _tile_loadd has no memory
// operand or clobber, so the compiler may move the stores that fill a tile's rows after the load.
//
// Detection (once per process, function-local static): CPUID.(7,0):EDX bits 24 (AMX-TILE) and 25
// (AMX-INT8), XCR0 bits 17/18 (XTILECFG/XTILEDATA enabled by the OS, read with xgetbv), and Linux's
// permission for the tile data state, requested with arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)
// (Linux 5.16+; without it the first tile instruction raises SIGILL). amx::status() says why AMX is
// not used; the environment variable MOSAIQ_DISABLE_AMX (any value) or amx::set_enabled(false)
// turns it off for layers loaded afterwards (tests and benchmarks compare both paths this way).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "mosaiq/simd/target.hpp"

#if !defined(MOSAIQ_NO_AMX) && MOSAIQ_TARGET_AVX512_VNNI && defined(__x86_64__) && defined(__linux__) && \
    (defined(__GNUC__) || defined(__clang__))
#define MOSAIQ_HAS_AMX_PATH 1
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define MOSAIQ_HAS_AMX_PATH 0
#endif

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd::amx {

/// Whether AMX can run, and if not why (a sentence for logs and skipped tests).
struct availability {
  bool available = false;
  const char* reason = "";
};

#if MOSAIQ_HAS_AMX_PATH
namespace detail {
inline availability detect() noexcept {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7 || !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
    return {false, "CPUID leaf 7 is not available"};
  if ((edx & (1u << 24)) == 0 || (edx & (1u << 25)) == 0)
    return {false, "the CPU lacks AMX-TILE/AMX-INT8 (CPUID.(7,0):EDX bits 24/25)"};
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || (ecx & (1u << 27)) == 0)
    return {false, "the OS has not enabled XSAVE (CPUID.1:ECX.OSXSAVE)"};
  unsigned xcr0_low = 0, xcr0_high = 0;
  asm volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  if ((xcr0_low & (3u << 17)) != (3u << 17))
    return {false, "the OS does not enable the AMX tile state (XCR0 bits 17/18)"};
  constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
  if (syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) != 0)
    return {false, "Linux refused arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) (kernel before 5.16?)"};
  return {true, "AMX-TILE and AMX-INT8 available, tile state granted"};
}

inline std::atomic<bool>& enabled_flag() noexcept {
  static std::atomic<bool> flag{std::getenv("MOSAIQ_DISABLE_AMX") == nullptr};
  return flag;
}
}  // namespace detail

/// Detection result, computed (and the OS permission requested) once per process.
inline const availability& status() noexcept {
  static const availability s = detail::detect();
  return s;
}
#else
inline const availability& status() noexcept {
  static const availability s{false, "not compiled in (needs an x86-64 Linux build for AVX-512 VNNI)"};
  return s;
}
#endif

/// The CPU and the OS can run the AMX path of this build.
inline bool available() noexcept { return status().available; }

/// Layers loaded now pick the AMX path: available() and not turned off.
inline bool enabled() noexcept {
#if MOSAIQ_HAS_AMX_PATH
  return available() && detail::enabled_flag().load(std::memory_order_relaxed);
#else
  return false;
#endif
}

/// Turns the AMX path off (or back on) for layers loaded afterwards; layers keep the path they
/// were loaded with. Starts on unless MOSAIQ_DISABLE_AMX is set in the environment.
inline void set_enabled([[maybe_unused]] bool on) noexcept {
#if MOSAIQ_HAS_AMX_PATH
  detail::enabled_flag().store(on, std::memory_order_relaxed);
#endif
}

/// set_enabled(on) while alive (for the layers loaded meanwhile), set_enabled(true) after.
struct scoped_enabled {
  explicit scoped_enabled(bool on) noexcept { set_enabled(on); }
  ~scoped_enabled() { set_enabled(true); }
  scoped_enabled(const scoped_enabled&) = delete;
  scoped_enabled& operator=(const scoped_enabled&) = delete;
};

#if MOSAIQ_HAS_AMX_PATH

/// The 64-byte operand of ldtilecfg (palette 1).
struct alignas(64) tile_config {
  std::uint8_t palette_id = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};  // bytes per row of tmm0..tmm7 (8..15 reserved)
  std::uint8_t rows[16] = {};
};
static_assert(sizeof(tile_config) == 64);

/// Every tile 16 rows x 64 bytes: C tiles are 16 pixels x 16 int32 channels, A tiles 16 pixels x
/// 64 k bytes, B tiles 16 k groups x (16 channels x 4 k) bytes, the VNNI weight layout.
inline tile_config full_tiles() noexcept {
  tile_config c;
  for (int t = 0; t < 8; ++t) c.colsb[t] = 64, c.rows[t] = 16;
  return c;
}

[[gnu::always_inline]] inline void load_config(const tile_config& c) noexcept {
  asm volatile("ldtilecfg %0" ::"m"(c) : "memory");
}
/// Returns the tile state to its initial state (cheaper context switches); call after a run.
[[gnu::always_inline]] inline void release() noexcept { asm volatile("tilerelease" ::: "memory"); }

template <int Tile>
[[gnu::always_inline]] inline void zero() noexcept {
  asm volatile("tilezero %%tmm%c0" ::"i"(Tile));
}
template <int Tile>
[[gnu::always_inline]] inline void load(const void* base, std::ptrdiff_t stride) noexcept {
  asm volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(base), "r"(stride), "i"(Tile) : "memory");
}
template <int Tile>
[[gnu::always_inline]] inline void store(void* base, std::ptrdiff_t stride) noexcept {
  asm volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(base), "r"(stride), "i"(Tile) : "memory");
}
/// C += A x B with 4-byte dot products per int32 lane: tdpbssd (s8 x s8) or tdpbusd (u8 x s8).
template <bool SignedA, int C, int A, int B>
[[gnu::always_inline]] inline void dot_accumulate() noexcept {
  if constexpr (SignedA)
    asm volatile("tdpbssd %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A), "i"(B));
  else
    asm volatile("tdpbusd %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A), "i"(B));
}

inline constexpr int k_step = 64;                 // bytes of K per A tile row (16 groups of 4)
inline constexpr int panel_step_bytes = 16 * 64;  // bytes of one B tile: 16 k groups x 16 channels x 4

/// One register tile of the int8 GEMM: (16 * MP) rows x (16 * NB) int32 columns, MP, NB in {1, 2},
/// tiles tmm0..3 accumulating (row half, column half), tmm4/5 the A rows, tmm6/7 the B panels.
/// `a`: row 0's first byte; rows a_stride bytes apart, k_steps * 64 bytes each (zero-padded).
/// `b`: the first column block's weights [k group][16][4], blocks `b_block_bytes` apart.
/// Leaves the sums in tmm0..3 for gemm_store; the tile config must be full_tiles(). Split from the
/// store so that a caller can requantize the previous tile while the tile unit computes this one.
template <int MP, int NB, bool SignedA>
[[gnu::always_inline]] inline void gemm_compute(const std::uint8_t* a, std::ptrdiff_t a_stride, const std::int8_t* b,
                                                std::ptrdiff_t b_block_bytes, int k_steps) noexcept {
  static_assert((MP == 1 || MP == 2) && (NB == 1 || NB == 2));
  zero<0>();
  if constexpr (NB == 2) zero<1>();
  if constexpr (MP == 2) zero<2>();
  if constexpr (MP == 2 && NB == 2) zero<3>();
  const std::uint8_t* a1 = a + 16 * a_stride;
  const std::int8_t* b1 = b + b_block_bytes;
  for (int s = 0; s < k_steps; ++s) {
    load<4>(a + s * k_step, a_stride);
    load<6>(b + s * panel_step_bytes, 64);
    dot_accumulate<SignedA, 0, 4, 6>();
    if constexpr (NB == 2) {
      load<7>(b1 + s * panel_step_bytes, 64);
      dot_accumulate<SignedA, 1, 4, 7>();
    }
    if constexpr (MP == 2) {
      load<5>(a1 + s * k_step, a_stride);
      dot_accumulate<SignedA, 2, 5, 6>();
      if constexpr (NB == 2) dot_accumulate<SignedA, 3, 5, 7>();
    }
  }
}

/// Stores gemm_compute<MP, NB>'s sums to `c`: (16 * MP) x (16 * NB) int32, row-major.
template <int MP, int NB>
[[gnu::always_inline]] inline void gemm_store(std::int32_t* c) noexcept {
  constexpr std::ptrdiff_t row_bytes = NB * 16 * sizeof(std::int32_t);
  store<0>(c, row_bytes);
  if constexpr (NB == 2) store<1>(c + 16, row_bytes);
  if constexpr (MP == 2) store<2>(c + 16 * NB * 16, row_bytes);
  if constexpr (MP == 2 && NB == 2) store<3>(c + 16 * NB * 16 + 16, row_bytes);
}

#endif  // MOSAIQ_HAS_AMX_PATH

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd::amx
