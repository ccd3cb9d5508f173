"""Retrieval: a question taken apart, candidates from the dense and BM25 indexes, their signals,
and the fitted decisions (the relevance cut for claims, the list decision). Calls no LLM and
writes no prose.

In the order of the flow: `question` (what a question asks and what kind it is), `spaces` (how
it is searched: English, or in another language), `candidates` (the pool, fusion, the feedback
round), `signals` (z against a background, coverage, names), `decide` (the cut, the list),
`sentences` (the papers read, their best sentence); `fitted` holds the fitted numbers, `types`
what a search takes and gives, and `retriever` the Retriever that runs the pipeline."""
