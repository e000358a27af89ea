// libFuzzer target: raw bytes become float / quantized boxes, scores, priors and thresholds (NaN, inf, inverted and
// zero-area boxes included) for nms(), soft_nms(), detection_output and both TFLite modes. Checks that nothing reads
// or writes out of bounds (ASan/UBSan), that outputs respect their caps and index ranges, and that nms() equals a
// plain quadratic greedy loop over the same rules.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "mosaiq/ops/nms.hpp"

namespace {

/// Reads the fuzzer's bytes front to back; zeros once exhausted.
class byte_reader {
 public:
  byte_reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t byte() { return used_ < size_ ? data_[used_++] : 0; }
  float real() {
    std::array<std::uint8_t, 4> bytes{byte(), byte(), byte(), byte()};
    float value;
    std::memcpy(&value, bytes.data(), sizeof value);
    return value;
  }
  /// A float that is usually a plain coordinate or score, sometimes a raw bit pattern (NaN, inf, huge, subnormal).
  float mixed() {
    const std::uint8_t kind = byte();
    if (kind < 200) return static_cast<float>(byte()) / 64.0f - 1.0f;
    return real();
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t used_ = 0;
};

void expect(bool condition) {
  if (!condition) __builtin_trap();
}

void ignore_errors(mosaiq::errc, const char*, mosaiq::source_location) {}

/// The rules of nms(), as a direct quadratic loop.
std::vector<std::uint32_t> plain_nms(const std::vector<mosaiq::corner_box>& boxes, const std::vector<float>& scores,
                                     const mosaiq::nms_options& options) {
  std::vector<mosaiq::detail::scored_index> order;
  for (std::uint32_t i = 0; i < boxes.size(); ++i)
    if (scores[i] > options.score_threshold) order.push_back({scores[i], i});
  std::sort(order.begin(), order.end(), mosaiq::detail::ranks_before);
  if (order.size() > options.top_k) order.resize(options.top_k);
  std::vector<std::uint32_t> kept;
  float threshold = options.iou_threshold;
  for (const auto& candidate : order) {
    bool keep = true;
    for (const std::uint32_t k : kept) {
      const float overlap = mosaiq::detail::caffe_iou(boxes[candidate.index], boxes[k]);
      keep = keep && overlap <= threshold;
    }
    if (!keep) continue;
    kept.push_back(candidate.index);
    if (options.eta < 1.0f && threshold > 0.5f) threshold *= options.eta;
  }
  return kept;
}

constexpr std::size_t max_boxes = 48;
constexpr mosaiq::detection_output_config small_ssd{
    .priors = 16, .classes = 4, .top_k = 5, .keep_top_k = 7, .code = mosaiq::box_code::center_size};
constexpr mosaiq::detection_output_config small_open{
    .priors = 16, .classes = 3, .background_label = -1, .code = mosaiq::box_code::corner_size, .share_location = false};
constexpr mosaiq::tflite_postprocess_config small_fast{
    .anchors = 16, .classes = 3, .max_detections = 5, .max_classes_per_detection = 2};
constexpr mosaiq::tflite_postprocess_config small_regular{.anchors = 16,
                                                          .classes = 3,
                                                          .background_column = false,
                                                          .max_detections = 6,
                                                          .detections_per_class = 3,
                                                          .use_regular_nms = true};

void fuzz_nms(byte_reader& in) {
  const std::size_t n = in.byte() % (max_boxes + 1);
  std::vector<mosaiq::corner_box> boxes(n);
  std::vector<float> scores(n);
  for (std::size_t i = 0; i < n; ++i) {
    boxes[i] = {in.mixed(), in.mixed(), in.mixed(), in.mixed()};
    scores[i] = in.mixed();
  }
  const mosaiq::nms_options options{.score_threshold = in.mixed(),
                                    .iou_threshold = static_cast<float>(in.byte()) / 200.0f,
                                    .eta = 0.5f + static_cast<float>(in.byte() % 128) / 254.0f,
                                    .top_k = in.byte() % 2 ? mosaiq::no_limit : in.byte() % 20};
  static mosaiq::nms_workspace<max_boxes> scratch;
  std::array<std::uint32_t, max_boxes> kept{};
  const std::size_t count = mosaiq::nms(boxes, scores, options, std::span(kept).first(n), scratch.span());
  const auto expected = plain_nms(boxes, scores, options);
  expect(count == expected.size() && std::equal(expected.begin(), expected.end(), kept.begin()));

  std::array<float, max_boxes> kept_scores{};
  const mosaiq::soft_nms_options soft{
      .method = in.byte() % 2 ? mosaiq::soft_nms_method::linear : mosaiq::soft_nms_method::gaussian,
      .sigma = 0.1f + static_cast<float>(in.byte()) / 64.0f,
      .iou_threshold = static_cast<float>(in.byte()) / 255.0f,
      .score_threshold = static_cast<float>(in.byte()) / 255.0f,
      .top_k = in.byte() % 2 ? mosaiq::no_limit : in.byte() % 20};
  const std::size_t soft_count =
      mosaiq::soft_nms(boxes, scores, soft, std::span(kept).first(n), kept_scores, scratch.span());
  expect(soft_count <= std::min(n, soft.top_k));
  for (std::size_t i = 0; i < soft_count; ++i) {
    expect(kept[i] < n && kept_scores[i] >= soft.score_threshold);
    for (std::size_t j = 0; j < i; ++j) expect(kept[j] != kept[i]);
  }
}

template <mosaiq::detection_output_config Cfg, class L, class S>
void fuzz_detection_output(byte_reader& in, const std::vector<L>& loc, const std::vector<S>& conf,
                           mosaiq::quant_params loc_quant, mosaiq::quant_params conf_quant,
                           mosaiq::score_activation activation) {
  std::array<mosaiq::prior_box, Cfg.priors> priors{};
  for (auto& p : priors) {
    const float x = in.mixed(), y = in.mixed();
    p = {{x, y, x + in.mixed(), y + in.mixed()}, {in.mixed(), in.mixed(), in.mixed(), in.mixed()}};
  }
  static typename mosaiq::detection_output<Cfg>::workspace scratch;
  std::array<mosaiq::detection, mosaiq::detection_output<Cfg>::max_detections> out{};
  const mosaiq::detection_output<Cfg> layer({.confidence = in.mixed(),
                                             .nms = static_cast<float>(in.byte()) / 200.0f,
                                             .eta = 0.5f + static_cast<float>(in.byte() % 128) / 254.0f});
  const std::size_t count =
      layer.run(mosaiq::input_tensor<L>{loc, loc_quant}, mosaiq::score_tensor<S>{conf, conf_quant, activation}, priors,
                out, scratch.bytes);
  expect(count <= out.size());
  for (std::size_t i = 0; i < count; ++i) {
    expect(out[i].label >= 0 && out[i].label < static_cast<int>(Cfg.classes) && out[i].label != Cfg.background_label);
    expect(i == 0 || out[i - 1].label <= out[i].label);
    expect(!std::isnan(out[i].score));
  }
}

template <mosaiq::tflite_postprocess_config Cfg, class S>
void fuzz_tflite(byte_reader& in, const std::vector<float>& encodings, const std::vector<S>& scores,
                 mosaiq::quant_params quant) {
  std::array<mosaiq::center_box, Cfg.anchors> anchors{};
  for (auto& a : anchors) a = {in.mixed(), in.mixed(), in.mixed(), in.mixed()};
  using op = mosaiq::tflite_detection_postprocess<Cfg>;
  static typename op::workspace scratch;
  std::array<std::array<float, 4>, op::output_rows> boxes{};
  std::array<float, op::output_rows> classes{}, out_scores{};
  const op postprocess({.score_threshold = in.mixed(), .iou_threshold = static_cast<float>(1 + in.byte()) / 256.0f});
  const std::size_t count =
      postprocess.run(mosaiq::input_tensor<float>{encodings}, mosaiq::score_tensor<S>{scores, quant}, anchors,
                      {boxes, classes, out_scores}, scratch.bytes);
  expect(count <= Cfg.max_detections);
  for (std::size_t i = 0; i < op::output_rows; ++i)
    expect(classes[i] >= 0 && classes[i] < static_cast<float>(Cfg.classes));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mosaiq::set_error_handler(&ignore_errors);
  byte_reader in(data, size);
  fuzz_nms(in);

  std::vector<float> loc(small_open.priors * small_open.loc_classes() * 4),
      conf(small_open.priors * small_open.classes);
  for (auto& v : loc) v = in.mixed();
  for (auto& v : conf) v = in.mixed();
  fuzz_detection_output<small_open>(in, loc, conf, {}, {}, mosaiq::score_activation::none);
  std::vector<float> ssd_loc(loc.begin(), loc.begin() + small_ssd.priors * 4);
  std::vector<float> ssd_conf(small_ssd.priors * small_ssd.classes);
  for (auto& v : ssd_conf) v = in.mixed();
  fuzz_detection_output<small_ssd>(in, ssd_loc, ssd_conf, {}, {}, mosaiq::score_activation::softmax);

  std::vector<std::uint8_t> loc_u8(small_ssd.priors * 4), conf_u8(small_ssd.priors * small_ssd.classes);
  for (auto& v : loc_u8) v = in.byte();
  for (auto& v : conf_u8) v = in.byte();
  const mosaiq::quant_params loc_quant{in.mixed(), in.byte()}, conf_quant{in.mixed(), in.byte()};
  fuzz_detection_output<small_ssd>(in, loc_u8, conf_u8, loc_quant, conf_quant, mosaiq::score_activation::none);
  std::vector<std::int8_t> conf_i8(conf_u8.size());
  for (auto& v : conf_i8) v = static_cast<std::int8_t>(in.byte());
  fuzz_detection_output<small_ssd>(
      in, loc_u8, conf_i8, loc_quant, {0.05f, in.byte() - 128},
      in.byte() % 2 ? mosaiq::score_activation::logistic : mosaiq::score_activation::softmax);

  std::vector<float> encodings(small_fast.anchors * 4), fast_scores(small_fast.anchors * small_fast.score_columns());
  for (auto& v : encodings) v = in.mixed();
  for (auto& v : fast_scores) v = in.mixed();
  fuzz_tflite<small_fast>(in, encodings, fast_scores, {});
  std::vector<std::uint8_t> regular_scores(small_regular.anchors * small_regular.score_columns());
  for (auto& v : regular_scores) v = in.byte();
  fuzz_tflite<small_regular>(in, encodings, regular_scores, {1.0f / 255.0f, in.byte() % 8});
  return 0;
}
