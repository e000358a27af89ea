// A static network: the layer list is a type, every shape, cost and arena offset is computed at
// compile time, and run() is a fold over the layers with no heap and no runtime graph.
//
//   using net = mosaiq::network<mosaiq::input<mosaiq::u8, 64, 64, 3>,
//                               mosaiq::layers::conv2d<{.out_channels = 16, .stride = {2, 2}}>,
//                               mosaiq::layers::tap<"skip">,
//                               mosaiq::layers::depthwise<{.kernel = {3, 3}}>,
//                               mosaiq::layers::add<"skip">,
//                               mosaiq::layers::pointwise<{.out_channels = 2}>,
//                               mosaiq::layers::softmax<>>;
//   static_assert(net::output_shape == mosaiq::shape{32, 32, 2});
//   static net::weights w;                     // fill, or net::load(blob, w)
//   const net::prepared p = net::prepare(w);   // load time: requant bundles, tables
//   alignas(64) static std::byte arena[net::arena_bytes];
//   net::run(p, input, output, arena);
//
// Tensors: the input is tensor 0, every op layer makes the next one, the last is the output. The
// input and output live in the caller's views; every other tensor lives in the arena at an offset
// the plan (net/plan.hpp) gives it, and shares memory with tensors it is never alive with.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/indexed.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/net/bands.hpp"
#include "mosaiq/net/executor.hpp"
#include "mosaiq/net/executor_16x8.hpp"
#include "mosaiq/net/layers.hpp"
#include "mosaiq/net/plan.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Layers that join branches read at most this many tensors.
inline constexpr std::size_t max_layer_inputs = 8;

enum class graph_error {
  none,
  unknown_tap,
  duplicate_tap,
  add_shape_mismatch,
  concat_spatial_mismatch,
  window_does_not_fit,
  invalid_config,
  last_layer_not_op,
  output_of_network_input,
};

struct layer_node {
  layer_role role = layer_role::op;
  int input_count = 0;
  std::array<int, max_layer_inputs> inputs{};  ///< tensor ids read by an op
  int output = 0;                              ///< tensor made (op) or current after the layer (tap, from)
  shape dims{};                                ///< shape of `output`
};

struct tensor_node {
  shape dims{};
  int producer = -1;  ///< layer index; -1 for the network input
  int last_use = -1;  ///< last layer that reads it; its producer when nothing does
};

/// A tensor named by a tap or output layer.
struct named_tensor {
  std::string_view name;
  int tensor = 0;
  bool output = false;  ///< an output layer: alive until the end of the run
};

template <std::size_t LayerCount, std::size_t TensorCount>
struct network_graph {
  std::array<layer_node, LayerCount> layers{};
  std::array<tensor_node, TensorCount> tensors{};
  std::array<named_tensor, LayerCount> names{};
  std::size_t name_count = 0;
  graph_error error = graph_error::none;
  int error_layer = -1;  ///< index of the first layer that does not fit
};

namespace detail {

constexpr graph_error to_graph_error(shape_error e) noexcept {
  switch (e) {
    case shape_error::none:
      return graph_error::none;
    case shape_error::add_shape_mismatch:
      return graph_error::add_shape_mismatch;
    case shape_error::concat_spatial_mismatch:
      return graph_error::concat_spatial_mismatch;
    case shape_error::window_does_not_fit:
      return graph_error::window_does_not_fit;
    case shape_error::invalid_config:
      return graph_error::invalid_config;
  }
  return graph_error::invalid_config;
}

template <class Layer>
constexpr std::size_t op_count() noexcept {
  return Layer::role == layer_role::op ? 1 : 0;
}

/// The graph of a layer list as analyze() builds it, one layer at a time: the tensor each name selects, the current
/// tensor (what the next layer reads by default) and the first error.
template <std::size_t LayerCount, std::size_t TensorCount>
struct graph_builder {
  network_graph<LayerCount, TensorCount> g;
  int current = 0;      ///< the tensor made or selected last
  int next_tensor = 1;  ///< the id the next op layer's tensor takes
  int step = 0;         ///< the layer being added

  /// Records the first error and where it is; the walk goes on so that only the static_assert naming it fires.
  constexpr void fail(graph_error e) noexcept {
    if (g.error == graph_error::none) {
      g.error = e;
      g.error_layer = step;
    }
  }

  /// The tensor a name selects: the current one for "", -1 for a name no earlier tap or output gives.
  constexpr int find(std::string_view name) const noexcept {
    if (name.empty()) return current;
    for (std::size_t i = 0; i < g.name_count; ++i)
      if (g.names[i].name == name) return g.names[i].tensor;
    return -1;
  }

  template <class Layer>
  constexpr void add_tap() {
    if (find(Layer::name) >= 0 || Layer::name.empty()) fail(graph_error::duplicate_tap);
    constexpr bool keeps_alive = requires { requires Layer::keeps_alive; };
    if (keeps_alive && current == 0) fail(graph_error::output_of_network_input);
    g.names[g.name_count++] = {Layer::name, current, keeps_alive};
  }

  template <class Layer>
  constexpr void select_tapped() {
    const int t = find(Layer::name);
    if (t < 0)
      fail(graph_error::unknown_tap);
    else
      current = t;
  }

  /// An op layer: its inputs (read now, so alive until this step), its inferred output shape and new tensor.
  template <class Layer>
  constexpr void add_op(layer_node& node) {
    constexpr std::size_t arity = Layer::inputs.size();
    static_assert(arity <= max_layer_inputs, "mosaiq::network: a layer reads more than max_layer_inputs tensors");
    std::array<shape, arity> in{};
    node.input_count = static_cast<int>(arity);
    for (std::size_t k = 0; k < arity; ++k) {
      int t = find(Layer::inputs[k]);
      if (t < 0) {
        fail(graph_error::unknown_tap);
        t = current;  // a stand-in, so that shapes still follow
      }
      node.inputs[k] = t;
      in[k] = g.tensors[static_cast<std::size_t>(t)].dims;
      g.tensors[static_cast<std::size_t>(t)].last_use = step;
    }
    const shape_result r = Layer::infer(in);
    if (r.error != shape_error::none) fail(to_graph_error(r.error));
    g.tensors[static_cast<std::size_t>(next_tensor)] = {r.output, step, step};
    current = next_tensor++;
  }

  template <class Layer>
  constexpr void add_layer() {
    layer_node& node = g.layers[static_cast<std::size_t>(step)];
    node.role = Layer::role;
    if constexpr (Layer::role == layer_role::tap)
      add_tap<Layer>();
    else if constexpr (Layer::role == layer_role::from)
      select_tapped<Layer>();
    else
      add_op<Layer>(node);
    node.output = current;
    node.dims = g.tensors[static_cast<std::size_t>(current)].dims;
    ++step;
  }

  /// After the last layer: output layers' tensors outlive every layer (the plan never reuses their memory), and the
  /// last layer must make the network's output.
  constexpr void finish() {
    for (std::size_t i = 0; i < g.name_count; ++i)
      if (g.names[i].output) g.tensors[static_cast<std::size_t>(g.names[i].tensor)].last_use = int(LayerCount);
    if (g.layers.back().role != layer_role::op) {
      step = static_cast<int>(LayerCount) - 1;
      fail(graph_error::last_layer_not_op);
    }
  }
};

/// Walks the layer list once: resolves tap names, infers shapes, records liveness (graph_builder).
template <class Input, class... Layers>
constexpr auto analyze() {
  // A loop, not a fold expression: clang caps a fold's nesting at 256 (-fbracket-depth), below long networks.
  constexpr std::size_t tensor_count = [] {
    std::size_t count = 1;
    detail::for_each_type<Layers...>([&]<class L>(std::type_identity<L>) { count += op_count<L>(); });
    return count;
  }();
  graph_builder<sizeof...(Layers), tensor_count> builder;
  builder.g.tensors[0] = {Input::dims, -1, -1};
  detail::for_each_type<Layers...>([&]<class L>(std::type_identity<L>) { builder.template add_layer<L>(); });
  builder.finish();
  return builder.g;
}

/// A layer as a plan runs it: pointwise and conv2d layers whose config sets no GEMM block bound take
/// the plan's (banding::with_gemm_block_bytes); every other layer as written.
template <class Config, banding Plan>
constexpr Config with_gemm_block(Config c) noexcept {
  if (c.block_bytes == 0) c.block_bytes = Plan.gemm_block_bytes;
  return c;
}
template <class Layer, banding Plan>
struct planned_layer {
  using type = Layer;
};
template <layers::pointwise_config C, banding Plan>
struct planned_layer<layers::pointwise<C>, Plan> {
  using type = layers::pointwise<with_gemm_block<layers::pointwise_config, Plan>(C)>;
};
template <layers::conv2d_config C, banding Plan>
struct planned_layer<layers::conv2d<C>, Plan> {
  using type = layers::conv2d<with_gemm_block<layers::conv2d_config, Plan>(C)>;
};

/// The layer kinds a network takes as weights but that carry none: tap and from.
struct no_state {};

template <class Layer, network_element T, rounding R, shape In, shape Out, int MaxThreads>
struct layer_types {
  using weights = layers::no_weights;
  using state = no_state;
  static constexpr bool in_place = false;
  static constexpr bool splits = false;
  static constexpr int split_rows = 0;
  static constexpr bool row_local = false;
  static constexpr std::size_t scratch_bytes = 0;
};

template <op_layer Layer, network_element T, rounding R, shape In, shape Out, int MaxThreads>
struct layer_types<Layer, T, R, In, Out, MaxThreads> {
  static_assert(!std::same_as<T, i16> || has_16x8_executor<Layer>,
                "mosaiq::network: this layer kind has no 16x8 executor yet (an i16 network takes conv2d, depthwise, "
                "pointwise, transpose_conv, average_pool, resize_bilinear, logistic, hard_swish, add and mul; "
                "net/executor_16x8.hpp)");
  using exec = executor<Layer, T, R, In, Out>;
  using weights = typename Layer::template weights<T, In, Out>;
  using state = typename exec::state;
  static constexpr bool in_place = exec::in_place;
  /// Whether the layer runs in row bands (one per thread); rows to split (output rows unless the
  /// executor says otherwise).
  static constexpr bool splits = requires(const state& s, const input_views<T, Layer::inputs.size()>& in,
                                          tensor_view<T> out, std::span<std::byte> scratch, row_band band) {
    exec::run_rows(s, in, out, scratch, band);
  };
  static constexpr int split_rows = [] {
    if constexpr (requires { exec::split_rows; })
      return exec::split_rows;
    else
      return Out.height;
  }();
  /// Whether output row r reads row r of its inputs only (executor.hpp, row_local), split by output rows.
  static constexpr bool row_local = [] {
    if constexpr (requires { exec::row_local; })
      return splits && split_rows == Out.height && exec::row_local;
    else
      return false;
  }();
  /// One band's workspace, and the layer's: a slice per thread (the last one unaligned, so that a
  /// single-thread network plans exactly what it did before threads).
  static constexpr std::size_t slice_bytes = exec::scratch_bytes(In, Out);
  static constexpr std::size_t slice_stride = align_up(slice_bytes);
  static constexpr int slices = splits && slice_bytes != 0 ? std::max(1, std::min(MaxThreads, split_rows)) : 1;
  static constexpr std::size_t scratch_bytes = slice_stride * std::size_t(slices - 1) + slice_bytes;
};

// Blob fields: arrays of arithmetic values, arithmetic scalars and quant_params, written natively.
template <class F>
struct field_traits {
  static constexpr std::size_t bytes = sizeof(F);
};
template <class E, std::size_t N>
struct field_traits<std::array<E, N>> {
  static constexpr std::size_t bytes = sizeof(E) * N;
};
template <>
struct field_traits<quant_params> {
  static constexpr std::size_t bytes = sizeof(float) + sizeof(std::int32_t);
};

template <class Tuple>
struct fields_bytes;
template <class... F>
struct fields_bytes<std::tuple<F...>> {
  static constexpr std::size_t value = (field_traits<std::remove_cvref_t<F>>::bytes + ... + 0);
};

template <class W>
inline constexpr std::size_t weights_blob_bytes = fields_bytes<decltype(std::declval<W&>().fields())>::value;

struct byte_writer {
  std::byte* out;
  std::size_t position = 0;
  void put(const void* data, std::size_t bytes) {
    if (bytes != 0) std::memcpy(out + position, data, bytes);
    position += bytes;
  }
  template <class F>
  void field(const F& f) {
    if constexpr (std::is_same_v<F, quant_params>) {
      put(&f.scale, sizeof f.scale);
      put(&f.zero_point, sizeof f.zero_point);
    } else if constexpr (std::is_arithmetic_v<F>) {
      put(&f, sizeof f);
    } else {
      put(f.data(), sizeof(typename F::value_type) * f.size());
    }
  }
};

struct byte_reader {
  const std::byte* in;
  std::size_t position = 0;
  void get(void* data, std::size_t bytes) {
    if (bytes != 0) std::memcpy(data, in + position, bytes);
    position += bytes;
  }
  template <class F>
  void field(F& f) {
    if constexpr (std::is_same_v<F, quant_params>) {
      get(&f.scale, sizeof f.scale);
      get(&f.zero_point, sizeof f.zero_point);
    } else if constexpr (std::is_arithmetic_v<F>) {
      get(&f, sizeof f);
    } else {
      get(f.data(), sizeof(typename F::value_type) * f.size());
    }
  }
};

}  // namespace detail

