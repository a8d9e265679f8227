"""Shared test settings.

Hypothesis: no per-example deadline (CI shares two cores with notebook kernels, so wall time per example
says nothing about correctness) and a derandomized search, so a failure found once is found on every run
of the same code. Set ``HYPOTHESIS_PROFILE=explore`` for a randomized, longer search.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
