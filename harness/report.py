"""Machine-readable output of every command: one schema, three encodings.

A *document* is ``{"schema_version", "command", "problem", "commit", "dirty", "gpu", "method",
"flush", "timestamp", "rows": [...], ...}``: the context once, then flat rows (one per version x
shape x dist for run, test and table; one per shape for compare, with the speedup; one per version
for list); shapes spelled as in leaderboard.csv (``shape_m`` .. ``shape_g``: a bare ``n`` is a
sample count). ``--format json`` writes the document; ``csv`` writes the rows with the context
repeated in each (so a file concatenated from several runs stays self-describing); ``md`` writes
the rows as a Markdown table under a line of context. ``-o FILE`` writes to a file instead of
stdout. Rows never carry rich markup or terminal escapes.
"""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

from harness import leaderboard

SCHEMA_VERSION = 1
FORMATS = ("table", "json", "csv", "md")
CONTEXT = ("schema_version", "command", "problem", "commit", "dirty", "gpu", "method", "flush", "timestamp")


def document(command: str, problem: str | None, rows: list[dict], *, device: dict | None = None, plan=None,
             **extra) -> dict:
    """The document for ``rows`` with this machine's context (git state, GPU, timing method)."""
    from harness import machine
    git = machine.git_state()
    doc = {"schema_version": SCHEMA_VERSION, "command": command, "problem": problem,
           "commit": git.get("git_commit", ""), "dirty": git.get("git_dirty", ""),
           "gpu": (device or {}).get("gpu", ""), "method": getattr(plan, "method", "") if plan else "",
           "flush": getattr(plan, "flush", "") if plan else "",
           "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "rows": rows}
    doc.update(extra)
    return doc


def result_rows(outcome) -> list[dict]:
    """One row per (version, shape, dist) of a run/test/table outcome (``runner.JobOutcome``): the
    figures under leaderboard.csv's names (``leaderboard.figures``), as numbers; with --warm also
    ``warm_mean_us`` (run --warm --format csv measured the warm calls and wrote them nowhere)."""
    warm = bool(getattr(outcome.plan, "warm", False))
    rows = []
    for r in outcome.results:
        for i, sub in enumerate(outcome.submissions):
            st = r.stats[i] if r.stats and i < len(r.stats) else None
            row = {"version": sub.label, "shape": r.shape.label, **leaderboard.shape_columns(r.shape.params),
                   "dist": r.dist, "status": r.status, "message": r.message, **leaderboard.figures(r, st)}
            if warm:
                row["warm_mean_us"] = ((st or {}).get("warm") or {}).get("mean_us")
            rows.append(row)
    return rows


def compare_rows(outcome) -> list[dict]:
    """One row per shape of a compare outcome: both means, the speedup of B over A, its interval, verdict;
    whether B's outputs were A's bit for bit (``outputs_equal``) on how many input sets (``outputs_sets``), on
    how many not (``outputs_differ``): all three empty where they were not compared (``runner.outputs_compared``)."""
    rows = []
    a, b = (s.label for s in outcome.submissions)
    for r in outcome.results:
        st = r.stats or [{}, {}]
        ratio = r.ratio or {}
        outputs = r.outputs or {}
        rows.append({"version_a": a, "version_b": b, "shape": r.shape.label, **leaderboard.shape_columns(r.shape.params),
                     "dist": r.dist, "status": r.status, "message": r.message,
                     "mean_a_us": (st[0] or {}).get("mean_us"), "mean_b_us": (st[1] or {}).get("mean_us"),
                     "speedup": ratio.get("speedup"), "lo": ratio.get("lo"), "hi": ratio.get("hi"),
                     "verdict": ratio.get("verdict"),
                     "outputs_equal": outputs["differ"] == 0 if outputs else None,
                     "outputs_sets": outputs.get("input_sets"), "outputs_differ": outputs.get("differ")})
    return rows


def encode(doc: dict, fmt: str) -> str:
    """``doc`` as ``fmt`` (json, csv or md)."""
    if fmt == "json":
        return json.dumps(doc, indent=1, default=str) + "\n"
    rows = doc["rows"]
    columns = list(dict.fromkeys(k for row in rows for k in row))
    if fmt == "csv":
        # NOTE: a row's own value wins over the context's where both name a column (list's problem)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=[*CONTEXT, *(c for c in columns if c not in CONTEXT)],
                                lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        context = {k: _cell(doc.get(k)) for k in CONTEXT}
        for row in rows:
            writer.writerow({**context, **{k: _cell(row.get(k)) for k in columns if row.get(k) is not None}})
        return buf.getvalue()
    if fmt == "md":
        head = ", ".join(f"{k} {doc[k]}" for k in ("command", "problem", "gpu", "method", "flush", "commit") if doc.get(k))
        lines = [f"<!-- {head}, {doc['timestamp']} -->", "| " + " | ".join(columns) + " |",
                 "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(_md(row.get(k)) for k in columns) + " |" for row in rows]
        return "\n".join(lines) + "\n"
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def emit(doc: dict, fmt: str, path: str | None) -> None:
    """Writes the encoded document to ``path``, or to stdout."""
    text = encode(doc, fmt)
    if path:
        Path(path).write_text(text)
    else:
        import sys
        sys.stdout.write(text)


def _cell(x):
    if isinstance(x, bool):
        return str(x).lower()  # NOTE: true/false, as JSON and leaderboard.csv (converged, git_dirty) write them
    if isinstance(x, float):
        return f"{x:.6g}"
    return "" if x is None else x


def _md(x) -> str:
    return str(_cell(x)).replace("|", "\\|").replace("\n", " ")
