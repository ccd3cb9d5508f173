"""The message catalogue: every fixed part of an answer, a chat turn or a summary (headers,
count lines, abstentions, notices, headings, labels), in English and Chinese (Simplified).

A message is looked up by key in the language of the question (`detect_language`); English is
the fallback for every language the catalogue does not hold (Japanese, German, ... get English
frames). Placeholders are named (`{count}`, `{topic}`); a message that depends on a number is a
dict of plural forms ("one", "other"; Chinese has no grammatical plural and gives only "other").
Only the frames are translated: quotes, titles and theme names stay as the abstracts wrote them.
"""

from __future__ import annotations

import re

ENGLISH, CHINESE = "en", "zh"
# detect_language's names of the languages the catalogue holds.
_CODES = {"English": ENGLISH, "Chinese": CHINESE}

CATALOGUE: dict[str, dict[str, str | dict[str, str]]] = {
    ENGLISH: {
        # ------------------------------------------------ answers
        "header.llm": "Written answer by {model}; citations checked.",
        "header.fallback": "Extractive answer: sentences quoted from the abstracts.",
        "header.offline": "Extractive answer (no LLM configured): sentences quoted from the "
                          "abstracts. Set OPENAI_BASE_URL or OPENAI_API_KEY for written answers.",
        "answer.count": {"one": "{count} paper addresses “{topic}”:",
                         "other": "{count} papers address “{topic}”:"},
        "answer.none": "None of the {total} papers in this collection addresses “{topic}”.",
        # A lead-in (it ends in a colon) to the papers a face folds below it: a frame, no claim
        # that would need a citation (citations.states_fact).
        "answer.folded": {"one": "1 more paper may address “{topic}”, less certainly (folded):",
                          "other": "{count} more papers may address “{topic}”, less certainly "
                                   "(folded):"},
        "answer.unfolded": {"one": "Less certain, 1 more paper:",
                            "other": "Less certain, {count} more papers:"},
        "label.folded": {"one": "1 more, less certain", "other": "{count} more, less certain"},
        # A list without a core (the list decision doubts the topic): its papers folded.
        "answer.doubted": {
            "one": "None of the {total} papers in this collection is clearly about “{topic}”; "
                   "1 may address it, less certainly (folded):",
            "other": "None of the {total} papers in this collection is clearly about "
                     "“{topic}”; {count} may address it, less certainly (folded):"},
        "answer.doubted_unfolded": {
            "one": "None of the {total} papers in this collection is clearly about “{topic}”. "
                   "Less certain, 1 paper:",
            "other": "None of the {total} papers in this collection is clearly about "
                     "“{topic}”. Less certain, {count} papers:"},
        "answer.none_referred": "None of the papers it refers to addresses “{topic}”.",
        "answer.unstated.figure": "The abstract of **{title}** does not say: it gives no figure.",
        "answer.unstated.code": "The abstract of **{title}** does not say: it says nothing of "
                                "its code being released or where to get it.",
        "answer.unstated_line.figure": "its abstract does not say (it gives no figure).",
        "answer.unstated_line.code": "its abstract does not say (it says nothing of its code "
                                     "being released or where to get it).",
        "answer.unstated.name": "The abstract of **{title}** does not say: it never mentions "
                                "{names}.",
        "answer.unstated_line.name": "its abstract does not say (it never mentions {names}).",
        # A selection none of the last answer's papers holds, made from the list before it.
        "answer.widened": {"one": "The last answer's paper does not; of the list before it:",
                           "other": "None of the last answer's {count} papers does; of the list "
                                    "before it:"},
        # …made from the papers the last list folded below the ones it showed.
        "answer.widened_folded": {"one": "The paper shown does not; of the papers folded below "
                                         "it:",
                                  "other": "None of the {count} papers shown does; of the papers "
                                           "folded below them:"},
        # …made from the other papers on the list's topic (the list's question searched again).
        "answer.widened_topic": {"one": "The paper listed does not; of the other papers on its "
                                        "topic:",
                                 "other": "None of the {count} papers listed does; of the other "
                                          "papers on their topic:"},
        "answer.closest_referred": "None of the papers it refers to writes “{topic}” in those "
                                   "words; the one that reads closest:",
        "answer.abstained": "None of the retrieved papers answers this question: the model found "
                            "nothing in them that supports an answer.",
        "answer.cited_nothing": "The model's answer cited none of the retrieved papers, and no "
                                "sentence of them supports it, so it is not shown as an answer.",
        "answer.also_relevant": "Also relevant:",
        "notice.no_multilingual": "The question looks {language}; the abstracts are English, "
                                  "and collection “{collection}” keeps no multilingual vectors, "
                                  "so the English model matched {what}. Run `ragqa ingest "
                                  "--multilingual --collection {collection}` to add them (about "
                                  "8× the embedding time of its papers).",
        "notice.what.question": "the question as it is, poorly",
        "notice.what.translation": "its machine translation",
        "notice.cut_short": "The model stopped at its output limit: the answer may end "
                            "mid-sentence or leave papers out.",
        "notice.unusable": "The model's answer was unusable ({reason}); shown instead: "
                           "{instead}.",
        "notice.context": "{left} of the {found} papers found did not fit the model's context "
                          "({context} tokens, RAGQA_LLM_CONTEXT) and were left out of what it "
                          "read.",
        "instead.list": "the papers the search kept, each with its best sentence",
        "instead.fact": "sentences quoted from the abstracts",
        "reason.empty": "it was empty",
        "reason.citations": "it was only citations",
        "reason.number": "it was only a number",
        "reason.titles": "it named papers and said nothing about them",
        "reason.judged": "it cited none of the papers the model judged relevant",
        "reason.language": "it was written in {written}, not {language}",
        # ------------------------------------------------ around an answer (terminal, web page)
        "label.searched_for": "Searched for: {query}",
        "label.unsupported": "Not supported by the abstracts (cited ones: by the abstracts they "
                             "cite):",
        "label.uncited": "(uncited)",
        "label.figures": "figures no cited abstract states",
        "label.repaired": "{count} uncited sentence(s) given the citation of the abstract "
                          "sentence that supports them.",
        "label.dropped": "{count} citation(s) of sources that were not retrieved were removed.",
        "label.references": "References",
        "label.closest": "Closest matches (none of them addresses it; not cited):",
        "label.closest_short": "Closest matches (not cited)",
        "label.weak": "⚠ {count} sentence(s) are only weakly supported by the papers they cite.",
        "label.answer_mode": "Answer ({mode})",
        "label.mode_llm": "LLM: {model}",
        "label.mode_extractive": "extractive",
        # ------------------------------------------------ ragqa search (terminal)
        "search.none": "No paper in this collection ({total} papers) matches “{query}”.",
        "search.doubted": "No paper in this collection ({total} papers) is clearly about "
                          "“{query}”.",
        "search.count": {"one": "{count} paper", "other": "{count} papers"},
        "search.found": "{papers} of {total} for “{query}”",
        # ------------------------------------------------ chat
        "chat.one_paper": "the paper {names}",
        "chat.papers": "the papers {names}",
        "chat.which_of": "Which of {subject} {rest}",
        "chat.standalone": "Standalone question: {question}",
        "chat.references": "References:",
        "chat.nothing_listed": "No answer in this chat has listed a paper yet, so there is no "
                               "paper {number}. Ask about a topic first.",
        "chat.no_such_place": {"one": "The last answer listed 1 paper: it has no paper "
                                      "{number}. Ask about that one, or ask anew.",
                               "other": "The last answer listed {count} papers: it has no "
                                        "paper {number}. Name one of 1 to {count}, or ask "
                                        "anew."},
        "label.screened": "The model read {read} candidates and judged {accepted} relevant "
                          "({calls} requests, {seconds} s).",
        "label.screened_weak": "The model read {read} candidates but accepted papers on other "
                               "topics too: the list is the offline one, less what it rejected "
                               "({calls} requests, {seconds} s).",
        "notice.screening_failed": "The model could not screen the candidates ({reason}): "
                                   "the list is ragqa's own, not read by the model.",
        "notice.map_names_failed": "The model could not name the map's themes ({reason}): "
                                   "they keep ragqa's own names.",
        "notice.map_fields_failed": "The embedder could not embed the research fields "
                                    "({reason}): the themes are named from their papers' "
                                    "phrases.",
        "notice.map_named_by_phrases": "The research fields could not be embedded for this "
                                       "map: its themes are named from their papers' phrases "
                                       "until papers are added and it can.",
        "marks.header": "Re-ranked with your marks ({more} relevant, {rejected} not) for "
                        "“{topic}”: the papers you marked relevant first, then the "
                        "{unjudged} unmarked papers of the list nearer to them than to those "
                        "you rejected.",
        "marks.review": {"one": "To review, 1 new candidate (not in the list until you mark "
                                "it):",
                         "other": "To review, {count} new candidates (not in the list until "
                                  "you mark them):"},
        "list.comma": ", ",
        "list.and": " and ",
        # ------------------------------------------------ summaries
        "summary.title": "Summary: {topic}",
        "summary.title_all": "Summary of the collection",
        "summary.theme": {"one": "{name} ({count} paper)", "other": "{name} ({count} papers)"},
        "summary.references": "References",
        "summary.overview": "{count} papers on “{topic}” fall into {themes}: {parts}.",
        "summary.overview_all": "{count} papers in the collection fall into {themes}: {parts}.",
        "summary.themes": {"one": "{count} theme", "other": "{count} themes"},
        "summary.part": "{name} ({size})",
        "summary.part_separator": "; ",
        "summary.other": "Other",
        "summary.mode_llm": "Summary written by an LLM; citations checked.",
        "summary.mode_extractive": "Summary extractive: one quoted sentence per paper.",
        "summary.llm_calls": "{calls} LLM calls, ~{tokens} tokens.",
    },
    CHINESE: {
        "header.llm": "回答由 {model} 撰写；引用已核对。",
        "header.fallback": "抽取式回答：句子均摘自论文摘要。",
        "header.offline": "抽取式回答（未配置 LLM）：句子均摘自论文摘要。设置 OPENAI_BASE_URL 或 "
                          "OPENAI_API_KEY 即可获得由模型撰写的回答。",
        "answer.count": {"other": "共有 {count} 篇论文涉及“{topic}”："},
        "answer.none": "本论文库的 {total} 篇论文中，没有一篇涉及“{topic}”。",
        "answer.folded": {"other": "另有 {count} 篇论文可能涉及“{topic}”，把握较小（已折叠）："},
        "answer.unfolded": {"other": "把握较小的另外 {count} 篇论文："},
        "label.folded": {"other": "另外 {count} 篇，把握较小"},
        "answer.doubted": {"other": "本论文库的 {total} 篇论文中，没有一篇明确涉及“{topic}”；"
                                    "有 {count} 篇可能涉及，把握较小（已折叠）："},
        "answer.doubted_unfolded": {"other": "本论文库的 {total} 篇论文中，没有一篇明确涉及"
                                             "“{topic}”。把握较小的 {count} 篇论文："},
        "answer.none_referred": "所指的论文中，没有一篇涉及“{topic}”。",
        "answer.unstated.figure": "**{title}** 的摘要没有说明这一点：其中没有给出任何数字。",
        "answer.unstated.code": "**{title}** 的摘要没有说明这一点：其中没有说代码已发布，"
                                "也没有给出获取方式。",
        "answer.unstated_line.figure": "摘要没有说明这一点（其中没有给出任何数字）。",
        "answer.unstated_line.code": "摘要没有说明这一点（其中没有说代码已发布，"
                                     "也没有给出获取方式）。",
        "answer.unstated.name": "**{title}** 的摘要没有说明这一点：其中没有提到 {names}。",
        "answer.unstated_line.name": "摘要没有说明这一点（其中没有提到 {names}）。",
        "answer.widened": {"other": "上一个回答中的 {count} 篇论文都不符合；在此前的列表中："},
        "answer.widened_folded": {"other": "列出的 {count} 篇论文都不符合；在其下折叠的论文中："},
        "answer.widened_topic": {
            "other": "列出的 {count} 篇论文都不符合；在同一主题的其他论文中："},
        "answer.closest_referred": "所指的论文中，没有一篇直接写到“{topic}”；读来最接近的是：",
        "answer.abstained": "检索到的论文都无法回答这个问题：模型在其中找不到能支持回答的内容。",
        "answer.cited_nothing": "模型的回答没有引用任何检索到的论文，这些论文中也没有句子支持它，"
                                "因此不作为回答显示。",
        "answer.also_relevant": "其他相关论文：",
        "notice.no_multilingual": "问题似乎是{language}，而论文摘要是英文的；"
                                  "集合“{collection}”没有多语言向量，因此由英文模型匹配{what}。"
                                  "运行 `ragqa ingest --multilingual --collection {collection}` "
                                  "即可添加（嵌入时间约为其论文的 8 倍）。",
        "notice.what.question": "问题原文，效果较差",
        "notice.what.translation": "其机器翻译",
        "notice.cut_short": "模型的输出达到了长度上限：回答可能在句中截断，或遗漏部分论文。",
        "notice.unusable": "模型的回答无法使用（{reason}），改为显示：{instead}。",
        "notice.context": "检索到的 {found} 篇论文中有 {left} 篇超出了模型的上下文长度"
                          "（{context} 个 token，RAGQA_LLM_CONTEXT），没有提供给模型阅读。",
        "instead.list": "检索保留的论文，每篇附上最相关的一句",
        "instead.fact": "摘自论文摘要的句子",
        "reason.empty": "回答为空",
        "reason.citations": "回答只有引用编号",
        "reason.number": "回答只有一个数字",
        "reason.judged": "回答没有引用模型判定为相关的任何论文",
        "reason.titles": "回答只列出了论文，没有说明其内容",
        "reason.language": "回答是用{written}而不是{language}写的",
        "label.searched_for": "实际检索：{query}",
        "label.unsupported": "摘要不支持的句子（有引用的句子按其引用的摘要核对）：",
        "label.uncited": "（无引用）",
        "label.figures": "所引摘要中没有的数字",
        "label.repaired": "已为 {count} 个未标注引用的句子补上引用（引自支持它们的摘要句）。",
        "label.dropped": "已删除 {count} 处引用：它们指向未检索到的来源。",
        "label.references": "参考文献",
        "label.closest": "最接近的论文（均不涉及该问题；未引用）：",
        "label.closest_short": "最接近的论文（未引用）",
        "label.weak": "⚠ 有 {count} 个句子在所引论文中只找到较弱的依据。",
        "label.answer_mode": "回答（{mode}）",
        "label.mode_llm": "LLM：{model}",
        "label.mode_extractive": "抽取式",
        "search.none": "本论文库（{total} 篇论文）中没有与“{query}”匹配的论文。",
        "search.doubted": "本论文库（{total} 篇论文）中没有明确涉及“{query}”的论文。",
        "search.count": {"other": "{count} 篇"},
        "search.found": "检索“{query}”：{total} 篇论文中有 {papers}相关",
        "chat.one_paper": "论文 {names}",
        "chat.papers": "论文 {names}",
        "chat.which_of": "{subject} 中，{rest}",
        "chat.standalone": "改写后的问题：{question}",
        "chat.references": "参考文献：",
        "chat.nothing_listed": "本次对话中还没有回答列出过论文，因此没有第 {number} 篇。"
                               "请先就一个主题提问。",
        "chat.no_such_place": {"other": "上一个回答只列出了 {count} 篇论文，没有第 {number} 篇。"
                                         "请指定第 1 到第 {count} 篇，或重新提问。"},
        "label.screened": "模型阅读了 {read} 篇候选论文，判定 {accepted} 篇相关"
                          "（{calls} 次请求，{seconds} 秒）。",
        "label.screened_weak": "模型阅读了 {read} 篇候选论文，但也接受了其他主题的论文："
                               "列表为离线列表，去掉了模型否定的论文"
                               "（{calls} 次请求，{seconds} 秒）。",
        "notice.screening_failed": "模型未能筛选候选论文（{reason}）：列表为 ragqa 自己的离线列表，"
                                   "未经模型阅读。",
        "notice.map_names_failed": "模型未能为地图的主题命名（{reason}）："
                                   "主题保留 ragqa 自己的名称。",
        "notice.map_fields_failed": "嵌入模型未能嵌入研究领域（{reason}）："
                                    "主题按其论文中的短语命名。",
        "notice.map_named_by_phrases": "此地图未能嵌入研究领域：在添加论文并能嵌入之前，"
                                       "其主题按论文中的短语命名。",
        "marks.header": "已按您的标记重新排序（{more} 篇相关，{rejected} 篇不相关），"
                        "主题“{topic}”：先列出您标记为相关的论文，"
                        "再列出列表中未标记、且更接近相关论文的 {unjudged} 篇论文。",
        "marks.review": {"other": "待审阅的 {count} 篇新候选论文（标记之前不在列表中）："},
        "list.comma": "、",
        "list.and": " 和 ",
        "summary.title": "综述：{topic}",
        "summary.title_all": "论文库综述",
        "summary.theme": {"other": "{name}（{count} 篇论文）"},
        "summary.references": "参考文献",
        "summary.overview": "与“{topic}”相关的 {count} 篇论文可分为 {themes}：{parts}。",
        "summary.overview_all": "论文库中的 {count} 篇论文可分为 {themes}：{parts}。",
        "summary.themes": {"other": "{count} 个主题"},
        "summary.part": "{name}（{size}）",
        "summary.part_separator": "；",
        "summary.other": "其他",
        "summary.mode_llm": "综述由 LLM 撰写；引用已核对。",
        "summary.mode_extractive": "抽取式综述：每篇论文引用一句原文。",
        "summary.llm_calls": "调用 LLM {calls} 次，约 {tokens} 个 token。",
    },
}

