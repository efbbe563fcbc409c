// Runs a kernel's grid on the calling OS thread: block after block, each CUDA thread of
// a block a fiber with its own stack, switching only where CUDA threads synchronize.
#pragma once

#include "tests/cuda_emulator/cuda_emulator.h"

#include <functional>
#include <string>

namespace ember::emu {

// Runs `thread` once per CUDA thread of the launch's grid. Returns what went wrong
// (a deadlock at a barrier, a shuffle naming an exited lane, ...), or "" when every
// thread ran to its end.
std::string run_grid(const Launch& launch, const std::function<void()>& thread);

}  // namespace ember::emu
