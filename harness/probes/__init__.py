"""Probes: the measurements a kernel engineer takes beside ``run`` and ``compare``.

- ``nvfp4 probe host``: what a call costs on the host against what it costs on the device
  (:mod:`harness.probes.host`);
- ``nvfp4 probe marks``: where the time goes inside a kernel, from ``NVFP4_MARK(id)`` stamps a
  version carries, compiled out unless built with ``-DNVFP4_MARKS`` (:mod:`harness.probes.marks`);
- ``nvfp4 probe ablate``: a version rebuilt with stand-ins switched on by preprocessor defines it
  carries (a stage left out), each timed by its kernels alone (:mod:`harness.probes.ablate`; the
  builds with defines, shared with the marks build: :mod:`harness.probes.variants`);
- ``nvfp4 probe sass``: what ptxas made of a version's wgmma loops (:mod:`harness.probes.sass`);
- the labels ``peer`` (``nvfp4 compare gemm peer v34``: cuBLAS on operands already dequantised,
  writing the output itself) and ``peer-fp32`` (the earlier peer: an fp32 output rounded by a
  second kernel), submissions like any version (:mod:`harness.probes.peer`).

The click group is :mod:`harness.cli.probe`. This package's ``__init__`` imports nothing
heavy: :func:`harness.submissions.resolve` reaches :func:`peer_file` from here.
"""

from __future__ import annotations

from pathlib import Path

PEER_LABELS = ("peer", "peer-fp32")
PEERS_DIR = Path(__file__).resolve().parent / "peers"


def peer_file(problem: str, label: str = "peer") -> Path:
    """The submission file of ``problem``'s peer of that label (``PEER_LABELS``; one small file per
    problem and label, each a ``custom_kernel`` made by :func:`harness.probes.peer.make_kernel`)."""
    return PEERS_DIR / f"{label.replace('-', '_')}_{problem}.py"
