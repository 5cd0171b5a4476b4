"""The checker's fast representations give what the straightforward ones give.

Facts are read through packed token codes (key id, negation, sentence end, pronoun) and
numpy; BM25 is counted from one array of key ids; claim offsets in bytes and UTF-16 are
computed in one pass. Each is compared here with a plain reference written from the
token table's per-token answers (the representation the checker used before), on random
inputs.
"""

from __future__ import annotations

import gc
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from streamcite.core.offsets import OffsetMap
from streamcite.grounding import engine, scoring
from streamcite.grounding import tokens as tokens_module
from streamcite.grounding.answer import rarity_weights
from streamcite.grounding.bm25 import BM25
from streamcite.grounding.checker import _offsets_in_units
from streamcite.grounding.claims import Claim
from streamcite.grounding.config import DEFAULT_CONFIG, EngineConfig
from streamcite.grounding.engine import evaluate
from streamcite.grounding.facts import Fact, Facts
from streamcite.grounding.rules import number_neighbours, swapped_number
from streamcite.grounding.tokens import PRONOUNS, TokenTable, features, raw_tokens

_WORDS = [
    "Titanic", "it", "It", "was", "directed", "by", "James", "Cameron", "not", "didn't",
    "n'est", "never", "1997", "1,500", "eleven", "janvier", "il", "elle", "ולא", "הוא",
    "צה\"ל", "l'autorità", "già", "cinque", "Paris", "the", "a", "e.g.", "example.com",
    "café", "naïve", "über", "ÉCOLE", "İstanbul", "x", "42nd", "sixth",
]  # fmt: skip
_SEPARATORS = [" ", " ", " ", ". ", "! ", "? ", "; ", "\n", ", ", " — ", "’", "\t", "…", "\x00"]

texts = st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_SEPARATORS)), max_size=40).map(
    lambda parts: "".join(w + s for w, s in parts)
) | st.text(max_size=60)


class _Reference:
    """A fact read the plain way: keys, negation and sentence ends per raw token."""

    def __init__(self, text: str, table: TokenTable) -> None:
        self.tokens = raw_tokens(text)
        self.keys = table.keys(self.tokens)
        self.counts = Counter(self.keys)
        self.length = len(self.keys) - self.counts.pop("", 0)
        spans, start = [], 0
        for end in table.sentence_ends(self.tokens):
            spans.append((start, end + 1))
            start = end + 1
        if len(self.tokens) > start:
            spans.append((start, len(self.tokens)))
        self.spans = spans
        self.sets = [set(self.keys[a:b]) - {""} for a, b in spans]
        self.negated = [table.negated(self.tokens[a:b]) for a, b in spans]
        self.continues = [b > a and self.tokens[a] in PRONOUNS for a, b in spans]


def _same_as_reference(corpus: Facts, refs: list[_Reference]) -> None:
    assert corpus.lengths.tolist() == [r.length for r in refs]
    for fact, ref in zip(corpus.facts, refs, strict=True):
        assert fact.keys == ref.keys
        assert fact.keyset == set(ref.counts)
        # (Fact.counts had no caller left: the counts are read from its keys here)
        counts = Counter(k for k in fact.keys if k)
        assert list(counts.items()) == list(ref.counts.items())  # same order too
        assert fact.length == ref.length
        assert fact.sentences() == ref.spans
        assert fact.sets() == ref.sets
        for i, span in enumerate(ref.spans):
            assert fact.negated(i) == ref.negated[i]
            assert fact.continues(i) == ref.continues[i]
            a, b = span
            assert fact.window_keys([i]) == [k for k in ref.keys[a:b] if k]
            assert fact.numbers([i]) == {k for k in ref.sets[i] if k[0] == "#"}
        assert fact.tokens == ref.tokens  # last: a packed fact reads them again
    names = {k for r in refs for k in r.keys if k} | {"zzz-unknown", "#123456789"}
    assert corpus.known(names) == {k for k in names if any(k in r.counts for r in refs)}


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, min_size=1, max_size=6), st.sampled_from(["en", "fr", "it", "he"]))
def test_facts_read_plain_or_from_codes_match_the_reference(items: list[str], lang: str) -> None:
    table = TokenTable(lang)
    refs = [_Reference(t, table) for t in items]
    _same_as_reference(Facts(items, table), refs)  # a few facts: the plain reading
    few = Facts.FEW
    Facts.FEW = -1  # the packed codes and numpy of larger checks
    try:
        _same_as_reference(Facts(items, table), refs)
    finally:
        Facts.FEW = few


