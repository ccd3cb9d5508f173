"""Follow-ups and near misses in a user's own phrasing, offline (issue 31): a "which one"
selection by a property that papers elsewhere in the collection share, an ordinal, a switch of
topic worded like a follow-up, and a named tool no paper uses next to words many papers use;
since session 20, a new topic announced after a list, released code and new datasets, many of a
thing, and list requests worded as users type them. The papers below are written for these
tests and join the bundled seeds (29 ICML 2026 abstracts: audio, speech, spiking networks,
molecules) in one collection."""

from __future__ import annotations

import json

import pytest

PAPERS = [
    {"id": "spk-audio", "title": "Spiking neural networks for keyword spotting on microphones",
     "abstract": "Spiking neural networks promise low-power inference on always-on devices. We "
     "train a spiking neural network with surrogate gradients to detect spoken keywords from "
     "raw microphone audio. We evaluate it on the Speech Commands audio benchmark, where the "
     "spiking network reaches 94.1% accuracy while using ten times less energy than a recurrent "
     "network."},
    {"id": "spk-vision", "title": "An event-driven spiking transformer for image classification",
     "abstract": "We present an event-driven spiking transformer in which spiking neurons replace "
     "the softmax of self-attention. Trained directly with surrogate gradients, the spiking "
     "neural network classifies images on ImageNet and CIFAR-10 with 78.2% top-1 accuracy at "
     "four time steps."},
    {"id": "prot-diffusion", "title": "Diffusion models for protein backbone generation",
     "abstract": "We generate protein backbones with a diffusion model over residue frames. "
     "Generated structures are designable and diverse, and the model predicts protein "
     "structures that fold as designed in silico."},
    {"id": "prot-foldnet", "title": "Faster protein structure prediction with FoldNet features",
     "abstract": "Protein structure prediction from sequence remains costly. We distil the "
     "features of FoldNet, a structure predictor, into a small network that predicts protein "
     "structures three times faster at a similar accuracy."},
    {"id": "grasp-rl", "title": "Learning to grasp unseen objects from trial and error",
     "abstract": "We learn robotic grasping policies with deep reinforcement learning from "
     "camera images, rewarding the robot arm for every object it lifts. After 600 hours of "
     "self-supervised trials, the policy grasps unseen household objects in 86% of attempts."},
    {"id": "grasp-cnn", "title": "Grasp pose detection in cluttered bins",
     "abstract": "We detect robot grasp poses in cluttered bins with a convolutional neural "
     "network pre-trained on ImageNet and fine-tuned on 10,000 labelled grasps. The detector "
     "lets a robot arm grasp objects from a bin with a 93% success rate."},
    {"id": "sign-bench", "title": "Continuous sign language recognition in the wild",
     "abstract": "We collect 3,000 videos of continuous signing by 20 deaf signers with gloss "
     "annotations and release them as a public benchmark for sign language recognition. A "
     "pose-based baseline reaches a word error rate of 31.2%."},
    {"id": "sign-translate", "title": "Translating sign language with pose transformers",
     "abstract": "We translate sign language videos into spoken-language sentences with a "
     "transformer over estimated body poses, trained end to end without gloss annotations. "
     "It improves BLEU by 2.1 points over a gloss-based pipeline."},
    {"id": "grid-load", "title": "Forecasting electricity demand",
     "abstract": "We forecast the hourly electricity demand of a national grid with a temporal "
     "convolution network. On three years of smart-meter data it lowers the mean absolute "
     "percentage error by 9%."},
    {"id": "tab-code", "title": "Contrastive codes for anomalies in tabular data",
     "abstract": "We detect anomalies in tabular data by contrasting the learned codes of masked "
     "columns, as SimCSE does for sentences. On the ODDS benchmark datasets it improves AUROC "
     "by 3 points over isolation forests. Our code is available at "
     "https://github.com/example/tabcodes."},
    {"id": "tab-corpus", "title": "How well do deep detectors find anomalies in tables?",
     "abstract": "We construct a new collection of 60 real tabular datasets with labelled "
     "anomalies from finance and healthcare and release it as a public benchmark for anomaly "
     "detection. Deep detectors rarely beat isolation forests on it."},
    {"id": "tab-theory", "title": "When do anomaly detectors for tabular data generalize?",
     "abstract": "We bound the error of anomaly detectors for tabular data trained on "
     "contaminated samples, coding categorical columns as one-hot vectors, and confirm the "
     "bound on twelve benchmark datasets."},
    {"id": "grid-faults", "title": "Locating line faults in electricity grids",
     "abstract": "We locate line faults in electricity grids from phasor measurement units with a "
     "graph neural network trained on simulated outages."},
]


@pytest.fixture
def chat(seeded, tmp_path):
    path = tmp_path / "extra.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PAPERS))
    result = seeded("ingest", str(path), "--quiet")
    assert result.exit_code == 0, result.output

    def run(*turns: str) -> list[dict]:
        result = seeded("chat", "--json", input="\n".join(turns) + "\n")
        assert result.exit_code == 0, result.output
        return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return run


