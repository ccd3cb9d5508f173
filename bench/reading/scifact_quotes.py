"""Does an offline answer to a SciFact claim cite the evidence paper, and quote a rationale
sentence of it? (issue 30, item 4)

Every third of SciFact's 188 dev claims with annotated rationales (claims_dev_rationales.jsonl:
positions 0, 3, 6, … in file order; `--part dev`: the other 125, to choose on), asked with
`ragqa ask --json` over the whole SciFact corpus (5,183 abstracts, ingested once into the
collection `scifact` of --home). Reports:
- evidence_cited: the share of claims whose answer cites one of its evidence papers;
- rationale_quoted: of those evidence citations, the share whose quote is one of the paper's
  rationale sentences (SciFact's own segmentation, corpus_sentences.jsonl.gz; a quote matches a
  sentence when one holds the other, folded).

    python bench/reading/scifact_quotes.py --home DIR [--data ../shared/data/scifact]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from eval import cli  # noqa: E402  (bench/reading/eval.py)
from facts import folded  # noqa: E402

DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "scifact"
EVERY = 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cases", action="store_true")
    parser.add_argument("--part", choices=["report", "dev"], default="report",
                        help="report: every third claim (the figure to quote); dev: the others")
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl.gz").is_file():
        print(f"skipped: no SciFact data at {args.data}")
        return 0
    run = cli(args.home)
    run("ingest", str(args.data / "corpus.jsonl.gz"), "--quiet", collection="scifact")
    with gzip.open(args.data / "corpus_sentences.jsonl.gz", "rt", encoding="utf-8") as lines:
        sentences = {str(r["_id"]): r["sentences"] for r in map(json.loads, lines)}
    claims = [json.loads(line) for line in (args.data / "claims_dev_rationales.jsonl").open()]
    cited_claims, quoted, evidence_citations = 0, 0, 0
    chosen = [c for i, c in enumerate(claims) if (i % EVERY == 0) == (args.part == "report")]
    for claim in chosen:
        answer = run("ask", claim["claim"], collection="scifact")[0]
        evidence = claim["evidence"]
        hit = False
        for citation in answer["citations"]:
            doc = str(citation["paper_id"])
            if doc not in evidence:
                continue
            hit = True
            evidence_citations += 1
            rationale = {i for e in evidence[doc] for i in e["sentences"]}
            quote = folded(citation.get("quote", ""))
            ok = any(folded(sentences[doc][i]) in quote or quote in folded(sentences[doc][i])
                     for i in rationale if i < len(sentences[doc])) and bool(quote)
            quoted += ok
            if args.cases:
                print(json.dumps({"claim": claim["claim"], "doc": doc, "ok": ok,
                                  "quote": citation.get("quote", "")}), file=sys.stderr)
        cited_claims += hit
    asked = len(chosen)
    print(json.dumps({"claims": asked, "evidence_cited": round(cited_claims / asked, 3),
                      "evidence_citations": evidence_citations,
                      "rationale_quoted": round(quoted / max(evidence_citations, 1), 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
