"""A job's id is its content: the same data in another place is the same job."""

from __future__ import annotations

from pathlib import Path

from recursor.executors.spec import JobSpec


def _sft(data: Path) -> JobSpec:
    return JobSpec(kind="sft", model="tiny-gpt2", data=str(data), seed=1, name=str(data))


def test_a_job_id_depends_on_the_data_content_not_its_path(tmp_path: Path) -> None:
    here, there = tmp_path / "a" / "corpus.jsonl", tmp_path / "b" / "corpus.jsonl"
    for path in (here, there):
        path.parent.mkdir()
        path.write_text('{"text": "x"}\n')
    assert _sft(here).job_id == _sft(there).job_id
    there.write_text('{"text": "y"}\n')
    assert _sft(here).job_id != _sft(there).job_id