def _ids(turn: dict) -> list[str]:
    return [c["paper_id"] for c in turn["citations"]]


def _titles(turn: dict) -> set[str]:
    return {c["title"] for c in turn["citations"]}


def test_which_one_selects_by_property_among_the_last_papers(chat):
    """"Which one evaluates on audio?" picks the spiking papers that do (this one and the
    seeds' DiceFormer), not the collection's other audio papers nor the spiking one on
    images."""
    listed, chosen = chat("Which papers train spiking neural networks?",
                          "Which one evaluates on audio?")
    assert {"spk-audio", "spk-vision"} <= set(_ids(listed))
    assert "spk-audio" in _ids(chosen) and "spk-vision" not in _ids(chosen)
    assert set(_ids(chosen)) <= set(_ids(listed))
    assert _titles(chosen) == {PAPERS[0]["title"], "DiceFormer"}


def test_a_fact_about_the_one_selected(chat):
    _, chosen, fact = chat("Which papers train spiking neural networks?",
                           "Which of them detects spoken keywords?", "What is its accuracy?")
    assert _ids(chosen) == ["spk-audio"]
    assert _ids(fact)[0] == "spk-audio" and "94.1%" in fact["citations"][0]["quote"]


@pytest.mark.parametrize("ordinal", ["What does the second one do?", "and the 2nd one",
                                     "second one of those"])
def test_an_ordinal_reads_that_paper_of_the_last_answer(chat, ordinal):
    listed, second = chat("Which papers train spiking neural networks?", ordinal)
    assert len(_ids(listed)) >= 2
    assert _ids(second) == [_ids(listed)[1]]


def test_a_place_beyond_the_last_list_says_so_and_the_list_stays(chat):
    """"the fifth one" after a shorter list: the answer says how many there were, cites no
    paper (before, it answered about the first), and the next place still reads that list."""
    listed, beyond, second = chat("Which papers train spiking neural networks?",
                                  "5th one in more detail please", "and the 2nd one")
    count = len(_ids(listed))
    assert 2 <= count < 5
    assert beyond["citations"] == []
    assert f"listed {count} papers: it has no paper 5" in " ".join(beyond["answer"].split())
    assert _ids(second) == [_ids(listed)[1]]


def test_a_switch_of_topic_worded_as_a_follow_up_leaves_the_last_papers(chat):
    listed, switched = chat("Which papers train spiking neural networks?",
                            "Now, anything on protein structure prediction?")
    assert {"prot-diffusion", "prot-foldnet"} <= set(_ids(switched))
    assert not set(_ids(switched)) & set(_ids(listed))


@pytest.mark.parametrize(("select", "second", "switch"), [
    ("Welches davon wertet auf Audio aus?", "und das zweite Paper?",
     "Gibt es auch Arbeiten zur Proteinstrukturvorhersage?"),
    ("¿Cuál de ellos se evalúa con audio?", "¿y el segundo?",
     "¿Hay artículos sobre predicción de estructuras de proteínas?"),
])
def test_a_follow_up_in_another_language_is_read_as_an_english_one_is(chat, select, second,
                                                                      switch):
    """Issue 46: a turn in another language is read by the multilingual follow-up model (before
    session 33 the selections and places left the spiking papers for a new search): a
    selection among them, a place in their list, a switch of topic. (The model misreads some:
    "Und was ist mit Proteinstrukturvorhersage?" selects; docs/benchmarks.md has its figures.)"""
    listed, chosen = chat("Which papers train spiking neural networks?", select)
    assert chosen["language"] != "English"
    assert "spk-audio" in _ids(chosen) and "spk-vision" not in _ids(chosen)
    assert set(_ids(chosen)) <= set(_ids(listed))
    listed, placed = chat("Which papers train spiking neural networks?", second)
    assert _ids(placed) == [_ids(listed)[1]]
    # A new topic is searched over the whole collection, not among the papers (how well it is
    # found depends on the multilingual list decision: docs/multilingual.md).
    listed, switched = chat("Which papers train spiking neural networks?", switch)
    assert not set(_ids(switched)) & set(_ids(listed))
    assert "papers it refers to" not in " ".join(switched["answer"].split())


def test_a_place_beyond_a_list_of_one_says_so_in_the_singular(chat):
    """"The last answer listed 1 papers" read as a slip: one paper is "1 paper"."""
    listed, beyond = chat("Which papers forecast electricity demand?", "the third one?")
    assert len(_ids(listed)) == 1 and beyond["citations"] == []
    assert "listed 1 paper: it has no paper 3" in " ".join(beyond["answer"].split())


