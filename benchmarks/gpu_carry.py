"""What the device call carries, prepared here before a session with a GPU: data in shared/, wheels in build/.

The device tool sends the session's checkout (tracked and untracked-not-ignored files, its ``shared/``
folder, and the ignored paths named in ``carry``), 64 MiB in all; nothing else reaches the GPU machine,
which reaches no package index. ``benchmarks/gpu_call.sh`` needs there:

- BreastMNIST's two files (``medmnist/breastmnist.npz``, ``breastmnist_64.npz``: 3.3 MB), copied to
  ``shared/data/medmnist/``, as before;
- CIFAR-10's image folder for part (e): 60,000 JPEGs, 55 MB as files (236 MB on disk), over what can
  travel beside the rest, so it is packed into ``shared/data/cifar10.tar.xz`` (18.6 MB: the JPEGs' headers
  repeat, and xz finds them) and unpacked there before the part starts (``gpu_runs.unpack_cifar``,
  6 s here). The unpacked files are byte for byte the originals: the run's record names the same content
  checksum as a run on ``../shared/data``;
- the Python packages the GPU image lacks for the workflow smoke and for validated records: Snakemake
  and its dependencies, jsonschema and its own (:data:`WHEELS`, the versions this project's environment
  tests with, for CPython 3.12 on x86-64 Linux, 9.8 MB), in ``build/gpu_wheels/`` (ignored: carried by
  name). PuLP (16 MB with its bundled solvers) is left out: the smoke runs ``--scheduler greedy``.
  Packages the image already has (:data:`IMAGE_PACKAGES`, from the device's KINDS.md, read
  2026-11-17) are not carried. Every carried wheel's requirements are checked against the two.

It prints one line per step and the total that will travel against the 64 MiB limit (exit 1 over it),
then the device tool's call:

    python benchmarks/gpu_carry.py                     # from the checkout the session sends
    run(command="bash benchmarks/gpu_call.sh", carry=["build/gpu_wheels"], timeout_s=600)

``--no-wheels`` skips the download (the call then skips the workflow smoke and writes records
unvalidated); ``--check`` changes nothing and only reports what is there and its size.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT_BYTES = 64 * 2**20  # the device tool's limit on what travels (the working tree, shared/, carried paths)
WHEEL_DIR = "build/gpu_wheels"
DATA_DEST = "shared/data"
MEDMNIST = ("breastmnist.npz", "breastmnist_64.npz")
ARCHIVE = "cifar10.tar.xz"

# Snakemake's and jsonschema's dependencies that the GPU image lacks, at the versions this project's
# environment runs (snakemake>=9.27,<10 in pyproject.toml). Sdist-only ones are built into wheels here.
WHEELS: dict[str, str] = {
    "annotated-types": "0.8.0",
    "argparse-dataclass": "2.0.0",
    "conda-inject": "1.3.2",
    "configargparse": "1.9.0",
    "connection-pool": "0.0.3",  # sdist only: built here (pure Python)
    "docutils": "0.22.4",
    "dpath": "2.2.0",
    "fastjsonschema": "2.22.3",
    "gitdb": "4.0.12",
    "gitpython": "3.2.1",
    "greenlet": "3.5.6",
    "humanfriendly": "10.0",
    "immutables": "0.21",
    "jsonschema": "4.26.0",
    "jsonschema-specifications": "2025.9.1",
    "jupyter-core": "5.9.1",
    "nbformat": "5.11.1",
    "platformdirs": "4.14.8",
    "pydantic": "2.14.4",
    "pydantic-core": "2.50.5",
    "referencing": "0.37.0",
    "rpds-py": "2026.9.1",
    "smart-open": "7.7.1",
    "smmap": "5.0.3",
    "snakemake": "9.27.1",
    "snakemake-interface-common": "1.23.0",
    "snakemake-interface-executor-plugins": "9.4.0",
    "snakemake-interface-logger-plugins": "2.1.0",
    "snakemake-interface-report-plugins": "1.3.0",
    "snakemake-interface-scheduler-plugins": "2.0.2",
    "snakemake-interface-storage-plugins": "4.4.1",
    "sqlalchemy": "2.0.58",
    "sqlmodel": "0.0.37",
    "tenacity": "9.2.1",
    "throttler": "1.2.3",
    "traitlets": "5.16.1",
    "typing-inspection": "0.4.5",
    "yte": "1.9.4",
}
# Required by a carried wheel but deliberately not carried, with the reason.
NOT_CARRIED = {"pulp": "the ILP scheduler's solver (16 MB); the smoke runs --scheduler greedy"}
# The GPU image's Python packages (/work/.library/device/KINDS.md, "Python packages already there", 2026-11-17).
IMAGE_PACKAGES = frozenset(
    """absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
    charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
    cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
    flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx
    huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin
    jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax
    llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack
    multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro
    nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft
    nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py
    nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
    opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec
    patsy peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11
    py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock
    pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors
    scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools
    shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server
    tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric
    torchmetrics torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3
    uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp""".split()
)
# The GPU machine's Python, for requirement markers and pip's platform tags.
TARGET_ENV = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "os_name": "posix",
    "extra": "",
}
PLATFORMS: tuple[str, ...] = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64")
PLATFORMS += ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64")


def canonical(name: str) -> str:
    """A distribution's normalised name (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_name(path: Path) -> str:
    """The distribution a wheel file holds, normalised."""
    return canonical(path.name.split("-")[0])


