"""Archive tables (SQLAlchemy 2 ORM), private to the archive: readers get frozen records
(:mod:`recursor.archive.records`). Portable SQL only: SQLite and PostgreSQL both work. The
schema a database gets is the migrations' (:mod:`recursor.archive.migrations`); these models
must describe the same one (``tests/unit/test_archive_migrations`` compares them)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Dialect,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from recursor.types import (
    CampaignStatus,
    ChangeKind,
    NodeStatus,
    PolicySource,
    RunStatus,
    Split,
)


def utcnow() -> datetime:
    return datetime.now(UTC)


def enum_column(kind: type[StrEnum], length: int) -> Enum:
    """A column of ``kind`` stored as its string value in a plain VARCHAR (no native enum, no
    CHECK constraint), so the schema stays as it was and reads give the enum back."""
    return Enum(kind, native_enum=False, create_constraint=False, length=length,
                values_callable=lambda members: [m.value for m in members],
                validate_strings=True)


class CleanText(TypeDecorator[str]):
    """TEXT whose NUL characters are stored as U+FFFD: PostgreSQL's text refuses NUL, and a
    candidate's output (its logs, an error quoting it) may hold any byte."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return value.replace("\x00", "\ufffd") if value else value


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON}


class SchemaVersion(Base):
    __tablename__ = "schema_version"
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    applied_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class CampaignRow(Base):
    __tablename__ = "campaigns"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    task: Mapped[str] = mapped_column(String(200))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[CampaignStatus] = mapped_column(enum_column(CampaignStatus, 20),
                                                   default=CampaignStatus.RUNNING)
    repo_path: Mapped[str] = mapped_column(CleanText)
    root_node_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class NodeRow(Base):
    __tablename__ = "nodes"
    __table_args__ = (UniqueConstraint("campaign_id", "round", "slot", name="uq_node_slot"),
                      # the controller's queries: nodes by status, the best by score
                      Index("ix_nodes_campaign_status_score", "campaign_id", "status", "score"),
                      # the duplicate check: an equivalent evaluated node
                      Index("ix_nodes_campaign_fingerprint", "campaign_id", "fingerprint"))
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    campaign_id: Mapped[str] = mapped_column(ForeignKey("campaigns.id"), index=True)
    parent_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    round: Mapped[int] = mapped_column(Integer)
    slot: Mapped[int] = mapped_column(Integer)
    kind: Mapped[ChangeKind] = mapped_column(enum_column(ChangeKind, 32))
    proposer: Mapped[str] = mapped_column(String(200))
    proposer_reason: Mapped[str] = mapped_column(CleanText, default="")
    rationale: Mapped[str] = mapped_column(CleanText, default="")
    proposal: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    patch: Mapped[str] = mapped_column(CleanText, default="")
    commit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # orchestrator.duplicates.fingerprint of the committed files (None: not computed yet)
    fingerprint: Mapped[str | None] = mapped_column(String(80), nullable=True)
    # the evaluated node whose files this one's equal (answered from its evaluation)
    duplicate_of: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # the search-policy version in force when the node was recorded (None: before v7)
    policy_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    status: Mapped[NodeStatus] = mapped_column(enum_column(NodeStatus, 16),
                                               default=NodeStatus.PENDING)
    run_status: Mapped[RunStatus | None] = mapped_column(enum_column(RunStatus, 16),
                                                         nullable=True)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    heldout_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    error: Mapped[str | None] = mapped_column(CleanText, nullable=True)
    wall_s: Mapped[float] = mapped_column(Float, default=0.0)
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class EvaluationRow(Base):
    __tablename__ = "evaluations"
    __table_args__ = (UniqueConstraint("node_id", "split", "seed", name="uq_eval"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    node_id: Mapped[str] = mapped_column(ForeignKey("nodes.id"), index=True)
    split: Mapped[Split] = mapped_column(enum_column(Split, 16))
    seed: Mapped[int] = mapped_column(Integer, default=0)
    run_status: Mapped[RunStatus] = mapped_column(enum_column(RunStatus, 16))
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    instances: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    wall_s: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class JobRow(Base):
    """A training or evaluation job (``recursor.executors``): inputs, outputs, costs, provenance."""

    __tablename__ = "jobs"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # the spec's content hash
    node_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    kind: Mapped[str] = mapped_column(String(16))
    executor: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    artifacts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    costs: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    provenance: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    error: Mapped[str | None] = mapped_column(CleanText, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LogRow(Base):
    __tablename__ = "logs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    node_id: Mapped[str] = mapped_column(ForeignKey("nodes.id"), index=True)
    stream: Mapped[str] = mapped_column(String(32))
    content: Mapped[str] = mapped_column(CleanText)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PromotionRow(Base):
    __tablename__ = "promotions"
    # one row per component a node became the incumbent of
    __table_args__ = (UniqueConstraint("node_id", "component", name="uq_promotion"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    campaign_id: Mapped[str] = mapped_column(ForeignKey("campaigns.id"), index=True)
    component: Mapped[str] = mapped_column(String(64))
    node_id: Mapped[str] = mapped_column(ForeignKey("nodes.id"), index=True)
    previous_node_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    evidence: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SearchPolicyRow(Base):
    """One version of a campaign's search policy (selection, proposer choice): its parent,
    where it came from, the settings and the prediction that justified adopting it."""

    __tablename__ = "search_policies"
    __table_args__ = (UniqueConstraint("campaign_id", "seq", name="uq_policy_seq"),)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    campaign_id: Mapped[str] = mapped_column(ForeignKey("campaigns.id"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    parent_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    source: Mapped[PolicySource] = mapped_column(enum_column(PolicySource, 16))
    reason: Mapped[str] = mapped_column(CleanText, default="")
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    prediction: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    realized: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    at_evals: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
