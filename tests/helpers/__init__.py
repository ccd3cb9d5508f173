"""What several test files share; no test lives here. Test files import from these modules,
never from one another."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO / "seeds"
FULL_DUPLEX = "Which papers do full-duplex speech?"
# A topic the list decision doubts over the seeds: no paper is the answer, some are folded.
# ("autonomous driving" was one until session 38; now a near miss: no seed writes the term.)
DOUBTED_TOPIC = "let a spoken dialogue model answer factual questions while it keeps talking"
DOUBTED = f"Which papers {DOUBTED_TOPIC}?"
