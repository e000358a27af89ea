// Portrait segmentation demo: a HyperCut-style network (portrait_net.hpp) as a mosaiq static network
// on a 256x256 RGB image. Prints the network's compile-time summary (shapes, MACs, parameters, arena),
// checks that run() allocates nothing, prints the per-layer profile and writes the person
// probability as a grayscale PNG. The network runs through the best of its per-target builds this
// CPU runs (portrait_network.cpp, mosaiq::dispatched_network); the range check reads every layer's
// output, so it runs the network built in this unit once.
//
// SPEED AND COMPOSITION DEMO: the weights are random (fixed seed, He-like scales, calibrated and
// quantized with mosaiq::tools, see examples/common/demo_weights.hpp), not a trained model, so the
// mask shows what random filters make of the image, not a segmentation.
//
//   portrait_segmentation [--int8] [--runs N] [image.(png|jpg|...) | -] [mask.png]
//
// Without an image (or with -) a synthetic "portrait" (head and shoulders over a gradient) is used; a photo is
// center-cropped to a square and box-resampled to 256x256. The mask goes to portrait_mask.png unless
// named.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <mosaiq/dispatch.hpp>
#include <mosaiq/mosaiq.hpp>

#include "../common/aligned_bytes.hpp"
#include "portrait_net.hpp"

MOSAIQ_DECLARE_NETWORK_ENTRIES(portrait_u8_net)
MOSAIQ_DECLARE_NETWORK_ENTRIES(portrait_i8_net)

namespace mq = mosaiq;

// ---------------------------------------------------------------------------------------------
// Every operator new in the program is counted, so the demo can show that run() makes none.

namespace {
std::atomic<std::uint64_t> allocations{0};

void* allocate(std::size_t bytes, std::size_t alignment) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (bytes == 0) bytes = 1;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(bytes)
                : std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
// Out of line so GCC does not pair an inlined free() with operator new (-Wmismatched-new-delete).
[[gnu::noinline]] void release(void* p) noexcept { std::free(p); }
}  // namespace

