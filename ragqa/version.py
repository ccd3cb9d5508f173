"""The version, on its own: every layer may name it (the HTTP health check, `ragqa --version`)."""

__version__ = "0.1.0"
