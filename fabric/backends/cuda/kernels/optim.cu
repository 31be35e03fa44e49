// Multi-tensor optimizer steps: one launch updates a whole parameter group.
// The group's tensors are cut into chunks of `chunk_size` elements;
// chunk_offsets[t] is the index of tensor t's first chunk (n_tensors + 1
// entries), so block b finds its tensor by binary search.  Pointer tables
// (params[t], grads[t], ...) and sizes live in device memory.  Every
// parameter, gradient and state element is read and written once.
// Formulas are torch.optim's single-tensor ones, in the float operations and
// order of fused.sgd_step / fused.adam_step.  Every constant that is a
// difference (1 - beta1, 1 - beta2, 1 - dampening, 1 - lr * weight_decay) and
// the bias corrections are computed on the host in double and rounded once to
// T, as the NumPy reference does: T(1) - (T)beta2 would round beta2 first
// (float32(0.999) = 0.99900001), a systematic error in every step.
//
// Memory-level parallelism: each thread keeps ILP = 4 elements of every array
// in flight.  Where a chunk's arrays are all aligned to 4 elements, one
// vector load / store per array moves them (16 bytes for float); otherwise
// four coalesced scalar loads, blockDim.x apart.

#define OPT_ILP 4   // = the width of Vec4 (common.cuh)

