"""Reading an instance file: what ``kubectl get ... -o yaml`` (or ``-o json``) wrote.

A file holds a ``v1`` ``List`` of objects, a multi-document YAML stream of objects, or one object
(contract §1). This module only turns the bytes into plain object mappings, with one clear line
naming the file and the place when they are not; the one converter (:mod:`vcsat.adapters.convert.snapshot`)
then reads the objects.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator, Mapping
from operator import itemgetter
from pathlib import Path
from typing import Any

from pydantic_core import from_json

from vcsat.adapters.convert.clock import (
    CLUSTER_DUMP_ANNOTATION,
    CYCLE_ANNOTATION,
    CYCLE_KINDS,
    NOW_ANNOTATION,
    SKIPPED_ANNOTATION,
    parse_clock,
)
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.model import Snapshot


def read_objects(
    path: str | Path,
    *,
    clock: list[float | None] | None = None,
    dumps: list[bool] | None = None,
    cycles: list[str] | None = None,
    skipped: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The Kubernetes objects in the file, in file order, each with a ``kind`` and ``apiVersion``.
    ``clock``: receives the clock of each top-level List that records one (``vcsat.io/now``);
    ``dumps``: whether each top-level document is a List marked as a cluster dump; ``cycles``: the
    kind of cycle each top-level document records (``vcsat.io/cycle``; ``"full"`` without one);
    ``skipped``: the steps a dumped cycle skipped for time (``vcsat.io/skipped``), each List's."""
    source = str(path)
    data = _read_bytes(Path(path), source)
    document = _fast_json(data, Path(path).suffix.lower() == ".json")
    if document is not None:
        documents = [document]
    else:
        text = _decode(data, source)
        if not text.strip():
            raise InputError("file is empty (expected a v1 List or Kubernetes objects)", source=source)
        if Path(path).suffix.lower() == ".json" or text.lstrip().startswith(("{", "[")):
            documents = [_load_json(text, source)]
        else:
            documents = _load_yaml(text, source)
            if not documents:
                raise InputError("holds no YAML document, only comments", source=source)
    several = len(documents) > 1
    objects: list[dict[str, Any]] = []
    for number, document in enumerate(documents, start=1):
        doc = f"document {number}" if several else ""
        if clock is not None:
            clock.append(_list_clock(document, doc, source))
        if dumps is not None:
            dumps.append(_is_cluster_dump(document))
        if cycles is not None:
            cycles.append(_list_cycle(document, doc, source))
        if skipped is not None:
            skipped.extend(_list_skipped(document, doc, source))
        objects.extend(_objects_of(document, doc, source))
    return objects


def read_snapshot(path: str | Path, *, scheduler_name: str = "vcsat") -> Snapshot:
    """The snapshot of an instance file; dangling references in it are errors (strict), except in a
    cluster dump (``vcsat.io/cluster-dump``), read as the live scheduler reads the cluster. Its clock
    (``Snapshot.now``) is the List's ``vcsat.io/now`` annotation, as the scheduler's dumps carry it."""
    return read_cycle(path, scheduler_name=scheduler_name)[0]


def read_cycle(
    path: str | Path, *, scheduler_name: str = "vcsat", skipped: list[str] | None = None
) -> tuple[Snapshot, bool]:
    """:func:`read_snapshot`, and whether the file is the dump of an early cycle (``vcsat.io/cycle:
    early``: the scheduler bound the greedy's sure placements on it), which a replay repeats.
    ``skipped``: receives the steps the dumped cycle skipped for time (``vcsat.io/skipped``)."""
    from vcsat.solver.pauses import no_gc_pauses  # here: the solver package loads OR-Tools

    # The parsed file is a large tree of fresh containers: the cyclic collector would walk it again
    # and again while it grows, and finds no garbage in it.
    with no_gc_pauses():
        clock: list[float | None] = []
        dumps: list[bool] = []
        cycles: list[str] = []
        objects = read_objects(path, clock=clock, dumps=dumps, cycles=cycles, skipped=skipped)
        now = next((moment for moment in clock if moment is not None), None)
        # A cluster dump is read as the live scheduler read the cluster, so the replay decides alike.
        strict = not (dumps and all(dumps))
        snapshot = snapshot_from_objects(
            _handed_over(objects), scheduler_name=scheduler_name, source=str(path), strict=strict, now=now
        )
        # Freed while the collector is paused: the pause's end moves what is left (the snapshot) to
        # the oldest generation without a walk (:func:`vcsat.solver.pauses.keep_as_old`); the tree
        # would be moved with it and walked by the next full pass.
        del objects
    return snapshot, "early" in cycles


