"""The file store's listing index as it lies on disk: used in place, never loaded whole.

A snapshot (``<dir>/.index/tasks``) holds every task's listing entry
(status timestamp and id, context, state, owner, the stamp of the file version
indexed) as records already in listing order, with arrays of their offsets, of
their positions by id and of their positions by context, and the counts per owner
and state in its header. :class:`MappedSnapshot` maps it (``mmap``): a page is a
bisect and a walk of about one page of records, ``totalSize`` a lookup, whatever the
number of tasks, and nothing is read or built for the tasks a page does not reach.

It is checked as it is read, not up front: the header carries its own CRC-32 and
the CRC-32 of every 4 KiB block of the rest; a block is checked the first time a
record in it is read, and the records a walk reads must be in order. A failed check
raises :class:`SnapshotDamaged` (the caller rebuilds the index from the task files).
A file that is not of this format (:data:`MAGIC`) does not check out either: it is
rebuilt the same way. :class:`stores.file.mapped.MappedIndex` pages through one, with
the changes made since; :func:`load` and :func:`store` read and write one whole.
"""

from __future__ import annotations

import bisect
import logging
import mmap
import os
import struct
import sys
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from stores.file import fsio

logger = logging.getLogger(__name__)

MAGIC = b"a2a-task-index 2\n"
BLOCK = 4096
#: A record: stamp, state code, owner code, key length, context length; then the key
#: (``updated NUL id``, UTF-8) and the context (UTF-8). Codes index the header's values.
_RECORD = struct.Struct("<QIIII")

#: (key, context, state, owner, stamp): one task, as the writer takes it.
Row = tuple[bytes, bytes, str, str, int]


class SnapshotDamaged(ValueError):
    """The snapshot does not check out (torn, damaged, not an index)."""


def utf8(text: str) -> bytes:
    """UTF-8 (lone surrogates too): bytes that sort as the strings do."""
    return text.encode("utf-8", "surrogatepass")


def text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _align(n: int) -> int:
    return (n + 7) & ~7


def write_snapshot(rows: Iterable[Row], meta: dict[str, Any]) -> list[bytes]:
    """The chunks of a snapshot of ``rows`` (in listing order, keys ascending, each id
    once), ``meta`` added to its header (journal position, directory, ...)."""
    values: dict[str, int] = {}
    records = bytearray()
    offsets = array("Q")
    ids: list[bytes] = []
    contexts: list[bytes] = []
    counts: Counter[tuple[int, int]] = Counter()
    pack = _RECORD.pack
    previous = b""
    for key, context, state, owner, stamp in rows:
        if key <= previous:
            raise ValueError("rows not in listing order")
        previous = key
        state_code = values.setdefault(state, len(values))
        owner_code = values.setdefault(owner, len(values))
        offsets.append(len(records))
        records += pack(stamp, state_code, owner_code, len(key), len(context))
        records += key
        records += context
        ids.append(key[key.index(0) + 1 :])
        contexts.append(context)
        counts[(owner_code, state_code)] += 1
    offsets.append(len(records))
    n = len(ids)
    by_id = array("I", sorted(range(n), key=ids.__getitem__))
    by_context = array("I", sorted(range(n), key=contexts.__getitem__))  # stable: listing order within
    sections: dict[str, list[int]] = {}
    data = bytearray()
    for name, part in (("records", records), ("offsets", offsets), ("by_id", by_id), ("by_context", by_context)):
        data += b"\0" * (_align(len(data)) - len(data))
        raw = part if isinstance(part, bytearray) else part.tobytes()
        sections[name] = [len(data), len(raw)]
        data += raw
    crcs = array("I", (zlib.crc32(data[i : i + BLOCK]) for i in range(0, len(data), BLOCK)))
    header = orjson.dumps(
        {
            **meta,
            "tasks": n,
            "byteorder": sys.byteorder,
            "values": list(values),
            "counts": [[o, s, k] for (o, s), k in counts.items()],
            "sections": sections,
            "size": len(data),
            "crcs_crc32": zlib.crc32(crcs),
        }
    )
    head = MAGIC + b"%08x " % zlib.crc32(header) + header + b"\n" + crcs.tobytes()
    return [head, b"\0" * (_align(len(head)) - len(head)), bytes(data)]


class Column:
    """A sequence view for ``bisect``: item ``i`` is ``get(i)``."""

    def __init__(self, n: int, get: Callable[[int], Any]) -> None:
        self.n, self.get = n, get

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        return self.get(i)


def _counts(values: list[str], coded: Any, n: int) -> Counter[tuple[str | None, str | None]]:
    """How many records match each (owner, state), either possibly None (any), from the
    header's ``[owner code, state code, count]`` triples."""
    counts: Counter[tuple[str | None, str | None]] = Counter()
    for owner_code, state_code, k in coded:
        owner, state = values[owner_code], values[state_code]
        for key in ((owner, state), (owner, None), (None, state), (None, None)):
            counts[key] += k
    if counts[(None, None)] != n:
        raise SnapshotDamaged("counts do not add up")
    return counts