def _reference_bm25(
    refs: Sequence[_Reference], terms: set[str]
) -> tuple[dict[str, int], NDArray[np.float32]]:
    """The sparse formula, fact by fact (k1 1.2, b 0.75), as the checker computed it before."""
    vocab = {t: i for i, t in enumerate(terms)}
    rows: list[int] = []
    cols: list[int] = []
    tfs: list[int] = []
    for j, r in enumerate(refs):
        shared = r.counts.keys() & terms
        rows.extend(vocab[t] for t in shared)
        tfs.extend(r.counts[t] for t in shared)
        cols.extend([j] * len(shared))
    row, col = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    tf = np.asarray(tfs, dtype=np.float32)
    n = len(refs)
    df = np.bincount(row, minlength=len(vocab)).astype(np.float32)
    idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
    lengths = np.asarray([r.length for r in refs], dtype=np.float32)
    avg = float(lengths.mean())
    norm = 1.2 * (1.0 - 0.75 + 0.75 * lengths / (avg or 1.0))
    matrix = np.zeros((len(vocab), n), dtype=np.float32)
    if len(row):
        matrix[row, col] = idf[row] * tf * (1.2 + 1.0) / (tf + norm[col])
    return vocab, matrix


@settings(max_examples=150, deadline=None)
@given(
    st.lists(texts, min_size=1, max_size=12),
    st.lists(st.lists(st.sampled_from(_WORDS), max_size=6), min_size=1, max_size=5),
)
def test_bm25_from_one_array_matches_the_sparse_formula(
    items: list[str], claim_words: list[list[str]]
) -> None:
    table = TokenTable("en")
    claims = [
        list(dict.fromkeys(table.content_keys(raw_tokens(" ".join(ws))))) for ws in claim_words
    ]
    claims.append(["never-seen-term"])
    terms = {k for c in claims for k in c}
    bm25 = BM25(Facts(items, table), terms)
    vocab, matrix = _reference_bm25([_Reference(t, table) for t in items], terms)
    assert bm25.vocab == vocab
    assert bm25.matrix.dtype == np.float32
    assert np.array_equal(bm25.matrix, matrix)  # the same bits, not just close


offsets_text = st.text(
    alphabet=st.sampled_from([*"ab .\n", "é", "ש", "漢", "🙂", "𝐀", "\ud800"]), max_size=50
)


@settings(max_examples=300, deadline=None)
@given(offsets_text, st.lists(st.integers(-3, 60), max_size=12))
def test_claim_offsets_in_one_pass_match_the_offset_map(text: str, offsets: list[int]) -> None:
    units = _offsets_in_units(text, offsets)
    reference = OffsetMap(text)
    for p in offsets:
        assert units[p] == (reference.char_to_byte(p), reference.char_to_utf16(p))


def test_a_full_token_table_is_replaced_and_scores_do_not_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer = "Titanic was directed by James Cameron in 1997. It did not star Brad Pitt."
    facts = [
        "Titanic is a 1997 American film. It was directed by James Cameron.",
        "Brad Pitt did not star in Titanic; Leonardo DiCaprio did.",
    ] * 4
    before = [(v.score, v.fact_scores) for v in evaluate(answer, facts, lang="en")]
    monkeypatch.setattr(TokenTable, "MAX_ENTRIES", 5)
    monkeypatch.setattr(tokens_module, "_TABLES", {})
    first = tokens_module.token_table("en")
    after = [(v.score, v.fact_scores) for v in evaluate(answer, facts, lang="en")]
    assert after == before
    assert tokens_module.token_table("en") is not first  # full: replaced, never cleared
    assert first.names[first.ids["cameron"]] == "cameron"  # ids of the old one stay valid