template <class Input, class... Layers>
requires layer_descriptors<Layers...>
class network {
 public:
  using element_type = typename Input::element_type;
  static constexpr rounding round = Input::round;
  /// Most threads a run uses (Input::with_max_threads<N>); more in the executor are left idle.
  static constexpr int max_threads = Input::max_threads;
  /// The banding choice the network was declared with (Input::with_banding<...>; net/banding.hpp).
  static constexpr banding band_plan = Input::bands;
  static constexpr std::size_t layer_count = sizeof...(Layers);
  static_assert(layer_count >= 1, "mosaiq::network: give at least one layer");

  static constexpr auto topology = detail::analyze<Input, Layers...>();
  static constexpr std::size_t tensor_count = topology.tensors.size();

  static_assert(topology.error != graph_error::unknown_tap,
                "mosaiq::network: a layer names a tap that no earlier layers::tap defines");
  static_assert(topology.error != graph_error::duplicate_tap,
                "mosaiq::network: two layers::tap use the same name, or a tap name is empty");
  static_assert(topology.error != graph_error::add_shape_mismatch,
                "mosaiq::network: layers::add and layers::mul need the current and the tapped tensor to broadcast (per "
                "axis equal, or one of them 1)");
  static_assert(topology.error != graph_error::concat_spatial_mismatch,
                "mosaiq::network: layers::concat needs every input to have the same height and width");
  static_assert(topology.error != graph_error::window_does_not_fit,
                "mosaiq::network: a window (kernel with dilation) is larger than its padded input");
  static_assert(topology.error != graph_error::invalid_config,
                "mosaiq::network: a layer config is invalid, e.g. out_channels, kernel, stride or scale below 1");
  static_assert(topology.error != graph_error::last_layer_not_op,
                "mosaiq::network: the last layer must compute the output, not be a tap or from");
  static_assert(topology.error != graph_error::output_of_network_input,
                "mosaiq::network: an output layer names the network input; outputs are computed tensors");

  template <std::size_t I>
  using layer = detail::type_at<I, Layers...>;

  static constexpr shape input_shape = Input::dims;
  static constexpr shape output_shape = topology.tensors.back().dims;
  /// Shape of the tensor each layer makes (tap and from: the tensor they name or select).
  static constexpr std::array<shape, layer_count> layer_shapes = [] {
    std::array<shape, layer_count> shapes{};
    for (std::size_t i = 0; i < layer_count; ++i) shapes[i] = topology.layers[i].dims;
    return shapes;
  }();

  /// Shape of layer I's (first) input tensor; for tap and from layers the tensor they name.
  template <std::size_t I>
  static constexpr shape layer_input_shape =
      topology.layers[I].role == layer_role::op ? topology.tensors[std::size_t(topology.layers[I].inputs[0])].dims
                                                : topology.layers[I].dims;

 private:
  using T = element_type;
  static constexpr std::size_t output_tensor = tensor_count - 1;

  template <std::size_t I>
  using types = detail::layer_types<typename detail::planned_layer<layer<I>, Input::bands>::type, T, round,
                                    layer_input_shape<I>, topology.layers[I].dims, max_threads>;

  template <std::size_t... I>
  static constexpr std::array<layer_cost, layer_count> costs(std::index_sequence<I...>) {
    return {[] {
      if constexpr (op_layer<layer<I>>)
        return layer<I>::cost(layer_input_shape<I>, topology.layers[I].dims);
      else
        return layer_cost{};
    }()...};
  }

 public:
  static constexpr std::array<layer_cost, layer_count> layer_costs = costs(std::make_index_sequence<layer_count>{});
  static constexpr std::array<std::uint64_t, layer_count> layer_macs = [] {
    std::array<std::uint64_t, layer_count> macs{};
    for (std::size_t i = 0; i < layer_count; ++i) macs[i] = layer_costs[i].macs;
    return macs;
  }();
  static constexpr std::uint64_t macs = [] {
    std::uint64_t total = 0;
    for (const layer_cost& c : layer_costs) total += c.macs;
    return total;
  }();
  /// A band with less work than this (multiply-accumulates plus output elements) costs more to hand to
  /// another thread than it saves: small layers use fewer bands.
  static constexpr std::uint64_t min_band_work = 8192;

  /// Row bands (tasks) layer I runs in on `threads` threads (at most max_threads count): a pure
  /// function of the shapes and the thread count; 1 for layers that run whole on one thread.
  template <std::size_t I>
  static constexpr int layer_bands(int threads) noexcept {
    if constexpr (!types<I>::splits) {
      return 1;
    } else {
      const std::uint64_t work = layer_macs[I] + topology.layers[I].dims.elements();
      const int useful = static_cast<int>(std::clamp<std::uint64_t>(work / min_band_work, 1, 1024));
      return row_bands::split(types<I>::split_rows, std::min({threads, max_threads, useful})).count;
    }
  }

  /// A layer or row run in B > 1 bands runs as pieces of at least min_piece_rows rows, up to
  /// pieces_per_band of them a band, claimed by B tasks (parallel_pieces): a thread that starts late or is
  /// descheduled holds back one piece, not its whole band. Smaller pieces rebuild more rows at their edges.
  static constexpr int pieces_per_band = 4;
  static constexpr int min_piece_rows = 8;

  // ------------------------------------------------------------------------------------------
  // Row runs. Consecutive op layers of one output height, each after the first row_local, run as one
  // parallel_for on threads: the thread of band t takes band t through every layer of the run, so a run
  // costs one barrier instead of one per layer. Every layer of a run splits the same height into the same
  // bands, so a thread reads rows it wrote itself or rows made before the run; the bytes are layer by
  // layer's. The memory plan keeps every buffer a run touches alive over the whole run (a thread ahead
  // never writes where a slower one still reads) and gives the run one workspace, a slice per thread.
  // That costs memory, so a run is kept only where it does not raise the plan's peak live bytes
  // (active_row_runs). Networks planned for one thread (max_threads 1) have none, and plan exactly as before.

  /// Layers [first, last] of a row run; first == -1: none.
  struct row_run {
    int first = -1, last = -1;
    constexpr bool active() const noexcept { return first >= 0; }
    friend constexpr bool operator==(const row_run&, const row_run&) = default;
  };

