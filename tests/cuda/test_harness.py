"""The CPU execution harness itself: it must run correct CUDA C faithfully and
report the bugs it exists to catch."""
from __future__ import annotations

import harness
import numpy as np
import pytest
from harness import CompileError, HarnessModule, KernelError

pytestmark = pytest.mark.skipif(not harness.have_compiler(), reason="the CUDA CPU harness needs g++ and nm")

SRC = r"""
#include <cuda_fp16.h>
__global__ void reverse(const float* x, float* y, int n, int sync) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[t];
    if (sync) __syncthreads();
    y[t] = s[n - 1 - t];
}
__global__ void diverge(float* y) {
    if (threadIdx.x < 16) __syncthreads();
    y[threadIdx.x] = 1.0f;
}
__global__ void two_sites(float* y) {
    if (threadIdx.x % 2)
        __syncthreads();
    else
        __syncthreads();
    y[threadIdx.x] = 1.0f;
}
__global__ void partial_shuffle(float* y) {
    float v = threadIdx.x;
    if (threadIdx.x < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
    y[threadIdx.x] = v;
}
__global__ void write_one_past(float* y) { y[threadIdx.x + 1] = 1.0f; }
__global__ void read_one_before(const float* x, float* y) { y[threadIdx.x] = x[(int)threadIdx.x - 1]; }
__global__ void smem_overrun(float* y, int n) {
    float* s = reinterpret_cast<float*>(FABRIC_DYNAMIC_SMEM());
    s[threadIdx.x] = 1.0f;
    y[threadIdx.x] = s[threadIdx.x];
}
__global__ void spin(int* flag) { while (*(volatile int*)flag == 0) {} }
__global__ void shuffles(const int* x, int* out, int width) {
    int t = threadIdx.x, v = x[t];
    out[t] = __shfl_down_sync(0xffffffffu, v, 3, width);
    out[32 + t] = __shfl_up_sync(0xffffffffu, v, 2, width);
    out[64 + t] = __shfl_sync(0xffffffffu, v, 5, width);
    out[96 + t] = __shfl_xor_sync(0xffffffffu, v, 6, width);
    out[128 + t] = (int)__ballot_sync(0xffffffffu, v % 3 == 0);
    out[160 + t] = __any_sync(0xffffffffu, v == 7) + 2 * __all_sync(0xffffffffu, v >= 0);
}
__global__ void histogram(const int* x, unsigned long long n, double* bins) {
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(bins + x[i], 1.0);
}
__global__ void to_half(const float* x, __half* h, float* back, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        h[i] = __float2half_rn(x[i]);
        back[i] = __half2float(h[i]);
    }
}
__global__ void stale_shared(float* y) {
    __shared__ float s[32];
    if (blockIdx.x == 0) s[threadIdx.x] = 1.0f;
    __syncthreads();
    y[blockIdx.x * 32 + threadIdx.x] = s[threadIdx.x];
}
__global__ void sizes(int a, long long b, unsigned int c, double d, float* out) {
    out[0] = a; out[1] = (float)b; out[2] = (float)c; out[3] = (float)d;
}
"""
NAMES = ["reverse", "diverge", "two_sites", "partial_shuffle", "write_one_past", "read_one_before",
         "smem_overrun", "spin", "shuffles", "histogram", "to_half", "stale_shared", "sizes"]


@pytest.fixture(scope="module")
def mod():
    return HarnessModule(SRC, NAMES, name="harness_selftest")


def test_missing_syncthreads_is_caught_by_thread_shuffling(mod):
    x = np.arange(64, dtype=np.float32)
    k = mod.get_function("reverse")
    for seed in range(3):
        y = np.zeros(64, np.float32)
        k.configured(seed=seed)((1,), (64,), (x, y, np.int32(64), np.int32(1)))
        np.testing.assert_array_equal(y, x[::-1])
    wrong = 0
    for seed in range(3):
        y = np.zeros(64, np.float32)
        k.configured(seed=seed)((1,), (64,), (x, y, np.int32(64), np.int32(0)))
        wrong += int((y != x[::-1]).sum())
    assert wrong > 0


@pytest.mark.parametrize("name", ["diverge", "two_sites"])
def test_barrier_divergence(mod, name):
    with pytest.raises(KernelError, match="barrier divergence"):
        mod.get_function(name)((1,), (32,), (np.zeros(32, np.float32),))


