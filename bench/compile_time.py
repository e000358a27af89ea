#!/usr/bin/env python3
"""Compile time of a static network as a function of its layer count.

Writes a unit holding one network of N layers, a mix like the imported selfie models (a stem, then
blocks of: tap, pointwise expand, hard_swish, depthwise 3x3, a squeeze-and-excitation gate (tap,
average pool over the map, pointwise relu, pointwise, logistic, mul), pointwise project, add of the
block's tap, depthwise stride 2 and resize_bilinear x2), and times g++ on it (user + sys seconds of
the compiler, from os.wait4). What the unit instantiates is one "part":

  type      the network type: shapes, costs, the layer-by-layer memory plan (arena_bytes)
  prepare   + prepare() and load() (weights, states, the blob)
  run       + run()
  banded    the type with banding::automatic() (the chain search and its plan)
  profile   + mosaiq::profile() (run_observed with the timer, layer_kind)
  joining   another list: one long run of layers that all join a band chain (pointwise 16, depthwise 3x3,
            pointwise 8, repeated on a 128x128x8 map) with banding::automatic(): the chain search at its longest

usage: compile_time.py [--layers 25,50,100,200,400] [--parts type,run] [--opt syntax|O2|both]
                       [--cxx g++] [--include DIR] [--repeat 1] [--keep DIR] [--extra FLAGS]

Prints one line per (part, opt, N) ("failed" and the first error where the compiler stops) and, per (part, opt), a fit of t = a + b*N + c*N^2 with the share
of the quadratic term at the largest N. Use CCACHE_DISABLE or a plain compiler: no launcher is used.
"""

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STEM = [
    "mosaiq::layers::conv2d<mosaiq::layers::conv2d_config{.out_channels = 16, .kernel = {3, 3}, .stride = {2, 2}, .pad = mosaiq::padding::same()}>",
    "mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 24}>",
]


def block(k):
    """One inverted-residual block on a 32x32x24 map, like the selfie models' (14 layers)."""
    return [
        f'mosaiq::layers::tap<"b{k}">',
        "mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 72}>",
        "mosaiq::layers::hard_swish<>",
        "mosaiq::layers::depthwise<mosaiq::layers::depthwise_config{.kernel = {3, 3}, .pad = mosaiq::padding::same()}>",
        f'mosaiq::layers::tap<"s{k}">',
        "mosaiq::layers::average_pool<mosaiq::layers::pool_config{.kernel = {32, 32}, .stride = {32, 32}, .pad = mosaiq::padding::valid()}>",
        "mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 24, .act = mosaiq::activation::relu}>",
        "mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 72}>",
        "mosaiq::layers::logistic<>",
        f'mosaiq::layers::mul<"s{k}">',
        "mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 24}>",
        f'mosaiq::layers::add<"b{k}">',
        "mosaiq::layers::depthwise<mosaiq::layers::depthwise_config{.kernel = {3, 3}, .stride = {2, 2}, .pad = mosaiq::padding::same()}>",
        "mosaiq::layers::resize_bilinear<mosaiq::layers::resize_config{.scale = 2}>",
    ]


def layer_list(n):
    layers = list(STEM)
    k = 0
    while len(layers) + 14 <= n:
        layers += block(k)
        k += 1
    while len(layers) < n:
        layers.append("mosaiq::layers::hard_swish<>")
    return layers


JOINING = [
    "mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 16}>",
    "mosaiq::layers::depthwise<mosaiq::layers::depthwise_config{.kernel = {3, 3}, .pad = mosaiq::padding::same()}>",
    "mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 8}>",
]


def joining_list(n):
    return [JOINING[i % 3] for i in range(n)]