# How a catalogue names the languages detect_language reports (for {language}, {written}).
LANGUAGE_NAMES = {
    CHINESE: {"English": "英文", "Chinese": "中文", "Japanese": "日文", "Korean": "韩文",
              "Russian": "俄文", "Arabic": "阿拉伯文", "Hebrew": "希伯来文", "Greek": "希腊文",
              "Hindi": "印地文", "Thai": "泰文", "French": "法文", "German": "德文",
              "Spanish": "西班牙文", "Portuguese": "葡萄牙文", "Italian": "意大利文"},
}


def catalogue_of(language: str) -> str:
    """The catalogue for a language named by detect_language: English for any it lacks."""
    return _CODES.get(language, ENGLISH)


def message(key: str, language: str = "English", /, count: int | None = None, **values) -> str:
    """The message `key` in `language` (English when the catalogue lacks the language), its
    placeholders filled; `count` picks the plural form and fills {count}. (`language` is
    positional only: a message may have a {language} placeholder.)"""
    code = catalogue_of(language)
    entry = CATALOGUE[code][key]
    if isinstance(entry, dict):
        form = "one" if count == 1 and "one" in entry else "other"
        entry = entry[form]
    if count is not None:
        values["count"] = count
    return entry.format(**values)


def language_name(name: str, language: str) -> str:
    """`name` (a detect_language name) as the catalogue of `language` writes it."""
    return LANGUAGE_NAMES.get(catalogue_of(language), {}).get(name, name)