def test_a_place_beyond_the_list_in_another_language_says_so(chat):
    """"第五篇呢？" or "¿y el quinto?" after a shorter list: no paper 5, as in English."""
    for turn, said in (("第五篇呢？", "没有第 5 篇"),
                       ("¿Y qué hace el quinto artículo?", "it has no paper 5")):
        listed, beyond = chat("Which papers train spiking neural networks?", turn)
        count = len(_ids(listed))
        assert 2 <= count < 5 and beyond["citations"] == []
        assert said in " ".join(beyond["answer"].split()), beyond["answer"]


def test_a_named_tool_no_paper_uses_gets_no_list(seeded, chat):
    """The tool is named by no paper; "predict protein structures" by two (and the seeds'
    molecule papers are close): "none", with the closest shown apart. A tool a paper names is
    answered."""
    for tool in ("AlphaFold", "deepFold", "Fold Net"):  # as users write names
        missing = json.loads(seeded("ask", f"Which papers use {tool} to predict protein "
                                    "structures?", "--json").stdout)
        assert missing["citations"] == [], tool
    for asked in ("Which papers use FoldNet to predict protein structures?",
                  "Which papers use AlphaFold or FoldNet features?",
                  "Which papers use FoldNet-style features to predict protein structures?"):
        found = json.loads(seeded("ask", asked, "--json").stdout)
        assert "prot-foldnet" in _ids(found), asked  # of alternatives, one is enough


def test_an_everyday_subject_no_paper_holds_gets_no_list(seeded, chat):
    """"Vaccine" is in no paper; folding and designing proteins are (two fixture papers, close
    in meaning): a topic of a few words with a word no paper uses is a near miss, not a list of
    the neighbours. With that word a paper uses, the neighbours are the list."""
    missing = json.loads(seeded("ask", "Which papers design protein structures for vaccine "
                                "candidates?", "--json").stdout)
    assert missing["citations"] == []
    assert {"prot-diffusion", "prot-foldnet"} & {p["paper_id"] for p in missing["closest"]}
    present = json.loads(seeded("ask", "Which papers design protein structures for "
                                "diffusion candidates?", "--json").stdout)
    assert "prot-diffusion" in _ids(present)


def test_a_typo_is_read_as_the_word_the_papers_write(seeded, chat, home):
    """Round 16: "hierarchical clustering algoritms" and "tensor netowrk (MPS) models" listed
    nothing, a word no paper uses making each a near miss. A word one slip of the fingers from
    a word the papers write is that word; not an English word of its own ("spine" is no typo of
    "spike"), nor a name ("Spiek", with its capital), nor a slip of the first letter."""
    from ragqa.index import lexical

    found = json.loads(seeded("ask", "Which papers do protien structure prediction?",
                              "--json").stdout)
    assert "prot-foldnet" in _ids(found)
    index = lexical.open_current(home / "indexes" / "local" / "default")
    try:
        def read(word: str) -> list[str]:
            return index.forms(lexical.terms(word)[0], lexical.Written.of(word))

        assert read("spiek") == ["spike"]  # two letters swapped
        assert read("spine") == ["spine"]
        assert read("Spiek") == ["spiek"]
        assert read("xspike") == ["xspike"]
        assert read("spiek" * 6) == ["spiek" * 6]  # no word is that long
        # an abbreviation in capitals, or in any case when it is no English word
        assert read("TCN") == read("tcn") == ["tempor convolut network"]
    finally:
        index.close()


def test_an_abbreviation_no_paper_writes_is_read_as_its_long_form(seeded, chat):
    """Round 16: "HMC or langevin-type samplers" and "persistent homology / TDA" listed nothing:
    the name no paper writes made each a near miss, though papers write "Hamiltonian Monte
    Carlo" and "topological data analysis". An abbreviation (data/ml_acronyms.tsv) is also its
    long form where papers write that: no near miss (the paper is listed, folded or not)."""
    found = json.loads(seeded("ask", "Which papers use TCNs?", "--json").stdout)
    assert "grid-load" in [p["paper_id"] for p in found["papers"]]
    missing = json.loads(seeded("ask", "Which papers use QMIX?", "--json").stdout)
    assert missing["papers"] == []


def test_a_name_that_only_shares_a_stem_with_the_papers_gets_no_list(seeded, chat):
    """"Foldly" stems to "fold", which the protein papers hold, but no paper writes the name:
    the name is absent, as "Grammarly" is from grammar papers. "FoldNet's" is written."""
    missing = json.loads(seeded("ask", "Which papers use Foldly to predict protein structures?",
                                "--json").stdout)
    assert missing["citations"] == []
    found = json.loads(seeded("ask", "Which papers use FoldNet's features to predict protein "
                              "structures?", "--json").stdout)
    assert "prot-foldnet" in _ids(found)


def test_function_words_are_not_topic_words(seeded, chat):
    """"From" names no subject: "predicting protein structures from vaccine trial records" is
    a topic of six words, one of which ("vaccine") no paper uses, so a near miss."""
    missing = json.loads(seeded("ask", "Which papers predict protein structures from vaccine "
                                "trial records?", "--json").stdout)
    assert missing["citations"] == []