def test_shuffle_with_exited_lanes(mod):
    with pytest.raises(KernelError, match="warp collective mismatch|exited"):
        mod.get_function("partial_shuffle")((1,), (32,), (np.zeros(32, np.float32),))


def test_shuffle_mask_naming_missing_lane(mod):
    with pytest.raises(KernelError, match="does not exist"):
        mod.get_function("partial_shuffle")((1,), (16,), (np.zeros(16, np.float32),))


def test_out_of_bounds_write_past_end(mod):
    k = mod.get_function("write_one_past")
    with pytest.raises(KernelError, match=r"past the end of argument 0 \(float\* y\)"):
        k((1,), (32,), (np.zeros(32, np.float32),))
    with pytest.raises(KernelError, match="out-of-bounds write past the end"):
        k.configured(guard="start")((1,), (32,), (np.zeros(32, np.float32),))


def test_out_of_bounds_read_before_start(mod):
    k = mod.get_function("read_one_before").configured(guard="start")
    with pytest.raises(KernelError, match=r"invalid read .* 4 bytes before the start of argument 0 \(const float\* x\)"):
        k((1,), (8,), (np.zeros(8, np.float32), np.zeros(8, np.float32)))


def test_dynamic_shared_memory_bounds(mod):
    k = mod.get_function("smem_overrun")
    y = np.zeros(32, np.float32)
    k((1,), (32,), (y, np.int32(32)), shared_mem=128)
    assert (y == 1).all()
    with pytest.raises(KernelError, match="dynamic shared memory"):
        k((1,), (32,), (y, np.int32(32)), shared_mem=64)


def test_static_shared_is_poisoned_between_blocks(mod):
    y = np.zeros(64, np.float32)
    mod.get_function("stale_shared")((2,), (32,), (y,))
    assert (y[:32] == 1).all() and np.isnan(y[32:]).all()   # block 1 sees 0xFF bytes, not block 0's values


def test_timeout(mod):
    with pytest.raises(KernelError, match="timed out"):
        mod.get_function("spin").configured(timeout_ms=300)((1,), (32,), (np.zeros(1, np.int32),))


