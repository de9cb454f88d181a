"""Finding, checking and loading pretrained weights: found on disk, checked, never downloaded.

A method that starts from pretrained weights names them in its spec (``MethodSpec.weights``:
``{params key: weight-set name}``); the value of that params key says where the file is:

* ``""`` (the default): look the weight set's file names up in the model caches, in this order:
  ``$CON2_WEIGHTS_DIR``, then torch's hub cache (``$TORCH_HOME/hub/checkpoints``, by default
  ``~/.cache/torch/hub/checkpoints``, where ``torchvision`` keeps what it downloads), then, for a
  set published on the Hugging Face hub (``hf_repo``), the Hugging Face cache (``$HF_HUB_CACHE``,
  else ``$HF_HOME/hub``, by default ``~/.cache/huggingface/hub``, where ``hf download`` puts it:
  ``models--<org>--<name>/snapshots/<revision>/<file>``);
* a directory: a model cache of your own, searched the same way (``<dir>``, ``<dir>/hub/checkpoints``,
  and for a hub set ``<dir>/models--<org>--<name>/snapshots/...``), e.g. the ``--local-dir`` of
  ``hf download``;
* a file: that file;
* a weight-set name from :data:`KNOWN` (e.g. ``torchvision/resnet18-imagenet1k-v1``): that set,
  looked up in the caches.

Checks, before any training starts (:func:`resolve`, torch-free, from the spec's validation):
the file exists and, when its expected sha256 is known, its digest matches (the table's digest
for a cached or known file name, or a ``<key>_sha256`` params field; torchvision's file names
carry the first 8 hex digits of their sha256, which is what torchvision itself checks; a file in
the Hugging Face cache is a link to a blob named by its sha256, which is checked the same way). Then,
where the method builds its model (:func:`load_checked`, needs torch): the file loads with
``torch.load(weights_only=True)`` and its state-dict keys and tensor shapes are exactly the
model's. Every failure is a ``ConfigError`` that names the file, what is wrong, and where to get
the right one; nothing is ever fetched from the network during a run.

:data:`KNOWN` is the table of weight sets this project knows: name, family, the architecture the
file must fit, accepted file names with their sha256 (full or prefix; ``""`` = not known), the
address to get it and how the file is laid out (a plain state dict, a checkpoint holding one
under a key, a TorchScript archive, or a Hugging Face ``transformers`` model folder). It lists the
torchvision ResNets PANDA uses, OpenAI's CLIP checkpoints (CLIP-AD) and the Hugging Face I-JEPA
model (I-JEPA-ZSAD); only the ones with an importable ``architecture`` can be used by
:func:`save_random_weights` (tests and smoke runs).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from con2.errors import ConfigError, WeightsMissing, read_failure
from con2.weights.catalogue import ENV_DIR, KNOWN, WeightSet, get_set, hf_hub_cache_dir, hub_checkpoint_dir

if TYPE_CHECKING:
    from torch import Tensor, nn


def cache_dirs(ws: WeightSet | None = None) -> list[Path]:
    """The model caches searched for a weight set's files: ``$CON2_WEIGHTS_DIR`` (if set), torch's hub cache,
    and for a set published on the Hugging Face hub (``ws.hf_repo``) the Hugging Face cache."""
    dirs = [Path(os.path.expanduser(os.environ[ENV_DIR]))] if os.environ.get(ENV_DIR) else []
    return [*dirs, hub_checkpoint_dir(), *([hf_hub_cache_dir()] if ws is not None and ws.hf_repo else [])]


def _hf_snapshots(cache: Path, repo: str) -> list[Path]:
    """The snapshot folders of ``repo`` in a Hugging Face cache: the one ``refs/main`` names first, then the rest."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snaps = sorted((root / "snapshots").glob("*")) if (root / "snapshots").is_dir() else []
    main = root / "refs" / "main"
    head = root / "snapshots" / main.read_text().strip() if main.is_file() else None
    return [*([head] if head in snaps else []), *(p for p in snaps if p != head)]


def hf_blob_sha256(path: Path) -> str:
    """The sha256 a Hugging Face cache file is stored under (its link's target is ``blobs/<sha256>``), or ``""``."""
    if not path.is_symlink():
        return ""
    name = Path(os.readlink(path)).name
    return name if len(name) == 64 and all(c in "0123456789abcdef" for c in name) else ""


