// Model-preparation helpers: batch-norm folding, the float twin of a network, activation range
// calibration and post-training quantization, float weights files, and the calibration of a network
// imported from a float model.
#pragma once

#include "mosaiq/tools/batchnorm.hpp"
#include "mosaiq/tools/calibrate.hpp"
#include "mosaiq/tools/calibrate_model.hpp"
#include "mosaiq/tools/float_blob.hpp"
#include "mosaiq/tools/float_network.hpp"
#include "mosaiq/tools/quantize.hpp"
#include "mosaiq/tools/quantize_16x8.hpp"
#include "mosaiq/tools/reference_16x8.hpp"
