"""Campaign config: defaults, overrides, and errors that name the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursor.config import default_campaign, load_config, parse_config
from recursor.errors import ConfigError


def test_default_campaign_is_the_cfr_demo() -> None:
    config = default_campaign()
    assert config.task.kind == "cfr" and config.task.iterations == 100
    assert [p.kind for p in config.proposers] == ["mutation", "optuna"]
    assert config.sandbox.kind == "process" and config.budget.max_evals == 100
    assert config.selection.kind == "rank" and config.selection.exponent == 3.89


def test_unknown_field_is_named_with_its_path() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"budget": {"max_eval": 3}})
    assert "budget.max_eval" in str(err.value) and "unknown field" in str(err.value)


def test_bad_literal_lists_the_allowed_values() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"selection": {"kind": "best"}})
    message = str(err.value)
    assert "selection.kind" in message
    for allowed in ("greedy", "rank", "epsilon_greedy", "tournament"):
        assert allowed in message


def test_bad_discriminator_names_the_union() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"proposers": [{"kind": "gpt"}]})
    assert "proposers.0" in str(err.value)


def test_out_of_range_number() -> None:
    with pytest.raises(ConfigError, match="concurrency"):
        parse_config({"concurrency": 0})


def test_yaml_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("budget: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        load_config(path)
    with pytest.raises(ConfigError,
                       match="missing.yaml: no such file; check the campaign file.s path"):
        load_config(tmp_path / "missing.yaml")


def test_a_file_overrides_defaults(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: x\nbudget:\n  max_evals: 5\nselection:\n  kind: greedy\n")
    config = load_config(path)
    assert (config.name, config.budget.max_evals, config.selection.kind) == ("x", 5, "greedy")
    assert config.concurrency == 2


_TRAIN = [{"step": "train"}]


def test_the_schedule_executor_is_a_union_of_kinds() -> None:
    from recursor.config import DeepSpeedExecutorConfig, LocalExecutorConfig, RayExecutorConfig

    schedule = parse_config({"schedule": {"steps": _TRAIN}}).schedule
    assert schedule is not None and schedule.executor == LocalExecutorConfig()
    ray = parse_config({"schedule": {"steps": _TRAIN, "executor": {
        "kind": "ray", "address": "http://h:1", "num_cpus": 2}}}).schedule
    assert ray is not None and ray.executor == RayExecutorConfig(kind="ray", address="http://h:1",
                                                                 num_cpus=2)
    deepspeed = parse_config({"schedule": {"steps": _TRAIN, "executor": {
        "kind": "deepspeed", "zero_stage": 3, "offload": True}}}).schedule
    assert deepspeed is not None and isinstance(deepspeed.executor, DeepSpeedExecutorConfig)
    assert (deepspeed.executor.zero_stage, deepspeed.executor.offload) == (3, True)


@pytest.mark.parametrize("name", ["local", "deepspeed", "ray"])
def test_a_bare_executor_name_still_loads(name: str) -> None:
    """Campaign files (and configs stored with earlier campaigns) say `executor: local`."""
    schedule = parse_config({"schedule": {"steps": _TRAIN, "executor": name}}).schedule
    assert schedule is not None and schedule.executor.kind == name
    again = parse_config(parse_config({"schedule": {"steps": _TRAIN, "executor": name}}
                                      ).model_dump(mode="json"))
    assert again.schedule is not None and again.schedule.executor == schedule.executor


def test_executor_fields_belong_to_their_kind() -> None:
    with pytest.raises(ConfigError, match=r"schedule.executor.zero_stage: unknown field"):
        parse_config({"schedule": {"executor": {"kind": "ray", "zero_stage": 2}}})
    with pytest.raises(ConfigError, match=r"schedule.executor.kind: .*'slurm'.*'local', "
                       r"'deepspeed', 'ray', 'plugin'"):
        parse_config({"schedule": {"executor": "slurm"}})
    with pytest.raises(ConfigError, match=r"schedule.executor.zero_stage"):
        parse_config({"schedule": {"executor": {"kind": "deepspeed", "zero_stage": 4}}})


def test_a_relative_sqlite_archive_url_is_made_absolute(tmp_path: Path) -> None:
    from recursor.config import absolute_archive_url

    assert absolute_archive_url("sqlite:///runs/a.db?mode=rw", tmp_path) == \
        f"sqlite:///{tmp_path / 'runs' / 'a.db'}?mode=rw"
    assert absolute_archive_url("sqlite+pysqlite:///a.db", tmp_path) == \
        f"sqlite+pysqlite:///{tmp_path / 'a.db'}"
    for unchanged in ("sqlite:////abs/a.db", "sqlite:///:memory:", "sqlite://",
                      "postgresql+psycopg://u@h:5432/db"):
        assert absolute_archive_url(unchanged, tmp_path) == unchanged
