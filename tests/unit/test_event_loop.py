"""A campaign can be driven from a thread that already runs an event loop (a notebook, an
async caller, a browser driver in the same test session)."""

from __future__ import annotations

import asyncio
import threading

from recursor.orchestrator.graph import _run_to_end


def _scenario(seen: list[str], results: list[object]) -> None:
    async def campaign() -> dict[str, int]:
        seen.append(threading.current_thread().name)
        return {"round": 3}

    async def caller() -> object:
        return _run_to_end(campaign())  # type: ignore[arg-type]

    results.append(asyncio.run(caller()))  # a loop runs in this thread: a worker is used
    results.append(_run_to_end(campaign()))  # type: ignore[arg-type]  # none runs: here


def test_the_graph_runs_when_the_caller_already_runs_a_loop() -> None:
    # in a fresh thread, whatever loop the test session's own thread may be running
    seen: list[str] = []
    results: list[object] = []
    thread = threading.Thread(target=_scenario, args=(seen, results), name="caller")
    thread.start()
    thread.join(30)
    assert results == [{"round": 3}, {"round": 3}]
    assert seen[0].startswith("recursor-campaign") and seen[1] == "caller"
