"""Readers of real-world sources (arXiv metadata, OpenReview notes, BibTeX), the one LaTeX and
Markdown to text converter every reader uses, and the `--where`/`--limit` selection.

`ragqa.corpus` stays the entry point (`read_sources`); these modules hold what grew out of it.
"""
