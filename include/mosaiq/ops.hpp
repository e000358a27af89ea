// The generated kernels.
#pragma once

#include "mosaiq/ops/conv.hpp"
#include "mosaiq/ops/depthwise.hpp"
#include "mosaiq/ops/eltwise.hpp"
#include "mosaiq/ops/eltwise16x8.hpp"
#include "mosaiq/ops/hard_swish.hpp"
#include "mosaiq/ops/nms.hpp"
#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/ops/pointwise16x8.hpp"
#include "mosaiq/ops/pool.hpp"
#include "mosaiq/ops/resize.hpp"
#include "mosaiq/ops/softmax.hpp"
#include "mosaiq/ops/transpose_conv.hpp"
