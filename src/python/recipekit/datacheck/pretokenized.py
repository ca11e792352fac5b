"""Pre-tokenised data, tied to the tokenizer that made it (issue 43; Nemotron's step library:
``prep-data-is-tokenizer-locked``).

Megatron's indexed datasets (a ``PREFIX.bin`` of token ids and its ``PREFIX.idx``, what
``preprocess_data.py`` writes and megatron-core's ``IndexedDataset`` reads) hold token ids and
nothing that says whose: read with another tokenizer, every id means another word, and nothing
fails. So ``store import`` of such data names the tokenizer that made it (``--tokenizer``,
required) and, for data packed or prepared for one, the sequence length (``--seq-length``); both
go into the manifest with the index's own counts, and ``pipeline plan`` refuses a stage whose model
has another tokenizer or whose sequence is longer (``datacheck.plan.lock_findings``).

The index is read as megatron-core 0.16.1 reads it (``megatron/core/datasets/indexed_dataset.py``,
``_IndexReader``, lines 264-330): the header ``MMIDIDX\\x00\\x00``, version 1, a dtype code, the
sequence and document counts, then int32 sequence lengths, int64 byte pointers and int64 document
indices. Checked: the header, version and dtype; the index's size for its counts; the ``.bin``'s
size against the lengths; and that the ids in the first ``SAMPLED_BYTES`` of the ``.bin`` are all
below the tokenizer's vocabulary size (an id past it is another tokenizer's, for certain).
"""

from __future__ import annotations

import struct
import sys
from array import array
from pathlib import Path
from typing import Any

from recipekit.errors import Issue, RecipeError

FORMAT = "megatron-indexed"
HEADER = b"MMIDIDX\x00\x00"  # indexed_dataset.py:47
# indexed_dataset.py:50-60 (DType): code -> (name, array typecode, bytes).
DTYPES = {
    1: ("uint8", "B", 1),
    2: ("int8", "b", 1),
    3: ("int16", "h", 2),
    4: ("int32", "i", 4),
    5: ("int64", "q", 8),
    8: ("uint16", "H", 2),
}
HEAD_BYTES = 34  # header 9 + version 8 + dtype 1 + sequence count 8 + document count 8
SAMPLED_BYTES = 64 * 1024 * 1024
CITE = "megatron-core 0.16.1 indexed_dataset.py:264"


def indexed_pairs(source: Path) -> dict[str, Path]:
    """The indexed datasets ``store import SOURCE`` places in a version, by their ``.bin``'s
    name there -> the prefix (``.bin`` beside an ``.idx``): SOURCE itself (either file), or
    those at a folder's top."""
    if source.is_file():
        prefix = source.with_suffix("")
        both = prefix.with_suffix(".bin").is_file() and prefix.with_suffix(".idx").is_file()
        return {source.with_suffix(".bin").name: prefix} if both else {}
    if source.is_dir():
        return {
            p.name: p.with_suffix("")
            for p in sorted(source.glob("*.bin"))
            if p.with_suffix(".idx").is_file()
        }
    return {}


def _refuse(where: Path, rule: str) -> RecipeError:
    return RecipeError([Issue(str(where), rule, hint="nothing was registered")])


def _read(file: Path, typecode: str, offset: int, count: int) -> array[int]:
    values: array[int] = array(typecode)
    with file.open("rb") as handle:
        handle.seek(offset)
        values.frombytes(handle.read(count * values.itemsize))
    if sys.byteorder != "little":  # pragma: no cover - the files are little-endian
        values.byteswap()
    return values


def check_indexed(prefix: Path, *, vocab_size: int) -> dict[str, Any]:
    """The ``.idx``/``.bin`` pair at ``prefix`` read as megatron-core reads it; its counts, or a
    RecipeError naming the file and the rule."""
    idx, bin_file = prefix.with_suffix(".idx"), prefix.with_suffix(".bin")
    with idx.open("rb") as handle:
        head = handle.read(HEAD_BYTES)
    if len(head) < HEAD_BYTES or head[:9] != HEADER:
        raise _refuse(idx, f"is not a Megatron index: it does not start with {HEADER!r} ({CITE})")
    version, code, sequences, documents = struct.unpack("<QBQQ", head[9:])
    if version != 1:
        raise _refuse(idx, f"is index version {version}; megatron-core reads version 1 ({CITE})")
    if code not in DTYPES:
        raise _refuse(idx, f"has dtype code {code}, not a token id type ({CITE})")
    name, typecode, size = DTYPES[code]
    expected = HEAD_BYTES + 12 * sequences + 8 * documents
    found = idx.stat().st_size
    if found not in (expected, expected + sequences):  # + one int8 mode per sequence
        raise _refuse(
            idx,
            f"holds {found} bytes, and its counts ({sequences} sequences, {documents} documents) "
            f"make {expected}: a truncated or foreign index ({CITE})",
        )
    lengths = _read(idx, "i", HEAD_BYTES, sequences)
    tokens = sum(lengths)
    if bin_file.stat().st_size != tokens * size:
        raise _refuse(
            bin_file,
            f"holds {bin_file.stat().st_size} bytes, and its index counts {tokens} {name} token "
            f"ids ({tokens * size} bytes): the pair does not belong together, or one is truncated",
        )
    sampled = _read(bin_file, typecode, 0, min(tokens, SAMPLED_BYTES // size))
    largest = max(sampled, default=0)
    if largest >= vocab_size:
        raise _refuse(
            bin_file,
            f"holds token id {largest}, and the tokenizer given has {vocab_size} ids: the data "
            "was tokenised with another tokenizer",
        )
    return {
        "format": FORMAT,
        "rows": sequences,
        # The document indices start with 0 (IndexedDatasetBuilder: document_indices = [0]).
        "documents": max(documents - 1, 0),
        "tokens": tokens,
        "dtype": name,
        "max_sequence_tokens": max(lengths, default=0),
        "largest_id_sampled": largest,
    }


def check_pretokenized(
    pairs: dict[str, Path], *, tokenizer: Path | None, seq_length: int | None
) -> dict[str, Any]:
    """Each indexed dataset of ``pairs`` checked and locked to ``tokenizer`` (required) and
    ``seq_length`` (where given); the statistics by name, as the manifest records them."""
    from recipekit.datacheck.gym import load_tokenizer

    if tokenizer is None:
        names = ", ".join(sorted(pairs))
        raise RecipeError(
            [
                Issue(
                    "--tokenizer",
                    f"{names}: pre-tokenised data (Megatron .bin/.idx) is tied to the tokenizer "
                    "that made it, and the files do not say which: name its tokenizer.json",
                    hint="nothing was registered",
                )
            ]
        )
    loaded, identity = load_tokenizer(tokenizer)
    vocab = int(loaded.get_vocab_size(with_added_tokens=True))  # type: ignore[attr-defined]
    content: dict[str, Any] = {}
    for name, prefix in pairs.items():
        stats = check_indexed(prefix, vocab_size=vocab)
        stats["tokenizer"] = identity
        stats["vocab_size"] = vocab
        if seq_length is not None:
            stats["seq_length"] = seq_length
        content[name] = stats
    return content
