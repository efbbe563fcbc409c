// The whole public API of ember.
#pragma once

#include <ember/devices.h>
#include <ember/error.h>
#include <ember/npy.h>
#include <ember/profile.h>
#include <ember/session.h>
#include <ember/tensor.h>
