"""A role bound to the wrong name: "Globex was the buyer" against a fact "signed by Acme
Corp, the buyer, and Globex, the seller" (issue 14: swapped roles passed at 0.96).

Word overlap cannot see it: every word of the claim is in the fact. The fact binds names
to roles by apposition (``NAME, the ROLE,``); the claim binds one by a copula
(``NAME was the ROLE`` or ``the ROLE was NAME``) or by apposition too. A claim's pair
conflicts with the fact when the fact gives that name another role *and* that role to
another name; a fact that says nothing about the name or the role vouches for nothing
and vetoes nothing.

Raw lower-cased tokens (:func:`~.tokens.raw_tokens`, edge punctuation on) are read
directly: the rule runs only for claims that state a role, and needs the commas that
content keys drop. English, French, Italian and Hebrew (whose article ``ה`` and
conjunction ``ו`` are prefixes).
"""

from __future__ import annotations

from collections.abc import Container
from itertools import compress, repeat

from streamcite.local.grounding.tokens import token_table
from streamcite.local.grounding.words import fold

__all__ = [
    "RolePair",
    "claim_roles",
    "conflicting_roles",
    "could_conflict",
    "fact_roles",
    "role_conflict",
]

RolePair = tuple[str, str]
"""(name key, role key): stemmed, folded words."""

_COPULA_WORDS = str.split(
    "is was are were est était étaient sont fut furent è era erano sono fu furono "
    "היה הייתה היתה היו הוא היא הם הן"
)
_COPULAS = frozenset(map(fold, _COPULA_WORDS))
# The raw (lower-cased, unfolded) copulas: most claims have none and no comma either,
# and are passed over without folding a word.
_RAW_COPULAS = frozenset(w.encode() for w in _COPULA_WORDS)
_ARTICLES = frozenset(str.split("the a an le la les un une il lo gli i una uno"))
_ELISIONS = ("l'", "l’", "un'", "un’")
_HEBREW_ARTICLE = fold("ה")
_HEBREW_AND = fold("ו")
_EDGE = "\"'“”‘’«»()[]*_"
_CLOSERS = (b",", b".", b";", b":", b")")
_MAX_ROLE_WORDS = 3
_COMMA = repeat(b",")


_STRIP = _EDGE + ",.;:!?"
_WORDS: dict[bytes, str] = {}
"""Memo raw token -> :func:`_word` (per process, like the token table's: a claim's words
were folded one by one, ~1 µs each, about 4 ms of a check at the API limits)."""
_MAX_WORDS = 300_000


def _fold_word(token: bytes) -> str:
    w = fold(token.decode("utf-8", "replace")).strip(_STRIP)
    for e in _ELISIONS:
        if w.startswith(e):
            return w[len(e) :]
    return w


def _word(token: bytes) -> str:
    """The folded word of a raw token, edge punctuation and an elided article off."""
    w = _WORDS.get(token)
    if w is None:
        if len(_WORDS) >= _MAX_WORDS:  # bounded memory, as the token table's
            _WORDS.clear()
        w = _WORDS[token] = _fold_word(token)
    return w


def _words(tokens: list[bytes]) -> list[str]:
    """:func:`_word` of each token (one C-level pass once the tokens are known)."""
    try:
        return list(map(_WORDS.__getitem__, tokens))
    except KeyError:
        return list(map(_word, tokens))


def _key(token: bytes, lang: str) -> str:
    """The token's content key, as the rest of the engine reads it ("" for a function
    word or a number: neither is a name or a role)."""
    table = token_table(lang)
    key = table.key.get(token)  # memoised; else learnt, as TokenTable.keys does
    if key is None:
        key = table.learn(token)
    return "" if key[:1] == "#" else key


def _is_article(token: bytes) -> bool:
    """A separate article (``the``) or an elided one (``l'acheteur``)."""
    return _word(token) in _ARTICLES or token.startswith((b"l'", "l’".encode()))


def _hebrew_definite(token: bytes) -> bool:
    w = _word(token)
    if w.startswith(_HEBREW_AND):
        w = w[1:]
    return len(w) > 2 and w.startswith(_HEBREW_ARTICLE)