@pytest.mark.parametrize("switch", ["what about protein structure prediction?",
                                    "OK, separate question: papers that predict protein "
                                    "structures?",
                                    "now something else — which papers predict protein "
                                    "structures?",
                                    "btw, what's there on protein structure prediction",
                                    "unrelated, but is there anything on protein structure "
                                    "prediction?",
                                    "OK, different question: which of the papers predict "
                                    "protein structures?",
                                    "cool. different q - protein structure prediction?"])
def test_a_new_topic_put_as_what_about_gets_a_list(chat, switch):
    """"What about X?" after a list asks for the papers on X, all of them; a chat's lead-in
    ("OK, separate question:") is neither the topic nor a name that no paper uses."""
    listed, switched = chat("Which papers train spiking neural networks?", switch)
    assert {"prot-diffusion", "prot-foldnet"} <= set(_ids(switched))
    assert not set(_ids(switched)) & set(_ids(listed))


@pytest.mark.parametrize(("selection", "expected"), [
    ("which one is RL-based", "grasp-rl"),  # "reinforcement learning" in the abstract
    ("does either of them use a CNN?", "grasp-cnn"),  # "convolutional neural network"
    ("the one with pretraining?", "grasp-cnn"),  # "pre-trained"
    ("which of them works from camera images or photos", "grasp-rl"),  # one alternative held
    ("the RL one?", "grasp-rl"),
    ("which uses a CNN", "grasp-cnn"),
    ("any with ImageNet pretraining?", "grasp-cnn"),
    ("do either of them learn by trial and error, or is it all supervised?", "grasp-rl"),
    ("any pre-trained on ImageNet?", "grasp-cnn"),
    ("going back to those two, which of them uses a CNN?", "grasp-cnn"),
])
def test_a_selection_in_the_users_words(chat, selection, expected):
    """A property worded as users write it (an abbreviation, a compound without its hyphen,
    alternatives) picks the paper that states it, and not the other of the two."""
    listed, chosen = chat("Which papers learn robot grasping?", selection)
    assert {"grasp-rl", "grasp-cnn"} <= set(_ids(listed))
    assert _ids(chosen) == [expected]


@pytest.mark.parametrize(("selection", "expected"), [
    ("which one comes with a new dataset?", "sign-bench"),  # "a public benchmark"
    ("the ones that actually do translation?", "sign-translate"),
])
def test_a_property_in_other_words_than_the_abstracts(chat, selection, expected):
    """A property users select by, put in other words than the abstract's (property_words.tsv:
    a dataset is also a corpus or a benchmark), and words that say nothing of it
    ("actually")."""
    listed, chosen = chat("Which papers work on sign language?", selection)
    assert {"sign-bench", "sign-translate"} <= set(_ids(listed))
    assert _ids(chosen) == [expected]


MOLECULES = ("Message passing on molecular graphs",
             "We estimate the solubility and toxicity of drug-like molecules from their atom-bond "
             "graphs with a message passing network. On MoleculeNet it lowers the error of the "
             "best baseline by 12%.")
PROFILES = ("Sampling neighbours for user profiling",
            "We design a neighbour sampling scheme that helps graph neural networks predict user "
            "properties such as age and interests in large social networks. The model scales to "
            "a graph of 40 million users.")


def test_the_reader_overrides_a_word_held_in_another_sense():
    """"Predicts whether a substance is poisonous": only the profiling paper writes a word of
    it ("predict"), the molecules paper none, yet it is the one meant; the real cross-encoder,
    reading each paper's sentences against the turn, finds it clearly closer (READER_MARGIN)
    and the selection is that paper, as held (worded)."""
    from ragqa.answering.followups import selected
    from ragqa.models.rerank import cross_encoder

    read = cross_encoder().score
    chosen = selected("which one predicts whether a substance is poisonous?",
                      [MOLECULES, PROFILES], None, read)
    assert chosen.picks == [0] and chosen.worded
    assert selected("which one predicts whether a substance is poisonous?",
                    [MOLECULES, PROFILES], None, None).picks == [1]  # the words alone


def test_a_property_no_paper_words_shows_the_closest_and_says_so(chat):
    """No listed paper writes "predicts power consumption": the answer says so, then shows the
    one the reader finds holding it (demand forecasting, above READER_FLOOR), not every paper
    listed."""
    listed, chosen = chat("Which papers work on electricity grids?",
                          "which one predicts power consumption?")
    assert {"grid-load", "grid-faults"} <= set(_ids(listed))
    assert _ids(chosen) == ["grid-load"]
    assert chosen["answer"].startswith("None of the papers it refers to writes "
                                       "“predicts power consumption” in those words")


