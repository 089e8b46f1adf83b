// Kernel launches of the CUDA emulation.
//
// Launches are serialised (one process-wide mutex: __shared__ variables are
// function-local statics). A launch runs its blocks one after another; the
// threads of a block run either as fibers on the launching thread (the
// default) or on a pool of OS threads (CUDA_EMU_SCHED=threads). A thread
// runs until it reaches a barrier (__syncthreads: its block; a shuffle: its
// warp) or finishes; a barrier opens when every live thread it waits for
// has arrived. Threads that have finished no longer count, as on the
// device.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime.h"
#include "internal.h"

thread_local uint3 threadIdx = {0, 0, 0};
thread_local uint3 blockIdx = {0, 0, 0};
thread_local dim3 blockDim;
thread_local dim3 gridDim;

// Stack switching for the fibers (x86-64 System V): saves the callee-saved
// registers and the x87/SSE control words on the current stack, stores the
// stack pointer in *save and continues on the stack `load`.
extern "C" {
__attribute__((visibility("hidden"))) void cuda_emu_switch(void** save,
                                                           void* load);
__attribute__((visibility("hidden"))) void cuda_emu_trampoline();
}
__asm__(R"(
  .text
  .p2align 4
  .globl cuda_emu_switch
  .hidden cuda_emu_switch
  .type cuda_emu_switch, @function
cuda_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  fnstcw (%rsp)
  stmxcsr 8(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  fldcw (%rsp)
  ldmxcsr 8(%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cuda_emu_switch, .-cuda_emu_switch

  .p2align 4
  .globl cuda_emu_trampoline
  .hidden cuda_emu_trampoline
  .type cuda_emu_trampoline, @function
cuda_emu_trampoline:
  movq %r12, %rdi
  andq $-16, %rsp
  callq *%r13
  ud2
  .size cuda_emu_trampoline, .-cuda_emu_trampoline
)");

namespace cuda_emu {
namespace {

constexpr int kWarp = 32;
constexpr int kMaxThreads = 1024;
constexpr size_t kFiberStack = 256 * 1024;

// Thrown out of a barrier when the block is abandoned (deadlock).
struct AbortBlock {};

enum class State { kRunnable, kBlockWait, kWarpWait, kDone };

struct Fiber;
struct Block;

struct ThreadSlot {
  Block* block = nullptr;
  int tid = 0, warp = 0, lane = 0;
  uint3 idx = {0, 0, 0};
  State state = State::kRunnable;
  const char* site = nullptr;  // the barrier waited at
  unsigned shuffles = 0;       // shuffles completed in this block
  unsigned mask = 0;           // mask of the pending shuffle
  Fiber* fiber = nullptr;
};

struct WarpState {
  int size = 0, live = 0, waiting = 0;
  uint64_t gen = 0;
  std::condition_variable cv;  // threaded mode: shuffles
  unsigned char slot[2][kWarp][16];
  unsigned round[2][kWarp];
};

thread_local ThreadSlot* t_self = nullptr;

// The launch being run.
struct LaunchInfo {
  const char* site;
  const char* name;
  void (*fn)(void*);
  void* ctx;
  dim3 grid, block;
};

// Diagnostics, each printed once per process (keyed by `key`).
std::mutex g_diag_mu;
std::set<std::string> g_diag_seen;

void DiagOnce(const std::string& key, const std::string& text) {
  {
    std::lock_guard<std::mutex> lock(g_diag_mu);
    if (!g_diag_seen.insert(key).second) return;
  }
  Report("%s", text.c_str());
}

std::string Dim(const uint3& d) {
  std::ostringstream os;
  os << "(" << d.x << "," << d.y << "," << d.z << ")";
  return os.str();
}

struct Block {
  const LaunchInfo* launch = nullptr;
  bool threaded = false;
  int n = 0, live = 0, done = 0;
  int block_waiting = 0;
  uint64_t block_gen = 0;
  int warp_waiting = 0;  // over all warps
  bool failed = false;   // a strict diagnostic fired
  bool aborting = false;
  uint3 index = {0, 0, 0};
  std::vector<ThreadSlot> t;
  std::vector<WarpState> warps;
  std::mutex mu;               // threaded mode only
  std::condition_variable cv;  // threaded mode: barriers
  std::condition_variable done_cv;

  void Setup(const LaunchInfo* info, bool use_threads) {
    launch = info;
    threaded = use_threads;
    const dim3 b = info->block;
    n = static_cast<int>(b.x * b.y * b.z);
    t.assign(static_cast<size_t>(n), ThreadSlot());
    warps =
        std::vector<WarpState>(static_cast<size_t>((n + kWarp - 1) / kWarp));
    for (int i = 0; i < n; ++i) {
      ThreadSlot& s = t[static_cast<size_t>(i)];
      s.block = this;
      s.tid = i;
      s.warp = i / kWarp;
      s.lane = i % kWarp;
      s.idx = uint3{static_cast<unsigned>(i) % b.x,
                    static_cast<unsigned>(i) / b.x % b.y,
                    static_cast<unsigned>(i) / (b.x * b.y)};
    }
  }

  void Reset(uint3 block_index) {
    index = block_index;
    live = n;
    done = 0;
    block_waiting = 0;
    warp_waiting = 0;
    aborting = false;
    for (ThreadSlot& s : t) {
      s.state = State::kRunnable;
      s.site = nullptr;
      s.shuffles = 0;
      s.mask = 0;
    }
    for (size_t w = 0; w < warps.size(); ++w) {
      WarpState& ws = warps[w];
      ws.size = std::min(kWarp, n - static_cast<int>(w) * kWarp);
      ws.live = ws.size;
      ws.waiting = 0;
      std::memset(ws.round, 0, sizeof(ws.round));
    }
  }

  std::string Where() const {
    return std::string("kernel ") + launch->name + " (launched at " +
           launch->site + "), block " + Dim(index);
  }

  void Strict(const std::string& key, const std::string& text) {
    if (Opts().strict) failed = true;
    DiagOnce(key, text);
  }

  void ReleaseBlock() {
    const char* first = nullptr;
    std::map<std::string, int> sites;
    for (ThreadSlot& s : t) {
      if (s.state != State::kBlockWait) continue;
      if (first == nullptr) first = s.site;
      ++sites[s.site];
      s.state = State::kRunnable;
    }
    if (sites.size() > 1) {
      std::ostringstream os;
      os << "divergent __syncthreads in " << Where() << ":";
      for (auto& kv : sites)
        os << " " << kv.second << " threads at " << kv.first << ";";
      Strict(std::string("div:") + launch->site + first, os.str());
    }
    if (live < n) {
      std::ostringstream os;
      os << "__syncthreads at " << first << " in " << Where() << " reached by "
         << live << " of " << n << " threads (the others have exited)";
      DiagOnce(std::string("partial:") + launch->site + first, os.str());
    }
    block_waiting = 0;
    ++block_gen;
    if (threaded) cv.notify_all();
  }

  void ReleaseWarp(int w) {
    WarpState& ws = warps[static_cast<size_t>(w)];
    unsigned arrived = 0;
    const char* site = nullptr;
    bool mixed = false;
    for (int l = 0; l < ws.size; ++l) {
      const ThreadSlot& s = t[static_cast<size_t>(w * kWarp + l)];
      if (s.state != State::kWarpWait) continue;
      arrived |= 1u << l;
      if (site == nullptr)
        site = s.site;
      else if (std::strcmp(site, s.site) != 0)
        mixed = true;
    }
    for (int l = 0; l < ws.size; ++l) {
      ThreadSlot& s = t[static_cast<size_t>(w * kWarp + l)];
      if (s.state != State::kWarpWait) continue;
      if ((s.mask & ~arrived) != 0) {
        std::ostringstream os;
        os << "__shfl_down_sync at " << s.site << " in " << Where() << ", warp "
           << w << ": mask 0x" << std::hex << s.mask
           << " names lanes that do not take part (0x" << (s.mask & ~arrived)
           << ")";
        Strict(std::string("mask:") + launch->site + s.site, os.str());
      }
      s.state = State::kRunnable;
    }
    if (mixed) {
      std::ostringstream os;
      os << "lanes of warp " << w << " in " << Where()
         << " shuffle at different call sites";
      Strict(std::string("mixed:") + launch->site + site, os.str());
    }
    warp_waiting -= ws.waiting;
    ws.waiting = 0;
    ++ws.gen;
    if (threaded) ws.cv.notify_all();
  }

  // Called after an arrival or an exit that opened no barrier.
  void CheckDeadlock() {
    if (live == 0 || block_waiting + warp_waiting != live) return;
    std::ostringstream os;
    os << "deadlock in " << Where() << ":";
    std::map<std::string, int> where;
    for (const ThreadSlot& s : t) {
      if (s.state == State::kBlockWait)
        ++where[std::string("__syncthreads at ") + s.site];
      else if (s.state == State::kWarpWait)
        ++where[std::string("shuffle at ") + s.site];
    }
    for (auto& kv : where)
      os << " " << kv.second << " threads wait at " << kv.first << ";";
    failed = true;
    DiagOnce(std::string("deadlock:") + launch->site, os.str());
    // Every waiting thread unwinds out of the kernel (AbortBlock).
    aborting = true;
    for (ThreadSlot& s : t)
      if (s.state != State::kDone) s.state = State::kRunnable;
    block_waiting = warp_waiting = 0;
    for (WarpState& ws : warps) ws.waiting = 0;
    if (threaded) {
      cv.notify_all();
      for (WarpState& ws : warps) ws.cv.notify_all();
    }
  }
};

// ---- fibers ----

struct Fiber {
  void* sp = nullptr;
  void* stack = nullptr;  // mapping, guard page first
  ThreadSlot* slot = nullptr;
};

struct FiberPool {
  void* sched_sp = nullptr;
  std::vector<Fiber*> fibers;
};
thread_local FiberPool t_pool;

void RunThreadBody();

void FiberMain(void* arg) {
  Fiber* f = static_cast<Fiber*>(arg);
  for (;;) {
    RunThreadBody();
    cuda_emu_switch(&f->sp, t_pool.sched_sp);
  }
}

Fiber* NewFiber() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* mem = mmap(nullptr, kFiberStack + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) {
    Report("cannot map a fiber stack");
    std::abort();
  }
  mprotect(mem, page, PROT_NONE);  // overflow faults instead of corrupting
  Fiber* f = new Fiber();
  f->stack = mem;
  uintptr_t top =
      (reinterpret_cast<uintptr_t>(mem) + page + kFiberStack) & ~uintptr_t{15};
  top -= 16;
  uint64_t* sp = reinterpret_cast<uint64_t*>(top - 88);
  uint16_t fpucw;
  uint32_t mxcsr;
  __asm__ volatile("fnstcw %0" : "=m"(fpucw));
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  std::memset(sp, 0, 88);
  std::memcpy(reinterpret_cast<char*>(sp), &fpucw, sizeof(fpucw));
  std::memcpy(reinterpret_cast<char*>(sp) + 8, &mxcsr, sizeof(mxcsr));
  sp[2] = 0;                                                 // r15
  sp[3] = 0;                                                 // r14
  sp[4] = reinterpret_cast<uint64_t>(&FiberMain);            // r13: entry
  sp[5] = reinterpret_cast<uint64_t>(f);                     // r12: argument
  sp[6] = 0;                                                 // rbx
  sp[7] = 0;                                                 // rbp
  sp[8] = reinterpret_cast<uint64_t>(&cuda_emu_trampoline);  // return address
  f->sp = sp;
  return f;
}

void RunBlockFibers(Block& b) {
  FiberPool& pool = t_pool;
  while (static_cast<int>(pool.fibers.size()) < b.n)
    pool.fibers.push_back(NewFiber());
  for (int i = 0; i < b.n; ++i) {
    pool.fibers[static_cast<size_t>(i)]->slot = &b.t[static_cast<size_t>(i)];
    b.t[static_cast<size_t>(i)].fiber = pool.fibers[static_cast<size_t>(i)];
  }
  const bool reverse = Opts().reverse;
  while (b.done < b.n) {
    bool ran = false;
    for (int k = 0; k < b.n; ++k) {
      ThreadSlot& s = b.t[static_cast<size_t>(reverse ? b.n - 1 - k : k)];
      if (s.state != State::kRunnable) continue;
      ran = true;
      t_self = &s;
      threadIdx = s.idx;
      cuda_emu_switch(&pool.sched_sp, s.fiber->sp);
    }
    if (!ran && b.done < b.n) {
      b.CheckDeadlock();
      if (!b.aborting) {
        Report("internal error: no runnable thread in %s", b.Where().c_str());
        std::abort();
      }
    }
  }
  t_self = nullptr;
}

// Blocks the calling CUDA thread until `open()`.
template <typename F>
void Park(Block& b, std::condition_variable& cv,
          std::unique_lock<std::mutex>& lock, F open) {
  while (!open() && !b.aborting) {
    if (b.threaded) {
      cv.wait(lock);
    } else {
      ThreadSlot* me = t_self;
      cuda_emu_switch(&me->fiber->sp, t_pool.sched_sp);
    }
  }
  if (b.aborting) throw AbortBlock();
}

std::unique_lock<std::mutex> Lock(Block& b) {
  return b.threaded ? std::unique_lock<std::mutex>(b.mu)
                    : std::unique_lock<std::mutex>();
}

void ThreadExit() {
  ThreadSlot& me = *t_self;
  Block& b = *me.block;
  auto lock = Lock(b);
  me.state = State::kDone;
  --b.live;
  ++b.done;
  WarpState& ws = b.warps[static_cast<size_t>(me.warp)];
  --ws.live;
  bool opened = false;
  if (b.block_waiting > 0 && b.block_waiting == b.live) {
    b.ReleaseBlock();
    opened = true;
  }
  if (ws.waiting > 0 && ws.waiting == ws.live) {
    b.ReleaseWarp(me.warp);
    opened = true;
  }
  if (!opened && !b.aborting) b.CheckDeadlock();
  if (b.threaded && b.done == b.n) b.done_cv.notify_all();
}

void RunThreadBody() {
  ThreadSlot& me = *t_self;
  Block& b = *me.block;
  try {
    b.launch->fn(b.launch->ctx);
  } catch (const AbortBlock&) {
  } catch (const std::exception& e) {
    auto lock = Lock(b);
    b.failed = true;
    DiagOnce(std::string("throw:") + b.launch->site,
             std::string("exception thrown in ") + b.Where() + ": " + e.what());
  } catch (...) {
    auto lock = Lock(b);
    b.failed = true;
    DiagOnce(std::string("throw:") + b.launch->site,
             std::string("exception thrown in ") + b.Where());
  }
  ThreadExit();
}

// ---- OS threads ----

class ThreadPool {
 public:
  void Run(Block& b) {
    while (static_cast<int>(workers_.size()) < b.n) {
      workers_.push_back(std::make_unique<Worker>());
      Worker* w = workers_.back().get();
      w->thread = std::thread([w] { WorkerLoop(w); });
      w->thread.detach();
    }
    for (int i = 0; i < b.n; ++i) {
      Worker& w = *workers_[static_cast<size_t>(i)];
      std::lock_guard<std::mutex> lock(w.mu);
      w.slot = &b.t[static_cast<size_t>(i)];
      w.block_idx = blockIdx;
      w.grid = gridDim;
      w.block = blockDim;
      ++w.go;
      w.cv.notify_one();
    }
    std::unique_lock<std::mutex> lock(b.mu);
    b.done_cv.wait(lock, [&] { return b.done == b.n; });
  }

 private:
  struct Worker {
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    uint64_t go = 0;
    ThreadSlot* slot = nullptr;
    uint3 block_idx = {0, 0, 0};
    dim3 grid, block;
  };

  static void WorkerLoop(Worker* w) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(w->mu);
        w->cv.wait(lock, [&] { return w->go != seen; });
        seen = w->go;
        t_self = w->slot;
        blockIdx = w->block_idx;
        gridDim = w->grid;
        blockDim = w->block;
      }
      threadIdx = t_self->idx;
      RunThreadBody();
    }
  }

  std::vector<std::unique_ptr<Worker>> workers_;
};

