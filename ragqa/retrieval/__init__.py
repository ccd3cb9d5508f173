"""Retrieval: a question taken apart, candidates from the dense and BM25 indexes, their signals,
and the fitted decisions (the relevance cut for claims, the list decision). Calls no LLM and
writes no prose."""
