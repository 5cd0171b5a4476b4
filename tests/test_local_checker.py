"""The offline grounding checker: Google's check, in-process, and as a pipeline enricher."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from streamcite.core.errors import StreamciteError
from streamcite.core.events import GroundingEvent, SourcesEvent
from streamcite.core.grounding import NO_FACTS_REASON, GroundingFact, GroundingResult
from streamcite.core.models import Citation, CitedAnswer
from streamcite.core.sources import QuotedSource, SourceChunk, SourceDocument
from streamcite.enrich.base import EnrichContext, Enricher
from streamcite.enrich.limits import count_answer_tokens, validate_user_labels
from streamcite.grounding import checker as checker_module
from streamcite.grounding.checker import InvalidGroundingRequest, LocalGrounding
from streamcite.grounding.google_check import check_google_request

# Google's public examples (check grounding docs and the Python sample).
WIKI = (
    "Titanic is a 1997 American epic romantic disaster movie. It was directed, written, and "
    "co-produced by James Cameron. The movie is about the 1912 sinking of the RMS Titanic. It "
    "stars Kate Winslet and Leonardo DiCaprio. The movie was released on December 19, 1997. It "
    "received positive critical reviews. The movie won 11 Academy Awards, and was nominated for "
    "fourteen total Academy Awards."
)
TOMATOES = (
    'James Cameron\'s "Titanic" is an epic, action-packed romance set against the ill-fated '
    "maiden voyage of the R.M.S. Titanic; the pride and joy of the White Star Line and, at the "
    "time, the largest moving object ever built. She was the most luxurious liner of her era -- "
    'the "ship of dreams" -- which ultimately carried over 1,500 people to their death in the '
    "ice cold waters of the North Atlantic in the early hours of April 15, 1912."
)
BRAD_PITT = "Titanic was directed by James Cameron. It starred Brad Pitt and Kate Winslet."
RELEASED = "Titanic was directed by James Cameron. It was released in 1997."


def google_body(answer: str, facts: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "answerCandidate": answer,
        "facts": [{"factText": f, "attributes": {"author": f"a{i}"}} for i, f in enumerate(facts)],
        "groundingSpec": spec,
    }


def utf8(text: str, char_offset: int) -> int:
    return len(text[:char_offset].encode("utf-8"))


def utf16(text: str, char_offset: int) -> int:
    return len(text[:char_offset].encode("utf-16-le")) // 2


def assert_offsets_consistent(answer: str, result: GroundingResult) -> None:
    for claim in result.claims:
        assert claim.start is not None and claim.end is not None
        assert answer[claim.start : claim.end] == claim.claim_text
        assert claim.start_byte == utf8(answer, claim.start)
        assert claim.end_byte == utf8(answer, claim.end)
        assert claim.start_utf16 == utf16(answer, claim.start)
        assert claim.end_utf16 == utf16(answer, claim.end)


# --------------------------------------------------------------- Google's examples


async def test_titanic_first_claim_supported_second_not() -> None:
    result = await LocalGrounding().check(BRAD_PITT, [WIKI], claim_level_scores=True)
    assert result.provider == "local"
    first, second = result.claims
    assert (first.claim_text, first.start_byte, first.end_byte) == (
        "Titanic was directed by James Cameron.",
        0,
        38,
    )
    assert (second.claim_text, second.start_byte, second.end_byte) == (
        "It starred Brad Pitt and Kate Winslet.",
        39,
        77,
    )
    assert first.supported and first.citation_indices == [0]
    assert not second.supported and second.citation_indices == []
    assert first.grounding_check_required and second.grounding_check_required
    assert first.score is not None and second.score is not None
    assert first.score >= 0.6 > second.score
    assert result.cited_chunks[0].source == "0" and result.cited_chunks[0].fact_index == 0
    assert result.cited_facts == [WIKI]
    # An answer of several claims scores the share of its content that is supported
    # (grounding/answer.py), between its claims' scores.
    assert result.support_score is not None
    assert second.score < result.support_score < first.score
    assert_offsets_consistent(BRAD_PITT, result)


def test_google_docs_example_json() -> None:
    response = check_google_request(google_body(RELEASED, [WIKI, TOMATOES], citationThreshold=0.6))
    assert set(response) == {"citedChunks", "citedFacts", "claims", "supportScore"}
    claims = response["claims"]
    assert [(c["claimText"], c["startPos"], c["endPos"]) for c in claims] == [
        ("Titanic was directed by James Cameron.", 0, 38),
        ("It was released in 1997.", 39, 63),
    ]
    assert all(c["groundingCheckRequired"] is True for c in claims)
    assert all("score" not in c for c in claims)  # enableClaimLevelScore not set
    chunks = response["citedChunks"]
    cited_for = [{chunks[i]["source"] for i in c["citationIndices"]} for c in claims]
    # Cameron directed it: both facts say so. Released in 1997: only Wikipedia says so.
    assert cited_for == [{"0", "1"}, {"0"}]
    assert [c["chunkText"] for c in chunks] == [WIKI, TOMATOES]
    assert response["citedFacts"] == [{"chunkText": WIKI}, {"chunkText": TOMATOES}]
    assert response["supportScore"] >= 0.6


def test_unsupported_claim_has_no_citation_indices_key() -> None:
    response = check_google_request(google_body(BRAD_PITT, [WIKI], enableClaimLevelScore=True))
    supported, unsupported = response["claims"]
    assert supported["citationIndices"] == [0]
    assert "citationIndices" not in unsupported
    assert 0.0 <= unsupported["score"] < 0.6 <= supported["score"] <= 1.0
    assert 0.0 < response["supportScore"] < 1.0


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.6, 0.9, 1.0])
async def test_a_higher_threshold_cites_a_subset(threshold: float) -> None:
    checker = LocalGrounding()
    facts = [WIKI, TOMATOES, "The Eiffel Tower is in Paris."]
    low = await checker.check(RELEASED, facts, citation_threshold=0.0, claim_level_scores=True)
    high = await checker.check(RELEASED, facts, citation_threshold=threshold)
    for lo, hi in zip(low.claims, high.claims, strict=True):
        lo_facts = {low.cited_chunks[i].fact_index for i in lo.citation_indices}
        hi_facts = {high.cited_chunks[i].fact_index for i in hi.citation_indices}
        assert hi_facts <= lo_facts
        assert 2 not in lo_facts  # an unrelated fact is never cited
    if threshold == 1.0:
        assert all(not c.citation_indices for c in high.claims)
    # The support score does not depend on the threshold.
    assert high.support_score == low.support_score


# --------------------------------------------------------------- vetoes


@pytest.mark.parametrize(
    ("claim", "supported"),
    [
        ("Google was founded by Larry Page and Sergey Brin in 1998.", True),
        ("Google was founded by Larry Page and Sergey Brin in 1975.", False),
        ("Google was not founded by Larry Page and Sergey Brin.", False),
        ("Google was founded by Larry Page and Sergey Brin.", True),
    ],
)
def test_number_and_negation_vetoes(claim: str, supported: bool) -> None:
    fact = "Google was founded in 1998 by Larry Page and Sergey Brin."
    result = LocalGrounding().check_sync(claim, [fact], claim_level_scores=True)
    assert result.claims[0].supported is supported


def test_negation_in_the_fact_only_vetoes_too() -> None:
    fact = "The movie was not released in 1997."
    result = LocalGrounding().check_sync("The movie was released in 1997.", [fact])
    assert not result.claims[0].supported
    agreeing = LocalGrounding().check_sync("The movie wasn't released in 1997.", [fact])
    assert agreeing.claims[0].supported


def test_number_words_and_digits_match() -> None:
    result = LocalGrounding().check_sync("The movie won eleven Academy Awards.", [WIKI])
    assert result.claims[0].supported
    wrong = LocalGrounding().check_sync("The movie won twelve Academy Awards.", [WIKI])
    assert not wrong.claims[0].supported


# --------------------------------------------------------------- languages and offsets


async def test_hebrew_offsets_emoji_negation_and_question() -> None:
    fact = (
        "מדיניות העבודה מרחוק של הארגון מאפשרת לעובדים לעבוד מהבית יומיים בשבוע. "
        "המדיניות נכנסה לתוקף בינואר 2021. "
        "עובדים חדשים אינם זכאים לעבודה מרחוק בשלושת החודשים הראשונים."
    )
    answer = (
        "העובדים רשאים לעבוד מהבית יומיים בשבוע.[1] "
        "המדיניות נכנסה לתוקף ב-2021 🎉. "
        "עובדים חדשים זכאים לעבודה מרחוק מהיום הראשון. "
        "האם יש לך שאלות נוספות?"
    )
    result = await LocalGrounding().check(answer, [fact], claim_level_scores=True)
    assert_offsets_consistent(answer, result)
    texts = [c.claim_text for c in result.claims]
    assert texts == [
        "העובדים רשאים לעבוד מהבית יומיים בשבוע.[1]",
        "המדיניות נכנסה לתוקף ב-2021 🎉.",
        "עובדים חדשים זכאים לעבודה מרחוק מהיום הראשון.",
        "האם יש לך שאלות נוספות?",
    ]
    remote, since, newcomers, question = result.claims
    assert remote.supported and since.supported
    assert not newcomers.supported  # the fact says they are NOT entitled
    assert question.grounding_check_required is False and question.score is None
    # Hebrew letters are 2 bytes, the emoji 4 bytes and 2 UTF-16 units.
    assert since.end_byte - since.start_byte == len(since.claim_text.encode())
    assert since.end_utf16 - since.start_utf16 == len(since.claim_text) + 1
    assert remote.start_byte == 0 and since.start_byte == len(texts[0].encode()) + 1


async def test_italian_answer_with_markers_number_veto_and_filler() -> None:
    fact = (
        "Il telelavoro è consentito fino a due giorni alla settimana per tutti i dipendenti a "
        "tempo pieno. La richiesta deve essere approvata dal responsabile dell'ufficio. "
        "Il Dott. Rossi ha firmato la carta nel marzo 2022."
    )
    answer = (
        "Il telelavoro è consentito per due giorni alla settimana [1]. "
        "Le richieste vanno approvate dal responsabile dell'ufficio. "
        "Il Dott. Rossi ha firmato la carta nel 2019. "
        "Spero che questo ti sia utile!"
    )
    result = await LocalGrounding().check(answer, [fact])
    assert_offsets_consistent(answer, result)
    assert [c.supported for c in result.claims] == [True, True, False, False]
    assert [c.grounding_check_required for c in result.claims] == [True, True, True, False]
    assert result.claims[2].claim_text == "Il Dott. Rossi ha firmato la carta nel 2019."


async def test_french_answer_negation_veto_and_filler() -> None:
    fact = (
        "Le télétravail est autorisé deux jours par semaine. Les salariés en période d'essai ne "
        "peuvent pas télétravailler. M. Dupont, directeur des ressources humaines, a signé la "
        "charte en 2020."
    )
    answer = (
        "Le télétravail est autorisé deux jours par semaine. "
        "Les salariés en période d'essai peuvent télétravailler. "
        "M. Dupont a signé la charte en 2020. "
        "N'hésitez pas à me contacter."
    )
    result = await LocalGrounding().check(answer, [fact])
    assert_offsets_consistent(answer, result)
    assert [c.supported for c in result.claims] == [True, False, True, False]
    assert result.claims[3].grounding_check_required is False
    assert result.claims[1].start_byte == len(result.claims[0].claim_text.encode()) + 1


# --------------------------------------------------------------- scores and filler


async def test_claim_level_scores_on_and_off() -> None:
    answer = RELEASED + " Is there anything else I can help with?"
    off = await LocalGrounding().check(answer, [WIKI])
    on = await LocalGrounding().check(answer, [WIKI], claim_level_scores=True)
    assert all(c.score is None for c in off.claims)
    assert [c.score is None for c in on.claims] == [False, False, True]
    assert off.support_score == on.support_score
    body = google_body(answer, [WIKI])
    assert all("score" not in c for c in check_google_request(body)["claims"])
    body["groundingSpec"]["enableClaimLevelScore"] = True
    scored = check_google_request(body)["claims"]
    assert ["score" in c for c in scored] == [True, True, False]


async def test_filler_and_questions_do_not_count_in_the_support_score() -> None:
    checker = LocalGrounding()
    alone = await checker.check(BRAD_PITT, [WIKI])
    padded = await checker.check(
        "Sure! " + BRAD_PITT + " I hope this helps. Anything else?", [WIKI]
    )
    assert padded.support_score == alone.support_score
    filler = [c for c in padded.claims if not c.grounding_check_required]
    assert [c.claim_text for c in filler] == ["Sure!", "I hope this helps.", "Anything else?"]
    assert all(not c.citation_indices and c.score is None for c in filler)


async def test_no_facts_and_empty_answers() -> None:
    checker = LocalGrounding()
    no_facts = await checker.check(BRAD_PITT, [])
    # Nothing to check against: no verdict (not "every claim unsupported").
    assert no_facts.support_score is None and not no_facts.cited_chunks
    assert no_facts.claims == [] and no_facts.unsupported_claims == 0
    assert no_facts.reason == NO_FACTS_REASON and not no_facts.nothing_to_check
    assert (await checker.check(BRAD_PITT, ["  ", ""])).reason == NO_FACTS_REASON
    empty = await checker.check("", [WIKI])
    assert empty.claims == [] and empty.support_score == 0.0
    only_filler = await checker.check("Sure! Anything else?", [WIKI])
    assert only_filler.support_score == 1.0  # nothing that needed support is unsupported
    assert check_google_request({"answerCandidate": ""}) == {"supportScore": 0.0}


# --------------------------------------------------------------- facts


async def test_fact_kinds_and_their_origins() -> None:
    citation = Citation(cited_text=WIKI, document_title="Titanic", document_index=0)
    source = QuotedSource(
        quoted_as="1",
        document=SourceDocument(id="d1", title="Google"),
        chunk=SourceChunk(
            id="c1", data="Google was founded in 1998 by Larry Page and Sergey Brin."
        ),
    )
    answer = "Titanic was directed by James Cameron. Google was founded in 1998."
    result = await LocalGrounding().check(
        answer, [citation, source, GroundingFact("Unrelated text about bees."), "  "]
    )
    assert len(result.facts) == 3  # the blank string is no fact
    assert [f.origin_kind for f in result.facts] == ["citation", "source", None]
    first, second = result.claims
    assert result.origins_for(first, [citation]) == [citation]
    # In a mixed list, origin_index is the item's position in that list.
    behind = [result.fact_for_chunk(i) for i in second.citation_indices]
    assert [(f.origin_kind, f.origin_index) for f in behind if f] == [("source", 1)]


async def test_long_facts_are_split_and_extra_facts_dropped_with_warnings() -> None:
    long_fact = ("Filler words about nothing in particular. " * 300) + WIKI
    result = await LocalGrounding().check(RELEASED, [long_fact])
    assert len(result.facts) > 1 and any("split" in w for w in result.warnings)
    assert all(len(f.text) <= 10_000 for f in result.facts)
    assert result.claims[1].supported  # found in the last window
    many = await LocalGrounding().check(RELEASED, ["bees"] * 205 + [WIKI])
    assert len(many.facts) == 200 and any("dropped" in w for w in many.warnings)
    # Any iterable will do, and a CitedAnswer stands for its text.
    generated = LocalGrounding().check_sync(CitedAnswer(text=RELEASED), (f for f in [WIKI]))
    assert generated.warnings == [] and generated.claims[1].supported


async def test_large_inputs_run_in_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = asyncio.to_thread

    async def spy(fn: Any, *args: Any, **kw: Any) -> Any:
        calls.append(getattr(fn, "__name__", "?"))
        return await real(fn, *args, **kw)

    monkeypatch.setattr(checker_module.asyncio, "to_thread", spy)
    # With the lexicon's data read (a first read goes off the loop too:
    # tests/test_checker_off_loop.py), a small check stays inline.
    monkeypatch.setattr(checker_module.lexicon, "ready", lambda: True)
    checker = LocalGrounding()
    small = await checker.check(RELEASED, [WIKI])
    assert calls == []
    big_facts = [WIKI + " " + ("More context here. " * 200)] * 30
    big = await checker.check(RELEASED, big_facts)
    assert calls == ["_run"]
    assert [c.claim_text for c in big.claims] == [c.claim_text for c in small.claims]
    assert big.claims[1].supported
    assert checker.check_sync(RELEASED, big_facts).support_score == big.support_score


# --------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"answerCandidate": "x", "facts": [{"factText": "f"}] * 201}, "201 facts"),
        ({"answerCandidate": "x", "facts": [{"factText": "f" * 10_001}]}, "10001 characters"),
        ({"answerCandidate": "x", "groundingSpec": {"citationThreshold": 1.5}}, "outside [0, 1]"),
        ({"answerCandidate": "x", "groundingSpec": {"citationThreshold": -0.1}}, "outside"),
        ({"answerCandidate": "x", "groundingSpec": {"citationThreshold": "abc"}}, "a number"),
        ({"answerCandidate": "x", "groundingSpec": {"citationThreshold": True}}, "a number"),
        ({"answerCandidate": "word " * 4_097}, "4097 tokens"),
        ({"answerCandidate": ("Word. " * 2_049)}, "4098 tokens"),
        ({"answerCandidate": 3}, "expected a string"),
        ({"facts": []}, "answerCandidate is required"),
        ({"answerCandidate": "x", "fact": []}, "Unknown name 'fact'"),
        ({"answerCandidate": "x", "facts": [{"text": "f"}]}, "Unknown name 'text'"),
        ({"answerCandidate": "x", "facts": [{"factText": "f", "attributes": {"a": 1}}]}, "map"),
        ({"answerCandidate": "x", "groundingSpec": {"enableClaimLevelScore": "yes"}}, "boolean"),
        ({"answerCandidate": "x", "userLabels": {"Team": "a"}}, "must start with"),
        ({"answerCandidate": "x", "userLabels": {"9team": "a"}}, "must start with"),
        ({"answerCandidate": "x", "userLabels": {"team": "Search"}}, "value may contain"),
        ({"answerCandidate": "x", "userLabels": {"te am": "a"}}, "key 'te am' may contain"),
        ({"answerCandidate": "x", "userLabels": {"k" * 64: "a"}}, "longer than 63"),
        ({"answerCandidate": "x", "userLabels": {"team": "v" * 64}}, "longer than 63"),
        ({"answerCandidate": "x", "userLabels": {f"k{i}": "" for i in range(65)}}, "65 labels"),
        ({"answerCandidate": "x", "userLabels": ["a"]}, "expected an object"),
    ],
)
def test_invalid_requests(body: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidGroundingRequest) as info:
        check_google_request(body)
    assert message in info.value.message
    assert info.value.code == "invalid_argument"
    assert isinstance(info.value, StreamciteError)


def test_requests_at_the_limits_are_accepted() -> None:
    body = {
        "answerCandidate": "word " * 4_096,
        "facts": [{"factText": "f" * 10_000}] * 200,
        "groundingSpec": {"citationThreshold": "1", "enableClaimLevelScore": False},
        "userLabels": {f"k{i}": "" for i in range(62)}
        | {"équipe": "recherche-é_1", "צוות": "חיפוש"},
    }
    response = check_google_request(body)
    assert "citedChunks" not in response


def test_labels_and_token_counting() -> None:
    validate_user_labels(None)
    validate_user_labels({"env": "prod", "owner_1": "", "clé": "valeur"})
    assert count_answer_tokens(RELEASED) == 13  # 11 words and 2 sentence-ending periods
    assert count_answer_tokens("3.14 is pi.") == 5  # "3", "14", "is", "pi" and the period
    with pytest.raises(InvalidGroundingRequest):
        LocalGrounding(citation_threshold=2)
    with pytest.raises(InvalidGroundingRequest):
        LocalGrounding().check_sync("x", [], citation_threshold=-1)


# --------------------------------------------------------------- the enricher


def context(answer: CitedAnswer, sources: SourcesEvent | None = None) -> EnrichContext:
    async def wait_for(kind: str) -> Any:
        assert kind == "sources"
        return sources

    return EnrichContext(answer=answer, wait_for=wait_for)


def titanic_answer() -> CitedAnswer:
    text = "Titanic was directed by James Cameron [1]. It starred Brad Pitt [2]."
    citations = [
        Citation(cited_text=WIKI, document_title="Titanic (Simple Wikipedia)", document_index=0),
        Citation(cited_text=TOMATOES, document_title="Rotten Tomatoes", document_index=1),
    ]
    return CitedAnswer(text=text, display_text=text, citations=citations)


async def test_enricher_checks_the_raw_text_against_its_citations() -> None:
    enricher = LocalGrounding()
    assert isinstance(enricher, Enricher)
    assert (enricher.kind, enricher.needs, enricher.timeout) == ("grounding", (), 5.0)
    answer = titanic_answer()
    event = await enricher.enrich(context(answer))
    assert isinstance(event, GroundingEvent) and event.provider == "local"
    result = event.to_result()
    first, second = result.claims
    assert first.claim_text == "Titanic was directed by James Cameron [1]."
    assert answer.text[second.start or 0 : second.end] == "It starred Brad Pitt [2]."
    assert first.supported and not second.supported
    assert first.score is not None  # the enricher asks for claim scores by default
    assert answer.citations[0] in result.origins_for(first, answer.citations)


async def test_enricher_with_wikit_sources_both_and_explicit_facts() -> None:
    answer = titanic_answer()
    source = QuotedSource(
        quoted_as="1", document=SourceDocument(id="d"), chunk=SourceChunk(id="c", data=TOMATOES)
    )
    sources_event = SourcesEvent(query_id="q", sources=[source])

    from_sources = LocalGrounding(facts_from="sources")
    assert from_sources.needs == ("sources",)
    result = (await from_sources.enrich(context(answer, sources_event))).to_result()
    assert [f.origin_kind for f in result.facts] == ["source"]
    assert result.origins_for(result.claims[0], answer.citations, [source]) == [source]

    both = LocalGrounding(facts_from="both", needs=("sources",))
    assert both.needs == ("sources",)
    result = (await both.enrich(context(answer, sources_event))).to_result()
    assert [f.origin_kind for f in result.facts] == ["citation", "citation", "source"]

    failed = (await LocalGrounding(facts_from="sources").enrich(context(answer, None))).to_result()
    assert failed.warnings[0].startswith("no Wikit sources") and failed.support_score is None
    assert failed.reason == NO_FACTS_REASON and failed.unsupported_claims == 0

    explicit = LocalGrounding(facts=["Titanic was directed by James Cameron."])
    assert explicit.needs == ()
    result = (await explicit.enrich(context(answer))).to_result()
    assert result.claims[0].supported and result.facts[0].origin_kind is None

    with pytest.raises(ValueError, match="facts_from"):
        LocalGrounding(facts_from="web")


# --------------------------------------------------------------- real pipeline and backend


@pytest.fixture
async def backend() -> AsyncIterator[Any]:
    server = pytest.importorskip("streamcite.local.server")
    async with server.LocalBackend(server.BackendConfig()) as b:
        yield b


async def test_pipeline_against_the_embedded_backend(backend: Any) -> None:
    from streamcite.pipeline import stream_chat

    request = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": "How many days of remote work per week?"}],
        "stream": True,
    }
    async with stream_chat(request, base_url=backend.base_url, after=[LocalGrounding()]) as s:
        events = [e async for e in s]
        answer = s.answer
    grounding = [e for e in events if isinstance(e, GroundingEvent)]
    assert len(grounding) == 1 and events[-1].type == "done"
    result = answer.grounding
    assert result is not None and result.provider == "local"
    assert answer.citations and result.claims
    assert_offsets_consistent(answer.text, result)
    # The backend's answers are extractive: every sentence is its citation's text.
    assert all(c.supported for c in result.claims if c.grounding_check_required)
    assert result.support_score is not None and result.support_score >= 0.6
    for claim in result.claims:
        assert result.origins_for(claim, answer.citations)
    assert answer.timings.grounding_ms is not None


async def test_google_client_against_the_backend_matches_the_local_check(backend: Any) -> None:
    google = pytest.importorskip("streamcite.enrich.google")
    client = google.GoogleGrounding(
        "projects/p/locations/global/groundingConfigs/default_grounding_config",
        token="local-token",
        endpoint=backend.root_url,
        retries=0,
    )
    answer = "Titanic was directed by James Cameron [1]. It starred Brad Pitt [2]. Any questions?"
    remote = await client.check(answer, [WIKI, TOMATOES], claim_level_scores=True)
    local = await LocalGrounding().check(answer, [WIKI, TOMATOES], claim_level_scores=True)
    assert remote.support_score == pytest.approx(local.support_score, abs=1e-3)
    assert [(c.start, c.end, c.supported, c.grounding_check_required) for c in remote.claims] == [
        (c.start, c.end, c.supported, c.grounding_check_required) for c in local.claims
    ]


@pytest.mark.parametrize(
    "question",
    [
        "How many days of remote work per week?",
        "Quanti giorni di ferie ho all'anno?",
        "Combien de jours de télétravail par semaine ?",
    ],
)
async def test_pipeline_catches_the_backends_injected_hallucination(
    backend: Any, question: str
) -> None:
    from streamcite.pipeline import stream_chat

    request = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": question}],
        "stream": True,
    }
    # The backend changes one number of its (otherwise extractive) answer.
    headers = {"X-Streamcite-Fault": "hallucinate=1"}
    async with stream_chat(
        request, base_url=backend.base_url, headers=headers, after=[LocalGrounding()]
    ) as s:
        async for _ in s:
            pass
        answer = s.answer
    result = answer.grounding
    assert result is not None
    checked = [c for c in result.claims if c.grounding_check_required]
    assert len(checked) >= 2
    assert sum(1 for c in checked if not c.supported) == 1