ThreadPool& Pool() {
  static ThreadPool* pool = new ThreadPool();  // workers never joined
  return *pool;
}

std::mutex& LaunchMutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}

bool ValidConfig(dim3 grid, dim3 block, size_t shared) {
  const unsigned long long threads =
      static_cast<unsigned long long>(block.x) * block.y * block.z;
  return grid.x >= 1 && grid.y >= 1 && grid.z >= 1 && block.x >= 1 &&
         block.y >= 1 && block.z >= 1 && block.x <= 1024 && block.y <= 1024 &&
         block.z <= 64 && threads <= kMaxThreads && grid.x <= INT_MAX &&
         grid.y <= 65535 && grid.z <= 65535 && shared <= 48 * 1024;
}

}  // namespace

void SyncThreads(const char* site) {
  ThreadSlot* me = t_self;
  if (me == nullptr) {
    Report("__syncthreads at %s called outside a kernel", site);
    std::abort();
  }
  Block& b = *me->block;
  auto lock = Lock(b);
  me->state = State::kBlockWait;
  me->site = site;
  ++b.block_waiting;
  const uint64_t gen = b.block_gen;
  if (b.block_waiting == b.live) {
    b.ReleaseBlock();
    return;
  }
  b.CheckDeadlock();
  Park(b, b.cv, lock, [&] { return b.block_gen != gen; });
}