__device__ __forceinline__ int find_tensor(const i64* __restrict__ chunk_offsets, int n_tensors, i64 chunk) {
    int lo = 0, hi = n_tensors - 1;  // last t with chunk_offsets[t] <= chunk
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (chunk_offsets[mid] <= chunk) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

// The chunk [start, end) of tensor t that block-iteration `ch` updates.
__device__ __forceinline__ int chunk_range(const i64* __restrict__ sizes, const i64* __restrict__ chunk_offsets,
                                           int n_tensors, int chunk_size, i64 ch, i64& start, i64& end) {
    const int t = find_tensor(chunk_offsets, n_tensors, ch);
    start = (ch - chunk_offsets[t]) * chunk_size;
    end = start + chunk_size < sizes[t] ? start + chunk_size : sizes[t];
    return t;
}

// Apply f(e) to every element of [start, end) of NA parallel arrays: e[k] is
// array k's element; arrays in `reads` are loaded first, f runs, arrays in
// `writes` are stored (bit k = array k).  All loads of an iteration are issued
// before any store, so ILP elements per array are in flight per thread.
template <typename T, int NA, typename F>
__device__ __forceinline__ void chunk_apply(T* const (&ptr)[NA], unsigned reads, unsigned writes,
                                            i64 start, i64 end, const F& f) {
    bool aligned = true;
    for (int k = 0; k < NA; ++k)
        if ((reads | writes) >> k & 1u) aligned = aligned && vec4_aligned(ptr[k] + start);
    if (aligned) {
        const i64 nvec = (end - start) / OPT_ILP;
        for (i64 q = threadIdx.x; q < nvec; q += blockDim.x) {
            const i64 i = start + q * OPT_ILP;
            Vec4<T> r[NA];
#pragma unroll
            for (int k = 0; k < NA; ++k)
                if (reads >> k & 1u) r[k] = load_vec4(ptr[k] + i);
#pragma unroll
            for (int j = 0; j < OPT_ILP; ++j) {
                T e[NA];
#pragma unroll
                for (int k = 0; k < NA; ++k) e[k] = r[k].v[j];
                f(e);
#pragma unroll
                for (int k = 0; k < NA; ++k) r[k].v[j] = e[k];
            }
#pragma unroll
            for (int k = 0; k < NA; ++k)
                if (writes >> k & 1u) store_vec4(ptr[k] + i, r[k]);
        }
        start += nvec * OPT_ILP;   // the tail (< OPT_ILP elements) below, one per thread
        if (start + (i64)threadIdx.x < end) {
            const i64 i = start + threadIdx.x;
            T e[NA];
            for (int k = 0; k < NA; ++k) e[k] = (reads >> k & 1u) ? ptr[k][i] : T(0);
            f(e);
            for (int k = 0; k < NA; ++k)
                if (writes >> k & 1u) ptr[k][i] = e[k];
        }
        return;
    }
    for (i64 base = start; base < end; base += (i64)OPT_ILP * blockDim.x) {
        T r[OPT_ILP][NA];
#pragma unroll
        for (int j = 0; j < OPT_ILP; ++j) {
            const i64 i = base + threadIdx.x + (i64)j * blockDim.x;
#pragma unroll
            for (int k = 0; k < NA; ++k) r[j][k] = (i < end && (reads >> k & 1u)) ? ptr[k][i] : T(0);
        }
#pragma unroll
        for (int j = 0; j < OPT_ILP; ++j) f(r[j]);
#pragma unroll
        for (int j = 0; j < OPT_ILP; ++j) {
            const i64 i = base + threadIdx.x + (i64)j * blockDim.x;
            if (i < end) {
#pragma unroll
                for (int k = 0; k < NA; ++k)
                    if (writes >> k & 1u) ptr[k][i] = r[j][k];
            }
        }
    }
}

// e = {p, g, buf}
template <typename T> struct SgdUpdate {
    T lr, mom, damp, wd;   // damp = 1 - dampening (host double)
    int nesterov, maximize, first_step;
    __device__ __forceinline__ void operator()(T (&e)[3]) const {
        T d = maximize ? -e[1] : e[1];
        if (wd != T(0)) d += wd * e[0];
        if (mom != T(0)) {
            const T b = first_step ? d : mom * e[2] + damp * d;
            e[2] = b;
            d = nesterov ? d + mom * b : b;
        }
        e[0] -= lr * d;
    }
};

template <typename T>
__global__ void sgd_step(T* const* __restrict__ params, T* const* __restrict__ grads,
                         T* const* __restrict__ bufs, const i64* __restrict__ sizes,
                         const i64* __restrict__ chunk_offsets, int n_tensors, int chunk_size,
                         double lr, double momentum, double one_minus_dampening, double weight_decay,
                         int nesterov, int maximize, int first_step) {
    SgdUpdate<T> u;
    u.lr = (T)lr;
    u.mom = (T)momentum;
    u.damp = (T)one_minus_dampening;
    u.wd = (T)weight_decay;
    u.nesterov = nesterov;
    u.maximize = maximize;
    u.first_step = first_step;
    const bool has_buf = u.mom != T(0);
    const unsigned reads = 3u | ((has_buf && !first_step) ? 4u : 0u), writes = 1u | (has_buf ? 4u : 0u);
    const i64 n_chunks = chunk_offsets[n_tensors];
    for (i64 ch = blockIdx.x; ch < n_chunks; ch += gridDim.x) {
        i64 start, end;
        const int t = chunk_range(sizes, chunk_offsets, n_tensors, chunk_size, ch, start, end);
        T* const ptr[3] = {params[t], grads[t], bufs[t]};
        chunk_apply<T, 3>(ptr, reads, writes, start, end, u);
    }
}

// e = {p, g, m, v, vmax}; the float operations of fused.adam_step in its order.
template <typename T> struct AdamUpdate {
    T one_minus_beta1, beta2, one_minus_beta2, eps, wd, decay, step_size, bc2;
    int amsgrad, maximize, decoupled;
    __device__ __forceinline__ void operator()(T (&e)[5]) const {
        T d = maximize ? -e[1] : e[1];
        if (wd != T(0)) {
            if (decoupled) e[0] *= decay;
            else d += wd * e[0];
        }
        e[2] += one_minus_beta1 * (d - e[2]);
        e[3] = beta2 * e[3] + one_minus_beta2 * (d * d);
        T den = e[3];
        if (amsgrad) {
            den = e[4] > den ? e[4] : den;
            e[4] = den;
        }
        den = fb_sqrt(den) / bc2 + eps;
        e[0] -= step_size * (e[2] / den);
    }
};

template <typename T>
__global__ void adam_step(T* const* __restrict__ params, T* const* __restrict__ grads,
                          T* const* __restrict__ exp_avgs, T* const* __restrict__ exp_avg_sqs,
                          T* const* __restrict__ max_exp_avg_sqs, const i64* __restrict__ sizes,
                          const i64* __restrict__ chunk_offsets, int n_tensors, int chunk_size,
                          double one_minus_beta1, double beta2, double one_minus_beta2, double eps,
                          double weight_decay, double decay, double step_size, double bias_correction2_sqrt,
                          int amsgrad, int maximize, int decoupled_weight_decay) {
    AdamUpdate<T> u;
    u.one_minus_beta1 = (T)one_minus_beta1;
    u.beta2 = (T)beta2;
    u.one_minus_beta2 = (T)one_minus_beta2;
    u.eps = (T)eps;
    u.wd = (T)weight_decay;
    u.decay = (T)decay;
    u.step_size = (T)step_size;
    u.bc2 = (T)bias_correction2_sqrt;
    u.amsgrad = amsgrad;
    u.maximize = maximize;
    u.decoupled = decoupled_weight_decay;
    const unsigned rw = amsgrad ? 31u : 15u;
    const i64 n_chunks = chunk_offsets[n_tensors];
    for (i64 ch = blockIdx.x; ch < n_chunks; ch += gridDim.x) {
        i64 start, end;
        const int t = chunk_range(sizes, chunk_offsets, n_tensors, chunk_size, ch, start, end);
        T* const ptr[5] = {params[t], grads[t], exp_avgs[t], exp_avg_sqs[t], max_exp_avg_sqs[t]};
        chunk_apply<T, 5>(ptr, rw, rw & ~2u, start, end, u);
    }
}
