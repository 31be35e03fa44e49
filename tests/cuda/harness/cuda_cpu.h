// cuda_cpu.h - run CUDA C kernels on the CPU, for tests.
//
// g++ compiles an unchanged kernel source after this header.  A launch runs
// the blocks of the grid one after another (in an order shuffled by the
// seed); the threads of a block are cooperative fibers (ucontext) that run
// until they reach __syncthreads or a warp collective (shuffle, vote,
// __syncwarp) and then yield to a scheduler, which resumes them in a shuffled
// order.  The scheduler reports, instead of hanging or silently passing:
//   * barrier divergence (threads exited or waiting at different barriers),
//   * warp collectives whose mask names lanes that exited, wait elsewhere or
//     do not exist, and deadlocks;
//   * out-of-bounds accesses: the Python wrapper places every array next to a
//     PROT_NONE guard page, and SIGSEGV is turned into an error report;
//   * fiber stack overflow, and kernels that run past a timeout.
// Dynamic shared memory and every static __shared__ array are filled with
// 0xFF bytes (NaN for floats) before each block, so a read that a missing
// barrier lets run early sees garbage.  INFINITY and NAN stay undefined, as
// under NVRTC.
//
// Race-check mode (FABRIC_RACECHECK, a separate build compiled with
// -fsanitize=thread so that g++ calls __tsan_readN / __tsan_writeN before
// every memory access; the hooks below replace ThreadSanitizer's runtime):
//   * every access to a kernel argument (global memory) or to shared memory is
//     recorded per byte: the last write and up to two reads by different
//     threads, each with its thread, block, barrier epoch and warp clock;
//   * an access that conflicts with a recorded one (write/read or write/write,
//     different threads, not both atomic) is reported unless a __syncthreads
//     (same block) or a warp collective naming both lanes (same warp) orders
//     them; accesses from different blocks are never ordered (no grid sync);
//   * threads are also preempted at memory operations, at random (seeded), so
//     that a missing barrier or atomic changes the results as on a GPU.
// compute-sanitizer's racecheck / synccheck are the model.
#pragma once

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#undef INFINITY
#undef NAN

// ---- CUDA keywords ------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
#define __shared__ static
#define FABRIC_DYNAMIC_SMEM() (fabric_harness::st().dynamic_smem)

struct uint3 { unsigned int x, y, z; };
struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int a = 1, unsigned int b = 1, unsigned int c = 1) : x(a), y(b), z(c) {}
};

// ---- __half ----------------------------------------------------------------
struct __half { _Float16 v; };
inline float __half2float(__half h) { return (float)h.v; }
inline __half __float2half(float f) { __half h; h.v = (_Float16)f; return h; }
inline __half __float2half_rn(float f) { return __float2half(f); }

