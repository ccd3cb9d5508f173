"""The prompts ragqa sends an LLM: text files in prompts/ (or RAGQA_PROMPTS_DIR, file by file),
each with named placeholders such as {question}.

Each prompt's placeholders are declared here and checked when the file is loaded: a file that
lacks one, or holds a {name} this prompt does not fill, is an error that names the file, never a
prompt sent with a hole in it or with a literal "{question}". Only the declared placeholders are
replaced: other braces (JSON in a user's prompt, LaTeX in an abstract) stay as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ragqa.config import Settings
from ragqa.errors import ConfigError
from ragqa.resources import bundled_dir

PLACEHOLDERS: dict[str, frozenset[str]] = {
    "answer": frozenset({"sources", "question", "language"}),
    "condense": frozenset({"history", "question"}),
    "map_theme_name": frozenset({"titles"}),
    "overview": frozenset({"topic", "themes"}),
    "screen": frozenset({"question", "candidates"}),
    "summarize": frozenset({"theme", "sources", "language"}),
    "theme_name": frozenset({"sources"}),
    "translate": frozenset({"question"}),
}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Prompt:
    name: str
    path: Path
    template: str

    def fill(self, **values: str) -> str:
        """The prompt with every placeholder replaced; the values must be exactly its
        placeholders (a mismatch is a bug in ragqa, not in the file)."""
        if set(values) != PLACEHOLDERS[self.name]:
            raise TypeError(f"prompt {self.name} takes {sorted(PLACEHOLDERS[self.name])}, "
                            f"not {sorted(values)}")
        text = self.template
        for name, value in values.items():
            text = text.replace("{" + name + "}", value)
        return text


def check(name: str, path: Path, template: str) -> Prompt:
    """The prompt, once its placeholders are exactly the declared ones."""
    found = set(_PLACEHOLDER.findall(template))
    missing = sorted(PLACEHOLDERS[name] - found)
    unknown = sorted(found - PLACEHOLDERS[name])
    if missing or unknown:
        problems = [f"lacks {', '.join('{' + n + '}' for n in missing)}"] if missing else []
        problems += [f"has unknown {', '.join('{' + n + '}' for n in unknown)}"] if unknown \
            else []
        raise ConfigError(f"prompt file {path} {' and '.join(problems)} (its placeholders: "
                          f"{', '.join('{' + n + '}' for n in sorted(PLACEHOLDERS[name]))})")
    return Prompt(name, path, template)


def load_prompt(name: str, settings: Settings) -> Prompt:
    """prompts/NAME.txt, from RAGQA_PROMPTS_DIR when it has the file, else the bundled one."""
    if name not in PLACEHOLDERS:
        raise KeyError(f"no prompt {name!r}")
    for folder in (settings.prompts_dir, bundled_dir("prompts")):
        path = Path(folder) / f"{name}.txt" if folder else None
        if path is not None and path.is_file():
            try:
                template = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"prompt file {path}: cannot read: {exc}") from None
            return check(name, path, template)
    raise FileNotFoundError(f"prompt {name}.txt not found")
