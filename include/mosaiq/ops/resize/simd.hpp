// Resize's vector code on every SIMD target (AVX2, AVX-512, NEON): the 2x kernels over the target's byte widths
// (ops/resize/x86.hpp, neon.hpp name them and their operations) and the float32 any-ratio kernel over its float
// vectors; see ops/resize.hpp's file comment. Its entry points are declared on every target and defined where
// MOSAIQ_TARGET_SIMD; scalar builds run the scalar twin (ops/resize/rows.hpp) and the reference (ops/resize.hpp asks
// has_vectors and any_ratio::has_kernel).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/resize_mode.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/resize/neon.hpp"
#include "mosaiq/ops/resize/rows.hpp"
#include "mosaiq/ops/resize/widths.hpp"
#include "mosaiq/ops/resize/x86.hpp"
#include "mosaiq/reference/resize.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace detail::upsample {

/// Whether this target runs the 2x kernels on byte vectors (AVX2, AVX-512, NEON); scalar builds run scalar_pixels.
inline constexpr bool has_vectors = MOSAIQ_TARGET_SIMD;

// What the front end (run_row, nearest_integer) names in the branches scalar builds discard: declared on every target,
// defined below where MOSAIQ_TARGET_SIMD. native_widths is the ISA file's list of byte widths, none on scalar builds.
template <resize_mode Mode, byte Flip, class... Ops, class Step>
[[gnu::always_inline]] inline int across_widths(byte_widths<Ops...>, int first, Step step) noexcept;
template <resize_mode Mode, byte Flip, int G>
inline void dense_row_with_edges(const row_pass& r) noexcept;
/// Channels [c, channels) that the widths left (fewer than the narrowest width), where the pixel has at least that
/// width: one block of the narrowest width ending at the last channel. It overlaps channels already made and writes
/// them again with the same values. Returns the first channel left for the scalar twin.
template <resize_mode Mode, byte Flip>
[[gnu::noinline]] int overlapped_tail(const row_pass& r, int c) noexcept;
/// `replication<T>::kernels`: the byte-vector kernels nearest 2x replicates rows of T elements with.
template <quantized_element T>
struct replication;

}  // namespace detail::upsample

/// Bilinear at any ratio and in every mode, bit-exact with reference::resize_bilinear: the same float32 operations in
/// the same order (see the file comment). Per call, per chunk of output columns: the x taps; per output row: the y tap
/// and the two input rows as floats already multiplied by their y weights (the reference's first products).
namespace detail::any_ratio {

inline constexpr bool has_kernel = upsample::has_vectors;

/// `kernel<T>::run(in, out, mode, band, frame)`: output rows `band` of the images `frame` places the views in.
template <quantized_element T>
class kernel;

}  // namespace detail::any_ratio

#if MOSAIQ_TARGET_SIMD

namespace detail::upsample {

/// The 2x kernels on one byte-vector width.
template <class Ops, resize_mode Mode, byte Flip>
struct vector_kernels {
  using reg = typename Ops::reg;
  struct wide {
    typename Ops::wide_reg lo, hi;
  };
  static constexpr int bytes = Ops::bytes;

  static reg load(const byte* p) noexcept {
    if constexpr (Flip != 0)
      return Ops::flip(Ops::load(p), Flip);
    else
      return Ops::load(p);
  }
  static reg finish(reg v) noexcept {
    if constexpr (Flip != 0)
      return Ops::flip(v, Flip);
    else
      return v;
  }
  static wide widen(reg v) noexcept { return {Ops::widen_lo(v), Ops::widen_hi(v)}; }
  static wide add(wide a, wide b) noexcept { return {Ops::add(a.lo, b.lo), Ops::add(a.hi, b.hi)}; }
  static wide triple(wide a) noexcept { return add(add(a, a), a); }
  template <int Shift>
  static reg narrow(wide a) noexcept {
    return finish(Ops::template narrow_rounded<Shift>(a.lo, a.hi));
  }

  /// N * near + F * far, 16-bit; half-pixel's vertical pass is <3, 1>.
  template <int N = 3, int F = 1>
  static wide vertical(const byte* near, const byte* far) noexcept {
    wide v;
    Ops::template weighted_pair<N, F>(load(near), load(far), v.lo, v.hi);
    return v;
  }
  static void half_pixel(const wide& left, const wide& center, const wide& right, reg& even, reg& odd) noexcept {
    const wide center3 = triple(center);
    even = narrow<4>(add(center3, left));
    odd = narrow<4>(add(center3, right));
  }
  /// Legacy: `right`/`far_right` are the clamped right neighbours; same_row marks even output rows (far == near).
  static void legacy(const byte* near, const byte* near_right, const byte* far, const byte* far_right, bool same_row,
                     reg& even, reg& odd) noexcept {
    const reg a = load(near), b = load(near_right);
    if (same_row) {
      even = finish(a);
      odd = finish(Ops::average(a, b));
      return;
    }
    const reg c = load(far), d = load(far_right);
    even = finish(Ops::average(a, c));
    odd = narrow<2>(add(add(widen(a), widen(b)), add(widen(c), widen(d))));
  }

