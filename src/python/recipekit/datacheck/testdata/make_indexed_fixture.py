"""Writes ``testdata/indexed.bin`` and ``indexed.idx``: a tiny pre-tokenised dataset written by
megatron-core's own ``IndexedDatasetBuilder`` (what Megatron's preprocess_data.py uses), read back
with its ``IndexedDataset``; ``pretokenized_test.py`` imports copies of it (issue 43).

Not run by the tests (megatron-core needs torch, which no resolve here locks). From the
repository root, in a scratch environment::

    /tmp/energon-venv/bin/pip install numpy torch==2.13.0
    /tmp/energon-venv/bin/pip install --no-deps megatron-core==0.16.1
    /tmp/energon-venv/bin/python src/python/recipekit/datacheck/testdata/make_indexed_fixture.py

The ids are those of the test's word tokenizer (``conftest.word_tokenizer``: "[UNK]" 0, then one
id per word): three documents of one sequence each.
"""

from __future__ import annotations

from pathlib import Path

import numpy
import torch
from megatron.core.datasets.indexed_dataset import IndexedDataset, IndexedDatasetBuilder

PREFIX = Path(__file__).resolve().parent / "indexed"
DOCUMENTS = [[1, 2, 3, 4], [5, 6], [7, 8, 1, 2, 3]]


def main() -> None:
    builder = IndexedDatasetBuilder(str(PREFIX.with_suffix(".bin")), dtype=numpy.int32)
    for document in DOCUMENTS:
        builder.add_item(torch.tensor(document, dtype=torch.int32))
        builder.end_document()
    builder.finalize(str(PREFIX.with_suffix(".idx")))
    read = IndexedDataset(str(PREFIX))
    assert [list(read[i]) for i in range(len(read))] == DOCUMENTS


if __name__ == "__main__":
    main()
