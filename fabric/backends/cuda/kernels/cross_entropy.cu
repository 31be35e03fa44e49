// Cross-entropy with integer targets, fused with log_softmax.
// Semantics are fused.cross_entropy's (PyTorch, reduction='none'):
//   loss = (1-eps) * w[t] * (lse - z[t]) + eps/C * (W * lse - sum_c w[c] z[c])
// with z = x - max(x) per row, lse = log(sum_c exp(z[c])) (the shifted log-sum-exp),
// W = sum(w) (C without weights) and loss = 0 where t == ignore_index.  Nothing is
// computed from max + lse: rounded to float32 that sum is off by ~1e-4 relative for
// logits ~1e4, and so would the loss and the gradient be.
// The forward reads each logit once (an online max / sum of exp / sum of w (x - max))
// and saves the shifted lse per row; the backward recomputes the row max (one more
// read of the row) and writes p = exp(x - max) * exp(-lse) in one pass.  A target
// outside [0, C) (not ignore_index) gives a NaN loss rather than an out-of-bounds read.
// `weight` is ignored (may be any array) unless has_weight.

// Online row statistics: max m, s = sum exp(x - m), a = sum w (x - m), b = sum w
// (a and b only with label smoothing).
template <typename A> struct CeStats { A m, s, a, b; };
template <typename A> __device__ __forceinline__ CeStats<A> fb_shfl_xor(CeStats<A> v, int m) {
    CeStats<A> r;
    r.m = fb_shfl_xor(v.m, m);
    r.s = fb_shfl_xor(v.s, m);
    r.a = fb_shfl_xor(v.a, m);
    r.b = fb_shfl_xor(v.b, m);
    return r;
}

// a re-expressed relative to a larger max M: sum w (x - M) = a + b (m - M)
template <typename A> __device__ __forceinline__ A ce_shift(const CeStats<A>& v, A M) {
    return (v.b != A(0) && v.m != M) ? v.b * (v.m - M) : A(0);
}

struct CeStatsOp {
    template <typename A> __device__ __forceinline__ CeStats<A> operator()(CeStats<A> x, CeStats<A> y) const {
        CeStats<A> r;
        r.m = x.m > y.m ? x.m : y.m;
        if (r.m == -fb_inf<A>()) {
            r.s = x.s + y.s;  // both empty (or only -inf seen): exp(-inf - -inf) would be NaN
        } else {
            r.s = x.s * fb_exp(x.m - r.m) + y.s * fb_exp(y.m - r.m);
        }
        r.a = x.a + y.a + ce_shift(x, r.m) + ce_shift(y, r.m);
        r.b = x.b + y.b;
        return r;
    }
};

struct CeMaxOp {
    template <typename A> __device__ __forceinline__ A operator()(A x, A y) const { return x > y ? x : y; }
};

template <typename T>
__global__ void cross_entropy_fwd(const T* __restrict__ logits, const i64* __restrict__ target,
                                  const T* __restrict__ weight, T* __restrict__ loss,
                                  typename Acc<T>::type* __restrict__ lse_out,
                                  i64 rows, int cols, i64 ignore_index, double smoothing, int has_weight) {
    typedef typename Acc<T>::type A;
    const A ninf = -fb_inf<A>();
    const A eps = (A)smoothing;
    CeStats<A> empty;
    empty.m = ninf;
    empty.s = A(0);
    empty.a = A(0);
    empty.b = A(0);
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = logits + r * cols;
        CeStats<A> t = empty;
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
            const A v = to_acc(xr[c]);
            if (v > t.m) {
                if (eps != A(0)) t.a += ce_shift(t, v);
                t.s = t.s * fb_exp(t.m - v) + A(1);
                t.m = v;
            } else if (!(v == ninf)) {
                t.s += fb_exp(v - t.m);  // NaN stays NaN
            }
            if (eps != A(0)) {
                const A w = has_weight ? to_acc(weight[c]) : A(1);
                t.a += w * (v == ninf ? v : v - t.m);  // -inf - -inf would be NaN
                t.b += w;
            }
        }
        t = block_allreduce(t, CeStatsOp(), empty);
        if (threadIdx.x == 0 && threadIdx.y == 0) {
            const A lse = fb_log(t.s);
            const i64 tg = target[r];
            A out = A(0);
            if (tg != ignore_index && (tg < 0 || tg >= cols)) {
                out = fb_nan<A>();  // out-of-range target: poison instead of reading out of bounds
            } else if (tg != ignore_index) {
                const A wt = has_weight ? to_acc(weight[tg]) : A(1);
                out = (A(1) - eps) * wt * (lse - (to_acc(xr[tg]) - t.m));
                if (eps != A(0)) out += eps / (A)cols * (t.b * lse - t.a);
            }
            loss[r] = from_acc<T>(out);
            lse_out[r] = lse;
        }
    }
}

// glogits = g * (a * p - [j == t] * b - eps/C * w[j]),  p = exp(x - max) * exp(-lse),
//   a = (1-eps) w[t] + eps W / C,  b = (1-eps) w[t];  zero rows where t is ignored.
template <typename T>
__global__ void cross_entropy_bwd(const T* __restrict__ logits, const typename Acc<T>::type* __restrict__ lse,
                                  const i64* __restrict__ target, const T* __restrict__ weight,
                                  const T* __restrict__ gloss, T* __restrict__ glogits,
                                  i64 rows, int cols, i64 ignore_index, double smoothing, int has_weight) {
    typedef typename Acc<T>::type A;
    const A ninf = -fb_inf<A>();
    const A eps = (A)smoothing;
    A wsum = (A)cols;
    if (has_weight && eps != A(0)) {
        A s = A(0);
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) s += to_acc(weight[c]);
        wsum = block_allreduce(s, SumOp(), A(0));
    }
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const i64 base = r * cols;
        const i64 tg = target[r];
        const bool ignored = tg == ignore_index || tg < 0 || tg >= cols;  // the same for the whole block
        if (ignored) {
            for (i64 c = threadIdx.x; c < cols; c += blockDim.x) glogits[base + c] = from_acc<T>(A(0));
            continue;
        }
        A mx = ninf;
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
            const A v = to_acc(logits[base + c]);
            mx = v > mx ? v : mx;
        }
        mx = block_allreduce(mx, CeMaxOp(), ninf);
        const A g = to_acc(gloss[r]);
        const A wt = has_weight ? to_acc(weight[tg]) : A(1);
        const A a = g * ((A(1) - eps) * wt + eps * wsum / (A)cols) * fb_exp(-lse[r]);
        const A b = g * (A(1) - eps) * wt;
        const A ge = g * eps / (A)cols;
        for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
            A out = a * fb_exp(to_acc(logits[base + c]) - mx) - ge * (has_weight ? to_acc(weight[c]) : A(1));
            if (c == tg) out -= b;
            glogits[base + c] = from_acc<T>(out);
        }
    }
}
