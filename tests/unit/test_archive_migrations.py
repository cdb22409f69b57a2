"""Explicit, versioned migrations: a previous release's archive upgrades with nothing lost.

The fixture (``tests/fixtures/archive_v5``) is a real campaign recorded by the release before
explicit migrations (``scripts/make_archive_fixture.py``), dumped from SQLite and PostgreSQL;
each test restores it into a fresh database of its kind.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, inspect, text
from typer.testing import CliRunner

from recursor.archive import (
    SCHEMA_VERSION,
    Archive,
    ArchiveReader,
    Evaluation,
    Node,
    upgrade_archive,
)
from recursor.archive.models import Base
from recursor.archive.records import (
    Campaign,
    Job,
    LogEntry,
    Promotion,
    SearchPolicy,
    field_names,
)
from recursor.cli import app
from recursor.errors import ArchiveError
from recursor.types import ChangeKind, RunStatus, Split
from tests.helpers.old_archives import restore_fixture

TABLES = ("campaigns", "nodes", "evaluations", "logs", "jobs", "promotions")


@pytest.fixture(params=["sqlite", "postgres"])
def new_url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """Makes URLs of fresh, empty databases of one kind."""
    if request.param == "sqlite":
        made = iter(range(100))
        return lambda: f"sqlite:///{tmp_path / f'db{next(made)}' / 'archive.sqlite'}"
    make: Callable[[], str] = request.getfixturevalue("postgres_databases")
    return make


def _sqlite_parent(url: str) -> None:
    if url.startswith("sqlite"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)


def _fresh(make: Callable[[], str]) -> str:
    url = make()
    _sqlite_parent(url)
    return url


def _schema(url: str) -> dict[str, Any]:
    """Every archive table's columns (type, nullability), primary key, unique constraints,
    indexes and foreign keys, as the database reports them."""
    engine = create_engine(url)
    try:
        found = inspect(engine)
        return {table: {
            "columns": {c["name"]: (str(c["type"]), c["nullable"])
                        for c in found.get_columns(table)},
            "pk": found.get_pk_constraint(table)["constrained_columns"],
            "unique": sorted((u["name"], tuple(u["column_names"]))
                             for u in found.get_unique_constraints(table)),
            "indexes": sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]))
                              for i in found.get_indexes(table)),
            "foreign": sorted((tuple(f["constrained_columns"]), f["referred_table"])
                              for f in found.get_foreign_keys(table))}
            for table in (*TABLES, "search_policies", "schema_version")}
    finally:
        engine.dispose()


def test_a_new_archive_has_exactly_the_schema_the_models_describe(
        new_url: Callable[[], str]) -> None:
    migrated, modelled = _fresh(new_url), _fresh(new_url)
    Archive(migrated).close()
    engine = create_engine(modelled)
    Base.metadata.create_all(engine)
    engine.dispose()
    assert _schema(migrated) == _schema(modelled)


def test_records_have_their_tables_columns() -> None:
    for record, table in ((Campaign, "campaigns"), (Node, "nodes"), (Evaluation, "evaluations"),
                          (LogEntry, "logs"), (Job, "jobs"), (Promotion, "promotions"),
                          (SearchPolicy, "search_policies")):
        assert set(field_names(record)) == set(Base.metadata.tables[table].columns.keys())


def _rows(url: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of every archive table, ordered by primary key, JSON columns parsed."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {table: [{key: _plain(value) for key, value in row._mapping.items()}
                            for row in conn.execute(text(f"SELECT * FROM {table} ORDER BY id"))]
                    for table in TABLES}
    finally:
        engine.dispose()


def _plain(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def test_a_previous_release_archive_upgrades_with_nothing_lost(
        new_url: Callable[[], str]) -> None:
    url = _fresh(new_url)
    restore_fixture("archive_v5", url)
    before = _rows(url)
    with pytest.raises(ArchiveError, match="older than this Recursor.*recursor archive upgrade"):
        ArchiveReader.open(url)  # a reader never writes, so it never upgrades
    with pytest.raises(ArchiveError, match="recursor archive upgrade"):
        Archive(url)  # neither does a writer unless asked
    assert _rows(url) == before

    prepared = upgrade_archive(url)
    assert (prepared.before, prepared.after, prepared.upgraded) == (5, SCHEMA_VERSION, True)
    if url.startswith("sqlite"):
        assert prepared.backup is not None and prepared.backup.is_file()
        assert _rows(f"sqlite:///{prepared.backup}") == before  # the copy is the old archive
    after = _rows(url)
    assert {t: len(r) for t, r in after.items()} == {t: len(r) for t, r in before.items()}
    flagged = 0
    for old, new in zip(before["nodes"], after["nodes"], strict=True):
        proposal = dict(old["proposal"] or {})
        duplicate_of = proposal.pop("duplicate_of", None)
        flagged += duplicate_of is not None
        assert new.pop("duplicate_of") == duplicate_of
        assert new.pop("policy_id") is None  # v7: the version that chose it; none recorded
        assert new.pop("proposal") == (proposal if old["proposal"] is not None else None)
        assert new == {k: v for k, v in old.items() if k != "proposal"}
    assert flagged >= 1  # the fixture holds a duplicate: the flag moved to its column
    for table in ("campaigns", "evaluations", "logs", "jobs", "promotions"):
        assert after[table] == before[table]

    reader = ArchiveReader.open(url)
    try:
        campaign = reader.only_campaign()
        nodes = reader.nodes(campaign.id)
        duplicates = [n for n in nodes if n.duplicate_of is not None]
        assert len(duplicates) == flagged
        assert all(not n.spends_budget for n in duplicates)
        counts = reader.counts(campaign.id)
        assert counts.attempted == sum(n.spends_budget for n in nodes if n.round > 0)
        assert reader.jobs()[0].metrics == {"loss": 1.5}
        assert reader.incumbent(campaign.id) in {n.id for n in nodes}
    finally:
        reader.close()
    again = upgrade_archive(url)  # a second upgrade has nothing to do
    assert (again.upgraded, again.backup) == (False, None)


def test_the_cli_names_the_upgrade_and_performs_it(new_url: Callable[[], str]) -> None:
    url = _fresh(new_url)
    restore_fixture("archive_v5", url)
    runner = CliRunner()
    refused = runner.invoke(app, ["archive", "tree", "--archive", url])
    assert refused.exit_code != 0
    assert "recursor archive upgrade" in str(refused.exception or "") + refused.output
    done = runner.invoke(app, ["archive", "upgrade", "--archive", url])
    assert done.exit_code == 0, done.output
    assert f"from schema version 5 to {SCHEMA_VERSION}" in done.output
    shown = runner.invoke(app, ["archive", "tree", "--archive", url, "--json"])
    assert shown.exit_code == 0, shown.output
    assert "fixture" in runner.invoke(app, ["archive", "ls", "--archive", url]).output


def test_upgrading_nothing_creates_nothing(new_url: Callable[[], str]) -> None:
    url = _fresh(new_url)
    if url.startswith("sqlite"):
        with pytest.raises(ArchiveError, match="no archive database"):
            upgrade_archive(url)
        assert not Path(url.removeprefix("sqlite:///")).exists()
        return
    with pytest.raises(ArchiveError, match="the database is empty"):
        upgrade_archive(url)


def test_candidate_text_with_nul_characters_is_stored(new_url: Callable[[], str]) -> None:
    """PostgreSQL's text refuses NUL; a candidate's output may hold any byte, and a failed
    store would crash the campaign."""
    archive = Archive(_fresh(new_url))
    try:
        archive.create_campaign("c", "c", "cfr", {}, "/nowhere")
        node = archive.add_node(Node(id="c-001-0", campaign_id="c", round=1, slot=0,
                                     kind=ChangeKind.ALGORITHM, proposer="p",
                                     rationale="a\x00b"))
        archive.mark_materialized(node.id, "abc", "diff\x00")
        archive.add_evaluation(Evaluation(node_id=node.id, split=Split.DEV,
                                          run_status=RunStatus.CRASHED,
                                          metrics={"note": "x\x00y"}),
                               [("dev.stdout", "out\x00put")])
        archive.mark_failed(node.id, RunStatus.CRASHED, "died \x00 here")
        stored = archive.node(node.id)
        assert (stored.rationale, stored.patch, stored.error) == (
            "a\ufffdb", "diff\ufffd", "died \ufffd here")
        assert archive.logs(node.id)[0].content == "out\ufffdput"
        assert archive.evaluation(node.id, Split.DEV).metrics == {  # type: ignore[union-attr]
            "note": "x\x00y"}  # JSON escapes it: kept exactly
    finally:
        archive.close()
