// The generated kernels.
#pragma once

#include "mosaiq/ops/conv.hpp"
#include "mosaiq/ops/depthwise.hpp"
#include "mosaiq/ops/eltwise.hpp"
#include "mosaiq/ops/nms.hpp"
#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/ops/pool.hpp"
#include "mosaiq/ops/resize.hpp"
#include "mosaiq/ops/softmax.hpp"
