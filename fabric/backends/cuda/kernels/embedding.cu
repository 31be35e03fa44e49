// Embedding backward: gweight[indices[i], :] += gy[i, :].  gweight is in the
// accumulation type (float32 for float16 gy) and zeroed by the caller; the
// padding_idx row (-1: none) and indices outside [0, num_weights) are skipped.
//
// embedding_bwd: one thread per element of gy, atomics (the summation order,
// and so the last bits of float results, may vary run to run).
// embedding_bwd_sorted: deterministic (use_deterministic_algorithms(True)).
// The launcher sorts the flat indices stably (`order`: positions in gy,
// `sorted_idx` their indices) and cuts them into segments of equal index
// (`bounds`, n_seg + 1 entries); one thread per (segment, column), adjacent
// threads on adjacent columns, each sum taken in the order the indices occur -
// the order of the CPU reference.  No two threads write one element: no
// atomics.  max_pool2d's deterministic backward is this kernel with dim = 1.
template <typename T>
__global__ void embedding_bwd(const i64* __restrict__ indices, const T* __restrict__ gy,
                              typename Acc<T>::type* __restrict__ gweight,
                              i64 n, int dim, i64 num_weights, i64 padding_idx) {
    const i64 total = n * dim;
    for (i64 e = fb_global_tid(); e < total; e += fb_grid_stride()) {
        const i64 row = indices[e / dim];
        if (row == padding_idx || row < 0 || row >= num_weights) continue;
        atomicAdd(gweight + row * dim + e % dim, to_acc(gy[e]));
    }
}

template <typename T>
__global__ void embedding_bwd_sorted(const i64* __restrict__ order, const i64* __restrict__ sorted_idx,
                                     const i64* __restrict__ bounds, i64 n_seg, const T* __restrict__ gy,
                                     typename Acc<T>::type* __restrict__ gweight,
                                     int dim, i64 num_weights, i64 padding_idx) {
    typedef typename Acc<T>::type A;
    const i64 total = n_seg * dim;
    for (i64 e = fb_global_tid(); e < total; e += fb_grid_stride()) {
        const i64 s = e / dim, c = e % dim;
        const i64 lo = bounds[s], hi = bounds[s + 1];
        const i64 row = sorted_idx[lo];
        if (row == padding_idx || row < 0 || row >= num_weights) continue;
        A acc = A(0);
        for (i64 k = lo; k < hi; ++k) acc += to_acc(gy[order[k] * dim + c]);
        gweight[row * dim + c] = acc;
    }
}
