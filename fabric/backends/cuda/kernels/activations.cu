// Elementwise activations (grid-stride over n elements), computed in the
// accumulation type.  approximate: 0 = exact GELU, 1 = tanh form.
// bias_act: act(x + bias[i % cols]), act codes as ACT_* below.
// Same formulas as fused.py: exact GELU as x * erfc(-x / sqrt(2)) / 2 (no 1 + erf
// cancellation for x < 0), SiLU as x / (1 + exp(-x)); at +-inf the results are
// PyTorch's (gelu(-inf), silu(-inf) and both gradients at +-inf are NaN).

#define ACT_NONE 0
#define ACT_RELU 1
#define ACT_GELU 2
#define ACT_GELU_TANH 3
#define ACT_SILU 4

__device__ __forceinline__ float act_erfc(float v) { return erfcf(v); }
__device__ __forceinline__ double act_erfc(double v) { return erfc(v); }
__device__ __forceinline__ float act_fmin(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double act_fmin(double a, double b) { return fmin(a, b); }

// Phi(x), relatively accurate in the lower tail
template <typename A> __device__ __forceinline__ A normal_cdf(A x) {
    return (A)0.5 * act_erfc(x * (A)-0.7071067811865476);
}

template <typename A> __device__ __forceinline__ A gelu_val(A x, int approximate) {
    if (approximate) {
        const A k = (A)0.7978845608028654, c = (A)0.044715;
        return (A)0.5 * x * (A(1) + fb_tanh(k * x * (A(1) + c * x * x)));
    }
    return x * normal_cdf(x);
}

template <typename A> __device__ __forceinline__ A gelu_grad(A x, int approximate) {
    if (approximate) {
        const A k = (A)0.7978845608028654, c = (A)0.044715;
        const A x2 = x * x;
        const A t = fb_tanh(k * x * (A(1) + c * x2));
        return (A)0.5 * x * (A(1) - t * t) * (k * (A(1) + A(3) * c * x2)) + (A)0.5 * (A(1) + t);
    }
    return normal_cdf(x) + x * (A)0.3989422804014327 * fb_exp((A)-0.5 * x * x);
}

// silu'(x) = s (1 + x (1 - s)), s = 1 / (1 + e), e = exp(-x); 1 - s = e s without
// cancellation, and fmin(e s, 1) = 1 where e s is inf * 0 (x < -88.7 in float32).
template <typename A> __device__ __forceinline__ A silu_grad(A x) {
    const A e = fb_exp(-x);
    const A s = A(1) / (A(1) + e);
    return s * (A(1) + x * act_fmin(e * s, A(1)));
}

template <typename A> __device__ __forceinline__ A act_val(A z, int act) {
    switch (act) {
        case ACT_RELU: return z > A(0) ? z : A(0);
        case ACT_GELU: return gelu_val(z, 0);
        case ACT_GELU_TANH: return gelu_val(z, 1);
        case ACT_SILU: return z / (A(1) + fb_exp(-z));
        default: return z;
    }
}

template <typename A> __device__ __forceinline__ A act_grad(A z, int act) {
    switch (act) {
        case ACT_RELU: return z > A(0) ? A(1) : A(0);
        case ACT_GELU: return gelu_grad(z, 0);
        case ACT_GELU_TANH: return gelu_grad(z, 1);
        case ACT_SILU: return silu_grad(z);
        default: return A(1);
    }
}

template <typename T>
__global__ void gelu_fwd(const T* __restrict__ x, T* __restrict__ y, i64 n, int approximate) {
    for (i64 i = fb_global_tid(); i < n; i += fb_grid_stride())
        y[i] = from_acc<T>(gelu_val(to_acc(x[i]), approximate));
}

template <typename T>
__global__ void gelu_bwd(const T* __restrict__ x, const T* __restrict__ gy, T* __restrict__ gx,
                         i64 n, int approximate) {
    for (i64 i = fb_global_tid(); i < n; i += fb_grid_stride())
        gx[i] = from_acc<T>(to_acc(gy[i]) * gelu_grad(to_acc(x[i]), approximate));
}

template <typename T>
__global__ void silu_fwd(const T* __restrict__ x, T* __restrict__ y, i64 n) {
    for (i64 i = fb_global_tid(); i < n; i += fb_grid_stride())
        y[i] = from_acc<T>(act_val(to_acc(x[i]), ACT_SILU));
}

template <typename T>
__global__ void silu_bwd(const T* __restrict__ x, const T* __restrict__ gy, T* __restrict__ gx, i64 n) {
    for (i64 i = fb_global_tid(); i < n; i += fb_grid_stride())
        gx[i] = from_acc<T>(to_acc(gy[i]) * act_grad(to_acc(x[i]), ACT_SILU));
}

template <typename T>
__global__ void bias_act_fwd(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y,
                             i64 n, int cols, int act) {
    for (i64 i = fb_global_tid(); i < n; i += fb_grid_stride())
        y[i] = from_acc<T>(act_val(to_acc(x[i]) + to_acc(bias[i % cols]), act));
}

// gx = gy * act'(x + bias); the launcher sums gx over rows for gbias.
template <typename T>
__global__ void bias_act_bwd(const T* __restrict__ x, const T* __restrict__ bias, const T* __restrict__ gy,
                             T* __restrict__ gx, i64 n, int cols, int act) {
    for (i64 i = fb_global_tid(); i < n; i += fb_grid_stride())
        gx[i] = from_acc<T>(to_acc(gy[i]) * act_grad(to_acc(x[i]) + to_acc(bias[i % cols]), act));
}