def test_a_property_no_paper_holds_in_any_words_is_none():
    """Neither grid paper holds "diffusion", in its words or as the reader reads it (below
    READER_FLOOR): no closest paper, none; "power consumption" the reader finds in one."""
    from ragqa.answering.followups import selected
    from ragqa.models.rerank import cross_encoder

    grid = [(p["title"], p["abstract"]) for p in PAPERS if p["id"].startswith("grid-")]
    read = cross_encoder().score
    assert selected("which one uses diffusion?", grid, None, read).picks == []
    closest = selected("which one predicts power consumption?", grid, None, read)
    assert closest.picks == [0] and not closest.worded


def test_the_reader_reads_the_property_alone():
    """The reader is asked for the property without the words that select or point back ("and
    the gaussian process one?" -> "gaussian process"): "one", "of" or "and" left in the query
    read every sentence as further from it (bench/reading/select_eval.py, the cross-doc and FP4
    turns)."""
    from ragqa.answering.followups import selected
    from ragqa.models.rerank import cross_encoder

    asked = []

    def read(query, texts):
        asked.append(query)
        return cross_encoder().score(query, texts)

    grid = [(p["title"], p["abstract"]) for p in PAPERS if p["id"].startswith("grid-")]
    for turn, alone in (("and the gaussian process one?", "gaussian process"),
                        ("Is any of these also evaluated on summarization?",
                         "evaluated on summarization"),
                        ("which one is the FP4 one", "FP4")):
        asked.clear()
        selected(turn, grid, None, read)
        assert set(asked) == {alone}, turn


def test_every_paper_that_holds_the_property_alike_is_picked():
    """"Which of them test on MNIST?": the two papers that write it, though the reader prefers
    one (within READER_TIE of it); the third writes no word of it."""
    from ragqa.answering.followups import selected
    from ragqa.models.rerank import cross_encoder

    papers = [("Sparse coding with learned dictionaries",
               "We learn overcomplete dictionaries with an online method and test on MNIST "
               "and natural image patches."),
              ("Pruning convolutional networks",
               "We prune filters of convolutional networks by their gradient signal. On MNIST "
               "and CIFAR-10 the pruned networks keep their accuracy with a fifth of the "
               "weights."),
              ("Speech recognition with attention",
               "An attention-based recurrent model transcribes spoken utterances; it is "
               "evaluated on the Wall Street Journal corpus.")]
    assert selected("which of them test on MNIST?", papers, None,
                    cross_encoder().score).picks == [0, 1]


def test_a_property_in_everyday_words_holds_in_the_abstracts_words():
    """Neither spiking paper writes "pictures" or "speech"; property_words.tsv knows how
    abstracts put them ("images", "spoken keywords"), so the words alone choose."""
    from ragqa.answering.followups import selected

    spiking = [(p["title"], p["abstract"]) for p in PAPERS if p["id"].startswith("spk-")]
    assert selected("which one works on pictures?", spiking, None, None).picks == [1]
    assert selected("which one is about speech?", spiking, None, None).picks == [0]
    assert selected("which one is about chemistry?", spiking, None, None).picks == []


def test_follow_ups_keep_to_the_last_papers_in_their_order(chat):
    """"#2" is the second paper listed; "these" reads the listed papers in the order shown; a
    question about "it" that shares no word with the paper is still answered from it, not
    from the collection."""
    listed, these, second, chosen, it, fragment = chat(
        "Which papers learn robot grasping?", "what's the general idea behind these?",
        "tell me about #2", "which one is RL-based", "what technique does it rely on?",
        "on what kind of objects?")
    order = _ids(listed)
    assert _ids(these) == order[:len(_ids(these))] and len(_ids(these)) >= 2
    assert _ids(second) == [order[1]]
    assert _ids(chosen) == ["grasp-rl"]
    assert _ids(it) == ["grasp-rl"]
    assert _ids(fragment) == ["grasp-rl"]  # a fragment continues the last question


@pytest.mark.parametrize("about", ["what's the main takeaway?",
                                   "what's the selling point of that one?"])
def test_the_main_takeaway_is_of_the_paper_selected(chat, about):
    """"What's the main takeaway?" names no paper: it asks about the one just selected; "that
    one" too ("the … one" would select, not "the selling point of that one")."""
    _, chosen, takeaway = chat("Which papers learn robot grasping?", "which one is RL-based",
                               about)
    assert _ids(chosen) == ["grasp-rl"]
    assert _ids(takeaway) == ["grasp-rl"]


def test_a_selection_after_one_paper_picks_among_the_last_list(chat):
    """After "the first one" (an answer about one paper), "which of those …" and "the second
    one" mean the list before it."""
    listed, first, chosen, second = chat(
        "Which papers learn robot grasping?", "tell me about the first one",
        "going back to those two, which of them uses a CNN?", "and the second one?")
    order = _ids(listed)
    assert _ids(first) == [order[0]]
    assert _ids(chosen) == ["grasp-cnn"]
    assert _ids(second) == [order[1]]


