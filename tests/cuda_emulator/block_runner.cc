#include "tests/cuda_emulator/block_runner.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <vector>

#if !defined(__x86_64__)
#error "the CUDA emulator switches fibers with x86-64 code"
#endif

// Saves the callee-saved registers and the stack pointer to *save, then resumes the
// fiber whose stack pointer is `resume`. A plain function call to the C++ around it,
// and far cheaper than swapcontext, which also makes a system call to save the signal
// mask: the emulator switches at least twice per CUDA thread.
extern "C" void ember_emu_switch(void** save, void* resume);
asm(R"(
  .text
  .globl ember_emu_switch
  .type ember_emu_switch, @function
ember_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size ember_emu_switch, .-ember_emu_switch
)");

namespace ember::emu {

thread_local const ThreadCoordinates* current_coordinates = nullptr;

namespace {

constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr size_t kStackBytes = 256 * 1024;

enum class FiberState { Ready, AtBlockBarrier, AtWarpBarrier, Done };

struct Fiber {
  void* stack_pointer = nullptr;  // where ember_emu_switch resumes it
  ThreadCoordinates coordinates;
  FiberState state = FiberState::Ready;
  unsigned warp_mask = 0;  // the lanes an AtWarpBarrier fiber waits for
};

// One stack per fiber, mapped once per OS thread and reused by every block; pages are
// touched only as stacks grow. A guard page below each stack turns an overflow into a
// fault instead of a silent overwrite of the neighbour.
class Stacks {
 public:
  Stacks() {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    bytes_ = kMaxThreadsPerBlock * (kStackBytes + page_);
    void* base = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) std::abort();
    base_ = static_cast<char*>(base);
    for (unsigned i = 0; i < kMaxThreadsPerBlock; ++i) mprotect(base_ + i * (kStackBytes + page_), page_, PROT_NONE);
  }
  ~Stacks() { munmap(base_, bytes_); }
  Stacks(const Stacks&) = delete;
  Stacks& operator=(const Stacks&) = delete;

  char* stack(unsigned i) const { return base_ + i * (kStackBytes + page_) + page_; }

