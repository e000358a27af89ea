// add's linear form (add_linear.hpp) in broadcast registers for the AVX2 and AVX-512 kernels (add_linear_block of
// ops/eltwise/avx2.hpp, avx512.hpp), written once over the register-ops policy (ymm_ops, zmm_ops), as
// mul_folded_regs<Ops> in mul_words.hpp.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX2

#include <immintrin.h>

#include <cstdint>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise/add_linear.hpp"
#include "mosaiq/ops/eltwise/mul_words.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

/// add's linear form in Ops::vec registers.
template <class Ops>
struct linear_add_regs {
  using V = typename Ops::vec;
  /// v in every lane of E.
  template <class E>
  static V set1(E v) noexcept {
    return reinterpret_cast<V>(vector_of<E, Ops::bytes>{} + v);
  }

  V a_coef, b_coef, offset, fraction, band, lo, hi;
  __m128i shift;
  bool clamps;  ///< false when the clamp is T's whole range: the saturating packs are the clamp

  template <quantized_element T>
  static linear_add_regs of(const add_linear& l, clamp_range clamp) noexcept {
    return {set1(l.a_coef),
            set1(l.b_coef),
            set1(l.offset),
            set1((std::int32_t{1} << l.shift) - 1),
            set1(l.band),
            set1(static_cast<char>(clamp.min)),
            set1(static_cast<char>(clamp.max)),
            _mm_cvtsi32_si128(l.shift),
            clamp.min != element_traits<T>::min || clamp.max != element_traits<T>::max};
  }
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise

#endif  // MOSAIQ_TARGET_AVX2
