// Dropout with a counter-based Philox4x32-10 RNG (Salmon et al., 2011).
// Element i is kept iff word (i % 4) of
//   philox(counter = (i/4 lo, i/4 hi, offset lo, offset hi), key = (seed lo, seed hi))
// is below `threshold` (= round((1 - p) * 2^32)); fused.dropout is the same
// stream in NumPy, so a (seed, offset) pair gives the same mask on CPU and GPU.

struct Philox4 { unsigned int v[4]; };

__device__ __forceinline__ Philox4 philox4x32_10(unsigned int c0, unsigned int c1, unsigned int c2,
                                                 unsigned int c3, unsigned int k0, unsigned int k1) {
    for (int round = 0; round < 10; ++round) {
        if (round) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const unsigned int hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        const unsigned int hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    Philox4 out;
    out.v[0] = c0;
    out.v[1] = c1;
    out.v[2] = c2;
    out.v[3] = c3;
    return out;
}

struct __align__(4) Bytes4 { unsigned char v[4]; };

// One thread per group of four elements (one Philox call gives four words).
// Where x, y and the mask are aligned to a group, a thread moves its group with
// one vector load of x, one vector store of y and one 4-byte store of the mask,
// so a warp touches consecutive 16-byte pieces (float): coalesced, every
// fetched byte used.  Otherwise (an unaligned view) four scalar accesses.
template <typename T>
__global__ void dropout_fwd(const T* __restrict__ x, T* __restrict__ y, unsigned char* __restrict__ mask,
                            i64 n, unsigned int threshold, double scale,
                            unsigned long long seed, unsigned long long offset) {
    typedef typename Acc<T>::type A;
    const A s = (A)scale;
    const i64 groups = (n + 3) / 4;
    const bool aligned = vec4_aligned(x) && vec4_aligned(y) && ((unsigned long long)mask) % 4 == 0;
    for (i64 g = fb_global_tid(); g < groups; g += fb_grid_stride()) {
        const Philox4 r = philox4x32_10((unsigned int)g, (unsigned int)((unsigned long long)g >> 32),
                                        (unsigned int)offset, (unsigned int)(offset >> 32),
                                        (unsigned int)seed, (unsigned int)(seed >> 32));
        const i64 i0 = g * 4;
        if (aligned && i0 + 4 <= n) {
            const Vec4<T> xv = load_vec4(x + i0);
            Vec4<T> yv;
            Bytes4 mv;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const bool keep = r.v[j] < threshold;
                mv.v[j] = keep;
                yv.v[j] = from_acc<T>(keep ? to_acc(xv.v[j]) * s : A(0));
            }
            store_vec4(y + i0, yv);
            *reinterpret_cast<Bytes4*>(mask + i0) = mv;
            continue;
        }
        for (int j = 0; j < 4; ++j) {
            const i64 i = i0 + j;
            if (i >= n) break;
            const bool keep = r.v[j] < threshold;
            mask[i] = keep;
            y[i] = from_acc<T>(keep ? to_acc(x[i]) * s : A(0));
        }
    }
}
