// im2col / col2im for 1-D and 2-D convolution (1-D is H = kh = 1).
// cols layout: (N, C * kh * kw, OH * OW) in C order, i.e. element
// (n, c, i, j, oh, ow) reads x[n, c, oh * sh - ph + i * dh, ow * sw - pw + j * dw]
// (zero outside the input).  im2col_fwd writes one cols element per thread;
// im2col_bwd (col2im) gathers, per input element, every cols entry that read
// it: deterministic and without atomics.

template <typename T>
__global__ void im2col_fwd(const T* __restrict__ x, T* __restrict__ cols, i64 total,
                           int C, int H, int W, int kh, int kw, int sh, int sw,
                           int ph, int pw, int dh, int dw, int OH, int OW) {
    for (i64 e = fb_global_tid(); e < total; e += fb_grid_stride()) {
        i64 t = e;
        const int ow = (int)(t % OW); t /= OW;
        const int oh = (int)(t % OH); t /= OH;
        const int j = (int)(t % kw); t /= kw;
        const int i = (int)(t % kh); t /= kh;
        const i64 plane = t;  // n * C + c
        const int h = oh * sh - ph + i * dh, w = ow * sw - pw + j * dw;
        cols[e] = (h >= 0 && h < H && w >= 0 && w < W) ? x[(plane * H + h) * W + w] : from_acc<T>(0);
    }
}

template <typename T>
__global__ void im2col_bwd(const T* __restrict__ cols, T* __restrict__ x, i64 total,
                           int C, int H, int W, int kh, int kw, int sh, int sw,
                           int ph, int pw, int dh, int dw, int OH, int OW) {
    typedef typename Acc<T>::type A;
    for (i64 e = fb_global_tid(); e < total; e += fb_grid_stride()) {
        const int w = (int)(e % W);
        const int h = (int)((e / W) % H);
        const i64 plane = e / ((i64)W * H);
        A acc = A(0);
        for (int i = 0; i < kh; ++i) {
            const int hn = h + ph - i * dh;
            if (hn < 0 || hn % sh) continue;
            const int oh = hn / sh;
            if (oh >= OH) continue;
            for (int j = 0; j < kw; ++j) {
                const int wn = w + pw - j * dw;
                if (wn < 0 || wn % sw) continue;
                const int ow = wn / sw;
                if (ow >= OW) continue;
                acc += to_acc(cols[(((plane * kh + i) * kw + j) * OH + oh) * OW + ow]);
            }
        }
        x[e] = from_acc<T>(acc);
    }
}
