"""The job model and the local executor with ``command`` jobs: records, logs, cancel,
wall time, and a controller killed mid-job that neither loses the result nor runs it twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from recursor.errors import ConfigError
from recursor.executors.local import LocalExecutor
from recursor.executors.spec import JobSpec, JobStatus, load_spec

WRITE_METRICS = ("import json, os, pathlib, sys, time\n"
                 "marker = pathlib.Path(sys.argv[1])\n"
                 "with marker.open('a') as log:\n    log.write('run\\n')\n"
                 "print('working', flush=True); time.sleep(float(sys.argv[2]))\n"
                 "out = pathlib.Path(os.environ['JOB_OUT'])\n"
                 "(out / 'metrics.json').write_text(json.dumps({'answer': 42}))\n"
                 "(out / 'weights.bin').write_bytes(b'w')\n")


def _spec(marker: Path, sleep_s: float = 0.0, **extra: object) -> JobSpec:
    return JobSpec(kind="command", command=[sys.executable, "-c", WRITE_METRICS, str(marker),
                                            str(sleep_s)], **extra)  # type: ignore[arg-type]


def test_a_command_job_records_metrics_artifacts_costs_and_provenance(tmp_path: Path) -> None:
    executor = LocalExecutor(tmp_path / "jobs")
    spec = _spec(tmp_path / "marker", provenance={"harness": "abc123"})
    handle = executor.submit(spec)
    record = executor.wait(handle, timeout_s=60)
    assert record.status is JobStatus.DONE, record.error
    assert record.metrics == {"answer": 42}
    assert Path(record.artifacts["weights.bin"]).read_bytes() == b"w"
    assert record.costs["wall_s"] > 0 and "cpu_s" in record.costs
    assert record.provenance == {"harness": "abc123"}
    assert "working" in list(executor.logs(handle))
    again = executor.submit(spec)  # the same spec is the same job: nothing runs again
    assert again == handle and executor.wait(again).status is JobStatus.DONE
    assert (tmp_path / "marker").read_text() == "run\n"


def test_a_failing_job_is_a_record_not_an_exception(tmp_path: Path) -> None:
    executor = LocalExecutor(tmp_path / "jobs")
    spec = JobSpec(kind="command", command=[sys.executable, "-c", "raise SystemExit(3)"])
    record = executor.wait(executor.submit(spec), timeout_s=60)
    assert record.status is JobStatus.FAILED and "status 3" in (record.error or "")


def test_wall_time_and_cancel(tmp_path: Path) -> None:
    executor = LocalExecutor(tmp_path / "jobs")
    slow = _spec(tmp_path / "m1", sleep_s=60, wall_time_s=1)
    record = executor.wait(executor.submit(slow), timeout_s=30)
    assert record.status is JobStatus.FAILED and "wall time" in (record.error or "")
    handle = executor.submit(_spec(tmp_path / "m2", sleep_s=60))
    time.sleep(1)
    executor.cancel(handle)
    assert executor.wait(handle, timeout_s=30).status is JobStatus.CANCELLED


def test_killing_the_controller_neither_loses_the_result_nor_runs_twice(
        tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    marker = tmp_path / "marker"
    spec_file = tmp_path / "job.yaml"
    spec_file.write_text(yaml.safe_dump(_spec(marker, sleep_s=4).model_dump(mode="json")))
    command = [sys.executable, "-m", "recursor.cli", "job", "run", str(spec_file), "--dir",
               str(tmp_path / "jobs"), "--json"]
    first = subprocess.Popen(command, env=subprocess_env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists(), "the job did not start"
    os.killpg(first.pid, signal.SIGKILL)  # the controller dies; the job's supervisor does not
    first.wait()
    second = subprocess.run(command, env=subprocess_env, capture_output=True, text=True,
                            timeout=120, check=False)
    assert second.returncode == 0, second.stderr
    record = json.loads(second.stdout)
    assert record["status"] == "done" and record["metrics"] == {"answer": 42}
    assert marker.read_text() == "run\n"  # one run only: the second controller re-attached


def test_a_job_started_before_its_process_file_is_alive_and_not_started_twice(
        tmp_path: Path) -> None:
    """A controller killed after its supervisor started but before it wrote process.json (the
    moment a campaign was killed in once, on spec.json appearing): its resume re-attaches
    instead of preparing the folder again under the running job."""
    marker = tmp_path / "marker"
    executor = LocalExecutor(tmp_path / "jobs")
    spec = _spec(marker, sleep_s=3)
    handle = executor.submit(spec)
    (handle.directory / "process.json").unlink()  # as if the controller died before writing it
    assert executor.status(handle) is JobStatus.RUNNING
    assert executor.submit(spec) == handle  # re-attached
    assert executor.wait(handle, timeout_s=60).status is JobStatus.DONE
    assert marker.read_text() == "run\n"


def test_a_job_whose_controller_died_before_starting_it_runs_on_resubmission(
        tmp_path: Path) -> None:
    """Killed after preparing the folder and before starting the supervisor: the folder holds a
    spec and no live supervisor, so submitting the spec again runs it (a second attempt)."""
    from recursor.executors import local

    spec = _spec(tmp_path / "marker")
    directory = tmp_path / "jobs" / spec.job_id
    fd = local._take_lock(directory)
    assert fd is not None
    local.prepare(directory, spec, 1)
    os.close(fd)  # what the controller's death does to its descriptor
    executor = LocalExecutor(tmp_path / "jobs")
    record = executor.wait(executor.submit(spec), timeout_s=60)
    assert record.status is JobStatus.DONE and record.attempts == 2


def test_bad_specs_name_the_problem(tmp_path: Path) -> None:
    cases = {"kind: sft\nmodel: tiny-gpt2\n": "needs `data:`",
             "kind: command\n": "needs `command",
             "kind: grpo\nmodel: tiny-gpt2\ndata: d.jsonl\n": "needs `reward",
             "kind: sft\nmodle: x\n": "modle"}
    for text, message in cases.items():
        path = tmp_path / "spec.yaml"
        path.write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_spec(path)


def test_a_spec_is_the_model_of_its_kind() -> None:
    from recursor.executors.spec import CommandJob, SftJob

    command = JobSpec(kind="command", command=["true"])
    sft = JobSpec(kind="sft", model="tiny-gpt2", data="/d.jsonl", config={"max_steps": 2})
    assert isinstance(command, CommandJob) and isinstance(sft, SftJob)
    assert not hasattr(command, "model") and not hasattr(sft, "command")
    # ids are those of the one-model-for-all-kinds specs, so existing job folders are found
    assert command.job_id == "command-41312f8e69ae4735"
    assert sft.job_id == "sft-102e84aa869c40b0"


def test_fields_of_another_kind_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("kind: command\ncommand: [true]\nmodel: tiny-gpt2\n")
    with pytest.raises(ConfigError, match=r"model: not a field of a command job \(name, seed, "
                       r"wall_time_s, provenance, command\)"):
        load_spec(path)
    path.write_text("kind: train\n")
    with pytest.raises(ConfigError, match="kind: must be one of sft, grpo, generate, eval, "
                       "serve, command, not 'train'"):
        load_spec(path)


def test_a_relative_jobs_folder_means_the_shells(tmp_path: Path,
                                                 subprocess_env: dict[str, str]) -> None:
    """`recursor job run spec.yaml` with the default `--dir jobs`, from the spec's folder: the
    job's runner starts in its own folder, so the relative path must not reach it as given."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.yaml").write_text(yaml.safe_dump(_spec(tmp_path / "marker").model_dump(
        mode="json")))
    done = subprocess.run([sys.executable, "-m", "recursor.cli", "job", "run", "job.yaml",
                           "--json"], cwd=work, env=subprocess_env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "done", record["error"]
    assert (work / "jobs" / record["job_id"] / "record.json").is_file()


def test_spec_paths_mean_the_spec_files_folder(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec's relative data file and checkpoint folder are found beside the spec, whatever
    the working directory; a data file that is not there is named before anything runs."""
    specs = tmp_path / "specs"
    (specs / "ckpt").mkdir(parents=True)
    (specs / "rows.jsonl").write_text('{"text": "a"}\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = specs / "job.yaml"
    path.write_text("kind: sft\nmodel: ckpt\ndata: rows.jsonl\n")
    spec = load_spec(Path("..") / "specs" / "job.yaml")
    assert spec.data == str(specs / "rows.jsonl")  # type: ignore[attr-defined]
    assert spec.model == str(specs / "ckpt")  # type: ignore[attr-defined]
    path.write_text("kind: sft\nmodel: tiny-gpt2\ndata: absent.jsonl\n")
    with pytest.raises(ConfigError, match=r"data: absent.jsonl is not a file \(looked for "
                       + str(specs / "absent.jsonl")):
        load_spec(path)
    path.write_text("kind: sft\n  model: tiny-gpt2\n")
    with pytest.raises(ConfigError, match=r"job.yaml: not valid YAML at line 2, column 8"):
        load_spec(path)


def test_niceness_lowers_the_jobs_priority(tmp_path: Path) -> None:
    """A training beside a campaign runs at a lower priority: the job's process (and what it
    starts) sees the executor's niceness added to the caller's."""
    script = ("import json, os, pathlib; p = pathlib.Path('/proc/self/autogroup'); "
              "group = p.read_text().split()[-1] if p.exists() else None; "
              "pathlib.Path(os.environ['JOB_OUT'], 'metrics.json')"
              ".write_text(json.dumps({'nice': os.nice(0), 'group': group}))")
    spec = JobSpec(kind="command", command=[sys.executable, "-c", script])
    low = LocalExecutor(tmp_path / "low", niceness=7)
    plain = LocalExecutor(tmp_path / "plain")
    base = os.nice(0)
    lowered = low.wait(low.submit(spec), timeout_s=60).metrics
    assert lowered["nice"] == min(base + 7, 19)
    # with autogroup scheduling the job's session (its own) is lowered too: that is what
    # ranks it against the campaign's processes
    assert lowered["group"] in (None, "7")
    plain_metrics = plain.wait(plain.submit(spec), timeout_s=60).metrics
    assert plain_metrics["nice"] == base and plain_metrics["group"] in (None, "0")
