// bench_nms: SSD detection post-processing, `nms/<impl>/<case>`, one thread.
//  * ssd300_realistic / ssd300_random: Caffe-SSD DetectionOutput, 8732 priors x 21 classes, CENTER_SIZE, confidence
//    0.01, top_k 400, nms 0.45, keep_top_k 200. Realistic scores are background-dominant softmax outputs with 60
//    objects (about 22k candidates above 0.01, the load described in the NMS notes §5.1); random scores are softmaxed
//    uniform logits (sigma 2, about 90k candidates). Rows: mosaiq and OpenCV dnn's DetectionOutput layer; OpenCV's
//    detections are checked against mosaiq's once, as sets, before anything is timed.
//  * ssd_mobilenet_fast / ssd_mobilenet_regular: TFLite_Detection_PostProcess on 1917 anchors x 91 columns (sigmoid
//    scores, threshold 1e-8, IoU 0.6 as exported by the TF Object Detection API), fast and regular NMS.
//    _kp6_u8anchors: the same boxes and scores with 6 keypoints per anchor (16 encoding values, the box values
//    unchanged) and the anchors quantized to u8 as TFLite models store them.
//  * plain_1917_caffe / _tflite_v4 / _tflite_v5: plain NMS on the same 1917 decoded SSD-MobileNet boxes (scores: each
//    anchor's best class, threshold 0.01, IoU 0.5, up to 100 kept) under the Caffe rule, TFLite's V4 and V5 (sigma
//    0.5); plain_1917_opencv_soft: the decay-only soft NMS (OpenCV softNMSBoxes rule, gaussian, sigma 0.5) on them.
#include "mosaiq/ops/nms.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "common.hpp"
#include "mosaiq/ops/priors.hpp"

#if MOSAIQ_BENCH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/dnn.hpp>
#endif

namespace mosaiq::bench {
namespace {

constexpr std::size_t ssd300_prior_count = caffe_prior_count(ssd300_prior_layers);
constexpr std::size_t ssd300_classes = 21;
constexpr float ssd300_confidence = 0.01f, ssd300_nms = 0.45f;
constexpr std::size_t ssd300_top_k = 400, ssd300_keep_top_k = 200;
constexpr detection_output_config ssd300_config{.priors = ssd300_prior_count,
                                                .classes = ssd300_classes,
                                                .top_k = ssd300_top_k,
                                                .keep_top_k = ssd300_keep_top_k,
                                                .code = box_code::center_size};
using ssd300_layer = detection_output<ssd300_config>;

const std::array<prior_box, ssd300_prior_count>& ssd300_priors() {
  static const auto priors = caffe_priors<ssd300_prior_count>(ssd300_prior_layers);
  return priors;
}

/// Softmax over one prior's logits, in double as a framework's float softmax would round close to.
void softmax_into(std::span<const double> logits, std::span<float> out) {
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (const double v : logits) sum += std::exp(v - max);
  for (std::size_t c = 0; c < logits.size(); ++c) out[c] = static_cast<float>(std::exp(logits[c] - max) / sum);
}

/// loc and conf tensors of one SSD300 image.
struct ssd300_inputs {
  std::vector<float> loc, conf;
  std::size_t candidates = 0;  ///< foreground (class, prior) scores above the confidence threshold
};

enum class score_load { realistic, random };

ssd300_inputs make_ssd300_inputs(score_load load, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> offset(0.0f, 0.6f);
  ssd300_inputs in;
  in.loc.resize(ssd300_prior_count * 4);
  for (float& v : in.loc) v = offset(rng);
  in.conf.resize(ssd300_prior_count * ssd300_classes);
  std::vector<double> logits(ssd300_classes);
  if (load == score_load::realistic) {
    // Background logit +6 over unit-normal noise, plus 60 objects covering 12 consecutive priors each with a +6
    // class logit: about 22k foreground scores above 0.01 (the notes measured OpenCV on ~23k).
    std::normal_distribution<double> noise(0.0, 1.0);
    std::uniform_int_distribution<std::size_t> pick_prior(0, ssd300_prior_count - 1), pick_class(1, ssd300_classes - 1);
    std::vector<std::size_t> object_class(ssd300_prior_count, 0);
    for (int object = 0; object < 60; ++object) {
      const std::size_t first = pick_prior(rng), label = pick_class(rng);
      for (std::size_t p = first; p < std::min(ssd300_prior_count, first + 12); ++p) object_class[p] = label;
    }
    for (std::size_t p = 0; p < ssd300_prior_count; ++p) {
      for (double& v : logits) v = noise(rng);
      logits[0] += 6.0;
      if (object_class[p] > 0) logits[object_class[p]] += 6.0 + noise(rng);
      softmax_into(logits, std::span(in.conf).subspan(p * ssd300_classes, ssd300_classes));
    }
  } else {
    // Uniform logits with standard deviation 2: no class dominates, every class has thousands of candidates.
    const double half_width = 2.0 * std::sqrt(3.0);
    std::uniform_real_distribution<double> uniform(-half_width, half_width);
    for (std::size_t p = 0; p < ssd300_prior_count; ++p) {
      for (double& v : logits) v = uniform(rng);
      softmax_into(logits, std::span(in.conf).subspan(p * ssd300_classes, ssd300_classes));
    }
  }
  for (std::size_t p = 0; p < ssd300_prior_count; ++p)
    for (std::size_t c = 1; c < ssd300_classes; ++c)
      in.candidates += in.conf[p * ssd300_classes + c] > ssd300_confidence;
  return in;
}

/// mosaiq's detections on an SSD300 input, in Caffe order.
struct ssd300_mosaiq_run {
  const ssd300_layer layer{{.confidence = ssd300_confidence, .nms = ssd300_nms}};
  std::unique_ptr<ssd300_layer::workspace> scratch = std::make_unique<ssd300_layer::workspace>();
  std::array<detection, ssd300_layer::max_detections> out{};
  std::size_t count = 0;

