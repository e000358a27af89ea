// MUL's folded requantization (mul_fold, path.hpp) and its element-wise kernel on 16-bit products, written once for
// x86 registers of either width: V is __m256i (AVX2) or __m512i (AVX-512), the arithmetic is GCC's vector extensions
// on V, and Ops supplies the few instructions they do not express (ymm_ops in ops/eltwise/avx2.hpp, zmm_ops in
// avx512.hpp).
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX2

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise/path.hpp"
#include "mosaiq/reference/eltwise.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

/// Lanes of T in a register of Bytes bytes (GCC vector extension: element-wise operators, scalar operands broadcast).
template <class T, std::size_t Bytes>
using vector_of [[gnu::vector_size(Bytes)]] = T;

/// How mul_folded_regs::scaled applies mul_fold's correction of negative products.
enum class correction { none, negative, threshold };

/// MUL's requantization with its two roundings folded into one floor (mul_fold, path.hpp: the proof) on the int32
/// lanes of Ops::vec.
template <class Ops>
struct mul_folded_regs {
  using V = typename Ops::vec;
  using i32 = vector_of<std::int32_t, Ops::bytes>;
  using i64 = vector_of<std::int64_t, Ops::bytes>;
  using u64 = vector_of<std::uint64_t, Ops::bytes>;

  i32 multiplier{}, threshold{}, output_offset{}, clamp_min{}, clamp_max{};
  i64 beta{};
  mul_fold fold;
  bool usable = false;

  template <rounding R>
  static mul_folded_regs of(const reference::mul_params& p) noexcept {
    mul_folded_regs k{};
    k.fold = mul_fold::of<R>(p);
    if (!k.fold.usable) return k;
    k.multiplier += k.fold.multiplier;
    k.beta += k.fold.beta;
    k.threshold += k.fold.threshold;
    k.output_offset += p.output_offset;
    k.clamp_min += p.clamp.min;
    k.clamp_max += p.clamp.max;
    k.usable = true;
    return k;
  }

  /// MultiplyByQuantizedMultiplier of the products (Shift: shifted left first; false where fold.narrow()): Q' from
  /// bits 31..62 of the 64-bit sums (even lanes shifted down, odd lanes up; Doubled: the products come doubled, so the
  /// sums 2 (P + beta) hold Q' in their high dwords, gathered by one shuffle), minus 1 below the threshold (Correct:
  /// correction::threshold compares; correction::negative where the threshold is known to be 0; correction::none
  /// where it is known to be INT32_MIN), shifted right by e.
  template <bool Shift, correction Correct, bool Doubled = false>
  [[gnu::always_inline]] i32 scaled(i32 product) const noexcept {
    static_assert(!(Shift && Doubled), "a doubled product is not shifted");
    const i32 shifted = Shift ? product << fold.left : product;
    const V m = reinterpret_cast<V>(multiplier);
    const i64 b = Doubled ? beta + beta : beta;
    const i64 even = reinterpret_cast<i64>(Ops::mul_even(reinterpret_cast<V>(shifted), m)) + b;
    const i64 odd =
        reinterpret_cast<i64>(Ops::mul_even(reinterpret_cast<V>(reinterpret_cast<u64>(shifted) >> 32), m)) + b;
    i32 q;
    if constexpr (Doubled)
      q = reinterpret_cast<i32>(Ops::high_dwords(reinterpret_cast<V>(even), reinterpret_cast<V>(odd)));
    else
      q = reinterpret_cast<i32>(
          Ops::odd_dwords(reinterpret_cast<V>(reinterpret_cast<u64>(even) >> 31), reinterpret_cast<V>(odd << 1)));
    if constexpr (Correct == correction::negative) q += shifted >> 31;         // - [Q < 0]
    if constexpr (Correct == correction::threshold) q += shifted < threshold;  // a true comparison is -1
    return q >> fold.right;
  }

  /// The clamped output value of products (the lane kernels' output step, ops/eltwise/simd.hpp).
  [[gnu::always_inline]] V operator()(V product) const noexcept {
    const i32 q = scaled<true, correction::threshold>(reinterpret_cast<i32>(product)) + output_offset;
    return reinterpret_cast<V>(q < clamp_min ? clamp_min : q > clamp_max ? clamp_max : q);
  }

  /// Element-wise MUL where fold.narrow() (mul_words_span).
  template <quantized_element T>
  void span(const T* a, const T* b, T* out, std::size_t n, const reference::mul_params& p) const noexcept;
};

