"""The run's known secret values (model.redact.KnownSecrets) in exec's writers, at the unit
level: run-dir files streamed in chunks (a value across a chunk boundary is still hidden,
every other byte kept), and the log writer (a value written in pieces). The whole run is
tests/hostile/test_secret_surfaces.py."""

from __future__ import annotations

import os

from provenance.exec import outputs
from provenance.exec.logs import RedactedLog
from provenance.model.redact import KnownSecrets, keyed_mac, secrets_of_run, store_key
from provenance.store import Store

SECRET = "k3y-for-the-run-0451"


def _known() -> KnownSecrets:
    known = secrets_of_run({"APP_PASSWORD": SECRET}, [])
    assert SECRET in known
    return known


def test_a_run_dir_file_has_known_values_hidden_across_chunk_boundaries(tmp_path):
    store = Store(tmp_path / "store")
    chunk = outputs._CHUNK
    at = [0, chunk - 5, 2 * chunk - 1, 3 * chunk - len(SECRET), 3 * chunk + 100]
    data = bytearray(os.urandom(3 * chunk + 200))
    for offset in at:
        data[offset:offset + len(SECRET)] = SECRET.encode()
    path = tmp_path / "states.bin"
    path.write_bytes(bytes(data))
    digest, size = outputs._put_hidden(path, store, _known())
    stored = store.get_bytes(digest)
    assert SECRET.encode() not in stored and size == len(stored)
    mark = f"<redacted:{keyed_mac(SECRET, store_key(store.root))}>".encode()
    assert stored.count(mark) == len(at)
    assert stored.replace(mark, SECRET.encode()) == bytes(data)  # nothing else changed


def test_a_run_dir_file_without_known_values_is_stored_byte_for_byte(tmp_path):
    store = Store(tmp_path / "store")
    path = tmp_path / "plain.bin"
    path.write_bytes(os.urandom(outputs._CHUNK + 17))
    digest, size = outputs._put_hidden(path, store, _known())
    assert store.get_bytes(digest) == path.read_bytes() and size == path.stat().st_size


class _Sink:
    def __init__(self) -> None:
        self.data, self.size = b"", 0

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> str:
        return "closed"


def test_the_log_hides_a_known_value_written_in_pieces_and_in_lines_without_letters():
    known = KnownSecrets()
    known.add("1234567890123")  # digits only: no structural rule would see it
    known.add(SECRET)
    log = RedactedLog(_Sink(), None, known)
    log.write(b"env says " + SECRET[:7].encode())
    log.write(SECRET[7:].encode() + b"\n1234567890123\n")
    log.close()
    assert log.writer.data == b"env says <redacted>\n<redacted>\n"


def test_the_store_hides_a_runs_known_values_only_in_that_runs_records(tmp_path):
    from provenance.store.records import new_run_id, now_iso
    from provenance.store.run_record import RunRecord

    store = Store(tmp_path / "store")
    known = _known()
    mine, other = new_run_id(), new_run_id()
    def record(run_id: str) -> RunRecord:
        return RunRecord(run_id=run_id, state="started", command=("true",), started_at=now_iso(),
                         manifest="sha256:" + "0" * 64, manifest_digest="sha256:" + "0" * 64,
                         cwd=f"/w/{SECRET}")

    with store.hiding(mine, known):
        a = store.create_run(record(mine))
        b = store.create_run(record(other))
    assert SECRET not in store.get_bytes(a).decode() and SECRET in store.get_bytes(b).decode()
    assert mine not in store._known  # forgotten when the run's supervision ends