def requirements(wheel: Path) -> list[str]:
    """The names a wheel requires on the GPU machine (its ``Requires-Dist`` whose markers hold there; no extras)."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode("utf-8", errors="replace")
    names = []
    for line in text.splitlines():
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker is None or req.marker.evaluate(TARGET_ENV):
                names.append(canonical(req.name))
    return names


def missing_requirements(wheels: list[Path]) -> dict[str, list[str]]:
    """Per carried wheel, what it requires that is neither carried, in the image, nor left out on purpose."""
    carried = {wheel_name(w) for w in wheels}
    known = carried | IMAGE_PACKAGES | set(NOT_CARRIED)
    gaps = {w.name: sorted(set(requirements(w)) - known) for w in wheels}
    return {name: gap for name, gap in gaps.items() if gap}


def wheel_gaps(folder: Path) -> list[str]:
    """The pinned distributions that have no wheel in ``folder``, and any wheel there of another version."""
    found = {wheel_name(w): w.name.split("-")[1] for w in folder.glob("*.whl")}
    gaps = [f"{name}=={version}" for name, version in WHEELS.items() if found.get(canonical(name)) != version]
    return sorted(gaps)


def download_wheels(folder: Path) -> list[str]:
    """Download each pinned wheel missing from ``folder`` for the GPU machine's Python (pip, no dependencies
    resolved: :data:`WHEELS` is the closure); an sdist-only one is built into a wheel. Returns the failures."""
    folder.mkdir(parents=True, exist_ok=True)
    failed = []
    for spec in wheel_gaps(folder):
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version"]
        cmd += ["3.12", "--implementation", "cp", *(f"--platform={p}" for p in PLATFORMS), "-d", str(folder), spec]
        if subprocess.run(cmd, capture_output=True, text=True).returncode == 0:
            continue
        build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder), spec]
        res = subprocess.run(build, capture_output=True, text=True)
        built = [w for w in folder.glob("*.whl") if f"{canonical(spec.split('==')[0])}" == wheel_name(w)]
        if res.returncode or not built or not built[0].name.endswith("-py3-none-any.whl"):
            failed.append(f"{spec}: {(res.stderr or 'not a pure-Python wheel').strip().splitlines()[-1][:200]}")
    return failed


@dataclass(frozen=True)
class Listing:
    """A folder's files (relative path, size), in order, and a hash of that listing."""

    files: tuple[tuple[str, int], ...]

    @property
    def digest(self) -> str:
        return hashlib.sha256("\n".join(f"{p}\t{n}" for p, n in self.files).encode()).hexdigest()

    @property
    def bytes(self) -> int:
        return sum(n for _, n in self.files)


def listing(folder: Path) -> Listing:
    """Every file under ``folder`` (paths relative to its parent, so they start with its name)."""
    base = folder.parent
    files = sorted((p.relative_to(base).as_posix(), p.stat().st_size) for p in folder.rglob("*") if p.is_file())
    return Listing(tuple(files))


def pack_folder(folder: Path, archive: Path) -> Listing:
    """Pack ``folder`` into ``archive`` (tar, xz -9, names sorted; the system's tar and xz where present, else
    Python's), beside a ``.json`` note of its listing; a fresh archive of the same listing is kept as it is.
    Returns the listing. Raises ``ValueError`` when the archive does not list every file."""
    want = listing(folder)
    note = archive.with_name(archive.name + ".json")
    if archive.is_file() and note.is_file() and json.loads(note.read_text()).get("listing") == want.digest:
        return want
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(archive.name + ".part")
    if shutil.which("tar") and shutil.which("xz"):
        tar = ["tar", "--sort=name", "--owner=0", "--group=0", "--numeric-owner", "-cf", "-"]
        tar += ["-C", str(folder.parent), folder.name]
        with tmp.open("wb") as out:
            packer = subprocess.Popen(tar, stdout=subprocess.PIPE)
            xz = subprocess.run(["xz", "-9", "-T1"], stdin=packer.stdout, stdout=out)
            if packer.stdout is not None:
                packer.stdout.close()
            if packer.wait() or xz.returncode:
                raise ValueError(f"packing {folder} failed (tar {packer.returncode}, xz {xz.returncode})")
    else:
        with tarfile.open(tmp, "w:xz", preset=9) as t:
            for name, _ in want.files:
                t.add(folder.parent / name, arcname=name, recursive=False)
    with tarfile.open(tmp, "r:xz") as t:
        packed = sorted((m.name, m.size) for m in t.getmembers() if m.isfile())
    if tuple(packed) != want.files:
        tmp.unlink()
        raise ValueError(f"{archive} would not hold {folder} file for file ({len(packed)} of {len(want.files)})")
    os.replace(tmp, archive)
    note.write_text(json.dumps({"source": str(folder), "files": len(want.files), "listing": want.digest}) + "\n")
    return want


