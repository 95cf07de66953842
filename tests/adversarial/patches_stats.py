"""Adversarial: on its first call, replaces the harness's statistics with a flattering constant,
then computes correctly -> TAMPERED (and the parent computes the statistics anyway)."""

from _common import gemm_into


def custom_kernel(data):
    import harness.stats
    harness.stats.summarize = lambda *args, **kwargs: {"n": 1, "mean_us": 0.001, "converged": True}
    a, b, sfa, sfb, _, _, c = data
    return gemm_into(c, a, b, sfa, sfb)
