"""Mutation tests: the CPU harness must catch the GPU bugs it exists for.

Each test applies one small edit to the real kernel source (the text NVRTC
compiles), builds it for the harness, runs it through the CuPy backend's launch
code (KernelOps) and asserts that the harness reports the bug.  The edits are
the classic ones that leave results right on a CPU that runs threads one after
another: a missing ``__syncthreads()`` in the block reduction, an ``atomicAdd``
turned into ``+=``, a shuffle mask that drops lanes, and off-by-one bounds.
Without the race check (threads switched only at barriers) the first two stay
invisible; the tests show that too."""
from __future__ import annotations

import hashlib

import harness
import numpy as np
import pytest
from harness import KernelError

from fabric.backends.cuda import launch
from fabric.backends.numpy_backend import NumpyBackend

ref = NumpyBackend()   # the NumPy reference twins, also where the numba kernels are the default

pytestmark = pytest.mark.skipif(not harness.have_compiler(), reason="the CUDA CPU harness needs g++ and nm")

# small launches: few blocks, so every block runs several rows (grid-stride) and
# the block reduction is called again and again in one block
LIMITS = launch.Limits(max_block=64, max_grid=3, elementwise_block=32, chunk_size=64, warp_row_max=0)


def mutant(file: str, old: str, new: str, race: bool = True) -> harness.HarnessModule:
    """The harness build of ``file`` with ``old`` (which must occur exactly once) replaced by ``new``."""
    src = launch.module_source(file)
    assert src.count(old) == 1, f"the mutation site {old!r} is not unique in {file}"
    tag = hashlib.sha256((old + "\0" + new).encode()).hexdigest()[:8]
    return harness.HarnessModule(src.replace(old, new), launch.name_expressions(file),
                                 name=f"mutant-{file.replace('.', '_')}-{tag}", race=race)


def backend(file, module, race=True, limits=LIMITS, seed=0, preempt=0.25):
    return harness.HarnessBackend(seed=seed, limits=limits, race=race, preempt=preempt, modules={file: module})


rng = np.random.default_rng(5)
X = rng.standard_normal((7, 200)).astype(np.float32)   # 7 rows > 3 blocks, 64 threads = 2 warps per block

FIRST_BARRIER = "    __syncthreads();  // the previous call may still be reading scratch\n"
SECOND_BARRIER = "    if (lane == 0) scratch[warp] = v;\n    __syncthreads();\n"