@pytest.mark.parametrize("asked", [
    # a head and what it does, longer than a bare topic: no sentence
    "robot arms that learn to grasp objects from bins, cameras or trial and error",
    "grasping objects with a robot arm — which papers look at that?",
    "learning robot grasps, e.g. from camera images or from labelled grasp poses",
    # typed lower case, longer than a bare topic, no verb: a search box's topic, not a claim
    "grasping household objects with robot arms trained from trial and error",
    "who works on robot grasping here?",
    "anyone here working on robot grasping?",
    "robot grasping papers? I mean learning where to grasp, from images or from trials",
    # a request after a dash, a bare "X papers", a kind of work with what it does, "in here"
    "robot grasping - which papers do you have?",
    "robot grasping papers",
    "models that learn to grasp objects with a robot arm",
    "what's in here on robot grasping",
])
def test_a_topic_described_as_users_type_it_gets_a_list(seeded, chat, asked):
    """A search-box description is a list request, not a claim to check against one paper."""
    found = json.loads(seeded("ask", asked, "--json").stdout)
    assert {"grasp-rl", "grasp-cnn"} <= set(_ids(found)), asked


def test_a_turn_announcing_a_new_topic_leaves_the_last_papers(chat):
    """"those" after "different thing: X." is X, not the last papers."""
    listed, switched = chat("Which papers train spiking neural networks?",
                            "ok, different thing: protein structure prediction. anything on "
                            "those?")
    assert {"prot-diffusion", "prot-foldnet"} <= set(_ids(switched))
    assert not set(_ids(switched)) & set(_ids(listed))


def test_released_code_and_new_datasets_are_what_the_paper_says_it_gives(chat):
    """Every anomaly paper writes "code" or "coding" and "datasets": the one that releases its
    code links it, the one that makes a dataset says it constructs one."""
    listed, code, data = chat("Which papers detect anomalies in tabular data?",
                              "do any of them share code?", "which ones put out new datasets?")
    assert {"tab-code", "tab-corpus", "tab-theory"} <= set(_ids(listed))
    assert _ids(code) == ["tab-code"]
    assert _ids(data) == ["tab-corpus"]


def test_no_paper_releasing_code_is_none_of_them(chat):
    """Among papers none of which releases code (the grasping pair), the answer is none."""
    listed, code = chat("Which papers learn robot grasping?", "which ones have code available?")
    assert {"grasp-rl", "grasp-cnn"} <= set(_ids(listed))
    assert _ids(code) == []


def test_many_of_a_thing_is_the_papers_that_count_them(chat):
    """Every anomaly paper writes "datasets"; two count theirs (sixty, twelve)."""
    listed, many = chat("Which papers detect anomalies in tabular data?",
                        "which ones test on lots of datasets?")
    assert {"tab-code", "tab-corpus", "tab-theory"} <= set(_ids(listed))
    assert set(_ids(many)) == {"tab-corpus", "tab-theory"}


@pytest.mark.parametrize("asked", [
    "anomaly detection in tabular data, SimCSE style?",  # a name the stemmer cuts twice
    "tabular anomaly detection stuff pls",  # a chat's filler is no unknown subject
])
def test_a_named_method_or_filler_the_papers_hold_is_no_near_miss(seeded, chat, asked):
    found = json.loads(seeded("ask", asked, "--json").stdout)
    assert "tab-code" in _ids(found), asked


@pytest.mark.parametrize(("turn", "asks"), [
    ("do any of them share code?", "code"), ("is their code available?", "code"),
    ("does either have code out?", "code"), ("which one works on source code?", None),
    ("which one generates code", None), ("the code-switching one?", None),
    ("which ones put out new datasets", "dataset"), ("the one that uses more data?", None),
    ("is there code?", "code"), ("where can I find the repo?", "code"),
    ("is the code of the parser released?", "code"),
])
def test_a_turn_asks_for_code_or_a_dataset_only_as_what_a_paper_gives(turn, asks):
    """Code and data as what a paper releases, not as its subject or its input."""
    from ragqa.answering.artifacts import asked_artifact

    assert asked_artifact(turn) == asks


def test_is_there_code_after_several_papers_asks_which_of_them_give_it(seeded):
    """"is there code?" names no topic: after a list it asks which of the papers give their
    code (round 13 searched the collection for "code" instead)."""
    result = seeded("chat", "--json", input="Which papers are about speech?\nis there code?\n")
    assert result.exit_code == 0, result.output
    listed, second = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    shown = {c["paper_id"] for c in listed["citations"]}
    cited = [c["title"] for c in second["citations"]]
    assert cited and {c["paper_id"] for c in second["citations"]} <= shown
    assert "DVPD" in cited  # "Code and audio samples are available at https://github.com/…"
    assert len(cited) < len(shown), "a selection, not every paper shown"


