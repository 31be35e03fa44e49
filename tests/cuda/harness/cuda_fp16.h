// Stand-in for CUDA's <cuda_fp16.h> in the CPU harness: __half and its
// conversions are defined by cuda_cpu.h, which is included first.
#pragma once
