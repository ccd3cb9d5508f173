"""The message catalogue (answering/messages.py): every key in English and Chinese with the same
placeholders, and the frames of answers, chat turns and summaries written in the question's
language through the real CLI over the seeds (real Chroma, the real embedder), offline.

What is asserted is the frames, not which papers are found: offline Chinese retrieval is
another piece of work (issue 15, items 1-2)."""

from __future__ import annotations

import json
import re
import string

import pytest

from ragqa.answering.messages import CATALOGUE, CHINESE, ENGLISH, message, shown_topic
from ragqa.faces.openai_compat import message_text, read_message
from ragqa.models.language import detect_language

from .conftest import FULL_DUPLEX
from .helpers.answers import _llm_env, _source_numbers
from .helpers.llm_server import Reply, prompt_of

ABSENT_ZH = "关于 protein folding 的论文有哪些？"  # "which papers are on protein folding?": none
DOUBTED_ZH = "量子计算的论文有哪些？"  # "which papers are on quantum computing?": none are
# The "none" frames are asked of a copy of the seeds kept without multilingual vectors: there the
# English list decision reads the question. "protein" is a word no paper uses (a near miss: no
# list at all); of quantum computing its topic gate doubts, so what it found is folded. (The
# multilingual list decision has no topic gate yet, so over the seeds' multilingual vectors an
# absent topic asked in Chinese still gets a list: README, "Questions in other languages".)
PLAIN = "plain"
MIXED_ZH = "哪些论文研究 full-duplex speech？"
MOLECULES = "Which papers deal with molecules or materials?"
HAN = re.compile(r"[\u4e00-\u9fff]")


def _placeholders(entry: str | dict[str, str]) -> set[str]:
    forms = entry.values() if isinstance(entry, dict) else [entry]
    return {name for form in forms for _, name, _, _ in string.Formatter().parse(form) if name}


@pytest.fixture
def plain(seeded, seeds_copy):
    """`seeded`, plus the collection PLAIN: the seeds and one paper more (30), without
    multilingual vectors (the bundled seeds alone would get them for a Chinese question)."""
    (seeds_copy / "more.jsonl").write_text(json.dumps(
        {"id": "x1", "title": "Irrigation scheduling for greenhouse tomatoes",
         "abstract": "We schedule drip irrigation for greenhouse tomato crops from soil "
                     "moisture sensors and weather forecasts."}) + "\n", encoding="utf-8")
    made = seeded("ingest", str(seeds_copy), "--collection", PLAIN, "--quiet")
    assert made.exit_code == 0, made.output
    return lambda *args: seeded(*args, "--collection", PLAIN)


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# ---------------------------------------------------------------- the catalogue itself

def test_every_key_is_in_both_languages_with_the_same_placeholders():
    english, chinese = CATALOGUE[ENGLISH], CATALOGUE[CHINESE]
    assert set(english) == set(chinese), (set(english) ^ set(chinese))
    for key, entry in english.items():
        other = chinese[key]
        assert _placeholders(entry) == _placeholders(other), key
        assert isinstance(entry, dict) == isinstance(other, dict), f"{key}: plural in one only"
        if isinstance(entry, dict):
            assert "other" in entry and "other" in other, key
            assert set(entry) <= {"one", "other"} and set(other) <= {"one", "other"}, key
            assert "count" in _placeholders(entry), f"{key}: a plural needs {{count}}"
        assert other != entry, f"{key} is not translated"


def test_plural_forms_and_the_english_fallback_for_other_languages():
    assert message("answer.count", "English", count=1, topic="x") == "1 paper addresses “x”:"
    assert message("answer.count", "English", count=3, topic="x") == "3 papers address “x”:"
    assert message("answer.count", "Chinese", count=1, topic="x") == "共有 1 篇论文涉及“x”："
    # Japanese, German, French ...: the catalogue has no texts for them, English frames.
    for language in ("Japanese", "German", "French"):
        assert message("answer.none", language, total=5, topic="x") == \
            "None of the 5 papers in this collection addresses “x”."
    # Kanji with kana are Japanese, not Chinese: a Japanese question gets English frames.
    assert detect_language("全二重音声の論文はどれですか？") == "Japanese"
    assert detect_language("哪些论文研究全双工语音？") == "Chinese"
    # A message may itself have a {language} placeholder.
    assert "中文" in message("notice.no_multilingual", "Chinese", language="中文", collection="c",
                            what=message("notice.what.question", "Chinese"))


