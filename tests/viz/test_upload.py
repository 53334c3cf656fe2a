"""The trace upload holds at most its limit on the server, whatever chunks a client announces."""

from __future__ import annotations

from types import SimpleNamespace

from acrobat.viz.upload import BoundedFileDropper

MB = 2**20


def _chunk(name: str, number: int, total: int, data: bytes):
    payload = {"name": name, "chunk": number, "total_chunks": total, "data": data}
    return SimpleNamespace(event_name="upload_event", data=payload | {"type": "text/plain"})


def test_a_client_announcing_a_million_chunks_is_cut_off_at_the_limit():
    dropper = BoundedFileDropper(max_bytes=4 * MB)
    block = b"x" * MB
    held = []
    for number in range(1, 21):
        dropper._process_event(_chunk("huge.jsonl", number, 10**6, block))
        held.append(dropper.held_bytes)
    assert max(held) <= 4 * MB and dropper.held_bytes == 0
    assert dropper.refused == ("huge.jsonl", 5 * MB) and dropper.value == {}


def test_uploads_under_different_names_share_the_limit():
    dropper = BoundedFileDropper(max_bytes=3 * MB)
    for name in ("a", "b", "c", "d"):
        dropper._process_event(_chunk(name, 1, 2, b"x" * MB))
    assert dropper.held_bytes <= 3 * MB and dropper.refused[0] == "d"


def test_a_file_under_the_limit_arrives_whole():
    dropper = BoundedFileDropper(max_bytes=3 * MB)
    dropper._process_event(_chunk("ok.jsonl", 1, 2, b"ab"))
    dropper._process_event(_chunk("ok.jsonl", 2, 2, b"cd"))
    assert dropper.value == {"ok.jsonl": "abcd"} and dropper.refused is None
    assert dropper.held_bytes == 0