  void run(const ssd300_inputs& in) {
    count = layer.run(input_tensor<float>{in.loc}, score_tensor<float>{in.conf}, ssd300_priors(), out, scratch->bytes);
  }
  std::span<const detection> detections() const { return std::span(out).first(count); }
};

void set_ssd300_counters(benchmark::State& state, const ssd300_inputs& in, std::size_t detections) {
  state.counters["candidates"] = static_cast<double>(in.candidates);
  state.counters["detections"] = static_cast<double>(detections);
}

void register_ssd300_mosaiq(const std::string& case_name, std::shared_ptr<const ssd300_inputs> in) {
  register_row("nms", "mosaiq", case_name, [in](benchmark::State& state) {
    auto runner = std::make_unique<ssd300_mosaiq_run>();
    for (auto _ : state) {
      runner->run(*in);
      benchmark::DoNotOptimize(runner->out.data());
      benchmark::ClobberMemory();
    }
    set_ssd300_counters(state, *in, runner->count);
    state.counters["scratch_bytes"] = static_cast<double>(ssd300_layer::scratch_bytes);
  });
}

#if MOSAIQ_BENCH_OPENCV
/// OpenCV dnn's DetectionOutput fed loc / conf / prior tensors directly (NMS notes §2.6): every parameter written
/// explicitly, since OpenCV's defaults differ from Caffe's.
class opencv_detection_output {
 public:
  explicit opencv_detection_output(const ssd300_inputs& in) : loc_(in.loc), conf_(in.conf) {
    const int n = static_cast<int>(ssd300_prior_count), classes = static_cast<int>(ssd300_classes);
    std::string proto = "name: 'ssd_postprocess'\n";
    const auto input = [&proto](const std::string& name, const std::string& dims) {
      proto +=
          "layer { name: '" + name + "' type: 'Input' top: '" + name + "' input_param { shape { " + dims + "} } }\n";
    };
    input("loc", "dim: 1 dim: " + std::to_string(n * 4) + " ");
    input("conf", "dim: 1 dim: " + std::to_string(n * classes) + " ");
    input("prior", "dim: 1 dim: 2 dim: " + std::to_string(n * 4) + " ");
    proto +=
        "layer { name: 'detection_out' type: 'DetectionOutput' bottom: 'loc' bottom: 'conf' bottom: 'prior' "
        "top: 'detection_out'\n  detection_output_param { num_classes: " +
        std::to_string(classes) +
        " share_location: true background_label_id: 0\n    nms_param { nms_threshold: 0.45 top_k: " +
        std::to_string(ssd300_top_k) +
        " }\n    code_type: CENTER_SIZE keep_top_k: " + std::to_string(ssd300_keep_top_k) +
        " confidence_threshold: 0.01 } }\n";
    net_ = cv::dnn::readNetFromCaffe(proto.data(), proto.size());
    net_.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net_.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    const auto& priors = ssd300_priors();
    prior_blob_.resize(priors.size() * 8);
    for (std::size_t i = 0; i < priors.size(); ++i) {
      const corner_box& b = priors[i].box;
      const std::array<float, 4> corners{b.xmin, b.ymin, b.xmax, b.ymax};
      std::copy(corners.begin(), corners.end(), prior_blob_.begin() + static_cast<std::ptrdiff_t>(i * 4));
      std::copy(priors[i].variance.begin(), priors[i].variance.end(),
                prior_blob_.begin() + static_cast<std::ptrdiff_t>((priors.size() + i) * 4));
    }
    const int loc_dims[] = {1, n * 4}, conf_dims[] = {1, n * classes}, prior_dims[] = {1, 2, n * 4};
    // The layer does not write its inputs, so they are set once and forward() alone is timed.
    net_.setInput(cv::Mat(2, loc_dims, CV_32F, loc_.data()), "loc");
    net_.setInput(cv::Mat(2, conf_dims, CV_32F, conf_.data()), "conf");
    net_.setInput(cv::Mat(3, prior_dims, CV_32F, prior_blob_.data()), "prior");
  }

