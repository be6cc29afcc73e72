"""Hypothesis profiles: a bounded, deterministic `default` for every run, and `long` to search
harder (select with CONTRACTFIX_HYPOTHESIS_PROFILE=long)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE_ENV = "CONTRACTFIX_HYPOTHESIS_PROFILE"
_COMMON = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}

settings.register_profile("default", max_examples=100, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=3000, **_COMMON)
settings.load_profile(os.environ.get(PROFILE_ENV, "default"))
