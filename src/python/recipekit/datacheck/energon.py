"""Megatron-Bridge's Energon datasets read before they are registered (issue 43).

The Super 3.5 VL pretraining and SFT stages read ``dataset.path``, an Energon WebDataset: tar
shards and the ``.nv-meta`` folder ``energon prepare`` writes beside them. Megatron-Bridge opens it
with Energon (``EnergonMultiModalDataModule``; ``data/builders/energon.py``), which reads the
metadata when the loader is built and each shard's samples when they are reached, on the
cluster. Everything below is what megatron-energon 7.4.1 reads (``megatron/energon/...``, cited
by file and line) or what Bridge's ``ChatMLWebdataset`` decodes; the package itself needs torch,
which the repository does not lock, so the rules are restated here and the tests check them on a
dataset Energon's own ``prepare`` wrote (``testdata/make_energon_fixture.py``).

Checked, the first failure refused (file, shard or sample, rule):

- ``.nv-meta`` is there, with its info file (``.info.json``, else ``.info.yaml``) mapping each shard
  to its sample count, and ``split.yaml`` (else ``split.json``) listing each split's shards, brace
  patterns expanded as Energon expands them; every shard a split lists is one the info file counts;
  the ``train`` split is there and not empty (Bridge always reads it);
- ``dataset.yaml`` is there and names a sample type, and a ``field_map`` or a ``sample_loader``;
- every shard the info file counts is there, with its ``.tar.idx``; its tar headers are read (not
  its data): every member ends inside the file (a truncated copy does not), the samples counted as
  ``energon prepare`` counts them equal the recorded count and the index's length (the check
  ``energon lint`` makes), and the index ends where the members do;
- the first samples of every shard are decoded: each ``field_map`` field finds its part, and each
  part parses as the WebDataset decoder would parse it (JSON, text, integers; images by their
  header; pickles by their opcodes, never executed); a ChatML ``conversation`` is a non-empty list
  of turns with a role and content, as Bridge's ``cook_chatml_sample`` reads it.

Not checked: every sample's payload (only the headers of the rest), images past their header,
video and audio payloads, a ``sample_loader``'s own code (a dataset.yaml naming one gets its
parts parsed, not its fields), and the ``index.sqlite`` Energon uses for joins and random access.
"""

from __future__ import annotations

import itertools
import json
import pickletools
import re
import struct
import tarfile
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from recipekit.datacheck.scan import json_type
from recipekit.delimited import split_top_level
from recipekit.errors import Issue, RecipeError

FORMAT = "energon-webdataset"
META = ".nv-meta"  # megatron/energon/flavors/webdataset/config.py:8
ENERGON = "megatron-energon 7.4.1"
# Samples decoded at the head of every shard: enough to find a shard written by another tool or
# with another field map; the rest of the shard's samples are counted from their headers only.
DECODED_PER_SHARD = 4

# How energon prepare groups a shard's members into samples (config.py:6-7, prepare.py's
# _iter_tar_sample_members): "KEY.PART", the key up to the file name's first dot; __x__ skipped.
SPLIT_NAME = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")
SKIP_META = re.compile(r"__[^/]*__($|/)")

# WebDataset's basic decoders (webdataset/autodecode.py, ``decoders``), by the part's last
# extension, and its image handler's extensions that a training image is stored in.
JSON_PARTS = ("json", "jsn")
TEXT_PARTS = ("txt", "text", "transcript")
INT_PARTS = ("cls", "cls2", "index", "inx", "id")
PICKLE_PARTS = ("pkl", "pickle", "pyd")
# Bridge's videohandler (task_encoder_utils.py): a pickled list of JPEG frames, or of videos.
FRAME_PARTS = ("jpgs", "mp4s", "videos")
IMAGE_PARTS = {
    "png": (b"\x89PNG\r\n\x1a\n",),
    "jpg": (b"\xff\xd8\xff",),
    "jpeg": (b"\xff\xd8\xff",),
    "gif": (b"GIF87a", b"GIF89a"),
    "bmp": (b"BM",),
    "tif": (b"II*\x00", b"MM\x00*"),
    "tiff": (b"II*\x00", b"MM\x00*"),
    "ppm": (b"P3", b"P6"),
    "pgm": (b"P2", b"P5"),
    "pbm": (b"P1", b"P4"),
    "webp": (b"RIFF",),
}
ANY_IMAGE = tuple(sorted({m for magics in IMAGE_PARTS.values() for m in magics}))
CHATML = "ChatMLWebdataset"
INFO_CITE = "metadata.py:124 get_dataset_info"
SPLIT_CITE = "metadata.py:71 WebdatasetMeta.from_config"