  void run() { result_ = net_.forward(); }

  /// Rows with a positive score (OpenCV zero-fills the unused ones).
  std::vector<detection> detections() const {
    std::vector<detection> rows;
    const auto* r = result_.ptr<float>();
    for (std::size_t i = 0; i < result_.total() / 7; ++i, r += 7)
      if (r[2] > 0) rows.push_back({static_cast<int>(r[0]), static_cast<int>(r[1]), r[2], {r[3], r[4], r[5], r[6]}});
    return rows;
  }
  const cv::Mat& result() const { return result_; }

 private:
  std::vector<float> loc_, conf_, prior_blob_;
  cv::dnn::Net net_;
  cv::Mat result_;
};

/// Empty when both hold the same detections as sets: equal labels and scores, boxes within 1e-5. OpenCV sorts by
/// score, Caffe and mosaiq by label, so both are put in (label, score, box) order first.
std::string compare_detection_sets(std::vector<detection> a, std::vector<detection> b) {
  const auto order = [](const detection& x, const detection& y) {
    if (x.label != y.label) return x.label < y.label;
    if (x.score != y.score) return x.score > y.score;
    return x.box.xmin < y.box.xmin;
  };
  std::sort(a.begin(), a.end(), order);
  std::sort(b.begin(), b.end(), order);
  if (a.size() != b.size())
    return "OpenCV kept " + std::to_string(a.size()) + " detections, mosaiq " + std::to_string(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto near = [](float x, float y) { return std::abs(x - y) <= 1e-5f; };
    if (a[i].label != b[i].label || a[i].score != b[i].score || !near(a[i].box.xmin, b[i].box.xmin) ||
        !near(a[i].box.ymin, b[i].box.ymin) || !near(a[i].box.xmax, b[i].box.xmax) ||
        !near(a[i].box.ymax, b[i].box.ymax))
      return "detection " + std::to_string(i) + " differs between OpenCV and mosaiq";
  }
  return {};
}

void register_ssd300_opencv(const std::string& case_name, std::shared_ptr<const ssd300_inputs> in) {
  struct row_state {
    std::unique_ptr<opencv_detection_output> layer;
    std::string error;
  };
  auto row = std::make_shared<row_state>();
  register_row("nms", "opencv", case_name, [in, row](benchmark::State& state) {
    if (!row->layer && row->error.empty()) {
      try {
        cv::setNumThreads(1);
        row->layer = std::make_unique<opencv_detection_output>(*in);
        row->layer->run();
        ssd300_mosaiq_run mosaiq_run;
        mosaiq_run.run(*in);
        row->error = compare_detection_sets(row->layer->detections(),
                                            {mosaiq_run.detections().begin(), mosaiq_run.detections().end()});
      } catch (const std::exception& e) {
        row->error = e.what();
      }
      if (!row->error.empty()) row->layer.reset();
    }
    if (!row->error.empty()) {
      state.SkipWithError(row->error.c_str());
      return;
    }
    for (auto _ : state) {
      row->layer->run();
      benchmark::ClobberMemory();
    }
    set_ssd300_counters(state, *in, row->layer->detections().size());
    state.SetLabel("cv::dnn DetectionOutput, same detections as mosaiq");
  });
}
#endif

void register_ssd300(const std::string& case_name, score_load load, std::uint32_t seed) {
  auto in = std::make_shared<const ssd300_inputs>(make_ssd300_inputs(load, seed));
  register_ssd300_mosaiq(case_name, in);
#if MOSAIQ_BENCH_OPENCV
  register_ssd300_opencv(case_name, in);
#else
  register_unavailable("nms", "opencv", case_name, "built without OpenCV (install libopencv-dev)");
#endif
}

// ---------------------------------------------------------------------------------------------------------------------
// SSD-MobileNet, TFLite_Detection_PostProcess

constexpr std::size_t mobilenet_anchor_count = ssd_mobilenet_anchor_generator.anchor_count();
constexpr std::size_t mobilenet_classes = 90;  // COCO, plus the background column
constexpr tflite_postprocess_params mobilenet_params{.score_threshold = 1e-8f, .iou_threshold = 0.6f};

/// Box encodings and sigmoid scores of one SSD-MobileNet COCO image: low-scored background clutter plus 30 objects
/// over 10 anchors each. Nearly every score passes the 1e-8 threshold, which is what the exported models run with.
struct mobilenet_inputs {
  std::vector<float> encodings, scores;
  std::size_t candidates = 0;  ///< foreground scores >= the threshold
};

mobilenet_inputs make_mobilenet_inputs(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> encoding(0.0f, 1.0f);
  std::normal_distribution<double> clutter(-6.0, 1.5);
  constexpr std::size_t columns = mobilenet_classes + 1;
  mobilenet_inputs in;
  in.encodings.resize(mobilenet_anchor_count * 4);
  for (float& v : in.encodings) v = encoding(rng);
  std::vector<double> logits(mobilenet_anchor_count * columns);
  for (double& v : logits) v = clutter(rng);
  std::uniform_int_distribution<std::size_t> pick_anchor(0, mobilenet_anchor_count - 1),
      pick_class(1, mobilenet_classes);
  for (int object = 0; object < 30; ++object) {
    const std::size_t first = pick_anchor(rng), label = pick_class(rng);
    for (std::size_t a = first; a < std::min(mobilenet_anchor_count, first + 10); ++a) logits[a * columns + label] += 8;
  }
  in.scores.resize(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) in.scores[i] = static_cast<float>(1.0 / (1.0 + std::exp(-logits[i])));
  for (std::size_t a = 0; a < mobilenet_anchor_count; ++a)
    for (std::size_t c = 1; c < columns; ++c)
      in.candidates += in.scores[a * columns + c] >= mobilenet_params.score_threshold;
  return in;
}

const std::array<center_box, mobilenet_anchor_count>& mobilenet_anchors() {
  static const auto anchors = ssd_anchors<mobilenet_anchor_count>(ssd_mobilenet_anchor_generator);
  return anchors;
}

constexpr std::size_t mobilenet_keypoints = 6;
constexpr quant_params anchor_quant{1.0f / 255.0f, 0};

/// The SSD-MobileNet head with keypoints: each anchor's 4 box values followed by 6 (y, x) pairs, and the anchors as
/// the u8 tensor a quantized model ships (all anchor values lie in [0, 1]).
struct keypoint_head {
  std::vector<float> encodings;
  std::vector<u8> anchors;
};

keypoint_head make_keypoint_head(const mobilenet_inputs& in, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> offset(0.0f, 1.0f);
  constexpr std::size_t row = 4 + 2 * mobilenet_keypoints;
  keypoint_head head{std::vector<float>(mobilenet_anchor_count * row), std::vector<u8>(mobilenet_anchor_count * 4)};
  for (std::size_t a = 0; a < mobilenet_anchor_count; ++a) {
    std::copy_n(in.encodings.begin() + static_cast<std::ptrdiff_t>(a * 4), 4,
                head.encodings.begin() + static_cast<std::ptrdiff_t>(a * row));
    for (std::size_t k = 4; k < row; ++k) head.encodings[a * row + k] = offset(rng);
    const center_box& anchor = mobilenet_anchors()[a];
    const std::array<float, 4> values{anchor.ycenter, anchor.xcenter, anchor.height, anchor.width};
    for (std::size_t i = 0; i < 4; ++i) head.anchors[a * 4 + i] = quantize_value<u8>(values[i], anchor_quant);
  }
  return head;
}

template <bool Regular, std::size_t Keypoints>
void register_mobilenet(const std::string& case_name, std::shared_ptr<const mobilenet_inputs> in,
                        std::shared_ptr<const keypoint_head> head = nullptr) {
  static constexpr tflite_postprocess_config config{.anchors = mobilenet_anchor_count,
                                                    .classes = mobilenet_classes,
                                                    .max_detections = Regular ? 100 : 10,
                                                    .detections_per_class = 100,
                                                    .use_regular_nms = Regular,
                                                    .keypoints = Keypoints};
  using op_type = tflite_detection_postprocess<config>;
  register_row("nms", "mosaiq", case_name, [in, head](benchmark::State& state) {
    const op_type op(mobilenet_params);
    auto scratch = std::make_unique<typename op_type::workspace>();
    std::vector<std::array<float, 4>> boxes(op_type::output_rows);
    std::vector<float> classes(op_type::output_rows), scores(op_type::output_rows);
    std::vector<keypoint> keypoints(op_type::output_rows * Keypoints);
    const tflite_postprocess_outputs outputs{boxes, classes, scores, keypoints};
    std::size_t detections = 0;
    for (auto _ : state) {
      if constexpr (Keypoints > 0)
        detections = op.run(input_tensor<float>{head->encodings}, score_tensor<float>{in->scores},
                            input_tensor<u8>{head->anchors, anchor_quant}, outputs, scratch->bytes);
      else
        detections = op.run(input_tensor<float>{in->encodings}, score_tensor<float>{in->scores}, mobilenet_anchors(),
                            outputs, scratch->bytes);
      benchmark::DoNotOptimize(boxes.data());
      benchmark::ClobberMemory();
    }
    state.counters["candidates"] = static_cast<double>(in->candidates);
    state.counters["detections"] = static_cast<double>(detections);
    state.counters["scratch_bytes"] = static_cast<double>(op_type::scratch_bytes);
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// Plain NMS under each rule, on the same boxes

/// The decoded SSD-MobileNet boxes and each anchor's best foreground score.
struct plain_nms_inputs {
  std::vector<corner_box> boxes;
  std::vector<float> scores;
};

plain_nms_inputs make_plain_nms_inputs(const mobilenet_inputs& in) {
  plain_nms_inputs plain{std::vector<corner_box>(mobilenet_anchor_count), std::vector<float>(mobilenet_anchor_count)};
  constexpr std::size_t columns = mobilenet_classes + 1;
  for (std::size_t a = 0; a < mobilenet_anchor_count; ++a) {
    const std::array<float, 4> encoding{in.encodings[a * 4], in.encodings[a * 4 + 1], in.encodings[a * 4 + 2],
                                        in.encodings[a * 4 + 3]};
    plain.boxes[a] = decode_tf_box(mobilenet_anchors()[a], encoding, {});
    const auto row = in.scores.begin() + static_cast<std::ptrdiff_t>(a * columns);
    plain.scores[a] = *std::max_element(row + 1, row + static_cast<std::ptrdiff_t>(columns));
  }
  return plain;
}

constexpr float plain_score_threshold = 0.01f, plain_iou_threshold = 0.5f;
constexpr std::size_t plain_max_output = 100;

template <nms_rule Rule>
void register_plain_nms(const std::string& case_name, std::shared_ptr<const plain_nms_inputs> in,
                        const nms_options_for<Rule>& options) {
  register_row("nms", "mosaiq", case_name, [in, options](benchmark::State& state) {
    auto scratch = std::make_unique<nms_workspace<mobilenet_anchor_count>>();
    std::vector<std::uint32_t> kept(plain_max_output);
    std::vector<float> kept_scores(plain_max_output);
    std::size_t count = 0;
    for (auto _ : state) {
      count = nms<Rule>(in->boxes, in->scores, options, kept, kept_scores, scratch->span());
      benchmark::DoNotOptimize(kept.data());
      benchmark::ClobberMemory();
    }
    state.counters["candidates"] = static_cast<double>(
        std::count_if(in->scores.begin(), in->scores.end(), [](float s) { return s > plain_score_threshold; }));
    state.counters["detections"] = static_cast<double>(count);
  });
}

void register_opencv_soft_nms(const std::string& case_name, std::shared_ptr<const plain_nms_inputs> in) {
  register_row("nms", "mosaiq", case_name, [in](benchmark::State& state) {
    const auto scratch = std::make_unique<std::vector<std::byte>>(soft_nms_scratch_bytes(in->boxes.size()));
    std::vector<std::uint32_t> kept(plain_max_output);
    std::vector<float> kept_scores(plain_max_output);
    const soft_nms_options options{
        .sigma = 0.5f, .iou_threshold = plain_iou_threshold, .score_threshold = plain_score_threshold};
    std::size_t count = 0;
    for (auto _ : state) {
      count = soft_nms(in->boxes, in->scores, options, kept, kept_scores, *scratch);
      benchmark::DoNotOptimize(kept.data());
      benchmark::ClobberMemory();
    }
    state.counters["detections"] = static_cast<double>(count);
  });
}

void register_all() {
  register_ssd300("ssd300_realistic", score_load::realistic, 1);
  register_ssd300("ssd300_random", score_load::random, 2);
  auto mobilenet = std::make_shared<const mobilenet_inputs>(make_mobilenet_inputs(3));
  auto head = std::make_shared<const keypoint_head>(make_keypoint_head(*mobilenet, 4));
  register_mobilenet<false, 0>("ssd_mobilenet_fast", mobilenet);
  register_mobilenet<false, mobilenet_keypoints>("ssd_mobilenet_fast_kp6_u8anchors", mobilenet, head);
  register_mobilenet<true, 0>("ssd_mobilenet_regular", mobilenet);
  register_mobilenet<true, mobilenet_keypoints>("ssd_mobilenet_regular_kp6_u8anchors", mobilenet, head);
  auto plain = std::make_shared<const plain_nms_inputs>(make_plain_nms_inputs(*mobilenet));
  register_plain_nms<nms_rule::caffe>("plain_1917_caffe", plain,
                                      {.score_threshold = plain_score_threshold, .iou_threshold = plain_iou_threshold});
  register_plain_nms<nms_rule::tflite>(
      "plain_1917_tflite_v4", plain, {.iou_threshold = plain_iou_threshold, .score_threshold = plain_score_threshold});
  register_plain_nms<nms_rule::tflite>(
      "plain_1917_tflite_v5", plain,
      {.iou_threshold = plain_iou_threshold, .score_threshold = plain_score_threshold, .soft_nms_sigma = 0.5f});
  register_opencv_soft_nms("plain_1917_opencv_soft", plain);
}

}  // namespace
}  // namespace mosaiq::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  mosaiq::bench::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
