"""Adapters of the Python API (ragqa.api) to other frameworks, each importing its framework
only in its own module: `ragqa.integrations.llama_index` (pip install 'ragqa[llama-index]')."""