  /// Channel blocks of `bytes` starting at channel c, every pixel of the row; returns the first channel not done.
  static int pixel_blocks(const row_pass& r, int c) noexcept {
    const std::ptrdiff_t ip = r.in_pixel, op = r.out_pixel;
    const bool same_row = r.far == r.near;
    for (; c + bytes <= r.channels; c += bytes) {
      const byte* near = r.near + c;
      const byte* far = r.far + c;
      byte* out = r.out + c;
      reg even, odd;
      if constexpr (Mode == resize_mode::half_pixel) {
        wide left = vertical(near, far), center = left;
        for (int x = 0; x < r.width; ++x) {
          const wide right = x + 1 < r.width ? vertical(near + (x + 1) * ip, far + (x + 1) * ip) : center;
          half_pixel(left, center, right, even, odd);
          Ops::store(out + 2 * x * op, even);
          Ops::store(out + (2 * x + 1) * op, odd);
          left = center;
          center = right;
        }
      } else {
        for (int x = 0; x < r.width; ++x) {
          const std::ptrdiff_t at = x * ip, right = std::min(x + 1, r.width - 1) * ip;
          legacy(near + at, near + right, far + at, far + right, same_row, even, odd);
          Ops::store(out + 2 * x * op, even);
          Ops::store(out + (2 * x + 1) * op, odd);
        }
      }
    }
    return c;
  }

  /// Dense row with G channels per pixel (1, 2, 4, 8, 16): whole vectors of bytes from pixel x_begin while every
  /// neighbour load stays in the row; returns the first pixel not done.
  template <int G>
  static int dense_row(const row_pass& r, int x_begin) noexcept {
    const std::ptrdiff_t row_bytes = std::ptrdiff_t{r.width} * G;
    const bool same_row = r.far == r.near;
    const auto step = [&](std::ptrdiff_t j) noexcept {
      reg even, odd;
      if constexpr (Mode == resize_mode::half_pixel) {
        // 3 * vertical(centre) + vertical(neighbour) with the centre's weights folded into its multiply-add:
        // 9 near + 3 far, so the centre needs no tripling (the same sums as half_pixel()).
        const wide center = vertical<9, 3>(r.near + j, r.far + j);
        even = narrow<4>(add(center, vertical(r.near + j - G, r.far + j - G)));
        odd = narrow<4>(add(center, vertical(r.near + j + G, r.far + j + G)));
      } else {
        legacy(r.near + j, r.near + j + G, r.far + j, r.far + j + G, same_row, even, odd);
      }
      Ops::template store_interleaved<G>(r.out + 2 * j, even, odd);
    };
    std::ptrdiff_t j = std::ptrdiff_t{x_begin} * G;
    if constexpr (Mode == resize_mode::half_pixel && G == 16 && bytes >= 32) {
      // 16-byte pixels: one vertical pass a vector. `right` covers the pixels one after the vector's; the centres and
      // left neighbours are the same lanes shifted in from the previous `right` (whole 128-bit lanes, so the widened
      // halves shift alike).
      if (j + bytes + G <= row_bytes) {
        step(j);
        wide previous = vertical(r.near + j + G, r.far + j + G);
        for (j += bytes; j + bytes + G <= row_bytes; j += bytes) {
          const wide right = vertical(r.near + j + G, r.far + j + G);
          const wide center{Ops::pixels_from_1(previous.lo, right.lo), Ops::pixels_from_1(previous.hi, right.hi)};
          const wide left{Ops::pixels_from_2(previous.lo, right.lo), Ops::pixels_from_2(previous.hi, right.hi)};
          reg even, odd;
          half_pixel(left, center, right, even, odd);
          Ops::template store_interleaved<G>(r.out + 2 * j, even, odd);
          previous = right;
        }
      }
    }
    for (; j + bytes + G <= row_bytes; j += bytes) step(j);
    // The pixels left before the last one: one more vector ending there, overlapping pixels already written (it
    // rewrites the same values), so only the last pixel is left to the scalar twin.
    const std::ptrdiff_t last_vector = row_bytes - G - bytes;
    if (j < row_bytes - G && last_vector >= std::ptrdiff_t{x_begin} * G) {
      step(last_vector);
      j = row_bytes - G;
    }
    return static_cast<int>(j / G);
  }

