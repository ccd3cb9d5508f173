"""What several test files share; no test lives here. Test files import from these modules,
never from one another."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO / "seeds"
FULL_DUPLEX = "Which papers do full-duplex speech?"
