// Static networks: layer descriptors, executors, the compile-time memory plan, the profiler.
#pragma once

#include "mosaiq/net/banding.hpp"
#include "mosaiq/net/bands.hpp"
#include "mosaiq/net/executor.hpp"
#include "mosaiq/net/layers.hpp"
#include "mosaiq/net/network.hpp"
#include "mosaiq/net/plan.hpp"
#include "mosaiq/net/profile.hpp"