def travelling_bytes(root: Path, carry: list[str]) -> dict[str, int]:
    """What the device tool would send from ``root``: tracked and untracked-not-ignored files (``shared/``
    among them when it is not ignored), ``shared/`` when it is, and the carried paths, in bytes."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    sizes = {"tree": 0, "shared": 0}
    for rel in filter(None, listed.split("\0")):
        path = root / rel
        if path.is_file() and not path.is_symlink():
            sizes["shared" if rel.startswith("shared/") else "tree"] += path.stat().st_size
    if sizes["shared"] == 0 and (root / "shared").is_dir():  # an ignored shared/ travels too
        sizes["shared"] = sum(p.stat().st_size for p in (root / "shared").rglob("*") if p.is_file())
    for carried in carry:
        sizes[carried] = sum(p.stat().st_size for p in (root / carried).rglob("*") if p.is_file())
    return sizes


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    shared = os.environ.get("CON2_SHARED_DATA") or str(ROOT.parent / "shared" / "data")
    p.add_argument("--shared", default=shared, help="the offline data (default: $CON2_SHARED_DATA or ../shared/data)")
    p.add_argument("--no-wheels", action="store_true", help="carry no wheels (no workflow smoke on the device)")
    p.add_argument("--check", action="store_true", help="change nothing: report what is there and its size")
    args = p.parse_args()
    source, dest, wheels = Path(args.shared), ROOT / DATA_DEST, ROOT / WHEEL_DIR
    problems: list[str] = []

    for name in MEDMNIST:
        src, dst = source / "medmnist" / name, dest / "medmnist" / name
        if not args.check and src.is_file() and (not dst.is_file() or dst.stat().st_size != src.stat().st_size):
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        print(f"medmnist: {dst.relative_to(ROOT)} {'present' if dst.is_file() else 'MISSING'}", flush=True)
        problems += [] if dst.is_file() else [f"{dst} is missing (from {src})"]

    archive = dest / ARCHIVE
    if (source / "cifar10").is_dir() and not args.check:
        print(f"cifar10: packing {source / 'cifar10'} into {archive.relative_to(ROOT)} (about a minute)", flush=True)
        try:
            packed = pack_folder(source / "cifar10", archive)
            print(f"cifar10: {len(packed.files)} files, {mb(packed.bytes)} -> {mb(archive.stat().st_size)}", flush=True)
        except ValueError as e:
            problems.append(str(e))
    print(f"cifar10: {archive.relative_to(ROOT)} {mb(archive.stat().st_size) if archive.is_file() else 'MISSING'}")
    if not archive.is_file():
        problems.append(f"{archive} is missing: part (e) will be skipped (no CIFAR-10 on the device)")

    carry = []
    if not args.no_wheels:
        if not args.check:
            problems += download_wheels(wheels)
        gaps = wheel_gaps(wheels) if wheels.is_dir() else sorted(f"{n}=={v}" for n, v in WHEELS.items())
        found = sorted(wheels.glob("*.whl")) if wheels.is_dir() else []
        unmet = missing_requirements(found)
        print(f"wheels: {len(found)} in {WHEEL_DIR}, {mb(sum(w.stat().st_size for w in found))}", flush=True)
        problems += [f"no wheel for {g} in {WHEEL_DIR}" for g in gaps]
        problems += [f"{w} requires {', '.join(g)}: neither carried nor in the GPU image" for w, g in unmet.items()]
        carry = [WHEEL_DIR] if found else []

    sizes = travelling_bytes(ROOT, carry)
    total = sum(sizes.values())
    parts = ", ".join(f"{k} {mb(v)}" for k, v in sizes.items())
    print(f"travels: {mb(total)} of {mb(LIMIT_BYTES)} ({parts})")
    if total > LIMIT_BYTES:
        problems.append(f"{mb(total)} would travel, over the device tool's {mb(LIMIT_BYTES)}")
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    print(f'device call: run(command="bash benchmarks/gpu_call.sh", carry={json.dumps(carry)}, timeout_s=600)')
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
