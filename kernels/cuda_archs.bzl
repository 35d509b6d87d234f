"""The GPU architectures the built-in kernels are compiled for: the one list
that kernels/BUILD turns into nvcc -gencode flags, that the README states and
that tests/kernels/fatbin_test.c checks in the built objects and binary.

SASS (a cubin) for every real architecture CUDA 13's nvcc knows
(`nvcc --list-gpu-code`: Turing sm_75 to Blackwell sm_121), so no supported
GPU needs the JIT, plus PTX for the newest (compute_121) so a GPU newer than
CUDA 13 can JIT-compile it. Every sm_XY here also runs on sm_XZ, Z > Y, of the
same major version, but per-architecture SASS costs only ~3.5 MB of binary."""

SASS_ARCHS = ["75", "80", "86", "87", "88", "89", "90", "100", "103", "110", "120", "121"]

PTX_ARCH = "121"

def gencode_flags():
    """The nvcc -gencode flags for SASS_ARCHS and PTX_ARCH, as one string."""
    flags = ["-gencode arch=compute_%s,code=sm_%s" % (a, a) for a in SASS_ARCHS]
    flags.append("-gencode arch=compute_%s,code=compute_%s" % (PTX_ARCH, PTX_ARCH))
    return " ".join(flags)