def test_a_chinese_topic_is_quoted_without_its_question_frame():
    assert shown_topic(DOUBTED_ZH, "Chinese") == "量子计算"
    assert shown_topic("哪些论文研究脉冲神经网络？", "Chinese") == "脉冲神经网络"
    assert shown_topic("有哪些关于全双工语音的论文？", "Chinese") == "全双工语音"
    assert shown_topic(MIXED_ZH, "Chinese") == "full-duplex speech"
    assert shown_topic("papers on audio?", "English") == "papers on audio?"


# ---------------------------------------------------------------- answers, offline

def test_a_chinese_question_nothing_addresses_abstains_in_chinese(plain):
    answer = _json(plain("ask", ABSENT_ZH, "--json"))
    assert answer["language"] == "Chinese" and answer["mode"] == "extractive"
    assert answer["answer"] == "本论文库的 30 篇论文中，没有一篇涉及“protein folding”。"
    assert answer["citations"] == [] and len(answer["closest"]) == 3
    labels = answer["labels"]
    assert labels["header"].startswith("抽取式回答（未配置 LLM）")
    assert labels["references"] == "参考文献" and labels["closest"] == "最接近的论文（未引用）"
    assert answer["notice"].startswith("问题似乎是中文")
    shown = plain("ask", ABSENT_ZH)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())  # rich wraps long lines
    for frame in ("抽取式回答（未配置 LLM）：句子均摘自论文摘要。", "本论文库的 30 篇论文中",
                  "最接近的论文（均不涉及该问题；未引用）："):
        assert frame in text
    assert "Extractive answer" not in text and "Closest matches" not in text
    for hit in answer["closest"]:  # titles stay as the abstracts wrote them
        assert hit["title"] in shown.stdout


def test_a_chinese_question_the_gate_doubts_folds_its_papers_in_chinese(plain):
    answer = _json(plain("ask", DOUBTED_ZH, "--json"))
    tail = answer["papers"]
    assert tail and {p["tier"] for p in tail} == {"tail"} and not answer["citations"]
    assert answer["answer"] == (f"本论文库的 30 篇论文中，没有一篇明确涉及“量子计算”；"
                                f"有 {len(tail)} 篇可能涉及，把握较小（已折叠）：")
    assert answer["labels"]["folded"] == f"另外 {len(tail)} 篇，把握较小"
    searched = plain("search", DOUBTED_ZH)
    assert " ".join(searched.stdout.split()).startswith(
        f"本论文库（30 篇论文）中没有明确涉及“{DOUBTED_ZH}”的论文。")


def test_a_chinese_list_question_gets_the_chinese_count_line_and_english_quotes(seeded):
    answer = _json(seeded("ask", MIXED_ZH, "--json"))
    assert answer["language"] == "Chinese"
    head = answer["answer"].split("\n")[0]
    found = re.fullmatch(r"共有 (\d+) 篇论文涉及“full-duplex speech”：", head)
    assert found, head
    assert int(found.group(1)) == len(answer["citations"]) >= 1
    lines = [x for x in answer["answer"].split("\n")[1:] if x.strip()]
    assert len(lines) == len(answer["citations"])
    for line, citation in zip(lines, answer["citations"], strict=True):
        # "- **Title**: the abstract's own sentence [n]": the quote is not translated.
        assert line == f"- **{citation['title']}**: {citation['quote']} [{citation['n']}]"
        assert not HAN.search(citation["quote"])
    shown = seeded("ask", MIXED_ZH)
    assert "参考文献" in shown.stdout and "References" not in shown.stdout


def test_english_frames_and_json_keys_are_unchanged(seeded):
    answer = _json(seeded("ask", FULL_DUPLEX, "--json"))
    assert answer["language"] == "English"
    assert re.match(r"\d+ papers address “full-duplex speech”:\n\n", answer["answer"])
    assert set(answer) == {"question", "mode", "answer", "citations", "unsupported", "repaired",
                           "fallback", "timings", "dropped_citations", "language",
                           "retrieval_query", "notice", "model", "total_papers", "papers",
                           "closest", "labels", "screening", "marks"}
    assert answer["labels"] == {
        "header": "Extractive answer (no LLM configured): sentences quoted from the abstracts. "
                  "Set OPENAI_BASE_URL or OPENAI_API_KEY for written answers.",
        "answer": "Answer (extractive)", "references": "References",
        "closest": "Closest matches (not cited)",
        "unsupported": "⚠ 0 sentence(s) are only weakly supported by the papers they cite.",
        "figures": "figures no cited abstract states",
        # the page's fold of a list's less certain papers (issue 45)
        "folded": f"{sum(p['tier'] == 'tail' for p in answer['papers'])} more, less certain"}
    shown = seeded("ask", FULL_DUPLEX)
    assert "Extractive answer (no LLM configured)" in shown.stdout
    assert "References" in shown.stdout and not HAN.search(shown.stdout.replace("论文列表", ""))