  /// Nearest 2x of a dense row of G-byte pixels: each pixel twice, into `target` and, when `below` is not null, into
  /// `below` too (the next output row, which then need not copy `target` back out of memory); returns the first pixel
  /// not done (0 or width).
  template <int G>
  static int replicate_row(const byte* source, byte* target, byte* below, int width) noexcept {
    const std::ptrdiff_t row_bytes = std::ptrdiff_t{width} * G;
    if (row_bytes < bytes) return 0;
    const auto rows = [&]<bool Twice>(std::bool_constant<Twice>) noexcept {
      const auto step = [&](std::ptrdiff_t at) noexcept {
        const reg v = Ops::load(source + at);
        Ops::template store_interleaved<G>(target + 2 * at, v, v);
        if constexpr (Twice) Ops::template store_interleaved<G>(below + 2 * at, v, v);
      };
      std::ptrdiff_t j = 0;
      for (; j + bytes <= row_bytes; j += bytes) step(j);
      if (j < row_bytes) step(row_bytes - bytes);  // overlapping last vector, as in dense_row
    };
    if (below != nullptr)
      rows(std::true_type{});
    else
      rows(std::false_type{});
    return width;
  }
};

template <resize_mode M, byte F>
using widest = vector_kernels<typename native_widths::widest, M, F>;

/// `step(kernels, first)` on each byte width of the target, widest first, each from where the previous stopped (rows
/// too short for the widest vector, e.g. 64 bytes on AVX-512, continue with narrower ones); returns where the last
/// stopped.
template <resize_mode Mode, byte Flip, class... Ops, class Step>
[[gnu::always_inline]] inline int across_widths(byte_widths<Ops...>, int first, Step step) noexcept {
  ((first = step(vector_kernels<Ops, Mode, Flip>{}, first)), ...);
  return first;
}

template <resize_mode Mode, byte Flip>
[[gnu::noinline]] int overlapped_tail(const row_pass& r, int c) noexcept {
  using narrowest = vector_kernels<typename native_widths::narrowest, Mode, Flip>;
  if (c >= r.channels || r.channels < narrowest::bytes) return c;
  return narrowest::pixel_blocks(r, r.channels - narrowest::bytes);
}

template <resize_mode Mode, byte Flip, int G>
inline void dense_row_with_edges(const row_pass& r) noexcept {
  // Half-pixel reads the left neighbour, so pixel 0 (clamped) goes through the scalar twin.
  const int head = Mode == resize_mode::half_pixel ? std::min(1, r.width) : 0;
  scalar_pixels<Mode, Flip>(r, 0, head, 0, G);
  const int done = across_widths<Mode, Flip>(native_widths{}, head, [&r]<class Kernels>(Kernels, int first) {
    return Kernels::template dense_row<G>(r, first);
  });
  scalar_pixels<Mode, Flip>(r, done, r.width, 0, G);
}

/// Nearest 2x copies bytes: the widest kernels, no flip, for every element type.
template <quantized_element T>
struct replication {
  using kernels = widest<resize_mode::legacy, 0>;
};

}  // namespace detail::upsample

namespace detail::any_ratio {

inline constexpr int row_floats = 1024;   // floats per converted input row segment (two of them: top, bottom)
inline constexpr int max_columns = 128;   // output columns per chunk (channel path)
inline constexpr int max_elements = 512;  // flattened output elements per chunk (small-channel path)
inline constexpr int flat_below = 8;      // channel counts below this go along the flattened row x*C + c
inline constexpr int max_channel_block = row_floats / 2;  // an output pixel needs two input columns

/// One output column: offsets of its two input columns in the float rows (channel 0), and their weights.
struct column {
  int lower, upper;
  float lower_weight, upper_weight;
};

/// The small-channel path's tables for one chunk of columns, element e = x * C + c of the flattened output row: the
/// offsets of its two inputs relative to its vector's base, and its weights. Per vector: the base, and whether all its
/// inputs lie in the `Lanes` floats from the base (upsampling: then two loads and permutes replace four gathers).
template <int Lanes>
struct flat_table {
  alignas(64) std::int32_t lower[max_elements], upper[max_elements];
  alignas(64) float lower_weight[max_elements], upper_weight[max_elements];
  int base[max_elements / Lanes];
  bool window[max_elements / Lanes];
  int elements = 0;

