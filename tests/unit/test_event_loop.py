"""A campaign can be driven from a thread that already runs an event loop (a notebook, an
async caller, a browser driver in the same test session)."""

from __future__ import annotations

import asyncio
import threading

from recursor.orchestrator.graph import _run_to_end


def test_the_graph_runs_when_the_caller_already_runs_a_loop() -> None:
    threads: list[str] = []

    async def campaign() -> dict[str, int]:
        threads.append(threading.current_thread().name)
        return {"round": 3}

    async def caller() -> dict[str, int]:
        return dict(_run_to_end(campaign()))  # type: ignore[arg-type]

    assert asyncio.run(caller()) == {"round": 3}
    assert threads[0].startswith("recursor-campaign")  # its own loop, in a worker thread
    assert dict(_run_to_end(campaign())) == {"round": 3}  # type: ignore[arg-type]
    assert threads[1] == threading.current_thread().name  # no loop running: this thread
