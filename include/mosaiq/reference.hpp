// The scalar reference ops: plain, obviously-correct versions of every op, the test oracle.
#pragma once

#include "mosaiq/reference/conv.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/reference/depthwise.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/reference/hard_swish.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/reference/pointwise.hpp"
#include "mosaiq/reference/pool.hpp"
#include "mosaiq/reference/resize.hpp"
#include "mosaiq/reference/softmax.hpp"
#include "mosaiq/reference/transpose_conv.hpp"
