"""ragqa: question answering over collections of ML-paper abstracts, with verified citations."""

__version__ = "0.1.0"