def test_words_that_name_no_subject_do_not_weigh_in_a_property():
    """"the routing/gating between experts": "between" counted as much as "gating", so the
    paper on a gating function over LoRA experts, which never writes "between", lost."""
    from ragqa.answering.followups import asked_property

    words = [{term for forms, _ in alternative for form in forms for term in form}
             for alternative in asked_property("which ones deal with the routing/gating "
                                               "between experts", None)]
    assert words == [{"rout"}, {"gate", "expert"}]


def test_a_selection_none_of_the_narrowed_papers_holds_picks_from_the_list_narrowed(seeded):
    """Round 14: "which ones deal with routing/gating?" kept two of six mixture-of-experts
    papers; "the lora one?" then found neither and answered none, while the sixth mixed LoRA
    experts. A selection that no paper of the last answer holds picks from the list that
    answer narrowed."""
    turns = ["Which papers are about speech?", "which of them use diffusion?",
             "the translation one?"]
    result = seeded("chat", "--json", input="\n".join(turns) + "\n")
    assert result.exit_code == 0, result.output
    listed, narrowed, picked = [json.loads(line) for line in result.stdout.splitlines()
                                if line.strip()]
    titles = [c["title"] for c in narrowed["citations"]]
    assert len(titles) >= 2 and "Hibiki-Zero" not in titles
    assert [c["title"] for c in picked["citations"]] == ["Hibiki-Zero"]
    assert "Hibiki-Zero" in [c["title"] for c in listed["citations"]]
    assert picked["answer"].startswith(f"None of the last answer's {len(titles)} papers does")
    assert {p["title"] for p in picked["papers"]} <= {*titles, "Hibiki-Zero"}
    # A turn that points at the narrowed papers means them: none of those two translates.
    turns[2] = "does either of those two do translation?"
    result = seeded("chat", "--json", input="\n".join(turns) + "\n")
    either = [json.loads(line) for line in result.stdout.splitlines() if line.strip()][2]
    assert "Hibiki-Zero" not in [c["title"] for c in either["citations"]]


def test_a_selection_none_of_the_shown_papers_holds_picks_from_the_folded_ones(chat):
    """Round 16: "HMC papers" showed four papers and folded the Riemannian one; "the riemannian
    one" then answered none. A selection that no paper shown writes picks from the papers the
    list folded below them, and says so; one that a paper shown writes stays with it."""
    listed, picked = chat("Which papers are about speech?", "which one uses AudioSet?")
    shown = [c["title"] for c in listed["citations"]]
    folded = [p["title"] for p in listed["papers"] if p["tier"] == "tail"]
    assert "AG-REPA" in folded and "AG-REPA" not in shown
    assert [c["title"] for c in picked["citations"]] == ["AG-REPA"]
    assert picked["answer"].startswith(f"None of the {len(shown)} papers shown does")
    _, kept = chat("Which papers are about speech?", "which ones use audio?")
    assert "AG-REPA" not in [c["title"] for c in kept["citations"]]


def test_a_selection_looks_among_the_first_folded_papers_the_question_did_not_exclude():
    """A list's tail may hold papers folded because its question excluded them ("speech
    papers, not TTS"): a selection never picks those, and reads the tail's first ten."""
    from ragqa.answering.chat import FOLDED_SELECTED, Session, Turn

    tail = [{"paper_id": f"t{i}", "tier": "tail", "excluded": i == 1} for i in range(15)]
    answer = {"papers": [{"paper_id": "c1", "tier": "core", "excluded": False}, *tail],
              "citations": []}
    session = Session("s", "default", 0.0, [Turn("speech papers, not TTS", "", answer, ["c1"])])
    folded = session.folded_below(["c1"])
    assert "t1" not in folded and folded[0] == "t0" and len(folded) == FOLDED_SELECTED
    assert session.folded_below(["c2"]) == ()


def _turn(question: str, cited: list[str], folded: tuple[str, ...] = ()):
    from ragqa.answering.chat import Turn

    papers = [*({"paper_id": p, "tier": "core"} for p in cited),
              *({"paper_id": p, "tier": "tail"} for p in folded)]
    return Turn(question, question, {"papers": papers, "citations": []}, list(cited))


def test_a_list_of_one_paper_shown_and_more_folded_is_the_list_a_turn_after_it_reads():
    """Round 16: after a list of three on ranking, "machine teaching" showed one paper and
    folded two; "the one with human subjects" then chose among the ranking papers. A list of
    one paper shown and more folded is the last list: a selection looks in it and its folded
    papers (also when put as "the one …", which points at no paper shown), a place beyond it
    is said to be beyond it; a selection of one is no list, as before."""
    from ragqa.answering.chat import Session, referenced_papers

    session = Session("s", "default", 0.0, [_turn("ranking models?", ["a", "b", "c"]),
                                             _turn("machine teaching", ["x"], ("y", "z"))])
    picked = referenced_papers("the one with human subjects", session)
    assert picked.selecting and picked.papers == ("x",) and picked.folded == ("y", "z")
    # "either of them" points at the papers shown: it looks nowhere else
    assert referenced_papers("does either of them use human subjects?", session).folded == ()
    beyond = referenced_papers("the second one?", session)
    assert beyond.kind == "beyond" and beyond.place == 1
    assert session.last_list == ["x"]  # what "the last answer listed N papers" counts
    narrowed = Session("s", "default", 0.0, [_turn("ranking models?", ["a", "b", "c"]),
                                              _turn("the Plackett-Luce one", ["b"])])
    assert referenced_papers("which one uses human subjects?", narrowed).papers == ("a", "b", "c")
    assert referenced_papers("the second one", narrowed).papers == ("b",)


