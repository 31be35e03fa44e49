// Cross-entropy with integer targets, fused with log_softmax.
// Semantics are fused.cross_entropy's (PyTorch, reduction='none'):
//   loss = (1-eps) * w[t] * (lse - x[t]) + eps/C * (W * lse - sum_c w[c] x[c])
// with W = sum(w) (C without weights) and loss = 0 where t == ignore_index.
// The forward reads each logit once (online log-sum-exp) and saves lse per
// row; the backward recomputes p = exp(x - lse) and writes the gradient in
// one read of the logits.  A target outside [0, C) (not ignore_index)
// gives a NaN loss rather than an out-of-bounds read.  `weight` is ignored (may be any array) unless has_weight.

template <typename T>
__global__ void cross_entropy_fwd(const T* __restrict__ logits, const i64* __restrict__ target,
                                  const T* __restrict__ weight, T* __restrict__ loss,
                                  typename Acc<T>::type* __restrict__ lse_out,
                                  i64 rows, int cols, i64 ignore_index, double smoothing, int has_weight) {
    typedef typename Acc<T>::type A;
    const A ninf = -fb_inf<A>();
    const A eps = (A)smoothing;
    MaxSum<A> empty;
    empty.m = ninf;
    empty.s = A(0);
    Pair<A> zero;
    zero.a = A(0);
    zero.b = A(0);
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = logits + r * cols;
        MaxSum<A> t = empty;
        Pair<A> sums = zero;  // a: sum_c w[c] x[c], b: sum_c w[c]
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
            A v = to_acc(xr[c]);
            if (v > t.m) {
                t.s = t.s * fb_exp(t.m - v) + A(1);
                t.m = v;
            } else if (!(v == ninf)) {
                t.s += fb_exp(v - t.m);
            }
            if (eps != A(0)) {
                A w = has_weight ? to_acc(weight[c]) : A(1);
                sums.a += w * v;
                sums.b += w;
            }
        }
        t = block_allreduce(t, MaxSumOp(), empty);
        if (eps != A(0)) sums = block_allreduce(sums, SumOp(), zero);
        if (threadIdx.x == 0 && threadIdx.y == 0) {
            const A lse = t.m + fb_log(t.s);
            const i64 tg = target[r];
            A out = A(0);
            if (tg != ignore_index && (tg < 0 || tg >= cols)) {
                out = fb_nan<A>();  // out-of-range target: poison instead of reading out of bounds
            } else if (tg != ignore_index) {
                const A wt = has_weight ? to_acc(weight[tg]) : A(1);
                out = (A(1) - eps) * wt * (lse - to_acc(xr[tg]));
                if (eps != A(0)) out += eps / (A)cols * (sums.b * lse - sums.a);
            }
            loss[r] = from_acc<T>(out);
            lse_out[r] = lse;
        }
    }
}

// glogits = g * (a * p - [j == t] * b - eps/C * w[j]),
//   a = (1-eps) w[t] + eps W / C,  b = (1-eps) w[t];  zero rows where t is ignored.
template <typename T>
__global__ void cross_entropy_bwd(const T* __restrict__ logits, const typename Acc<T>::type* __restrict__ lse,
                                  const i64* __restrict__ target, const T* __restrict__ weight,
                                  const T* __restrict__ gloss, T* __restrict__ glogits,
                                  i64 rows, int cols, i64 ignore_index, double smoothing, int has_weight) {
    typedef typename Acc<T>::type A;
    const A eps = (A)smoothing;
    A wsum = (A)cols;
    if (has_weight && eps != A(0)) {
        A s = A(0);
        for (int c = threadIdx.x; c < cols; c += blockDim.x) s += to_acc(weight[c]);
        wsum = block_allreduce(s, SumOp(), A(0));
    }
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const i64 base = r * cols;
        const i64 tg = target[r];
        const bool ignored = tg == ignore_index || tg < 0 || tg >= cols;
        const A g = ignored ? A(0) : to_acc(gloss[r]);
        const A wt = (has_weight && !ignored) ? to_acc(weight[tg]) : A(1);
        const A a = g * ((A(1) - eps) * wt + eps * wsum / (A)cols);
        const A b = g * (A(1) - eps) * wt;
        const A ge = g * eps / (A)cols;
        const A l = lse[r];
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
            A out = A(0);
            if (!ignored) {
                out = a * fb_exp(to_acc(logits[base + c]) - l) - ge * (has_weight ? to_acc(weight[c]) : A(1));
                if (c == tg) out -= b;
            }
            glogits[base + c] = from_acc<T>(out);
        }
    }
}
