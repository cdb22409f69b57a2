"""``parse_verdict`` (every backend's judge) turns anything malformed into an error, never an
exception: nesting, size, encoding, numbers JSON does not have, surrogates."""

from __future__ import annotations

import json
import sys

import pytest

from recursor.sandbox import SandboxRequest
from recursor.sandbox._judge import MAX_DEPTH, MAX_RESULT_BYTES, parse_verdict
from recursor.sandbox.process import ProcessSandbox
from recursor.types import RunStatus

GOOD = json.dumps({"metrics": {"score": 1.5}, "instances": {}, "error": None})
MALFORMED = {
    "nested-100k": "[" * 100_000 + "]" * 100_000,
    "nested-object": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "deep-but-parsable": '{"metrics": ' + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "}",
    "nan": '{"metrics": {"score": NaN}}',
    "infinity": '{"metrics": {"score": -Infinity}}',
    "overflowing-float": '{"metrics": {"score": 1e999}}',
    "huge-int": '{"metrics": {"score": ' + "9" * 4000 + "}}",
    "over-digit-limit": '{"metrics": {"score": ' + "9" * 5000 + "}}",
    "not-utf8": '{"metrics": {"score": 1}, "note": "\ufffd"}',
    "lone-surrogate": '{"metrics": {"score": 1}, "note": "\\ud800"}',
    "surrogate-key": '{"metrics": {"\\udfff": 1}}',
    "array": "[1, 2]",
    "truncated-json": '{"metrics": {"score": 1',
    "empty": "",
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_verdict_is_an_error_not_an_exception(name: str) -> None:
    parsed, error = parse_verdict(MALFORMED[name], truncated=False)
    assert parsed is None and error, name


def test_a_truncated_verdict_is_an_error() -> None:
    parsed, error = parse_verdict(GOOD, truncated=True)
    assert parsed is None and str(MAX_RESULT_BYTES) in (error or "")


def test_a_good_verdict_parses() -> None:
    assert parse_verdict(GOOD, truncated=False) == (json.loads(GOOD), None)


@pytest.mark.parametrize("name", ["nested-100k", "not-bytes", "lone-surrogate"])
def test_the_sandbox_judges_a_malformed_verdict_invalid(name: str) -> None:
    """Written by a real command in the process sandbox: the run is ``invalid``, the sandbox
    returns (it used to raise RecursionError out of ``Sandbox.run``)."""
    payload = {"nested-100k": "b'[' * 100_000 + b']' * 100_000",
               "not-bytes": repr(b'{"metrics": {"score": 1}, "x": "\xff\xfe"}'),
               "lone-surrogate": repr(MALFORMED["lone-surrogate"].encode())}[name]
    code = f"import os\nopen(os.environ['RECURSOR_RESULT'], 'wb').write({payload})\n"
    box = ProcessSandbox()
    try:
        result = box.run(SandboxRequest(command=[sys.executable, "-c", code]))
    finally:
        box.close()
    assert result.status is RunStatus.INVALID and result.result is None, result
    assert "result file" in (result.error or "")