def test_a_place_asked_for_before_any_paper_was_listed_is_said_not_searched(chat):
    """"the second one?" after an answer that listed nothing was searched as a topic, "the
    second one", and folded papers. It is told that no paper has been listed yet."""
    _, place = chat("Which papers study quantum chromodynamics on a lattice?", "the second one?")
    assert place["citations"] == [] and place["papers"] == []
    assert place["answer"].startswith("No answer in this chat has listed a paper yet")


@pytest.mark.parametrize(("turn", "kind"), [
    ("cool. different q - protein structure prediction?", "leave"),
    ("switching gears: memes?", "leave"),
    # "new" and "other" before a plural are no announcement: the turn is about the papers
    ("Which one handles new topics?", "select"),
    ("Does the first one study new things?", "about"),
])
def test_only_an_announcement_leaves_the_last_papers(turn, kind):
    from ragqa.answering.followups import resolve

    assert resolve(turn, ["p1", "p2", "p3"], None).kind == kind


def test_the_question_that_listed_the_papers_is_the_topic_a_selection_searches_again():
    """A selection's topic is the question of the turn that listed its papers: of the latest
    turns that all hold them (shown or folded), the earliest, past the selections that
    narrowed them and the turns about one of them."""
    from ragqa.answering.chat import Session

    session = Session("s", "default", 0.0, [_turn("GAN papers?", ["g"]),
                                             _turn("ranking models?", ["a", "b"], ("c",)),
                                             _turn("which of them use pairs?", ["a", "b"]),
                                             _turn("the second one", ["b"])])
    assert session.list_topic(["a", "b"]) == "ranking models?"
    assert session.list_topic(["c"]) == "ranking models?"
    assert session.list_topic(["g"]) == "GAN papers?"
    assert session.list_topic(["z"]) == "" and session.list_topic([]) == ""


def test_a_selection_no_listed_paper_holds_picks_among_the_other_papers_on_its_topic(chat, home):
    """Round 16: "any kernel stein discrepancy papers?" showed one paper and folded none; "the
    one on network data" answered none, while the writer's other paper on the topic tests
    network data. A selection that no paper of the list, nor of what it narrowed or folded,
    writes looks among the best papers on the list's topic it has not read, and says so; one
    that a listed paper writes stays with it."""
    from ragqa.answering.answer import answer_question
    from ragqa.answering.followups import Resolution
    from ragqa.config import load_settings
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.retrieval.retriever import Retriever

    listed, _ = chat("Which papers are about speech?", "which one uses AudioSet?")
    shown = {c["title"]: c["paper_id"] for c in listed["citations"]}
    assert "AG-REPA" not in shown
    one = next(iter(shown.values()))
    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    retriever = Retriever(Store(settings, "default", make_encoder(settings)))

    def select(turn: str, topic: str):
        referred = Resolution("select", (one,), topic=topic)
        return answer_question(retriever, turn, query=turn, referred=referred)

    picked = select("which one uses AudioSet?", "Which papers are about speech?")
    assert [c.title for c in picked.citations] == ["AG-REPA"]
    assert picked.text.startswith("The paper listed does not; of the other papers on its topic")
    assert select("which one uses AudioSet?", "").citations == []  # no topic: none of them
    title = next(t for t, pid in shown.items() if pid == one)
    kept = select(f"the {title} one", "Which papers are about speech?")
    assert [c.title for c in kept.citations] == [title]


@pytest.mark.parametrize(("turn", "several", "singular_spelled"), [
    ("does either of those two have code?", True, "does either of those two have code?"),
    ("What does it propose?", False, "What does PAPER propose?"),
    ("which of the above uses RL, and is this paper one of them?", True,
     "which of the above uses RL, and is PAPER one of them?"),
    ("Is theirs faster?", False, "Is theirs faster?"),  # "theirs" points back, at no number
])
def test_one_pointing_detector_reads_number_and_spells_the_paper(turn, several, singular_spelled):
    from ragqa.retrieval.question import REFERS, points_at_several, replace_pointer

    assert bool(REFERS.search(turn))
    assert points_at_several(turn) is several
    assert replace_pointer(turn, lambda match: "PAPER", plural=False) == singular_spelled