def _role_after(tokens: list[bytes], j: int, lang: str) -> tuple[str, int]:
    """The role of a definite phrase starting at ``j`` (``the main buyer``, ``l'acheteur``,
    ``הקונה``): (its last content word's key, the index after it), or ("", j)."""
    n = len(tokens)
    if j >= n:
        return "", j
    hebrew = _hebrew_definite(tokens[j])
    if _word(tokens[j]) in _ARTICLES:
        j += 1
    elif not (hebrew or _is_article(tokens[j])):
        return "", j
    role, end = "", j
    for k in range(j, min(n, j + _MAX_ROLE_WORDS)):
        key = _key(tokens[k], lang)
        # In Hebrew every word of a definite phrase carries the article ("הקונה הראשי");
        # a word with another proclitic ("בחוזה", in the contract) is past the role.
        if not key or (hebrew and not _hebrew_definite(tokens[k])):
            break
        role, end = key, k + 1
        if tokens[k].endswith(_CLOSERS):
            break
    return role, end


def fact_roles(tokens: list[bytes], lang: str) -> dict[str, str]:
    """Names bound to roles by apposition: ``NAME, the ROLE,`` (the role closed by
    punctuation or the end, so that a list "Acme, the seller and Globex" does not count)."""
    out: dict[str, str] = {}
    # Only the tokens closed by a comma open an apposition: found in one C-level pass.
    for i in compress(range(len(tokens) - 1), map(bytes.endswith, tokens, _COMMA)):
        name = _key(tokens[i], lang)
        if not name:
            continue
        role, end = _role_after(tokens, i + 1, lang)
        if role and (end == len(tokens) or tokens[end - 1].endswith(_CLOSERS)):
            out.setdefault(name, role)
    return out


def claim_roles(tokens: list[bytes], lang: str) -> list[RolePair]:
    """The (name, role) pairs a claim states: ``NAME was the ROLE``, ``the ROLE was NAME``
    or an apposition."""
    if _RAW_COPULAS.isdisjoint(tokens) and not any(map(bytes.endswith, tokens, _COMMA)):
        return []
    out: list[RolePair] = []
    copulas = map(_COPULAS.__contains__, _words(tokens))
    next(copulas, None)  # the first token has no name before it
    for i in compress(range(1, len(tokens)), copulas):
        name = _key(tokens[i - 1], lang)
        role, _ = _role_after(tokens, i + 1, lang)
        if name and role:
            out.append((name, role))
            continue
        # "The buyer was Globex": article, role, copula, name.
        if i >= 2 and i + 1 < len(tokens):
            role, end = _role_after(tokens, i - 2, lang)
            name = _key(tokens[i + 1], lang)
            if role and end == i and name:
                out.append((name, role))
    out.extend(fact_roles(tokens, lang).items())
    return out


def role_conflict(pairs: list[RolePair], fact_tokens: list[bytes], lang: str) -> bool:
    """Some pair of the claim gives its name a role that the fact gives another name,
    while the fact gives the name another role."""
    if not pairs:
        return False
    return conflicting_roles(pairs, fact_roles(fact_tokens, lang))


def could_conflict(pairs: list[RolePair], fact_keys: Container[str]) -> bool:
    """False when :func:`conflicting_roles` is surely False for a fact of these content
    keys: a conflict needs the pair's name bound in the fact and its role given there to
    another name, so both are keys of the fact's tokens. Most candidates name neither,
    and their tokens and roles need not be read at all."""
    return any(name in fact_keys and role in fact_keys for name, role in pairs)


def conflicting_roles(pairs: list[RolePair], roles: dict[str, str]) -> bool:
    """:func:`role_conflict` of the fact whose :func:`fact_roles` are ``roles`` (the
    checker reads them once per fact and check, not once per claim)."""
    if not pairs or not roles:
        return False
    holders: dict[str, set[str]] = {}
    for name, role in roles.items():
        holders.setdefault(role, set()).add(name)
    for name, role in pairs:
        other = roles.get(name)
        if other is not None and other != role and holders.get(role, set()) - {name}:
            return True
    return False
