"""The challenger: new training questions at the current policy's frontier.

``propose(request, rng) -> list of {"universe", "start", "chain"}`` gets, in ``request``:

- ``universes``: the *training* universes, each ``{"id", "entities": {name: kind}}`` (names and
  kinds only: no facts, no articles, and never another split's universe);
- ``relations``: ``{relation: [subject kind, object kind]}``;
- ``success``: the current policy's success rate per hop count on the training questions
  (``{"1": 0.9, ...}``; the challenger is asked only once there is a policy);
- ``target``: the success rate the questions should be pitched at; ``count``: how many at most.

It returns questions as a start entity and a chain of relations. The evaluator follows each
chain through the universe's facts itself (the answer), refuses what does not fit the world's
rules (the refusals are recorded), and labels every question with this file's hash and the
target; the curriculum then sees them beside the generated training questions.
"""

# EVOLVE-BLOCK-START
PER_UNIVERSE = 8  # questions proposed per training universe
SPREAD = 1  # also hop counts this far from the one whose success is nearest the target
# EVOLVE-BLOCK-END


def propose(request, rng):
    success = {int(hops): rate for hops, rate in request["success"].items()}
    target = request["target"]
    nearest = min(success, key=lambda h: (abs(success[h] - target), h)) if success else 2
    band = list(range(max(1, nearest - SPREAD), min(4, nearest + SPREAD) + 1))
    relations = sorted(request["relations"].items())
    out = []
    for universe in request["universes"]:
        entities = universe["entities"]
        for _ in range(PER_UNIVERSE):
            start = rng.choice(sorted(entities))
            kind, chain = entities[start], []
            for _ in range(rng.choice(band)):
                relation, (_, kind) = rng.choice([r for r in relations if r[1][0] == kind])
                chain.append(relation)
            out.append({"universe": universe["id"], "start": start, "chain": chain})
    return out[:request["count"]]