def test_search_lines_follow_the_question_s_language(seeded, plain):
    absent = plain("search", ABSENT_ZH)
    assert absent.exit_code == 0, absent.output
    assert " ".join(absent.stdout.split()) == \
        f"本论文库（30 篇论文）中没有与“{ABSENT_ZH}”匹配的论文。"
    found = seeded("search", MIXED_ZH)
    results = _json(seeded("search", MIXED_ZH, "--json"))["results"]
    assert found.stdout.startswith(f"检索“{MIXED_ZH}”：29 篇论文中有 {len(results)} 篇相关\n")
    english = seeded("search", "full-duplex speech")
    assert re.match(r"\d+ papers of 29 for “full-duplex speech”\n", english.stdout)


# ---------------------------------------------------------------- with an LLM

FULL_DUPLEX_ZH = "哪些论文研究全双工语音？"


def _translated_then(answer_reply):
    """The loopback model's replies: the translation of the question, then `answer_reply`
    (a function of the answer prompt's sources, title -> n)."""
    def reply(body: dict) -> Reply:
        prompt = prompt_of(body)
        if prompt.rstrip().endswith("English:"):
            return Reply(FULL_DUPLEX)
        return Reply(answer_reply(_source_numbers(prompt)))
    return reply


@pytest.mark.server
def test_a_written_chinese_answer_has_chinese_frames_around_it(seeded, llm_server):
    llm_server.reply = _translated_then(
        lambda n: f"Moshi-RAG 将紧凑的全双工接口与选择性检索相结合 [{n['Moshi-RAG']}]。")
    env = _llm_env(llm_server)
    answer = _json(seeded("ask", FULL_DUPLEX_ZH, "--json", **env))
    assert answer["language"] == "Chinese" and answer["mode"] == "llm"
    assert answer["retrieval_query"] == FULL_DUPLEX
    assert answer["labels"]["header"] == f"回答由 {answer['model']} 撰写；引用已核对。"
    # The model left papers out: they are appended under the Chinese heading, quoted in English.
    head, also = answer["answer"].split("\n\n其他相关论文：\n")
    assert head.startswith("Moshi-RAG 将紧凑的全双工接口") and also.startswith("- **")
    assert "Also relevant" not in answer["answer"]
    shown = seeded("ask", FULL_DUPLEX_ZH, **env)
    text = " ".join(shown.stdout.split())
    assert f"回答由 {answer['model']} 撰写；引用已核对。" in text and "参考文献" in text
    assert "实际检索：" + FULL_DUPLEX in text and "References" not in text


@pytest.mark.server
def test_an_unusable_chinese_answer_is_replaced_with_a_chinese_notice(seeded, llm_server):
    llm_server.reply = _translated_then(lambda n: "[1]")
    answer = _json(seeded("ask", FULL_DUPLEX_ZH, "--json", **_llm_env(llm_server)))
    assert answer["mode"] == "extractive" and answer["fallback"] == "it was only citations"
    assert answer["notice"] == ("模型的回答无法使用（回答只有引用编号），改为显示："
                                "检索保留的论文，每篇附上最相关的一句。")
    assert answer["labels"]["header"] == "抽取式回答：句子均摘自论文摘要。"
    assert re.match(r"共有 \d+ 篇论文涉及“full-duplex speech”：\n\n- \*\*", answer["answer"])


# ---------------------------------------------------------------- chat

def test_a_chinese_follow_up_names_the_earlier_papers_in_a_chinese_frame(seeded, tmp_path):
    transcript = tmp_path / "chat.md"
    script = [MOLECULES, "其中哪些使用了笛卡尔张量？", "第一篇提出了什么？", f"/save {transcript}"]
    result = seeded("chat", "--json", input="\n".join(script) + "\n")
    assert result.exit_code == 0, result.output
    first, second, third = [json.loads(x) for x in result.stdout.splitlines()
                            if x.startswith("{")]
    titles = [c["title"] for c in first["citations"]]
    assert len(titles) >= 2 and first["language"] == "English"
    listed = "、".join(titles[:-1]) + " 和 " + titles[-1]
    assert second["standalone_question"] == f"论文 {listed} 中，哪些使用了笛卡尔张量？"
    # "第一篇" is the first paper the earlier answer cited (the second turn's, or the first's
    # when the second cited none), read alone and quoted as written.
    named = (second["citations"] or first["citations"])[0]["title"]
    assert third["standalone_question"] == f"论文 {named} 提出了什么？"
    assert [c["title"] for c in third["citations"]] == [named]
    assert third["answer"].startswith(f"> **{named}**: ") and not HAN.search(third["answer"])
    for turn in (second, third):
        assert turn["language"] == "Chinese"
        assert turn["labels"]["header"].startswith("抽取式回答")
        assert turn["labels"]["references"] == "参考文献"
    saved = transcript.read_text(encoding="utf-8")
    assert f"*改写后的问题：论文 {named} 提出了什么？*" in saved
    assert "References:" in saved  # the English turn keeps its English frame
    if third["citations"]:
        assert "参考文献：" in saved
    # The OpenAI-compatible face writes each turn's references under its own heading and reads
    # them back from the messages a client returns, in either language.
    for turn in (first, third):
        text = message_text(turn)
        heading = "参考文献：" if turn["language"] == "Chinese" else "References:"
        assert (f"\n{heading}\n" in text) == bool(turn["citations"])
        assert read_message(text) == (turn["answer"], [
            {k: c[k] for k in ("n", "title", "source", "paper_id")} for c in turn["citations"]])