namespace fabric_harness {

enum State { RUNNABLE, AT_BARRIER, AT_WARP, DONE };
enum WarpOp { W_SHFL_XOR, W_SHFL_DOWN, W_SHFL_UP, W_SHFL_IDX, W_BALLOT, W_ANY, W_ALL, W_SYNCWARP };

struct Thread {
    ucontext_t ctx;
    char* stack = nullptr;
    uint3 idx;
    int linear = 0;
    State state = RUNNABLE;
    const char* file = "";
    int line = 0;
    WarpOp op = W_SYNCWARP;
    unsigned mask = 0;
    int arg = 0, width = 32;
    unsigned long long val = 0, result = 0;
    unsigned vc[32];   // race check: vector clock over the lanes of this thread's warp
};

struct LaunchCfg {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned long long shared_mem;
    unsigned long long seed;
    int timeout_ms;
    int race;          // 1: record accesses and report races, 2: only preempt at them (FABRIC_RACECHECK build)
    double preempt;    // probability of preempting a thread at a recorded memory access
};

struct Harness {
    std::vector<Thread> threads;
    Thread* cur = nullptr;
    ucontext_t sched;
    dim3 block_dim, grid_dim;
    uint3 block_idx;
    unsigned char* dynamic_smem = nullptr;
    size_t dynamic_smem_size = 0;
    std::vector<std::pair<void*, size_t>> static_shared;
    std::function<void()> body;
    char error[4096];
    // fault reporting
    sigjmp_buf jump;
    volatile sig_atomic_t fault_kind = 0;  // 1 segv, 2 timeout
    void* fault_addr = nullptr;
    int fault_write = -1;
    size_t stack_size = 256 * 1024;
    // race-check mode
    int race = 0;
    double preempt = 0.0;
    std::mt19937_64 rng;
    long long block_linear = 0;
    unsigned epoch = 0;
};

inline Harness& st() {
    static Harness* h = new Harness();
    return *h;
}

inline Thread& cur() { return *st().cur; }

#if defined(FABRIC_RACECHECK)
#define FABRIC_NOSAN inline __attribute__((no_sanitize_thread, noinline))
#define FABRIC_HOOK __attribute__((no_sanitize_thread, used))
#else
#define FABRIC_NOSAN inline
#endif
inline void race_warp_join(int base, unsigned mask);
inline void race_new_epoch();

inline void yield_to_scheduler() { swapcontext(&st().cur->ctx, &st().sched); }

inline void fail_in_thread(const char* fmt, const char* a = "", int b = 0) {
    Harness& h = st();
    if (!h.error[0]) {
        char msg[1024];
        snprintf(msg, sizeof msg, fmt, a, b);
        snprintf(h.error, sizeof h.error, "block (%u,%u,%u) thread (%u,%u,%u): %s", h.block_idx.x,
                 h.block_idx.y, h.block_idx.z, h.cur->idx.x, h.cur->idx.y, h.cur->idx.z, msg);
    }
    h.cur->state = DONE;
    for (;;) yield_to_scheduler();  // never resumed: the scheduler stops on error
}

inline void syncthreads(const char* file, int line) {
    Thread& t = cur();
    t.state = AT_BARRIER;
    t.file = file;
    t.line = line;
    yield_to_scheduler();
}

template <typename V>
inline V warp_op(WarpOp op, unsigned mask, V v, int arg, int width, const char* file, int line) {
    static_assert(sizeof(V) <= 8, "warp collectives move at most 8 bytes");
    Thread& t = cur();
    if (width <= 0 || width > 32 || (width & (width - 1)))
        fail_in_thread("warp collective at %s:%d with width not a power of two <= 32", file, line);
    if (!(mask >> ((t.linear & 31)) & 1u))
        fail_in_thread("warp collective at %s:%d called by a lane missing from its mask", file, line);
    t.val = 0;
    memcpy(&t.val, &v, sizeof(V));
    t.op = op;
    t.mask = mask;
    t.arg = arg;
    t.width = width;
    t.file = file;
    t.line = line;
    t.state = AT_WARP;
    yield_to_scheduler();
    V r;
    memcpy(&r, &t.result, sizeof(V));
    return r;
}

// ---- the scheduler (runs on the launching thread's stack) ------------------
inline void fiber_entry() {
    st().body();
    st().cur->state = DONE;
    swapcontext(&st().cur->ctx, &st().sched);
}

inline void set_error(const char* msg) {
    Harness& h = st();
    if (!h.error[0])
        snprintf(h.error, sizeof h.error, "block (%u,%u,%u): %s", h.block_idx.x, h.block_idx.y, h.block_idx.z, msg);
}

inline std::string describe(const Thread& t) {
    char buf[256];
    const char* what = t.state == RUNNABLE ? "running" : t.state == DONE ? "exited"
                       : t.state == AT_BARRIER ? "at __syncthreads" : "at a warp collective";
    if (t.state == AT_BARRIER || t.state == AT_WARP)
        snprintf(buf, sizeof buf, "thread (%u,%u,%u) %s (%s:%d)", t.idx.x, t.idx.y, t.idx.z, what, t.file, t.line);
    else
        snprintf(buf, sizeof buf, "thread (%u,%u,%u) %s", t.idx.x, t.idx.y, t.idx.z, what);
    return buf;
}

// Release warp collectives whose named lanes have all arrived; 1 if any, -1 on error.
inline int release_warps() {
    Harness& h = st();
    const int n = (int)h.threads.size();
    int released = 0;
    for (int base = 0; base < n; base += 32) {
        const int lanes = std::min(32, n - base);
        int first = -1;
        for (int l = 0; l < lanes; ++l)
            if (h.threads[base + l].state == AT_WARP) { first = l; break; }
        if (first < 0) continue;
        Thread& f = h.threads[base + first];
        bool ready = true;
        for (int l = 0; l < 32; ++l) {
            if (!(f.mask >> l & 1u)) continue;
            if (l >= lanes) {
                char msg[512];
                snprintf(msg, sizeof msg, "warp collective at %s:%d names lane %d, which does not exist "
                         "(block of %d threads)", f.file, f.line, l, n);
                set_error(msg);
                return -1;
            }
            Thread& o = h.threads[base + l];
            if (o.state == RUNNABLE) { ready = false; continue; }
            if (o.state != AT_WARP || o.op != f.op || o.mask != f.mask || o.line != f.line || strcmp(o.file, f.file)) {
                std::string a = describe(f), b = describe(o);
                char msg[1024];
                snprintf(msg, sizeof msg, "warp collective mismatch in warp %d: %s, but %s", base / 32,
                         a.c_str(), b.c_str());
                set_error(msg);
                return -1;
            }
        }
        if (!ready) continue;
        unsigned ballot = 0;
        for (int l = 0; l < 32; ++l)
            if ((f.mask >> l & 1u) && h.threads[base + l].val) ballot |= 1u << l;
        for (int l = 0; l < 32; ++l) {
            if (!(f.mask >> l & 1u)) continue;
            Thread& t = h.threads[base + l];
            const int w = t.width, seg = l & ~(w - 1), pos = l & (w - 1);
            int src = l;
            switch (t.op) {
                case W_SHFL_XOR: src = l ^ t.arg; if ((src & ~(w - 1)) != seg) src = l; break;
                case W_SHFL_DOWN: src = pos + t.arg < w ? l + t.arg : l; break;
                case W_SHFL_UP: src = pos - t.arg >= 0 ? l - t.arg : l; break;
                case W_SHFL_IDX: src = seg + (t.arg & (w - 1)); break;
                default: break;
            }
            if (t.op <= W_SHFL_IDX) {
                if (src < 0 || src >= 32 || !(f.mask >> src & 1u)) {
                    char msg[512];
                    snprintf(msg, sizeof msg, "shuffle at %s:%d by lane %d reads lane %d, which is not in the mask",
                             t.file, t.line, l, src);
                    set_error(msg);
                    return -1;
                }
                t.result = h.threads[base + src].val;
            } else if (t.op == W_BALLOT) {
                t.result = ballot;
            } else if (t.op == W_ANY) {
                t.result = ballot != 0;
            } else if (t.op == W_ALL) {
                t.result = ballot == f.mask;
            }
        }
        if (h.race) race_warp_join(base, f.mask);
        for (int l = 0; l < 32; ++l)
            if (f.mask >> l & 1u) h.threads[base + l].state = RUNNABLE;
        released = 1;
    }
    return released;
}

// 1 released, 0 nothing to release, -1 error
inline int release_barrier() {
    Harness& h = st();
    const Thread* waiting = nullptr;
    const Thread* exited = nullptr;
    for (auto& t : h.threads) {
        if (t.state == RUNNABLE || t.state == AT_WARP) return 0;
        if (t.state == AT_BARRIER && !waiting) waiting = &t;
        if (t.state == DONE && !exited) exited = &t;
    }
    if (!waiting) return 0;
    if (exited) {
        std::string a = describe(*waiting), b = describe(*exited);
        char msg[1024];
        snprintf(msg, sizeof msg, "barrier divergence: %s, but %s", a.c_str(), b.c_str());
        set_error(msg);
        return -1;
    }
    for (auto& t : h.threads) {
        if (t.line != waiting->line || strcmp(t.file, waiting->file)) {
            std::string a = describe(*waiting), b = describe(t);
            char msg[1024];
            snprintf(msg, sizeof msg, "barrier divergence: %s, but %s", a.c_str(), b.c_str());
            set_error(msg);
            return -1;
        }
    }
    for (auto& t : h.threads) t.state = RUNNABLE;
    if (h.race) race_new_epoch();
    return 1;
}


// Set while the race check runs: the harness's own (instrumented) code then
// calls the hooks too, which return at once.
inline int& race_busy() {
    static int busy = 0;
    return busy;
}

// Set only while a race-checked launch runs (a constant-initialized flag: the hooks
// must not touch st() while it is being constructed).
inline int& race_on() {
    static int on = 0;
    return on;
}

// ---- race check ---------------------------------------------------------------
// One record per access kind per byte of tracked memory.
struct Access {
    long long block = -1;      // linear block index; -1: no access recorded
    unsigned epoch = 0;        // barrier interval (unique per block and barrier)
    unsigned clock = 0;        // the accessing lane's own warp clock
    const void* pc = nullptr;
    unsigned short tid = 0;    // linear thread index in the block
    unsigned char atomic = 0, size = 0;
};
struct Cell { Access w, r[2]; };
struct Region {
    uintptr_t lo = 0, hi = 0;
    int shared = 0;            // 1: shared memory (per block), 0: global (an argument)
    std::vector<Cell> cells;
};

inline std::vector<Region>& regions() {
    static std::vector<Region>* r = new std::vector<Region>();
    return *r;
}

inline void race_reset_clocks() {
    Harness& h = st();
    for (auto& t : h.threads) {
        memset(t.vc, 0, sizeof t.vc);
        t.vc[t.linear & 31] = 1;
    }
}

inline void race_new_epoch() {
    st().epoch++;
    race_reset_clocks();
}

// A warp collective released the lanes of `mask` (warp starting at `base`): all of
// them now happen after everything each of them did before.
inline void race_warp_join(int base, unsigned mask) {
    Harness& h = st();
    unsigned joined[32] = {0};
    for (int l = 0; l < 32; ++l) {
        if (!(mask >> l & 1u)) continue;
        for (int k = 0; k < 32; ++k) joined[k] = std::max(joined[k], h.threads[base + l].vc[k]);
    }
    for (int l = 0; l < 32; ++l) {
        if (!(mask >> l & 1u)) continue;
        Thread& t = h.threads[base + l];
        memcpy(t.vc, joined, sizeof joined);
        t.vc[l] = joined[l] + 1;
    }
}

// Whether a recorded access happens before the current thread's next access.
inline bool race_ordered(const Access& a) {
    Harness& h = st();
    const Thread& t = *h.cur;
    if (a.block != h.block_linear) return false;             // other blocks: never (no grid barrier)
    if (a.epoch != h.epoch) return true;                      // a __syncthreads in between
    if ((a.tid >> 5) != (t.linear >> 5)) return false;        // other warp, same barrier interval
    return t.vc[a.tid & 31] >= a.clock;                       // a warp collective joined both lanes
}

inline std::string race_who(long long block, unsigned tid) {
    Harness& h = st();
    char buf[160];
    const unsigned gx = h.grid_dim.x, gy = h.grid_dim.y, bx = h.block_dim.x, by = h.block_dim.y;
    snprintf(buf, sizeof buf, "block (%llu,%llu,%llu) thread (%u,%u,%u)", (unsigned long long)(block % gx),
             (unsigned long long)((block / gx) % gy), (unsigned long long)(block / ((long long)gx * gy)),
             tid % bx, (tid / bx) % by, tid / (bx * by));
    return buf;
}

inline void race_report(const Region& r, uintptr_t addr, const Access& prev, bool prev_write, bool write,
                        bool atomic, unsigned size, const void* pc) {
    Harness& h = st();
    if (!h.error[0]) {
        const char* kind = prev_write && write ? "write/write" : "write/read";
        std::string a = race_who(prev.block, prev.tid), b = race_who(h.block_linear, h.cur->linear);
        snprintf(h.error, sizeof h.error,
                 "data race (%s) on %s memory at %p: %s%s of %u bytes by %s [pc %p], then %s%s of %u bytes by %s "
                 "[pc %p], with no barrier or atomic ordering them",
                 kind, r.shared ? "shared" : "global", (void*)addr, prev.atomic ? "atomic " : "",
                 prev_write ? "write" : "read", (unsigned)prev.size, a.c_str(), prev.pc, atomic ? "atomic " : "",
                 write ? "write" : "read", size, b.c_str(), pc);
    }
    h.cur->state = DONE;
    race_busy() = 0;
    for (;;) yield_to_scheduler();
}

inline void on_access(const void* p, unsigned size, bool write, bool atomic, const void* pc) {
    Harness& h = st();
    if (!h.race || !h.cur) return;
    const uintptr_t addr = (uintptr_t)p;
    Region* r = nullptr;
    for (auto& reg : regions())
        if (addr >= reg.lo && addr < reg.hi) { r = &reg; break; }
    if (!r) return;
    if (h.preempt > 0 && std::uniform_real_distribution<double>(0.0, 1.0)(h.rng) < h.preempt) {
        race_busy() = 0;
        yield_to_scheduler();   // let other threads run first: the interleaving changes
        race_busy() = 1;
    }
    if (h.race == 2) return;    // interleaving only, no recording
    Thread& t = *h.cur;
    Access me;
    me.block = h.block_linear;
    me.epoch = h.epoch;
    me.clock = t.vc[t.linear & 31];
    me.pc = pc;
    me.tid = (unsigned short)t.linear;
    me.atomic = atomic;
    me.size = (unsigned char)size;
    const size_t first = addr - r->lo, last = std::min((size_t)(r->hi - r->lo), first + size);
    for (size_t i = first; i < last; ++i) {
        Cell& c = r->cells[i];
        if (r->shared) {   // shared memory starts over in every block
            if (c.w.block != h.block_linear) c.w.block = -1;
            for (auto& rd : c.r)
                if (rd.block != h.block_linear) rd.block = -1;
        }
        const bool same_thread_w = c.w.block == me.block && c.w.tid == me.tid;
        if (c.w.block >= 0 && !same_thread_w && !(atomic && c.w.atomic) && !race_ordered(c.w))
            race_report(*r, r->lo + i, c.w, true, write, atomic, size, pc);
        if (write) {
            for (auto& rd : c.r) {
                const bool same = rd.block == me.block && rd.tid == me.tid;
                if (rd.block >= 0 && !same && !(atomic && rd.atomic) && !race_ordered(rd))
                    race_report(*r, r->lo + i, rd, false, write, atomic, size, pc);
            }
            c.w = me;
            c.r[0].block = c.r[1].block = -1;
        } else {
            int slot = -1;
            for (int k = 0; k < 2 && slot < 0; ++k)
                if (c.r[k].block < 0 || (c.r[k].block == me.block && c.r[k].tid == me.tid)) slot = k;
            for (int k = 0; k < 2 && slot < 0; ++k)
                if (race_ordered(c.r[k])) slot = k;   // a read ordered before this one adds nothing
            c.r[slot < 0 ? 1 : slot] = me;
        }
    }
}

// Entry from the instrumentation hooks and the atomics.
FABRIC_NOSAN void hook_access(const void* p, unsigned size, bool write, bool atomic, const void* pc) {
    int& busy = race_busy();
    if (busy || !race_on()) return;
    busy = 1;
    on_access(p, size, write, atomic, pc);
    busy = 0;
}

// Arguments (global memory) of the next launch, set by the Python launcher.
inline std::vector<std::pair<uintptr_t, size_t>>& global_regions() {
    static std::vector<std::pair<uintptr_t, size_t>>* g = new std::vector<std::pair<uintptr_t, size_t>>();
    return *g;
}

inline void race_setup() {
    Harness& h = st();
    auto& rs = regions();
    rs.clear();
    if (!h.race) return;
    auto add = [&](uintptr_t lo, size_t n, int shared) {
        if (!n) return;
        Region r;
        r.lo = lo;
        r.hi = lo + n;
        r.shared = shared;
        r.cells.resize(n);
        rs.push_back(std::move(r));
    };
    for (auto& g : global_regions()) add(g.first, g.second, 0);
    for (auto& s : h.static_shared) add((uintptr_t)s.first, s.second, 1);
    add((uintptr_t)h.dynamic_smem, h.dynamic_smem_size, 1);
}

inline bool run_block(std::mt19937_64& rng) {
    Harness& h = st();
    const int n = (int)h.threads.size();
    if (h.dynamic_smem_size) memset(h.dynamic_smem, 0xFF, h.dynamic_smem_size);
    for (auto& r : h.static_shared) memset(r.first, 0xFF, r.second);
    for (int i = 0; i < n; ++i) {
        Thread& t = h.threads[i];
        t.state = RUNNABLE;
        t.linear = i;
        t.idx.x = i % h.block_dim.x;
        t.idx.y = (i / h.block_dim.x) % h.block_dim.y;
        t.idx.z = i / (h.block_dim.x * h.block_dim.y);
        getcontext(&t.ctx);
        t.ctx.uc_stack.ss_sp = t.stack;
        t.ctx.uc_stack.ss_size = h.stack_size;
        t.ctx.uc_link = nullptr;
        makecontext(&t.ctx, fiber_entry, 0);
    }
    if (h.race) race_new_epoch();
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    for (;;) {
        std::shuffle(order.begin(), order.end(), rng);
        bool ran = false;
        for (int i : order) {
            Thread& t = h.threads[i];
            if (t.state != RUNNABLE) continue;
            h.cur = &t;
            swapcontext(&h.sched, &t.ctx);
            h.cur = nullptr;
            ran = true;
            if (h.error[0]) return false;
        }
        bool all_done = true;
        for (auto& t : h.threads) all_done = all_done && t.state == DONE;
        if (all_done) return true;
        int w = release_warps();
        if (w < 0) return false;
        if (w > 0) continue;
        int b = release_barrier();
        if (b < 0) return false;
        if (b > 0 || ran) continue;
        std::string msg = "deadlock:";
        for (auto& t : h.threads) {
            if (t.state == DONE) continue;
            msg += " " + describe(t) + ";";
            if (msg.size() > 600) { msg += " ..."; break; }
        }
        set_error(msg.c_str());
        return false;
    }
}

inline void on_signal(int sig, siginfo_t* info, void* uctx) {
    Harness& h = st();
    h.fault_kind = sig == SIGALRM ? 2 : 1;
    h.fault_addr = info ? info->si_addr : nullptr;
#if defined(__x86_64__)
    if (sig != SIGALRM && uctx) h.fault_write = (((ucontext_t*)uctx)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#endif
    siglongjmp(h.jump, 1);
}

inline int run_grid(const LaunchCfg* cfg) {
    Harness& h = st();
    h.error[0] = 0;
    h.fault_kind = 0;
    h.fault_write = -1;
    h.block_dim = dim3(cfg->block[0], cfg->block[1], cfg->block[2]);
    h.grid_dim = dim3(cfg->grid[0], cfg->grid[1], cfg->grid[2]);
#if defined(FABRIC_RACECHECK)
    h.race = cfg->race;
    h.preempt = cfg->race ? cfg->preempt : 0.0;
#else
    if (cfg->race) {
        snprintf(h.error, sizeof h.error, "race check needs the race-check build (FABRIC_RACECHECK)");
        return 1;
    }
    h.race = 0;
    h.preempt = 0.0;
#endif
    h.rng.seed(cfg->seed * 0x9E3779B97F4A7C15ull + 1);
    h.epoch = 0;
    const long long nthreads = (long long)cfg->block[0] * cfg->block[1] * cfg->block[2];
    const long long nblocks = (long long)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
    if (nthreads <= 0 || nthreads > 1024 || cfg->block[2] > 64) {
        snprintf(h.error, sizeof h.error, "invalid block (%u,%u,%u): at most 1024 threads",
                 cfg->block[0], cfg->block[1], cfg->block[2]);
        return 1;
    }
    if (nblocks <= 0 || cfg->grid[1] > 65535 || cfg->grid[2] > 65535) {
        snprintf(h.error, sizeof h.error, "invalid grid (%u,%u,%u)", cfg->grid[0], cfg->grid[1], cfg->grid[2]);
        return 1;
    }
    if (cfg->shared_mem > 48 * 1024) {
        snprintf(h.error, sizeof h.error, "shared_mem=%llu exceeds the 48 KiB a block gets without opting in",
                 cfg->shared_mem);
        return 1;
    }
    // fiber stacks, each above a guard page
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t per = h.stack_size + page;
    char* stacks = (char*)mmap(nullptr, per * nthreads, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stacks == MAP_FAILED) {
        snprintf(h.error, sizeof h.error, "cannot allocate fiber stacks");
        return 1;
    }
    h.threads.assign(nthreads, Thread());
    for (long long i = 0; i < nthreads; ++i) {
        mprotect(stacks + i * per, page, PROT_NONE);
        h.threads[i].stack = stacks + i * per + page;
    }
    // dynamic shared memory ends at a guard page
    size_t smem_span = ((cfg->shared_mem + 15) / 16 * 16 + page - 1) / page * page + page;
    char* smem_map = (char*)mmap(nullptr, smem_span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(smem_map + smem_span, page, PROT_NONE);
    h.dynamic_smem = (unsigned char*)(smem_map + smem_span - (cfg->shared_mem + 15) / 16 * 16);
    h.dynamic_smem_size = cfg->shared_mem;
    race_setup();
    race_on() = h.race;

    std::vector<long long> blocks(nblocks);
    for (long long i = 0; i < nblocks; ++i) blocks[i] = i;
    std::mt19937_64 rng(cfg->seed);
    std::shuffle(blocks.begin(), blocks.end(), rng);

    // signals: SIGSEGV/SIGBUS on an alternate stack, SIGALRM for the timeout
    stack_t alt, old_alt;
    alt.ss_sp = malloc(1 << 16);
    alt.ss_size = 1 << 16;
    alt.ss_flags = 0;
    sigaltstack(&alt, &old_alt);
    struct sigaction sa, old_segv, old_bus, old_alrm;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    sigaction(SIGALRM, &sa, &old_alrm);
    struct itimerval timer, old_timer;
    memset(&timer, 0, sizeof timer);
    timer.it_value.tv_sec = cfg->timeout_ms / 1000;
    timer.it_value.tv_usec = (cfg->timeout_ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &timer, &old_timer);

    int rc = 0;
    if (sigsetjmp(h.jump, 1) == 0) {
        for (long long b : blocks) {
            h.block_idx.x = (unsigned)(b % cfg->grid[0]);
            h.block_idx.y = (unsigned)((b / cfg->grid[0]) % cfg->grid[1]);
            h.block_idx.z = (unsigned)(b / ((long long)cfg->grid[0] * cfg->grid[1]));
            h.block_linear = b;
            if (!run_block(rng)) { rc = 1; break; }
        }
    } else {
        rc = 2;
        char where[256] = "";
        if (h.cur) snprintf(where, sizeof where, " in block (%u,%u,%u) thread (%u,%u,%u)", h.block_idx.x,
                            h.block_idx.y, h.block_idx.z, h.cur->idx.x, h.cur->idx.y, h.cur->idx.z);
        if (h.fault_kind == 2) {
            snprintf(h.error, sizeof h.error, "kernel timed out after %d ms%s", cfg->timeout_ms, where);
        } else {
            const char* what = h.fault_write == 1 ? "write" : h.fault_write == 0 ? "read" : "access";
            const char* extra = "";
            char* a = (char*)h.fault_addr;
            if (a >= stacks && a < stacks + per * nthreads && (size_t)(a - stacks) % per < page)
                extra = " (fiber stack overflow)";
            else if (a >= smem_map + smem_span && a < smem_map + smem_span + page)
                extra = " (past the end of dynamic shared memory)";
            snprintf(h.error, sizeof h.error, "invalid %s at address %p%s%s", what, h.fault_addr, where, extra);
        }
    }

    memset(&timer, 0, sizeof timer);
    setitimer(ITIMER_REAL, &old_timer, nullptr);
    sigaction(SIGSEGV, &old_segv, nullptr);
    sigaction(SIGBUS, &old_bus, nullptr);
    sigaction(SIGALRM, &old_alrm, nullptr);
    sigaltstack(&old_alt, nullptr);
    free(alt.ss_sp);
    h.threads.clear();
    h.cur = nullptr;
    race_on() = 0;
    regions().clear();
    h.race = 0;
    munmap(stacks, per * nthreads);
    munmap(smem_map, smem_span + page);
    h.dynamic_smem = nullptr;
    return rc;
}

template <typename... P, size_t... I>
inline void call_kernel(void (*k)(P...), void** args, std::index_sequence<I...>) {
    k(*reinterpret_cast<typename std::remove_cv<typename std::remove_reference<P>::type>::type*>(args[I])...);
}

template <typename... P>
inline int launch(void (*k)(P...), const LaunchCfg* cfg, void** args) {
    st().body = [k, args] { call_kernel(k, args, std::index_sequence_for<P...>{}); };
    return run_grid(cfg);
}

// ---- C signature of a kernel, for the Python wrapper's argument checks -----
template <typename T> struct Code { static std::string get() { return "?"; } };
template <> struct Code<float> { static std::string get() { return "f4"; } };
template <> struct Code<double> { static std::string get() { return "f8"; } };
template <> struct Code<__half> { static std::string get() { return "f2"; } };
template <> struct Code<int> { static std::string get() { return "i4"; } };
template <> struct Code<unsigned int> { static std::string get() { return "u4"; } };
template <> struct Code<long long> { static std::string get() { return "i8"; } };
template <> struct Code<long> { static std::string get() { return "i8"; } };
template <> struct Code<unsigned long long> { static std::string get() { return "u8"; } };
template <> struct Code<unsigned long> { static std::string get() { return "u8"; } };
template <> struct Code<unsigned char> { static std::string get() { return "u1"; } };
template <> struct Code<signed char> { static std::string get() { return "i1"; } };
template <> struct Code<bool> { static std::string get() { return "b1"; } };
template <> struct Code<short> { static std::string get() { return "i2"; } };

template <typename P> inline std::string param_code() {
    typedef typename std::remove_cv<P>::type Q;
    if constexpr (std::is_pointer<Q>::value) {
        typedef typename std::remove_pointer<Q>::type E;
        typedef typename std::remove_cv<E>::type EU;
        if constexpr (std::is_pointer<EU>::value) {
            typedef typename std::remove_pointer<EU>::type F;
            return "pp:" + Code<typename std::remove_cv<F>::type>::get() +
                   (std::is_const<F>::value ? ":const" : "");
        } else {
            return "p:" + Code<EU>::get() + (std::is_const<E>::value ? ":const" : "");
        }
    } else {
        return Code<Q>::get();
    }
}

template <typename... P> inline const char* signature(void (*)(P...)) {
    static std::string s;
    s.clear();
    std::string parts[] = {param_code<P>()..., std::string()};
    for (size_t i = 0; i + 1 < sizeof(parts) / sizeof(parts[0]); ++i) s += (i ? "," : "") + parts[i];
    return s.c_str();
}

}  // namespace fabric_harness

// ---- the CUDA device API ---------------------------------------------------------------
#define threadIdx (fabric_harness::st().cur->idx)
#define blockIdx (fabric_harness::st().block_idx)
#define blockDim (fabric_harness::st().block_dim)
#define gridDim (fabric_harness::st().grid_dim)
#define warpSize 32

#define __syncthreads() fabric_harness::syncthreads(__FILE__, __LINE__)
#define __syncwarp(...) fabric_harness::syncwarp_impl(__FILE__, __LINE__ __VA_OPT__(,) __VA_ARGS__)
#define __shfl_xor_sync(mask, v, ...) fabric_harness::shfl(fabric_harness::W_SHFL_XOR, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(mask, v, ...) fabric_harness::shfl(fabric_harness::W_SHFL_DOWN, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(mask, v, ...) fabric_harness::shfl(fabric_harness::W_SHFL_UP, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_sync(mask, v, ...) fabric_harness::shfl(fabric_harness::W_SHFL_IDX, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __ballot_sync(mask, p) fabric_harness::vote(fabric_harness::W_BALLOT, mask, p, __FILE__, __LINE__)
#define __any_sync(mask, p) ((int)fabric_harness::vote(fabric_harness::W_ANY, mask, p, __FILE__, __LINE__))
#define __all_sync(mask, p) ((int)fabric_harness::vote(fabric_harness::W_ALL, mask, p, __FILE__, __LINE__))

namespace fabric_harness {
template <typename V>
inline V shfl(WarpOp op, unsigned mask, V v, const char* file, int line, int arg, int width = 32) {
    return warp_op<V>(op, mask, v, arg, width, file, line);
}
inline unsigned vote(WarpOp op, unsigned mask, int pred, const char* file, int line) {
    return (unsigned)warp_op<unsigned long long>(op, mask, pred ? 1ull : 0ull, 0, 32, file, line);
}
inline void syncwarp_impl(const char* file, int line, unsigned mask = 0xffffffffu) {
    warp_op<int>(W_SYNCWARP, mask, 0, 0, 32, file, line);
}
}  // namespace fabric_harness

inline void __threadfence() {}
inline void __threadfence_block() {}
template <typename T> inline T __ldg(const T* p) { return *p; }

// Blocks run one at a time and threads switch only at sync points (and, in
// race-check mode, at the recorded access before the read-modify-write, never
// inside it), so a plain read-modify-write is atomic here.
#if defined(FABRIC_RACECHECK)
#define FABRIC_ATOMIC_ACCESS(p) fabric_harness::hook_access(p, sizeof(*p), true, true, __builtin_return_address(0))
#else
#define FABRIC_ATOMIC_ACCESS(p) ((void)0)
#endif
template <typename T> FABRIC_NOSAN T atomicAdd(T* p, T v) { FABRIC_ATOMIC_ACCESS(p); T old = *p; *p = old + v; return old; }
template <typename T> FABRIC_NOSAN T atomicMax(T* p, T v) { FABRIC_ATOMIC_ACCESS(p); T old = *p; *p = old > v ? old : v; return old; }
template <typename T> FABRIC_NOSAN T atomicMin(T* p, T v) { FABRIC_ATOMIC_ACCESS(p); T old = *p; *p = old < v ? old : v; return old; }
template <typename T> FABRIC_NOSAN T atomicExch(T* p, T v) { FABRIC_ATOMIC_ACCESS(p); T old = *p; *p = v; return old; }
template <typename T> FABRIC_NOSAN T atomicCAS(T* p, T cmp, T v) { FABRIC_ATOMIC_ACCESS(p); T old = *p; if (old == cmp) *p = v; return old; }

inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
inline unsigned int __float_as_uint(float f) { unsigned int i; memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned int i) { float f; memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }
inline unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : x > 1.f ? 1.f : x; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

// ---- exported helpers (one copy per compiled module) ------------------------------------
extern "C" {
unsigned char fabric_anchor = 0;
const char* fabric_last_error() { return fabric_harness::st().error; }
void fabric_set_static_shared(void** ptrs, unsigned long long* sizes, int n) {
    auto& v = fabric_harness::st().static_shared;
    v.clear();
    for (int i = 0; i < n; ++i) v.emplace_back(ptrs[i], (size_t)sizes[i]);
}
void fabric_set_stack_size(unsigned long long bytes) { fabric_harness::st().stack_size = (size_t)bytes; }
}
extern "C" {
void* fabric_fault_address() { return fabric_harness::st().fault_addr; }
int fabric_fault_write() { return fabric_harness::st().fault_write; }
void fabric_set_global_regions(void** ptrs, unsigned long long* sizes, int n) {
    auto& g = fabric_harness::global_regions();
    g.clear();
    for (int i = 0; i < n; ++i) g.emplace_back((uintptr_t)ptrs[i], (size_t)sizes[i]);
}
int fabric_race_build() {
#if defined(FABRIC_RACECHECK)
    return 1;
#else
    return 0;
#endif
}
}

#if defined(FABRIC_RACECHECK)
// ThreadSanitizer's instrumentation entry points (g++ -fsanitize=thread emits the
// calls; no libtsan is linked): every load and store of the kernels lands here.
#define FABRIC_TSAN_HOOK(name, n, w) \
    extern "C" FABRIC_HOOK void name(void* p) { fabric_harness::hook_access(p, n, w, false, __builtin_return_address(0)); }
FABRIC_TSAN_HOOK(__tsan_read1, 1, false)
FABRIC_TSAN_HOOK(__tsan_read2, 2, false)
FABRIC_TSAN_HOOK(__tsan_read4, 4, false)
FABRIC_TSAN_HOOK(__tsan_read8, 8, false)
FABRIC_TSAN_HOOK(__tsan_read16, 16, false)
FABRIC_TSAN_HOOK(__tsan_write1, 1, true)
FABRIC_TSAN_HOOK(__tsan_write2, 2, true)
FABRIC_TSAN_HOOK(__tsan_write4, 4, true)
FABRIC_TSAN_HOOK(__tsan_write8, 8, true)
FABRIC_TSAN_HOOK(__tsan_write16, 16, true)
FABRIC_TSAN_HOOK(__tsan_unaligned_read2, 2, false)
FABRIC_TSAN_HOOK(__tsan_unaligned_read4, 4, false)
FABRIC_TSAN_HOOK(__tsan_unaligned_read8, 8, false)
FABRIC_TSAN_HOOK(__tsan_unaligned_read16, 16, false)
FABRIC_TSAN_HOOK(__tsan_unaligned_write2, 2, true)
FABRIC_TSAN_HOOK(__tsan_unaligned_write4, 4, true)
FABRIC_TSAN_HOOK(__tsan_unaligned_write8, 8, true)
FABRIC_TSAN_HOOK(__tsan_unaligned_write16, 16, true)
FABRIC_TSAN_HOOK(__tsan_volatile_read1, 1, false)
FABRIC_TSAN_HOOK(__tsan_volatile_read2, 2, false)
FABRIC_TSAN_HOOK(__tsan_volatile_read4, 4, false)
FABRIC_TSAN_HOOK(__tsan_volatile_read8, 8, false)
FABRIC_TSAN_HOOK(__tsan_volatile_read16, 16, false)
FABRIC_TSAN_HOOK(__tsan_volatile_write1, 1, true)
FABRIC_TSAN_HOOK(__tsan_volatile_write2, 2, true)
FABRIC_TSAN_HOOK(__tsan_volatile_write4, 4, true)
FABRIC_TSAN_HOOK(__tsan_volatile_write8, 8, true)
FABRIC_TSAN_HOOK(__tsan_volatile_write16, 16, true)
extern "C" FABRIC_HOOK void __tsan_read_range(void* p, unsigned long n) {
    fabric_harness::hook_access(p, (unsigned)n, false, false, __builtin_return_address(0));
}
extern "C" FABRIC_HOOK void __tsan_write_range(void* p, unsigned long n) {
    fabric_harness::hook_access(p, (unsigned)n, true, false, __builtin_return_address(0));
}
// atomics of the harness's own C++ (static-local guards): one launch runs at a time
extern "C" FABRIC_HOOK unsigned char __tsan_atomic8_load(const volatile unsigned char* p, int) { return *p; }
extern "C" FABRIC_HOOK void __tsan_atomic8_store(volatile unsigned char* p, unsigned char v, int) { *p = v; }
extern "C" FABRIC_HOOK int __tsan_atomic32_load(const volatile int* p, int) { return *p; }
extern "C" FABRIC_HOOK void __tsan_atomic32_store(volatile int* p, int v, int) { *p = v; }
extern "C" FABRIC_HOOK long long __tsan_atomic64_load(const volatile long long* p, int) { return *p; }
extern "C" FABRIC_HOOK void __tsan_atomic64_store(volatile long long* p, long long v, int) { *p = v; }
extern "C" FABRIC_HOOK void __tsan_atomic_thread_fence(int) {}
extern "C" FABRIC_HOOK void __tsan_atomic_signal_fence(int) {}
extern "C" FABRIC_HOOK void __tsan_init() {}
extern "C" FABRIC_HOOK void __tsan_func_entry(void*) {}
extern "C" FABRIC_HOOK void __tsan_func_exit() {}
extern "C" FABRIC_HOOK void __tsan_vptr_update(void*, void*) {}
extern "C" FABRIC_HOOK void __tsan_vptr_read(void*) {}
#endif
