"""Count ragqa's English phrase regexes (issue 46: "the count of English phrase regexes down by
at least two thirds").

A compiled pattern (`re.compile(...)` in ragqa/) is an English phrase regex when its source
text names four or more distinct English words of three letters or more (lower case, outside
escapes such as `\\b` or `\\w`): a list of wordings ("which|what|one|ones|of"), not a format
("https?://", "\\d{4}"). Its text is the string literals it is built from and those of the
module's constants it names (strings, f-strings, sums and lists of them: `"|".join(_FRAMES)`),
never names of code (`.join`, `.pattern`) or of groups (`(?P<plural>…)`); before session 39
those counted and lists of strings did not. Words of URLs and formats (http, https, www, doi,
org, com, net, pdf, forum, abs) do not count. Patterns in other scripts (Chinese, Japanese,
Korean) count apart.

    python bench/understanding/phrase_regexes.py [--root CHECKOUT] [--json] [--list]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MIN_WORDS = 4
_FORMAT_WORDS = {"http", "https", "www", "doi", "org", "com", "net", "pdf", "forum", "abs"}
_WORD = re.compile(r"(?<![\\\w])[a-z]{3,}")
_GROUP_NAME = re.compile(r"\(\?P(?:<\w+>|=\w+\))")  # (?P<name>…), (?P=name)
_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]")


def patterns(root: Path) -> list[tuple[str, int, str]]:
    """(file, line, text of the pattern argument) of every re.compile in ragqa/: the string
    literals it is built from, with those of the module's constants it names (`rf"…{_WORDS}…"`,
    `"…" + _WORDS`, `"|".join(_FRAMES)`, a constant naming another) written out: a shared word
    list counts in every pattern that uses it. Names of code (`.join`, `.pattern`) are no text."""
    out = []
    for path in sorted((root / "ragqa").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                     for t in node.targets if isinstance(t, ast.Name)
                     and isinstance(node.value, (ast.Constant, ast.JoinedStr, ast.BinOp,
                                                 ast.List, ast.Tuple))}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "compile" and getattr(node.func.value, "id", "") == "re" \
                    and node.args:
                out.append((str(path.relative_to(root)), node.lineno,
                            " ".join(_literals(node.args[0], constants, set()))))
    return out


def _literals(node: ast.AST, constants: dict[str, ast.AST], seen: set[str]) -> list[str]:
    """The string literals of an expression, through the module constants it names (each once)."""
    texts = []
    for part in ast.walk(node):
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            texts.append(part.value)
        elif isinstance(part, ast.Name) and part.id in constants and part.id not in seen:
            seen.add(part.id)
            texts += _literals(constants[part.id], constants, seen)
    return texts


def words_of(text: str) -> set[str]:
    return set(_WORD.findall(_GROUP_NAME.sub("", text))) - _FORMAT_WORDS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    found = patterns(args.root)
    english = [(f, n, t) for f, n, t in found if len(words_of(t)) >= MIN_WORDS]
    other_script = [(f, n, t) for f, n, t in found if _CJK.search(t)]
    report = {"compiled": len(found), "english_phrase_regexes": len(english),
              "words_in_them": sum(len(words_of(t)) for _, _, t in english),
              "other_script_phrase_regexes": len(other_script),
              "by_file": dict(Counter(f for f, _, _ in english).most_common())}
    if args.list:
        report["list"] = [f"{f}:{n} {len(words_of(t))} words" for f, n, t in english]
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