def _handed_over(objects: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The objects, the list emptied once they are all taken: then the converter holds the only
    reference to each and frees each pod's object once it is read (the file's tree is freed while
    the snapshot grows, not after it, which keeps the read's peak memory down)."""
    yield from objects
    objects.clear()


def read_yaml_mapping(path: str | Path) -> dict[str, Any]:
    """One YAML (or JSON) mapping from a file a person wrote, such as a policy; empty means ``{}``."""
    source = str(path)
    text = _read_text(Path(path), source)
    documents = _load_yaml(text, source)
    if not documents:
        return {}
    if len(documents) > 1:
        raise InputError(f"expected one YAML document, found {len(documents)}", source=source)
    if not isinstance(documents[0], Mapping):
        raise InputError(f"the top level must be a mapping, not {_describe(documents[0])}", source=source)
    return dict(documents[0])


def _read_text(path: Path, source: str) -> str:
    return _decode(_read_bytes(path, source), source)


def _read_bytes(path: Path, source: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", source=source) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=source) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", source=source) from None


def _fast_json(data: bytes, named_json: bool) -> Any:
    """The document of a JSON file parsed by pydantic-core's parser, or None to read it the careful way.

    It parses a cluster's dump several times faster than the standard library, and makes each
    distinct short string once (``cache_strings="all"``): the names, labels and quantities a dump
    repeats for every pod become one object each, so the parsed tree of a large cluster, and the
    memory the process touches to build and free it, is much smaller. It accepts only strict JSON
    (UTF-8, no NaN, no control character in a string, no lone surrogate, one document), which the
    standard parser reads to the same values (integers of any size stay integers). Whatever it
    refuses goes the careful way, which says what is wrong as before, or reads what the standard
    parser accepts beyond strict JSON.
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    start = len(data) - len(data.lstrip(b" \t\r\n")) if data[:1].isspace() else 0
    if not named_json and data[start : start + 1] not in (b"{", b"["):
        return None
    try:
        return from_json(data, allow_inf_nan=False, cache_strings="all")
    except ValueError:
        return None


def _decode(data: bytes, source: str) -> str:
    if b"\x00" in data:
        raise InputError("binary data, not YAML or JSON text", source=source)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"not UTF-8 text (byte {error.start}): binary data, not YAML or JSON", source=source) from None


def _load_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}", source=source
        ) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", source=source) from None


def _load_yaml(text: str, source: str) -> list[Any]:
    # PyYAML is imported on the first YAML text: a JSON file (how large clusters are dumped) never
    # needs it, and importing it took ~0.02 s of every ``vcsat solve``.
    import yaml

    # libyaml's loader when PyYAML was built with it: many times faster than the pure-Python one on large dumps.
    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return [document for document in yaml.load_all(text, Loader=loader) if document is not None]
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = " ".join(str(error.problem or error.context or "syntax error").split())
        raise InputError(f"invalid YAML{where}: {what}", source=source) from None
    except yaml.YAMLError as error:
        raise InputError(f"invalid YAML: {' '.join(str(error).split())}", source=source) from None
    except RecursionError:
        raise InputError("invalid YAML: nested too deeply", source=source) from None


def _is_cluster_dump(document: Any) -> bool:
    if not isinstance(document, Mapping) or document.get("kind") != "List":
        return False
    metadata = document.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return isinstance(annotations, Mapping) and annotations.get(CLUSTER_DUMP_ANNOTATION) == "true"


def _list_clock(document: Any, doc: str, source: str) -> float | None:
    """A List's ``metadata.annotations["vcsat.io/now"]`` in epoch seconds, or None without one."""
    if not isinstance(document, Mapping) or document.get("kind") != "List":
        return None
    metadata = document.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping) or annotations.get(NOW_ANNOTATION) is None:
        return None
    try:
        return parse_clock(annotations[NOW_ANNOTATION])
    except ValueError as error:
        raise InputError(
            str(error), source=source, obj="List", field=_field(doc, f'metadata.annotations["{NOW_ANNOTATION}"]')
        ) from None


def _list_cycle(document: Any, doc: str, source: str) -> str:
    """A List's ``metadata.annotations["vcsat.io/cycle"]`` (``"full"`` without one)."""
    if not isinstance(document, Mapping) or document.get("kind") != "List":
        return "full"
    metadata = document.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping) or annotations.get(CYCLE_ANNOTATION) is None:
        return "full"
    kind = annotations[CYCLE_ANNOTATION]
    if kind not in CYCLE_KINDS:
        raise InputError(
            f"must be one of {', '.join(repr(k) for k in CYCLE_KINDS)}, not {_describe(kind)}",
            source=source,
            obj="List",
            field=_field(doc, f'metadata.annotations["{CYCLE_ANNOTATION}"]'),
        )
    return str(kind)


