"""Near-duplicate refusal in the replay simulator (a policy's ``near_duplicates`` section).

A simulated run refuses a recorded node as the controller would have refused it: compared
with the recorded nodes whose dev evaluation ran in an earlier round *of the simulated run*,
decided by the controller's own rule
(:func:`~recursor.orchestrator.near_duplicates.choose_nearest`, the same signatures and exact
similarities), so replaying a campaign's own settings reproduces its refusals. What the record
cannot say is simulated this way:

* an outcome the outcome model answers has no code: it is never refused, nor compared with;
* a node the record refused but the simulated setting does not refuse has no recorded
  outcome: the model answers it;
* a refused node spends the evaluation budget (as in a campaign); what refusing saves is its
  evaluation's time, which the trace counts (``Trace.refused``).

The code is read from the campaign's folder (its git store) once per campaign and setting, in
the process that starts the simulations (forked workers inherit it).

``near_duplicates: {behaviour: true}`` is simulated from the behaviour each node logged when
its campaign ran with that setting (``orchestrator/behaviour.py``): a recorded node is refused
when its behaviour equals that of a node whose dev evaluation ended with a score earlier in the
simulated run. A campaign that ran without the setting logged no behaviour, and cannot be
simulated with it; one that turned it on or off at a resume logged only part, and the nodes
without a behaviour are never refused. A proposal the check rejected under the setting stays
rejected in a replay without it: where the behaviour run fails, the task's fallback run (for
cfr, Kuhn poker at the evaluation's iterations) decides, and it fails only where the dev
evaluation would (before 2026-12-07 a failed behaviour run alone rejected a proposal, which its
dev evaluation would not always have done).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from recursor.config import NearDuplicateConfig
from recursor.errors import ConfigError
from recursor.orchestrator.near_duplicates import (
    choose_nearest,
    jaccard,
    set_key,
    shingles,
    signature_of,
)
from recursor.replay.record import RecordedCampaign


@dataclass
class NearData:
    """Every recorded node's shingle set and signature under one setting (shingle size,
    signature length), and the exact similarities computed so far."""

    permutations: int
    values: dict[str, np.ndarray]
    signatures: dict[str, np.ndarray]
    keys: dict[str, bytes]
    exact: dict[tuple[str, str], float] = field(default_factory=dict)

    @classmethod
    def build(cls, campaign: RecordedCampaign, config: NearDuplicateConfig) -> NearData:
        if campaign.files is None:
            raise ConfigError(f"replay: simulating near_duplicates compares the nodes' code, "
                              f"which only a campaign's folder holds (its repo/); campaign "
                              f"{campaign.name} was read without one (from an --archive URL, "
                              "or a folder whose repo/ is gone): give its folder with --dir")
        values = {}
        for node in campaign.nodes:
            if node.commit is not None and node.spends:
                values[node.id] = shingles(campaign.files(node.commit), config.shingle)
        return cls(config.permutations, values,
                   {i: signature_of(v, config.permutations) for i, v in values.items()},
                   {i: set_key(v) for i, v in values.items()})

    def similarity(self, a: str, b: str) -> float:
        pair = (a, b) if a < b else (b, a)
        found = self.exact.get(pair)
        if found is None:
            found = self.exact[pair] = jaccard(self.values[a], self.values[b])
        return found


class NearRun:
    """One simulated run's comparison set: the recorded nodes whose dev evaluation ran, in
    the order the run evaluated them."""

    def __init__(self, data: NearData, threshold: float) -> None:
        self.data, self.threshold = data, threshold
        self.ids: list[str] = []
        self.rows = np.empty((16, data.permutations), dtype=np.uint64)
        self.same: dict[bytes, int] = {}

    def refuses(self, node_id: str) -> bool:
        """Whether the recorded node ``node_id`` is refused against the nodes added so far."""
        data = self.data
        if not self.ids or node_id not in data.values:
            return False
        ids = self.ids
        _, similarity = choose_nearest(
            data.signatures[node_id], self.rows[:len(ids)], self.same.get(data.keys[node_id]),
            lambda i: data.similarity(node_id, ids[i]))
        return similarity >= self.threshold

    def add(self, node_id: str) -> None:
        """``node_id``'s dev evaluation ran: later nodes are compared with it too."""
        data = self.data
        if node_id not in data.values:
            return
        if len(self.ids) == len(self.rows):
            self.rows = np.concatenate([self.rows, np.empty_like(self.rows)])
        self.same.setdefault(data.keys[node_id], len(self.ids))
        self.rows[len(self.ids)] = data.signatures[node_id]
        self.ids.append(node_id)


class BehaviourRun:
    """One simulated run's behaviours of the recorded nodes whose dev evaluation ended with a
    score (``twins``: the only nodes the controller compares with)."""

    def __init__(self, behaviours: Mapping[str, str], twins: set[str]) -> None:
        self.behaviours, self.twins = behaviours, twins
        self.seen: set[str] = set()

    def refuses(self, node_id: str) -> bool:
        behaviour = self.behaviours.get(node_id)
        return behaviour is not None and behaviour in self.seen

    def add(self, node_id: str) -> None:
        behaviour = self.behaviours.get(node_id)
        if behaviour is not None and node_id in self.twins:
            self.seen.add(behaviour)


class Checks:
    """The run's refusal checks together: a node is refused when one of them refuses it."""

    def __init__(self, runs: Sequence[NearRun | BehaviourRun]) -> None:
        self.runs = list(runs)

    def refuses(self, node_id: str) -> bool:
        return any(run.refuses(node_id) for run in self.runs)

    def add(self, node_id: str) -> None:
        for run in self.runs:
            run.add(node_id)


def recorded_behaviours(campaign: RecordedCampaign) -> dict[str, str]:
    """Node id -> logged behaviour; ConfigError when the campaign logged none."""
    found = {n.id: n.behaviour for n in campaign.nodes if n.behaviour is not None}
    if not found:
        raise ConfigError(f"replay: simulating near_duplicates.behaviour compares the "
                          f"behaviour each node logged when its campaign ran with that "
                          f"setting; campaign {campaign.name} logged none (it ran without "
                          "it), so it cannot be simulated with it")
    return found


__all__ = ["BehaviourRun", "Checks", "NearData", "NearRun", "recorded_behaviours"]