@lru_cache(maxsize=64)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_of(path: str | Path) -> str:
    """The file's sha256 (hex), computed once per (path, size, modification time)."""
    st = os.stat(path)
    return _sha256_cached(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


def digest_matches(digest: str, expected: str) -> bool:
    """``expected`` is the full digest or a prefix of it (case-insensitive)."""
    return bool(expected) and digest.lower().startswith(expected.lower())


@dataclass(frozen=True)
class Resolved:
    """A weights file found and checked on disk."""

    key: str  # the params key (``weights``)
    path: Path
    weight_set: WeightSet
    sha256: str  # the file's digest
    verified: bool  # the digest matched a known or given one (False: none was known for this file)

    def card(self) -> dict[str, Any]:
        """What a run's record keeps of it."""
        return {"set": self.weight_set.name, "file": str(self.path), "sha256": self.sha256, "verified": self.verified}


def check_weights_dir() -> None:
    """Refuse a ``$CON2_WEIGHTS_DIR`` that exists but is no folder (``/etc/passwd``): nothing can be
    found in it, and "no file found in /etc/passwd" would hide the setting at fault.

    Raises:
        ConfigError: naming the variable, the path and the fix.
    """
    value = os.environ.get(ENV_DIR)
    path = Path(os.path.expanduser(value)) if value else None
    if path is not None and path.exists() and not path.is_dir():
        raise ConfigError(
            f"{ENV_DIR}={value} is not a folder. Fix: set {ENV_DIR} to the folder that holds the weights files "
            f"(or unset it: torch's hub cache is searched too)"
        )


def _search(ws: WeightSet, dirs: list[Path], key: str = "weights") -> Path | None:
    """The first file of ``ws`` in ``dirs`` (and their hub subfolders); a folder that cannot be read
    is a ``ConfigError`` saying so (nothing is wrong with the weights in it)."""
    try:
        for d in dirs:
            subs = [d, d / "hub" / "checkpoints", d / "checkpoints"]
            if ws.hf_repo:
                subs += [*_hf_snapshots(d, ws.hf_repo), *_hf_snapshots(d / "hub", ws.hf_repo)]
            for sub in subs:
                for name in ws.files:
                    if (sub / name).is_file():
                        return sub / name
    except PermissionError as exc:
        raise ConfigError(f"params.{key}: {read_failure(exc)}") from None
    return None


def resolve(value: str, set_name: str | WeightSet, key: str = "weights", sha256: str = "", owner: str = "") -> Resolved:
    """Find and check the weights file for params ``key`` (torch-free; see the module docstring).

    Args:
        value: the params value: ``""``, a known set name, a directory or a file.
        set_name: the weight set the method needs (a :data:`KNOWN` name, or a :class:`WeightSet`
            for files no one publishes, e.g. a Fisher diagonal of another backbone).
        key: the params key, for messages (``params.<key>``).
        sha256: an expected digest (full or prefix) given by the user for a file of another name.
        owner: the method's name, for messages.

    Raises:
        WeightsMissing: no file (a ``ConfigError``); the message says how to get it.
        ConfigError: an unknown set, or a digest that does not match; the message names the
            file and how to get the right one.
    """
    ws = get_set(set_name)
    who = f"method {owner!r}" if owner else "this method"
    need = f"{who} needs the pretrained weights {ws.name!r} (params.{key})"
    value = str(value or "").strip()
    if value in KNOWN:
        if KNOWN[value].family != ws.family or KNOWN[value].architecture != ws.architecture:
            raise ConfigError(
                f"params.{key}={value!r}: {need}, whose architecture is {ws.architecture}, not "
                f"{KNOWN[value].architecture}"
            )
        ws, value = KNOWN[value], ""
    if not value or Path(os.path.expanduser(value)).is_dir():
        dirs = [Path(os.path.expanduser(value))] if value else cache_dirs(ws)
        if not value:
            check_weights_dir()
        path = _search(ws, dirs, key)
        if path is None:
            raise WeightsMissing(
                f"{need} and no file {' or '.join(ws.files)} was found in {', '.join(map(str, dirs))}; "
                f"{ws.how_to_get(key)}"
            )
    else:
        path = Path(os.path.expanduser(value))
        if not path.is_file():
            raise WeightsMissing(f"params.{key}: no file at {path}; {need}: {ws.how_to_get(key)}")
    blob = hf_blob_sha256(path)  # a Hugging Face cache entry names its content's sha256
    path = path.absolute() if ws.fmt == "hf_pretrained" else path.resolve()  # a model folder: keep the file in it
    expected = sha256 or ws.files.get(path.name, "") or blob
    digest = sha256_of(path)
    if expected and not digest_matches(digest, expected):
        raise ConfigError(
            f"params.{key}: {path} has sha256 {digest[:16]}..., expected {expected[:16]}... for {ws.name!r}: "
            f"the file is damaged or holds other weights; get it again: {ws.how_to_get(key)}"
        )
    return Resolved(key=key, path=path, weight_set=ws, sha256=digest, verified=bool(expected))


def resolve_all(needs: Mapping[str, str | WeightSet], params: Any, owner: str = "") -> dict[str, Resolved]:
    """:func:`resolve` every ``{params key: set name}`` a method declares; ``<key>_sha256`` params give digests."""
    return {
        key: resolve(getattr(params, key), set_name, key, str(getattr(params, f"{key}_sha256", "") or ""), owner)
        for key, set_name in needs.items()
    }


# --- with torch: load, compare with the model, and write random stand-ins for tests ------------


def load_state_dict(resolved: Resolved) -> dict[str, Tensor]:
    """The file's tensors as a flat state dict (checkpoint entry and key prefix handled).

    Raises ``ConfigError`` naming the file if it is not a PyTorch file of the expected layout.
    """
    import torch  # lazy: torch only when a file is loaded: finding and checking stay torch-free

    ws, path = resolved.weight_set, resolved.path
    fmt = "safetensors" if path.suffix == ".safetensors" else ws.fmt
    state: Any  # a state dict, a checkpoint holding one, or whatever the file holds (checked below)
    try:
        if fmt == "safetensors":
            from safetensors.torch import load_file  # lazy: safetensors comes with the optional `pretrained` extra

            state = load_file(str(path), device="cpu")
        elif fmt == "torchscript":
            try:
                with warnings.catch_warnings():  # torch 2.14 deprecates TorchScript; OpenAI ships its CLIP so
                    warnings.simplefilter("ignore", FutureWarning)
                    state = torch.jit.load(str(path), map_location="cpu").state_dict()
            except RuntimeError:  # the same weights as a plain state dict (open_clip's copies on the hub)
                state = torch.load(path, map_location="cpu", weights_only=True)
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise ConfigError(
            f"params.{resolved.key}: {path} cannot be read as {fmt} weights ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}); {ws.how_to_get(resolved.key)}"
        ) from None
    if fmt == "checkpoint":
        if not isinstance(state, dict) or ws.state_key not in state:
            found = sorted(state)[:8] if isinstance(state, dict) else type(state).__name__
            raise ConfigError(
                f"params.{resolved.key}: {path} holds no {ws.state_key!r} entry (found {found}); "
                f"{ws.how_to_get(resolved.key)}"
            )
        state = state[ws.state_key]
    if not isinstance(state, Mapping) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ConfigError(
            f"params.{resolved.key}: {path} does not hold a mapping of names to tensors; {ws.how_to_get(resolved.key)}"
        )
    p = ws.strip_prefix
    return {(k[len(p) :] if p and k.startswith(p) else k): v for k, v in state.items() if k not in ws.ignore_keys}


def expected_shapes(model: nn.Module, keys: str = "state_dict") -> dict[str, tuple[int, ...]]:
    """``{name: shape}`` of a model's state dict (``keys="parameters"``: its parameters only)."""
    items = model.named_parameters() if keys == "parameters" else model.state_dict().items()
    return {k: tuple(v.shape) for k, v in items}


def check_state_dict(state: Mapping[str, Tensor], expected: Mapping[str, tuple[int, ...]], resolved: Resolved) -> None:
    """``ConfigError`` unless ``state`` has exactly the expected keys and shapes (names a few of each misfit)."""
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    wrong = [
        f"{k}: file {tuple(state[k].shape)} vs model {expected[k]}"
        for k in expected
        if k in state and tuple(state[k].shape) != tuple(expected[k])
    ]
    if missing or unexpected or wrong:
        parts = [
            f"{len(v)} {what} ({', '.join(v[:3])}{', ...' if len(v) > 3 else ''})"
            for what, v in (("missing keys", missing), ("unexpected keys", unexpected), ("shape mismatches", wrong))
            if v
        ]
        ws = resolved.weight_set
        raise ConfigError(
            f"params.{resolved.key}: {resolved.path} does not fit {ws.architecture}: {'; '.join(parts)}; "
            f"it holds other weights than {ws.name!r}: {ws.how_to_get(resolved.key)}"
        )


def load_checked(resolved: Resolved, expected: Mapping[str, tuple[int, ...]]) -> dict[str, Tensor]:
    """Load the file and check it against ``expected`` (:func:`expected_shapes` of the model)."""
    state = load_state_dict(resolved)
    check_state_dict(state, expected, resolved)
    return state


def load_hf_pretrained(resolved: Resolved, model_class: Any, model_type: str) -> nn.Module:
    """A ``transformers`` model of ``model_class`` from the folder of ``resolved`` (``config.json`` beside
    the weights), offline. ``ConfigError`` naming the folder and how to get the right one when the
    folder is not a ``model_type`` model or its weights leave parameters missing, unexpected or misshapen."""
    folder, ws, key = resolved.path.parent, resolved.weight_set, resolved.key

    def refuse(why: str) -> ConfigError:
        return ConfigError(f"params.{key}: {folder} {why}; it is not {ws.name!r}: {ws.how_to_get(key)}")

    config_file = folder / "config.json"
    if not config_file.is_file():
        raise refuse(f"has no config.json beside {resolved.path.name}")

    try:
        found = json.loads(config_file.read_text()).get("model_type")
    except (OSError, ValueError) as exc:
        raise refuse(f"has an unreadable config.json ({exc})") from None
    if found != model_type:
        raise refuse(f"holds a {found!r} model, not {model_type!r}")
    try:
        model, info = model_class.from_pretrained(
            folder, local_files_only=True, output_loading_info=True, ignore_mismatched_sizes=True
        )
    except Exception as exc:  # noqa: BLE001 - a folder transformers cannot load is the same user error
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise refuse(f"cannot be loaded as {model_class.__name__} ({type(exc).__name__}: {first})") from None
    misfits = [
        f"{len(v)} {what} ({', '.join(map(str, list(v)[:3]))}{', ...' if len(v) > 3 else ''})"
        for what, v in (
            ("missing keys", info.get("missing_keys") or []),
            ("unexpected keys", info.get("unexpected_keys") or []),
            ("shape mismatches", info.get("mismatched_keys") or []),
        )
        if v
    ]
    if misfits:
        raise refuse(f"does not fit {model_class.__name__}: {'; '.join(misfits)}")
    return model


def build_architecture(ws: WeightSet) -> nn.Module:
    """The randomly initialised model of a weight set with an importable ``architecture``."""

    module, sep, attr = ws.architecture.partition(":")
    if not sep:
        raise NotImplementedError(f"weight set {ws.name!r} has no importable architecture ({ws.architecture})")
    return getattr(importlib.import_module(module), attr)()


def save_random_weights(set_name: str | WeightSet, path: str | Path, seed: int = 0) -> Path:
    """Write a file laid out like ``set_name``'s but with random values (tests, smoke runs; never a result).

    Parameters-only sets (a Fisher diagonal) get non-negative random values; a ``transformers``
    set (``hf_pretrained``) is written as a model folder at ``path``.
    """
    import torch  # lazy: torch only when random weights are written (tests, smoke runs)

    ws = get_set(set_name)
    if ws.fmt not in ("state_dict", "hf_pretrained"):
        raise NotImplementedError(
            f"random stand-ins are written for state dicts and transformers folders only, not {ws.fmt} ({ws.name})"
        )
    torch.manual_seed(seed)
    model = build_architecture(ws)
    if ws.fmt == "hf_pretrained":  # a model folder at ``path``: config.json and the weights file
        cast(Any, model).save_pretrained(path)  # a transformers model (hf_pretrained sets build one)
        return Path(path)
    if ws.keys == "parameters":
        state = {k: torch.rand_like(v) for k, v in model.named_parameters()}
    else:
        state = model.state_dict()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path)
    return path
