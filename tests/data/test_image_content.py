"""What an image folder's files hold, read as they are (issue 47, item 5; item 12's image bomb).

* a 16-bit greyscale PNG (``I;16``) is scaled to 8 bits over its whole range: PIL's ``convert("L")``
  clamped every value above 255 to white (61% of a real scan's pixels), without a word;
* byte-identical files in the normal and the anomalous folder (BR35H's real copy holds such a pair)
  are named in the prepared cache's manifest and in a note, though every file was hashed before
  and nothing said so;
* a PNG whose header claims 20000 x 20000 pixels stops the preparation with one line naming the
  file (it was a ``DecompressionBombError`` traceback).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from data_fixtures import isolated_env, make_br35h  # noqa: F401  (isolated_env is autouse)
from PIL import Image

from con2.data.base import DataError
from con2.data.images import preprocess
from con2.data.registry import prepare_dataset

SIZE = 16


def sixteen_bit(path: Path) -> np.ndarray:
    """A 16-bit greyscale PNG at ``path`` spanning the whole range (its values ``[H, W]``)."""
    rng = np.random.default_rng(7)
    values = rng.integers(0, 65536, size=(20, 24), dtype=np.uint16)
    values[0, :4] = [0, 256, 32768, 65535]
    Image.fromarray(values).save(path)
    assert Image.open(path).mode == "I;16"
    return values


def row_of(prepared, sample: str) -> np.ndarray:
    return np.asarray(prepared.images[list(prepared.ids).index(sample)])


def test_a_16_bit_png_is_scaled_not_clamped(tmp_path: Path) -> None:
    root = make_br35h(tmp_path)
    (root / "no" / "no0.jpg").unlink()
    values = sixteen_bit(root / "no" / "no0.png")
    prepared = prepare_dataset("br35h", tmp_path, SIZE, progress=False)
    # the slow, obvious reference: each 16-bit value v is round(v / 257) in 8 bits, then the same resize and crop
    eight = np.floor(values.astype(np.float64) / 257 + 0.5).astype(np.uint8)
    expected = preprocess(Image.fromarray(eight, "L"), "resize_crop", SIZE, prepared.images.shape[-1])
    got = row_of(prepared, "no/no0.png")
    assert np.array_equal(got, expected)
    clamped = preprocess(Image.open(root / "no" / "no0.png").convert("L"), "resize_crop", SIZE, got.shape[-1])
    assert (clamped == 255).mean() > 0.9 and (got == 255).mean() < 0.1  # what convert("L") made of it


def test_byte_identical_images_across_classes_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_br35h(tmp_path)
    (root / "no" / "no9.jpg").write_bytes((root / "yes" / "y0.jpg").read_bytes())  # an anomaly also filed as normal
    (root / "no" / "no8.jpg").write_bytes((root / "no" / "no7.jpg").read_bytes())  # a duplicate within one class
    prepared = prepare_dataset("br35h", tmp_path, SIZE, progress=False)
    assert prepared.manifest["duplicates_across_classes"] == [["no/no9.jpg", "yes/y0.jpg"]]
    assert np.array_equal(row_of(prepared, "no/no9.jpg"), row_of(prepared, "yes/y0.jpg"))
    err = capsys.readouterr().err
    assert "note: br35h: no/no9.jpg = yes/y0.jpg are byte-identical files in different class folders" in err


def png_header_only(path: Path, width: int, height: int) -> None:
    """A PNG whose header says ``width`` x ``height`` (8-bit grey) and whose data is one empty row."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0")) + chunk(b"IEND", b"")
    )


def test_an_image_bomb_is_refused_in_one_line(tmp_path: Path) -> None:
    root = make_br35h(tmp_path)
    png_header_only(root / "no" / "no3.png", 20000, 20000)
    with pytest.raises(DataError) as info:
        prepare_dataset("br35h", tmp_path, SIZE, progress=False)
    message = str(info.value)
    assert "\n" not in message and "no/no3.png" in message and "Fix: delete that file" in message
