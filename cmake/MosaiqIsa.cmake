# The instruction-set levels a test or benchmark binary is built for. x86 hosts build one binary
# per level (each skips itself at run time when the CPU lacks it); other targets build the
# native SIMD level and the forced-scalar twin.
set(MOSAIQ_ISA_FLAGS_scalar -DMOSAIQ_FORCE_SCALAR)
set(MOSAIQ_ISA_FLAGS_avx2 -mavx2 -mfma)
# AVX2 plus AVX-VNNI (Alder Lake, Zen 5 client): 256-bit vpdpbusd for the pointwise/conv2d GEMM.
set(MOSAIQ_ISA_FLAGS_avx2_vnni -mavx2 -mfma -mavxvnni)
set(MOSAIQ_ISA_FLAGS_avx512 -mavx2 -mfma -mavx512f -mavx512bw -mavx512vl -mavx512dq)
# Ice Lake and later: VNNI (dot products) and VBMI (byte permutes for table lookups).
set(MOSAIQ_ISA_FLAGS_avx512_vnni ${MOSAIQ_ISA_FLAGS_avx512} -mavx512vnni -mavx512vbmi)
set(MOSAIQ_ISA_FLAGS_native)
# ARMv8.2 dot product (sdot): the pointwise/conv2d GEMM's aarch64 microkernel with it.
set(MOSAIQ_ISA_FLAGS_neon_dotprod -march=armv8.2-a+dotprod)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
  set(MOSAIQ_DEFAULT_ISAS scalar avx2 avx512 avx512_vnni)
else()
  set(MOSAIQ_DEFAULT_ISAS scalar native)
endif()
set(MOSAIQ_TEST_ISAS "${MOSAIQ_DEFAULT_ISAS}" CACHE STRING "ISA levels to build the SIMD tests for")

# Warnings every mosaiq-built binary uses. Off for GCC only: -W(maybe-)uninitialized, tripped by
# GCC 12's own AVX-512 headers (`__Y = __Y`, GCC bug 105593, fixed in GCC 13); -Wstringop-overflow,
# bogus at -O3 on vectorized byte loops (armv7); -Wpsabi, ABI notes about NEON vector arguments.
set(MOSAIQ_WARNINGS -Wall -Wextra -Wpedantic -Werror $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>
                    $<$<CXX_COMPILER_ID:GNU>:-Wno-uninitialized>
                    $<$<CXX_COMPILER_ID:GNU>:-Wno-stringop-overflow> $<$<CXX_COMPILER_ID:GNU>:-Wno-psabi>)

# Code generation every mosaiq-built binary uses: no FMA contraction, so float results (priors,
# the float reference ops) are the same on every ISA and at compile time (docs/decisions.md).
set(MOSAIQ_CODEGEN_FLAGS -ffp-contract=off)
