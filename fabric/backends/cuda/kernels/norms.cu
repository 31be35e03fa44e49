// Layer norm and RMS norm over the last (contiguous) dimension, one block per
// row.  The forward computes the statistics in one pass (Welford for layer
// norm) and, with `cached`, keeps the row in dynamic shared memory
// (cols * sizeof(T)) so x is read from global memory once.  mean / rstd are
// saved in the accumulation type.  The backward is two kernels: *_bwd writes
// gx row by row, *_bwd_params reduces gweight / gbias over rows into
// per-chunk partial sums (deterministic; the launcher sums the chunks).
// weight / bias are ignored (may be any array) unless has_weight / has_bias.

template <typename T>
__global__ void layer_norm_fwd(const T* __restrict__ x, const T* __restrict__ weight,
                               const T* __restrict__ bias, T* __restrict__ y,
                               typename Acc<T>::type* __restrict__ mean_out,
                               typename Acc<T>::type* __restrict__ rstd_out,
                               i64 rows, int cols, double eps, int has_weight, int has_bias, int cached) {
    typedef typename Acc<T>::type A;
    T* cache = reinterpret_cast<T*>(FABRIC_DYNAMIC_SMEM());
    Welford<A> empty;
    empty.n = A(0);
    empty.mean = A(0);
    empty.m2 = A(0);
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const i64 base = r * cols;
        Welford<A> w = empty;
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
            T tv = x[base + c];
            if (cached) cache[c] = tv;
            welford_push(w, to_acc(tv));
        }
        w = block_allreduce(w, WelfordOp(), empty);
        const A mean = w.mean;
        const A rstd = A(1) / fb_sqrt(w.m2 / (A)cols + (A)eps);
        if (threadIdx.x == 0) {
            mean_out[r] = mean;
            rstd_out[r] = rstd;
        }
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
            A v = (to_acc(cached ? cache[c] : x[base + c]) - mean) * rstd;
            if (has_weight) v *= to_acc(weight[c]);
            if (has_bias) v += to_acc(bias[c]);
            y[base + c] = from_acc<T>(v);
        }
    }
}

// gx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = gy * weight.
// The cache holds x then gy (2 * cols * sizeof(T)).
template <typename T>
__global__ void layer_norm_bwd(const T* __restrict__ gy, const T* __restrict__ x, const T* __restrict__ weight,
                               const typename Acc<T>::type* __restrict__ mean,
                               const typename Acc<T>::type* __restrict__ rstd, T* __restrict__ gx,
                               i64 rows, int cols, int has_weight, int cached) {
    typedef typename Acc<T>::type A;
    T* cache = reinterpret_cast<T*>(FABRIC_DYNAMIC_SMEM());
    Pair<A> zero;
    zero.a = A(0);
    zero.b = A(0);
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const i64 base = r * cols;
        const A mu = mean[r], rs = rstd[r];
        Pair<A> s = zero;  // a: sum g * xhat, b: sum g
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
            T xv = x[base + c], gv = gy[base + c];
            if (cached) {
                cache[c] = xv;
                cache[cols + c] = gv;
            }
            A g = to_acc(gv);
            if (has_weight) g *= to_acc(weight[c]);
            s.a += g * (to_acc(xv) - mu) * rs;
            s.b += g;
        }
        s = block_allreduce(s, SumOp(), zero);
        const A c1 = s.a / (A)cols, c2 = s.b / (A)cols;
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
            A xhat = (to_acc(cached ? cache[c] : x[base + c]) - mu) * rs;
            A g = to_acc(cached ? cache[cols + c] : gy[base + c]);
            if (has_weight) g *= to_acc(weight[c]);
            gx[base + c] = from_acc<T>(rs * (g - c2 - xhat * c1));
        }
    }
}

