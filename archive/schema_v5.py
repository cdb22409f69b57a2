"""The archive's schema at version 5, frozen: the baseline every later migration builds on.

Never edit this file. It is the schema the release before explicit migrations wrote (the one
``tests/fixtures/archive_v5`` holds), spelled out table by table instead of taken from the
ORM models, so that a change to a model cannot silently change what a new archive starts
from: a new archive is this schema plus every migration after 5, exactly what an archive made
at version 5 becomes on upgrade (``tests/unit/test_archive_migrations`` compares the two with
the models).
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

VERSION = 5
metadata = MetaData()


def _stamp(name: str) -> Column[object]:
    return Column(name, DateTime(timezone=True), nullable=False)


schema_version = Table(
    "schema_version", metadata,
    Column("version", Integer, primary_key=True),  # SERIAL on PostgreSQL, as it was
    _stamp("applied_at"))

campaigns = Table(
    "campaigns", metadata,
    Column("id", String(64), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("task", String(200), nullable=False),
    Column("config", JSON, nullable=False),
    Column("status", String(20), nullable=False),
    Column("repo_path", Text, nullable=False),
    Column("root_node_id", String(64)),
    _stamp("created_at"), _stamp("updated_at"))

nodes = Table(
    "nodes", metadata,
    Column("id", String(64), primary_key=True),
    Column("campaign_id", String(64), ForeignKey("campaigns.id"), nullable=False, index=True),
    Column("parent_id", String(64), index=True),
    Column("round", Integer, nullable=False),
    Column("slot", Integer, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("proposer", String(200), nullable=False),
    Column("proposer_reason", Text, nullable=False),
    Column("rationale", Text, nullable=False),
    Column("proposal", JSON),
    Column("patch", Text, nullable=False),
    Column("commit", String(64)),
    Column("fingerprint", String(80)),
    Column("status", String(16), nullable=False),
    Column("run_status", String(16)),
    Column("score", Float),
    Column("heldout_score", Float),
    Column("error", Text),
    Column("wall_s", Float, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("cost", Float, nullable=False),
    _stamp("created_at"), _stamp("updated_at"),
    UniqueConstraint("campaign_id", "round", "slot", name="uq_node_slot"),
    Index("ix_nodes_campaign_status_score", "campaign_id", "status", "score"),
    Index("ix_nodes_campaign_fingerprint", "campaign_id", "fingerprint"))

evaluations = Table(
    "evaluations", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("node_id", String(64), ForeignKey("nodes.id"), nullable=False, index=True),
    Column("split", String(16), nullable=False),
    Column("seed", Integer, nullable=False),
    Column("run_status", String(16), nullable=False),
    Column("metrics", JSON, nullable=False),
    Column("instances", JSON, nullable=False),
    Column("wall_s", Float, nullable=False),
    _stamp("created_at"),
    UniqueConstraint("node_id", "split", "seed", name="uq_eval"))

jobs = Table(
    "jobs", metadata,
    Column("id", String(64), primary_key=True),
    Column("node_id", String(64), index=True),
    Column("kind", String(16), nullable=False),
    Column("executor", String(32), nullable=False),
    Column("status", String(16), nullable=False),
    Column("spec", JSON, nullable=False),
    Column("metrics", JSON, nullable=False),
    Column("artifacts", JSON, nullable=False),
    Column("costs", JSON, nullable=False),
    Column("provenance", JSON, nullable=False),
    Column("error", Text),
    _stamp("created_at"), _stamp("updated_at"))

logs = Table(
    "logs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("node_id", String(64), ForeignKey("nodes.id"), nullable=False, index=True),
    Column("stream", String(32), nullable=False),
    Column("content", Text, nullable=False),
    _stamp("created_at"))

promotions = Table(
    "promotions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("campaign_id", String(64), ForeignKey("campaigns.id"), nullable=False, index=True),
    Column("component", String(64), nullable=False),
    Column("node_id", String(64), ForeignKey("nodes.id"), nullable=False, index=True),
    Column("previous_node_id", String(64)),
    Column("evidence", JSON, nullable=False),
    _stamp("created_at"),
    UniqueConstraint("node_id", "component", name="uq_promotion"))
