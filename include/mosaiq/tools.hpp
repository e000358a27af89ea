// Model-preparation helpers: batch-norm folding, the float twin of a network, activation range
// calibration and post-training quantization.
#pragma once

#include "mosaiq/tools/batchnorm.hpp"
#include "mosaiq/tools/calibrate.hpp"
#include "mosaiq/tools/float_network.hpp"
#include "mosaiq/tools/quantize.hpp"
