// Activation range calibration: run the float network (tools/float_network.hpp) on sample inputs
// and record, for every tensor, the range its quantization has to cover.
//
// Two methods:
//   min_max     the running minimum and maximum over every sample (TFLite's calibrator);
//   percentile  each tail clipped at a percentile of the values (e.g. 99.99: the largest 0.01%
//               of the positive values and the smallest 0.01% of the negative ones fall outside),
//               from a histogram, so one outlier does not stretch the scale of a whole tensor.
// Ranges always contain 0 (TFLite: zero must be exactly representable); non-finite values are
// ignored.
//
//   auto ranges = mosaiq::tools::calibrate(float_weights, samples);   // samples: vectors of floats
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/tools/float_network.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools {

/// A real interval [min, max] containing 0.
struct float_range {
  float min = 0.0f;
  float max = 0.0f;
  friend constexpr bool operator==(const float_range&, const float_range&) = default;
};

enum class range_method { min_max, percentile };

struct calibration_options {
  range_method method = range_method::min_max;
  /// percentile: the share (in percent) of the positive values kept below max, and of the
  /// negative values kept above min. 100 gives min_max.
  double percentile = 99.99;
  /// percentile: histogram bins per sign. The clip point is exact to one bin: max / bins at worst
  /// (the histogram range is a power of two below twice the largest magnitude).
  int bins = 2048;
};

namespace detail {

/// Counts of magnitudes in [0, limit), `bins` equal bins; the limit doubles (merging bin pairs)
/// whenever a larger magnitude arrives, so one pass over the data suffices.
class magnitude_histogram {
 public:
  explicit magnitude_histogram(std::size_t bins) : counts_(bins, 0) {}

  void add(float magnitude) {
    if (!(magnitude > 0.0f)) return;  // zeros are not in either tail
    if (limit_ == 0.0f) {
      int exponent = 0;
      std::frexp(magnitude, &exponent);  // magnitude < 2^exponent
      limit_ = std::ldexp(1.0f, exponent);
    }
    while (magnitude >= limit_) grow();
    const auto bin = static_cast<std::size_t>(static_cast<double>(magnitude) / limit_ * double(counts_.size()));
    ++counts_[std::min(bin, counts_.size() - 1)];
    ++total_;
  }

  std::uint64_t total() const noexcept { return total_; }

  /// The smallest bin edge with at most `allowed_above` magnitudes above the bin it closes.
  float upper_edge(std::uint64_t allowed_above) const noexcept {
    if (total_ <= allowed_above) return 0.0f;
    std::uint64_t above = 0;
    std::size_t k = counts_.size();
    // Move the edge down while the bin below it can join the tail.
    while (k > 0 && above + counts_[k - 1] <= allowed_above) above += counts_[--k];
    return static_cast<float>(static_cast<double>(limit_) * double(k) / double(counts_.size()));
  }

 private:
  void grow() {
    const std::size_t n = counts_.size();
    for (std::size_t i = 0; i < n / 2; ++i) counts_[i] = counts_[2 * i] + counts_[2 * i + 1];
    if (n % 2 == 1) {
      counts_[n / 2] = counts_[n - 1];
      std::fill(counts_.begin() + std::ptrdiff_t(n / 2 + 1), counts_.end(), 0);
    } else {
      std::fill(counts_.begin() + std::ptrdiff_t(n / 2), counts_.end(), 0);
    }
    limit_ *= 2.0f;
  }

  std::vector<std::uint64_t> counts_;
  float limit_ = 0.0f;
  std::uint64_t total_ = 0;
};

}  // namespace detail

/// The values one tensor took over every observed sample.
class range_observer {
 public:
  explicit range_observer(const calibration_options& options = {})
      : options_(options),
        positive_(std::size_t(std::max(options.bins, 1))),
        negative_(std::size_t(std::max(options.bins, 1))) {}

  void observe(float v) {
    if (!std::isfinite(v)) return;
    ++count_;
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
    if (options_.method == range_method::percentile) {
      if (v > 0.0f)
        positive_.add(v);
      else if (v < 0.0f)
        negative_.add(-v);
    }
  }
  void observe(std::span<const float> values) {
    for (const float v : values) observe(v);
  }
  void observe(tensor_view<const float> t) {
    for (int n = 0; n < t.batch(); ++n)
      for (int y = 0; y < t.height(); ++y)
        for (int x = 0; x < t.width(); ++x)
          for (int c = 0; c < t.channels(); ++c) observe(t(n, y, x, c));
  }

  /// Finite values seen so far.
  std::uint64_t count() const noexcept { return count_; }

  /// The calibrated range, always containing 0 ([0, 0] before any value).
  float_range range() const noexcept {
    float_range r{std::min(min_, 0.0f), std::max(max_, 0.0f)};
    if (count_ == 0) return {};
    if (options_.method == range_method::percentile && options_.percentile < 100.0) {
      const double share = std::clamp(1.0 - options_.percentile / 100.0, 0.0, 1.0);
      // The tail may hold this many values of all those observed (floor: never clip more; the
      // tolerance keeps e.g. 10000 * (1 - 0.9999) = 0.99999999999989 from flooring to 0).
      const auto allowed = static_cast<std::uint64_t>(std::floor(share * static_cast<double>(count_) + 1e-6));
      r.max = std::min(r.max, positive_.upper_edge(allowed));
      r.min = std::max(r.min, -negative_.upper_edge(allowed));
    }
    return r;
  }

 private:
  calibration_options options_;
  detail::magnitude_histogram positive_, negative_;
  std::uint64_t count_ = 0;
  float min_ = std::numeric_limits<float>::infinity();
  float max_ = -std::numeric_limits<float>::infinity();
};

/// Ranges of every tensor of Net (index = tensor id: 0 the input, tensor_count - 1 the output)
/// over the samples it is shown.
template <class Net>
class calibrator {
 public:
  explicit calibrator(const calibration_options& options = {}) {
    observers_.reserve(Net::tensor_count);
    for (std::size_t t = 0; t < Net::tensor_count; ++t) observers_.emplace_back(options);
  }

  /// Records every tensor of the runner's last run.
  void observe(const float_runner<Net>& runner) {
    for (std::size_t t = 0; t < Net::tensor_count; ++t) observers_[t].observe(runner.values(t));
    ++samples_;
  }

  /// Runs the float network on one input and records it.
  bool observe(const float_weights<Net>& w, tensor_view<const float> input) {
    if (!runner_.run(w, input)) return false;
    observe(runner_);
    return true;
  }
  bool observe(const float_weights<Net>& w, std::span<const float> input) {
    if (!runner_.run(w, input)) return false;
    observe(runner_);
    return true;
  }

  std::size_t samples() const noexcept { return samples_; }
  const range_observer& observer(std::size_t tensor) const noexcept { return observers_[tensor]; }

  std::array<float_range, Net::tensor_count> ranges() const {
    std::array<float_range, Net::tensor_count> r{};
    for (std::size_t t = 0; t < Net::tensor_count; ++t) r[t] = observers_[t].range();
    return r;
  }

 private:
  std::vector<range_observer> observers_;
  float_runner<Net> runner_;
  std::size_t samples_ = 0;
};

/// Calibrates Net on `samples`: a range (e.g. std::vector<std::vector<float>>) of dense NHWC inputs
/// of Net::input_shape.elements() floats each. Samples of the wrong size are reported and skipped.
template <class Net, class Samples>
std::array<float_range, Net::tensor_count> calibrate(const float_weights<Net>& w, const Samples& samples,
                                                     const calibration_options& options = {}) {
  calibrator<Net> c(options);
  for (const auto& sample : samples) c.observe(w, std::span<const float>(sample));
  return c.ranges();
}

/// Logistic's quantized output has the fixed scale 1/256, so inputs beyond +-ln(511) (where the
/// sigmoid is within half a step of 0 or 1) all give its end values. A tensor that only logistic
/// layers read therefore needs no wider range: clipping it there keeps the outputs and makes the
/// steps near 0, where a gate or a mask decides, as fine as they can be (a segmentation head's logits
/// span hundreds, which would leave the mask a few distinct probabilities).
inline constexpr float logistic_saturation = 6.25f;
/// Hard swish, x * relu6(x + 3) / 6, is 0 for every x at or below -3: a pre-activation tensor only
/// hard swish reads needs no range below it (a stem convolution's outputs reach -100 and more).
inline constexpr float hard_swish_floor = -3.0f;

/// The inputs a layer of kind `kind` tells apart: beyond them its output is constant. Unbounded for
/// every kind but logistic and hard swish.
constexpr float_range distinguished_inputs(std::string_view kind) noexcept {
  constexpr float unbounded = std::numeric_limits<float>::infinity();
  if (kind == "logistic") return {-logistic_saturation, logistic_saturation};
  if (kind == "hard_swish") return {hard_swish_floor, unbounded};
  return {-unbounded, unbounded};
}

/// The values of tensor t that its readers tell apart: the hull of distinguished_inputs over every
/// layer that reads t; unbounded for the input, the output and a named output, and for a tensor
/// nothing reads.
template <class Net>
constexpr float_range distinguished_values(int t) noexcept {
  constexpr float unbounded = std::numeric_limits<float>::infinity();
  constexpr float_range everything{-unbounded, unbounded};
  if (t <= 0 || std::size_t(t) + 1 >= Net::tensor_count) return everything;
  float_range hull{unbounded, -unbounded};
  bool read = false, named = false;
  mosaiq::detail::for_index_chunks<Net::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          using Layer = typename Net::template layer<I>;
          constexpr layer_node node = Net::topology.layers[I];
          if constexpr (Layer::role == layer_role::op) {
            for (int k = 0; k < node.input_count; ++k)
              if (node.inputs[std::size_t(k)] == t) {
                read = true;
                const float_range window = distinguished_inputs(Layer::kind);
                hull = {std::min(hull.min, window.min), std::max(hull.max, window.max)};
              }
          } else if constexpr (Layer::kind == std::string_view("output")) {
            named = named || node.output == t;
          }
        }(),
        ...);
  });
  return read && !named ? hull : everything;
}

/// Clips every tensor's range to the values its readers tell apart (distinguished_values): the
/// logits and gate inputs only logistic reads to +-logistic_saturation, the pre-activations only hard
/// swish reads to hard_swish_floor below. The quantized outputs of those readers stay what they were;
/// the steps get finer.
template <class Net>
void clip_to_readers(std::array<float_range, Net::tensor_count>& ranges) noexcept {
  mosaiq::detail::for_index_chunks<Net::tensor_count>([&]<std::size_t... T>(std::index_sequence<T...>) {
    (
        [&] {
          constexpr float_range window = distinguished_values<Net>(int(T));
          ranges[T].min = std::max(ranges[T].min, window.min);
          ranges[T].max = std::min(ranges[T].max, window.max);
          // Every value beyond the window (e.g. a map all below -3): one value stands for them.
          ranges[T].max = std::max(ranges[T].max, ranges[T].min);
        }(),
        ...);
  });
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools
