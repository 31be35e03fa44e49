// Prelude prepended to every kernel file by launch.py (and by the CPU test
// harness), so every source is compiled exactly as NVRTC sees it.
//
// Rules for kernels (NVRTC rejects the alternatives):
//   * no <cmath>, INFINITY or NAN: use fb_inf<A>() / fb_nan<A>() below;
//   * blockDim.x a multiple of 32 for kernels that use the block reductions
//     (the launcher guarantees it);
//   * grid-stride loops over rows/elements, so any grid size is correct.
#include <cuda_fp16.h>

typedef long long i64;

// Dynamic shared memory.  The CPU harness provides its own definition of
// this hook (a C++ file cannot declare `extern __shared__`).
#ifndef FABRIC_DYNAMIC_SMEM
__device__ __forceinline__ unsigned char* fabric_dynamic_smem() {
    extern __shared__ __align__(16) unsigned char fabric_smem[];
    return fabric_smem;
}
#define FABRIC_DYNAMIC_SMEM() fabric_dynamic_smem()
#endif

// ---- storage type T -> accumulation type A (float16 -> float32) ---------
template <typename T> struct Acc { typedef T type; };
template <> struct Acc<__half> { typedef float type; };

__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }

template <typename T> __device__ __forceinline__ T from_acc(typename Acc<T>::type v);
template <> __device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ float from_acc<float>(float v) { return v; }
template <> __device__ __forceinline__ double from_acc<double>(double v) { return v; }

// ---- constants and math overloads ---------------------------------------
template <typename A> __device__ __forceinline__ A fb_inf();
template <> __device__ __forceinline__ float fb_inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double fb_inf<double>() {
    return __longlong_as_double(0x7ff0000000000000LL);
}
template <typename A> __device__ __forceinline__ A fb_nan();
template <> __device__ __forceinline__ float fb_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double fb_nan<double>() {
    return __longlong_as_double(0x7ff8000000000000LL);
}

__device__ __forceinline__ float fb_exp(float v) { return expf(v); }
__device__ __forceinline__ double fb_exp(double v) { return exp(v); }
__device__ __forceinline__ float fb_log(float v) { return logf(v); }
__device__ __forceinline__ double fb_log(double v) { return log(v); }
__device__ __forceinline__ float fb_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double fb_sqrt(double v) { return sqrt(v); }
__device__ __forceinline__ float fb_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double fb_tanh(double v) { return tanh(v); }
__device__ __forceinline__ float fb_erf(float v) { return erff(v); }
__device__ __forceinline__ double fb_erf(double v) { return erf(v); }
__device__ __forceinline__ float fb_abs(float v) { return fabsf(v); }
__device__ __forceinline__ double fb_abs(double v) { return fabs(v); }

// ---- warp and block reductions --------------------------------------------
// Values reduced are scalars or the small POD structs below; fb_shfl_xor is
// overloaded for each.
__device__ __forceinline__ float fb_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ double fb_shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }

template <typename A> struct Pair { A a, b; };
template <typename A> __device__ __forceinline__ Pair<A> fb_shfl_xor(Pair<A> v, int m) {
    Pair<A> r;
    r.a = fb_shfl_xor(v.a, m);
    r.b = fb_shfl_xor(v.b, m);
    return r;
}

// running (max, sum of exp(x - max)) of the online softmax
template <typename A> struct MaxSum { A m, s; };
template <typename A> __device__ __forceinline__ MaxSum<A> fb_shfl_xor(MaxSum<A> v, int m) {
    MaxSum<A> r;
    r.m = fb_shfl_xor(v.m, m);
    r.s = fb_shfl_xor(v.s, m);
    return r;
}

// Welford statistics: count, mean, sum of squared deviations
template <typename A> struct Welford { A n, mean, m2; };
template <typename A> __device__ __forceinline__ Welford<A> fb_shfl_xor(Welford<A> v, int m) {
    Welford<A> r;
    r.n = fb_shfl_xor(v.n, m);
    r.mean = fb_shfl_xor(v.mean, m);
    r.m2 = fb_shfl_xor(v.m2, m);
    return r;
}

struct SumOp {
    template <typename A> __device__ __forceinline__ A operator()(A x, A y) const { return x + y; }
    template <typename A> __device__ __forceinline__ Pair<A> operator()(Pair<A> x, Pair<A> y) const {
        Pair<A> r;
        r.a = x.a + y.a;
        r.b = x.b + y.b;
        return r;
    }
};

struct MaxSumOp {
    template <typename A> __device__ __forceinline__ MaxSum<A> operator()(MaxSum<A> x, MaxSum<A> y) const {
        MaxSum<A> r;
        r.m = x.m > y.m ? x.m : y.m;
        if (r.m == -fb_inf<A>()) {
            r.s = x.s + y.s;  // both empty (or NaN seen): exp(-inf - -inf) would be NaN
        } else {
            r.s = x.s * fb_exp(x.m - r.m) + y.s * fb_exp(y.m - r.m);
        }
        return r;
    }
};

struct WelfordOp {
    template <typename A> __device__ __forceinline__ Welford<A> operator()(Welford<A> x, Welford<A> y) const {
        Welford<A> r;
        r.n = x.n + y.n;
        if (r.n == A(0)) {
            r.mean = A(0);
            r.m2 = A(0);
            return r;
        }
        A d = y.mean - x.mean;
        A fy = y.n / r.n;
        r.mean = x.mean + d * fy;
        r.m2 = x.m2 + y.m2 + d * d * x.n * fy;
        return r;
    }
};

template <typename A> __device__ __forceinline__ void welford_push(Welford<A>& w, A v) {
    w.n += A(1);
    A d = v - w.mean;
    w.mean += d / w.n;
    w.m2 += d * (v - w.mean);
}

// Reduce `v` over the whole block; every thread gets the result.
// Needs blockDim.x * blockDim.y a multiple of 32; all threads must call it.
template <typename V, typename Op>
__device__ __forceinline__ V block_allreduce(V v, Op op, V identity) {
    __shared__ V scratch[32];
    const int tid = threadIdx.x + threadIdx.y * blockDim.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int nwarps = (blockDim.x * blockDim.y) >> 5;
    for (int o = 16; o > 0; o >>= 1) v = op(v, fb_shfl_xor(v, o));
    if (nwarps == 1) return v;
    __syncthreads();  // the previous call may still be reading scratch
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nwarps ? scratch[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, fb_shfl_xor(v, o));
    return v;
}

// Reduce `v` over the 32 lanes of a warp (all of them must call it); every lane gets the result.
template <typename V, typename Op>
__device__ __forceinline__ V warp_allreduce(V v, Op op) {
    for (int o = 16; o > 0; o >>= 1) v = op(v, fb_shfl_xor(v, o));
    return v;
}

// Who works on a row of a row kernel.  mode ROW_BLOCK / ROW_BLOCK_CACHED: one block
// per row (grid-stride over rows), threads stride over the columns; ROW_WARP: one
// warp per row, several rows per block (short rows: no shared memory, no barrier).
#define ROW_BLOCK 0
#define ROW_BLOCK_CACHED 1
#define ROW_WARP 2

struct RowTeam {
    i64 first, stride;   // this team's first row, and the row stride
    int lane, width;     // this thread's first column, and the column stride
    int warp;
    template <typename V, typename Op> __device__ __forceinline__ V allreduce(V v, Op op, V identity) const {
        return warp ? warp_allreduce(v, op) : block_allreduce(v, op, identity);
    }
};

__device__ __forceinline__ RowTeam row_team(int mode) {
    RowTeam t;
    t.warp = mode == ROW_WARP;
    if (t.warp) {
        t.first = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
        t.stride = ((i64)gridDim.x * blockDim.x) >> 5;
        t.lane = threadIdx.x & 31;
        t.width = 32;
    } else {
        t.first = blockIdx.x;
        t.stride = gridDim.x;
        t.lane = threadIdx.x;
        t.width = blockDim.x;
    }
    return t;
}

// Four consecutive elements, aligned to their size: one vector load / store
// (16 bytes for float) where a pointer is aligned to it.
template <typename T> struct __align__(4 * sizeof(T)) Vec4 { T v[4]; };

template <typename T> __device__ __forceinline__ bool vec4_aligned(const T* p) {
    return ((unsigned long long)p) % sizeof(Vec4<T>) == 0;
}
template <typename T> __device__ __forceinline__ Vec4<T> load_vec4(const T* p) {
    return *reinterpret_cast<const Vec4<T>*>(p);
}
template <typename T> __device__ __forceinline__ void store_vec4(T* p, const Vec4<T>& v) {
    *reinterpret_cast<Vec4<T>*>(p) = v;
}

// Grid-stride loop helpers.
__device__ __forceinline__ i64 fb_global_tid() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ i64 fb_grid_stride() { return (i64)gridDim.x * blockDim.x; }
