// Row-wise softmax / log_softmax over the last (contiguous) dimension.
// `mode` (common.cuh): ROW_BLOCK - one block per row (grid-stride over rows),
// threads stride over columns; ROW_BLOCK_CACHED - the same, with the row kept
// in dynamic shared memory (the launcher provides cols * sizeof(T), or twice
// that for softmax_bwd) so that global memory is read once; ROW_WARP - one
// warp per row and several rows per block, for short rows (attention scores:
// 64-1024 columns): warp-shuffle reductions only, and the second pass re-reads
// the row from L1 (a warp's row is at most 1024 elements).

// Forward: pass 1 is an online max / sum-of-exp (one read of x).
template <typename T, bool LOG>
__device__ __forceinline__ void softmax_rows(const T* __restrict__ x, T* __restrict__ y,
                                             i64 rows, int cols, int mode) {
    typedef typename Acc<T>::type A;
    T* cache = reinterpret_cast<T*>(FABRIC_DYNAMIC_SMEM());
    const int cached = mode == ROW_BLOCK_CACHED;
    const RowTeam team = row_team(mode);
    const A ninf = -fb_inf<A>();
    MaxSum<A> empty;
    empty.m = ninf;
    empty.s = A(0);
    for (i64 r = team.first; r < rows; r += team.stride) {
        const T* xr = x + r * cols;
        T* yr = y + r * cols;
        MaxSum<A> t = empty;
        for (i64 c = team.lane; c < cols; c += team.width) {
            T tv = xr[c];
            if (cached) cache[c] = tv;
            A v = to_acc(tv);
            if (v > t.m) {
                t.s = t.s * fb_exp(t.m - v) + A(1);
                t.m = v;
            } else if (!(v == ninf)) {
                t.s += fb_exp(v - t.m);  // NaN stays NaN
            }
        }
        t = team.allreduce(t, MaxSumOp(), empty);
        const A lse = fb_log(t.s);  // of the shifted row: (x - max) - lse, never x - (max + lse)
        const A inv = A(1) / t.s;
        // each thread re-reads only the columns it cached itself: no barrier needed
        for (i64 c = team.lane; c < cols; c += team.width) {
            const A z = to_acc(cached ? cache[c] : xr[c]) - t.m;
            yr[c] = from_acc<T>(LOG ? z - lse : fb_exp(z) * inv);
        }
    }
}

template <typename T>
__global__ void softmax_fwd(const T* __restrict__ x, T* __restrict__ y, i64 rows, int cols, int mode) {
    softmax_rows<T, false>(x, y, rows, cols, mode);
}

template <typename T>
__global__ void log_softmax_fwd(const T* __restrict__ x, T* __restrict__ y, i64 rows, int cols, int mode) {
    softmax_rows<T, true>(x, y, rows, cols, mode);
}

// gx = y * (gy - sum(gy * y)); the cache holds y then gy (2 * cols * sizeof(T)).
template <typename T>
__global__ void softmax_bwd(const T* __restrict__ y, const T* __restrict__ gy, T* __restrict__ gx,
                            i64 rows, int cols, int mode) {
    typedef typename Acc<T>::type A;
    T* cache = reinterpret_cast<T*>(FABRIC_DYNAMIC_SMEM());
    const int cached = mode == ROW_BLOCK_CACHED;
    const RowTeam team = row_team(mode);
    for (i64 r = team.first; r < rows; r += team.stride) {
        const i64 base = r * cols;
        A dot = A(0);
        for (i64 c = team.lane; c < cols; c += team.width) {
            T yv = y[base + c], gv = gy[base + c];
            if (cached) {
                cache[c] = yv;
                cache[cols + c] = gv;
            }
            dot += to_acc(yv) * to_acc(gv);
        }
        dot = team.allreduce(dot, SumOp(), A(0));
        for (i64 c = team.lane; c < cols; c += team.width) {
            A yv = to_acc(cached ? cache[c] : y[base + c]);
            A gv = to_acc(cached ? cache[cols + c] : gy[base + c]);
            gx[base + c] = from_acc<T>(yv * (gv - dot));
        }
    }
}

// gx = gy - exp(y) * sum(gy); the cache holds gy (cols * sizeof(T)).
template <typename T>
__global__ void log_softmax_bwd(const T* __restrict__ y, const T* __restrict__ gy, T* __restrict__ gx,
                                i64 rows, int cols, int mode) {
    typedef typename Acc<T>::type A;
    T* cache = reinterpret_cast<T*>(FABRIC_DYNAMIC_SMEM());
    const int cached = mode == ROW_BLOCK_CACHED;
    const RowTeam team = row_team(mode);
    for (i64 r = team.first; r < rows; r += team.stride) {
        const i64 base = r * cols;
        A sum = A(0);
        for (i64 c = team.lane; c < cols; c += team.width) {
            T gv = gy[base + c];
            if (cached) cache[c] = gv;
            sum += to_acc(gv);
        }
        sum = team.allreduce(sum, SumOp(), A(0));
        for (i64 c = team.lane; c < cols; c += team.width) {
            A gv = to_acc(cached ? cache[c] : gy[base + c]);
            gx[base + c] = from_acc<T>(gv - fb_exp(to_acc(y[base + c])) * sum);
        }
    }
}
