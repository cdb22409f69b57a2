"""The ``program`` task's :class:`ProgramTask` (see the package docstring)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from recursor.config import ProgramTaskConfig
from recursor.errors import ConfigError
from recursor.mutation import BLOCK_END, BLOCK_START
from recursor.plan import CandidateRuns, Mount, SandboxLimits, trusted_module_command
from recursor.tasks._base import Component, EvaluationPlan, Objective, Task
from recursor.tasks.program.cascade import DEFAULT_THRESHOLDS
from recursor.tasks.program.files import (
    entry_of,
    evolvable,
    has_marker,
    module_files,
    named_files,
    read_program,
    read_text,
    sibling_modules,
)
from recursor.tasks.program.source import (
    STAGES,
    SourceError,
    check_evaluator,
    check_program,
    frame,
    imported_names,
    imports,
    names_mentioned,
    string_constants,
)
from recursor.tasks.program.verdict import MEAN_METRIC
from recursor.types import ChangeKind, Split

# read-only inside the evaluator's sandbox, never in /workspace; candidate runs never see it
EVALUATOR_TARGET = "/recursor-evaluator"
CACHE_FOLDER = "program-evaluator"
RUNNER = "recursor.tasks.program.runner"
# the runner's own start-up and the verdict, on top of the evaluator's time
RUNNER_MARGIN_S = 10.0
DEFAULT_METRIC = "score"
PEER_METRIC = "combined_score"  # what OpenEvolve's evaluators return
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def tree_digest(root: Path) -> str:
    """A content hash of every file under ``root`` (relative paths and bytes)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        data = path.read_bytes()
        digest.update(f"{len(rel)}:{rel}\0{len(data)}:".encode() + data)
    return digest.hexdigest()


def freeze(target: Path, stage: Callable[[Path], None]) -> bool:
    """Make ``target`` the copy ``stage(folder)`` writes, once (staged beside it, then moved
    into place); when it exists already, whether a fresh copy would differ from it (the
    files it was made from changed since)."""
    if not target.exists():
        staging = target.with_name(f".{target.name}.new")
        shutil.rmtree(staging, ignore_errors=True)
        stage(staging)
        staging.rename(target)
        return False
    fresh = target.with_name(f".{target.name}.check")
    shutil.rmtree(fresh, ignore_errors=True)
    try:
        stage(fresh)
        return tree_digest(fresh) != tree_digest(target)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def publish_tree(root: Path) -> None:
    """Make the copy readable (not writable) by the sandbox's unprivileged user."""
    root.chmod(0o755)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