 private:
  char* base_ = nullptr;
  size_t page_ = 0, bytes_ = 0;
};

// The block being run on this OS thread.
struct Block {
  const std::function<void()>* thread = nullptr;
  std::vector<Fiber> fibers;
  Fiber* running = nullptr;
  void* scheduler = nullptr;  // the scheduler's stack pointer while a fiber runs
  std::vector<unsigned char> dynamic_shared;
  uint64_t shuffle_slots[kMaxThreadsPerBlock] = {};
  MatrixFragments fragments[kMaxThreadsPerBlock] = {};
};

thread_local Block* current_block = nullptr;

// Where every fiber starts; it never returns, it switches back for good.
[[noreturn]] void fiber_main() {
  Block& block = *current_block;
  (*block.thread)();
  block.running->state = FiberState::Done;
  ember_emu_switch(&block.running->stack_pointer, block.scheduler);
  __builtin_unreachable();
}

// A fresh fiber's stack, laid out as ember_emu_switch leaves a suspended one: six
// saved registers, then the address it "returns" to. fiber_main is entered as if
// called: the stack pointer is 16-byte aligned plus 8 (a return address) on entry.
void* fresh_stack(char* stack) {
  auto* top = reinterpret_cast<void**>((reinterpret_cast<uintptr_t>(stack + kStackBytes) & ~uintptr_t{15}) - 16);
  *top = reinterpret_cast<void*>(&fiber_main);
  return top - 6;
}

void wait_here(FiberState state, unsigned warp_mask) {
  Block& block = *current_block;
  Fiber& fiber = *block.running;
  fiber.state = state;
  fiber.warp_mask = warp_mask;
  ember_emu_switch(&fiber.stack_pointer, block.scheduler);
}

std::string describe(const uint3& i) {
  std::ostringstream s;
  s << "(" << i.x << "," << i.y << "," << i.z << ")";
  return s.str();
}

// After every ready fiber has run until it waits or ends: releases the barriers whose
// threads have all arrived. Returns false when none can be released (a deadlock), or
// sets `error` when the waiting is not allowed in CUDA.
bool release_barriers(Block& block, std::string& error) {
  std::vector<Fiber>& fibers = block.fibers;
  size_t done = 0, at_block = 0;
  for (const Fiber& f : fibers) {
    done += f.state == FiberState::Done;
    at_block += f.state == FiberState::AtBlockBarrier;
  }
  if (at_block > 0 && at_block + done == fibers.size()) {
    if (done > 0) {
      error = std::to_string(done) + " thread(s) of the block returned while " + std::to_string(at_block) +
              " wait at __syncthreads (a barrier every thread must reach)";
      return false;
    }
    for (Fiber& f : fibers) f.state = FiberState::Ready;
    return true;
  }
  bool released = false;
  for (size_t warp_start = 0; warp_start < fibers.size(); warp_start += 32) {
    const size_t lanes = std::min<size_t>(32, fibers.size() - warp_start);
    unsigned waiting = 0, wanted = 0;
    for (size_t lane = 0; lane < lanes; ++lane) {
      const Fiber& f = fibers[warp_start + lane];
      if (f.state != FiberState::AtWarpBarrier) continue;
      waiting |= 1u << lane;
      wanted |= f.warp_mask;
    }
    if (!waiting) continue;
    for (unsigned lane = 0; lane < 32; ++lane) {
      if (!(wanted >> lane & 1u)) continue;
      const uint3 where = fibers[warp_start].coordinates.thread_idx;
      if (lane >= lanes || fibers[warp_start + lane].state == FiberState::Done) {
        error = "a warp shuffle or __syncwarp by the warp of thread " + describe(where) + " names lane " +
                std::to_string(lane) + " in its mask, but that lane " +
                (lane >= lanes ? "does not exist (the block is not a whole number of warps)" : "has returned");
        return false;
      }
    }
    if ((wanted & ~waiting) != 0) continue;  // some lanes are still on their way
    for (size_t lane = 0; lane < lanes; ++lane) {
      if (waiting >> lane & 1u) fibers[warp_start + lane].state = FiberState::Ready;
    }
    released = true;
  }
  if (!released) {
    error = "deadlock: " + std::to_string(at_block) + " thread(s) wait at __syncthreads while others wait in warp " +
            "shuffles or have returned (threads of one block took different barriers)";
  }
  return released;
}

std::string run_block(Block& block, const Launch& launch, uint3 block_idx) {
  const unsigned threads = launch.block.x * launch.block.y * launch.block.z;
  static thread_local Stacks stacks;
  block.fibers.resize(threads);
  std::fill(block.dynamic_shared.begin(), block.dynamic_shared.end(), 0xff);
  for (unsigned i = 0; i < threads; ++i) {
    Fiber& f = block.fibers[i];
    f.stack_pointer = fresh_stack(stacks.stack(i));
    f.state = FiberState::Ready;
    f.coordinates.thread_idx = {i % launch.block.x, i / launch.block.x % launch.block.y,
                                i / (launch.block.x * launch.block.y)};
    f.coordinates.block_idx = block_idx;
    f.coordinates.block_dim = launch.block;
    f.coordinates.grid_dim = launch.grid;
    f.coordinates.linear = i;
  }
  std::string error;
  for (;;) {
    bool all_done = true;
    for (Fiber& f : block.fibers) {
      if (f.state == FiberState::Ready) {
        block.running = &f;
        current_coordinates = &f.coordinates;
        ember_emu_switch(&block.scheduler, f.stack_pointer);
      }
      all_done = all_done && f.state == FiberState::Done;
    }
    if (all_done) return "";
    if (!release_barriers(block, error)) return error;
  }
}

}  // namespace

void* dynamic_shared_bytes() { return current_block->dynamic_shared.data(); }

void block_barrier() { wait_here(FiberState::AtBlockBarrier, 0); }

void warp_barrier(unsigned mask) { wait_here(FiberState::AtWarpBarrier, mask); }

uint64_t& shuffle_slot(unsigned lane) {
  const size_t warp_start = current_coordinates->linear & ~31u;
  return current_block->shuffle_slots[warp_start + lane];
}

MatrixFragments& fragment_slot(unsigned lane) {
  const size_t warp_start = current_coordinates->linear & ~31u;
  return current_block->fragments[warp_start + lane];
}

std::string run_grid(const Launch& launch, const std::function<void()>& thread) {
  Block block;
  block.thread = &thread;
  block.dynamic_shared.resize(launch.shared_bytes);
  Block* outer = current_block;
  current_block = &block;
  std::string error;
  for (unsigned z = 0; z < launch.grid.z && error.empty(); ++z) {
    for (unsigned y = 0; y < launch.grid.y && error.empty(); ++y) {
      for (unsigned x = 0; x < launch.grid.x && error.empty(); ++x) {
        error = run_block(block, launch, uint3{x, y, z});
        if (!error.empty()) error = "block " + describe(uint3{x, y, z}) + ": " + error;
      }
    }
  }
  current_block = outer;
  current_coordinates = nullptr;
  return error;
}

}  // namespace ember::emu
