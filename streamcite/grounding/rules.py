"""Rules on a claim's words that overlap cannot see: a changed event status ("has
already opened" against "will open") and a number bound to the wrong word ("Physics in
1911" against "Physics in 1903 … Chemistry in 1911")."""

from __future__ import annotations

from streamcite.grounding.words import fold, stem

__all__ = ["number_neighbours", "status_conflict", "swapped_number"]

# Changed event status: a claim that something is done ("has already opened") against
# a fact that it is planned ("will open", "wants to"). Raw lower-case tokens.
_DONE_CUES = frozenset(
    w.encode()
    for w in [
        "already",
        "completed",
        "finished",
        "déjà",
        "achevé",
        "achevée",
        "terminé",
        "terminée",
        "già",
        "completato",
        "completata",
        "concluso",
        "conclusa",
        "terminato",
        "terminata",
        "כבר",
        "הושלם",
        "הושלמה",
    ]
)
_PLANNED_CUES = frozenset(
    w.encode()
    for w in [
        "will",
        "plans",
        "plan",
        "planned",
        "wants",
        "want",
        "intends",
        "intend",
        "going",
        "expected",
        "scheduled",
        "va",
        "vont",
        "prévoit",
        "prévu",
        "prévue",
        "souhaite",
        "veut",
        "sera",
        "seront",
        "ouvrira",
        "sarà",
        "prevede",
        "previsto",
        "prevista",
        "vuole",
        "intende",
        "aprirà",
        "יפתח",
        "תיפתח",
        "מתוכנן",
        "מתוכננת",
        "עתיד",
        "עתידה",
    ]
)


def status_conflict(claim_tokens: list[bytes], fact_tokens: list[bytes]) -> bool:
    """The claim says done where the fact says planned (or wanted)."""
    return (
        not _DONE_CUES.isdisjoint(claim_tokens)
        and not _PLANNED_CUES.isdisjoint(fact_tokens)
        and _DONE_CUES.isdisjoint(fact_tokens)
    )


def _near(keys: list[str], i: int, reach: int = 2) -> list[str]:
    return keys[max(0, i - reach) : i] + keys[i + 1 : i + 1 + reach]


# Words that classify the number after them ("in the year 1911", "בשנת 1911"): not
# what a number is bound to, and in the way of the word that is ("Physics in the year").
_YEAR_WORDS = frozenset(
    stem(fold(w), lang)
    for lang, words in (("en", "year"), ("fr", "année an"), ("it", "anno"), ("he", "שנת שנה"))
    for w in words.split()
)


def _number_runs(keys: list[str]) -> list[str]:
    """Keys with each run of numbers ("December 19, 1997") joined as one ``#…`` key,
    year words dropped."""
    out: list[str] = []
    for k in keys:
        if k in _YEAR_WORDS:
            continue
        if k[:1] == "#" and out and out[-1][:1] == "#":
            out[-1] += " " + k
        else:
            out.append(k)
    return out


def number_neighbours(claim_keys: list[str]) -> set[str]:
    """The words next to the claim's numbers, as :func:`swapped_number` reads them: it can
    be True only for a fact that holds one of them (a cheap test before it)."""
    keys = [k for k in claim_keys if k not in _YEAR_WORDS]
    return {
        w for i, k in enumerate(keys) if k[:1] == "#" for w in _near(keys, i, 1) if w[:1] != "#"
    }


def swapped_number(claim_keys: list[str], fact_keys: list[str]) -> bool:
    """A number of the claim bound to the wrong word: "Physics in 1911" against a fact
    "Physics in 1903 … Chemistry in 1911" (content keys, function words dropped).

    True when the word next to the claim's number ``N`` is, in the fact, next to other
    numbers that the claim does not have, and never next to ``N``.
    """
    claim_keys = [k for k in claim_keys if k not in _YEAR_WORDS]
    claim_set = set(claim_keys)
    runs = _number_runs(fact_keys)
    for i, k in enumerate(claim_keys):
        if k[:1] != "#":
            continue
        words = [w for w in _near(claim_keys, i, 1) if w[:1] != "#"]
        at = [j for j, f in enumerate(runs) if f[:1] == "#" and k in f.split()]
        if not words or not at:
            continue
        for w in words:
            if any(w in _near(runs, j) for j in at):
                continue
            for j, f in enumerate(runs):
                if f == w and any(
                    n[:1] == "#" and not claim_set.intersection(n.split())
                    for n in _near(runs, j, 1)
                ):
                    return True
    return False