def _reference_align(
    claim: Claim, fact: Fact, cfg: EngineConfig, rare: dict[str, float]
) -> tuple[float, tuple[int, ...], int, float, float] | None:
    """The alignment as written before (a key -> sentences credit map, a loop over every
    sentence): (got, window, anchor, covered, n-gram share)."""
    present = claim.keyset & fact.keyset
    weights = claim.weights
    credit: dict[str, set[int]] = {}
    per_sentence: dict[int, float] = {}
    covered = 0.0
    for i, sentence in enumerate(fact.sets()):
        common = present & sentence
        if not common:
            continue
        for k in common:
            credit.setdefault(k, set()).add(i)
        per_sentence[i] = math.fsum(weights[k] for k in common)
        covered = max(covered, math.fsum(rare[k] for k in common))
    if not per_sentence:
        return None
    ranked = sorted(per_sentence, key=per_sentence.__getitem__, reverse=True)
    got, window, anchor = per_sentence[ranked[0]], (ranked[0],), ranked[0]
    for a in ranked[: cfg.anchors]:
        for b in (a - 1, a + 1):
            if b not in per_sentence:
                continue
            discount = 1.0 if fact.continues(max(a, b)) else cfg.window_discount
            pair = discount * math.fsum(
                weights[k] for k, at in credit.items() if a in at or b in at
            )
            if pair > got:
                got, window, anchor = pair, (min(a, b), max(a, b)), a
    text = "".join(" " + " ".join(fact.sets()[i]) + " " for i in window)
    contained = 0
    for k, grams in claim.grams.items():
        where = credit.get(k, set())
        if window[0] in where or window[-1] in where:
            contained += len(grams)
        else:
            contained += sum(g in text for g in grams)
    return got, window, anchor, covered, contained / claim.n_grams


@settings(max_examples=300, deadline=None)
@given(texts, st.lists(texts, min_size=1, max_size=10))
def test_alignment_matches_the_reference(claim_text: str, items: list[str]) -> None:
    table = TokenTable("en")
    feats = features(claim_text, raw_tokens(claim_text), table, salience=True)
    if not feats.stems:
        return
    claim = Claim(feats, DEFAULT_CONFIG)
    rare = rarity_weights(claim.unique)
    for fact in Facts(items, table).facts:
        present = claim.keyset & fact.keyset
        al = scoring._align(claim, fact, present, DEFAULT_CONFIG, rare) if present else None
        expected = _reference_align(claim, fact, DEFAULT_CONFIG, rare)
        if al is None:
            assert expected is None
            continue
        share = scoring._ngram_share(claim, fact, al)
        assert (al.got, al.window, al.anchor, al.covered, share) == expected


def test_a_check_pauses_the_cycle_collector_and_always_resumes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []

    def spy(answer: str, lang: str, cfg: EngineConfig) -> tuple[list[Any], list[Any]]:
        seen.append(gc.isenabled())
        raise RuntimeError("boom")

    assert gc.isenabled()
    monkeypatch.setattr(engine, "_claims", spy)
    with pytest.raises(RuntimeError):
        evaluate("Titanic was directed by James Cameron.", ["Titanic."], lang="en")
    assert seen == [False]
    assert gc.isenabled()  # resumed, also after an error
    gc.disable()
    try:  # paused by the application: left paused
        with pytest.raises(RuntimeError):
            evaluate("Titanic was directed by James Cameron.", ["Titanic."], lang="en")
        assert not gc.isenabled()
    finally:
        gc.enable()


def _reference_raw_tokens(text: str) -> list[bytes]:
    """raw_tokens as written before: lower-cased first, then the marks made ASCII."""
    text = text.lower()
    for src, dst in tokens_module._PREFOLD:
        text = text.replace(src, dst)
    text = text.replace("\n", " \x00 ").replace(";", " \x00 ")
    return text.encode("utf-8", "replace").translate(tokens_module._BYTE_PUNCT).split()


_MARKS = "".join(src for src, _ in tokens_module._PREFOLD)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from([*"aAΣσςΑΒ İiÉé.;\n'", *_MARKS]), max_size=40) | texts)
@example("ΑΣ׳b")  # a final sigma whose context a mark changes (׳ -> ')
@example("ΑΣ’b and ΑΣ—b")
def test_raw_tokens_lower_case_after_the_marks_as_before(text: str) -> None:
    assert raw_tokens(text) == _reference_raw_tokens(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60) | texts)
def test_the_ascii_word_regex_finds_the_unicode_regex_words(text: str) -> None:
    if text.isascii():
        expected = tokens_module._CASED_WORD_RE.findall(text)
        assert tokens_module._CASED_ASCII_RE.findall(text) == expected


_KEYS = ["#1903", "#1911", "#5", "physic", "chemistri", "prize", "year", "anno", "won", "nobel"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_KEYS), max_size=10), st.lists(st.sampled_from(_KEYS), max_size=20))
@example(["won", "#1911", "physic"], ["physic", "#1903", "chemistri", "#1911"])
@example(["physic", "year", "#1911"], ["physic", "year", "#1903", "chemistri", "#1911"])
def test_a_swapped_number_needs_a_neighbour_word_in_the_fact(
    claim_keys: list[str], fact_keys: list[str]
) -> None:
    if swapped_number(claim_keys, fact_keys):  # the test that lets the checker skip it
        assert not number_neighbours(claim_keys).isdisjoint(fact_keys)
