"""Writes ``testdata/energon-chatml.tar``: a tiny Energon dataset made by Energon's own preparation
code, in the layout Megatron-Bridge's VL stages read, packed whole into one tar (Pants ignores
folders whose name starts with a dot, as ``.nv-meta`` does). ``energon_test.py`` unpacks copies of
it, good and damaged (issue 43).

Not run by the tests: megatron-energon needs torch, which the repository does not lock. Run it
in a scratch environment, from the repository root::

    python3.11 -m venv /tmp/energon-venv
    /tmp/energon-venv/bin/pip install megatron-energon==7.4.1 torch==2.13.0
    /tmp/energon-venv/bin/python src/python/recipekit/datacheck/testdata/make_energon_fixture.py

The samples are those of Megatron-Bridge's own Energon tutorial
(``tutorials/data/energon/prepare_example_data.py``): an ``image.png`` and a ChatML
``conversation.json`` per key, train and val shards split by name, and the ``dataset.yaml``
naming Bridge's ``ChatMLWebdataset`` written after ``energon prepare`` (as the tutorial does).
The images are 8 x 8 rather than 448 x 448, to keep the shards small.
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import tarfile
import zlib
from pathlib import Path

from megatron.energon.flavors.webdataset.base_webdataset import BaseWebdatasetFactory

PACKED = Path(__file__).resolve().parent / "energon-chatml.tar"
OUT = Path("/tmp/energon-chatml")
SIDE = 8
SAMPLES = {
    "train-shard-000000.tar": [
        ((220, 40, 40), "red"),
        ((40, 180, 80), "green"),
        ((50, 90, 220), "blue"),
    ],
    "train-shard-000001.tar": [((230, 200, 40), "yellow"), ((20, 20, 20), "black")],
    "val-shard-000000.tar": [((150, 70, 190), "purple"), ((230, 120, 30), "orange")],
}
DATASET_YAML = """\
__module__: megatron.bridge.data.energon.task_encoder_utils
__class__: ChatMLWebdataset
field_map:
  imgs: image.png
  conversation: conversation.json
subflavors: {}
"""


def png(color: tuple[int, int, int]) -> bytes:
    def chunk(name: bytes, payload: bytes) -> bytes:
        crc = zlib.crc32(name + payload) & 0xFFFFFFFF
        return struct.pack(">I", len(payload)) + name + payload + struct.pack(">I", crc)

    pixels = (b"\x00" + bytes(color) * SIDE) * SIDE
    header = struct.pack(">IIBBBBB", SIDE, SIDE, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(pixels))
        + chunk(b"IEND", b"")
    )


def conversation(name: str) -> bytes:
    return json.dumps(
        [
            {
                "role": "user",
                "content": [
                    {"type": "image"},
                    {"type": "text", "text": "What is the dominant color?"},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": f"The image is {name}."}]},
        ]
    ).encode()


def add(archive: tarfile.TarFile, name: str, payload: bytes) -> None:
    info = tarfile.TarInfo(name=name)
    info.size = len(payload)
    info.mtime = 0
    archive.addfile(info, io.BytesIO(payload))


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    for shard, samples in SAMPLES.items():
        prefix = shard.split("-shard-")[0]
        with tarfile.open(OUT / shard, "w", format=tarfile.USTAR_FORMAT) as archive:
            for index, (color, name) in enumerate(samples):
                key = f"{prefix}-{shard[-10:-4]}-{index:03d}"
                add(archive, f"{key}.image.png", png(color))
                add(archive, f"{key}.conversation.json", conversation(name))
    # energon prepare --split-parts train:train-shard-.* --split-parts val:val-shard-.*
    # --skip-dataset-yaml, as the Bridge tutorial runs it, through the API the CLI calls.
    BaseWebdatasetFactory.prepare_dataset(
        OUT,
        sorted(SAMPLES),
        split_parts_patterns=[("train", "train-shard-.*"), ("val", "val-shard-.*")],
        workers=1,
    )
    (OUT / ".nv-meta" / "dataset.yaml").write_text(DATASET_YAML)
    with tarfile.open(PACKED, "w", format=tarfile.USTAR_FORMAT) as packed:
        for path in sorted(OUT.rglob("*")):
            if path.is_file():
                info = packed.gettarinfo(path, arcname=str(path.relative_to(OUT)))
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                with path.open("rb") as handle:
                    packed.addfile(info, handle)


if __name__ == "__main__":
    main()