def test_unmutated_sources_are_race_free(harness_modules):
    be = harness.HarnessBackend(limits=LIMITS, race=True)
    np.testing.assert_allclose(be.layer_norm(X, None, None, 1e-5)[0], ref.layer_norm(X, None, None, 1e-5)[0],
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(be.softmax(X, -1), ref.softmax(X, -1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("site", ["leading", "after-write"])
def test_missing_syncthreads_in_block_reduction_is_reported(site):
    """common.cuh's block_allreduce without one of its barriers: the race check names
    the shared scratch array and both accesses."""
    if site == "leading":
        mod = mutant("norms.cu", FIRST_BARRIER, "")
    else:
        mod = mutant("norms.cu", SECOND_BARRIER, "    if (lane == 0) scratch[warp] = v;\n")
    with pytest.raises(KernelError, match=r"data race \(write/read\) on shared memory at byte \d+ of __shared__ "
                                          r"scratch in block_allreduce<Welford<float>, WelfordOp>: .*\(common\.cuh:\d+\)"
                                          r".* no barrier"):
        backend("norms.cu", mod).layer_norm(X, None, None, 1e-5)


def test_missing_leading_syncthreads_is_invisible_without_the_race_check():
    """Why the race check exists: threads that switch only at barriers run the mutant right."""
    mod = mutant("norms.cu", FIRST_BARRIER, "", race=False)
    got = backend("norms.cu", mod, race=False).layer_norm(X, None, None, 1e-5)
    np.testing.assert_allclose(got[0], ref.layer_norm(X, None, None, 1e-5)[0], rtol=1e-5, atol=1e-5)


ATOMIC = "        atomicAdd(gweight + row * dim + e % dim, to_acc(gy[e]));\n"
PLAIN = "        gweight[row * dim + e % dim] += to_acc(gy[e]);\n"
IDX = np.array([[1, 3, 1, 0], [3, 3, 2, 1]])              # repeated rows: concurrent updates
GY = rng.standard_normal((2, 4, 6)).astype(np.float32)


def test_embedding_backward_without_atomic_is_reported():
    mod = mutant("embedding.cu", ATOMIC, PLAIN)
    with pytest.raises(KernelError, match=r"data race \(write/(read|write)\) on global memory at byte \d+ of "
                                          r"argument 2 \(float\* gweight\).*\(embedding\.cu:\d+\)"):
        backend("embedding.cu", mod).embedding_backward(IDX, GY, 5)


def _embedding_bwd(module, seed, preempt):
    """embedding_bwd<float> of ``module`` with threads preempted at memory operations, no race reports."""
    k = module.get_function("embedding_bwd<float>").configured(seed=seed).race_checked(preempt, report=False)
    got = np.zeros((5, 6), np.float32)
    k((2,), (32,), (np.ascontiguousarray(IDX.reshape(-1), np.int64), GY.reshape(-1, 6), got, np.int64(IDX.size),
                    np.int32(6), np.int64(5), np.int64(-1)))
    return got


def test_embedding_backward_without_atomic_loses_updates_when_interleaved():
    """Preemption at memory operations: the read-modify-writes interleave and updates are
    lost, as on a GPU.  Run one thread after another (no race check), they were not."""
    want = ref.embedding_backward(IDX, GY, 5)
    plain = mutant("embedding.cu", ATOMIC, PLAIN, race=False)
    np.testing.assert_allclose(backend("embedding.cu", plain, race=False).embedding_backward(IDX, GY, 5), want,
                               rtol=1e-6, atol=1e-6)
    racy = mutant("embedding.cu", ATOMIC, PLAIN)
    lost = sum(int((np.abs(_embedding_bwd(racy, seed, 0.5) - want) > 1e-5).sum()) for seed in range(4))
    assert lost > 0
    good = harness.module_for("embedding.cu", race=True)      # the real kernel, same interleavings
    for seed in range(4):
        np.testing.assert_allclose(_embedding_bwd(good, seed, 0.5), want, rtol=1e-6, atol=1e-6)


def test_dropped_shuffle_mask_is_reported():
    """A float shuffle whose mask leaves out the upper half-warp (the lanes still call it)."""
    full = "__device__ __forceinline__ float fb_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }"
    mod = mutant("softmax.cu", full, full.replace("0xffffffffu", "0x0000ffffu"), race=False)
    with pytest.raises(KernelError, match="lane missing from its mask"):
        backend("softmax.cu", mod, race=False).softmax(X, -1)


def test_off_by_one_row_bound_is_reported():
    """softmax writing one column past its row: the next row's first element, which another
    thread owns (a race), and past the end of y for the last row (the guard page)."""
    loop = ("        for (i64 c = team.lane; c < cols; c += team.width) {\n"
            "            const A z = to_acc(cached ? cache[c] : xr[c]) - t.m;")
    mod = mutant("softmax.cu", loop, loop.replace("c < cols", "c <= cols"))
    warp_rows = launch.Limits(max_block=64, max_grid=3, elementwise_block=32)
    with pytest.raises(KernelError, match=r"data race .* on global memory .* argument 1 \(float\* y\)|past the end"):
        backend("softmax.cu", mod, limits=warp_rows).softmax(X[:, :50], -1)


def test_off_by_one_chunk_bound_is_reported_as_a_race():
    """An optimizer chunk one element too long overlaps the next chunk, updated by another
    block: a write/write race the values alone would show only as a double update."""
    old = "    end = start + chunk_size < sizes[t] ? start + chunk_size : sizes[t];\n"
    mod = mutant("optim.cu", old, old.replace("start + chunk_size < sizes[t]", "start + chunk_size + 1 < sizes[t]")
                 .replace("? start + chunk_size :", "? start + chunk_size + 1 :"))
    ps = [rng.standard_normal(300).astype(np.float32)]
    gs = [rng.standard_normal(300).astype(np.float32)]
    ms, vs = [np.zeros(300, np.float32)], [np.zeros(300, np.float32)]
    with pytest.raises(KernelError, match=r"data race \(write/(read|write)\) on global memory .*pointer table entry 0"):
        backend("optim.cu", mod).adam_step(ps, gs, ms, vs, vs, 1)