void ShuffleDown(const char* site, unsigned mask, const void* value,
                 size_t bytes, unsigned delta, int width, void* out) {
  ThreadSlot* me = t_self;
  if (me == nullptr) {
    Report("__shfl_down_sync at %s called outside a kernel", site);
    std::abort();
  }
  Block& b = *me->block;
  auto lock = Lock(b);
  if (width <= 0 || width > kWarp || (width & (width - 1)) != 0) {
    b.Strict(std::string("width:") + site,
             std::string("__shfl_down_sync at ") + site +
                 ": width must be a power of 2 in [1, 32]");
    width = kWarp;
  }
  WarpState& ws = b.warps[static_cast<size_t>(me->warp)];
  const unsigned phase = me->shuffles & 1;
  const unsigned round = me->shuffles + 1;
  std::memcpy(ws.slot[phase][me->lane], value, bytes);
  ws.round[phase][me->lane] = round;
  me->state = State::kWarpWait;
  me->site = site;
  me->mask = mask;
  ++ws.waiting;
  ++b.warp_waiting;
  const uint64_t gen = ws.gen;
  if (ws.waiting == ws.live) {
    b.ReleaseWarp(me->warp);
  } else {
    b.CheckDeadlock();
    Park(b, ws.cv, lock, [&] { return ws.gen != gen; });
  }
  const int lane = me->lane;
  const int segment_end = (lane & ~(width - 1)) + width;
  const unsigned src = static_cast<unsigned>(lane) + delta;
  if (src >= static_cast<unsigned>(segment_end) || src >= kWarp) {
    std::memcpy(out, value, bytes);
  } else if (ws.round[phase][src] != round) {
    std::ostringstream os;
    os << "__shfl_down_sync at " << site << " in " << b.Where() << ": lane "
       << lane << " reads lane " << src << ", which did not take part";
    b.Strict(std::string("src:") + b.launch->site + site, os.str());
    std::memcpy(out, value, bytes);
  } else {
    std::memcpy(out, ws.slot[phase][src], bytes);
  }
  ++me->shuffles;
}