def unit(n, part):
    banding = "::with_banding<mosaiq::banding::automatic()>" if part in ("banded", "joining") else ""
    layers = ",\n    ".join(joining_list(n) if part == "joining" else layer_list(n))
    size = "128, 128, 8" if part == "joining" else "64, 64, 3"
    src = [
        '#include "mosaiq/net.hpp"',
        "",
        f"using input = mosaiq::input<mosaiq::i8, {size}>{banding};",
        f"using net = mosaiq::network<input,\n    {layers}>;",
        "static_assert(net::layer_count == %d);" % n,
        "static_assert(net::output_shape == mosaiq::shape{32, 32, 24} || net::output_shape.channels > 0);",
        "std::size_t figures() { return net::arena_bytes + net::peak_live_bytes + net::macs + net::blob_bytes; }",
    ]
    if part in ("prepare", "run", "profile"):
        src += [
            "net::prepared prepare(const net::weights& w) { return net::prepare(w); }",
            "bool load(std::span<const std::byte> blob, net::weights& w) { return net::load(blob, w); }",
        ]
    if part in ("run", "profile"):
        src += [
            "void run(const net::prepared& p, mosaiq::tensor_view<const mosaiq::i8> in, mosaiq::tensor_view<mosaiq::i8> out,",
            "         std::span<std::byte> arena) { net::run(p, in, out, arena); }",
        ]
    if part == "profile":
        src += [
            "double profile(const net::prepared& p, mosaiq::tensor_view<const mosaiq::i8> in,",
            "               mosaiq::tensor_view<mosaiq::i8> out, std::span<std::byte> arena) {",
            "  return mosaiq::profile<net>(p, in, out, arena, 1, nullptr).total_ms;",
            "}",
        ]
    if part in ("banded", "joining"):
        src += ["int chains() { return net::band_chain_count; }"]
    return "\n".join(src) + "\n"


def flags(opt, extra, include):
    f = ["-std=c++20", f"-I{include}", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-Wno-maybe-uninitialized",
         "-Wno-uninitialized", "-ffp-contract=off", "-mavx2", "-mfma"]
    f += ["-fsyntax-only"] if opt == "syntax" else ["-O2", "-DNDEBUG", "-c", "-o", os.devnull]
    return f + extra


def time_compile(cxx, path, opt, extra, include):
    proc = subprocess.Popen([cxx, *flags(opt, extra, include), path], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL)
    err = proc.stderr.read().decode(errors="replace")  # before waiting: a long error would fill the pipe
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        first = next((line for line in err.splitlines() if "error" in line), err[:300])
        print(f"# compile failed: {path}: {first[:300]}", flush=True)
        return None
    return usage.ru_utime + usage.ru_stime


def fit(ns, ts):
    """Least squares t = a + b n + c n^2 (normal equations, 3x3)."""
    rows = [[1.0, n, n * n] for n in ns]
    ata = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    atb = [sum(r[i] * t for r, t in zip(rows, ts)) for i in range(3)]
    m = [ata[i] + [atb[i]] for i in range(3)]
    for i in range(3):
        p = max(range(i, 3), key=lambda r: abs(m[r][i]))
        m[i], m[p] = m[p], m[i]
        for r in range(3):
            if r != i:
                f = m[r][i] / m[i][i]
                m[r] = [x - f * y for x, y in zip(m[r], m[i])]
    return [m[i][3] / m[i][i] for i in range(3)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default="25,50,100,200,400")
    ap.add_argument("--parts", default="type,prepare,run,banded,profile")
    ap.add_argument("--opt", default="syntax", choices=["syntax", "O2", "both"])
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--repeat", type=int, default=1, help="runs per point; the minimum is reported")
    ap.add_argument("--keep", help="write the units into this directory")
    ap.add_argument("--include", default=os.path.join(ROOT, "include"), help="mosaiq's include dir (A/B)")
    ap.add_argument("--extra", default="", help="more compiler flags, space separated")
    args = ap.parse_args()
    ns = [int(x) for x in args.layers.split(",")]
    opts = ["syntax", "O2"] if args.opt == "both" else [args.opt]
    extra = args.extra.split()
    out_dir = args.keep or tempfile.mkdtemp(prefix="mosaiq_ct_")
    os.makedirs(out_dir, exist_ok=True)
    print(f"# {args.cxx}, {args.include}, load {os.getloadavg()[0]:.2f}", flush=True)
    for part in args.parts.split(","):
        for opt in opts:
            ts = []
            for n in ns:
                path = os.path.join(out_dir, f"net_{part}_{n}.cpp")
                with open(path, "w") as f:
                    f.write(unit(n, part))
                runs = [time_compile(args.cxx, path, opt, extra, args.include) for _ in range(args.repeat)]
                if None in runs:
                    print(f"{part:8} {opt:6} N={n:4}  failed", flush=True)
                    continue
                ts.append((n, min(runs)))
                print(f"{part:8} {opt:6} N={n:4} {ts[-1][1]:7.2f} s  (load {os.getloadavg()[0]:.2f})", flush=True)
            if len(ts) >= 3:
                a, b, c = fit([n for n, _ in ts], [t for _, t in ts])
                n, t = ts[-1]
                print(f"{part:8} {opt:6} fit: {a:.2f} + {b * 100:.3f}/100 layers * N + {c * 1e4:.4f}e-4 * N^2"
                      f"  (N^2 term at N={n}: {c * n * n:.1f} s of {t:.1f})", flush=True)


if __name__ == "__main__":
    main()
