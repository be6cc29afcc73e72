"""The two ways a smoke cannot start; both end the command with exit code 2."""


class SetupError(RuntimeError):
    """No usable Python with vLLM for the tiers asked for, or the environment or harness failed."""


class UsageError(ValueError):
    """The request names nothing to smoke, names it inconsistently, or names an unknown tier."""