@attrs.frozen
class Sample:
    """One sample's parts, as read from its shard."""

    shard: str
    index: int
    key: str
    parts: dict[str, bytes]


def is_energon(folder: Path) -> bool:
    """Whether ``folder`` is an Energon dataset's root (it holds ``.nv-meta``)."""
    return (folder / META).is_dir()


def _refuse(where: Path | str, rule: str) -> RecipeError:
    return RecipeError([Issue(str(where), rule, hint="nothing was registered")])


def _load(file: Path, loader: str) -> Any:
    text = file.read_bytes()
    try:
        return json.loads(text) if loader == "json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        said = str(exc).splitlines()[0]
        raise _refuse(file, f"does not parse as {loader.upper()}: {said}") from None


def _first(meta: Path, names: tuple[str, ...], why: str) -> Path:
    for name in names:
        if (meta / name).is_file():
            return meta / name
    raise _refuse(
        meta / names[0], f"missing{' (nor ' + names[1] + ')' if len(names) > 1 else ''}: {why}"
    )


def expand(pattern: str) -> list[str]:
    """A shard name with brace patterns expanded as the ``braceexpand`` package Energon uses does:
    ``{a,b}`` alternatives and ``{000..012}`` ranges (zero-padded as written), nested."""
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth = 0
    for end in range(start, len(pattern)):
        depth += {"{": 1, "}": -1}.get(pattern[end], 0)
        if depth == 0:
            break
    else:
        return [pattern]  # an unclosed brace is kept as written
    body, head, tail = pattern[start + 1 : end], pattern[:start], pattern[end + 1 :]
    numbers = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?:\.\.(\d+))?", body)
    if numbers:
        first, last, step = numbers.group(1), numbers.group(2), int(numbers.group(3) or 1)
        width = max(len(first), len(last)) if first.startswith("0") or last.startswith("0") else 0
        low, high = int(first), int(last)
        values = range(low, high + 1, step) if low <= high else range(low, high - 1, -step)
        options = [str(v).zfill(width) for v in values]
    else:
        options = split_top_level(body, "{}")  # balanced: the braces were matched above
        if len(options) == 1:
            return [head + "{" + o + "}" + t for o in expand(body) for t in expand(tail)]
    return [head + o + t for option in options for o in expand(option) for t in expand(tail)]


def _shard_counts(meta: Path) -> tuple[Path, dict[str, int]]:
    file = _first(meta, (".info.json", ".info.yaml"), f"Energon reads it first ({INFO_CITE})")
    info = _load(file, "json" if file.suffix == ".json" else "yaml")
    counts = info.get("shard_counts") if isinstance(info, dict) else None
    if not isinstance(counts, dict) or not counts:
        raise _refuse(
            file, f"holds no shard_counts: the shards and their sample counts ({INFO_CITE})"
        )
    for shard, count in counts.items():
        if Path(str(shard)).is_absolute() or ".." in Path(str(shard)).parts:
            raise _refuse(
                file,
                f"shard_counts names {shard!r}, outside the dataset's folder: a shard is named "
                "by its path under it (energon prepare writes them so)",
            )
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise _refuse(
                file,
                f"shard_counts[{shard!r}] is {count!r}, not a positive sample count "
                "(energon prepare refuses a shard with no samples, prepare.py:209)",
            )
    return file, {str(k): v for k, v in counts.items()}


def _splits(
    meta: Path, info_file: Path, counts: Mapping[str, int]
) -> tuple[Path, dict[str, list[str]]]:
    file = _first(
        meta,
        ("split.yaml", "split.json"),
        f"Energon reads each split's shards there ({SPLIT_CITE})",
    )
    raw = _load(file, "json" if file.suffix == ".json" else "yaml")
    parts = raw.get("split_parts") if isinstance(raw, dict) else None
    if not isinstance(parts, dict):
        raise _refuse(file, f"holds no split_parts: each split's shards ({SPLIT_CITE})")
    excluded = raw.get("exclude") or []
    if not isinstance(excluded, list) or not all(isinstance(e, str) for e in excluded):
        raise _refuse(file, f"exclude is {excluded!r}, not a list of shard names ({SPLIT_CITE})")
    dropped = {name for e in excluded for name in expand(e)}
    splits: dict[str, list[str]] = {}
    for split, names in parts.items():
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise _refuse(file, f"split_parts.{split} is {names!r}, not a list of shard names")
        shards = [s for n in names for s in expand(n) if s not in dropped]
        for shard in shards:
            if shard not in counts:
                raise _refuse(
                    file,
                    f"split {split!r} lists shard {shard!r}, which {info_file.name} does not "
                    "count: "
                    "Energon looks its sample count up there and fails (metadata.py:105)",
                )
        splits[str(split)] = shards
    if "train" not in splits:
        raise _refuse(
            file,
            "has no train split: Megatron-Bridge reads split 'train' and Energon asserts it is "
            "there (metadata.py:83)",
        )
    if not splits["train"]:
        raise _refuse(
            file,
            "split 'train' lists no shards: Energon raises EmptyDatasetError when the stage "
            "builds its loader (metadata.py:98)",
        )
    return file, splits