@pytest.mark.parametrize("width", [32, 8])
def test_warp_collectives_semantics(mod, width):
    x = np.random.default_rng(0).integers(0, 100, 32).astype(np.int32)
    out = np.zeros(192, np.int32)
    mod.get_function("shuffles")((1,), (32,), (x, out, np.int32(width)))
    lane = np.arange(32)
    seg, pos = lane // width * width, lane % width
    np.testing.assert_array_equal(out[:32], x[np.where(pos + 3 < width, lane + 3, lane)])
    np.testing.assert_array_equal(out[32:64], x[np.where(pos >= 2, lane - 2, lane)])
    np.testing.assert_array_equal(out[64:96], x[seg + 5 % width])
    xor = lane ^ 6
    np.testing.assert_array_equal(out[96:128], x[np.where(xor // width == lane // width, xor, lane)])
    ballot = sum(1 << i for i in range(32) if x[i] % 3 == 0)
    assert (out[128:160].view(np.uint32) == ballot).all()
    assert (out[160:] == int((x == 7).any()) + 2).all()


def test_atomics_across_blocks_and_threads(mod):
    x = np.random.default_rng(1).integers(0, 10, 1000).astype(np.int32)
    bins = np.zeros(10)
    mod.get_function("histogram")((3,), (64,), (x, np.uint64(x.size), bins))
    np.testing.assert_array_equal(bins, np.bincount(x, minlength=10))


def test_half_conversions_match_numpy(mod):
    x = np.array([0.1, 1 / 3, 65504.0, 65520.0, 1e6, 6e-8, 3e-8, 2e-5, -2.5, 1 + 2 ** -11, 1 + 3 * 2 ** -11,
                  np.inf, -np.inf], np.float32)
    h, back = np.zeros(x.size, np.float16), np.zeros(x.size, np.float32)
    mod.get_function("to_half")((1,), (32,), (x, h, back, np.int32(x.size)))
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    np.testing.assert_array_equal(h.view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(back, want.astype(np.float32))


def test_argument_checks(mod):
    k = mod.get_function("sizes")
    out = np.zeros(4, np.float32)
    good = (np.int32(1), np.int64(2), np.uint32(3), np.float64(4.5), out)
    k((1,), (1,), good)
    assert out.tolist() == [1, 2, 3, 4.5]
    with pytest.raises(TypeError, match=r"argument 0 \(int a\).*Python int"):
        k((1,), (1,), (1,) + good[1:])
    with pytest.raises(TypeError, match=r"argument 1 \(long long b\) .* needs numpy.int64, got int32"):
        k((1,), (1,), (good[0], np.int32(2)) + good[2:])
    with pytest.raises(TypeError, match=r"argument 4 \(float\* out\) .* needs dtype float32, got float64"):
        k((1,), (1,), good[:4] + (np.zeros(4),))
    with pytest.raises(TypeError, match="non-contiguous"):
        k((1,), (1,), good[:4] + (np.zeros(8, np.float32)[::2],))
    with pytest.raises(TypeError, match="takes 5 arguments"):
        k((1,), (1,), good[:4])
    assert k.signature == "sizes(int a, long long b, unsigned int c, double d, float* out)"


def test_bad_launch_configuration(mod):
    with pytest.raises(KernelError, match="at most 1024 threads"):
        mod.get_function("diverge")((1,), (2048,), (np.zeros(2048, np.float32),))


def test_nvrtc_only_macros_stay_undefined():
    with pytest.raises(CompileError, match="INFINITY"):
        HarnessModule("__global__ void k(float* y) { y[0] = INFINITY; }", ["k"], name="infinity")


# ---- race-check mode ---------------------------------------------------------------------------
RACE_SRC = r"""
__global__ void handoff(float* y) {       // thread 0 writes, a __syncwarp, everyone reads
    __shared__ float s[1];
    if (threadIdx.x == 0) s[0] = 1.0f;
    __syncwarp();
    y[threadIdx.x] = s[0];
}
__global__ void every_block_writes(float* y) { if (threadIdx.x == 0) y[0] = (float)blockIdx.x; }
__global__ void counter(float* y, int atomic) {
    if (atomic) atomicAdd(y, 1.0f); else y[0] += 1.0f;
}
"""


@pytest.fixture(scope="module")
def race_mod():
    return HarnessModule(RACE_SRC, ["handoff", "every_block_writes", "counter"], name="race_selftest", race=True)


def test_race_check_orders_by_barriers_warp_collectives_and_atomics(mod, race_mod):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    mod.get_function("reverse").race_checked()((1,), (64,), (x, y, np.int32(64), np.int32(1)))
    np.testing.assert_array_equal(y, x[::-1])
    y = np.zeros(32, np.float32)
    race_mod.get_function("handoff").race_checked()((1,), (32,), (y,))     # one warp: __syncwarp orders
    assert (y == 1).all()
    y = np.zeros(1, np.float32)
    race_mod.get_function("counter").race_checked()((3,), (64,), (y, np.int32(1)))
    assert y[0] == 192


def test_race_check_reports(mod, race_mod):
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(KernelError, match=r"data race \(write/read\) on shared memory at byte \d+ of __shared__ s "
                                          r"in reverse.*\(race_selftest|harness_selftest"):
        mod.get_function("reverse").race_checked()((1,), (64,), (x, np.zeros(64, np.float32), np.int32(64),
                                                                   np.int32(0)))
    with pytest.raises(KernelError, match=r"data race \(write/read\) on shared memory"):   # warp 1 is not ordered
        race_mod.get_function("handoff").race_checked()((1,), (64,), (np.zeros(64, np.float32),))
    with pytest.raises(KernelError, match=r"data race \(write/write\) on global memory at byte 0 of argument 0 "
                                          r"\(float\* y\).*block"):
        race_mod.get_function("every_block_writes").race_checked()((2,), (32,), (np.zeros(1, np.float32),))
    with pytest.raises(KernelError, match=r"data race \(write/(read|write)\) on global memory"):
        race_mod.get_function("counter").race_checked()((1,), (32,), (np.zeros(1, np.float32), np.int32(0)))


def test_race_check_needs_its_build(mod):
    k = mod.get_function("reverse")
    plain = harness.HarnessKernel(k.module, k.name, k._fn, k.codes, k.param_names, race=True)
    with pytest.raises(KernelError, match="race-check build"):
        plain((1,), (64,), (np.zeros(64, np.float32), np.zeros(64, np.float32), np.int32(64), np.int32(1)))
