"""Which records of a source an ingest keeps: `--where` conditions and `--limit`.

`--where category=cs.CL --where year>=2023` keeps the records that meet every condition; a
condition names `category` (any of the paper's arXiv categories, or of a `categories` field),
`venue` (case-insensitive) or `year`, with one of = != >= <= > <. `category=cs.CL,cs.LG` means
either. Readers ask `admits` before converting a record's LaTeX (the costly part), so reading a
2.5-million-line arXiv snapshot for one category pays the conversion only for what it keeps.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field

_CONDITION = re.compile(r"^\s*(category|categories|venue|year)\s*(>=|<=|!=|=|>|<)\s*(.+?)\s*$",
                        re.IGNORECASE)
_OPERATORS = {"=": operator.eq, "!=": operator.ne, ">=": operator.ge, "<=": operator.le,
              ">": operator.gt, "<": operator.lt}
_CATEGORY_SPLIT = re.compile(r"[\s;,]+")


def split_categories(value: object) -> list[str]:
    """"cs.CL cs.LG" (arXiv) or "cs.CL; cs.LG" (a list kept as text) -> ["cs.CL", "cs.LG"]."""
    return [c for c in _CATEGORY_SPLIT.split(str(value or "")) if c]


def category_key(category: str) -> str:
    """The Chroma metadata key that marks a paper of this category ("cat_cs.cl": True): Chroma
    metadata holds no lists in every version, and a boolean key per category filters in the
    index itself (a delimited string would need every candidate read back to match)."""
    return f"cat_{category.strip().lower()}"


@dataclass(frozen=True)
class Condition:
    field: str  # "category", "venue" or "year"
    op: str
    values: tuple[str, ...]

    def holds(self, venue: str, year: int | None, categories: list[str]) -> bool:
        if self.field == "year":
            if year is None:
                return self.op == "!="
            return _OPERATORS[self.op](year, int(self.values[0]))
        if self.field == "venue":
            found = venue.lower() in self.values
        else:
            found = any(c.lower() in self.values for c in categories)
        return found if self.op == "=" else not found


def parse_condition(text: str) -> Condition:
    """ValueError, saying what is accepted, for anything else."""
    match = _CONDITION.match(text)
    if not match:
        raise ValueError(f"--where {text!r}: use FIELD=VALUE or year>=YYYY, with FIELD one of "
                         "category, venue, year (e.g. --where category=cs.CL --where year>=2023)")
    name, op, value = match.group(1).lower(), match.group(2), match.group(3)
    name = "category" if name == "categories" else name
    if name == "year":
        if not value.isdigit():
            raise ValueError(f"--where {text!r}: a year is a number, not {value!r}")
        return Condition(name, op, (value,))
    if op not in ("=", "!="):
        raise ValueError(f"--where {text!r}: {name} takes = or !=, not {op}")
    values = tuple(v.strip().lower() for v in value.split(",") if v.strip())
    return Condition(name, op, values)


@dataclass
class Selection:
    """The conditions every kept record meets, and how many records to keep at most."""

    conditions: list[Condition] = field(default_factory=list)
    limit: int | None = None

    @classmethod
    def parse(cls, where: list[str] | None, limit: int | None = None) -> Selection:
        return cls([parse_condition(w) for w in where or []], limit)

    def __bool__(self) -> bool:
        return bool(self.conditions) or self.limit is not None

    def admits(self, venue: str, year: int | None, categories: list[str]) -> bool:
        return all(c.holds(venue, year, categories) for c in self.conditions)
