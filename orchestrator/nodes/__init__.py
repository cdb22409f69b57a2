"""The campaign graph's nodes, one module each; :mod:`recursor.orchestrator.graph` wires them.

Every node is a plain function ``(state, runtime) -> dict of state updates``. It reads what it
needs from the archive and writes its results there before returning, and it is idempotent: it
skips work the archive shows as done. A resumed campaign therefore re-runs at most the node that
was in flight when it died, and that node re-does only what did not reach the archive (a node
is keyed by round and slot, an evaluation by node and split, a judgement by a ``judge`` log
entry). The loop's own position (round, schedule step, editable set) is graph state, so the
checkpoint restores it exactly.
"""

from recursor.orchestrator.nodes._state import CampaignState, NodeName

__all__ = ["CampaignState", "NodeName"]
