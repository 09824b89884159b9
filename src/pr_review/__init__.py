"""pr-review-action: a deterministic, advisory reviewer for GPU-kernel pull requests."""

__version__ = "0.1.0"
