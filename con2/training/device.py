"""The device a run trains on and its precision: CUDA or the CPU, and bfloat16 autocast only where
the CPU computes it natively (AVX512-BF16, AMX-BF16; elsewhere it is emulated, and slower than
float32), with a guard against CPU bfloat16 convolutions that return wrong numbers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import Tensor, nn

from con2.errors import ConfigError


def select_device(name: str = "auto") -> torch.device:
    """``auto`` picks CUDA when available, else the CPU; ``cuda`` without a GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device={name!r} but no CUDA device is available; use device=cpu or device=auto")
    return torch.device(name)


def use_cpu_threads(threads: int) -> None:
    """Compute on ``threads`` CPU threads from now on in this process: torch's and the BLAS's that NumPy,
    SciPy and scikit-learn call (OpenBLAS, MKL, OpenMP, through threadpoolctl).

    torch's setting alone leaves NumPy's BLAS on every core, and where more threads than cores run (jobs
    side by side, each with a core) they spin instead of computing: one SVD of a 1,436 x 64 matrix took
    1.0 s against 0.014 s beside two busy training processes on this project's 2-core Xeon.
    """
    from threadpoolctl import threadpool_limits  # lazy: scanned only where a thread count is asked for

    torch.set_num_threads(threads)
    threadpool_limits(threads)  # not as a `with` block: for the rest of the process, as torch's setting


@contextmanager
def cpu_threads(threads: int) -> Iterator[None]:
    """:func:`use_cpu_threads` within the block only: torch's and the BLAS's thread counts restored after."""
    from threadpoolctl import threadpool_limits  # lazy: as in use_cpu_threads

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(threads)
        with threadpool_limits(threads):
            yield
    finally:
        torch.set_num_threads(before)


#: CPU flags (Linux /proc/cpuinfo names) of native bfloat16 arithmetic: AVX512-BF16 (Intel Cooper
#: Lake and later, AMD Zen 4 and later) and AMX-BF16 (Intel Sapphire Rapids and later).
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str] | None:
    """The CPU's feature flags from ``/proc/cpuinfo`` (or the text given); None where none are listed.

    ``cpuinfo``: the file's text (tests pass a made-up one); read from ``/proc/cpuinfo`` when None.
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return None
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return None


def native_bf16_from_flags(flags: frozenset[str] | None, onednn_bf16: bool) -> bool:
    """Whether bfloat16 autocast pays on a CPU with these flags (pure; see :func:`cpu_has_native_bf16`).

    oneDNN's own check (``onednn_bf16``) also accepts AVX512 without BF16, where it emulates
    bfloat16 and a CON2 step is 2.35x slower than in float32 (issue 27: 59.7 against 140.6
    images/s on an Intel Xeon with AVX512 and VNNI only). So a CPU needs one of
    :data:`NATIVE_BF16_FLAGS` as well; where no flags can be read (not Linux), oneDNN's word stands.
    """
    if not onednn_bf16:
        return False
    return onednn_bf16 if flags is None else bool(flags & NATIVE_BF16_FLAGS)


def cpu_has_native_bf16() -> bool:
    """Whether this CPU runs bfloat16 natively (AVX512-BF16 or AMX-BF16), where autocast pays.

    Measured (BreastMNIST, width 16, 28 px, 2 threads, ``benchmarks/throughput.py``): AMD EPYC with
    AVX512-BF16 290 images/s in bf16 against 216 in float32; Intel Xeon with AVX512 but no BF16 59.7
    against 140.6 (issue 27), which oneDNN alone would have trained in bf16.
    """
    try:
        onednn = bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False
    return native_bf16_from_flags(cpu_flags(), onednn)


def autocast_enabled(device: torch.device, amp: bool) -> bool:
    """bfloat16 autocast when ``amp``: on CUDA, and on CPUs with native bfloat16 (elsewhere float32).

    On this project's 2-core CPU (AMX) the width-16 CON2 step takes less than half the float32
    time (benchmarks/README.md); the losses are computed in float32 either way.
    """
    return amp and (device.type == "cuda" or (device.type == "cpu" and cpu_has_native_bf16()))


@contextmanager
def refuse_broken_cpu_bf16_convolutions(model: nn.Module) -> Iterator[None]:
    """Stop a bfloat16-autocast CPU step before a strided convolution sees a 1 x 1 input.

    PyTorch 2.14's oneDNN bf16 kernels give such a convolution (3 x 3, stride 2, padding 1) weight
    gradients read from uninitialised memory for the taps that see only padding: garbage, sometimes
    NaN, depending on what the allocator hands out (measured: 161 of 300 steps; float32 and every
    input of 2 x 2 or more are right, tests/training/test_engine.py). A ResNet with the standard stem
    reaches 1 x 1 in its last stage at 16 px. The forward pre-hooks raise ``ConfigError`` naming
    the module and the fix before that convolution runs, so nothing is updated or written.
    """

    def hook_for(name: str) -> Callable[[nn.Module, tuple], None]:
        def hook(module: nn.Module, args: tuple) -> None:
            x = args[0]
            if isinstance(x, Tensor) and x.dim() == 4 and tuple(x.shape[-2:]) == (1, 1):
                raise ConfigError(
                    f"bfloat16 autocast on this CPU computes wrong weight gradients for the strided "
                    f"convolution {name} on its 1 x 1 input (a oneDNN kernel of PyTorch {torch.__version__}); "
                    f"set amp=false (float32), or a larger image_size (the standard ResNet stem needs >= 32 px)"
                )

        return hook

    handles = [
        m.register_forward_pre_hook(hook_for(name))
        for name, m in model.named_modules()
        if isinstance(m, nn.Conv2d) and max(m.stride) > 1 and max(m.kernel_size) > 1
    ]
    try:
        yield
    finally:
        for h in handles:
            h.remove()