  /// Output column x of the chunk (elements x * channels + c) reads `col`.
  void set(int x, const column& col, int channels) noexcept {
    for (int c = 0; c < channels; ++c) {
      const int e = x * channels + c;
      lower[e] = col.lower + c, upper[e] = col.upper + c;
      lower_weight[e] = col.lower_weight, upper_weight[e] = col.upper_weight;
    }
  }
  /// After set() for `count` columns: offsets relative to each vector's base; lanes past the end read the base with
  /// weight 0.
  void finish(int count, int channels) noexcept {
    elements = count * channels;
    for (int v = 0; v * Lanes < elements; ++v) {
      const int begin = v * Lanes, end = std::min(begin + Lanes, elements);
      const int low = *std::min_element(lower + begin, lower + end);
      const int high = *std::max_element(upper + begin, upper + end);
      base[v] = low;
      window[v] = high - low < Lanes;
      for (int e = begin; e < begin + Lanes; ++e) {
        const bool inside = e < end;
        lower[e] = inside ? lower[e] - low : 0;
        upper[e] = inside ? upper[e] - low : 0;
        lower_weight[e] = inside ? lower_weight[e] : 0.0f;
        upper_weight[e] = inside ? upper_weight[e] : 0.0f;
      }
    }
  }
};

template <quantized_element T>
class kernel {
  using F = float_ops;
  using vf = typename F::vf;
  static constexpr int lanes = F::lanes;

  /// The four products and their sum, in the reference's order: ((p00 + p10) + p01) + p11.
  static vf blend(vf top_lower, vf bottom_lower, vf top_upper, vf bottom_upper, vf lower_weight,
                  vf upper_weight) noexcept {
    const vf p00 = F::product(top_lower, lower_weight);
    const vf p10 = F::product(bottom_lower, lower_weight);
    const vf p01 = F::product(top_upper, upper_weight);
    const vf p11 = F::product(bottom_upper, upper_weight);
    return F::add(F::add(F::add(p00, p10), p01), p11);
  }

 public:
  static void run(const tensor_view<const T>& in, const tensor_view<T>& out, resize_mode mode, row_band band,
                  upsample::row_frame frame) noexcept {
    // Stack, not a workspace: about 20 KiB whatever the shape (the rows are processed in chunks of columns), so the
    // op keeps the workspace-free signature of the 2x kernels and of the network executor.
    // The rows have a vector of slack: a window load from the last base may run past the span (its extra lanes are
    // never selected).
    alignas(64) float rows[2][row_floats + lanes];
    alignas(64) column columns[max_columns];
    flat_table<lanes> table;
    alignas(64) T staged[max_elements + 64];

    const int channels = in.channels();
    const float scale_y = reference::detail::float_axis_scale(frame.in_height, frame.out_height, mode);
    const float scale_x = reference::detail::float_axis_scale(in.width(), out.width(), mode);
    const bool flat = channels < flat_below;
    const std::ptrdiff_t in_pixel = in.pixel_stride(), out_pixel = out.pixel_stride();

    for (int c0 = 0; c0 < channels; c0 += max_channel_block) {
      const int block = std::min(channels - c0, max_channel_block);
      const bool contiguous_in = in_pixel == block;  // the columns' channels [c0, c0 + block) are one run
      const int max_span = row_floats / block;       // input columns a chunk may read
      const int chunk_limit = flat ? max_elements / block : max_columns;
      for (int x_begin = 0; x_begin < out.width();) {
        // The chunk: output columns [x_begin, x_end) reading input columns [first, last].
        const reference::detail::float_tap head = reference::detail::float_axis_tap(x_begin, scale_x, mode, in.width());
        const int first = head.lower;
        int last = first, count = 0;
        for (int x = x_begin; x < out.width() && count < chunk_limit; ++x) {
          const reference::detail::float_tap t =
              x == x_begin ? head : reference::detail::float_axis_tap(x, scale_x, mode, in.width());
          if (t.upper - first + 1 > max_span) break;
          last = std::max(last, t.upper);
          const column col{(t.lower - first) * block, (t.upper - first) * block, t.lower_weight, t.upper_weight};
          if (flat)
            table.set(count++, col, block);
          else
            columns[count++] = col;
        }
        const int span = last - first + 1;
        if (flat) table.finish(count, block);
        for (int n = 0; n < out.batch(); ++n) {
          for (int y = band.first; y < band.last; ++y) {
            const reference::detail::float_tap ty =
                reference::detail::float_axis_tap(y, scale_y, mode, frame.in_height);
            const int source_rows[2] = {ty.lower, ty.upper};
            const float row_weights[2] = {ty.lower_weight, ty.upper_weight};
            for (int r = 0; r < 2; ++r)
              convert_row(in.pixel(n, source_rows[r] - frame.in_first, first) + c0, span, block, contiguous_in,
                          in_pixel, row_weights[r], rows[r]);
            T* target = out.pixel(n, y - frame.out_first, x_begin) + c0;
            if (flat)
              flat_row(rows[0], rows[1], table, block, out_pixel, staged, target);
            else
              channel_row(rows[0], rows[1], columns, count, block, out_pixel, target);
          }
        }
        x_begin += count;
      }
    }
  }

