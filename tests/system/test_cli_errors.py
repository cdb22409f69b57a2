"""The mistakes a new user makes, each through the real command line: every one ends in one
``error:`` line that names the problem and the fix, with no traceback.

The commands run with a virtualenv reached through a symlink, from a working directory other
than the one the inputs live in (every path is given relative to the shell's directory)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from recursor.orchestrator.campaign_lock import CampaignLock

pytestmark = pytest.mark.timeout(600)

BLOCK = "# EVOLVE-BLOCK-START\nX = 1\n# EVOLVE-BLOCK-END\n"
INPUTS = {
    "typo.yaml": "name: x\ntask:\n  kind: cfr\n game: leduc\n",
    "unknown.yaml": "name: x\ntaks: {kind: cfr}\n",
    "selection.yaml": "name: x\nselection: {kind: rank, exponnent: 2}\n",
    "nokind.yaml": "name: x\nselection: {kindd: rank}\n",
    "binary.yaml": "\udcff\udcfe\x00",
    "unclosed.py": "# EVOLVE-BLOCK-START\nX = 1\n",
    "block.py": BLOCK,
    "evaluate.py": "def evaluate(path):\n    return {'score': 1.0}\n",
    "words.py": "def evaluate(path):\n    return {'score': 'high'}\n",
    "loss.py": "def evaluate(path):\n    return {'loss': 1.0}\n",
    "imports.py": "import a_module_nobody_installed\ndef evaluate(path):\n    return {}\n",
    "afile": "not a folder\n",
    "nodata.yaml": "kind: sft\nmodel: tiny-gpt2\ndata: rows.jsonl\n",
}
IN = "../inputs"
CASES: list[tuple[list[str], str]] = [
    (["run", f"{IN}/absent.yaml"], "absent.yaml: no such file; check the campaign file's path"),
    (["run", IN], "is a folder; give the campaign file inside it"),
    (["run", f"{IN}/binary.yaml"], "is not a text file (not UTF-8)"),
    (["run", f"{IN}/typo.yaml"], "typo.yaml: not valid YAML at line 4, column 2: expected "
     "<block end>, but found '<block mapping start>'; check the indentation"),
    (["run", f"{IN}/unknown.yaml"], "unknown.yaml: taks: unknown field; check its spelling"),
    (["run", f"{IN}/selection.yaml"], "selection.exponnent: unknown field"),
    (["run", f"{IN}/nokind.yaml"], "selection: needs `kind:` to say which kind it is"),
    (["run", "--max-evals", "0"], "'--max-evals': Input should be greater than or equal to 1; "
     "see `recursor run --help`"),
    (["run", "--bogus"], "No such option: --bogus; see `recursor run --help`"),
    (["run", "--dir", f"{IN}/afile", "--max-evals", "1"], "is a file, not a folder"),
    (["archive", "tree", "--dir", IN], "is not a campaign directory (no campaign.json)"),
    (["archive", "tree", "--dir", "sqlite:///x.db"], "looks like an archive URL: give a URL "
     "with --archive URL"),
    (["archive", "export", "--format", "xml", "--dir", IN], "--format must be json, csv or sft"),
    (["resume", "--dir", IN], "is not a campaign directory"),
    (["resume", "--dir", IN, "--set", "nonsense"], "write SECTION.KEY=VALUE"),
    (["replay", "--dir", IN, "tune"], "is not a campaign directory"),
    (["replay", "tune", "--dir", IN], "is not a campaign directory"),
    (["ui", "--dir", IN], "is not a campaign directory"),
    (["job", "run", f"{IN}/absent.yaml"], "'spec_file': file '../inputs/absent.yaml' does not "
     "exist; see `recursor job run --help`"),
    (["job", "run", f"{IN}/nodata.yaml"], "data: rows.jsonl is not a file"),
    (["run", "--program", f"{IN}/unclosed.py", "--evaluator", f"{IN}/evaluate.py"],
     "unclosed.py: an EVOLVE block is never closed; add a line '# EVOLVE-BLOCK-END' after "
     "its code"),
    (["run", "--program", f"{IN}/block.py", "--evaluator", f"{IN}/absent.py"],
     "absent.py does not exist"),
    (["run", "--program", f"{IN}/block.py", "--evaluator", f"{IN}/words.py", "--dir", "w"],
     "evaluate() returned metrics['score'] = 'high'; expected a number"),
    (["run", "--program", f"{IN}/block.py", "--evaluator", f"{IN}/loss.py", "--dir", "l"],
     "returned no 'score' metric (got ['loss']); the task optimizes 'score': name the metric "
     "to optimize with --metric NAME"),
    (["run", "--program", f"{IN}/block.py", "--evaluator", f"{IN}/imports.py", "--dir", "i"],
     "ModuleNotFoundError: No module named 'a_module_nobody_installed' (it runs with "
     "Recursor's Python in the sandbox: install what it imports there"),
]


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the symlinked venv's ``recursor`` script, the working directory): inputs in
    ``../inputs``."""
    root = tmp_path_factory.mktemp("cli")
    inputs = root / "inputs"
    inputs.mkdir()
    for name, text in INPUTS.items():
        (inputs / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    link = root / "venvlink"
    link.symlink_to(Path(sys.prefix).resolve())
    work = root / "work"
    work.mkdir()
    return link / "bin" / "recursor", work


def _recursor(shell: tuple[Path, Path], args: list[str],
              env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script, work = shell
    return subprocess.run([str(script), *args], cwd=work,
                          env={**env, "COLUMNS": "1000"}, capture_output=True, text=True,
                          timeout=300, check=False)


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    return lines[0]


@pytest.mark.parametrize(("args", "message"), CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_a_mistake_ends_in_one_line_naming_it_and_the_fix(
        shell: tuple[Path, Path], subprocess_env: dict[str, str], args: list[str],
        message: str) -> None:
    done = _recursor(shell, args, subprocess_env)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    assert message in _one_error_line(done.stderr)


def test_a_campaign_another_process_runs_is_refused_and_still_readable(
        shell: tuple[Path, Path], subprocess_env: dict[str, str]) -> None:
    """`resume` of a directory a campaign is writing names the holder; `archive` reads it."""
    started = _recursor(shell, ["run", "--program", "../inputs/block.py", "--evaluator",
                                "../inputs/evaluate.py", "--dir", "held", "--max-evals", "1",
                                "-q"], subprocess_env)
    assert started.returncode == 0, started.stderr
    lock = CampaignLock.acquire(shell[1] / "held")  # this process stands for the campaign
    try:
        resumed = _recursor(shell, ["resume", "--dir", "held", "-q"], subprocess_env)
        assert resumed.returncode == 2
        line = _one_error_line(resumed.stderr)
        assert f"is being run by another process (pid {os.getpid()} on " in line
        assert "`recursor resume --dir" in line
        tree = _recursor(shell, ["archive", "tree", "--dir", "held"], subprocess_env)
        assert tree.returncode == 0 and "seed" in tree.stdout, tree.stderr
    finally:
        lock.release()
    again = _recursor(shell, ["resume", "--dir", "held", "-q", "--max-evals", "2"],
                      subprocess_env)
    assert again.returncode == 0, again.stderr  # the lock died with its holder's hold


def test_an_unforeseen_failure_is_one_line_and_debug_shows_its_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib

    cli = importlib.import_module("recursor.cli.main")

    def broken(**_: object) -> None:
        raise RuntimeError("a \x1b[31mbug\x1b[0m")

    monkeypatch.setattr(cli, "app", broken)
    monkeypatch.delenv("RECURSOR_DEBUG", raising=False)
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "\x1b[31m" not in err
    assert "unexpected RuntimeError" in err and "`recursor --debug ...`" in err
    monkeypatch.setenv("RECURSOR_DEBUG", "1")
    with pytest.raises(SystemExit):
        cli.main()
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_relative_campaign_folders_and_archive_urls_mean_the_shells(
        shell: tuple[Path, Path], subprocess_env: dict[str, str]) -> None:
    """A campaign started with a relative --dir, a campaign file's relative archive URL, and
    `--archive sqlite:///relative.db` all name what they name from where they were typed."""
    script, work = shell
    inputs = work.parent / "inputs"
    (inputs / "urlcamp.yaml").write_text(
        "name: urlcamp\ntask: {kind: program, program: block.py, evaluator: evaluate.py}\n"
        "archive: {url: 'sqlite:///stores/urlcamp.db'}\nbudget: {max_evals: 1}\n")
    (inputs / "stores").mkdir()
    done = _recursor(shell, ["run", "../inputs/urlcamp.yaml", "--dir", "rel/camp", "-q"],
                     subprocess_env)
    assert done.returncode == 0, done.stderr
    assert (inputs / "stores" / "urlcamp.db").is_file()  # beside the file that named it
    assert (work / "rel" / "camp" / "campaign.json").is_file()
    above = subprocess.run([str(script), "archive", "tree", "--dir", "work/rel/camp"],
                           cwd=work.parent, env={**subprocess_env, "COLUMNS": "1000"},
                           capture_output=True, text=True, timeout=120, check=False)
    assert above.returncode == 0 and "seed" in above.stdout, above.stderr
    by_url = subprocess.run([str(script), "archive", "ls", "--archive",
                             "sqlite:///stores/urlcamp.db"], cwd=inputs,
                            env={**subprocess_env, "COLUMNS": "1000"}, capture_output=True,
                            text=True, timeout=120, check=False)
    assert by_url.returncode == 0 and "urlcamp" in by_url.stdout, by_url.stderr
    resumed = subprocess.run([str(script), "resume", "--dir", "camp", "--max-evals", "2",
                              "-q"], cwd=work / "rel", env=subprocess_env,
                             capture_output=True, text=True, timeout=300, check=False)
    assert resumed.returncode == 0, resumed.stderr  # the stored URL is absolute