void Launch::Execute(const char* site, const char* name, void (*fn)(void*),
                     void* ctx) {
  const Options& o = Opts();
  if (o.devices == 0) {
    SetLastError(cudaErrorNoDevice);
    return;
  }
  if (!ValidConfig(grid_, block_, shared_)) {
    std::ostringstream os;
    os << "invalid launch configuration for " << name << " at " << site
       << ": grid " << Dim(grid_) << ", block " << Dim(block_) << ", "
       << shared_ << " bytes of dynamic shared memory";
    Report("%s", os.str().c_str());
    SetLastError(cudaErrorInvalidConfiguration);
    return;
  }
  if (!IsValidStream(stream_)) {
    Report("launch of %s at %s on %p, which is not a live stream", name, site,
           static_cast<void*>(stream_));
    SetLastError(cudaErrorInvalidResourceHandle);
    return;
  }
  std::lock_guard<std::mutex> launch_lock(LaunchMutex());
  if (o.trace) {
    Report("launch %s at %s: grid %s, block %s", name, site, Dim(grid_).c_str(),
           Dim(block_).c_str());
  }
  LaunchInfo info{site, name, fn, ctx, grid_, block_};
  auto block = std::make_unique<Block>();
  block->Setup(&info, o.threads);
  gridDim = grid_;
  blockDim = block_;
  const unsigned long long total =
      static_cast<unsigned long long>(grid_.x) * grid_.y * grid_.z;
  bool abandoned = false;
  for (unsigned long long k = 0; k < total; ++k) {
    const unsigned long long i = o.reverse ? total - 1 - k : k;
    const uint3 bi{
        static_cast<unsigned>(i % grid_.x),
        static_cast<unsigned>(i / grid_.x % grid_.y),
        static_cast<unsigned>(
            i / (static_cast<unsigned long long>(grid_.x) * grid_.y))};
    blockIdx = bi;
    block->Reset(bi);
    if (o.threads) {
      Pool().Run(*block);
    } else {
      RunBlockFibers(*block);
    }
    if (block->aborting) {
      abandoned = true;
      break;
    }
  }
  cudaError_t error = cudaSuccess;
  if (block->failed && (o.strict || abandoned)) error = cudaErrorLaunchFailure;
  if (o.redzones) {
    std::string what =
        std::string("kernel ") + name + " (launched at " + site + ")";
    if (!CheckRedZones(what.c_str())) error = cudaErrorIllegalAddress;
  }
  if (error != cudaSuccess) SetLastError(error);
}

}  // namespace cuda_emu
