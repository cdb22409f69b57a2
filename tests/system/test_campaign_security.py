"""A real ``recursor run`` with hostile proposals (``tests.helpers.attackers``): a verdict forger
and a prober whose code would harm the host if any check ran it there. Evidence is taken on
the host: the canary file, the planted secret, leftover processes, the archive's promotions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from recursor.archive import Archive

pytestmark = pytest.mark.timeout(600)
SECRET_NAME = "RECURSOR_TEST_CONTROLLER_SECRET"


def _processes_with(marker: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in text:
            found.append(f"{cmdline.parent.name}: {text}")
    return found


def _files_containing(root: Path, needle: bytes) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_forger_and_prober_through_a_real_campaign(tmp_path: Path,
                                                   subprocess_env: dict[str, str]) -> None:
    directory, canary = tmp_path / "campaign", tmp_path / "canary"
    secret, marker = f"sk-{uuid.uuid4().hex}", f"stray-{uuid.uuid4().hex}"
    config = {
        "name": "attacked", "seed": 3, "concurrency": 1, "budget": {"max_evals": 2},
        "selection": {"kind": "greedy"}, "sandbox": {"kind": "process", "timeout_s": 60},
        "proposers": [{"kind": "plugin", "class_path": "tests.helpers.attackers:AttackProposer",
                       "options": {"canary": str(canary),
                                   "archive": str(directory / "archive.sqlite"),
                                   "secret_name": SECRET_NAME, "marker": marker}}],
    }
    (tmp_path / "c.yaml").write_text(json.dumps(config))
    env = {**subprocess_env, SECRET_NAME: secret}
    cli = [sys.executable, "-m", "recursor.cli"]
    run = subprocess.run([*cli, "run", str(tmp_path / "c.yaml"), "--dir", str(directory), "-q"],
                         env=env, capture_output=True, text=True, timeout=500)
    assert run.returncode == 0, run.stderr

    assert not canary.exists(), canary.read_text()
    assert not _processes_with(marker)
    assert secret not in run.stdout + run.stderr
    assert not _files_containing(directory, secret.encode())

    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        nodes = {n.rationale.split(":")[0]: n for n in archive.nodes(cid) if n.round > 0}
        assert set(nodes) == {"forger", "prober"}
        root = next(n for n in archive.nodes(cid) if n.round == 0)
        for node in nodes.values():
            assert node.status in ("done", "failed"), node
            assert node.score is None or node.score == pytest.approx(root.score, abs=1e-12)
            logs = " ".join(log.content for log in archive.logs(node.id))
            assert secret not in logs
        assert "FOUND []" in " ".join(log.content for log in archive.logs(nodes["prober"].id))
        promoted = {p.node_id for p in archive.promotions(cid)}
        assert promoted == {root.id}
    finally:
        archive.close()
    best = subprocess.run([*cli, "archive", "best", "--json", "--dir", str(directory)],
                          env=env, capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(best.stdout)["id"] == root.id
    assert os.environ.get(SECRET_NAME) is None  # the secret lived in the child's env only