 private:
  struct layer_flags {
    bool starts = false;     ///< splits into bands of its output rows
    bool row_local = false;  ///< and reads only the same rows of its inputs
    std::size_t slice_bytes = 0;
  };
  template <std::size_t I>
  static constexpr layer_flags flags_of() {
    if constexpr (op_layer<layer<I>>)
      return {types<I>::splits && types<I>::split_rows == topology.layers[I].dims.height, types<I>::row_local,
              types<I>::slice_bytes};
    else
      return {};
  }
  static constexpr std::array<layer_flags, layer_count> row_flags = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<layer_flags, layer_count>{flags_of<I>()...};
  }
  (std::make_index_sequence<layer_count>{});

 public:
  /// Row runs by layer (tap and from layers inside a run belong to it).
  using run_table = std::array<row_run, layer_count>;

  /// The row run each layer could join, from the shapes alone: the candidates (active_row_runs: those the
  /// plan runs, beside its band chains and within its peak live bytes).
  static constexpr run_table row_runs = [] {
    run_table runs{};
    if (max_threads <= 1) return runs;
    for (int a = 0; a < int(layer_count); ++a) {
      const layer_node& first = topology.layers[std::size_t(a)];
      if (first.role != layer_role::op || !row_flags[std::size_t(a)].starts || first.dims.height < 2) continue;
      int last = a;
      for (int j = a + 1; j < int(layer_count); ++j) {
        const layer_node& node = topology.layers[std::size_t(j)];
        if (node.role != layer_role::op) continue;
        if (!row_flags[std::size_t(j)].row_local || node.dims.height != first.dims.height) break;
        last = j;
      }
      if (last == a) continue;
      for (int l = a; l <= last; ++l) runs[std::size_t(l)] = {a, last};
      a = last;
    }
    return runs;
  }();

  /// Workspace of a row run: one slice per thread, each the largest of its layers' workspaces.
  struct run_workspace {
    std::size_t slice_stride = 0, bytes = 0;
  };
  static constexpr run_workspace row_run_workspace(row_run run) {
    std::size_t slice = 0;
    for (int l = run.first; l <= run.last; ++l) slice = std::max(slice, row_flags[std::size_t(l)].slice_bytes);
    if (slice == 0) return {};
    const int slices = std::max(1, std::min(max_threads, topology.layers[std::size_t(run.first)].dims.height));
    return {align_up(slice), align_up(slice) * std::size_t(slices - 1) + slice};
  }

  /// Row bands of the run that starts at layer First on `threads` threads: as layer_bands, on the run's
  /// work (every layer's multiply-accumulates and output elements).
  template <std::size_t First>
  static constexpr int row_run_bands(int threads) noexcept {
    constexpr row_run run = active_row_runs[First];
    constexpr std::uint64_t work = [] {
      std::uint64_t sum = 0;
      for (int l = run.first; l <= run.last; ++l)
        if (topology.layers[std::size_t(l)].role == layer_role::op)
          sum += layer_macs[std::size_t(l)] + topology.layers[std::size_t(l)].dims.elements();
      return sum;
    }();
    const int useful = static_cast<int>(std::clamp<std::uint64_t>(work / min_band_work, 1, 1024));
    return row_bands::split(topology.layers[First].dims.height, std::min({threads, max_threads, useful})).count;
  }

  /// Filter and bias values of every layer.
  static constexpr std::uint64_t params = [] {
    std::uint64_t total = 0;
    for (const layer_cost& c : layer_costs) total += c.filter_elements + c.bias_elements;
    return total;
  }();
  /// Bytes of filters (8-bit) and biases (int32; int64 in a 16x8 network).
  static constexpr std::uint64_t weight_bytes = [] {
    constexpr std::uint64_t filter_bytes = std::same_as<T, i16> ? 1 : sizeof(T);
    constexpr std::uint64_t bias_bytes = std::same_as<T, i16> ? 8 : 4;
    std::uint64_t total = 0;
    for (const layer_cost& c : layer_costs) total += c.filter_elements * filter_bytes + c.bias_elements * bias_bytes;
    return total;
  }();

  // ------------------------------------------------------------------------------------------
  // Memory plan. Buffers 0..tensor_count-1 hold tensors (index = the first tensor stored there;
  // tensors written in place join their input's buffer); buffer tensor_count + i is layer i's
  // scratch; the last buffers are the band chains' scratch, each shared by its layers. Input and output
  // tensors have no buffer. A map inside a band chain holds only its window of rows.

 private:
  static constexpr int max_band_chains = banding::max_chains;

  struct buffer_layout {
    std::array<int, tensor_count> buffer_of{};
    /// Tensors, then each layer's scratch, then each band chain's shared scratch.
    std::array<live_range, tensor_count + layer_count + max_band_chains> ranges{};
  };

 public:
  // ------------------------------------------------------------------------------------------
  // Banding (net/bands.hpp): which chains of layers run in row bands, chosen by Input::bands.

  using schedule_type = band_schedule<layer_count, tensor_count>;

 private:
  template <std::size_t I>
  static constexpr band_layer band_layer_of() {
    band_layer b;
    if constexpr (op_layer<layer<I>>) {
      constexpr layer_node node = topology.layers[I];
      b.op = true;
      b.input_count = node.input_count;
      b.output = node.output;
      b.height = node.dims.height;
      for (std::size_t k = 0; k < std::size_t(node.input_count); ++k) {
        b.inputs[k] = node.inputs[k];
        b.maps[k] = band_traits<layer<I>, T>::map(topology.tensors[std::size_t(node.inputs[k])].dims, node.dims);
      }
      b.kept_ring = band_resumes_ring<typename types<I>::exec>() && b.maps[0].how == row_map::kind::window &&
                    b.maps[0].stride <= Input::bands.kept_ring_stride;
    }
    return b;
  }
  static constexpr std::array<band_layer, layer_count> band_layers = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<band_layer, layer_count>{band_layer_of<I>()...};
  }
  (std::make_index_sequence<layer_count>{});

 public:
  /// Whether layer l can be part of a band chain (tap and from layers always can).
  static constexpr bool joins(int l) {
    const band_layer& b = band_layers[std::size_t(l)];
    if (!b.op) return true;
    for (int k = 0; k < b.input_count; ++k)
      if (b.maps[std::size_t(k)].how == row_map::kind::whole) return false;
    return true;
  }

  /// Layers [first, last] can run in bands: op layers at both ends and every op between joins. Maps
  /// the chain makes and layers after it read are held whole; the others live in windows.
  static constexpr bool valid_chain(int first, int last) {
    if (first < 0 || last >= int(layer_count) || first >= last) return false;
    if (!band_layers[std::size_t(first)].op || !band_layers[std::size_t(last)].op) return false;
    for (int l = first; l <= last; ++l)
      if (!joins(l)) return false;
    return true;
  }

 private:
  static constexpr schedule_type make_schedule(int first, int last, int band_rows) {
    schedule_type s;
    s.layers = band_layers;
    s.first = first;
    s.last = last;
    s.band_rows = band_rows;
    for (int l = first; l < last; ++l) {
      if (!band_layers[std::size_t(l)].op) continue;
      const auto t = std::size_t(band_layers[std::size_t(l)].output);
      (topology.tensors[t].last_use <= last ? s.windowed : s.kept_whole)[t] = true;
    }
    return s;
  }

  struct chain_choice {
    bool banded = false;
    schedule_type schedule{};
    typename schedule_type::totals totals{};
  };

  /// The chains a plan runs in bands (none: layer by layer), in layer order.
  struct chain_plan {
    int count = 0;
    std::array<chain_choice, max_band_chains> chains{};

    /// The chain layer `l` belongs to, -1 for none.
    constexpr int chain_of(int l) const noexcept {
      for (int c = 0; c < count; ++c)
        if (l >= chains[std::size_t(c)].schedule.first && l <= chains[std::size_t(c)].schedule.last) return c;
      return -1;
    }
    /// This plan with one more chain, kept in layer order.
    constexpr chain_plan with(const chain_choice& chain) const noexcept {
      chain_plan p = *this;
      int at = p.count++;
      for (; at > 0 && p.chains[std::size_t(at - 1)].schedule.first > chain.schedule.first; --at)
        p.chains[std::size_t(at)] = p.chains[std::size_t(at - 1)];
      p.chains[std::size_t(at)] = chain;
      return p;
    }
  };

  static constexpr std::size_t row_bytes(int tensor) {
    const shape d = topology.tensors[std::size_t(tensor)].dims;
    return std::size_t(d.width) * std::size_t(d.channels) * sizeof(T);
  }

  static constexpr chain_choice banded_choice(int first, int last, int band_rows) {
    chain_choice c{true, make_schedule(first, last, band_rows), {}};
    c.totals = c.schedule.measure();
    return c;
  }

  template <std::size_t... I>
  static constexpr std::array<bool, layer_count> in_place_flags(std::index_sequence<I...>) {
    return {types<I>::in_place...};
  }
  template <std::size_t... I>
  static constexpr std::array<std::size_t, layer_count> scratch_sizes(std::index_sequence<I...>) {
    return {types<I>::scratch_bytes...};
  }
  static constexpr auto layer_in_place = in_place_flags(std::make_index_sequence<layer_count>{});
  static constexpr auto layer_scratch = scratch_sizes(std::make_index_sequence<layer_count>{});

  /// Layer I's workspace in a band chain: a slice per thread, each for the most rows it computes in a band.
  template <std::size_t I>
  static constexpr std::size_t band_slice_bytes(int rows) {
    if constexpr (op_layer<layer<I>>)
      return band_scratch_bytes<typename types<I>::exec, layer_input_shape<I>, topology.layers[I].dims>(
          rows, band_layers[I].maps[0].how == row_map::kind::window);
    else
      return 0;
  }
  template <std::size_t I>
  static constexpr std::size_t band_layer_scratch_bytes(int rows) {
    if constexpr (op_layer<layer<I>>)
      return align_up(band_slice_bytes<I>(rows)) * std::size_t(types<I>::slices - 1) + band_slice_bytes<I>(rows);
    else
      return 0;
  }
  /// Whether layer I, in a chain, keeps its ring of built rows from one band to the next (the plan's
  /// banding::with_kept_rings): it runs each band's rows on one thread, in a workspace of its own after the one
  /// the chain's other layers share, and its input window omits the rows the ring holds.
  template <std::size_t I>
  static constexpr bool keeps_ring() {
    return band_layers[I].kept_ring;
  }
  /// A chain's workspace: the largest of its sharing layers', then each ring-keeping layer's own slice (`kept`: of
  /// those before layer `before`).
  struct chain_scratch_parts {
    std::size_t shared = 0, kept = 0;
  };
  static constexpr chain_scratch_parts chain_scratch_split(const chain_choice& c, int before = int(layer_count)) {
    chain_scratch_parts parts;
    detail::for_index_chunks<layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      const auto add = [&]<std::size_t L>(std::integral_constant<std::size_t, L>) {
        if (int(L) < c.schedule.first || int(L) > c.schedule.last) return;
        if (!keeps_ring<L>())
          parts.shared = std::max(parts.shared, band_layer_scratch_bytes<L>(c.totals.max_rows[L]));
        else if (int(L) < before)
          parts.kept += align_up(band_slice_bytes<L>(c.totals.max_rows[L]));
      };
      (add(std::integral_constant<std::size_t, I>{}), ...);
    });
    return parts;
  }
  static constexpr std::size_t chain_scratch_bytes(const chain_choice& c) {
    const chain_scratch_parts parts = chain_scratch_split(c);
    return parts.kept == 0 ? parts.shared : align_up(parts.shared) + parts.kept;
  }

  /// Size and lifetime of tensor t's buffer in a plan: a window of rows inside its chain, whole maps a
  /// chain makes alive from the chain's first step, and maps a later chain reads alive until its last band.
  static constexpr live_range tensor_range(const chain_plan& plan, int t) {
    const tensor_node& tensor = topology.tensors[std::size_t(t)];
    live_range r{tensor.dims.elements() * sizeof(T), tensor.producer, tensor.last_use};
    const int maker = plan.chain_of(tensor.producer);
    if (maker >= 0) {
      const chain_choice& c = plan.chains[std::size_t(maker)];
      r.first = c.schedule.first;  // written band by band from the chain's first step
      if (c.schedule.windowed[std::size_t(t)]) {
        r.bytes = std::size_t(c.totals.capacity[std::size_t(t)]) * row_bytes(t);
        r.last = c.schedule.last;
        return r;
      }
    }
    for (int k = 0; k < plan.count; ++k) {
      const auto& s = plan.chains[std::size_t(k)].schedule;
      if (tensor.producer < s.first && tensor.last_use >= s.first) r.last = std::max(r.last, s.last);
    }
    return r;
  }

  static constexpr bool is_arena_tensor(int t) noexcept { return t > 0 && t < int(output_tensor); }

  /// The input tensor t is written over in place (it takes that input's buffer), -1: a buffer of its own. The
  /// input must die at t's layer and have t's shape. In a row run `run` (not at its first layer) never over a
  /// map made before the run: the run's first layer may still read its rows around another thread's band.
  static constexpr int in_place_source(const chain_plan& plan, int t, row_run run) {
    const tensor_node& tensor = topology.tensors[std::size_t(t)];
    if (!layer_in_place[std::size_t(tensor.producer)] || plan.chain_of(tensor.producer) >= 0) return -1;
    const layer_node& producer = topology.layers[std::size_t(tensor.producer)];
    for (int k = 0; k < producer.input_count; ++k) {
      const int source = producer.inputs[std::size_t(k)];
      const tensor_node& read = topology.tensors[std::size_t(source)];
      const bool run_safe = !run.active() || tensor.producer == run.first || read.producer >= run.first;
      if (is_arena_tensor(source) && read.last_use == tensor.producer && read.dims == tensor.dims && run_safe)
        return source;
    }
    return -1;
  }

  /// Buffers and lifetimes for a plan (layer by layer, or with chains whose inner maps are windows) and the
  /// row runs beside its chains (runs_beside).
  static constexpr buffer_layout make_layout(const chain_plan& plan, const run_table& runs) {
    buffer_layout b;
    b.buffer_of.fill(-1);
    const auto in_chain = [&](int layer) { return plan.chain_of(layer) >= 0; };
    const auto run_of = [&](int layer) { return runs[std::size_t(layer)]; };
    for (int t = 1; t < int(output_tensor); ++t) {
      const int source = in_place_source(plan, t, run_of(topology.tensors[std::size_t(t)].producer));
      b.buffer_of[std::size_t(t)] = source < 0 ? t : b.buffer_of[std::size_t(source)];
      live_range& r = b.ranges[std::size_t(b.buffer_of[std::size_t(t)])];
      const live_range mine = tensor_range(plan, t);
      if (r.bytes == 0) r.first = mine.first;
      r.first = std::min(r.first, mine.first);
      r.bytes = std::max(r.bytes, mine.bytes);
      r.last = std::max(r.last, mine.last);
    }
    for (std::size_t i = 0; i < layer_count; ++i)
      b.ranges[tensor_count + i] = {in_chain(int(i)) ? 0 : layer_scratch[i], int(i), int(i)};
    for (int l = 0; l < int(layer_count); ++l) {
      const row_run run = run_of(l);
      if (!run.active() || run.first != l) continue;
      for (int i = run.first; i <= run.last; ++i) b.ranges[tensor_count + std::size_t(i)].bytes = 0;
      b.ranges[tensor_count + std::size_t(l)] = {row_run_workspace(run).bytes, run.first, run.last};
      for (std::size_t t = 0; t < tensor_count; ++t) {
        live_range& r = b.ranges[t];
        if (r.bytes == 0 || r.first > run.last || r.last < run.first) continue;
        r.first = std::min(r.first, run.first);
        r.last = std::max(r.last, run.last);
      }
    }
    for (int c = 0; c < plan.count; ++c) {
      const chain_choice& chain = plan.chains[std::size_t(c)];
      b.ranges[tensor_count + layer_count + std::size_t(c)] = {chain_scratch_bytes(chain), chain.schedule.first,
                                                               chain.schedule.last};
    }
    return b;
  }

  static constexpr chain_plan layer_by_layer{};
  static constexpr run_table no_row_runs{};

  template <std::size_t I>
  static constexpr bool splits_step(int threads) noexcept {
    if constexpr (chains.chain_of(int(I)) >= 0 || !op_layer<layer<I>>)
      return false;
    else if constexpr (active_row_runs[I].active())
      return int(I) == active_row_runs[I].first && row_run_bands<I>(threads) > 1;
    else
      return layer_bands<I>(threads) > 1;
  }

  /// The row runs a plan can run: row_runs less those with a layer in one of its band chains.
  static constexpr run_table runs_beside(const chain_plan& plan) {
    run_table runs{};
    for (int l = 0; l < int(layer_count); ++l) {
      const row_run run = row_runs[std::size_t(l)];
      bool beside = run.active();
      for (int i = run.first; beside && i <= run.last; ++i) beside = plan.chain_of(i) < 0;
      if (beside) runs[std::size_t(l)] = run;
    }
    return runs;
  }

  /// Bytes a chain writes (its layers' outputs), the base of the overhead figure.
  static constexpr std::uint64_t chain_written_bytes(int first, int last) {
    std::uint64_t bytes = 0;
    for (int l = first; l <= last; ++l)
      if (band_layers[std::size_t(l)].op) bytes += topology.layers[std::size_t(l)].dims.elements() * sizeof(T);
    return bytes;
  }

 public:
  /// Cost of one layer step of a band (a kernel call and its barrier), in bytes moved: the overhead
  /// model of the automatic choice counts each step as this many bytes of extra work.
  static constexpr std::uint64_t band_step_cost_bytes = 4096;

 private:
  /// Bytes of extra work of a chain: rows its windows move down plus band_step_cost_bytes per layer
  /// step beyond the layer-by-layer ones.
  static constexpr std::uint64_t overhead_bytes(const chain_choice& c) {
    std::uint64_t moved = 0;
    for (std::size_t t = 0; t < tensor_count; ++t) moved += c.totals.moved[t] * row_bytes(int(t));
    std::uint64_t layer_ops = 0;
    for (int l = c.schedule.first; l <= c.schedule.last; ++l) layer_ops += band_layers[std::size_t(l)].op ? 1 : 0;
    const std::uint64_t extra_steps = c.totals.layer_steps - std::min(c.totals.layer_steps, layer_ops);
    return moved + extra_steps * band_step_cost_bytes;
  }
  static constexpr double overhead_percent(const chain_choice& c) {
    const double written = double(chain_written_bytes(c.schedule.first, c.schedule.last));
    return !c.banded || written == 0 ? 0 : 100.0 * double(overhead_bytes(c)) / written;
  }

 public:
  /// Overhead of a banded plan against layer by layer, in percent of the bytes its chains write.
  static constexpr double overhead_percent(const chain_plan& plan) {
    std::uint64_t extra = 0, written = 0;
    for (int c = 0; c < plan.count; ++c) {
      const chain_choice& chain = plan.chains[std::size_t(c)];
      extra += overhead_bytes(chain);
      written += chain_written_bytes(chain.schedule.first, chain.schedule.last);
    }
    return written == 0 ? 0 : 100.0 * double(extra) / double(written);
  }

 private:
  /// Steps of the plan: one per layer, and one after the last for the output taps read at the end.
  static constexpr std::size_t step_count = layer_count + 1;

  /// Live bytes at each step in [from, to] of a layout's buffers (0 at the other steps).
  static constexpr std::array<std::size_t, step_count> live_bytes(const buffer_layout& b, int from, int to) {
    std::array<std::size_t, step_count> live{};
    for (const live_range& r : b.ranges) {
      const std::size_t bytes = align_up(r.bytes);
      if (bytes == 0) continue;
      for (int step = std::max(r.first, from); step <= std::min(r.last, to); ++step) live[std::size_t(step)] += bytes;
    }
    return live;
  }

  /// A plan's live bytes as adding a chain [first, last] sees them: the most live at the steps before
  /// `first` (before[first]) and from `last + 1` on (after[last + 1]). Adding a chain changes only the
  /// buffers of the steps it spans: its maps' windows and lifetimes (from its first step, until its last),
  /// the inputs it reads (kept until its last band), its workspace (over its steps) and its layers' own
  /// (none); a map a chain layer wrote in place now has a buffer of its own, of the same size.
  struct step_peaks {
    std::array<std::size_t, step_count + 1> before{}, after{};
    std::size_t peak = 0;
  };
  static constexpr step_peaks peaks_of(const chain_plan& plan) {
    const std::array<std::size_t, step_count> live = live_bytes(make_layout(plan, no_row_runs), 0, int(step_count) - 1);
    step_peaks p;
    for (std::size_t step = 0; step < step_count; ++step) p.before[step + 1] = std::max(p.before[step], live[step]);
    for (std::size_t step = step_count; step-- > 0;) p.after[step] = std::max(p.after[step + 1], live[step]);
    p.peak = p.after[0];
    return p;
  }

  /// Peak live bytes of `plan` with chain `c` added, from `plan`'s peaks_of(): the steps of c alone re-counted.
  static constexpr std::size_t peak_with(const chain_plan& plan, const step_peaks& outside, const chain_choice& c) {
    const int first = c.schedule.first, last = c.schedule.last;
    const std::array<std::size_t, step_count> inside = live_bytes(make_layout(plan.with(c), no_row_runs), first, last);
    std::size_t peak = std::max(outside.before[std::size_t(first)], outside.after[std::size_t(last + 1)]);
    for (int step = first; step <= last; ++step) peak = std::max(peak, inside[std::size_t(step)]);
    return peak;
  }

  /// The smallest band height of chain [first, last] within the overhead bound (none: not banded).
  /// Taller bands move fewer rows per row made and take fewer steps, so the figure falls as the
  /// height grows: a bisection over heights below the map's.
  static constexpr chain_choice best_band_rows(int first, int last, int max_percent) {
    int low = 1, high = band_layers[std::size_t(last)].height - 1;
    chain_choice best{};
    while (low <= high) {
      const int rows = low + (high - low) / 2;
      const chain_choice c = banded_choice(first, last, rows);
      if (overhead_percent(c) <= double(max_percent)) {
        best = c;
        high = rows - 1;
      } else {
        low = rows + 1;
      }
    }
    return best;
  }

  /// Where a chain may end in the automatic choice (its last map is held whole): the last op layer of
  /// a run of joining layers, or one whose map is smaller than the next op layer's.
  static constexpr bool chain_end_candidate(int last) {
    const auto bytes = [](int l) { return topology.layers[std::size_t(l)].dims.elements(); };
    for (int next = last + 1; next < int(layer_count); ++next) {
      if (!joins(next)) return true;
      if (band_layers[std::size_t(next)].op) return bytes(last) < bytes(next);
    }
    return true;
  }

  /// Whether [first, last] overlaps a chain of the plan.
  static constexpr bool overlaps(const chain_plan& plan, int first, int last) {
    for (int c = 0; c < plan.count; ++c) {
      const auto& s = plan.chains[std::size_t(c)].schedule;
      if (first <= s.last && s.first <= last) return true;
    }
    return false;
  }

  /// Calls fn(first, last) for every chain the automatic choice tries beside `plan`, by first layer, then
  /// last: chains start a run of joining layers, or where a chain of the plan ended, and end where
  /// chain_end_candidate() allows, before any chain of the plan.
  template <class Fn>
  static constexpr void for_each_candidate(const chain_plan& plan, Fn&& fn) {
    for (int first = 0; first < int(layer_count); ++first) {
      if (!band_layers[std::size_t(first)].op || !joins(first) || plan.chain_of(first) >= 0) continue;
      const int previous = first - 1;
      if (previous >= 0 && joins(previous) && band_layers[std::size_t(previous)].op && plan.chain_of(previous) < 0)
        continue;  // not the start of a run of joining layers (nor right after a chain)
      for (int last = first + 1; last < int(layer_count) && joins(last) && !overlaps(plan, first, last); ++last)
        if (band_layers[std::size_t(last)].op && chain_end_candidate(last) && valid_chain(first, last)) fn(first, last);
    }
  }

  /// A candidate chain and its band height from best_band_rows() (0: none within the bound).
  struct candidate {
    static constexpr int unknown = -1;  ///< not evaluated yet
    int first = 0, last = 0, band_rows = unknown;
  };
  /// The candidates beside no chain: every later round's candidates are these, less those overlapping
  /// the plan, and those starting after a chain of the plan.
  static constexpr std::size_t first_round_candidates = [] {
    std::size_t count = 0;
    for_each_candidate(layer_by_layer, [&](int, int) { ++count; });
    return count;
  }();
  using candidate_table = std::array<candidate, first_round_candidates>;

  /// The chain that, added to `plan`, gives the smallest peak live bytes below `plan`'s (none: not
  /// banded). Band heights come from `known` (the first round's candidates, in candidate order) where a
  /// round found them; the first round (an empty plan) lists them. Only the candidate's steps are
  /// re-counted (peak_with), and only for candidates that can lower the peak.
  static constexpr chain_choice best_added_chain(const chain_plan& plan, int max_percent, candidate_table& known) {
    const step_peaks outside = peaks_of(plan);
    chain_choice best{};
    std::size_t best_peak = outside.peak, at = 0;
    const bool first_round = plan.count == 0;
    for_each_candidate(plan, [&](int first, int last) {
      const auto before = [&](const candidate& k) { return k.first < first || (k.first == first && k.last < last); };
      candidate* entry = nullptr;
      if (first_round) {
        entry = &known[at++];
        *entry = {first, last, candidate::unknown};
      } else {
        while (at < known.size() && before(known[at])) ++at;
        if (at < known.size() && known[at].first == first && known[at].last == last) entry = &known[at];
      }
      // The steps outside the chain keep their live bytes: a chain whose outside already reaches the best
      // peak cannot lower it, whatever its band height.
      if (std::max(outside.before[std::size_t(first)], outside.after[std::size_t(last + 1)]) >= best_peak) return;
      chain_choice c{};
      if (entry != nullptr && entry->band_rows != candidate::unknown) {
        if (entry->band_rows > 0) c = banded_choice(first, last, entry->band_rows);
      } else {
        c = best_band_rows(first, last, max_percent);
        if (entry != nullptr) entry->band_rows = c.banded ? c.schedule.band_rows : 0;
      }
      if (!c.banded) return;
      const std::size_t peak = peak_with(plan, outside, c);
      if (peak < best_peak) best = c, best_peak = peak;
    });
    return best;
  }

  /// Chains the automatic choice adds at most: as many as a plan may have.
  static constexpr int max_automatic_chains = max_band_chains;

  /// banding::automatic(): chains added one at a time (at most max_automatic_chains), each the one that
  /// lowers the peak live bytes most (ties: the earlier, shorter chain), until none lowers it.
  static constexpr chain_plan automatic_choice(int max_percent) {
    chain_plan plan = layer_by_layer;
    candidate_table known{};
    while (plan.count < max_automatic_chains) {
      const chain_choice c = best_added_chain(plan, max_percent, known);
      if (!c.banded) break;
      plan = plan.with(c);
    }
    return plan;
  }

  /// banding::chain(): every chain valid, disjoint, in layer order, at most max_band_chains.
  static constexpr bool valid_forced_chains(const banding& spec) {
    if (spec.chain_count < 1 || spec.chain_count > max_band_chains) return false;
    for (int c = 0; c < spec.chain_count; ++c) {
      const banding::chain_spec& s = spec.chains[std::size_t(c)];
      if (!valid_chain(s.first_layer, s.last_layer) || s.band_rows < 1) return false;
      if (c > 0 && spec.chains[std::size_t(c - 1)].last_layer >= s.first_layer) return false;
    }
    return true;
  }

  static constexpr chain_plan choose_chains() {
    constexpr banding spec = Input::bands;
    if constexpr (spec.how == banding::choice::chain) {
      static_assert(valid_forced_chains(spec),
                    "mosaiq::banding::chain: the layers cannot run in bands: at most banding::max_chains chains, in "
                    "layer order and disjoint, band_rows at least 1; both ends of a chain op layers (first < last), "
                    "every op between joining (no global pool, no resize without a window entry point...)");
      chain_plan plan;
      for (int c = 0; c < spec.chain_count; ++c) {
        const banding::chain_spec& s = spec.chains[std::size_t(c)];
        plan = plan.with(banded_choice(s.first_layer, s.last_layer, s.band_rows));
      }
      return plan;
    } else if constexpr (spec.how == banding::choice::automatic) {
      return automatic_choice(spec.max_overhead_percent);
    } else {
      return layer_by_layer;
    }
  }

  /// The row runs a plan runs and its peak live bytes without them.
  struct run_choice {
    run_table runs{};
    std::size_t peak_without_runs = 0;  ///< 0: no candidate, the plan is the same without runs
  };

  /// Aligned bytes of a plan's tensor buffers by step, as prefix sums over the tensors' lifetimes (tensor_range):
  /// born[s] of those born before step s, died[s] of those dead before step s. The tensors alive at some step of
  /// [first, last] hold born[last + 1] - died[first].
  struct tensor_step_sums {
    std::array<std::size_t, step_count + 1> born{}, died{};
  };
  static constexpr tensor_step_sums tensor_sums(const chain_plan& plan) {
    std::array<std::size_t, step_count> born_at{}, dying_at{};
    for (int t = 1; t < int(output_tensor); ++t) {
      const live_range r = tensor_range(plan, t);
      born_at[std::size_t(r.first)] += align_up(r.bytes);
      dying_at[std::size_t(r.last)] += align_up(r.bytes);
    }
    tensor_step_sums sums;
    for (std::size_t step = 0; step < step_count; ++step) {
      sums.born[step + 1] = sums.born[step] + born_at[step];
      sums.died[step + 1] = sums.died[step] + dying_at[step];
    }
    return sums;
  }

  /// Live bytes at every step of row run `run` in `plan` (the same at each: every buffer a step touches lives over
  /// the whole run, and every layer's workspace is the run's): the tensors alive at one of its steps, less those
  /// written in place over an input alive there too (one buffer for both), and the run's workspace. Layers outside
  /// the run and band chains have no buffer of their own over its steps. Linear in the run's length.
  static constexpr std::size_t run_live_bytes(const chain_plan& plan, const tensor_step_sums& sums, row_run run) {
    std::size_t bytes = sums.born[std::size_t(run.last + 1)] - sums.died[std::size_t(run.first)];
    for (int l = run.first; l <= run.last; ++l) {
      const int t = topology.layers[std::size_t(l)].output;
      if (topology.layers[std::size_t(l)].role == layer_role::op && is_arena_tensor(t) &&
          in_place_source(plan, t, run) >= 0)
        bytes -= align_up(tensor_range(plan, t).bytes);
    }
    return bytes + align_up(row_run_workspace(run).bytes);
  }

  /// The runs beside the plan's chains that keep its peak live bytes. A run keeps every buffer that one of its
  /// steps touches alive over all its steps and gives its layers one workspace, so its steps hold more live
  /// bytes than layer by layer; a run joins only where they stay within the busiest step of the plan without
  /// runs. Where a candidate does not, its longest pieces that do run (from its first op layer on, greedily).
  /// A run changes the live bytes of its own steps only (the lifetimes it stretches and the in-place decisions it
  /// changes are inside it; the buffers of one in-place sequence have one size), so each is decided alone.
  static constexpr run_choice choose_row_runs(const chain_plan& plan) {
    run_choice choice;
    const run_table candidates = runs_beside(plan);
    if (std::ranges::none_of(candidates, [](const row_run& r) { return r.active(); })) return choice;
    const std::array<std::size_t, step_count> without =
        live_bytes(make_layout(plan, no_row_runs), 0, int(step_count) - 1);
    choice.peak_without_runs = *std::ranges::max_element(without);
    const tensor_step_sums sums = tensor_sums(plan);
    const auto is_op = [](int l) { return topology.layers[std::size_t(l)].role == layer_role::op; };
    const auto fits = [&](row_run run) { return run_live_bytes(plan, sums, run) <= choice.peak_without_runs; };
    for (int l = 0; l < int(layer_count); ++l) {
      const row_run candidate = candidates[std::size_t(l)];
      if (!candidate.active() || candidate.first != l) continue;
      for (int first = candidate.first; first < candidate.last; ++first) {
        if (!is_op(first)) continue;
        // The live bytes only grow with the run's length (each step adds tensors and workspace).
        int last = -1;
        for (int end = first + 1; end <= candidate.last && (!is_op(end) || fits({first, end})); ++end)
          if (is_op(end)) last = end;
        if (last < 0) continue;
        for (int i = first; i <= last; ++i) choice.runs[std::size_t(i)] = {first, last};
        first = last;
      }
    }
    return choice;
  }

  static constexpr chain_plan chains = choose_chains();
  static constexpr run_choice row_run_choice = choose_row_runs(chains);

 public:
  /// The row runs the plan runs (row_runs beside its band chains and within its peak live bytes), by layer.
  static constexpr run_table active_row_runs = row_run_choice.runs;

 private:
  static constexpr buffer_layout layout = make_layout(chains, active_row_runs);

 public:
  /// parallel_for calls (one barrier each) of a run() on `threads` threads outside band chains: layers
  /// and row runs in more than one band.
  static constexpr int parallel_steps(int threads) noexcept {
    int steps = 0;
    detail::for_index_chunks<layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      ((steps += splits_step<I>(threads) ? 1 : 0), ...);
    });
    return steps;
  }

 private:
  /// Rows each map's window holds over every chain.
  static constexpr std::array<int, tensor_count> all_window_rows() {
    std::array<int, tensor_count> rows{};
    for (int c = 0; c < chains.count; ++c)
      for (std::size_t t = 0; t < tensor_count; ++t)
        rows[t] = std::max(rows[t], chains.chains[std::size_t(c)].totals.capacity[t]);
    return rows;
  }

 public:
  /// One chain of the plan: layers [first, last] in `count` bands of `rows` output rows of the last.
  struct band_chain {
    int first = -1, last = -1, rows = 0, count = 0;
  };
  /// The chains that run in bands, in layer order (band_chain_count of them).
  static constexpr int band_chain_count = chains.count;
  static constexpr std::array<band_chain, max_band_chains> band_chains = [] {
    std::array<band_chain, max_band_chains> out{};
    for (int c = 0; c < chains.count; ++c) {
      const auto& s = chains.chains[std::size_t(c)].schedule;
      out[std::size_t(c)] = {s.first, s.last, s.band_rows, s.band_count()};
    }
    return out;
  }();
  /// Whether a chain runs in bands; the first chain's layers and bands (band_chains has every chain).
  static constexpr bool banded = chains.count > 0;
  static constexpr int band_first_layer = band_chains[0].first;
  static constexpr int band_last_layer = band_chains[0].last;
  static constexpr int band_rows = band_chains[0].rows;
  static constexpr int band_count = band_chains[0].count;
  /// Rows each map's window holds (0: the map is whole or not in a chain).
  static constexpr std::array<int, tensor_count> window_rows = all_window_rows();
  /// The plan's overhead figure (see overhead_percent).
  static constexpr double band_overhead_percent = overhead_percent(chains);

  /// Every buffer's size and lifetime, and where the plan puts it.
  static constexpr auto memory_ranges = layout.ranges;
  static constexpr auto memory = plan_memory(memory_ranges);
  static_assert(is_valid_plan(memory_ranges, memory), "mosaiq::network: the memory plan overlaps live buffers");

  static constexpr std::size_t arena_bytes = memory.arena_bytes;
  static constexpr std::size_t peak_live_bytes = memory.peak_live_bytes;
  /// Peak live bytes of the same plan with every layer a step of its own (no row runs): the runs keep within it.
  static constexpr std::size_t peak_live_bytes_without_runs =
      row_run_choice.peak_without_runs == 0 ? peak_live_bytes : row_run_choice.peak_without_runs;
  static_assert(peak_live_bytes <= peak_live_bytes_without_runs, "mosaiq::network: the row runs raised the peak");
  /// The arena of the same plan without row runs.
  static constexpr std::size_t arena_bytes_without_runs =
      plan_memory(make_layout(chains, no_row_runs).ranges).arena_bytes;
  /// peak_live_bytes / arena_bytes: 1 is the best any plan can do.
  static constexpr double plan_efficiency =
      arena_bytes == 0 ? 1.0 : static_cast<double>(peak_live_bytes) / static_cast<double>(arena_bytes);

  /// The same layers on another plan: `Net::with_banding<banding::chain(0, 9, 2)>` (generated networks too).
  template <banding B>
  using with_banding = network<typename Input::template with_banding<B>, Layers...>;
  /// The same layers planned for runs on up to N threads: `Net::with_max_threads<4>` (generated networks too).
  template <int N>
  using with_max_threads = network<typename Input::template with_max_threads<N>, Layers...>;
  /// The same layers with another activation element: `Net::with_element<mosaiq::i16>` is the 16x8 twin of an 8-bit
  /// network (generated networks too), as tools::reference_16x8<Net> runs it.
  template <network_element E>
  using with_element = network<typename Input::template with_element<E>, Layers...>;

  /// The same figures for the network run layer by layer (banding::off(): every map whole, the GEMMs'
  /// speed-default blocks), and what the plan saves (0 without bands).
  static constexpr std::size_t layer_by_layer_arena_bytes = [] {
    if constexpr (Input::bands == banding::off())
      return arena_bytes;
    else
      return with_banding<banding::off()>::arena_bytes;
  }();
  static constexpr std::size_t layer_by_layer_peak_live_bytes = [] {
    if constexpr (Input::bands == banding::off())
      return peak_live_bytes;
    else
      return with_banding<banding::off()>::peak_live_bytes;
  }();
  static constexpr std::size_t band_saved_bytes =
      layer_by_layer_arena_bytes > arena_bytes ? layer_by_layer_arena_bytes - arena_bytes : 0;

  /// Buffer index of a tensor in memory_ranges, -1 for the input and output.
  static constexpr int buffer_of(std::size_t tensor) noexcept { return layout.buffer_of[tensor]; }
  static constexpr std::size_t tensor_offset(std::size_t tensor) noexcept {
    return memory.offsets[std::size_t(layout.buffer_of[tensor])];
  }

  // ------------------------------------------------------------------------------------------
  // Weights and preparation.

  template <std::size_t I>
  using layer_weights = typename types<I>::weights;

 private:
  template <std::size_t... I>
  static auto weights_tuple(std::index_sequence<I...>) -> detail::indexed_tuple<layer_weights<I>...>;
  template <std::size_t... I>
  static auto states_tuple(std::index_sequence<I...>) -> detail::indexed_tuple<typename types<I>::state...>;

 public:
  /// Everything a network needs besides activations: the input quantization and each layer's
  /// filters, biases, filter scales and output quantization (tap and from layers hold nothing).
  struct weights {
    quant_params input{};
    decltype(weights_tuple(std::make_index_sequence<layer_count>{})) layers{};

    template <std::size_t I>
    constexpr layer_weights<I>& layer() noexcept {
      return detail::element<I>(layers);
    }
    template <std::size_t I>
    constexpr const layer_weights<I>& layer() const noexcept {
      return detail::element<I>(layers);
    }
  };

  /// What prepare() derives from the weights once; refers to the weights, which must outlive it.
  class prepared {
   public:
    using states_type = decltype(states_tuple(std::make_index_sequence<layer_count>{}));
    prepared(const weights& w, states_type&& states, const std::array<quant_params, tensor_count>& quant)
        : weights_(&w), states_(std::move(states)), quant_(quant) {}
    const weights& source() const noexcept { return *weights_; }
    template <std::size_t I>
    const auto& state() const noexcept {
      return detail::element<I>(states_);
    }
    /// Quantization of tensor `t` (0: the input; tensor_count - 1: the output).
    quant_params tensor_quant(std::size_t t) const noexcept { return quant_[t]; }

   private:
    const weights* weights_;
    states_type states_;
    std::array<quant_params, tensor_count> quant_;
  };

  /// Load-time step: requantization bundles, tables, and (with fast executors) packed filters.
  /// Quantization flows along the tensors: each layer's inputs carry their producers' output
  /// quantization (the network input: weights.input).
  static prepared prepare(const weights& w) {
    std::array<quant_params, tensor_count> quant{};
    quant[0] = w.input;
    return prepare_layers(w, quant, std::make_index_sequence<layer_count>{});
  }

  // ------------------------------------------------------------------------------------------
  // Named tensors and extra outputs (layers::output).

  /// Tensor id of a tap or output layer's name; a name no layer gives does not compile.
  template <fixed_string Name>
  static constexpr std::size_t tensor_named = [] {
    for (std::size_t i = 0; i < topology.name_count; ++i)
      if (topology.names[i].name == Name.view()) return static_cast<std::size_t>(topology.names[i].tensor);
    return tensor_count;
  }();

  /// Shape of the tensor a tap or output layer names.
  template <fixed_string Name>
  static constexpr shape tensor_shape = [] {
    static_assert(tensor_named<Name> < tensor_count, "mosaiq::network: no tap or output layer has this name");
    return topology.tensors[tensor_named<Name>].dims;
  }();

  /// Number of layers::output in the list.
  static constexpr std::size_t extra_output_count = [] {
    std::size_t n = 0;
    for (std::size_t i = 0; i < topology.name_count; ++i) n += topology.names[i].output ? 1 : 0;
    return n;
  }();

  /// An extra output after run(): a view into the arena, valid until the arena is reused.
  template <fixed_string Name>
  static tensor_view<const T> output_view(std::span<const std::byte> arena) noexcept {
    constexpr std::size_t t = tensor_named<Name>;
    static_assert(t < tensor_count, "mosaiq::network::output_view: no output layer has this name");
    static_assert(is_output_name<Name>(),
                  "mosaiq::network::output_view: the name is a tap, not an output layer; "
                  "its memory may be reused before run() returns");
    return tensor_view<const T>(reinterpret_cast<const T*>(arena.data() + tensor_offset(t)), topology.tensors[t].dims);
  }

  /// Quantization of an extra output (or of any tapped tensor).
  template <fixed_string Name>
  static quant_params output_quant(const prepared& p) noexcept {
    static_assert(tensor_named<Name> < tensor_count, "mosaiq::network: no tap or output layer has this name");
    return p.tensor_quant(tensor_named<Name>);
  }

 private:
  template <fixed_string Name>
  static constexpr bool is_output_name() noexcept {
    for (std::size_t i = 0; i < topology.name_count; ++i)
      if (topology.names[i].name == Name.view()) return topology.names[i].output;
    return false;
  }

 public:
  // ------------------------------------------------------------------------------------------
  // Running.

  /// Called around every op layer by run_observed (profilers, debug checks).
  struct no_observer {
    void before(std::size_t) const noexcept {}
    void after(std::size_t, std::span<std::byte>) const noexcept {}
  };

  /// Computes the network. `input` and `output` have the network's shapes and batch 1 (any
  /// pixel stride); `arena` has at least arena_bytes bytes, 64-byte aligned. Misuse is reported
  /// through mosaiq::require and nothing is written. No heap allocation.
  static void run(const prepared& p, tensor_view<const T> input, tensor_view<T> output, std::span<std::byte> arena) {
    run_observed(p, input, output, arena, no_observer{});
  }

  /// The same on the executor's threads (at most max_threads of them): layer by layer, each split
  /// into row bands, one parallel_for (and so one barrier) per layer. Bit-identical to run().
  template <parallel_executor E>
  static void run(const prepared& p, tensor_view<const T> input, tensor_view<T> output, std::span<std::byte> arena,
                  E& exec) {
    run_observed(p, input, output, arena, no_observer{}, exec);
  }

  template <class Observer>
  static void run_observed(const prepared& p, tensor_view<const T> input, tensor_view<T> output,
                           std::span<std::byte> arena, Observer&& observer) {
    serial_executor serial;
    run_observed(p, input, output, arena, observer, serial);
  }

  template <class Observer, parallel_executor E>
  static void run_observed(const prepared& p, tensor_view<const T> input, tensor_view<T> output,
                           std::span<std::byte> arena, Observer&& observer, E& exec) {
    if (!check_run_arguments(input, output, arena)) return;
    const int threads = std::clamp(static_cast<int>(exec.thread_count()), 1, max_threads);
    detail::for_index_chunks<layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      (run_step<I>(p, input, output, arena, observer, exec, threads), ...);
    });
  }

  /// Debug run: before the first layer and after every layer, every arena byte that holds no
  /// live tensor is overwritten with 0xA5, so a plan that let a layer read dead memory changes
  /// the output.
  static void run_poisoning_dead_memory(const prepared& p, tensor_view<const T> input, tensor_view<T> output,
                                        std::span<std::byte> arena) {
    if (arena.size() >= arena_bytes) poison_dead_memory(arena, -1);
    struct poisoner {
      void before(std::size_t) const noexcept {}
      void after(std::size_t layer, std::span<std::byte> a) const noexcept { poison_dead_memory(a, int(layer)); }
      // Inside a band chain every chain buffer lives until the last band's last layer.
      void after_band_step(std::size_t layer, std::span<std::byte> a, bool chain_done) const noexcept {
        const int chain = chains.chain_of(int(layer));
        poison_dead_memory(a, chain_done ? int(layer) : chains.chains[std::size_t(chain)].schedule.first);
      }
    };
    run_observed(p, input, output, arena, poisoner{});
  }

  // ------------------------------------------------------------------------------------------
  // Weights blobs: a header naming the element type, input shape and every layer's kind and
  // output shape, then each layer's weight fields in order, native byte order.

 private:
  static constexpr std::size_t header_size() {
    std::size_t bytes = 8 + 4 * 5 + 12;
    detail::for_index_chunks<layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      bytes += ((4 + layer<I>::kind.size() + 12 + 8) + ... + 0);
    });
    return bytes;
  }
  static constexpr std::size_t payload_size() {
    std::size_t bytes = 8;
    detail::for_index_chunks<layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      bytes += (detail::weights_blob_bytes<layer_weights<I>> + ... + 0);
    });
    return bytes;
  }
  static constexpr std::size_t header_bytes = header_size();

 public:
  static constexpr std::size_t blob_bytes = header_bytes + payload_size();

  /// Writes the blob into `blob` (at least blob_bytes); returns the bytes written, 0 on misuse.
  static std::size_t save(const weights& w, std::span<std::byte> blob) {
    if (!require(blob.size() >= blob_bytes, errc::invalid_argument, "network::save: blob buffer is too small"))
      return 0;
    detail::byte_writer out{blob.data()};
    write_header(out);
    out.field(w.input);
    detail::for_index_chunks<layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      (std::apply([&](const auto&... f) { (out.field(f), ...); }, w.template layer<I>().fields()), ...);
    });
    return out.position;
  }

  /// Reads a blob written by save() for this network into `w`. A blob that is not a weights blob, or is for
  /// another element type (u8, i8, i16), rounding, layer list or shape, or is truncated, is reported as
  /// errc::blob_mismatch with what differs, and leaves `w` untouched.
  static bool load(std::span<const std::byte> blob, weights& w) {
    std::array<std::byte, header_bytes> expected{};
    detail::byte_writer header{expected.data()};
    write_header(header);
    if (!check_blob_prefix(blob, expected) ||
        !require(blob.size() == blob_bytes, errc::blob_mismatch,
                 "network::load: blob size differs from blob_bytes (truncated, or for another layer list)") ||
        !require(std::memcmp(blob.data(), expected.data(), header_bytes) == 0, errc::blob_mismatch,
                 "network::load: blob header names another layer list or shapes"))
      return false;
    detail::byte_reader in{blob.data(), header_bytes};
    in.field(w.input);
    detail::for_index_chunks<layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      (std::apply([&](auto&... f) { (in.field(f), ...); }, w.template layer<I>().fields()), ...);
    });
    return true;
  }

 private:
  // The header's first fields: magic (8 bytes), then version, byte order, element, rounding as uint32.
  static constexpr std::size_t prefix_words = 4, prefix_bytes = 8 + 4 * prefix_words;
  static constexpr std::uint32_t element_code = std::is_same_v<T, u8> ? 0 : std::is_same_v<T, i8> ? 1 : 2;

  /// Whether `blob` starts as this network's blobs do; says what differs otherwise (the element by name, so that
  /// an 8-bit blob given to a 16x8 network, or the reverse, says so).
  static bool check_blob_prefix(std::span<const std::byte> blob, const std::array<std::byte, header_bytes>& expected) {
    if (!require(blob.size() >= prefix_bytes && std::memcmp(blob.data(), expected.data(), 8) == 0, errc::blob_mismatch,
                 "network::load: not a mosaiq weights blob (no MOSAIQNW header)"))
      return false;
    std::array<std::uint32_t, prefix_words> got{}, want{};
    std::memcpy(got.data(), blob.data() + 8, sizeof got);
    std::memcpy(want.data(), expected.data() + 8, sizeof want);
    constexpr std::array<const char*, 3> element_messages = {
        "network::load: the blob is for a u8 network, not this network's element type",
        "network::load: the blob is for an i8 network, not this network's element type",
        "network::load: the blob is for an i16 (16x8) network, not this network's element type"};
    return require(got[0] == want[0], errc::blob_mismatch, "network::load: blob of another format version") &&
           require(got[1] == want[1], errc::blob_mismatch, "network::load: blob written in another byte order") &&
           require(got[2] == want[2], errc::blob_mismatch,
                   got[2] < element_messages.size() ? element_messages[got[2]]
                                                    : "network::load: blob of an unknown element type") &&
           require(got[3] == want[3], errc::blob_mismatch, "network::load: blob for another rounding mode");
  }

  static void write_header(detail::byte_writer& out) {
    const char magic[8] = {'M', 'O', 'S', 'A', 'I', 'Q', 'N', 'W'};
    const std::uint32_t version = 1, byte_order = 0x01020304, element = element_code;
    const auto layers = static_cast<std::uint32_t>(layer_count), rounding_mode = static_cast<std::uint32_t>(round);
    out.put(magic, sizeof magic);
    for (const std::uint32_t v : {version, byte_order, element, rounding_mode, layers}) out.put(&v, sizeof v);
    put_shape(out, input_shape);
    detail::for_index_chunks<layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      (put_layer_header<I>(out), ...);
    });
  }
  static void put_shape(detail::byte_writer& out, shape s) {
    for (const std::int32_t v : {s.height, s.width, s.channels}) out.put(&v, sizeof v);
  }
  template <std::size_t I>
  static void put_layer_header(detail::byte_writer& out) {
    const auto kind_size = static_cast<std::uint32_t>(layer<I>::kind.size());
    out.put(&kind_size, sizeof kind_size);
    out.put(layer<I>::kind.data(), kind_size);
    put_shape(out, layer_shapes[I]);
    const std::uint64_t payload = detail::weights_blob_bytes<layer_weights<I>>;
    out.put(&payload, sizeof payload);
  }

  template <std::size_t... I>
  static prepared prepare_layers(const weights& w, std::array<quant_params, tensor_count>& quant,
                                 std::index_sequence<I...>) {
    // Braced initializers run left to right, so each layer sees its inputs' quantization.
    typename prepared::states_type states{{prepare_layer<I>(w, quant)}...};
    return prepared(w, std::move(states), quant);
  }

  template <std::size_t I>
  static typename types<I>::state prepare_layer(const weights& w, std::array<quant_params, tensor_count>& quant) {
    if constexpr (op_layer<layer<I>>) {
      constexpr layer_node node = topology.layers[I];
      constexpr std::size_t arity = layer<I>::inputs.size();
      std::array<quant_params, arity> inputs{};
      for (std::size_t k = 0; k < arity; ++k) inputs[k] = quant[std::size_t(node.inputs[k])];
      auto state = types<I>::exec::prepare(w.template layer<I>(), inputs);
      quant[std::size_t(node.output)] = state.output;
      return state;
    } else {
      return {};
    }
  }

  static bool check_run_arguments(const tensor_view<const T>& input, const tensor_view<T>& output,
                                  std::span<std::byte> arena) {
    if (!check_view(input, "network::run: input") || !check_view(output, "network::run: output")) return false;
    if (!require(input.dims() == input_shape && input.batch() == 1, errc::shape_mismatch,
                 "network::run: input must have the network's input shape and batch 1") ||
        !require(output.dims() == output_shape && output.batch() == 1, errc::shape_mismatch,
                 "network::run: output must have the network's output shape and batch 1"))
      return false;
    if (arena_bytes == 0) return true;
    return require(arena.data() != nullptr, errc::null_pointer, "network::run: arena is null") &&
           require(arena.size() >= arena_bytes, errc::invalid_argument,
                   "network::run: arena is smaller than network::arena_bytes") &&
           require(reinterpret_cast<std::uintptr_t>(arena.data()) % arena_alignment == 0, errc::bad_alignment,
                   "network::run: arena must be 64-byte aligned");
  }

  template <std::size_t Tensor>
  static tensor_view<T> arena_view(std::span<std::byte> arena) noexcept {
    // std::byte storage read as elements: u8 and i8 may alias any object representation; the int16 elements of a
    // 16x8 network live in the arena's bytes as in any byte buffer that provides storage.
    return tensor_view<T>(reinterpret_cast<T*>(arena.data() + tensor_offset(Tensor)), topology.tensors[Tensor].dims);
  }

  template <std::size_t Tensor>
  static tensor_view<const T> read_view(const tensor_view<const T>& input, std::span<std::byte> arena) noexcept {
    if constexpr (Tensor == 0)
      return input;
    else
      return arena_view<Tensor>(arena);
  }

  /// Layer I on its own, or (at the first layer of a band chain) the whole chain band by band.
  template <std::size_t I, class Observer, class E>
  static void run_step(const prepared& p, const tensor_view<const T>& input, const tensor_view<T>& output,
                       std::span<std::byte> arena, Observer& observer, E& exec, int threads) {
    constexpr int chain = chains.chain_of(int(I));
    constexpr row_run run = active_row_runs[I];
    if constexpr (chain >= 0) {
      if constexpr (int(I) == chains.chains[std::size_t(chain)].schedule.first)
        run_chain<chain>(p, input, output, arena, observer, exec, threads);
    } else if constexpr (run.active()) {
      if constexpr (int(I) == run.first) run_row_run<I>(p, input, output, arena, observer, exec, threads);
    } else {
      run_layer<I>(p, input, output, arena, observer, exec, threads);
    }
  }

  /// Layer I's input views and output view.
  template <std::size_t I>
  static auto op_inputs(const tensor_view<const T>& input, std::span<std::byte> arena) {
    constexpr layer_node node = topology.layers[I];
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return input_views<T, layer<I>::inputs.size()>{read_view<std::size_t(node.inputs[K])>(input, arena)...};
    }
    (std::make_index_sequence<layer<I>::inputs.size()>{});
  }
  template <std::size_t I>
  static tensor_view<T> op_output(const tensor_view<T>& output, std::span<std::byte> arena) {
    if constexpr (std::size_t(topology.layers[I].output) == output_tensor)
      return output;
    else
      return arena_view<std::size_t(topology.layers[I].output)>(arena);
  }

  /// The row run that starts at layer First: one parallel_for in which the thread of band t runs band t
  /// through every layer of the run (band t's workspace: slice t of the run's); on one band, layer by
  /// layer on the caller. Observers see a run on threads as one step: before(first), after(last).
  template <std::size_t First, class Observer, class E>
  static void run_row_run(const prepared& p, const tensor_view<const T>& input, const tensor_view<T>& output,
                          std::span<std::byte> arena, Observer& observer, E& exec, int threads) {
    constexpr row_run run = active_row_runs[First];
    constexpr run_workspace workspace = row_run_workspace(run);
    constexpr std::size_t count = std::size_t(run.last - run.first + 1);
    std::span<std::byte> scratch;
    if constexpr (workspace.bytes != 0) scratch = arena.subspan(memory.offsets[tensor_count + First], workspace.bytes);
    const auto layer_rows = [&]<std::size_t I>(std::span<std::byte> slice, const row_band* band) {
      if constexpr (op_layer<layer<I>>) {
        using layer_types = types<I>;
        if constexpr (layer_types::slice_bytes != 0) slice = slice.first(layer_types::slice_bytes);
        if (band == nullptr) {
          observer.before(I);
          layer_types::exec::run(p.template state<I>(), op_inputs<I>(input, arena), op_output<I>(output, arena), slice);
          observer.after(I, arena);
        } else {
          layer_types::exec::run_rows(p.template state<I>(), op_inputs<I>(input, arena), op_output<I>(output, arena),
                                      slice, *band);
        }
      }
    };
    const auto every_layer = [&](std::span<std::byte> slice, const row_band* band) {
      detail::for_index_chunks<count>([&]<std::size_t... K>(std::index_sequence<K...>) {
        (layer_rows.template operator()<First + K>(slice, band), ...);
      });
    };
    const int bands = row_run_bands<First>(threads);
    if (bands <= 1) return every_layer(scratch, nullptr);
    const row_bands pieces = split_pieces(topology.layers[First].dims.height, bands, pieces_per_band, min_piece_rows);
    auto piece = [&](std::size_t p, std::size_t slot) {
      const row_band band = pieces[static_cast<int>(p)];
      std::span<std::byte> slice;
      if constexpr (workspace.bytes != 0) slice = scratch.subspan(slot * workspace.slice_stride);
      every_layer(slice, &band);
    };
    observer.before(First);
    parallel_pieces(exec, static_cast<std::size_t>(pieces.count), static_cast<std::size_t>(bands), piece);
    observer.after(std::size_t(run.last), arena);
  }

  /// Tensor `Tensor` as band chain `Chain` sees it in band `step`: its window, or the whole map.
  template <int Chain, std::size_t Tensor, class V>
  static row_window<V> chain_window(const tensor_view<const T>& input, const tensor_view<T>& output,
                                    std::span<std::byte> arena, const typename schedule_type::step_type& step) {
    constexpr shape dims = topology.tensors[Tensor].dims;
    if constexpr (Tensor == 0) {
      static_assert(std::is_const_v<V>);
      return {input, 0, dims.height};
    } else if constexpr (Tensor == output_tensor) {
      return {output, 0, dims.height};
    } else if constexpr (chains.chains[std::size_t(Chain)].schedule.windowed[Tensor]) {
      const row_band w = step.window[Tensor];
      auto* data = reinterpret_cast<V*>(arena.data() + tensor_offset(Tensor));
      return {tensor_view<V>(data, shape{w.rows(), dims.width, dims.channels}), w.first, dims.height};
    } else {
      return {arena_view<Tensor>(arena), 0, dims.height};
    }
  }

  /// Moves a window's kept rows down to its buffer's start when its first row advances.
  static void slide_window(std::span<std::byte> arena, std::size_t tensor, row_band before, row_band after) {
    const int kept = schedule_type::kept_rows(before, after);
    if (kept == 0) return;
    std::byte* buffer = arena.data() + tensor_offset(tensor);
    const std::size_t bytes = row_bytes(int(tensor));
    std::memmove(buffer, buffer + std::size_t(after.first - before.first) * bytes, std::size_t(kept) * bytes);
  }

  using window_set = std::array<row_range, tensor_count>;
  static constexpr window_set no_windows{};

  /// Chain `Chain`'s bands, computed at compile time (the schedule's constexpr code): each band's new
  /// rows per layer and every window after it.
  template <int Chain>
  static constexpr auto chain_steps = [] {
    constexpr const schedule_type& schedule = chains.chains[std::size_t(Chain)].schedule;
    std::array<typename schedule_type::step_type, std::size_t(schedule.band_count())> steps{};
    band_cursor<tensor_count> cursor{};
    const auto lead = schedule.leads();
    for (int band = 0; band < schedule.band_count(); ++band)
      steps[std::size_t(band)] = schedule.advance(cursor, band, lead);
    return steps;
  }();

  template <int Chain, class Observer, class E>
  static void run_chain(const prepared& p, const tensor_view<const T>& input, const tensor_view<T>& output,
                        std::span<std::byte> arena, Observer& observer, E& exec, int threads) {
    constexpr const schedule_type& schedule = chains.chains[std::size_t(Chain)].schedule;
    constexpr const auto& steps = chain_steps<Chain>;
    constexpr std::size_t buffer = tensor_count + layer_count + std::size_t(Chain);
    std::span<std::byte> scratch = arena.subspan(memory.offsets[buffer], memory_ranges[buffer].bytes);
    for (std::size_t band = 0; band < steps.size(); ++band) {
      const window_set& before = band == 0 ? no_windows : steps[band - 1].window;
      detail::for_index_chunks<std::size_t(schedule.last - schedule.first + 1)>([&]<std::size_t... I>(
          std::index_sequence<I...>) {
        (run_chain_layer<Chain, std::size_t(schedule.first) + I>(
             p, input, output, arena, scratch, observer, exec, threads, before, steps[band], band + 1 == steps.size()),
         ...);
      });
    }
  }

  /// Layer I's new rows of one band of chain `Chain`, split over the executor's threads.
  template <int Chain, std::size_t I, class Observer, class E>
  static void run_chain_layer(const prepared& p, const tensor_view<const T>& input, const tensor_view<T>& output,
                              std::span<std::byte> arena, std::span<std::byte> scratch, Observer& observer, E& exec,
                              int threads, const window_set& before, const typename schedule_type::step_type& step,
                              bool last_band) {
    if constexpr (op_layer<layer<I>>) {
      constexpr layer_node node = topology.layers[I];
      constexpr std::size_t out_tensor = std::size_t(node.output);
      constexpr std::size_t arity = layer<I>::inputs.size();
      const row_band rows = step.rows[I];
      constexpr const chain_choice& chain = chains.chains[std::size_t(Chain)];
      if constexpr (chain.schedule.windowed[out_tensor])
        slide_window(arena, out_tensor, before[out_tensor], step.window[out_tensor]);
      if (rows.rows() == 0) return;
      const auto inputs = [&]<std::size_t... K>(std::index_sequence<K...>) {
        return std::array<row_window<const T>, arity>{
            chain_window<Chain, std::size_t(node.inputs[K]), const T>(input, output, arena, step)...};
      }
      (std::make_index_sequence<arity>{});
      const row_window<T> out = chain_window<Chain, out_tensor, T>(input, output, arena, step);
      using layer_types = types<I>;
      constexpr shape in_shape = layer_input_shape<I>;
      constexpr std::size_t slice_bytes = band_slice_bytes<I>(chain.totals.max_rows[I]);
      // A ring-keeping layer runs on one thread in a workspace of its own and resumes the previous band's ring.
      const int slices = keeps_ring<I>() ? 1 : slice_bytes != 0 ? layer_types::slices : max_threads;
      const row_bands parts = row_bands::split(rows.rows(), std::min(threads, slices));
      constexpr std::size_t own = keeps_ring<I>() ? [] {
        const chain_scratch_parts before_layer = chain_scratch_split(chains.chains[std::size_t(Chain)], int(I));
        return align_up(before_layer.shared) + before_layer.kept;
      }() : 0;
      const bool resume = keeps_ring<I>() && rows.first > 0;
      auto part = [&](std::size_t t) {
        std::span<std::byte> slice;
        if constexpr (slice_bytes != 0) slice = scratch.subspan(own + t * align_up(slice_bytes), slice_bytes);
        const row_band local = parts[static_cast<int>(t)];
        run_band_rows<layer<I>, typename layer_types::exec, T, in_shape, node.dims>(
            p.template state<I>(), inputs, out, slice, {rows.first + local.first, rows.first + local.last}, resume);
      };
      observer.before(I);
      if (parts.count > 1)
        exec.parallel_for(static_cast<std::size_t>(parts.count), part);
      else
        part(0);
      if constexpr (requires { observer.after_band_step(I, arena, true); })
        observer.after_band_step(I, arena, last_band);
      else
        observer.after(I, arena);
    }
  }

  template <std::size_t I, class Observer, class E>
  static void run_layer(const prepared& p, const tensor_view<const T>& input, const tensor_view<T>& output,
                        std::span<std::byte> arena, Observer& observer, E& exec, int threads) {
    if constexpr (op_layer<layer<I>>) {
      std::span<std::byte> scratch;
      if constexpr (types<I>::scratch_bytes != 0)
        scratch = arena.subspan(memory.offsets[tensor_count + I], types<I>::scratch_bytes);
      observer.before(I);
      run_bands<I>(p.template state<I>(), op_inputs<I>(input, arena), op_output<I>(output, arena), scratch, exec,
                   threads);
      observer.after(I, arena);
    }
  }

  /// Layer I whole on the caller, or in row bands over the executor (band t uses scratch slice t).
  template <std::size_t I, class Inputs, class E>
  static void run_bands(const typename types<I>::state& state, const Inputs& inputs, const tensor_view<T>& out,
                        std::span<std::byte> scratch, E& exec, int threads) {
    using layer_types = types<I>;
    if constexpr (layer_types::splits) {
      const int bands = layer_bands<I>(threads);
      if (bands > 1) {
        const row_bands pieces = split_pieces(layer_types::split_rows, bands, pieces_per_band, min_piece_rows);
        auto piece = [&](std::size_t p, std::size_t slot) {
          std::span<std::byte> slice;
          if constexpr (layer_types::slice_bytes != 0)
            slice = scratch.subspan(slot * layer_types::slice_stride, layer_types::slice_bytes);
          layer_types::exec::run_rows(state, inputs, out, slice, pieces[static_cast<int>(p)]);
        };
        parallel_pieces(exec, static_cast<std::size_t>(pieces.count), static_cast<std::size_t>(bands), piece);
        return;
      }
    }
    layer_types::exec::run(state, inputs, out, scratch);
  }

  /// 0xA5 over every arena byte not held by a buffer that is still read after `layer`.
  static void poison_dead_memory(std::span<std::byte> arena, int layer) noexcept {
    for (std::size_t byte = 0; byte < arena_bytes; ++byte) {
      bool live = false;
      for (std::size_t b = 0; b < memory_ranges.size() && !live; ++b) {
        const live_range& r = memory_ranges[b];
        live = r.bytes != 0 && r.first <= layer && r.last > layer && byte >= memory.offsets[b] &&
               byte < memory.offsets[b] + r.bytes;
      }
      if (!live) arena[byte] = std::byte{0xA5};
    }
  }
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