def _dataset_yaml(meta: Path) -> tuple[str, dict[str, str] | None]:
    """The sample type dataset.yaml names and its field map (None: a sample_loader or a crude
    dataset, whose parts are parsed but not their fields)."""
    file = _first(
        meta, ("dataset.yaml",), "Energon builds the dataset from it (dataset_config.py:112)"
    )
    raw = _load(file, "yaml")
    if not isinstance(raw, dict):
        raise _refuse(
            file, "is not a mapping: Energon reads __module__/__class__ or sample_type from it"
        )
    typed = raw.get("sample_type")
    named: dict[str, Any] = typed if isinstance(typed, dict) else raw
    module, cls = named.get("__module__"), named.get("__class__")
    if not isinstance(module, str) or not isinstance(cls, str):
        raise _refuse(
            file,
            "names no sample type: __module__ and __class__ (or a sample_type holding them), "
            "as energon prepare writes them (tools/prepare.py)",
        )
    field_map = raw.get("field_map")
    if field_map is None:
        return f"{module}.{cls}", None
    if not isinstance(field_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in field_map.items()
    ):
        raise _refuse(file, f"field_map is {field_map!r}, not a mapping of fields to part names")
    return f"{module}.{cls}", dict(field_map)


def _field_options(description: str) -> list[list[str]]:
    """``field_access.split_field_access``: 'a,b' is a or b; 'json[x][0]' is a path into json."""
    options = []
    for option in description.split(","):
        match = re.fullmatch(r"([^[\]]+)((?:\[[^[\]]+\])*)", option)
        if match is None:
            options.append([description])
        else:
            options.append([match.group(1), *re.findall(r"\[([^[\]]+)\]", match.group(2))])
    return options


def _samples(path: Path, shard: str, size: int) -> Iterator[tuple[Sample | None, int]]:
    """Each sample of a shard in order, with the offset where the next begins (the last: where
    the members end), as the shard's .tar.idx records them: its parts read for the first
    DECODED_PER_SHARD, None after (headers only). A RecipeError where the tar breaks off."""
    key: str | None = None
    parts: dict[str, bytes] = {}
    index = -1

    def done() -> Sample | None:
        return Sample(shard, index, str(key), parts) if index < DECODED_PER_SHARD else None

    try:
        with tarfile.open(path, mode="r:*") as tar:
            for member in tar:
                named = SPLIT_NAME.match(member.name)
                if not member.isreg() or SKIP_META.match(member.name) or named is None:
                    continue
                if member.offset_data + member.size > size:
                    raise _refuse(
                        path,
                        f"truncated: member {member.name} ends at byte "
                        f"{member.offset_data + member.size}, the file has {size}",
                    )
                if named.group(1) != key:
                    if key is not None:
                        yield done(), member.offset
                    key, parts, index = named.group(1), {}, index + 1
                if index < DECODED_PER_SHARD:
                    handle = tar.extractfile(member)
                    parts[named.group(2)] = handle.read() if handle is not None else b""
            if key is not None:
                yield done(), tar.offset
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise _refuse(
            path, f"is not a readable tar ({exc}): Energon reads its samples with tarfile"
        ) from None


