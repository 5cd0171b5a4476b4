"""One claim scored against facts prepared once: the offline checker's live path.

The whole-answer check (:func:`~streamcite.grounding.engine.evaluate`) reads the
facts again for every answer. A claim checked while the answer streams is one sentence,
and the facts are known before it (request-time facts, or citations that arrived
mid-stream): :class:`FactIndex` reads them once, :meth:`FactIndex.check` scores one
sentence in about a millisecond. The verdict is the engine's for an answer of that one
sentence (the score is its best fact's, calibrated; the facts cited are those whose
score reaches the threshold the caller applies).

Every check (live or whole-answer) holds :data:`ENGINE_LOCK`, one at a time. The facts
of an index are read before it is taken (once an index, under the index's own lock: the
token tables hand out their ids under their own lock), so reading one stream's facts
never holds up another stream's checks.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from streamcite.grounding.claims import structured_claim, without_enumerators
from streamcite.grounding.config import DEFAULT_CONFIG, EngineConfig
from streamcite.grounding.engine import ClaimVerdict, _claim, _mark_unknown_names, _shortlists
from streamcite.grounding.facts import Facts
from streamcite.grounding.scoring import calibrate, score_with_coverage
from streamcite.grounding.sentences import needs_grounding, without_markers
from streamcite.grounding.tokens import features, raw_tokens, token_table
from streamcite.grounding.words import detect_language

__all__ = ["ENGINE_LOCK", "FactIndex"]

ENGINE_LOCK = threading.Lock()
"""Held by every check of the offline engine: one at a time, on any thread."""


class FactIndex:
    """Facts read once, for scoring many claims one at a time."""

    __slots__ = ("_building", "_config", "_corpus", "lang", "texts")

    def __init__(
        self,
        texts: Sequence[str],
        *,
        lang: str | None = None,
        sample: str = "",
        config: EngineConfig = DEFAULT_CONFIG,
    ) -> None:
        """:param sample: text besides the facts to detect the language from (the
        question, the start of the answer) when ``lang`` is None."""
        self.texts = list(texts)
        if lang is None:
            probe = sample[:2000] + " " + " ".join(t[:1000] for t in self.texts[:4])
            lang = detect_language(probe)
        self.lang = lang
        self._config = config
        self._corpus: Facts | None = None
        self._building = threading.Lock()

    def _facts(self) -> Facts:
        """The facts read (once: the first caller reads them, outside the engine lock)."""
        if self._corpus is None:
            with self._building:
                if self._corpus is None:
                    self._corpus = Facts(self.texts, token_table(self.lang))
        return self._corpus

    def check(self, text: str, *, heading: bool = False) -> ClaimVerdict:
        """The verdict on one sentence ``text`` (offsets relative to it: 0, len)."""
        if self.texts:
            self._facts()  # not under ENGINE_LOCK: other streams' checks go on meanwhile
        with ENGINE_LOCK:
            return self._check(text, heading)

    def _check(self, text: str, heading: bool) -> ClaimVerdict:
        verdict = ClaimVerdict(0, len(text), text, required=False)
        if (heading and not structured_claim(text)) or not needs_grounding(text):
            return verdict
        cfg = self._config
        # The table the facts were read with (a full table is replaced by a new one).
        table = self._corpus.table if self._corpus is not None else token_table(self.lang)
        plain = without_enumerators(without_markers(text))
        tokens = raw_tokens(plain)
        feats = features(plain, tokens, table, salience=True)
        if not feats.stems:
            return verdict  # only function words: nothing to check
        verdict.required = True
        verdict.score = verdict.raw_score = 0.0
        if not self.texts:
            return verdict
        claim = _claim(plain, tokens, feats, table, cfg)
        corpus = self._facts()
        _mark_unknown_names([claim], corpus)
        built = corpus.facts
        (candidates,) = _shortlists([claim], corpus, cfg)
        scored = sorted(
            ((j, x) for j in candidates if (x := score_with_coverage(claim, built[j], cfg)[0]) > 0),
            key=lambda p: (-p[1], p[0]),
        )
        verdict.raw_score = scored[0][1] if scored else 0.0
        verdict.fact_scores = [(j, calibrate(x, cfg)) for j, x in scored]
        verdict.score = calibrate(verdict.raw_score, cfg)
        return verdict
