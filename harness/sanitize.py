"""``nvfp4 sanitize``: a version on one shape under compute-sanitizer (the command calls it per shape), errors summarised.

The version is built first in a plain child (:func:`harness.build.full_build`): compiling under the
sanitizer would instrument the compiler's processes too. Then ``compute-sanitizer --tool T ...
python -m harness.sanitize ...`` runs this module's child, which imports the built extension, runs
``custom_kernel`` on the shape, checks the output and prints one line saying it finished. The
child runs with torch's caching allocator off, so every tensor is its own allocation and a write
past the end of one is outside any allocation, where memcheck sees it.

The report is parsed strictly: a run counts as clean only with compute-sanitizer's summary line
saying 0 errors, no error records, the child's finished line and exit code 0. A report without a
summary line (truncated, or a format this parser does not know) is a failure, never a pass.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from harness import build, build_cache, cuda_tools, isolation, paths
from harness.submissions import Submission

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
ERROR_EXITCODE = 86  # compute-sanitizer's exit code when it found errors (ours, to tell them apart)
PRINT_LIMIT = 100  # error records printed in full; the summary still counts them all
DEFAULT_TIMEOUT_S = 900.0
CHILD_DONE = "nvfp4-sanitize-child:"  # the child's last line: this prefix and a JSON verdict

CLEAN, ERRORS, FAIL, UNPARSED = "CLEAN", "ERRORS", "FAIL", "UNPARSED"

_PREFIX = re.compile(r"^========= ?(.*)$")
_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?\b")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
# Headlines of the tool's own that are not error records.
_NOT_FINDINGS = re.compile(r"^(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|"
                           r"Target application returned an error|Error: process didn't terminate successfully)")


@dataclass
class Finding:
    kind: str  # the record's headline, addresses and sizes of allocations normalised away
    count: int
    example: list  # the first record's lines (headline and its indented details)


@dataclass
class Report:
    status: str  # CLEAN, ERRORS, FAIL (the program failed, the sanitizer found nothing), UNPARSED
    message: str
    errors: int | None = None  # the summary's count (None: no summary line)
    warnings: int = 0  # racecheck's warnings (potential hazards), shown but not failing
    findings: list = field(default_factory=list)  # of Finding
    child: dict | None = None  # the child's verdict line

    @property
    def ok(self) -> bool:
        return self.status == CLEAN


def _kind(headline: str) -> str:
    return re.sub(r"0x[0-9a-fA-F]+", "0x…", headline).strip()


def parse(text: str, returncode: int | None) -> Report:
    """compute-sanitizer's combined output (its report and the child's lines) and its exit code."""
    records: list[list[str]] = []
    errors = race_errors = None
    warnings = 0
    child = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith(CHILD_DONE):
            try:
                child = json.loads(line[len(CHILD_DONE):])
            except json.JSONDecodeError:
                child = {"ok": False, "message": f"unreadable verdict line: {line}"}
            continue
        m = _PREFIX.match(line)
        if not m:
            continue  # the program's own output
        body = m.group(1)
        if not body.strip():
            continue
        if s := _ERROR_SUMMARY.search(body):
            errors = int(s.group(1))
        elif s := _RACE_SUMMARY.search(body):
            race_errors, warnings = int(s.group(2)), int(s.group(3))
        elif body[0].isspace():
            if records:
                records[-1].append(body.strip())
        elif not _NOT_FINDINGS.match(body):
            records.append([body.strip()])
    if errors is None:
        errors = race_errors
    counts = Counter(_kind(r[0]) for r in records)
    examples = {}
    for r in records:
        examples.setdefault(_kind(r[0]), r)
    findings = [Finding(kind, n, examples[kind]) for kind, n in counts.most_common()]
    error_records = [f for f in findings if not f.kind.lower().startswith("warning")]
    report = Report(UNPARSED, "", errors, warnings, findings, child)
    code = "timed out" if returncode is None else f"exit code {returncode}"
    if errors is None:
        report.message = (f"no ERROR SUMMARY line in compute-sanitizer's output ({code}): the report is truncated "
                          "or in a format this parser does not know; not a pass")
    elif errors > 0:
        report.status = ERRORS
        shown = sum(f.count for f in error_records)
        report.message = f"{errors} error{'s' * (errors != 1)}" + (
            "" if shown else " (no record of them parsed: see the log)")
    elif error_records:
        report.message = (f"the summary says 0 errors but {sum(f.count for f in error_records)} error record(s) "
                          "were printed: the report is inconsistent; not a pass")
    elif child is None:
        report.status = FAIL
        report.message = f"no errors found, but the program did not finish ({code})"
    elif not child.get("ok"):
        report.status = FAIL
        report.message = f"no errors found, but the program failed: {child.get('message', '')}"
    elif returncode != 0:
        report.status = FAIL
        report.message = f"no errors found, but compute-sanitizer ended with {code}"
    else:
        report.status = CLEAN
        report.message = "0 errors" + (f" ({warnings} racecheck warning{'s' * (warnings != 1)})" if warnings else "")
    return report


def command(sanitizer: str, tool: str, child_args: list[str]) -> list[str]:
    return [sanitizer, "--tool", tool, "--error-exitcode", str(ERROR_EXITCODE), "--print-limit", str(PRINT_LIMIT),
            "--target-processes", "application-only", sys.executable, "-m", "harness.sanitize", *child_args]


def find() -> str | None:
    return cuda_tools.find("compute-sanitizer")


def run(sub: Submission, sanitizer: str, shape_params: dict, dist: str, tool: str, *, seeds: int = 1,
        timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[Report, str]:
    """Build, then run under compute-sanitizer; the parsed report and the path of the full log."""
    built = build.full_build(sub, timeout_s)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    log = build_cache.logs_dir() / f"sanitize-{sub.problem}-{sub.label.replace('/', '_')}-{tool}-{stamp}-{os.getpid()}.log"
    if not built.ok:
        log.write_text(built.message)
        return Report(FAIL, f"the build failed: {built.message}"), str(log)
    args = [sub.problem, str(sub.path), sub.label, sub.source_hash, json.dumps(shape_params), dist, str(seeds)]
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1", PYTHONUNBUFFERED="1")
    code, text = isolation.run_group(command(sanitizer, tool, args), timeout_s, cwd=paths.REPO_ROOT, env=env)
    log.write_text(text)
    return parse(text, code), str(log)


# ------------------------------------------------------------------------------------ child
def _child(argv: list[str]) -> int:
    problem, path, label, source_hash, params, dist, seeds = argv
    sys.path.insert(0, str(paths.REPO_ROOT))
    import torch

    from harness import loader
    from reference import problem_module

    kernel = loader.import_submission(path, label, source_hash=source_hash)
    mod = problem_module(problem)
    shape = json.loads(params)
    seed = shape.pop("seed", 1111)
    verdict = {"ok": True, "message": ""}
    for i in range(int(seeds)):
        data = mod.generate_input(**shape, seed=seed + i, dist=dist, device="cuda")
        try:
            out = kernel(data)
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - the verdict says what happened; the sanitizer says why
            verdict = {"ok": False, "message": f"seed {seed + i}: custom_kernel raised {type(exc).__name__}: "
                                               + (str(exc).strip().splitlines() or [""])[0]}
            break
        ok, msg = mod.check(data, out)
        if not ok:
            verdict = {"ok": False, "message": f"seed {seed + i}: {msg}"}
            break
    print(CHILD_DONE + json.dumps(verdict), flush=True)
    return 0 if verdict["ok"] else 1


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
