"""contractfix: find and fix pipeline-parallel contract violations in vLLM model files."""

__version__ = "0.2.0"