def _check_shard(
    root: Path, shard: str, count: int, info_file: Path
) -> tuple[list[Sample], set[str]]:
    """A shard's members against its recorded count and index; its first samples' parts."""
    path = root / shard
    if not path.is_file():
        raise _refuse(
            path,
            f"missing: {info_file.name} counts {count} samples in shard {shard!r}, and Energon "
            "opens it when the sampler reaches it",
        )
    index_file = path.with_suffix(".tar.idx")
    if not index_file.is_file():
        raise _refuse(
            index_file,
            f"missing: Energon reads shard {shard!r}'s sample offsets from it (itar.py:49 "
            "TarIndexReader); `energon prepare` writes it",
        )
    size = path.stat().st_size
    decoded: list[Sample] = []
    parts: set[str] = set()
    found = 0
    end = 0
    for sample, ends_at in _samples(path, shard, size):
        found, end = found + 1, ends_at
        if sample is not None:
            decoded.append(sample)
            parts.update(sample.parts)
    if found != count:
        raise _refuse(
            path,
            f"holds {found} samples, and {info_file.name} records {count}: the shard changed after "
            "energon prepare counted it (a truncated or rewritten copy); Energon's sampler would "
            "read past its end or skip samples",
        )
    offsets = index_file.stat().st_size // 8
    if offsets - 1 != count:
        raise _refuse(
            index_file,
            f"indexes {offsets - 1} samples, and {info_file.name} records {count} for shard "
            f"{shard!r} (energon lint's check, tools/lint.py:34)",
        )
    with index_file.open("rb") as handle:
        handle.seek(8 * count)
        (last,) = struct.unpack("<Q", handle.read(8))
    if last > size or last != end:
        raise _refuse(
            index_file,
            f"ends at byte {last}, and shard {shard!r}'s members end at {end} of its {size}: the "
            "shard changed after energon prepare indexed it (prepare.py:371)",
        )
    return decoded, parts


def _pickle_refusal(data: bytes, frames: bool) -> str | None:
    """Whether a pickle parses (its opcodes walked, never run); for Bridge's frame lists, whether
    every bytes value in it is an image."""
    try:
        ops = list(pickletools.genops(data))
    except (ValueError, EOFError, UnicodeDecodeError) as exc:
        return f"not a pickle ({exc})"
    if frames:
        for _, arg, _ in ops:
            if isinstance(arg, bytes) and not arg.startswith(ANY_IMAGE):
                return (
                    f"holds a {len(arg)}-byte value that is no image (Bridge's videohandler "
                    "decodes each as an image)"
                )
    return None


def part_refusal(part: str, data: bytes) -> str | None:
    """Why the WebDataset decoder (webdataset/autodecode.py) or Bridge's handlers would fail on a
    part, by its last extension; None when it parses or is a kind not decoded here."""
    extension = part.rsplit(".", 1)[-1].lower()
    try:
        if extension in JSON_PARTS:
            json.loads(data)
        elif extension in TEXT_PARTS:
            data.decode("utf-8")
        elif extension in INT_PARTS:
            int(data)
        elif extension in PICKLE_PARTS or extension in FRAME_PARTS:
            return _pickle_refusal(data, frames=extension in FRAME_PARTS)
        elif extension in IMAGE_PARTS:
            if not data.startswith(IMAGE_PARTS[extension]) or (
                extension == "webp" and data[8:12] != b"WEBP"
            ):
                return (
                    f"is no {extension} image (its first bytes: {data[:8]!r}); PIL's Image.open "
                    "fails on it"
                )
    except (ValueError, RecursionError) as exc:
        kind = (
            "JSON"
            if extension in JSON_PARTS
            else "UTF-8 text"
            if extension in TEXT_PARTS
            else "an integer"
        )
        return f"does not parse as {kind} ({str(exc).split(':')[0]})"
    return None


def _access_refusal(data: bytes, path: list[str]) -> str | None:
    """``field_access._field_access``: a path of keys (objects) and indices (lists) into a
    decoded JSON part; why it does not reach a value, or None."""
    if not path:
        return None
    try:
        value: Any = json.loads(data)
    except (ValueError, RecursionError):
        return "the part is not JSON"
    for step in path:
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif (
            isinstance(value, list)
            and step.lstrip("-").isdigit()
            and -len(value) <= int(step) < len(value)
        ):
            value = value[int(step)]
        else:
            return f"{step!r} is not in {json_type(value)}"
    return None