/// Element-wise MUL where fold.narrow(), sizeof(V) elements per step: the offset inputs as 16-bit words (i8 biased to
/// u8 by flipping the sign bit, the offsets shifted to match), their products as the low and high halves of vpmullw
/// / vpmulhw interleaved into dwords, the folded multiply, then saturating packs (which undo the interleaving within
/// each 128-bit lane), the output zero point added as saturated words (every result is at most 65,025 in magnitude,
/// so the saturations clamp as the reference's int32 add and clamp do) and the activation clamp on bytes (Clamp: the
/// packs saturate to T's range, so only a narrower range needs it). One input's words are doubled for
/// scaled<..., Doubled> (|2 (a - zp_a)| <= 510). A tail runs through zero-padded copies.
template <class Ops, correction Correct, bool Clamp, quantized_element T>
inline void mul_words_span(const T* a, const T* b, T* out, std::size_t n, const reference::mul_params& p,
                           const mul_folded_regs<Ops> k) noexcept {
  using V = typename Ops::vec;
  using i16 = vector_of<std::int16_t, Ops::bytes>;
  using i32 = vector_of<std::int32_t, Ops::bytes>;
  using bytes = vector_of<T, Ops::bytes>;
  constexpr std::size_t step = Ops::bytes;
  constexpr bool is_signed = element_traits<T>::is_signed;
  const int bias = is_signed ? -128 : 0;
  const i16 offset1 = i16{} + static_cast<std::int16_t>(p.input1_offset + bias);
  const i16 offset2 = i16{} + static_cast<std::int16_t>(p.input2_offset + bias);
  const i16 zero_point = i16{} + static_cast<std::int16_t>(p.output_offset);
  const V flip = reinterpret_cast<V>(vector_of<std::uint8_t, Ops::bytes>{} + (is_signed ? 0x80 : 0));
  const bytes lo = bytes{} + static_cast<T>(p.clamp.min), hi = bytes{} + static_cast<T>(p.clamp.max);
  const auto block = [&](const T* va, const T* vb, T* vo) {
    V ba, bb;
    std::memcpy(&ba, va, step);
    std::memcpy(&bb, vb, step);
    ba ^= flip;
    bb ^= flip;
    V words[2];
    for (int h = 0; h < 2; ++h) {
      i16 x = reinterpret_cast<i16>(Ops::widen_bytes(ba, h)) + offset1;
      x += x;
      const i16 y = reinterpret_cast<i16>(Ops::widen_bytes(bb, h)) + offset2;
      const V low = reinterpret_cast<V>(x * y), high = Ops::mulhi16(reinterpret_cast<V>(x), reinterpret_cast<V>(y));
      const i32 q0 =
          k.template scaled<false, Correct, true>(reinterpret_cast<i32>(Ops::interleave_words(low, high, 0)));
      const i32 q1 =
          k.template scaled<false, Correct, true>(reinterpret_cast<i32>(Ops::interleave_words(low, high, 1)));
      words[h] =
          Ops::adds16(Ops::packs32(reinterpret_cast<V>(q0), reinterpret_cast<V>(q1)), reinterpret_cast<V>(zero_point));
    }
    bytes r = reinterpret_cast<bytes>(Ops::template pack16<is_signed>(words[0], words[1]));
    if constexpr (Clamp) {
      r = r < lo ? lo : r;
      r = r > hi ? hi : r;
    }
    std::memcpy(vo, &r, step);
  };
  std::size_t i = 0;
  for (; i + step <= n; i += step) block(a + i, b + i, out + i);
  if (i == n) return;
  T ta[step] = {}, tb[step] = {}, to[step];
  std::memcpy(ta, a + i, (n - i) * sizeof(T));
  std::memcpy(tb, b + i, (n - i) * sizeof(T));
  block(ta, tb, to);
  std::memcpy(out + i, to, (n - i) * sizeof(T));
}

template <class Ops>
template <quantized_element T>
void mul_folded_regs<Ops>::span(const T* a, const T* b, T* out, std::size_t n,
                                const reference::mul_params& p) const noexcept {
  const auto run = [&]<correction Correct>() {
    if (p.clamp.min != element_traits<T>::min || p.clamp.max != element_traits<T>::max)
      mul_words_span<Ops, Correct, true, T>(a, b, out, n, p, *this);
    else
      mul_words_span<Ops, Correct, false, T>(a, b, out, n, p, *this);
  };
  if (fold.threshold == 0)
    run.template operator()<correction::negative>();
  else
    run.template operator()<correction::none>();
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise

#endif  // MOSAIQ_TARGET_AVX2
