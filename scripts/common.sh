# Shared by scripts/test and scripts/demo: package installation and build settings.
# Sourced, not executed.

MOSAIQ_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MOSAIQ_JOBS=${MOSAIQ_JOBS:-$(nproc)}

# Packages every build needs, and the ones only some stages use.
MOSAIQ_BUILD_PACKAGES=(cmake ninja-build g++ pkg-config libxsimd-dev doctest-dev)
MOSAIQ_TEST_PACKAGES=(meson clang clang-format libclang-rt-14-dev g++-aarch64-linux-gnu g++-arm-linux-gnueabihf libopencv-dev
                      flatbuffers-compiler libflatbuffers-dev
                      qemu-user-static libgemmlowp-dev python3)
# ocl-icd-opencl-dev: dnnl-config.cmake calls find_package(OpenCL REQUIRED); apt only recommends it.
MOSAIQ_BENCH_PACKAGES=(libbenchmark-dev libxnnpack-dev libpthreadpool-dev libdnnl-dev ocl-icd-opencl-dev python3)
MOSAIQ_EXAMPLE_PACKAGES=(libstb-dev nlohmann-json3-dev)

log() { printf '\n==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Installs whichever of the named Debian packages are missing (apt, as root).
ensure_packages() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing missing packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "missing packages (${missing[*]}) and not root; install them or run as root"
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# ccache (CMake and meson use it when installed) keys on paths relative to the checkout, so a
# fresh clone elsewhere (CI's) reuses what an earlier build of the same sources cached.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$MOSAIQ_ROOT}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"

# CMake arguments shared by every configure: Ninja, ccache when installed.
cmake_common_args() {
  local args=(-G Ninja -DCMAKE_BUILD_TYPE=Release)
  if command -v ccache >/dev/null; then
    args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  printf '%s\n' "${args[@]}"
}

# The pretrained face detector's weights and demo photos come from the npm registry, cached here.
MOSAIQ_CACHE=${MOSAIQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mosaiq}
MOSAIQ_FACE_API_VERSION=1.7.15

# fetch_npm_package PACKAGE VERSION DIR MARKER: prints DIR/package, the unpacked npm package, fetching it with
# `npm pack` into DIR the first time (MARKER, a file inside the package, tells it is there). Without npm or network:
# says why on stderr and returns 1.
fetch_npm_package() {
  local package=$1 version=$2 dir=$3 marker=$4
  if [ ! -f "$dir/package/$marker" ]; then
    if ! command -v npm >/dev/null; then
      echo "npm is not installed: cannot fetch $package (apt-get install npm to enable it)" >&2
      return 1
    fi
    mkdir -p "$dir"
    local archive
    if ! archive=$(cd "$dir" && npm pack --silent "$package@$version" 2>/dev/null | tail -n 1) ||
      ! (cd "$dir" && tar xzf "$archive" && rm -f "$archive"); then
      echo "npm pack $package@$version failed (no network or registry?)" >&2
      rm -rf "$dir"
      return 1
    fi
  fi
  echo "$dir/package"
}

# The unpacked @vladmandic/face-api package (fetched into the cache the first time).
fetch_face_api() {
  fetch_npm_package @vladmandic/face-api "$MOSAIQ_FACE_API_VERSION" "$MOSAIQ_CACHE/face-api-$MOSAIQ_FACE_API_VERSION" \
    model/ssd_mobilenetv1_model-weights_manifest.json
}

# MediaPipe Selfie Segmentation (Apache-2.0): selfie_segmentation{,_landscape}.tflite, float16 weights.
MOSAIQ_SELFIE_VERSION=0.1.1675465747

# The unpacked @mediapipe/selfie_segmentation package (fetched into the cache the first time).
fetch_selfie() {
  fetch_npm_package @mediapipe/selfie_segmentation "$MOSAIQ_SELFIE_VERSION" \
    "$MOSAIQ_CACHE/selfie-segmentation-$MOSAIQ_SELFIE_VERSION" selfie_segmentation_landscape.tflite
}