class MappedSnapshot:
    """A snapshot, mapped. See the module doc."""

    def __init__(self, path: os.PathLike[str] | str) -> None:
        """Map ``path`` and check its header (FileNotFoundError when there is none,
        :class:`SnapshotDamaged` when it does not check out)."""
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < len(MAGIC):
                raise SnapshotDamaged("truncated")
            self._mm = mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            if mm[: len(MAGIC)] != MAGIC:
                raise SnapshotDamaged("not a snapshot of this format")
            end = mm.find(b"\n", len(MAGIC))
            line = mm[len(MAGIC) : end] if end > 0 else b""
            crc, _, raw = line.partition(b" ")
            if len(crc) != 8 or int(crc, 16) != zlib.crc32(raw):
                raise SnapshotDamaged("header torn or damaged (CRC-32)")
            header = self.header = orjson.loads(raw)
            if header["byteorder"] != sys.byteorder:
                raise SnapshotDamaged("written on a machine of another byte order")
            n = self.n = header["tasks"]
            blocks = -(-header["size"] // BLOCK)
            crcs_at = end + 1
            self._start = _align(crcs_at + 4 * blocks)
            if self._start + header["size"] != size:
                raise SnapshotDamaged("torn (length)")
            crcs = mm[crcs_at : crcs_at + 4 * blocks]
            if zlib.crc32(crcs) != header["crcs_crc32"]:
                raise SnapshotDamaged("block checksums damaged (CRC-32)")
            self._crcs = array("I", crcs)
            self._checked = bytearray(blocks)
            view = memoryview(mm)[self._start :]
            sections = header["sections"]

            def section(name: str, fmt: str, count: int) -> memoryview:
                at, length = sections[name]
                if length != count * array(fmt).itemsize or at < 0 or at + length > header["size"] or at % 8:
                    raise SnapshotDamaged(f"section {name} out of bounds")
                return view[at : at + length].cast(fmt)  # type: ignore[call-overload]

            self._records_at, self._records_size = sections["records"]
            self._offsets_at = sections["offsets"][0]
            self._by_id_at = sections["by_id"][0]
            self._by_context_at = sections["by_context"][0]
            self._offsets = section("offsets", "Q", n + 1)
            self._by_id = section("by_id", "I", n)
            self._by_context = section("by_context", "I", n)
            self.values: list[str] = header["values"]
            if not all(isinstance(v, str) for v in self.values):
                raise SnapshotDamaged("values not strings")
            self._codes = {value: i for i, value in enumerate(self.values)}
            self.counts = _counts(self.values, header["counts"], n)
        except SnapshotDamaged:
            raise
        except (ValueError, TypeError, KeyError, IndexError, orjson.JSONDecodeError) as exc:
            raise SnapshotDamaged(f"header does not check out ({exc})") from None

    def _check(self, start: int, end: int) -> None:
        """Check the blocks holding bytes ``[start, end)`` of the data (once each)."""
        checked = self._checked
        first, last = start // BLOCK, (end - 1) // BLOCK
        if checked[first] and checked[last]:
            return
        for block in range(first, last + 1):
            if not checked[block]:
                at = self._start + block * BLOCK
                if zlib.crc32(self._mm[at : at + BLOCK]) != self._crcs[block]:
                    raise SnapshotDamaged(f"block {block} damaged (CRC-32)")
                checked[block] = 1

    def code(self, value: str | None) -> int | None:
        """The code of ``value`` (-1 when no record holds it); None for None."""
        return None if value is None else self._codes.get(value, -1)

    def row(self, i: int) -> tuple[bytes, int, int, int, bytes]:
        """Record ``i`` in listing order: (key, stamp, state code, owner code, context)."""
        checked = self._checked
        at = self._offsets_at + 8 * i
        if not (checked[at // BLOCK] and checked[(at + 15) // BLOCK]):  # the usual case inline: checked
            self._check(at, at + 16)
        start, end = self._offsets[i], self._offsets[i + 1]
        if not 0 <= start < end <= self._records_size:
            raise SnapshotDamaged(f"record {i} out of bounds")
        first, last = self._records_at + start, self._records_at + end
        if not (checked[first // BLOCK] and checked[(last - 1) // BLOCK]):
            self._check(first, last)
        at = self._start + first
        stamp, state, owner, key_size, context_size = _RECORD.unpack_from(self._mm, at)
        at += _RECORD.size
        if _RECORD.size + key_size + context_size != end - start or max(state, owner) >= len(self.values):
            raise SnapshotDamaged(f"record {i} does not check out")
        key = self._mm[at : at + key_size]
        if 0 not in key:
            raise SnapshotDamaged(f"record {i} has no id")
        return key, stamp, state, owner, self._mm[at + key_size : at + key_size + context_size]

    def rows_before(self, stop: int, count: int) -> list[tuple[bytes, int, int, int, bytes]]:
        """Records ``[stop - count, stop)``, last first: what :meth:`row` gives, read as
        one run (records in listing order are contiguous: one check for them all)."""
        start = max(0, stop - count)
        if start >= stop:
            return []
        at = self._offsets_at + 8 * start
        self._check(at, at + 8 * (stop - start + 1))
        offsets = self._offsets[start : stop + 1].tolist()
        first, last = offsets[0], offsets[-1]
        if not (first >= 0 and all(map(int.__lt__, offsets, offsets[1:])) and last <= self._records_size):
            raise SnapshotDamaged(f"records {start}-{stop} out of bounds")
        self._check(self._records_at + first, self._records_at + last)
        mm, base, unpack, head, n_values = (
            self._mm,
            self._start + self._records_at,
            _RECORD.unpack_from,
            _RECORD.size,
            len(self.values),
        )
        rows = []
        for k in range(stop - start - 1, -1, -1):
            at, end = base + offsets[k], base + offsets[k + 1]
            stamp, state, owner, key_size, context_size = unpack(mm, at)
            at += head
            if head + key_size + context_size != end - at + head or max(state, owner) >= n_values:
                raise SnapshotDamaged(f"record {start + k} does not check out")
            key = mm[at : at + key_size]
            if 0 not in key:
                raise SnapshotDamaged(f"record {start + k} has no id")
            rows.append((key, stamp, state, owner, mm[at + key_size : end]))
        return rows

    def key(self, i: int) -> bytes:
        return self.row(i)[0]

    def _position(self, array_at: int, column: memoryview, k: int) -> int:
        self._check(array_at + 4 * k, array_at + 4 * k + 4)
        i: int = column[k]
        if i >= self.n:
            raise SnapshotDamaged("a position out of bounds")
        return i

    def id_at(self, k: int) -> bytes:
        """The id of the ``k``-th record in id order."""
        return self.key(self._position(self._by_id_at, self._by_id, k)).partition(b"\0")[2]

    def context_position(self, k: int) -> int:
        """The listing position of the ``k``-th record in context order."""
        return self._position(self._by_context_at, self._by_context, k)

    def find(self, task_id: bytes) -> int | None:
        """The listing position of ``task_id``'s record, or None."""
        ids = Column(self.n, self.id_at)
        k = bisect.bisect_left(ids, task_id)
        if k == self.n or ids[k] != task_id:
            return None
        if (k and ids[k - 1] >= task_id) or (k + 1 < self.n and ids[k + 1] <= task_id):
            raise SnapshotDamaged("ids out of order, or an id twice")
        return self._position(self._by_id_at, self._by_id, k)

    def bisect(self, key: bytes) -> int:
        """How many records sort before ``key``."""
        return bisect.bisect_left(Column(self.n, self.key), key)

    def context_range(self, context: bytes) -> tuple[int, int]:
        """The context order's range ``[lo, hi)`` of ``context``'s records."""
        contexts = Column(self.n, lambda k: self.row(self.context_position(k))[4])
        return bisect.bisect_left(contexts, context), bisect.bisect_right(contexts, context)

    def rows(self) -> Iterator[tuple[bytes, int, int, int, bytes]]:
        """Every record, in listing order."""
        for i in range(self.n):
            yield self.row(i)


class StoredSnapshot(NamedTuple):
    """A snapshot as :func:`load` finds it: the records and what its header says."""

    #: The records, mapped.
    base: MappedSnapshot
    #: File name -> task id, where they differ.
    odd: dict[str, str]
    #: The journal position the records reflect (:meth:`stores.file.journal.Journal.position`).
    journal: Any
    #: [directory version, when read (ns)]: the directory agreed with the records then.
    directory: Any
    #: The id of the boot it was written in (None: unknown).
    boot: str | None


def load(path: Path) -> StoredSnapshot | None:
    """The snapshot in ``path``; None when there is none, or when it is unreadable, not
    of this format or its header does not check out (logged: the caller rebuilds it
    from the task files)."""
    try:
        base = MappedSnapshot(path)
        header = base.header
        odd = header["odd"]
        if not isinstance(odd, dict):
            raise SnapshotDamaged("odd names not a mapping")
        return StoredSnapshot(base, odd, header["journal"], header.get("directory"), header.get("boot"))
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.warning("task index snapshot %s unreadable (%s): rebuilding it", path, exc)
    except (ValueError, TypeError, KeyError, IndexError, orjson.JSONDecodeError) as exc:
        logger.warning("task index snapshot %s does not check out (%s): rebuilding it", path, exc)
    return None


def store(path: Path, rows: Iterable[Row], meta: dict[str, Any], *, fsync: bool) -> MappedSnapshot:
    """Write a snapshot of ``rows`` to ``path`` whole or not at all (see
    :func:`stores.file.fsio.atomic_write_chunks`), and return it mapped: the file written,
    whoever renames over it next. Raises ValueError (and :class:`SnapshotDamaged`)
    as :func:`write_snapshot` does, TypeError or ``orjson.JSONEncodeError`` for meta
    that no JSON can hold."""
    chunks = write_snapshot(rows, meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    mapped: list[MappedSnapshot] = []
    fsio.atomic_write_chunks(path, chunks, fsync=fsync, written=lambda tmp: mapped.append(MappedSnapshot(tmp)))
    return mapped[0]


def boot_id() -> str | None:
    """This boot's id (Linux); None where there is none to read."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None
