"""Screening: a judge reads a question's ranked candidates and says which are relevant.

The judge is the LLM when one is configured (`judge.LLMJudge`: batches of candidates, a JSON
verdict per batch), or the user, who marks papers of a list (`feedback`). Retrieval ranks;
screening decides where a question's relevant papers end, which no offline score tells
(bench/lists/README.md, "The ceiling of any cut").

- `judge.py`: the `Judge` protocol, the candidate blocks, the LLM judge and its lenient reply
  parser. The interface any judge answers (docs/screening.md): one chat completion per batch,
  candidates as blocks that each begin on a new line with `[n] ` and the stored title, the
  reply a JSON object `{"relevant": [n, ...]}`.
- `screen.py`: adaptive depth (batches down the ranking, re-ordered by what was accepted,
  stopped by a rule fitted on the dev sets), concurrency, the combination with the offline
  ranking, the statistics `--json` carries.
- `cache.py`: verdicts kept per exactly what the judge read (collection, the question as sent,
  the paper's content, endpoint + model + prompt).
- `feedback.py`: a list re-ranked and extended from marked papers (Rocchio), the user's loop.
"""
