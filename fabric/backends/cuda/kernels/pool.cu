// 2-D max pooling with indices (flat h * W + w within each input plane,
// PyTorch's convention).  NaN wins (the last NaN of a window), ties keep the
// first maximum, padding never wins; a window of only -inf reports its first
// in-bounds position.  The backward scatters each gradient to its argmax.

template <typename T>
__global__ void max_pool2d_fwd(const T* __restrict__ x, T* __restrict__ y, i64* __restrict__ indices,
                               i64 total, int H, int W, int OH, int OW, int kh, int kw,
                               int sh, int sw, int ph, int pw, int dh, int dw) {
    typedef typename Acc<T>::type A;
    for (i64 e = fb_global_tid(); e < total; e += fb_grid_stride()) {
        const int ow = (int)(e % OW);
        const int oh = (int)((e / OW) % OH);
        const i64 plane = e / ((i64)OW * OH);
        const int h0 = oh * sh - ph, w0 = ow * sw - pw;
        const int i0 = h0 < 0 ? (-h0 + dh - 1) / dh : 0;
        const int j0 = w0 < 0 ? (-w0 + dw - 1) / dw : 0;
        const T* xp = x + plane * H * W;
        A best = -fb_inf<A>();
        i64 arg = (i64)(h0 + i0 * dh) * W + (w0 + j0 * dw);
        for (int i = i0; i < kh; ++i) {
            const int h = h0 + i * dh;
            if (h >= H) break;
            for (int j = j0; j < kw; ++j) {
                const int w = w0 + j * dw;
                if (w >= W) break;
                const A v = to_acc(xp[h * W + w]);
                if (v > best || v != v) {
                    best = v;
                    arg = (i64)h * W + w;
                }
            }
        }
        y[e] = from_acc<T>(best);
        indices[e] = arg;
    }
}

// gx (accumulation type, zeroed by the caller) += gy at each window's argmax.
// Atomics: windows that do not overlap (stride >= kernel) never collide, so
// the result is exact there; overlapping windows may sum in any order.
template <typename T>
__global__ void max_pool2d_bwd(const T* __restrict__ gy, const i64* __restrict__ indices,
                               typename Acc<T>::type* __restrict__ gx,
                               i64 total, i64 out_plane, i64 in_plane) {
    for (i64 e = fb_global_tid(); e < total; e += fb_grid_stride()) {
        const i64 idx = indices[e];
        if (idx < 0 || idx >= in_plane) continue;
        atomicAdd(gx + (e / out_plane) * in_plane + idx, to_acc(gy[e]));
    }
}
