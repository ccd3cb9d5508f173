"""Complete "which papers" lists: question understanding, and the calibrated list decision on a
judged fixture over the bundled seeds (tests/fixtures/seed_lists.json), through the real CLI,
embedder and Chroma. The figures the decision was calibrated for are measured on a thousand
papers by bench/lists/eval.py; this guards that it does not regress to short lists or to lists
for topics the collection lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragqa.retrieval.decide import names_absent_subject
from ragqa.retrieval.fitted import LIST_MODEL
from ragqa.retrieval.question import is_list_question, strip_frame, understand

from .helpers import DOUBTED, DOUBTED_TOPIC

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "seed_lists.json").read_text())
QUESTIONS = FIXTURE["questions"]
AUDIO = next(q for q in QUESTIONS if q["question"].startswith("What work is there on audio"))


def _listed(seeded, question: str) -> list[dict]:
    result = seeded("search", question, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["results"]


def _names(results: list[dict], grades: dict[str, int]) -> list[str]:
    """A listed paper by title when the fixture names it so, else by id (derived titles)."""
    return [r["title"] if r["title"] in grades else r["paper_id"] for r in results]


@pytest.fixture(scope="module")
def listed(_seeded_template, tmp_path_factory):
    """Every fixture question's list, from one copy of the seeded data folder."""
    import shutil

    from .conftest import Ragqa

    home = tmp_path_factory.mktemp("lists") / "home"
    shutil.copytree(_seeded_template, home)
    ragqa = Ragqa({"RAGQA_HOME": str(home)})
    return {q["question"]: _names(_listed(ragqa, q["question"]), q["grades"]) for q in QUESTIONS}


@pytest.fixture(scope="module")
def cores(_seeded_template, tmp_path_factory):
    """Every fixture question's core: the papers the answer lists (issue 45's tiers)."""
    import shutil

    from .conftest import Ragqa

    home = tmp_path_factory.mktemp("cores") / "home"
    shutil.copytree(_seeded_template, home)
    ragqa = Ragqa({"RAGQA_HOME": str(home)})
    return {q["question"]: _names([r for r in _listed(ragqa, q["question"])
                                   if r["tier"] == "core"], q["grades"]) for q in QUESTIONS}


def test_lists_over_the_seeds_are_complete_and_their_core_right(listed, cores):
    recalls, precisions, core_recalls = [], [], []
    for q in QUESTIONS:
        relevant = {name for name, grade in q["grades"].items() if grade == 2}
        if not relevant:
            continue
        names, core = listed[q["question"]], cores[q["question"]]
        recalls.append(len(relevant & set(names)) / len(relevant))  # core and tail
        core_recalls.append(len(relevant & set(core)) / len(relevant))
        precisions.append(sum(q["grades"].get(n, 0) >= 1 for n in core) / max(len(core), 1))
    assert sum(recalls) / len(recalls) >= 0.9, recalls
    assert sum(precisions) / len(precisions) >= 0.85, precisions
    assert sum(core_recalls) / len(core_recalls) >= 0.5, core_recalls


def test_a_broad_topic_lists_most_of_its_papers_not_the_top_few(listed):
    relevant = {name for name, grade in AUDIO["grades"].items() if grade == 2}
    found = relevant & set(listed[AUDIO["question"]])
    assert len(relevant) == 10 and len(found) >= 6, listed[AUDIO["question"]]


def test_topics_the_seeds_lack_mostly_get_no_answer(listed, cores):
    """No core: the answer lists nothing. A topic the near-miss rules know is absent lists
    nothing at all: a word no paper uses ("cryptocurrencies"), or an ML term no paper writes
    ("autonomous driving": two seeds write "autonomous" and "driving" apart; before session 38
    the gate doubted it and its two papers were folded; a doubted topic's fold:
    test_a_doubted_topic_answers_none_and_folds_what_it_found)."""
    absent = [q["question"] for q in QUESTIONS if not q["grades"]]
    silent = [q for q in absent if not cores[q]]
    assert len(silent) >= 3, {q: cores[q] for q in absent}
    assert not listed["Which papers study autonomous driving?"]
    assert not listed["Which papers are about trading cryptocurrencies or predicting their prices?"]


def test_a_list_is_ranked_by_the_calibrated_probability(seeded):
    results = _listed(seeded, AUDIO["question"])
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert all(LIST_MODEL.threshold <= s <= 1.0 for s in scores)


