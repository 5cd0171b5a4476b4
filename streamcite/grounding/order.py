"""Word order: a claim's clause said the other way round by a fact ("Acme Corp bought
Globex" against "Globex bought Acme Corp"). The clauses are read by
:mod:`~streamcite.grounding.roles` (:func:`~.roles.claim_clauses`, :func:`~.roles.clause_at`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from typing import TYPE_CHECKING

from streamcite.grounding.roles import Clause, clause_at

if TYPE_CHECKING:
    from streamcite.grounding.facts import Fact

__all__ = ["order_conflict"]


def _readings(clauses: Sequence[Clause], fact: Fact, a: int, b: int) -> tuple[bool, bool]:
    """(a clause of the claim swapped in tokens ``a:b`` of the fact, one in the same order)."""
    keys = fact.keys
    verbs = {c[0] for c in clauses}
    swapped = same = False
    for p in compress(range(a, b), map(verbs.__contains__, keys[a:b])):
        near = set(keys[max(0, p - 6) : p + 7])
        for verb, agent, patient in clauses:
            if verb != keys[p] or near.isdisjoint(agent) or near.isdisjoint(patient):
                continue
            read = clause_at(fact.tokens, keys, p, fact.table.lang)
            if read is None:
                continue
            (_, f_agent, f_patient), _ = read
            if agent & f_patient - f_agent and patient & f_agent - f_patient:
                swapped = True
            elif agent & f_agent and patient & f_patient:
                same = True
    return swapped, same


def order_conflict(
    clauses: Sequence[Clause], fact: Fact, window: Sequence[int], present: set[str]
) -> bool:
    """The fact's window says the claim's clause the other way round ("Acme Corp bought
    Globex" against "Globex bought Acme Corp"), and the fact nowhere says it the claim's
    way. ``present``: the claim's keys found in the fact (a clause whose verb or sides
    the fact lacks is passed over without reading the fact)."""
    clauses = [
        c
        for c in clauses
        if c[0] in present and not present.isdisjoint(c[1]) and not present.isdisjoint(c[2])
    ]
    if not clauses:
        return False
    spans = fact.sentences()
    a, b = spans[window[0]][0], spans[window[-1]][1]
    swapped, same = _readings(clauses, fact, a, b)
    if not swapped or same:
        return False
    # Another sentence may say it the claim's way ("Acme bought Globex in 1990 … Globex
    # bought Acme in 2005"): the claim is then told, not contradicted.
    return not (_readings(clauses, fact, 0, a)[1] or _readings(clauses, fact, b, len(fact.keys))[1])
