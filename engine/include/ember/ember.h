// The whole public API of ember. The core types (Tensor, DType, Shape, Error, .npy)
// come from the core layer and are re-exported here.
#pragma once

#include <ember/core/cancel.h>
#include <ember/core/error.h>
#include <ember/core/npy.h>
#include <ember/core/tensor.h>
#include <ember/core/value.h>
#include <ember/devices.h>
#include <ember/log.h>
#include <ember/profile.h>
#include <ember/session.h>
