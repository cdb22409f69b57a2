"""What a Ray node sends back is judged on the controller (``recursor.sandbox._ray_wire``): the
same ``judge`` as a local run, a status never upgraded, a malformed reply refused, and shipped
archives that cannot write outside their destination."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from recursor.config import parse_config
from recursor.errors import ConfigError
from recursor.sandbox import SandboxLimits, SandboxResult
from recursor.sandbox._ray_wire import (
    decode_reply,
    digest,
    encode_reply,
    judge_reply,
    pack,
    unpack,
)
from recursor.types import RunStatus

LIMITS = SandboxLimits(wall_time_s=10.0)
VERDICT = json.dumps({"metrics": {"score": 1.5}})


def _reply(**changes: Any) -> dict[str, Any]:
    result = SandboxResult(RunStatus.OK, 0, "out", "err", 1.0, json.loads(VERDICT),
                           verdict_text=VERDICT)
    data = json.loads(encode_reply(result, {"ray_node_id": "n1"}))
    data.update(changes)
    return decode_reply(json.dumps(data).encode())


def test_an_honest_reply_is_judged_ok_with_its_placement() -> None:
    result = judge_reply(_reply(), LIMITS)
    assert result.status is RunStatus.OK and result.result == {"metrics": {"score": 1.5}}
    assert result.placement == {"ray_node_id": "n1"}


def test_a_verdict_from_a_failed_exit_never_counts() -> None:
    # a candidate that printed/wrote a perfect verdict and then killed its evaluator
    result = judge_reply(_reply(exit_code=137), LIMITS)
    assert result.status is RunStatus.CRASHED and "SIGKILL" in (result.error or "")


def test_a_failure_seen_on_the_node_is_never_upgraded() -> None:
    result = judge_reply(_reply(status="crashed", error="lost the sandbox agent"), LIMITS)
    assert result.status is RunStatus.CRASHED and result.error == "lost the sandbox agent"
    timed_out = judge_reply(_reply(timed_out=True, status="timeout", exit_code=None), LIMITS)
    assert timed_out.status is RunStatus.TIMEOUT


def test_oom_only_on_the_nodes_host_side_evidence() -> None:
    assert judge_reply(_reply(exit_code=1), LIMITS).status is RunStatus.CRASHED
    oom = _reply(exit_code=137, oom_killed=True, status="oom")
    assert judge_reply(oom, LIMITS).status is RunStatus.OOM


def test_the_verdict_text_is_parsed_here() -> None:
    result = judge_reply(_reply(verdict="[1, 2]"), LIMITS)
    assert result.status is RunStatus.INVALID and "not an object" in (result.error or "")


@pytest.mark.parametrize("change", [{"exit_code": "0"}, {"timed_out": 1}, {"status": "great"},
                                    {"placement": {"a": 1}}, {"stdout": None}])
def test_a_malformed_reply_is_refused(change: dict[str, Any]) -> None:
    data = json.loads(encode_reply(SandboxResult(RunStatus.OK, 0, "", "", 0.1), {}))
    data.update(change)
    with pytest.raises(ValueError):
        decode_reply(json.dumps(data).encode())


def test_pack_and_unpack_keep_files_and_modes(tmp_path: Path) -> None:
    source = tmp_path / "tree"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "a.npz").write_bytes(b"\x00" * 100)
    (source / "sub" / "a.npz").chmod(0o644)
    root = unpack(pack(source), tmp_path / "out")
    assert (root / "sub" / "a.npz").read_bytes() == b"\x00" * 100
    assert (root / "sub" / "a.npz").stat().st_mode & 0o444 == 0o444
    single = tmp_path / "one.npz"
    single.write_bytes(b"x")
    assert unpack(pack(single), tmp_path / "out2").read_bytes() == b"x"


def test_the_same_content_packs_to_the_same_digest(tmp_path: Path) -> None:
    first, second = tmp_path / "a.npz", tmp_path / "b" / "a.npz"
    second.parent.mkdir()
    for path, when in ((first, 1_000_000), (second, 2_000_000)):
        path.write_bytes(b"tree")
        os.utime(path, (when, when))
    assert digest(pack(first)) == digest(pack(second))
    second.write_bytes(b"other")
    assert digest(pack(first)) != digest(pack(second))


def test_an_archive_that_escapes_its_destination_is_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("data/../../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(tarfile.TarError):
        unpack(buffer.getvalue(), tmp_path / "out")
    assert not (tmp_path / "escaped").exists()


def test_the_ray_section_is_config() -> None:
    config = parse_config({"name": "r", "sandbox": {
        "kind": "docker", "ray": {"address": "127.0.0.1:6379", "resources": {"evaluator": 1}}}})
    assert config.sandbox.ray is not None and config.sandbox.ray.max_retries == 2
    with pytest.raises(ConfigError, match="adress: unknown field"):
        parse_config({"name": "r", "sandbox": {"kind": "process", "ray": {"adress": "x"}}})