class ProgramTask(Task):
    """A user's program and evaluator (see the module docstring); one component, ``program``."""

    name = "program"
    no_test_reason = ("a program task declares no sealed test split: its evaluator is asked "
                      "for dev and heldout only (task.splits: [test] adds one)")

    def __init__(self, config: ProgramTaskConfig) -> None:
        self.program = Path(config.program).resolve()
        self.evaluator = Path(config.evaluator).resolve()
        self.helpers = [Path(p).resolve() for p in config.evaluator_files]
        self.timeout_s = config.timeout_s
        self.memory_mb = config.memory_mb
        self._require_python()
        self.files = read_program(self.program)  # relative path in /workspace -> text
        self.path = entry_of(self.files, config.entry, self.program)  # what evaluate() gets
        if not self.program.is_dir():
            if not has_marker(self.files[self.path]):
                self._mark_whole_file()
            self._add_program_siblings()
        self.source = self.files[self.path]
        evaluator_source = read_text(self.evaluator, "evaluator")
        self._add_siblings(evaluator_source)
        self._add_named_files(evaluator_source)
        self.evolvable = evolvable(self.files) if self.program.is_dir() else [self.path]
        try:
            for path in self.evolvable or [self.path]:
                check_program(self.files[path], path)
            shape = check_evaluator(evaluator_source, self.evaluator.name)
        except SourceError as exc:
            raise ConfigError(f"task: {exc}") from None
        metric = self._metric(config.metric, evaluator_source, bool(shape.stages))
        self.objective = Objective(metric, config.direction)
        self.passes_split, self.stages = shape.passes_split, shape.stages
        self.as_script = shape.entry == "script"
        self._say_entry(shape.entry)
        self.thresholds = self._thresholds(config.cascade_thresholds)
        if config.splits and not self.passes_split:
            raise ConfigError(f"task.splits {config.splits}: the evaluator's evaluate() takes "
                              f"no split keyword, so it cannot tell them apart; define "
                              f"evaluate(path, split=\"dev\")")
        self.splits = (Split.DEV, Split.HELDOUT, *(Split(s) for s in config.splits))
        self._frames = {path: frame(self.files[path], path) for path in self.evolvable}
        for helper in self.helpers:
            if not helper.exists():
                raise ConfigError(f"task.evaluator_files: {helper} does not exist")
        rules = self._description(metric, config.direction)
        given = (config.description or "").strip()
        self.description = f"{given}\n\n{rules}" if given else rules

    def _require_python(self) -> None:
        """ConfigError unless the program is a folder or a Python file."""
        if not self.program.is_dir() and self.program.suffix != ".py":
            raise ConfigError(
                f"task.program: {self.program.name} is not a Python file; the program task "
                "evolves Python (.py) files. An evaluator may still compile or run files of "
                "other languages: keep them fixed in a program folder beside its .py files, "
                "or give them to the evaluator with task.evaluator_files")

    def _say_entry(self, entry: str) -> None:
        """Notes on how the evaluator is called (ShinkaEvolve's ``main`` or script), and the
        held-out note when it is told no split."""
        if entry in ("main", "script"):
            called = ("its main(program_path, results_dir) is called" if entry == "main"
                      else f"it runs as python {self.evaluator.name} --program_path PATH "
                      "--results_dir DIR")
            self.notes = (*getattr(self, "notes", ()), (
                f"task: {self.evaluator.name} follows ShinkaEvolve's convention: {called} and "
                "its metrics.json and correct.json are read back"))
        if not self.passes_split:
            told = (f"{self.evaluator.name}'s {entry}() takes no split keyword"
                    if entry in ("evaluate", "evaluate_stage1") else
                    f"{self.evaluator.name} follows ShinkaEvolve's convention, which has no "
                    "split")
            self.heldout_note = (
                f"none: {told}, so the held-out row repeats dev (define evaluate(path, "
                "split=\"dev\") and answer split == \"heldout\" with cases the search never "
                "sees)")

    def _add_program_siblings(self) -> None:
        """The modules beside a one-file program that it imports join it in the workspace as
        fixed files (as ``python program.py`` would find them); the evaluator never does."""
        paths = sibling_modules(self.program, self.files[self.path], [self.evaluator],
                                imported_names)
        added = {name: text for name, text in module_files(paths).items()
                 if name not in self.files}
        if added:
            self.files.update(added)
            self.notes = (*getattr(self, "notes", ()), (
                f"task: {self.path} imports {', '.join(p.name for p in paths)} from its own "
                "folder: the campaign's workspace holds them beside it, fixed (only "
                f"{self.path} evolves)"))

    def _add_siblings(self, evaluator_source: str) -> None:
        """The modules beside the evaluator that it imports go with it (as ``python
        evaluate.py`` would find them), unless ``evaluator_files`` names them already."""
        given = {helper.resolve() for helper in self.helpers}
        added = [path for path in sibling_modules(self.evaluator, evaluator_source,
                                                  [self.program], imported_names)
                 if path.resolve() not in given]
        if added:
            self.helpers += added
            names = ", ".join(path.name for path in added)
            self.notes = (*getattr(self, "notes", ()), (
                f"task: {self.evaluator.name} imports {names} from its own folder: "
                f"{'they go' if len(added) > 1 else 'it goes'} beside it in the sandbox "
                "(task.evaluator_files names such files explicitly)"))

    def _add_named_files(self, evaluator_source: str) -> None:
        """The files and folders beside the evaluator that its source names (``"cases.json"``,
        ``"data/"``) go with it too, unless given already; its runs start in a folder that
        holds them, as its own folder would be."""
        given = {helper.resolve() for helper in self.helpers}
        found, too_big = named_files(self.evaluator, string_constants(evaluator_source),
                                     [self.program])
        added = [path for path in found if path.resolve() not in given]
        if added:
            self.helpers += added
            names = ", ".join(path.name for path in added[:8])
            more = f" and {len(added) - 8} more" if len(added) > 8 else ""
            they = "they go" if len(added) > 1 else "it goes"
            self.notes = (*getattr(self, "notes", ()), (
                f"task: {self.evaluator.name} names {names}{more} beside it: {they} with it "
                "into its sandbox, read-only, and it runs in a folder that holds "
                f"{'them' if len(added) > 1 else 'it'} (as its own folder would)"))
        if too_big:
            self.notes = (*getattr(self, "notes", ()), (
                f"task: {self.evaluator.name} names {', '.join(p.name for p in too_big[:8])} "
                "beside it, left out: more than 64 MB or 2,000 files in all (name what it "
                "needs with task.evaluator_files)"))

    def _mark_whole_file(self) -> None:
        """A single file with no marked region (OpenEvolve evolves such a file whole): the
        campaign's copy gets one region around all of it, and says so."""
        self.files[self.path] = f"{BLOCK_START}\n{self.files[self.path]}\n{BLOCK_END}\n"
        self.notes = (*getattr(self, "notes", ()), (
            f"task: {self.path} has no EVOLVE-BLOCK region, so all of it may change (the "
            f"campaign's copy has '{BLOCK_START}' and '{BLOCK_END}' lines around the whole "
            "file; mark regions yourself to keep the rest fixed)"))

    def _description(self, metric: str, direction: str) -> str:
        where = (f"the program {self.path}" if len(self.files) == 1 else
                 f"the program in {len(self.files)} files (the evaluator runs {self.path}; "
                 f"files you may change: {', '.join(self.evolvable)})")
        return (f"Improve {where}. Only the code between '# EVOLVE-BLOCK-START' and "
                f"'# EVOLVE-BLOCK-END' lines may change; everything else must stay as it is. "
                f"A candidate is scored by the metric '{metric}' ({direction}).")

    def _metric(self, metric: str, evaluator_source: str, staged: bool) -> str:
        """The metric to optimize: ``metric``, except that the default ``score`` becomes
        ``combined_score`` (OpenEvolve's convention) for an evaluator that names the one and
        not the other, and :data:`MEAN_METRIC` for an evaluator written for OpenEvolve (it
        imports ``openevolve`` or evaluates in stages) that names neither: OpenEvolve ranks
        such results by the mean of their numbers. The choice is said at the start."""
        if metric != DEFAULT_METRIC:
            return metric
        named = names_mentioned(evaluator_source, frozenset({DEFAULT_METRIC, PEER_METRIC}))
        if not named and (staged or imports(evaluator_source, "openevolve")):
            self.notes = (*getattr(self, "notes", ()),
                          f"task.metric: {self.evaluator.name} is written for OpenEvolve and "
                          f"names neither '{DEFAULT_METRIC}' nor '{PEER_METRIC}': optimizing "
                          f"{MEAN_METRIC}, the mean of the numbers it returns, as OpenEvolve "
                          "ranks them; name one with --metric NAME (task.metric)")
            return MEAN_METRIC
        if DEFAULT_METRIC in named or PEER_METRIC not in named:
            return metric
        self.notes = (*getattr(self, "notes", ()),
                      f"task.metric: {self.evaluator.name} returns no '{DEFAULT_METRIC}' "
                      f"metric but '{PEER_METRIC}' (OpenEvolve's convention): optimizing "
                      f"{PEER_METRIC}; name another with --metric NAME (task.metric)")
        return PEER_METRIC

    def _thresholds(self, configured: Sequence[float] | None) -> tuple[float, ...]:
        """The cascade's thresholds on dev (see :mod:`cascade`), said at the start."""
        if not self.stages:
            if configured:
                raise ConfigError(f"task.cascade_thresholds: {self.evaluator.name} defines no "
                                  f"stages ({', '.join(STAGES)}), so there is nothing to gate")
            return ()
        minimize = self.objective.minimizes
        chosen = tuple(configured if configured is not None else
                       () if minimize else DEFAULT_THRESHOLDS)[:len(self.stages) - 1]
        gates = ", ".join(f"after {name} {'<=' if minimize else '>='} {value:g}"
                          for name, value in zip(self.stages, chosen, strict=False))
        self.notes = (*getattr(self, "notes", ()), (
            f"task: {self.evaluator.name} evaluates in stages ({', '.join(self.stages)}); on "
            f"dev a candidate goes on only when {self.objective.metric} is "
            f"{gates} (task.cascade_thresholds)" if gates else
            f"task: {self.evaluator.name} evaluates in stages ({', '.join(self.stages)}); every "
            "stage runs (set task.cascade_thresholds to stop weak candidates early)"))
        return chosen

    def components(self) -> Sequence[Component]:
        return [Component("program", ChangeKind.ALGORITHM, list(self.evolvable))]

    def seed_files(self) -> Mapping[str, str]:
        return dict(self.files)

    def _staged(self, root: Path) -> None:
        root.mkdir(parents=True)
        shutil.copyfile(self.evaluator, root / self.evaluator.name)
        for helper in self.helpers:
            if helper.is_dir():
                shutil.copytree(helper, root / helper.name, ignore=_IGNORED)
            else:
                shutil.copyfile(helper, root / helper.name)
        publish_tree(root)

    def prepare(self, cache_dir: Path) -> None:
        """Copy the evaluator and its helpers into the cache (once); ConfigError when the
        copy made at the campaign's start differs from the files now (a changed evaluator
        would make old and new scores incomparable)."""
        target = Path(cache_dir) / CACHE_FOLDER
        if freeze(target, self._staged):
            raise ConfigError(
                f"the evaluator {self.evaluator} (or its evaluator_files) changed since this "
                f"campaign started; its scores would not compare with the archived ones. "
                f"Restore the files (the campaign's copy is in {target}) or start a new campaign")

    def static_check(self, files: Mapping[str, str]) -> str | None:
        """The program's files are the starting ones, each evolvable file parses and differs
        from its starting text only inside its marked regions, and every other file is
        unchanged. Executes nothing."""
        added = sorted(set(files) - set(self.files))
        if added:
            return (f"adds {', '.join(added[:3])}: the program's files are fixed (only the "
                    f"marked regions of {', '.join(self.evolvable)} may change)")
        for path, start in self.files.items():
            source = files.get(path)
            if source is None:
                return f"missing {path}"
            if path not in self._frames:
                if source != start:
                    return f"changes {path}, which has no EVOLVE-BLOCK regions (it is fixed)"
                continue
            try:
                check_program(source, path, self._frames[path])
            except SourceError as exc:
                return str(exc)
        return None

    def evaluation(self, split: Split, cache_dir: Path) -> EvaluationPlan:
        command = trusted_module_command(
            RUNNER, "--evaluator", f"{EVALUATOR_TARGET}/{self.evaluator.name}",
            "--program", f"/workspace/{self.path}", "--workspace", "/workspace",
            "--metric", self.objective.metric,
            "--split", Split(split).value)
        if not self.passes_split:
            command.append("--no-split")
        if self.as_script:
            command.append("--as-script")
        if self.objective.minimizes:
            command.append("--minimize")
        if self.thresholds:
            command += ["--thresholds", ",".join(repr(t) for t in self.thresholds)]
        mount = Mount(Path(cache_dir) / CACHE_FOLDER, EVALUATOR_TARGET)
        limits = SandboxLimits(wall_time_s=self.timeout_s + RUNNER_MARGIN_S,
                               memory_mb=self.memory_mb)
        # the candidate runs (recursor.guest.run_candidate) see none of the evaluator's files
        return EvaluationPlan(command=command, mounts=[mount], limits=limits,
                              candidates=CandidateRuns(limits=limits))

    def proposer_hints(self) -> str:
        return self.description


__all__ = ["CACHE_FOLDER", "EVALUATOR_TARGET", "ProgramTask", "freeze", "publish_tree",
           "tree_digest"]