  /// Channels [c0, c0 + block) of `span` input columns from `source` (pixels in_pixel apart; one run when
  /// contiguous_in) as floats times the row's weight, column x at to + x * block.
  [[gnu::always_inline]] static void convert_row(const T* source, int span, int block, bool contiguous_in,
                                                 std::ptrdiff_t in_pixel, float weight, float* to) noexcept {
    if (contiguous_in) {
      F::template convert<T>(source, span * block, weight, to);
    } else {
      for (int x = 0; x < span; ++x) F::template convert<T>(source + x * in_pixel, block, weight, to + x * block);
    }
  }

  /// Few channels: vectors along the flattened output row, inputs gathered through the chunk's index tables.
  static void flat_row(const float* top, const float* bottom, const flat_table<lanes>& table, int block,
                       std::ptrdiff_t out_pixel, T* staged, T* target) noexcept {
    const bool dense = out_pixel == block;
    const int elements = table.elements;
    T* results = dense ? target : staged;
    const auto sum = [&](int v) noexcept {
      const int e = v * lanes;
      const float *t = top + table.base[v], *b = bottom + table.base[v];
      const std::int32_t *lower = table.lower + e, *upper = table.upper + e;
      vf tl, bl, tu, bu;
      if (table.window[v]) {
        const vf top_window = F::load(t), bottom_window = F::load(b);
        tl = F::permute(top_window, lower), bl = F::permute(bottom_window, lower);
        tu = F::permute(top_window, upper), bu = F::permute(bottom_window, upper);
      } else {
        tl = F::gather(t, lower), bl = F::gather(b, lower), tu = F::gather(t, upper), bu = F::gather(b, upper);
      }
      return blend(tl, bl, tu, bu, F::load(table.lower_weight + e), F::load(table.upper_weight + e));
    };
    int v = 0;
    for (; (v + 4) * lanes <= elements; v += 4)
      F::template store4<T>(results + v * lanes, sum(v), sum(v + 1), sum(v + 2), sum(v + 3));
    for (; v * lanes < elements; ++v) {
      const int e = v * lanes;
      if (e + lanes <= elements || !dense)
        F::template store<T>(results + e, sum(v));  // staged has room for a whole last vector
      else
        F::template store<T>(results + e, sum(v), elements - e);
    }
    if (!dense)
      for (int x = 0; x < elements / block; ++x)
        std::memcpy(target + x * out_pixel, staged + x * block, static_cast<std::size_t>(block) * sizeof(T));
  }

  /// Many channels: per output pixel, vectors along the channels with one partial tail.
  static void channel_row(const float* top, const float* bottom, const column* columns, int count, int block,
                          std::ptrdiff_t out_pixel, T* target) noexcept {
    for (int x = 0; x < count; ++x) {
      const column& col = columns[x];
      const vf w0 = F::broadcast(col.lower_weight), w1 = F::broadcast(col.upper_weight);
      const float *top_lower = top + col.lower, *bottom_lower = bottom + col.lower;
      const float *top_upper = top + col.upper, *bottom_upper = bottom + col.upper;
      T* result = target + x * out_pixel;
      int c = 0;
      for (; c + lanes <= block; c += lanes)
        F::template store<T>(result + c, blend(F::load(top_lower + c), F::load(bottom_lower + c),
                                               F::load(top_upper + c), F::load(bottom_upper + c), w0, w1));
      if (c < block) {
        const int n = block - c;
        F::template store<T>(result + c,
                             blend(F::load(top_lower + c, n), F::load(bottom_lower + c, n), F::load(top_upper + c, n),
                                   F::load(bottom_upper + c, n), w0, w1),
                             n);
      }
    }
  }
};

}  // namespace detail::any_ratio

#else

namespace detail::upsample {
using native_widths = byte_widths<>;  // no byte vectors: every row runs scalar_pixels
}  // namespace detail::upsample

#endif  // MOSAIQ_TARGET_SIMD

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
