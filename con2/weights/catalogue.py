"""The weight sets this project knows (:data:`KNOWN`): name, family, the architecture a file must fit,
accepted file names with their sha256, where to get it and how the file is laid out. Torch-free: the
grid checks a profile's weights against it before any job (:mod:`con2.weights.loading` finds, checks
and loads the files).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from con2.errors import ConfigError

ENV_DIR = "CON2_WEIGHTS_DIR"
FORMATS = ("state_dict", "checkpoint", "torchscript", "hf_pretrained")


def hub_checkpoint_dir() -> Path:
    """torch's hub cache for downloaded weights (``torch.hub.get_dir()/checkpoints``), without importing torch."""
    home = os.environ.get("TORCH_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "torch")
    return Path(os.path.expanduser(home)) / "hub" / "checkpoints"


def hf_hub_cache_dir() -> Path:
    """The Hugging Face hub cache, by huggingface_hub's rule (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``), no import."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.path.expanduser(os.environ["HF_HUB_CACHE"]))
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(os.path.expanduser(home)) / "hub"


@dataclass(frozen=True)
class WeightSet:
    """One set of pretrained weights this project knows.

    Attributes:
        name: the table key, ``<origin>/<model>-<training>`` (``torchvision/resnet18-imagenet1k-v1``).
        family: what kind of model (``torchvision-resnet``, ``clip``, ``ijepa``, ``fisher``).
        architecture: the model the file must fit: ``module:callable`` building it with random
            weights (no arguments), or a description where no importable builder exists yet.
        files: accepted file names -> sha256 (full hex digest or a prefix; ``""``: not known).
        url: where the file is published.
        fmt: ``state_dict`` (``torch.load`` gives the tensors; a ``.safetensors`` file is read with
            safetensors), ``checkpoint`` (a dict holding the state dict under ``state_key``),
            ``torchscript`` (``torch.jit.load``) or ``hf_pretrained`` (the weights file of a
            ``transformers`` model folder, ``config.json`` beside it: :func:`load_hf_pretrained`).
        state_key: the checkpoint entry holding the state dict (``fmt="checkpoint"``).
        strip_prefix: a prefix removed from every key (``module.`` of DataParallel checkpoints).
        keys: what the file holds: the model's ``state_dict`` (parameters and buffers) or its
            ``parameters`` only (e.g. a per-parameter Fisher diagonal).
        notes: anything a user must know to get or use it.
        hf_repo: the Hugging Face hub repository that publishes ``files`` (``org/name``): searched
            in the Hugging Face cache, fetched with ``hf download``.
        ignore_keys: entries of the file that are not model weights (dropped when loading).
    """

    name: str
    family: str
    architecture: str
    files: Mapping[str, str]
    url: str
    fmt: str = "state_dict"
    state_key: str = ""
    strip_prefix: str = ""
    keys: str = "state_dict"
    notes: str = ""
    hf_repo: str = ""
    ignore_keys: tuple[str, ...] = ()

    @property
    def filename(self) -> str:
        """The canonical file name (the first of ``files``)."""
        return next(iter(self.files))

    @property
    def hf_filename(self) -> str:
        """The file name the hub repository publishes (the last of ``files``)."""
        return list(self.files)[-1]

    def how_to_get(self, key: str = "weights") -> str:
        """One sentence: where the file comes from and where to put it."""
        where = (
            f"then put it in ${ENV_DIR} or {hub_checkpoint_dir()}, or pass params.{key}=/path/to/{self.filename} "
            f"(con2 never downloads)"
        )
        if self.hf_repo and not self.url:
            note = f" ({self.notes})" if self.notes else ""
            return (
                f"get it on a machine with internet access: `hf download {self.hf_repo}` (huggingface_hub's "
                f"command; it fills the Hugging Face cache {hf_hub_cache_dir()}, which con2 searches: copy that "
                f"folder here){note}, or `hf download {self.hf_repo} --local-dir DIR` and pass params.{key}=DIR "
                f"(con2 never downloads)"
            )
        if self.hf_repo:
            where += (
                f"; or `hf download {self.hf_repo} {self.hf_filename}` into the Hugging Face cache {hf_hub_cache_dir()}"
            )
        if not self.url:
            return f"{self.notes}; {where}"
        if "drive.google" in self.url:
            fetch = f"download it from {self.url} and save it as {self.filename}"
        else:
            fetch = f"`curl -L -o {self.filename} {self.url}`"
        note = f" ({self.notes})" if self.notes else ""
        return f"get it on a machine with internet access: {fetch}{note}; {where}"


def _torchvision(arch: str, files: dict[str, str], url: str) -> WeightSet:
    return WeightSet(
        name=f"torchvision/{arch.replace('_', '-')}-imagenet1k-v1",
        family="torchvision-resnet",
        architecture=f"torchvision.models:{arch}",
        files=files,
        url=url,
    )


def _openai_clip(model: str, sha256: str, timm_name: str) -> WeightSet:
    """OpenAI's CLIP ``model`` (an open_clip name): its TorchScript archive, or the open_clip state dict on the hub."""
    archive = f"{model}px.pt" if model.endswith("-336") else f"{model}.pt"
    return WeightSet(
        name=f"openai/clip-{model.lower()}",
        family="clip",
        architecture=f"open_clip {model} with QuickGELU (OpenAI CLIP)",
        files={archive: sha256, "open_clip_pytorch_model.bin": "", "open_clip_model.safetensors": ""},
        url=f"https://openaipublic.azureedge.net/clip/models/{sha256}/{archive}",
        fmt="torchscript",
        hf_repo=f"timm/{timm_name}.openai",
        ignore_keys=("input_resolution", "context_length", "vocab_size"),  # OpenAI's archives hold these as tensors
    )


def ijepa_hub_set(repo: str, notes: str = "") -> WeightSet:
    """The I-JEPA model folder ``repo`` of the Hugging Face hub (``config.json`` + ``model.safetensors``)."""
    return WeightSet(
        name=repo,
        family="ijepa",
        architecture="transformers.IJepaModel",
        files={"model.safetensors": ""},
        url="",
        fmt="hf_pretrained",
        hf_repo=repo,
        notes=notes,
    )


def stand_in_set(name: str, family: str, architecture: str, filename: str, fmt: str = "state_dict") -> WeightSet:
    """A weight set that exists only as random weights of ``architecture`` (``module:callable``), for the
    pipeline checks of a pretrained method (:func:`save_random_weights` writes it; never a result)."""
    return WeightSet(
        name=name,
        family=family,
        architecture=architecture,
        files={filename: ""},
        url="",
        fmt=fmt,
        notes="random weights for pipeline checks, written by con2.weights.save_random_weights; never a result",
    )


_TV = "https://download.pytorch.org/models/"
# torchvision's IMAGENET1K_V1 files (the 8 hex digits in a name are its sha256 prefix, as torchvision
# checks them) and the older file names of the same weights that PANDA's code downloads.
KNOWN: dict[str, WeightSet] = {
    ws.name: ws
    for ws in (
        _torchvision(
            "resnet18",
            {"resnet18-f37072fd.pth": "f37072fd", "resnet18-5c106cde.pth": "5c106cde"},
            _TV + "resnet18-f37072fd.pth",
        ),
        _torchvision(
            "resnet50",
            {"resnet50-0676ba61.pth": "0676ba61", "resnet50-19c8e357.pth": "19c8e357"},
            _TV + "resnet50-0676ba61.pth",
        ),
        _torchvision(
            "resnet152",
            {"resnet152-394f9c45.pth": "394f9c45", "resnet152-b121ed2d.pth": "b121ed2d"},
            _TV + "resnet152-394f9c45.pth",
        ),
        _torchvision(
            "wide_resnet50_2", {"wide_resnet50_2-95faca4d.pth": "95faca4d"}, _TV + "wide_resnet50_2-95faca4d.pth"
        ),
        WeightSet(
            name="panda/fisher-diagonal-resnet152",
            family="fisher",
            architecture="torchvision.models:resnet152",
            files={"fisher_diagonal.pth": ""},
            keys="parameters",
            url="https://drive.google.com/file/d/12PTw4yNqp6bgCHj94vcowwb37m81rvpY/view?usp=sharing",
            notes=(
                "PANDA's ImageNet Fisher-information diagonal for its EWC variant, "
                "linked from github.com/talreiss/PANDA"
            ),
        ),
        # CLIP-AD (open_clip): OpenAI's TorchScript archives, whose URLs carry the file's sha256, or the same
        # weights as open_clip state dicts in the Hugging Face repositories open_clip itself downloads from.
        _openai_clip(
            "ViT-B-16", "5806e77cd80f8b59890b7e101eabd078d9fb84e6937f9e85e4ecb61988df416f", "vit_base_patch16_clip_224"
        ),
        _openai_clip(
            "ViT-L-14", "b8cca3fd41ae0c99ba7e8951adf17d267cdb84cd88be6f7c2e0eca1737a03836", "vit_large_patch14_clip_224"
        ),
        _openai_clip(
            "ViT-L-14-336",
            "3035c92b350959924f9f00213499208652fc7ea050643e8b385c2dac08641f02",
            "vit_large_patch14_clip_336",
        ),
        # I-JEPA-ZSAD: the pretrained I-JEPA of the transformers library (a model folder on the hub).
        ijepa_hub_set("facebook/ijepa_vith14_1k", "ViT-H/14, ImageNet-1k, 300 epochs; about 2.5 GB"),
        # I-JEPA's own release of the same model (not read by a method here: I-JEPA-ZSAD loads the hub folder).
        WeightSet(
            name="meta/ijepa-vit-h14-in1k-300e",
            family="ijepa",
            architecture="I-JEPA ViT-H/14 target encoder (github.com/facebookresearch/ijepa, vit_huge patch 14)",
            files={"IN1K-vit.h.14-300e.pth.tar": ""},
            url="https://dl.fbaipublicfiles.com/ijepa/IN1K-vit.h.14-300e.pth.tar",
            fmt="checkpoint",
            state_key="target_encoder",
            strip_prefix="module.",
            notes="10 GB",
        ),
    )
}


def get_set(name: str | WeightSet) -> WeightSet:
    """The known weight set ``name`` (a :class:`WeightSet` is returned as is); ``ConfigError`` lists the known names."""
    if isinstance(name, WeightSet):
        return name
    if name not in KNOWN:
        raise ConfigError(f"unknown weight set {name!r}; known: {sorted(KNOWN)}")
    return KNOWN[name]
