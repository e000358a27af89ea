// Quantized hard-swish (TFLite HARD_SWISH, u8 and i8), bit-exact with reference/hard_swish.hpp:
//
//   mosaiq::hard_swish<mosaiq::i8> activation(input_quant, output_quant);  // load time: the table
//   activation(in, out);                                                  // out may be in (same views)
//
// An 8-bit input has 256 values, so at load the constructor runs the reference's int16 pipeline on each of them and
// keeps the 256 outputs: a table exact by construction. A run is then a byte-table lookup (ops/detail/byte_table.hpp,
// the one lookup shared with logistic and requantizing resize): vpermi2b on AVX-512 VBMI, XOR-telescoped pshufb on
// AVX2 and AVX-512 without VBMI, tbl/tbx on aarch64, vtbl/vtbx on armv7, a scalar loop elsewhere. The lookup costs
// less per byte than the pipeline's six int16 multiplies and shifts would on any of these targets, and needs no
// rounding tricks to stay exact. Dense views run as one flat array, strided views pixel by pixel.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/detail/byte_table.hpp"
#include "mosaiq/reference/hard_swish.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Hard-swish of every element; see the file comment.
template <quantized_element T>
class hard_swish {
 public:
  /// Load time: TFLite's Prepare (reported as errc::invalid_argument, and the object refuses to run, when the
  /// quantizations are unusable; see reference::make_hard_swish_params) and the 256-entry table.
  hard_swish(quant_params input, quant_params output) : params_(reference::make_hard_swish_params<T>(input, output)) {
    if (!params_.valid) return;
    for (int byte = 0; byte < 256; ++byte) {
      const auto q = static_cast<T>(static_cast<std::uint8_t>(byte));
      lookup_.values[static_cast<std::size_t>(byte)] =
          static_cast<std::uint8_t>(reference::hard_swish_element<T>(q, params_));
    }
    lookup_.finish();
  }

  bool valid() const noexcept { return params_.valid; }
  const reference::hard_swish_params& params() const noexcept { return params_; }

  /// Views of equal extents, any strides; out may be exactly in. Misuse is reported and leaves `out` untouched.
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const T, InExtents> in, tensor_view<T, OutExtents> out) const {
    run(tensor_view<const T>(in), tensor_view<T>(out));
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<T, InExtents> in, tensor_view<T, OutExtents> out) const {
    run(tensor_view<const T>(in), tensor_view<T>(out));
  }

  void run(tensor_view<const T> in, tensor_view<T> out) const {
    if (!require(valid(), errc::invalid_argument, "hard_swish: built from invalid quantization")) return;
    if (!check_view(in, "hard_swish: input") || !check_view(out, "hard_swish: output") ||
        !require(in.batch() == out.batch() && in.dims() == out.dims(), errc::shape_mismatch,
                 "hard_swish: input and output extents differ"))
      return;
    detail::run_byte_table<T>(lookup_, in, out);
  }

 private:
  reference::hard_swish_params params_;
  detail::byte_table lookup_{};
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