def joined(names: list[str], language: str) -> str:
    """"A, B and C" / "A、B 和 C"."""
    if len(names) <= 1:
        return "".join(names)
    return (message("list.comma", language).join(names[:-1]) + message("list.and", language)
            + names[-1])


_REASONS = {"it was empty": "reason.empty", "it was only citations": "reason.citations",
            "it was only a number": "reason.number",
            "it named papers and said nothing about them": "reason.titles",
            "it cited none of the papers the model judged relevant": "reason.judged"}
_WRITTEN_IN = re.compile(r"it was written in (\w+), not (\w+)")


def reason_text(reason: str, language: str) -> str:
    """citations.degenerate_reason's reason (English, as `fallback` keeps it) in `language`."""
    if reason in _REASONS:
        return message(_REASONS[reason], language)
    written = _WRITTEN_IN.fullmatch(reason)
    if written:
        return message("reason.language", language,
                       written=language_name(written.group(1), language),
                       language=language_name(written.group(2), language))
    return reason


# A Chinese question's frame around its topic ("哪些论文研究…？", "…的论文有哪些？"): shown
# without it, as topic_of shows an English question's topic.
_CHINESE_LEAD = re.compile(r"^(?:请|帮我|麻烦)?(?:列出|找出|查找|总结|概述|介绍)?(?:一下)?"
                           r"(?:(?:有|都有)?(?:哪些|哪几篇)(?:论文|文章|工作)?"
                           r"(?:研究|讨论|涉及|探讨|提出|使用)?了?)?(?:关于)?")
_CHINESE_TAIL = re.compile(r"(?:方面|领域|相关)?(?:的)?(?:论文|文章|工作|研究)?"
                           r"(?:有哪些|是哪些|有什么)?[？?。.！!\s]*$")


def shown_topic(topic: str, language: str) -> str:
    """The topic as a frame of `language` quotes it: a Chinese question without its frame
    ("量子计算的论文有哪些？" -> "量子计算"); any other topic as it is."""
    if catalogue_of(language) != CHINESE:
        return topic
    core = _CHINESE_TAIL.sub("", _CHINESE_LEAD.sub("", topic.strip()))
    return core.strip() or topic
