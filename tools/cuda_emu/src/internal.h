// What the parts of the CUDA emulation share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda_runtime_api.h"

namespace cuda_emu {

struct Options {
  int devices = 1;          // CUDA_EMU_DEVICES
  int multiprocessors = 2;  // CUDA_EMU_SMS
  bool threads = false;     // CUDA_EMU_SCHED=threads (else fibers)
  bool poison = true;       // CUDA_EMU_POISON: new device memory 0xFF
  bool redzones = true;     // CUDA_EMU_REDZONE: check after each launch
  bool strict = true;       // CUDA_EMU_STRICT: sync misuse fails a launch
  bool reverse = false;     // CUDA_EMU_REVERSE: blocks/threads in reverse
  bool trace = false;       // CUDA_EMU_TRACE: log every launch
  size_t memory_limit = 0;  // CUDA_EMU_MEM_LIMIT (bytes, 0: none)
};
const Options& Opts();

int CurrentDevice();

// Checks every live allocation's red zones; reports (naming `after`) and
// repairs those overwritten. False when one was.
bool CheckRedZones(const char* after);

// A device range [lo, hi) of an allocation, or false.
bool FindAllocation(const void* p, uintptr_t* base, size_t* size);

}  // namespace cuda_emu