def test_search_without_the_cut_shows_what_the_decision_left_out(seeded):
    result = seeded("search", AUDIO["question"], "--no-cut", "-k", "20", "--json")
    ranked = json.loads(result.stdout)["results"]
    assert len(ranked) == 20
    kept = [r for r in ranked if r["score"] >= LIST_MODEL.threshold]
    assert [r["paper_id"] for r in kept] == [r["paper_id"] for r in _listed(seeded,
                                                                           AUDIO["question"])]


def test_a_summary_covers_the_papers_of_the_one_tier_list(seeded):
    from ragqa.retrieval.fitted import WHOLE_LIST_FLOOR

    listed_ids = {r["paper_id"] for r in _listed(seeded, "audio, speech or music")
                  if r["tier"] == "core" or r["score"] >= WHOLE_LIST_FLOOR}
    result = seeded("summarize", "audio, speech or music", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    covered = {p["paper_id"] for theme in summary["themes"] for p in theme["papers"]}
    assert len(listed_ids) >= 6 and listed_ids <= covered


# ---------------------------------------------------------------- question understanding

@pytest.mark.parametrize(("question", "topic"), [
    ("Which papers do full-duplex speech?", "full-duplex speech"),
    ("Which papers are about graph neural networks?", "graph neural networks"),
    ("What work is there on speech translation?", "speech translation"),
    ("Are there papers that study fairness of classifiers?", "fairness of classifiers"),
    ("Are there any papers on protein design?", "protein design"),
    ("I'm looking for papers that compress language models.", "compress language models"),
    ("Find papers about spiking neural networks", "spiking neural networks"),
    ("List the papers on machine translation.", "machine translation"),
    ("Please, can you list all the papers that study protein folding?", "protein folding"),
    ("Which papers study or reduce hallucination in summaries?",
     "reduce hallucination in summaries"),
    ("spiking neural networks", "spiking neural networks"),
    # a chat's turn to a new topic, and a word that only looks like a lead-in
    ("OK, separate question: papers that learn from point clouds?", "learn from point clouds"),
    ("now something else — which papers deal with heavy-tailed noise?", "heavy-tailed noise"),
    ("what's there about probabilistic numerics?", "probabilistic numerics"),
    ("image-to-image translation, what do you have?", "image-to-image translation"),
    ("So-called adversarial examples", "So-called adversarial examples"),
    # an acknowledgement and a clipped announcement before the topic; "next" as a topic word
    ("cool. different q - explainable recommendation?", "explainable recommendation"),
    ("thanks! now papers on video prediction", "video prediction"),
    ("next token prediction", "next token prediction"),
    ("great apes", "great apes"),
    ("Next-generation sequencing", "Next-generation sequencing"),
    ("new directions in continual learning", "new directions in continual learning"),
    ("Then papers on speech recognition", "speech recognition"),
    # session 34: an interjection, acknowledgements in a row, the papers asked for after the
    # topic (round 16's calibrate half); "well" before no mark is the topic's
    ("hmm ok, switching topics: NL interfaces for websites?", "NL interfaces for websites"),
    ("ok totally different: machine teaching", "machine teaching"),
    ("right, on another note: graph transformers?", "graph transformers"),
    ("cool thanks. different question - federated learning?", "federated learning"),
    ("NN weight quantization papers?", "NN weight quantization"),
    ("HMC papers pls", "HMC"),
    ("well-calibrated models?", "well-calibrated models"),
    # an interjection in lower case only: HMM is a hidden Markov model
    ("HMM for speech recognition", "HMM for speech recognition"),
])
def test_the_frame_of_a_request_is_not_its_topic(question, topic):
    assert strip_frame(question) == topic


@pytest.mark.parametrize(("question", "topic", "described"), [
    ("crowd counting papers? like estimating how many ppl are in an image", "crowd counting",
     ("estimating how many ppl are in an image",)),
    ("scaling up inference for DP mixture models? faster samplers, online VB, etc",
     "scaling up inference for DP mixture models", ("faster samplers", "online VB")),
    ("papers on reading text in natural scene images? scene text recognition, that kind of "
     "thing", "reading text in natural scene images", ("scene text recognition",)),
    # told after a dash, or after a comma in words that only gesture at examples (round 17's
    # calibrate half: both listed nothing)
    ("attack transactions on chain - DeFi hacks, bridge exploits etc",
     "attack transactions on chain", ("DeFi hacks", "bridge exploits")),
    ("ok and what about unsupervised node embeddings, deepwalk-ish stuff",
     "unsupervised node embeddings", ("deepwalk",)),
])
def test_a_short_topic_asked_then_told_more_of_is_described_by_what_follows(question, topic,
                                                                            described):
    """"crowd counting papers? like estimating how many ppl are in an image" was one topic: a
    gloss in the user's own words, which papers rarely write, can make it a near miss. What
    follows a short topic's question mark describes it, as examples do; a long question before
    the mark stays whole."""
    understood = understand(question)
    assert (understood.topic, understood.subqueries[1:]) == (topic, described)
    long = ("How can an observer infer an agent's goal from the actions it has been seen "
            "taking? Looking for goal or plan recognition work.")
    assert understand(long).topic.startswith("How can an observer infer")
    # a narrowing or thanks after the mark describes nothing: the text stays whole
    for whole in ("GAN papers? only theoretical ones", "protein folding? thanks",
                  "diffusion models? which ones are fastest", "GANs - only theoretical ones"):
        assert understand(whole).subqueries == (whole,)
    # BM25 reads the examples without their hedges: no paper writes "deepwalk-ish stuff"
    assert understand("node embeddings, deepwalk-ish stuff").lexical == "node embeddings, deepwalk"


def test_examples_are_sub_queries_and_the_topic_keeps_what_follows_them():
    question = ("Which papers are about training models with the data or computation spread "
                "over many machines or devices, e.g. cutting communication costs or tolerating "
                "faulty workers?")
    understood = understand(question)
    assert understood.topic == ("training models with the data or computation spread over many "
                                "machines or devices")
    assert understood.subqueries[1:] == ("cutting communication costs",
                                         "tolerating faulty workers")
    assert "workers" in understood.lexical and "Which" not in understood.lexical
    # An "e.g." in mid-sentence: what follows the example belongs to the topic.
    transfer = understand("I'm looking for papers where a model trained with labelled data in "
                          "one language, e.g. English, is applied to other languages.")
    assert transfer.topic == ("a model trained with labelled data in one language is applied "
                              "to other languages")
    assert transfer.subqueries[1:] == ("English",)


@pytest.mark.parametrize(("text", "expected"), [
    ("Which papers do full-duplex speech?", True),
    ("I'm looking for papers where models are applied to other languages.", True),
    ("What work is there on condensing long documents into summaries?", True),
    ("Find papers on simultaneous translation", True),
    ("spiking neural networks", True),
    ("What speedup does EGG achieve over PyTorch?", False),
    ("Autophagy declines in aged organisms.", False),
    ("Antibiotic induced alterations in the gut microbiome reduce resistance against "
     "Clostridium difficile", False),
    # "what about X?" points back only with a word that points at papers shown (REFERS,
    # ORDINAL): "that" in X's own clause does not, "#2" does
    ("what about ML that runs on tiny devices, like microcontrollers / IoT", True),
    ("what about #2?", False),
])
def test_list_questions_are_told_from_claims_and_fact_questions(text, expected):
    assert is_list_question(text) is expected


@pytest.mark.parametrize("question", ["the and of", "of the", "a b c"])
def test_a_question_of_stop_words_only_gets_an_answer_not_a_crash(seeded, question):
    result = seeded("search", question, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"] == []


def test_a_summary_request_sentence_summarizes_its_topic(seeded):
    result = seeded("summarize", "Summarize the papers on audio and speech.", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["topic"] == "audio and speech"
    assert summary["papers_considered"] >= 8


def test_no_paper_addresses_it_and_the_closest_are_shown_apart_uncited(seeded):
    question = "Which papers are about protein folding?"
    answer = json.loads(seeded("ask", question, "--json").stdout)
    assert answer["answer"].startswith("None of the 29 papers in this collection addresses")
    assert not answer["citations"] and not answer["papers"]
    assert len(answer["closest"]) == 3
    assert all({"paper_id", "title", "source"} <= set(c) for c in answer["closest"])
    text = seeded("ask", question).stdout
    assert "Closest matches (none of them addresses it; not cited)" in text
    assert "[1]" not in text
    cited = json.loads(seeded("ask", AUDIO["question"], "--json").stdout)
    assert cited["citations"] and cited["closest"] == []


@pytest.mark.parametrize("question", [
    "Which papers study protein structure design?",  # the molecule papers are near, not on it
    "Which papers are about trading cryptocurrencies or predicting their prices?",
])
def test_a_near_miss_names_a_subject_no_paper_mentions_and_lists_nothing(seeded, question):
    answer = json.loads(seeded("ask", question, "--json").stdout)
    assert answer["answer"].startswith("None of the 29 papers") and not answer["citations"]
    assert answer["closest"], "the nearest papers are still shown, apart"


def test_a_topic_in_the_papers_words_is_no_near_miss(seeded):
    """The same rule keeps a short topic whose words the papers use, even when the papers put
    them in another order or form ("GPU kernel generation", "molecular")."""
    for question, title in [("Which papers generate GPU kernels?", "EGG"),
                            ("Which papers work on molecules?", "CEITNet"),
                            ("Which papers are about machine translation?", "CULTURE-MT")]:
        assert title in [r["title"] for r in _listed(seeded, question)], question


NORMALIZING = [
    ("norm-1", "Layer normalization stabilizes the training of recurrent networks",
     "We normalize the summed inputs of each layer instead of each batch, so training does not "
     "depend on the batch size. Layer normalization speeds up the training of recurrent "
     "networks for language modelling and handwriting generation."),
    ("rank-1", "Ranking chess players from pairwise comparisons",
     "We fit a Bradley-Terry model to the outcomes of pairwise comparisons between chess "
     "players and bound the error of the ranking it gives as the number of games grows."),
]


def _lexical(home: Path):  # noqa: ANN202
    """The default collection's lexical index, as `ragqa ask` opens it."""
    from ragqa.app import open_for_query
    from ragqa.config import load_settings

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    return open_for_query(settings, "default").lexical


def _ingest(seeded, tmp_path: Path, papers: list[tuple[str, str, str]]) -> None:
    extra = tmp_path / "extra.jsonl"
    extra.write_text("".join(json.dumps({"id": pid, "title": title, "abstract": text}) + "\n"
                             for pid, title, text in papers))
    assert seeded("ingest", str(extra), "--quiet").exit_code == 0


def test_an_ml_term_no_paper_writes_is_a_near_miss_though_papers_use_its_words(seeded,
                                                                              tmp_path):
    """Round 18: "batch normalization" over papers that normalise and speak of batches, never
    of batch normalization, listed them. An ML term of several words (paper titles write it:
    ragqa/data/ml_phrases.tsv) that no paper writes in a row is a subject the collection
    lacks; a term the papers write ("layer normalization"), or whose words but its last they
    write ("Bradley-Terry models"), is listed."""
    _ingest(seeded, tmp_path, NORMALIZING)
    answer = json.loads(seeded("ask", "Which papers use batch normalization?", "--json").stdout)
    assert answer["answer"].startswith("None of the 31 papers") and not answer["citations"]
    assert "norm-1" in [p["paper_id"] for p in answer["closest"]]
    assert "norm-1" in [r["paper_id"] for r in _listed(seeded, "Which papers use layer "
                                                              "normalization?")]
    assert "rank-1" in [r["paper_id"] for r in _listed(
        seeded, "Bradley-Terry models for pairwise comparisons")]


def test_an_ml_term_written_as_its_abbreviation_is_no_near_miss(seeded, home, tmp_path):
    """A paper that writes "BN" alone holds batch normalization (ragqa/data/ml_acronyms.tsv)."""
    question = "Which papers use batch normalization?"
    _ingest(seeded, tmp_path, NORMALIZING)
    assert names_absent_subject(_lexical(home), question)
    _ingest(seeded, tmp_path, [("bn-1", "Regularizing deep networks without dropout",
                                "We show that BN layers alone regularize deep convolutional "
                                "networks: with BN, dropout lowers the accuracy of every "
                                "batch size we try on ImageNet.")])
    assert not names_absent_subject(_lexical(home), question)


def test_a_term_of_the_commonest_words_is_no_subject_a_collection_must_write(seeded, home):
    """No seed writes "deep learning" or "efficient algorithms", yet their speech papers are
    deep learning: a term made only of the words most titles write says how, not what
    (bench/glossary/title_phrases.py, COMMON_WORDS)."""
    index = _lexical(home)
    for question in ["deep learning for speech", "efficient algorithms for retrieval"]:
        assert not names_absent_subject(index, question), question


def test_a_one_letter_compound_written_joined_finds_the_papers_that_hyphenate_it(seeded, home,
                                                                                 tmp_path):
    """Round 18: "kmeans stuff" was a near miss over papers that write "k-means": the index
    keeps no one-letter word, so "k-means" is "means" there and "kmeans" no paper's word."""
    _ingest(seeded, tmp_path, [
        ("km-1", "Coresets for k-means clustering of streams",
         "We summarize a data stream by a small weighted coreset and run k-means on it, with "
         "guarantees on the clustering cost."),
        ("km-2", "Seeding k-means with fewer distance computations",
         "The k-means++ seeding needs a pass over the data per centre; we sample the centres "
         "from a Markov chain and cluster millions of points in seconds.")])
    index = _lexical(home)
    for question in ["kmeans stuff", "Which papers use kmeans?"]:
        assert "mean" in index.query_terms(question, extend=True), question
        assert not names_absent_subject(index, question), question
        listed = [r["paper_id"] for r in _listed(seeded, question)]
        assert {"km-1", "km-2"} <= set(listed[:2]), (question, listed)
    assert names_absent_subject(index, "Which papers use xmeans?")  # no paper writes x-means


def test_alternatives_set_apart_by_a_slash_are_each_a_part_of_the_topic(seeded):
    """Round 14: "circuit discovery / mech interp circuits papers" was one part, and "mech"
    and "interp", which no paper writes, made it a near miss: nothing listed. Each side of
    " / " is a part of its own, as each side of "or" is."""
    understood = understand("circuit discovery / mech interp circuits papers")
    assert "circuit discovery" in understood.subqueries
    listed = [r["title"] for r in _listed(seeded, "full-duplex speech / fdx papers")]
    assert "Moshi-RAG" in listed


def test_a_question_not_worded_as_a_list_is_decided_as_one_when_its_cut_keeps_nothing(seeded):
    """"what lets … ?" is read as no list question; the claims' cut kept no paper, and the
    answer said none of the papers addresses it, with Moshi-RAG among the closest matches. It
    is decided as a list too: here the gate doubts the topic, so its papers are folded."""
    question = "what lets a spoken dialogue model answer factual questions while it keeps talking"
    assert not is_list_question(question)
    answer = json.loads(seeded("ask", question, "--json").stdout)
    assert "is clearly about" in answer["answer"] and not answer["citations"]
    assert "Moshi-RAG" in [p["title"] for p in answer["papers"]]
    assert {p["tier"] for p in answer["papers"]} == {"tail"}


def test_a_topic_one_paper_states_is_listed(seeded, tmp_path):
    """The gate judges a topic by its best three papers; a topic one paper of the collection
    holds word for word is there all the same."""
    extra = tmp_path / "tomato.jsonl"
    extra.write_text(json.dumps({
        "id": "tomato-1", "title": "Greenhouse tomato irrigation with reinforcement learning",
        "abstract": "We study irrigation scheduling for greenhouse tomato crops. A reinforcement "
                    "learning agent decides when and how much to water each tomato plant from "
                    "soil moisture sensors, cutting water use by 30% while keeping yield."})
                     + "\n")
    assert seeded("ingest", str(extra), "--quiet").exit_code == 0
    for question in ["tomato", "Which papers study tomato irrigation?",
                     "greenhouse tomato irrigation"]:
        assert [r["paper_id"] for r in _listed(seeded, question)] == ["tomato-1"], question


@pytest.mark.parametrize(("question", "topic"), [
    # issue 45: what the papers do is the topic; a request to the tool is not
    ("Which papers summarize dialogues or meetings?", "summarize dialogues or meetings"),
    ("papers that summarize dialogues", "summarize dialogues"),
    ("Which papers survey graph neural networks?", "survey graph neural networks"),
    ("Which papers detect watermarks in generated text?", "detect watermarks in generated text"),
    ("Which papers compress the KV cache?", "compress the KV cache"),
    ("Summarize the papers on audio", "audio"),
    ("Give me an overview of papers on federated learning", "federated learning"),
    # a request of the survey kind is a frame with its "of" (a blind list set's wording)
    ("review of AI solutions for road congestion", "AI solutions for road congestion"),
    ("Survey of review helpfulness prediction", "review helpfulness prediction"),
    # any word for the papers names them ("methods", "approaches" too): the verb is theirs
    ("methods that summarize meeting transcripts", "summarize meeting transcripts"),
])
def test_a_list_topic_keeps_what_the_papers_do(question, topic):
    from ragqa.retrieval.question import topic_of

    assert topic_of(question) == topic


CODE_MIXING = [
    ("mix-1", "Sentiment analysis of code-mixed Hindi-English tweets",
     "Bilingual speakers often code-mix on social media. We release a corpus of 12,000 "
     "code-mixed Hindi-English tweets labelled for sentiment and show that multilingual "
     "transformers fine-tuned on it outperform monolingual baselines."),
    ("mix-2", "Code-mixing as data augmentation for multilingual named entity recognition",
     "We generate synthetic code-mixed sentences by replacing entity mentions and phrases with "
     "their translations, and show that code-mixing improves cross-lingual entity recognition "
     "in low-resource languages."),
]
SOURCE_CODE = [
    ("code-1", "Neural code search with contrastive pretraining",
     "We pretrain a transformer on pairs of source code functions and their documentation, and "
     "retrieve code snippets for natural-language queries. The model mixes token and syntax "
     "tree features and improves code search on six programming languages."),
    ("code-2", "Learning to repair bugs in Python code",
     "We train a sequence-to-sequence model that edits buggy Python code into fixed code, "
     "mixing real commits with synthetic bugs, and fix 40% of the bugs of a new benchmark."),
    ("code-3", "Summarizing source code with graph neural networks",
     "Code summarization writes a natural-language description of a function. We encode the "
     "abstract syntax tree and the data flow of the code with a graph network that mixes "
     "local and global context."),
]


def test_a_hyphenated_compound_that_is_the_topic_is_read_as_one_term(seeded, tmp_path):
    """issue 45: "code-mixing" asked alone lists the papers that write "code-mixing", not
    every paper about source code (which holds "code", and here "mix" too); a question that
    describes its topic keeps the words apart (the rest of it gives their sense)."""
    extra = tmp_path / "code.jsonl"
    extra.write_text("".join(json.dumps({"id": pid, "title": title, "abstract": text}) + "\n"
                             for pid, title, text in CODE_MIXING + SOURCE_CODE))
    assert seeded("ingest", str(extra), "--quiet").exit_code == 0
    for question in ["code-mixing", "papers on code-mixing", "code-mixed text"]:
        core = {r["paper_id"] for r in _listed(seeded, question) if r["tier"] == "core"}
        assert core == {"mix-1", "mix-2"}, question
    described = ("Which papers apply neural networks to source code, such as code-related "
                 "search, repair or summarization?")
    listed_ids = {r["paper_id"] for r in _listed(seeded, described)}
    assert {"code-1", "code-2", "code-3"} <= listed_ids


def test_a_doubted_topic_answers_none_and_folds_what_it_found(seeded):
    """The gate doubts the topic is in the seeds: no paper is the answer, the papers the model
    still ranks above the tail's floor are folded below that (issue 45: a doubted topic keeps
    its recall in the tail), `--all` lists and cites them."""
    question = DOUBTED
    answer = json.loads(seeded("ask", question, "--json").stdout)
    tail = answer["papers"]
    assert tail and all(p["tier"] == "tail" for p in tail)
    assert answer["answer"] == (f"None of the 29 papers in this collection is clearly about "
                                f"“{DOUBTED_TOPIC}”; {len(tail)} may address it, less "
                                f"certainly (folded):")
    assert not answer["citations"] and answer["closest"] == []
    text = " ".join(seeded("ask", question).stdout.split())
    assert f"is clearly about “{DOUBTED_TOPIC}”" in text and "ragqa ask --all lists them." in text
    assert "[1]" not in text
    unfolded = json.loads(seeded("ask", question, "--all", "--json").stdout)
    assert [c["paper_id"] for c in unfolded["citations"]] == [p["paper_id"] for p in tail]
    assert f"Less certain, {len(tail)} paper" in unfolded["answer"]
    # the one-tier list (summaries, trends, a map's highlight) has no paper of it
    summary = json.loads(seeded("summarize", DOUBTED_TOPIC, "--json").stdout)
    assert summary["papers_considered"] == 0 and summary["references"] == []


@pytest.mark.parametrize(("question", "topic", "excluded"), [
    # issue 45: what a question says it does not want is not searched, and folds its papers
    ("Find work on dataset condensation — not teacher-student knowledge distillation.",
     "dataset condensation", ("teacher-student knowledge distillation",)),
    ("Reading comprehension models? Visual question answering is not what I'm after.",
     "Reading comprehension models", ("Visual question answering",)),
    ("Which papers study backdoor attacks? I don't mean backdoor adjustment in causal "
     "inference.", "backdoor attacks", ("backdoor adjustment in causal inference",)),
    ("papers on attacking NLP models rather than defending them", "attacking NLP models",
     ("defending them",)),
    ("Emergent communication in games. Channel codes don't count.",
     "Emergent communication in games", ("Channel codes",)),
    ("Machine translation. Not program translation or image-to-image mapping.",
     "Machine translation",
     ("program translation or image-to-image mapping", "program translation",
      "image-to-image mapping")),
    # a "not" inside a clause, or "not only/just", excludes nothing
    ("Which papers automatically produce keyphrases, including phrases that do not appear "
     "in the document?", "automatically produce keyphrases", ()),
    ("classifiers constrained so they do not disadvantage protected groups",
     "classifiers constrained so they do not disadvantage protected groups", ()),
    ("speech models, not only for ASR", "speech models, not only for ASR", ()),
    # a bracket holds its exclusion; "e.g." and "et al." end no sentence
    ("reading comprehension models (not VQA) for medicine?",
     "reading comprehension models for medicine", ("VQA",)),
    ("Which papers do question answering? Not dialogue (e.g. chit-chat) as in Li et al. here.",
     "question answering", ("dialogue (e.g. chit-chat) as in Li et al. here",)),
    # an exclusion ends where the question turns back to what it asks, or at a closing dash
    ("Which papers study model compression - not pruning, but distillation or quantization?",
     "model compression, distillation or quantization", ("pruning",)),
    ("Which papers — not surveys — study diffusion models for audio?",
     "diffusion models for audio", ("surveys",)),
    # no exclusion: an adverb, a verb, a first sentence, a request's politeness
    ("Which papers find that, not surprisingly, larger models memorize more?",
     "not surprisingly, larger models memorize more", ()),
    ("Which papers explain why language models don't count letters correctly?",
     "explain why language models don't count letters correctly", ()),
    ("Which papers propose methods for excluding outliers from training data?",
     "for excluding outliers from training data", ()),
    ("Which papers use languages other than English?", "use languages other than English", ()),
    ("I don't mean to be picky, but which papers study speech synthesis?",
     "I don't mean to be picky, but which papers study speech synthesis", ()),
    # nothing of its own left: no exclusion read
    ("Never mind, papers on graph pruning?", "Never mind, papers on graph pruning", ()),
    ("Not transformers.", "Not transformers", ()),
])
def test_what_a_question_does_not_want_is_apart_from_its_topic(question, topic, excluded):
    from ragqa.retrieval.question import understand

    understood = understand(question)
    assert (understood.topic, understood.excluded) == (topic, excluded)
    for part in excluded:
        assert part not in understood.lexical


def test_papers_of_the_sense_a_question_excludes_leave_its_answer(seeded, tmp_path):
    """issue 45: "code … I don't mean code-mixing" — the code-mixing papers the words "code"
    and "mix" bring are nearer what the question excludes than what it asks: not the answer."""
    extra = tmp_path / "code.jsonl"
    extra.write_text("".join(json.dumps({"id": pid, "title": title, "abstract": text}) + "\n"
                             for pid, title, text in CODE_MIXING + SOURCE_CODE))
    assert seeded("ingest", str(extra), "--quiet").exit_code == 0
    asked = "Which papers mix code and text, e.g. learning from code and its documentation"
    mixing = {"mix-1", "mix-2"}
    before = {r["paper_id"] for r in _listed(seeded, asked + "?") if r["tier"] == "core"}
    assert before & mixing  # without the exclusion, the other sense is in the answer
    listed = _listed(seeded, asked + ", not code-mixing of two human languages?")
    core = {r["paper_id"] for r in listed if r["tier"] == "core"}
    assert core and not core & mixing
    assert {"code-1", "code-2", "code-3"} & core
    # nor are they in a summary of it (the one-tier list: trends and a map's highlight too)
    summary = json.loads(seeded("summarize", "mix code and text, not code-mixing of two "
                                "human languages", "--json").stdout)
    assert summary["references"] and not {r["paper_id"] for r in summary["references"]} & mixing


def _hits(tiers: list[tuple[float, str]]):
    from ragqa.retrieval.types import Hit

    return [Hit(i, 0.0, 0.0, 0.0, probability=p, tier=tier) for i, (p, tier) in enumerate(tiers)]


def test_a_folded_list_keeps_its_core_first_and_a_doubt_when_its_core_went():
    """decide.fold_excluded on the hits the retriever read (issue 45): a folded core paper goes
    to the tail, marked excluded (no one-tier list takes it); the core stays first. When every
    core paper went, the best left is the answer only from the core's floor."""
    from ragqa.retrieval.decide import fold_excluded
    from ragqa.retrieval.fitted import whole_list

    hits = fold_excluded(_hits([(0.999, "core"), (0.998, "core"), (0.9, "tail")]),
                         [True, False, False], core_floor=0.995)
    assert [(h.index, h.tier, h.excluded) for h in hits] == [
        (1, "core", False), (0, "tail", True), (2, "tail", False)]
    assert [h.index for h in whole_list(hits)] == [1]
    promoted = fold_excluded(_hits([(0.999, "core"), (0.996, "tail")]), [True, False], 0.995)
    assert [(h.index, h.tier, h.doubted) for h in promoted] == [(1, "core", False),
                                                             (0, "tail", False)]
    doubted = fold_excluded(_hits([(0.999, "core"), (0.6, "tail")]), [True, False], 0.995)
    assert all(h.tier == "tail" and h.doubted for h in doubted)
    assert whole_list(doubted) == []
    one_tier = fold_excluded(_hits([(0.9, "core"), (0.8, "core")]), [False, True], None)
    assert [h.index for h in one_tier] == [0]


# Signals of core papers of one judged question (iclr2018 "i18-09", as `ragqa search` listed
# it in session 29): its best paper, one judged relevant, one judged not.
_BEST = {"z": 4.79, "z_best": 5.77, "z_feedback": 3.85, "coverage": 0.6, "bm25_share": 0.4,
         "bm25_expanded": 0.47, "z_relative": -0.38, "z_feedback_relative": -0.13,
         "bm25_expanded_relative": 0.08}
_ALSO = {"z": 5.14, "z_best": 5.14, "z_feedback": 4.41, "coverage": 0.45, "bm25_share": 0.31,
         "bm25_expanded": 0.43, "z_relative": -0.03, "z_feedback_relative": 0.43,
         "bm25_expanded_relative": 0.04}
_NEIGHBOUR = {"z": 3.73, "z_best": 3.73, "z_feedback": 3.52, "coverage": 0.27,
              "bm25_share": 0.16, "bm25_expanded": 0.28, "z_relative": -1.43,
              "z_feedback_relative": -0.46, "bm25_expanded_relative": -0.11}


def test_the_cores_second_look_folds_a_neighbour_to_the_top_of_the_tail():
    """decide.recut_core with the shipped model (issue 45): a core paper the second look
    doubts goes to the top of the tail, still in the one-tier list (summaries and trends read
    it by its probability); the best paper stays whatever its signals; a list model without
    a second look keeps its core."""
    from ragqa.retrieval.decide import recut_core
    from ragqa.retrieval.fitted import LIST_MODEL, whole_list
    from ragqa.retrieval.types import Hit

    def hit(index, p, tier, signals):  # noqa: ANN001, ANN202
        return Hit(index, 0.0, 0.0, 0.0, probability=p, tier=tier, signals=dict(signals))

    model = LIST_MODEL.core_model
    assert model is not None
    listed = recut_core([hit(0, 1.0, "core", _BEST), hit(1, 0.99999, "core", _ALSO),
                         hit(2, 0.9999, "core", _NEIGHBOUR), hit(3, 0.9, "tail", _NEIGHBOUR)],
                        model)
    assert [(h.index, h.tier) for h in listed] == [(0, "core"), (1, "core"), (2, "tail"),
                                                   (3, "tail")]
    assert [h.index for h in whole_list(listed)] == [0, 1, 2]
    far = {**_NEIGHBOUR, "z": 3.38, "z_best": 3.38, "z_feedback": 2.65, "z_relative": -1.79,
           "z_feedback_relative": -1.33}
    first = [hit(0, 1.0, "core", far), hit(1, 1.0, "core", _BEST)]
    assert model.probabilities(first)[0] < model.threshold
    first = recut_core(first, model)
    assert [(h.index, h.tier) for h in first] == [(0, "core"), (1, "core")]
    alone = [hit(0, 1.0, "core", _NEIGHBOUR)]
    assert recut_core(alone, model) == alone


def test_two_searches_merged_keep_a_core_paper_core_and_the_core_first():
    """retriever.merge_results (a question's multilingual search and its translation's): a
    paper core in one search and folded in the other is core, and every core paper comes
    before the tail whatever the two models' probabilities."""
    from ragqa.retrieval.retriever import merge_results
    from ragqa.retrieval.types import Hit, SearchResult
    from ragqa.sources.paper import Paper

    def hit(pid, p, tier):  # noqa: ANN001, ANN202
        return Hit(0, p, 0.0, 0.0, probability=p, tier=tier, paper=Paper(pid, pid, "", "f#1"))

    multilingual = SearchResult("q", [hit("a", 0.93, "core"), hit("b", 0.91, "core")], 10)
    translated = SearchResult("q", [hit("c", 0.999, "core"), hit("a", 0.9999, "tail"),
                                    hit("d", 0.98, "tail")], 10)
    merged = merge_results(multilingual, translated, None)
    assert [(h.paper.paper_id, h.tier) for h in merged.hits] == [
        ("c", "core"), ("a", "core"), ("b", "core"), ("d", "tail")]
