"""A venue's short name from the label a library writes: "Proceedings of the 61st Annual Meeting
of the Association for Computational Linguistics (Volume 1: Long Papers)" is ACL, "Advances in
Neural Information Processing Systems 31" NeurIPS, "Proceedings of the 36th International
Conference on Machine Learning" (PMLR) ICML. People filter by the short name (`--venue ACL`);
the whole label is kept beside it (`venue_label`), and `--venue` matches either.

Only well-known series are named; any other label stays the venue as written.
"""

from __future__ import annotations

import re

# (short name, pattern of the label), tried in order: Findings before the conference it names,
# workshops before their host (a workshop at ACL is no ACL paper).
_SERIES: tuple[tuple[str, str], ...] = (
    ("", r"\bworkshops?\b|\bsymposium\b"),
    ("Findings of ACL", r"\bfindings of (?:the )?(?:association for computational linguistics"
                        r"|acl)\b(?!.*\b(?:emnlp|naacl|eacl|aacl|ijcnlp)\b)"),
    ("Findings of EMNLP", r"\bfindings of .*\bemnlp\b"),
    ("Findings of NAACL", r"\bfindings of .*\bnaacl\b"),
    ("TACL", r"transactions of the association for computational linguistics|^tacl$"),
    ("EMNLP", r"empirical methods in natural language processing|^emnlp\b"),
    ("NAACL", r"north american chapter of the association for computational linguistics"
              r"|^naacl\b"),
    ("EACL", r"european chapter of the association for computational linguistics|^eacl\b"),
    ("AACL", r"asia-pacific chapter of the association for computational linguistics"
             r"|^aacl\b"),
    ("COLING", r"international conference on computational linguistics|^coling\b"),
    ("ACL", r"annual meeting of the association for computational linguistics|^acl\b"),
    ("NeurIPS", r"neural information processing systems|^nips\b|^neurips\b"),
    ("ICML", r"international conference on machine learning|^icml\b"),
    ("ICLR", r"international conference on learning representations|^iclr\b"),
    ("AISTATS", r"artificial intelligence and statistics|^aistats\b"),
    ("UAI", r"uncertainty in artificial intelligence|^uai\b"),
    ("COLT", r"conference on learning theory|^colt\b"),
    ("CVPR", r"computer vision and pattern recognition|^cvpr\b"),
    ("ICCV", r"international conference on computer vision|^iccv\b"),
    ("ECCV", r"european conference on computer vision|^eccv\b"),
    ("KDD", r"knowledge discovery and data mining|^kdd\b"),
    ("AAAI", r"aaai conference on artificial intelligence|^aaai\b"),
    ("IJCAI", r"international joint conference on artificial intelligence|^ijcai\b"),
    ("SIGIR", r"research and development in information retrieval|^sigir\b"),
    ("WWW", r"^the web conference\b|^www\b|world wide web conference"),
    ("JMLR", r"journal of machine learning research|^jmlr\b"),
    ("TMLR", r"transactions on machine learning research|^tmlr\b"),
    ("TPAMI", r"transactions on pattern analysis and machine intelligence|^tpami\b"),
    ("Interspeech", r"\binterspeech\b"),
    ("ICASSP", r"acoustics,? speech,? and signal processing|^icassp\b"),
)
_COMPILED = tuple((short, re.compile(pattern, re.IGNORECASE)) for short, pattern in _SERIES)


def short_venue(label: str) -> str | None:
    """The short name of a well-known series this label belongs to, else None."""
    label = " ".join(label.split())
    for short, pattern in _COMPILED:
        if pattern.search(label):
            return short or None
    return None


def venue_and_label(label: str) -> tuple[str, str]:
    """(venue people filter by, the whole label when it differs, else "")."""
    label = " ".join(label.split())
    short = short_venue(label)
    if short and short.lower() != label.lower():
        return short, label
    return label, ""
