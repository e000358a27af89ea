// add's table kernels on x86 (AVX2 and AVX-512): element-wise runs and held terms both on the tables, the held
// terms gathered (add_table_terms_span of ops/eltwise/avx2.hpp, avx512.hpp); element-wise runs take the linear form
// (add_linear.hpp, add_linear_span of both) first where it is usable.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX2

#include <cstddef>
#include <cstdint>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise/add_tables.hpp"
#include "mosaiq/ops/eltwise/avx2.hpp"
#include "mosaiq/ops/eltwise/avx512.hpp"
#include "mosaiq/ops/eltwise/simd.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

/// add's linear form on an element-wise run, its flagged blocks on `exact` (the tables or the arithmetic pipeline).
template <quantized_element T, class Exact>
inline void add_linear_run(const T* a, const T* b, T* out, std::size_t n, const add_linear_regs& linear,
                           const Exact& exact) noexcept {
  if (linear.clamps) return add_linear_span<true, T>(a, b, out, n, linear, exact);
  add_linear_span<false, T>(a, b, out, n, linear, exact);
}

/// add's per-input tables as binary_kernels; a term is an input's table entry.
template <quantized_element T>
struct add_table_kernels : line_source {
  const add_tables& tables;
  add_table_regs regs;
  clamp_range clamp;

  const add_linear* form;  ///< null: element-wise runs on the tables alone
  add_linear_regs linear;  ///< form's constants

  add_table_kernels(const add_tables& t, clamp_range c, const held_line_sides* held, const add_linear* f = nullptr)
      : line_source{held},
        tables(t),
        regs(t, c),
        clamp(c),
        form(f),
        linear(add_linear_regs::of<T>(f ? *f : add_linear{}, c)) {}

  void pair(const T* a, const T* b, T* out, std::size_t n) const {
    if (form == nullptr) return add_table_span<T>(a, b, out, n, regs);
    add_linear_run<T>(a, b, out, n, linear,
                      [this](const T* x, const T* y, T* z, std::size_t m) { add_table_span<T>(x, y, z, m, regs); });
  }
  const std::int32_t* table(input side) const { return side == input::a ? tables.first.data() : tables.second.data(); }
  std::int32_t term(input side, T v) const { return table(side)[static_cast<std::uint8_t>(v)]; }
  void with_terms(input side, const T* v, const std::int32_t* terms, T* out, std::size_t n) const {
    add_table_terms_span<false, T>(v, table(side), terms, 0, out, n, clamp);
  }
  void with_term(input side, const T* v, std::int32_t term, T* out, std::size_t n) const {
    add_table_terms_span<true, T>(v, table(side), nullptr, term, out, n, clamp);
  }
};

/// add's arithmetic pipeline (where the tables are not exact) with the linear form in front of its element-wise runs.
template <rounding R, quantized_element T>
struct add_linear_pipeline_kernels : add_pipeline_kernels<R, T> {
  add_linear_regs linear;

  add_linear_pipeline_kernels(const reference::add_params& p, const add_linear& form, const held_line_sides* held)
      : add_pipeline_kernels<R, T>(p, held), linear(add_linear_regs::of<T>(form, p.clamp)) {}

  void pair(const T* a, const T* b, T* out, std::size_t n) const {
    add_linear_run<T>(a, b, out, n, linear,
                      [this](const T* x, const T* y, T* z, std::size_t m) { add_span<R, T>(x, y, z, m, this->regs); });
  }
};

/// add with the linear form in front of its element-wise runs; flagged blocks and broadcast runs on the tables where
/// they are exact (non-null), else on the arithmetic pipeline.
template <rounding R, quantized_element T>
inline void add_linear_broadcast(const tensor_view<const T>& a, const tensor_view<const T>& b,
                                 const tensor_view<T>& out, const reference::add_params& params, const add_linear& form,
                                 const add_tables* tables, const held_line_sides* lines) {
  if (tables != nullptr) return run_broadcast(a, b, out, add_table_kernels<T>(*tables, params.clamp, lines, &form));
  run_broadcast(a, b, out, add_linear_pipeline_kernels<R, T>(params, form, lines));
}

template <rounding R, quantized_element T>
inline void add_tables_broadcast(const tensor_view<const T>& a, const tensor_view<const T>& b,
                                 const tensor_view<T>& out, const reference::add_params& params,
                                 const add_tables& tables, const held_line_sides* lines) {
  run_broadcast(a, b, out, add_table_kernels<T>(tables, params.clamp, lines));
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise

#endif  // MOSAIQ_TARGET_AVX2
