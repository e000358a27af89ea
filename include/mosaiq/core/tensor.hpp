// NHWC shapes and non-owning tensor views. Extents are static (part of the type, used by static
// networks) or dynamic (runtime values), per axis, like std::mdspan's extents; the same kernels
// take both.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Height, width and channels of one image (batch is carried by views, not shapes).
struct shape {
  int height = 0;
  int width = 0;
  int channels = 0;
  constexpr std::size_t elements() const noexcept {
    return static_cast<std::size_t>(height) * static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  }
  constexpr std::size_t pixels() const noexcept {
    return static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  }
  friend constexpr bool operator==(const shape&, const shape&) = default;
};

inline constexpr int dynamic_extent = -1;

/// Per-axis static or dynamic extents for (H, W, C).
template <int H = dynamic_extent, int W = dynamic_extent, int C = dynamic_extent>
class extents {
 public:
  static constexpr bool all_static = H != dynamic_extent && W != dynamic_extent && C != dynamic_extent;
  static constexpr std::array<int, 3> static_values{H, W, C};

  constexpr extents() noexcept requires all_static : values_{H, W, C} {}
  /// Dynamic axes take the given values; static axes must agree with them (checked).
  constexpr explicit extents(shape s) noexcept : values_{s.height, s.width, s.channels} {
    if (!std::is_constant_evaluated()) {
      require((H == dynamic_extent || H == s.height) && (W == dynamic_extent || W == s.width) &&
                  (C == dynamic_extent || C == s.channels),
              errc::shape_mismatch, "runtime shape differs from the view's static extents");
    }
    if constexpr (H != dynamic_extent) values_[0] = H;
    if constexpr (W != dynamic_extent) values_[1] = W;
    if constexpr (C != dynamic_extent) values_[2] = C;
  }

  constexpr int height() const noexcept {
    if constexpr (H != dynamic_extent)
      return H;
    else
      return values_[0];
  }
  constexpr int width() const noexcept {
    if constexpr (W != dynamic_extent)
      return W;
    else
      return values_[1];
  }
  constexpr int channels() const noexcept {
    if constexpr (C != dynamic_extent)
      return C;
    else
      return values_[2];
  }
  constexpr shape dims() const noexcept { return {height(), width(), channels()}; }

 private:
  std::array<int, 3> values_{};
};

using dynamic_extents = extents<>;
template <shape S>
using static_extents = extents<S.height, S.width, S.channels>;

/// Pointer + extents + strides (in elements). Channels are contiguous; pixels may be further
/// apart than `channels` (a channel slice of a wider tensor, e.g. a concat destination).
template <class T, class Extents = dynamic_extents>
class tensor_view {
 public:
  using element_type = T;
  using extents_type = Extents;

  constexpr tensor_view() noexcept = default;

  /// Dense NHWC tensor.
  constexpr tensor_view(T* data, shape dims, int batch = 1) noexcept : tensor_view(data, dims, batch, dims.channels) {}

  /// Pixels `pixel_stride` elements apart, rows `width * pixel_stride`, images `height * row`.
  constexpr tensor_view(T* data, shape dims, int batch, std::ptrdiff_t pixel_stride) noexcept
      : data_(data),
        extents_(dims),
        batch_(batch),
        pixel_stride_(pixel_stride),
        row_stride_(pixel_stride * dims.width),
        batch_stride_(pixel_stride * dims.width * dims.height) {}

  /// Fully static shape: only the pointer.
  constexpr explicit tensor_view(T* data) noexcept requires Extents::all_static
      : tensor_view(data, shape{Extents::static_values[0], Extents::static_values[1], Extents::static_values[2]}) {}

  /// Views convert to views of const elements and to dynamic extents.
  template <class U, class E>
  requires(std::is_convertible_v<U (*)[], T (*)[]>) constexpr tensor_view(const tensor_view<U, E>& other) noexcept
      : data_(other.data()),
        extents_(other.dims()),
        batch_(other.batch()),
        pixel_stride_(other.pixel_stride()),
        row_stride_(other.row_stride()),
        batch_stride_(other.batch_stride()) {}

  constexpr T* data() const noexcept { return data_; }
  constexpr int batch() const noexcept { return batch_; }
  constexpr int height() const noexcept { return extents_.height(); }
  constexpr int width() const noexcept { return extents_.width(); }
  constexpr int channels() const noexcept { return extents_.channels(); }
  constexpr shape dims() const noexcept { return extents_.dims(); }
  constexpr std::ptrdiff_t pixel_stride() const noexcept { return pixel_stride_; }
  constexpr std::ptrdiff_t row_stride() const noexcept { return row_stride_; }
  constexpr std::ptrdiff_t batch_stride() const noexcept { return batch_stride_; }
  constexpr bool is_dense() const noexcept { return pixel_stride_ == channels(); }

  constexpr T* pixel(int n, int y, int x) const noexcept {
    return data_ + n * batch_stride_ + y * row_stride_ + x * pixel_stride_;
  }
  constexpr T& operator()(int n, int y, int x, int c) const noexcept { return pixel(n, y, x)[c]; }
  constexpr T& operator()(int y, int x, int c) const noexcept { return pixel(0, y, x)[c]; }

  /// Channels [first, first + count) of every pixel: the view a concat branch writes into.
  constexpr tensor_view<T> channel_slice(int first, int count) const noexcept {
    tensor_view<T> v(data_ + first, shape{height(), width(), count}, batch_, pixel_stride_);
    return v;
  }

  /// Rows [first, first + count) of every image: the part of the tensor one row band reads or writes.
  constexpr tensor_view<T> row_slice(int first, int count) const noexcept {
    tensor_view<T> v(data_ + first * row_stride_, shape{count, width(), channels()}, batch_, pixel_stride_);
    v.batch_stride_ = batch_stride_;
    return v;
  }

  /// Image n alone (batch 1).
  constexpr tensor_view<T> image(int n) const noexcept {
    return tensor_view<T>(data_ + n * batch_stride_, dims(), 1, pixel_stride_);
  }

  /// Whether pixels are equally spaced across the whole batch, so batch * height * width pixels can be walked as one
  /// sequence: rows follow rows by construction, and images follow images unless the view is a row_slice of a batched
  /// view.
  constexpr bool images_follow() const noexcept { return batch_ == 1 || batch_stride_ == row_stride_ * height(); }

  template <class, class>
  friend class tensor_view;

 private:
  T* data_ = nullptr;
  Extents extents_{shape{}};
  int batch_ = 1;
  std::ptrdiff_t pixel_stride_ = 0, row_stride_ = 0, batch_stride_ = 0;
};

template <class T>
tensor_view(T*, shape, int = 1) -> tensor_view<T>;

/// Checks every kernel entry point runs on its views: non-null data, consistent strides.
template <class T, class E>
inline bool check_view(const tensor_view<T, E>& v, const char* what) {
  if (!require(v.data() != nullptr || v.dims().elements() == 0, errc::null_pointer, what)) return false;
  return require(
      v.batch() >= 1 && v.height() >= 0 && v.width() >= 0 && v.channels() >= 0 && v.pixel_stride() >= v.channels(),
      errc::invalid_argument, what);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
