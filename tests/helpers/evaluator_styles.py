"""Evaluators in the styles new users write (written here): the candidate loaded in a
``multiprocessing`` worker (forked, spawned, or in a ``ProcessPoolExecutor`` with the spawn
context) for a timeout, in pools of three workers calling it at once, run by a script started
with ``asyncio``, a bare number returned, numpy numbers among the metrics. Each scores
``solve`` on the cases x -> 3x (1.0 when all are right)."""

from __future__ import annotations

_LOAD = '''import importlib.util


def _solve_all(path):
    spec = importlib.util.spec_from_file_location("program", path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    return [program.solve(x) for x in (1, 2, 5)]


def _share(answers):
    return sum(1 for x, got in zip((1, 2, 5), answers) if got == 3 * x) / 3
'''

FORKED = _LOAD + '''
import multiprocessing


def _worker(path, queue):
    queue.put(_solve_all(path))


def evaluate(program_path):
    queue = multiprocessing.Queue()
    worker = multiprocessing.Process(target=_worker, args=(program_path, queue))
    worker.start()
    worker.join(60)
    if worker.is_alive():
        worker.terminate()
        return {"error": "timed out"}
    return {"score": _share(queue.get(timeout=10))}
'''

SPAWNED = FORKED.replace("import multiprocessing\n", "import multiprocessing\n\n"
                         "multiprocessing.set_start_method(\"spawn\", force=True)\n", 1)

POOL = _LOAD + '''
import concurrent.futures
import multiprocessing


def evaluate(program_path):
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        answers = pool.submit(_solve_all, program_path).result(timeout=60)
    return {"score": _share(answers)}
'''

# the evaluator calls the candidate itself, then from three workers at once (each worker's
# calls on a candidate channel of its own), fork and spawn pools alike
POOL_OF_THREE = _LOAD + '''
import concurrent.futures
import multiprocessing


def _solve_one(path, x):
    import importlib.util
    spec = importlib.util.spec_from_file_location("program", path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    return program.solve(x)


def evaluate(program_path):
    first = _solve_all(program_path)
    answers = []
    for method in ("fork", "spawn"):
        context = multiprocessing.get_context(method)
        with concurrent.futures.ProcessPoolExecutor(max_workers=3, mp_context=context) as pool:
            futures = [pool.submit(_solve_one, program_path, x) for x in (1, 2, 5)]
            answers.append([f.result(timeout=60) for f in futures])
    agree = all(a == first for a in answers)
    return {"score": _share(first) if agree else 0.0}
'''

BARE_NUMBER = _LOAD + '''

def evaluate(program_path):
    return _share(_solve_all(program_path))
'''

NUMPY_NUMBERS = _LOAD + '''
import numpy as np


def evaluate(program_path):
    answers = np.array(_solve_all(program_path))
    right = np.sum(answers == 3 * np.array([1, 2, 5]))
    return {"score": np.float32(right / 3), "right": right}
'''

ASYNC_SUBPROCESS = '''import asyncio
import json
import os
import sys
import tempfile

SCRIPT = """import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("program", sys.argv[1])
program = importlib.util.module_from_spec(spec)
spec.loader.exec_module(program)
for x in (1, 2, 5):
    print(json.dumps(program.solve(x)), flush=True)
"""


async def _answers(program_path):
    script = os.path.join(tempfile.mkdtemp(), "run.py")
    with open(script, "w") as handle:
        handle.write(SCRIPT)
    proc = await asyncio.create_subprocess_exec(sys.executable, script, program_path,
                                                stdout=asyncio.subprocess.PIPE)
    answers = [json.loads(await proc.stdout.readline()) for _ in range(3)]
    await proc.wait()
    return answers


def evaluate(program_path):
    answers = asyncio.run(_answers(program_path))
    return {"score": sum(1 for x, got in zip((1, 2, 5), answers) if got == 3 * x) / 3}
'''

STYLES = {"forked worker": FORKED, "spawned worker": SPAWNED, "spawn pool": POOL,
          "pools of three": POOL_OF_THREE,
          "bare number": BARE_NUMBER, "numpy numbers": NUMPY_NUMBERS,
          "asyncio subprocess": ASYNC_SUBPROCESS}

BODIES = {
    "triples": '''def solve(x):
    return x * 3
''',
    # right only where the evaluator's folder is in sight: it never is, in a candidate run
    "peeks": '''def solve(x):
    import os
    return x * 3 if os.path.exists("/recursor-evaluator") else x * 2
''',
}

# builds a checker of its own with the C compiler, runs the candidate with `python -c`, and
# feeds its answers to the checker with a shell redirection: each program a candidate run
CHECKER_C = r'''#include <stdio.h>
int main(void) {
    int want[3] = {3, 6, 15}, got, right = 0;
    for (int i = 0; i < 3 && scanf("%d", &got) == 1; i++) right += got == want[i];
    printf("%d\n", right);
    return 0;
}
'''

WITH_PROGRAMS = r'''import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('p', "
       "sys.argv[1]); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
       "open(sys.argv[2], 'w').write(' '.join(str(m.solve(x)) for x in (1, 2, 5)))")


def evaluate(program_path):
    with tempfile.TemporaryDirectory() as tmp:
        checker = os.path.join(tmp, "checker")
        built = subprocess.run(["gcc", os.path.join(HERE, "checker.c"), "-o", checker],
                               capture_output=True, text=True, timeout=120)
        if built.returncode != 0:
            return {"error": "the checker did not build: " + built.stderr[-300:]}
        answers = os.path.join(tmp, "answers.txt")
        subprocess.run([sys.executable, "-c", RUN, program_path, answers], check=True,
                       timeout=60)
        right = subprocess.run(f"{checker} < {answers}", shell=True, capture_output=True,
                               text=True, timeout=60)
        seen = subprocess.run(["sh", "-c", "test -d /recursor-evaluator && echo yes || echo no"],
                              capture_output=True, text=True, timeout=60)
    return {"score": int(right.stdout.strip()) / 3,
            "evaluator_folder_seen": float(seen.stdout.strip() == "yes")}
'''