def _list_skipped(document: Any, doc: str, source: str) -> list[str]:
    """A List's ``metadata.annotations["vcsat.io/skipped"]``, split at commas (none without one)."""
    if not isinstance(document, Mapping) or document.get("kind") != "List":
        return []
    metadata = document.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping) or annotations.get(SKIPPED_ANNOTATION) is None:
        return []
    names = annotations[SKIPPED_ANNOTATION]
    if not isinstance(names, str):
        raise InputError(
            f"must be a comma-separated string of step names, not {_describe(names)}",
            source=source,
            obj="List",
            field=_field(doc, f'metadata.annotations["{SKIPPED_ANNOTATION}"]'),
        )
    return [name.strip() for name in names.split(",") if name.strip()]


def _objects_of(document: Any, doc: str, source: str, path: str = "") -> Iterator[dict[str, Any]]:
    """The objects of one document: a List's items (nested Lists flattened), a list, or one object."""
    items: Any
    if isinstance(document, list):
        items, base = document, path
    elif isinstance(document, Mapping):
        if document.get("kind") != "List":
            yield _checked_object(document, doc, source, path)
            return
        items = document.get("items")
        base = f"{path}.items" if path else "items"
        if items is None:
            return  # an empty List, as kubectl prints it when nothing matched
        if not isinstance(items, list):
            raise InputError(f"must be a list, not {_describe(items)}", source=source, field=_field(doc, base))
    else:
        raise InputError(
            f"the top level must be a List or an object, not {_describe(document)}",
            source=source,
            field=_field(doc, path) or None,
        )
    if _plain_items(items):
        yield from items
        return
    for index, item in enumerate(items):
        place = f"{base}[{index}]"
        if isinstance(item, Mapping) and item.get("kind") == "List":
            yield from _objects_of(item, doc, source, place)
        else:
            yield _checked_object(item, doc, source, place)


_KIND = itemgetter("kind")
_API_VERSION = itemgetter("apiVersion")


def _plain_items(items: list[Any]) -> bool:
    """Whether every item is the parser's own dict with a non-empty string ``kind`` and
    ``apiVersion`` and none is a List: then the items are the objects as they are (what
    :func:`_checked_object` returns for each). Checked at C speed: the items' types, and the
    distinct kinds and apiVersions (a file names a dozen), not a Python step per item."""
    if set(map(type, items)) - {dict}:
        return False
    try:
        kinds = set(map(_KIND, items))
        api_versions = set(map(_API_VERSION, items))
    except (KeyError, TypeError):  # one missing, or no text (a list, a mapping): checked one by one
        return False
    return "List" not in kinds and _all_names(kinds) and _all_names(api_versions)


def _all_names(values: set[Any]) -> bool:
    """Whether each value is a non-empty ``str``."""
    return all(type(value) is str and value for value in values)


def _checked_object(item: Any, doc: str, source: str, path: str) -> dict[str, Any]:
    if type(item) is dict:
        kind, api_version = item.get("kind"), item.get("apiVersion")
        if type(kind) is str and kind and type(api_version) is str and api_version:
            return item  # the parser's own dict: nothing else holds it, no copy needed
    if not isinstance(item, Mapping):
        raise InputError(
            f"must be an object (a mapping), not {_describe(item)}",
            source=source,
            field=_field(doc, path) or None,
        )
    name = _name_of(item)
    for key in ("kind", "apiVersion"):
        value = item.get(key)
        if not isinstance(value, str) or not value:
            what = "missing" if value is None else "must be a non-empty string"
            kind = item.get("kind") if key == "apiVersion" else None
            obj = f"{kind} {name}" if isinstance(kind, str) and name else name
            raise InputError(what, source=source, obj=obj, field=_field(doc, f"{path}.{key}" if path else key))
    return dict(item)


def _name_of(item: Mapping[str, Any]) -> str | None:
    metadata = item.get("metadata")
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        return None
    namespace = metadata.get("namespace")
    return f"{namespace}/{metadata['name']}" if isinstance(namespace, str) and namespace else metadata["name"]


def _field(doc: str, path: str) -> str:
    """``document 2, items[3].kind`` in a stream of several documents, else just the path."""
    return f"{doc}, {path}" if doc and path else doc or path


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return "text" if len(value) > 30 else f"the text {value!r}"
    return type(value).__name__