def _conversation_refusal(value: Any) -> tuple[str | None, str]:
    """A ChatML conversation as Bridge's ``cook_chatml_sample`` reads it (task_encoder_utils.py):
    its refusal, and its role sequence (as the template check counts them)."""
    if isinstance(value, bytes | str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as exc:
            return f"is not JSON ({str(exc).split(':')[0]})", ""
    turns = value.get("conversations", []) if isinstance(value, dict) else value
    if not isinstance(turns, list) or not turns:
        return "holds no turns: cook_chatml_sample indexes conversation[0]", ""
    if not all(isinstance(t, dict) for t in turns):
        return "holds a turn that is not an object", ""
    role, content = ("from", "value") if "from" in turns[0] else ("role", "content")
    for number, turn in enumerate(turns):
        for key in (role, content):
            if key not in turn:
                return (
                    f"turn {number} has no {key!r} (cook_chatml_sample reads {role!r}/{content!r})",
                    "",
                )
    names = {"human": "user", "gpt": "assistant"}
    roles = ["system"] if len(turns) % 2 else []
    roles += [names.get(str(t[role]), str(t[role])) for t in turns[len(turns) % 2 :]]
    return None, ",".join(roles)


def _sample_refusal(
    sample: Sample, field_map: Mapping[str, str] | None, chatml: bool
) -> tuple[str | None, str]:
    where = f"sample {sample.key!r} (sample {sample.index} of the shard)"
    wanted = sample.parts
    accessed: dict[str, list[str]] = {}
    roles = ""
    if field_map is not None:
        wanted = {}
        for field, description in field_map.items():
            options = _field_options(description)
            present = [o for o in options if o[0] in sample.parts]
            # field_access tries each alternative in turn: the first that reaches a value.
            option = next(
                (o for o in present if _access_refusal(sample.parts[o[0]], o[1:]) is None),
                present[0] if present else None,
            )
            if option is None:
                names = " or ".join(o[0] for o in options)
                return (
                    f"{where}: field {field!r} needs part {names}, which the sample lacks (its "
                    f"parts: {', '.join(sorted(sample.parts)) or 'none'}); Energon raises "
                    "FieldAccessError "
                    "(field_access.py:69)",
                    "",
                )
            wanted[option[0]] = sample.parts[option[0]]
            accessed[field] = option
    for part, data in wanted.items():
        problem = part_refusal(part, data)
        if problem is not None:
            return f"{where}: {sample.key}.{part} {problem}", ""
    for field, (part, *path) in accessed.items():
        problem = _access_refusal(sample.parts[part], path) if path else None
        if problem is not None:
            return (
                f"{where}: field {field!r} reads {part}[{']['.join(path)}], and {problem}: "
                "Energon raises FieldAccessError (field_access.py:69)",
                "",
            )
    if chatml and field_map is not None and "conversation" in field_map:
        option = next(o for o in _field_options(field_map["conversation"]) if o[0] in sample.parts)
        problem, roles = _conversation_refusal(sample.parts[option[0]])
        if problem is not None:
            return f"{where}: {sample.key}.{option[0]} (the conversation) {problem}", ""
    return None, roles


def check_energon(root: Path, *, bar: Any = None) -> dict[str, Any]:
    """``root`` (an Energon dataset's folder) read as Energon and Bridge read it; its statistics,
    as the manifest records them, or a RecipeError (one line: file, shard or sample, rule)."""
    meta = root / META
    if not meta.is_dir():
        raise _refuse(
            meta,
            "missing: not an Energon dataset (Energon finds a dataset by its .nv-meta, "
            "metadata.py:146); run `energon prepare` on the folder first",
        )
    info_file, counts = _shard_counts(meta)
    _, splits = _splits(meta, info_file, counts)
    sample_type, field_map = _dataset_yaml(meta)
    chatml = sample_type.rsplit(".", 1)[-1] == CHATML
    roles: Counter[str] = Counter()
    parts: set[str] = set()
    decoded = 0
    for shard, count in counts.items():
        samples, found = _check_shard(root, shard, count, info_file)
        parts |= found
        for sample in samples:
            problem, shape = _sample_refusal(sample, field_map, chatml)
            if problem is not None:
                raise _refuse(root / shard, problem)
            decoded += 1
            if shape:
                roles[shape] += 1
        if bar is not None:
            bar.advance((root / shard).stat().st_size)
    stats: dict[str, Any] = {
        "format": FORMAT,
        "sample_type": sample_type,
        "field_map": field_map,
        "splits": {
            split: {"shards": len(shards), "samples": sum(counts[s] for s in shards)}
            for split, shards in splits.items()
        },
        "shards": len(counts),
        "rows": sum(counts.values()),
        "decoded": decoded,
        "parts": sorted(itertools.islice(sorted(parts), 50)),
    }
    if roles:
        # The decoded samples' role sequences: the plan renders the stage's chat template on them.
        stats["roles"] = dict(sorted(roles.items()))
    return stats


def shard_bytes(root: Path) -> int:
    """The bytes of the shards under ``root``, for a progress bar's total."""
    return sum(p.stat().st_size for p in root.rglob("*.tar") if p.is_file()) + sum(
        p.stat().st_size for p in root.rglob("*.tgz") if p.is_file()
    )
