"""Write the reference background the list decision measures similarities against.

A paper's z for a "which papers" question is how far its similarity stands above the similarity
of a typical ML abstract to the same question. Measured against the collection itself, "typical"
changes with the collection: in 29 papers of which ten are on audio, an audio paper is typical.
So the list decision uses a fixed reference instead: the mean and covariance of the embeddings
of the dev slices' abstracts (NeurIPS 2018 and ACL 2022, 2,032 papers; only statistics of the
vectors ship, no text). For a question vector q, the reference similarity has mean q.mean and
standard deviation sqrt(q' cov q).

    python bench/lists/reference_background.py --home DIR
    python bench/lists/reference_background.py --home DIR --multilingual   # e5's (issue 15)

DIR is the RAGQA_HOME of bench/lists/eval.py (its nips2018 and acl2022 collections). Writes
ragqa/data/background-<embedder>.npz.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

SLICES = ("nips2018", "acl2022")
OUT = Path(__file__).resolve().parents[2] / "ragqa" / "data"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--multilingual", action="store_true",
                        help="the multilingual vectors' reference (ingest --multilingual)")
    parser.add_argument("--slices", default=",".join(SLICES))
    args = parser.parse_args()
    from ragqa.config import load_settings
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder, make_multilingual_encoder
    from ragqa.retrieval.retriever import Retriever

    settings = load_settings({"RAGQA_HOME": str(args.home), "RAGQA_ENV_FILE": "/nonexistent"})
    encoder = make_encoder(settings)
    vectors = []
    for name in args.slices.split(","):
        retriever = Retriever(Store(settings, name, encoder))
        ids = [p.paper_id for p in retriever.lexical.all_papers()]
        store = retriever.store
        if args.multilingual:
            store = store.multilingual_store(make_multilingual_encoder(settings))
        vectors.append(store.paper_vectors(ids))
    encoder = store.encoder
    matrix = np.vstack(vectors).astype(np.float64)
    mean = matrix.mean(axis=0)
    covariance = np.cov(matrix, rowvar=False)
    name = encoder.embedder_id.replace(":", "_")
    path = OUT / f"background-{name}.npz"
    np.savez_compressed(path, mean=mean.astype(np.float32),
                        covariance=covariance.astype(np.float32),
                        embedder_id=encoder.embedder_id, papers=len(matrix))
    print(f"wrote {path} ({len(matrix)} papers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
