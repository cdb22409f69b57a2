"""Covering hidden module folders when the project or its virtualenv lies under /tmp (a clone
there, as CI makes): the source is bound at KEEP/<n> and carried back over the scratch space,
so the cover must be made there, or the candidate imports the task's trusted modules."""

from __future__ import annotations

from pathlib import Path

from recursor.sandbox._binds import KEEP, hide_args, under_scratch


def test_a_hidden_folder_in_a_source_under_tmp_is_covered_where_that_source_is_staged(
        tmp_path: Path) -> None:
    source = tmp_path / "clone"
    hidden = source / "tasks" / "psro"
    hidden.mkdir(parents=True)
    (source / "secret.py").write_text("")
    assert under_scratch(source)
    elsewhere = Path("/usr")
    args = hide_args([hidden, source / "secret.py", Path("/nowhere")], [elsewhere, source])
    staged = f"{KEEP}/1/tasks/psro"
    assert args == ["--size", str(1 << 16), "--tmpfs", staged, "--remount-ro", staged,
                    "--ro-bind", "/dev/null", f"{KEEP}/1/secret.py"]


def test_a_hidden_folder_in_a_source_elsewhere_is_covered_in_place() -> None:
    hidden = Path("/usr/lib")
    assert hide_args([hidden], [Path("/usr")])[2:4] == ["--tmpfs", "/usr/lib"]