// Column sums over a chunk of rows: block (32, 8) covers 32 columns; chunk k
// (blockIdx.y) covers rows [k * rows_per_chunk, (k + 1) * rows_per_chunk).
// part_a[k, c] = sum gy * xhat (RMS: gy * x * rstd), part_b[k, c] = sum gy.
template <typename T, bool RMS>
__device__ __forceinline__ void norm_params_chunks(const T* __restrict__ gy, const T* __restrict__ x,
                                                   const typename Acc<T>::type* __restrict__ mean,
                                                   const typename Acc<T>::type* __restrict__ rstd,
                                                   typename Acc<T>::type* __restrict__ part_a,
                                                   typename Acc<T>::type* __restrict__ part_b,
                                                   i64 rows, int cols, i64 rows_per_chunk) {
    typedef typename Acc<T>::type A;
    __shared__ A sa[8][33];
    __shared__ A sb[8][33];
    const i64 n_chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
    for (i64 k = blockIdx.y; k < n_chunks; k += gridDim.y) {
        for (i64 c0 = (i64)blockIdx.x * 32; c0 < cols; c0 += (i64)gridDim.x * 32) {
            const i64 c = c0 + threadIdx.x;
            A a = A(0), b = A(0);
            const i64 end = (k + 1) * rows_per_chunk < rows ? (k + 1) * rows_per_chunk : rows;
            if (c < cols) {
                for (i64 r = k * rows_per_chunk + threadIdx.y; r < end; r += blockDim.y) {
                    A g = to_acc(gy[r * cols + c]);
                    A xv = to_acc(x[r * cols + c]);
                    a += g * (RMS ? xv : xv - mean[r]) * rstd[r];
                    b += g;
                }
            }
            sa[threadIdx.y][threadIdx.x] = a;
            sb[threadIdx.y][threadIdx.x] = b;
            __syncthreads();
            if (threadIdx.y == 0 && c < cols) {
                for (int j = 1; j < (int)blockDim.y; ++j) {
                    a += sa[j][threadIdx.x];
                    b += sb[j][threadIdx.x];
                }
                part_a[k * cols + c] = a;
                if (!RMS) part_b[k * cols + c] = b;
            }
            __syncthreads();
        }
    }
}

template <typename T>
__global__ void layer_norm_bwd_params(const T* __restrict__ gy, const T* __restrict__ x,
                                      const typename Acc<T>::type* __restrict__ mean,
                                      const typename Acc<T>::type* __restrict__ rstd,
                                      typename Acc<T>::type* __restrict__ part_w,
                                      typename Acc<T>::type* __restrict__ part_b,
                                      i64 rows, int cols, i64 rows_per_chunk) {
    norm_params_chunks<T, false>(gy, x, mean, rstd, part_w, part_b, rows, cols, rows_per_chunk);
}

template <typename T>
__global__ void rms_norm_fwd(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y,
                             typename Acc<T>::type* __restrict__ rstd_out,
                             i64 rows, int cols, double eps, int has_weight, int cached) {
    typedef typename Acc<T>::type A;
    T* cache = reinterpret_cast<T*>(FABRIC_DYNAMIC_SMEM());
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const i64 base = r * cols;
        A ss = A(0);
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
            T tv = x[base + c];
            if (cached) cache[c] = tv;
            A v = to_acc(tv);
            ss += v * v;
        }
        ss = block_allreduce(ss, SumOp(), A(0));
        const A rstd = A(1) / fb_sqrt(ss / (A)cols + (A)eps);
        if (threadIdx.x == 0) rstd_out[r] = rstd;
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
            A v = to_acc(cached ? cache[c] : x[base + c]) * rstd;
            if (has_weight) v *= to_acc(weight[c]);
            y[base + c] = from_acc<T>(v);
        }
    }
}

// gx = rstd * (g - x * rstd^2 * mean(g * x)),  g = gy * weight.  Cache: x, gy.
template <typename T>
__global__ void rms_norm_bwd(const T* __restrict__ gy, const T* __restrict__ x, const T* __restrict__ weight,
                             const typename Acc<T>::type* __restrict__ rstd, T* __restrict__ gx,
                             i64 rows, int cols, int has_weight, int cached) {
    typedef typename Acc<T>::type A;
    T* cache = reinterpret_cast<T*>(FABRIC_DYNAMIC_SMEM());
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const i64 base = r * cols;
        const A rs = rstd[r];
        A dot = A(0);
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
            T xv = x[base + c], gv = gy[base + c];
            if (cached) {
                cache[c] = xv;
                cache[cols + c] = gv;
            }
            A g = to_acc(gv);
            if (has_weight) g *= to_acc(weight[c]);
            dot += g * to_acc(xv);
        }
        dot = block_allreduce(dot, SumOp(), A(0)) / (A)cols;
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
            A xv = to_acc(cached ? cache[c] : x[base + c]);
            A g = to_acc(cached ? cache[cols + c] : gy[base + c]);
            if (has_weight) g *= to_acc(weight[c]);
            gx[base + c] = from_acc<T>(rs * (g - xv * rs * rs * dot));
        }
    }
}

template <typename T>
__global__ void rms_norm_bwd_params(const T* __restrict__ gy, const T* __restrict__ x,
                                    const typename Acc<T>::type* __restrict__ rstd,
                                    typename Acc<T>::type* __restrict__ part_w,
                                    i64 rows, int cols, i64 rows_per_chunk) {
    norm_params_chunks<T, true>(gy, x, rstd, rstd, part_w, part_w, rows, cols, rows_per_chunk);
}