# ---------------------------------------------------------------- summaries

def test_a_chinese_summary_has_chinese_frames_and_english_theme_sentences(seeded, plain,
                                                                           tmp_path):
    out = tmp_path / "summary.md"
    summary = _json(seeded("summarize", "总结关于 full-duplex speech 的论文", "--json"))
    assert summary["language"] == "Chinese"
    assert summary["labels"] == {"title": "综述：full-duplex speech", "references": "参考文献",
                                 "mode": "抽取式综述：每篇论文引用一句原文。"}
    assert summary["themes"], "the mixed question finds the full-duplex papers"
    assert re.fullmatch(r"与“full-duplex speech”相关的 \d+ 篇论文可分为 \d+ 个主题：.+。",
                        summary["overview"])
    for theme in summary["themes"]:
        assert theme["heading"] == f"{theme['name']}（{theme['size']} 篇论文）"
    written = seeded("summarize", "总结关于 full-duplex speech 的论文", "--out", str(out))
    assert written.exit_code == 0, written.output
    markdown = out.read_text(encoding="utf-8")
    assert markdown.startswith("# 综述：full-duplex speech\n") and "\n## 参考文献\n" in markdown
    absent = _json(plain("summarize", DOUBTED_ZH, "--json"))
    assert absent["themes"] == [] and absent["overview"] == \
        "本论文库的 30 篇论文中，没有一篇涉及“量子计算”。"


@pytest.mark.server
def test_a_written_chinese_summary_is_asked_for_in_chinese_within_chinese_frames(
        seeded, llm_server, tmp_path):
    asked: list[str] = []

    def script(body: dict) -> Reply:
        prompt = prompt_of(body)
        asked.append(prompt)
        if "Theme name:" in prompt:
            return Reply("全双工语音智能体")
        if "Overview:" in prompt:
            return Reply("这些论文研究全双工语音智能体。")
        count = len(re.findall(r'<source n="\d+"', prompt))
        return Reply("".join(f"论文 {n} 研究全双工语音对话 [{n}]。" for n in range(1, count + 1)))

    llm_server.reply = script
    out = tmp_path / "summary.md"
    topic = "总结关于 full-duplex speech 的论文"
    result = seeded("summarize", topic, "--out", str(out), OPENAI_BASE_URL=llm_server.url,
                    RAGQA_LLM_RETRIES="0")
    assert result.exit_code == 0, result.output
    paragraphs = [p for p in asked if p.rstrip().endswith("Paragraph:")]
    assert paragraphs and all("Write in Chinese." in p for p in paragraphs)
    markdown = out.read_text(encoding="utf-8")
    assert markdown.startswith("# 综述：full-duplex speech\n\n这些论文研究全双工语音智能体。\n")
    assert re.search(r"\n## 全双工语音智能体（\d+ 篇论文）\n", markdown)
    assert "\n## 参考文献\n" in markdown and "References" not in markdown
    shown = seeded("summarize", topic, OPENAI_BASE_URL=llm_server.url, RAGQA_LLM_RETRIES="0")
    assert "综述由 LLM 撰写；引用已核对。" in shown.stdout
    assert re.search(r"调用 LLM \d+ 次，约 \d+ 个 token。", shown.stdout)


def test_an_english_summary_keeps_its_english_frames(seeded, tmp_path):
    out, topic = tmp_path / "summary.md", "audio"
    summary = _json(seeded("summarize", topic, "--json"))
    assert summary["language"] == "English" and summary["labels"]["references"] == "References"
    assert re.fullmatch(r"\d+ papers on “audio” fall into \d+ themes?: .+\.", summary["overview"])
    assert seeded("summarize", topic, "--out", str(out)).exit_code == 0
    markdown = out.read_text(encoding="utf-8")
    assert markdown.startswith("# Summary: audio\n") and "\n## References\n" in markdown
    assert all(f"## {t['name']} ({t['size']} papers)" in markdown for t in summary["themes"])
