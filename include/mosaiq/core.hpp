// Everything in core/: types, errors, quantization, activations, padding, tensors.
#pragma once

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/resize_mode.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
