"""``recursor replay``: simulate search policies over recorded campaigns, and tune them.

``recursor replay --dir D [--dir D2 ...] [--archive URL]`` first checks fidelity (the
recorded settings and seed reproduce each campaign's parent and proposer choices), then
simulates the recorded settings and each ``--policy`` over ``--seeds`` simulation seeds and
prints, per policy, evaluations and proposer cost to reach the target, best score at the
budget (bootstrap 95% intervals) and the share of evaluations the outcome model answered.
``recursor replay tune`` searches the settings with Optuna and writes a campaign YAML
fragment. See docs/replay.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

from recursor.config import absolute_archive_url
from recursor.errors import ConfigError

if TYPE_CHECKING:  # the simulator is imported by the commands that run it: every other
    # command of the CLI starts without it
    from recursor.replay.record import RecordedCampaign
    from recursor.replay.report import Fidelity, PolicyResult
    from recursor.replay.tune import Goal

app = typer.Typer(help="Simulate search policies over recorded campaigns (and tune them).",
                  invoke_without_command=True)
console = Console()

Dirs = Annotated[list[Path] | None, typer.Option("--dir", help="recorded campaign directory "
                                                 "(repeat for several)")]
Budget = Annotated[int | None, typer.Option("--budget", min=1, help="evaluations per "
                                            "simulated run; default: the first campaign's "
                                            "budget.max_evals")]
Target = Annotated[float | None, typer.Option("--target", help="score to reach; default: "
                                              "each campaign's best recorded dev score")]
Seeds = Annotated[int, typer.Option("--seeds", min=1, help="simulation seeds per policy")]
Workers = Annotated[int, typer.Option("--workers", min=1, help="processes that run the "
                                      "simulations (the figures do not depend on it)")]


Archives = Annotated[list[str] | None, typer.Option(
    "--archive", help="archive URL (SQLAlchemy), instead of or besides --dir; "
    "URL#CAMPAIGN_ID when it holds several campaigns")]


def _load(dirs: list[Path] | None, archives: list[str] | None = None) -> list[RecordedCampaign]:
    if not dirs and not archives:
        raise ConfigError("recursor replay: give at least one --dir (a recorded campaign) "
                          "or --archive URL")
    from recursor.replay.record import load_campaign, load_from_archive

    campaigns = [load_campaign(d) for d in dirs or []]
    for spec in archives or []:
        url, _, campaign_id = spec.partition("#")
        campaigns.append(load_from_archive(absolute_archive_url(url), campaign_id or None))
    return campaigns


def _targets(campaigns: list[RecordedCampaign], target: float | None) -> list[float]:
    from recursor.replay.report import default_targets

    return [target] * len(campaigns) if target is not None else default_targets(campaigns)


@app.callback()
def replay(
    ctx: typer.Context,
    dirs: Dirs = None,
    archives: Archives = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", help="YAML file or inline YAML: {name, selection, proposer_choice, "
        "concurrency, near_duplicates}")] = None,
    seeds: Seeds = 100,
    budget: Budget = None,
    target: Target = None,
    workers: Workers = 1,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="PNG of best-so-far against "
                                              "evaluations")] = None,
) -> None:
    """Check fidelity, then simulate the recorded settings and each --policy."""
    if ctx.invoked_subcommand is not None:
        return
    from recursor.replay.policies import policies
    from recursor.replay.report import evaluate_policy, fidelity
    from recursor.replay.simulator import Simulator

    campaigns = _load(dirs, archives)
    sims = [Simulator(c) for c in campaigns]
    checks = [fidelity(s) for s in sims]
    budget = budget or campaigns[0].config.budget.max_evals
    results = [evaluate_policy(sims, p, range(seeds), budget, _targets(campaigns, target), workers)
               for p in policies(campaigns[0].config, policy or [])]
    if plot is not None:
        plot_curves(results, plot, campaigns[0].objective.metric)
    if as_json:
        typer.echo(json.dumps({"fidelity": [_fidelity_json(f) for f in checks],
                               "targets": _targets(campaigns, target),
                               "policies": [r.to_json() for r in results]}, indent=2))
        return
    _print_fidelity(checks)
    _print_results(results, seeds)


def _fidelity_json(check: Fidelity) -> dict[str, Any]:
    return {"campaign": check.campaign, "exact": check.exact, "nodes": check.nodes,
            "matched": check.matched, "first_mismatch": check.first_mismatch,
            "promotions_recorded": check.promotions_recorded,
            "promotions_replayed": check.promotions_replayed}


def _print_fidelity(checks: list[Fidelity]) -> None:
    for check in checks:
        verdict = "[green]exact[/]" if check.exact else f"[red]differs[/]: {check.first_mismatch}"
        console.print(f"fidelity {check.campaign}: {check.matched}/{check.nodes} choices, "
                      f"{check.promotions_replayed}/{check.promotions_recorded} promotions "
                      f"reproduced, {verdict}", markup=True, highlight=False)


def _ci(interval: Any, fmt: str) -> str:
    return f"{interval.mean:{fmt}} [{interval.low:{fmt}}, {interval.high:{fmt}}]"


def _print_results(results: list[PolicyResult], seeds: int) -> None:
    table = Table(title=f"replay: {seeds} simulation seeds per campaign, means with 95% "
                  "bootstrap intervals")
    near = any(r.refused for r in results) or any("near_duplicates" in r.config for r in results)
    for column in ("policy", "reached", "evals to target", "quartiles", "cost to target",
                   "best at budget", "from model", *(["near-dup refused"] if near else [])):
        table.add_column(column, justify="left" if column == "policy" else "right")
    for r in results:
        q = r.evals_quartiles
        table.add_row(r.name, f"{r.reached:.0%}", _ci(r.evals_to_target, ".1f"),
                      f"{q[0]:.0f} / {q[1]:.0f} / {q[2]:.0f}",
                      _ci(r.cost_to_target, ".4f"), _ci(r.best_at_budget, ".4g"),
                      f"{r.model_fraction:.0%}", *([f"{r.refused:.1f}"] if near else []))
    console.print(table)
    console.print("evals to target counts a run that never reached it as the budget."
                  + (" near-dup refused: recorded nodes refused before evaluation, per run "
                     "(each spends the budget; its evaluation's time is saved)." if near else ""))


def plot_curves(results: list[PolicyResult], path: Path, metric: str) -> None:
    """Mean best-so-far against evaluations, one line per policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in results:
        ax.plot(range(1, len(r.curve) + 1), r.curve, label=r.name)
    ax.set_xlabel("evaluations")
    ax.set_ylabel(f"best {metric} so far (mean over runs)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


@app.command("tune")
def tune_command(
    ctx: typer.Context,
    dirs: Dirs = None,
    archives: Archives = None,
    out: Annotated[Path, typer.Option("--out", help="where to write the YAML fragment")] = Path(
        "tuned.yaml"),
    trials: Annotated[int, typer.Option("--trials", min=1, help="Optuna trials")] = 40,
    objective: Annotated[str, typer.Option("--objective", help="evals_to_target or "
                                           "best_at_budget")] = "evals_to_target",
    seeds: Seeds = 30,
    budget: Budget = None,
    target: Target = None,
    workers: Workers = 1,
) -> None:
    """Search selection and proposer-choice settings in the simulator; write the best."""
    if objective not in ("evals_to_target", "best_at_budget"):
        raise ConfigError(f"--objective {objective!r}: use evals_to_target or best_at_budget")
    from recursor.replay.simulator import Simulator
    from recursor.replay.tune import tune

    goal: Goal = "evals_to_target" if objective == "evals_to_target" else "best_at_budget"
    given = ctx.parent.params if ctx.parent is not None else {}  # `replay --dir D tune`
    campaigns = _load(dirs or given.get("dirs"), archives or given.get("archives"))
    sims = [Simulator(c) for c in campaigns]
    budget = budget or campaigns[0].config.budget.max_evals
    result = tune(sims, _targets(campaigns, target), budget, trials, range(seeds), goal,
                  workers=workers)
    header = (f"# recursor replay tune: {trials} trials, {seeds} seeds, budget {budget}, "
              f"objective {goal}\n# simulated evals to target: tuned "
              f"{result.tuned.evals_to_target.mean:.2f}, recorded settings "
              f"{result.recorded.evals_to_target.mean:.2f}\n")
    out.write_text(header + yaml.safe_dump(result.fragment, sort_keys=False))
    _print_results([result.recorded, result.tuned], seeds)
    console.print(f"wrote {out}: merge it into a campaign file for `recursor run`, or switch a "
                  f"campaign to it with `recursor resume --dir DIR --search-policy {out}`")
