// Multi-tensor optimizer steps: one launch updates a whole parameter group.
// The group's tensors are cut into chunks of `chunk_size` elements;
// chunk_offsets[t] is the index of tensor t's first chunk (n_tensors + 1
// entries), so block b finds its tensor by binary search.  Pointer tables
// (params[t], grads[t], ...) and sizes live in device memory.  Every
// parameter, gradient and state element is read and written once.
// Formulas are torch.optim's single-tensor ones (see fused.sgd_step /
// fused.adam_step); hyperparameters arrive as doubles and bias corrections
// are computed on the host.

__device__ __forceinline__ int find_tensor(const i64* __restrict__ chunk_offsets, int n_tensors, i64 chunk) {
    int lo = 0, hi = n_tensors - 1;  // last t with chunk_offsets[t] <= chunk
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (chunk_offsets[mid] <= chunk) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

template <typename T>
__global__ void sgd_step(T* const* __restrict__ params, T* const* __restrict__ grads,
                         T* const* __restrict__ bufs, const i64* __restrict__ sizes,
                         const i64* __restrict__ chunk_offsets, int n_tensors, int chunk_size,
                         double lr, double momentum, double dampening, double weight_decay,
                         int nesterov, int maximize, int first_step) {
    const T lr_ = (T)lr, mom = (T)momentum, damp = T(1) - (T)dampening, wd = (T)weight_decay;
    const i64 n_chunks = chunk_offsets[n_tensors];
    for (i64 ch = blockIdx.x; ch < n_chunks; ch += gridDim.x) {
        const int t = find_tensor(chunk_offsets, n_tensors, ch);
        const i64 start = (ch - chunk_offsets[t]) * chunk_size;
        const i64 end = start + chunk_size < sizes[t] ? start + chunk_size : sizes[t];
        T* p = params[t];
        const T* g = grads[t];
        T* buf = bufs[t];
        for (i64 i = start + threadIdx.x; i < end; i += blockDim.x) {
            T d = maximize ? -g[i] : g[i];
            const T pv = p[i];
            if (wd != T(0)) d += wd * pv;
            if (mom != T(0)) {
                const T b = first_step ? d : mom * buf[i] + damp * d;
                buf[i] = b;
                d = nesterov ? d + mom * b : b;
            }
            p[i] = pv - lr_ * d;
        }
    }
}

template <typename T>
__global__ void adam_step(T* const* __restrict__ params, T* const* __restrict__ grads,
                          T* const* __restrict__ exp_avgs, T* const* __restrict__ exp_avg_sqs,
                          T* const* __restrict__ max_exp_avg_sqs, const i64* __restrict__ sizes,
                          const i64* __restrict__ chunk_offsets, int n_tensors, int chunk_size,
                          double lr, double beta1, double beta2, double eps, double weight_decay,
                          double step_size, double bias_correction2_sqrt,
                          int amsgrad, int maximize, int decoupled_weight_decay) {
    const T b1 = T(1) - (T)beta1, b2 = (T)beta2, ob2 = T(1) - (T)beta2, eps_ = (T)eps;
    const T wd = (T)weight_decay, decay = T(1) - (T)(lr * weight_decay);
    const T ss = (T)step_size, bc2 = (T)bias_correction2_sqrt;
    const i64 n_chunks = chunk_offsets[n_tensors];
    for (i64 ch = blockIdx.x; ch < n_chunks; ch += gridDim.x) {
        const int t = find_tensor(chunk_offsets, n_tensors, ch);
        const i64 start = (ch - chunk_offsets[t]) * chunk_size;
        const i64 end = start + chunk_size < sizes[t] ? start + chunk_size : sizes[t];
        T* p = params[t];
        const T* g = grads[t];
        T* m = exp_avgs[t];
        T* v = exp_avg_sqs[t];
        T* vmax = max_exp_avg_sqs[t];
        for (i64 i = start + threadIdx.x; i < end; i += blockDim.x) {
            T d = maximize ? -g[i] : g[i];
            T pv = p[i];
            if (wd != T(0)) {
                if (decoupled_weight_decay) pv *= decay;
                else d += wd * pv;
            }
            T mv = m[i];
            mv += b1 * (d - mv);
            const T vv = b2 * v[i] + ob2 * d * d;
            m[i] = mv;
            v[i] = vv;
            T den = vv;
            if (amsgrad) {
                den = vmax[i] > vv ? vmax[i] : vv;
                vmax[i] = den;
            }
            den = fb_sqrt(den) / bc2 + eps_;
            p[i] = pv - ss * (mv / den);
        }
    }
}
