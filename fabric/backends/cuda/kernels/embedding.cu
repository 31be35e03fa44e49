// Embedding backward: gweight[indices[i], :] += gy[i, :] with atomics
// (summation order, and so the last bits of float results, may vary run to
// run).  gweight is in the accumulation type (float32 for float16 gy) and must
// be zeroed by the caller.  The padding_idx row (-1: none) and indices outside
// [0, num_weights) are skipped.
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