void* operator new(std::size_t bytes) { return allocate(bytes, 0); }
void* operator new[](std::size_t bytes) { return allocate(bytes, 0); }
void* operator new(std::size_t bytes, std::align_val_t a) { return allocate(bytes, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t bytes, std::align_val_t a) { return allocate(bytes, static_cast<std::size_t>(a)); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }

namespace {

constexpr int size = portrait::input_size;

// ---------------------------------------------------------------------------------------------
// Input images, as 256x256 RGB bytes.

/// Loads an image with stb_image, center-crops it to a square and box-resamples it to 256x256
/// (each output pixel averages the source pixels it covers; upscaling repeats pixels).
bool load_image(const char* path, std::vector<std::uint8_t>& rgb) {
  int width = 0, height = 0, channels = 0;
  std::uint8_t* pixels = stbi_load(path, &width, &height, &channels, 3);
  if (pixels == nullptr) {
    std::fprintf(stderr, "cannot read %s: %s\n", path, stbi_failure_reason());
    return false;
  }
  const int side = std::min(width, height), x_origin = (width - side) / 2, y_origin = (height - side) / 2;
  rgb.assign(std::size_t(size) * size * 3, 0);
  for (int y = 0; y < size; ++y) {
    const int y0 = y * side / size, y1 = std::max(y0 + 1, (y + 1) * side / size);
    for (int x = 0; x < size; ++x) {
      const int x0 = x * side / size, x1 = std::max(x0 + 1, (x + 1) * side / size);
      for (int c = 0; c < 3; ++c) {
        unsigned sum = 0;
        for (int sy = y0; sy < y1; ++sy)
          for (int sx = x0; sx < x1; ++sx)
            sum += pixels[(std::size_t(sy + y_origin) * width + std::size_t(sx + x_origin)) * 3 + c];
        const unsigned count = unsigned((y1 - y0) * (x1 - x0));
        rgb[(std::size_t(y) * size + x) * 3 + c] = static_cast<std::uint8_t>((sum + count / 2) / count);
      }
    }
  }
  stbi_image_free(pixels);
  return true;
}

// ---------------------------------------------------------------------------------------------

/// Share of each requantizing layer's outputs pinned at an end of the 8-bit range (the lower end
/// counts only where it is not the real value 0, i.e. not a ReLU zero): how well the derived
/// output quantizations fit the activations.
template <class Net>
struct saturation_meter {
  const typename Net::prepared* prepared;
  mq::tensor_view<typename Net::element_type> output;
  double worst = 0;
  std::size_t worst_layer = 0;

  void before(std::size_t) noexcept {}
  void after(std::size_t layer, std::span<std::byte> arena) noexcept {
    using T = typename Net::element_type;
    const std::string_view kind = mq::layer_kind<Net>(layer);
    if (kind != "conv2d" && kind != "depthwise" && kind != "pointwise" && kind != "add" && kind != "concat") return;
    const auto tensor = static_cast<std::size_t>(Net::topology.layers[layer].output);
    const std::size_t count = Net::topology.tensors[tensor].dims.elements();
    const T* data = tensor == Net::tensor_count - 1
                        ? output.data()
                        : reinterpret_cast<const T*>(arena.data() + Net::tensor_offset(tensor));
    constexpr std::int32_t lo = mq::element_traits<T>::min, hi = mq::element_traits<T>::max;
    const bool low_end_is_zero = prepared->tensor_quant(tensor).zero_point == lo;
    std::size_t pinned = 0;
    for (std::size_t i = 0; i < count; ++i) pinned += data[i] == hi || (data[i] == lo && !low_end_is_zero);
    const double share = double(pinned) / double(count);
    if (share > worst) worst = share, worst_layer = layer;
  }
};

/// What the network type knows at compile time: shapes, cost, the memory plans.
template <class T>
void print_network_facts() {
  using net = portrait::network<T>;
  std::size_t ops = 0;
  for (const mq::layer_node& node : net::topology.layers) ops += node.role == mq::layer_role::op;
  std::printf("mosaiq portrait segmentation (HyperCut-style), %s\n", std::same_as<T, mq::u8> ? "uint8" : "int8");
  std::printf(
      "SPEED AND COMPOSITION DEMO: random fixed-seed weights, not a trained model; the mask is not a "
      "segmentation.\n\n");
  std::printf("network   %dx%dx%d -> %dx%dx%d, %zu layers (%zu ops)\n", net::input_shape.height, net::input_shape.width,
              net::input_shape.channels, net::output_shape.height, net::output_shape.width, net::output_shape.channels,
              net::layer_count, ops);
  std::printf("cost      %.2f M MACs, %llu parameters (%llu weight bytes)\n", double(net::macs) / 1e6,
              static_cast<unsigned long long>(net::params), static_cast<unsigned long long>(net::weight_bytes));
  std::printf("memory    arena %zu bytes, peak live %zu bytes, plan efficiency %.3f (compile-time plan)\n",
              net::arena_bytes, net::peak_live_bytes, net::plan_efficiency);
  // The same layers in row bands (portrait::banded_network, one thread): a compile-time figure.
  using banded = portrait::banded_network<T>;
  static_assert(banded::band_saved_bytes >= 100'000);
  std::printf("bands     one-thread plans: %zu bytes layer by layer, %zu banded (%zu saved; %d chains)\n",
              banded::layer_by_layer_arena_bytes, banded::arena_bytes, banded::band_saved_bytes,
              banded::band_chain_count);
}

/// Writes the person probability (class 1) as grayscale; false when the file cannot be written.
template <class T>
bool write_mask(const std::vector<T>& output, const char* mask_path) {
  // Softmax outputs are p * 256 (offset by -128 for int8).
  std::vector<std::uint8_t> mask(std::size_t(size) * size);
  std::size_t person = 0;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    mask[i] = static_cast<std::uint8_t>(int(output[2 * i + 1]) - mq::element_traits<T>::min);
    person += output[2 * i + 1] > output[2 * i];
  }
  if (stbi_write_png(mask_path, size, size, 1, mask.data(), size) == 0) {
    std::fprintf(stderr, "cannot write %s\n", mask_path);
    return false;
  }
  std::uint32_t checksum = 2166136261u;  // FNV-1a of the output: equal on every ISA (the kernels are bit-exact)
  for (const T v : output) checksum = (checksum ^ static_cast<std::uint8_t>(v)) * 16777619u;
  std::printf("\nmask      %s (person probability x 255; %.1f%% of pixels above 0.5; output checksum %08x)\n",
              mask_path, 100.0 * double(person) / double(mask.size()), checksum);
  return true;
}

template <class T>
int run_demo(const std::vector<std::uint8_t>& rgb, const char* mask_path, int runs, int threads) {
  using net = portrait::network<T>;
  constexpr bool is_u8 = std::same_as<T, mq::u8>;

  // Stand-in weights (static storage: the aggregate holds every filter), then the load-time step.
  static typename net::weights weights;
  if (!portrait::make_weights<T>(weights)) return 1;
  const typename net::prepared prepared = net::prepare(weights);

  static std::vector<T> input(net::input_shape.elements()), output(net::output_shape.elements());
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = portrait::from_rgb<T>(rgb[i]);
  alignas(64) static std::byte arena[net::arena_bytes];
  const mq::tensor_view<const T> in(input.data(), net::input_shape);
  const mq::tensor_view<T> out(output.data(), net::output_shape);

  print_network_facts<T>();

  // The layers run on `threads` threads (the pool is created once, before the frames).
  mq::thread_pool pool(threads);
  std::printf("threads   %d (mosaiq::thread_pool; at most %d planned)\n", threads, net::max_threads);

  // The per-target builds take the weights as a blob (network::save); the state storage outlives
  // `dispatched` (declared first), whose destructor destroys the state there.
  std::vector<std::byte> blob(net::blob_bytes);
  net::save(weights, blob);
  const mq::dispatch::entry_list entries =
      is_u8 ? MOSAIQ_NETWORK_ENTRIES(portrait_u8_net) : MOSAIQ_NETWORK_ENTRIES(portrait_i8_net);
  const mq::dispatch::network_entry* entry = mq::select_entry(entries);
  if (entry == nullptr) return 1;
  mosaiq_examples::aligned_bytes state(entry->state_bytes, entry->state_alignment);
  mq::dispatched_network dispatched(*entry);
  mosaiq_examples::aligned_bytes dispatched_arena(dispatched.arena_bytes(), mq::arena_alignment);
  if (const mq::status s = dispatched.prepare(blob, state.bytes); !s) {
    std::fprintf(stderr, "portrait_segmentation: %s\n", s.message);
    return 1;
  }
  std::printf("target    %.*s%s (the best of the linked targets this CPU runs), arena %zu bytes there\n",
              int(dispatched.target().size()), dispatched.target().data(), dispatched.uses_amx() ? " with AMX" : "",
              dispatched.arena_bytes());

  // One run, counting heap allocations.
  const std::uint64_t before = allocations.load();
  const mq::status ran = dispatched.run(in, out, dispatched_arena.bytes, pool);
  const std::uint64_t allocated = allocations.load() - before;
  std::printf("heap      %llu allocations during run()\n", static_cast<unsigned long long>(allocated));
  if (!ran) return 1;
  // How the activations fit their quantization: read after every layer of this unit's build (every
  // target computes the same bytes).
  saturation_meter<net> meter{&prepared, out};
  net::run_observed(prepared, in, out, arena, meter, pool);
  std::printf("range     at most %.2f%% of a layer's outputs at the end of the 8-bit range (layer %zu, %s)\n\n",
              100.0 * meter.worst, meter.worst_layer, mq::layer_kind<net>(meter.worst_layer).data());

  if (!dispatched.profile(in, out, dispatched_arena.bytes, runs, stdout, pool)) return 1;

  if (!write_mask(output, mask_path)) return 1;
  return allocated == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = mosaiq_examples::take_threads_flag(argc, argv);
  bool int8 = false;
  int runs = 20;
  const char* image = nullptr;
  const char* mask_path = "portrait_mask.png";
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--int8") {
      int8 = true;
    } else if (arg == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (threads == 0 || (arg.starts_with("-") && arg != "-")) {
      std::fprintf(stderr, "usage: %s [--int8] [--runs N] [--threads 1..%d] [image] [mask.png]\n", argv[0],
                   mosaiq_examples::max_threads);
      return 2;
    } else {
      (positional++ == 0 ? image : mask_path) = arg == "-" ? nullptr : argv[i];
    }
  }

  std::vector<std::uint8_t> rgb;
  if (image == nullptr)
    rgb = portrait::synthetic_portrait();
  else if (!load_image(image, rgb))
    return 1;
  std::printf("input     %s\n", image == nullptr ? "synthetic portrait (head and shoulders)" : image);
  return int8 ? run_demo<mq::i8>(rgb, mask_path, runs, threads) : run_demo<mq::u8>(rgb, mask_path, runs, threads);
}
