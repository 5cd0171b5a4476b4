"""A role bound to the wrong name: "Globex was the buyer" against a fact "signed by Acme
Corp, the buyer, and Globex, the seller" (issue 14: swapped roles passed at 0.96); and
who did what to whom, by word order: "Globex bought Acme Corp" against "Acme Corp bought
Globex" (:func:`claim_clauses`, :func:`order_conflict`).

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

from streamcite.grounding.tokens import token_table
from streamcite.grounding.words import fold

__all__ = [
    "Clause",
    "RolePair",
    "apposition_roles",
    "claim_clauses",
    "claim_roles",
    "clause_at",
    "conflicting_roles",
    "could_conflict",
    "fact_bindings",
    "fact_roles",
    "other_role",
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
# Italian and French prepositions fused with an elided article ("dell'associazione",
# "d'Italia"): past the role, like the separate "of" that is a stopword.
_ELIDED_PREPOSITIONS = tuple(
    (p + q).encode()
    for p in ("dell", "dall", "nell", "sull", "all", "coll", "d", "qu")
    for q in ("'", "’")
)
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
    key = token_table(lang).key_of(token)
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
        if k > j and tokens[k].startswith(_ELIDED_PREPOSITIONS):
            break  # "il portiere dell'associazione": the role ends before "of"
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
    out = _copula_roles(tokens, lang)
    out.extend(fact_roles(tokens, lang).items())
    return out


_DEFINITE = frozenset(str.split("the le la les il lo gli i"))


def _definite(token: bytes) -> bool:
    """A definite article (``the``, ``l'acheteur``) or a Hebrew definite word."""
    w = _word(token)
    return w in _DEFINITE or token.startswith((b"l'", "l’".encode())) or _hebrew_definite(token)


def apposition_roles(tokens: list[bytes], lang: str) -> list[RolePair]:
    """The claim's ``NAME, the ROLE,`` pairs with a **definite** article: the role that
    identifies the name ("Anna Weber, the treasurer,"), not a class it belongs to
    ("Globex, a company,"). :func:`other_role` reads only these."""
    if not any(map(bytes.endswith, tokens, _COMMA)):
        return []
    out: list[RolePair] = []
    for i in compress(range(len(tokens) - 1), map(bytes.endswith, tokens, _COMMA)):
        if not _definite(tokens[i + 1]):
            continue
        name = _key(tokens[i], lang)
        if not name:
            continue
        role, end = _role_after(tokens, i + 1, lang)
        if role and (end == len(tokens) or tokens[end - 1].endswith(_CLOSERS)):
            out.append((name, role))
    return out


def other_role(pairs: list[RolePair], roles: dict[str, str], lang: str) -> bool:
    """Some pair's name has another role in the fact (``roles``: :func:`fact_bindings`),
    not a synonym of the claim's (:func:`~.lexicon.synonyms`), whoever else holds the
    claim's role: "Anna Weber, the secretary" against "Anna Weber, the treasurer" or
    "Anna Weber is the treasurer"."""
    for name, role in pairs:
        other = roles.get(name)
        if other is not None and other != role and not _same_role(other, role, lang):
            return True
    return False


def fact_bindings(tokens: list[bytes], lang: str) -> dict[str, str]:
    """A fact's names bound to roles, by apposition (:func:`fact_roles`) or by a copula
    ("Anna Weber is the treasurer of the association"): the first binding of a name."""
    if _RAW_COPULAS.isdisjoint(tokens):
        return fact_roles(tokens, lang)
    out = fact_roles(tokens, lang)
    for name, role in _copula_roles(tokens, lang):
        out.setdefault(name, role)
    return out


def _copula_roles(tokens: list[bytes], lang: str) -> list[RolePair]:
    """``NAME was the ROLE`` and ``the ROLE was NAME``."""
    out: list[RolePair] = []
    if _RAW_COPULAS.isdisjoint(tokens):
        return out
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
    return out


def role_conflict(pairs: list[RolePair], fact_tokens: list[bytes], lang: str) -> bool:
    """Some pair of the claim gives its name a role that the fact gives another name,
    while the fact gives the name another role."""
    if not pairs:
        return False
    return conflicting_roles(pairs, fact_roles(fact_tokens, lang))


def could_conflict(
    pairs: list[RolePair], fact_keys: Container[str], *, own_role: bool = False
) -> bool:
    """False when :func:`conflicting_roles` is surely False for a fact of these content
    keys: a conflict needs the pair's name bound in the fact and its role given there to
    another name, so both are keys of the fact's tokens (with ``own_role``, the name
    alone: the fact may give it another role and the claim's role to nobody). Most
    candidates name neither, and their tokens and roles need not be read at all."""
    if own_role:
        return any(name in fact_keys for name, _ in pairs)
    return any(name in fact_keys and role in fact_keys for name, role in pairs)


def conflicting_roles(pairs: list[RolePair], roles: dict[str, str]) -> bool:
    """:func:`role_conflict` of the fact whose :func:`fact_bindings` are ``roles`` (the
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


def _same_role(a: str, b: str, lang: str) -> bool:
    """Two role keys that name the same role: synonyms (``chairman``, ``president``)."""
    from streamcite.grounding import lexicon  # lexicon -> tokens; no cycle at import

    return b in lexicon.synonyms(a, lang) or a in lexicon.synonyms(b, lang)


# ------------------------------------------------------------ who did what to whom

Clause = tuple[str, frozenset[str], frozenset[str]]
"""(verb key, agent keys, patient keys): "Globex bought Acme Corp" is ("bought",
{"globex"}, {"acme", "corp"}); "Acme Corp was bought by Globex" is the same clause."""


# Raw lower-cased tokens (:func:`~.tokens.raw_tokens`): one set lookup a token.
def _raw(words: str) -> frozenset[bytes]:
    return frozenset(w.encode() for w in words.split())


# Between the subject and the verb: auxiliaries only ("has bought", "a été rachetée",
# "è stata acquistata"); anything else (an adverb, a negation, "then") and the clause is
# not read. The passive ones make "by / par / da" an agent: "Acme was bought by Globex".
_ACTIVE_AUX = _raw(
    "has have had will would shall can could may might must did does do "
    "a ont avait avaient aura auront ha hanno aveva avevano avrà"
)
_PASSIVE_AUX = _raw(
    "is was are were be been being été est sont était étaient fut furent sera seront "
    "è era erano sono fu furono sarà stato stata stati state "
    "viene vengono venne vennero veniva venivano"
)
_AUX = _ACTIVE_AUX | _PASSIVE_AUX
# Between the verb and its object: articles, the Hebrew object marker, an agent marker
# (Hebrew "על ידי": "על" alone, on or about, is not read).
_AGENTS = _raw('by par da dal dallo dalla dai dagli dalle ידי בידי ע"י')
_HEBREW_OBJECT = "את".encode()
_HEBREW_ON = "על".encode()
_OBJECT_WORDS = (
    _raw("the a an le la les un une des du il lo gli i una uno")
    | _AGENTS
    | {_HEBREW_OBJECT, _HEBREW_ON}
)
# Verbs whose two sides may swap without changing the fact ("Acme merged with Globex" is
# read as no clause anyway: "with" is not an object word).
_SYMMETRIC = str.split(
    "meet meets met marry marries married wed weds border borders bordered "
    "face faces faced play plays played tie ties tied draw draws drew "
    "merge merges merged resemble resembles resembled equal equals equalled equaled "
    "match matches matched rival rivals rivalled versus vs "
    "rencontre rencontré rencontrée épouse épousé affronte affronté borde fusionne "
    "joue joué égale "
    "incontra incontrato incontrata sposa sposato affronta affrontato confina gioca "
    "giocato eguaglia "
    "פגש פגשה נפגש נפגשה התחתן התחתנה שיחק שיחקה גובל גובלת התמודד התמודדה"
)
_SYMMETRIC_KEYS: dict[str, frozenset[str]] = {}
_MAX_SIDE = 3
_MAX_SKIP = 3


def _symmetric(lang: str) -> frozenset[str]:
    keys = _SYMMETRIC_KEYS.get(lang)
    if keys is None:
        table = token_table(lang)
        keys = _SYMMETRIC_KEYS[lang] = frozenset(table.keys([w.encode() for w in _SYMMETRIC]))
    return keys


def _open(token: bytes) -> bool:
    """Not closed by punctuation: the phrase may go on past it."""
    return not token.endswith(_CLOSERS)


def _subject(tokens: list[bytes], keys: list[str], v: int) -> tuple[frozenset[str], bool] | None:
    """The phrase before the verb at ``v`` (after its auxiliaries): (its keys, passive)."""
    i, passive = v - 1, False
    while i >= 0 and v - i <= _MAX_SKIP and tokens[i] in _AUX:
        passive = passive or tokens[i] in _PASSIVE_AUX
        i -= 1
    side: list[str] = []
    while i >= 0 and len(side) < _MAX_SIDE and keys[i] and keys[i][0] != "#":
        if not _open(tokens[i]) or tokens[i] in _AGENTS:
            break  # "Acme, Globex bought …": the comma ends the phrase
        side.append(keys[i])
        i -= 1
    return (frozenset(side), passive) if side else None


def _object(
    tokens: list[bytes], keys: list[str], v: int
) -> tuple[frozenset[str], bool, bool] | None:
    """The phrase after the verb at ``v``: (its keys, whether an agent marker opens it,
    whether a marker opens it: an agent or Hebrew's object marker "את")."""
    j, n, skipped = v + 1, len(tokens), []
    while j < n and j - v <= _MAX_SKIP and tokens[j] in _OBJECT_WORDS:
        skipped.append(tokens[j])
        j += 1
    agent = not _AGENTS.isdisjoint(skipped)
    if _HEBREW_ON in skipped and not agent:
        return None
    side: list[str] = []
    while j < n and len(side) < _MAX_SIDE and keys[j] and keys[j][0] != "#":
        if tokens[j] in _AGENTS:
            break
        side.append(keys[j])
        if not _open(tokens[j]):
            break
        j += 1
    if not side:
        return None
    return frozenset(side), agent, agent or _HEBREW_OBJECT in skipped


def clause_at(
    tokens: list[bytes], keys: list[str], v: int, lang: str
) -> tuple[Clause, bool] | None:
    """The clause around the verb at ``v`` and whether a marker opens its object, or
    None when its reading is not clear."""
    if not _open(tokens[v]) or keys[v] in _symmetric(lang):
        return None
    before = _subject(tokens, keys, v)
    after = _object(tokens, keys, v) if before is not None else None
    if before is None or after is None:
        return None
    (left, passive), (right, agent, marked) = before, after
    if agent and (passive or lang == "he"):  # Hebrew marks the passive on the verb
        return (keys[v], right, left), marked
    if agent or passive:
        return None  # "by" without a passive ("stood by"), a passive without its agent
    return (keys[v], left, right), marked


def claim_clauses(tokens: list[bytes], names: set[str], lang: str) -> list[Clause]:
    """The clauses of a claim with a name on one side at least ("Globex bought Acme
    Corp", "Acme Corp was bought by Globex", "Globex a racheté Acme"); the verb is a
    content word that is neither a name nor a number. Hebrew has no capitals: its
    clauses are those whose object a marker opens ("גלובקס קנתה את אקמה", "אקמה נקנתה על
    ידי גלובקס")."""
    hebrew = lang == "he"
    if not (names or hebrew):
        return []
    keys = token_table(lang).keys(tokens)
    if hebrew:  # the verb is right before the marker
        at = list(compress(range(len(tokens)), map(_OBJECT_WORDS.__contains__, tokens)))
        verbs = {i - 1 for i in at}
    else:  # the verb is a side and a skip away from a name at most
        at = list(compress(range(len(keys)), map(names.__contains__, keys)))
        reach = _MAX_SIDE + _MAX_SKIP
        verbs = {v for i in at for v in range(i - reach, i + reach + 1)}
    out: list[Clause] = []
    last = len(tokens) - 1
    for v in sorted(verbs):
        if v < 1 or v >= last:
            continue
        key = keys[v]
        if not key or key[0] == "#" or key in names:
            continue
        if not (keys[v - 1] or tokens[v - 1] in _AUX) or not (
            keys[v + 1] or tokens[v + 1] in _OBJECT_WORDS
        ):
            continue  # nothing on one side: most words, passed over without a call
        read = clause_at(tokens, keys, v, lang)
        if read is None:
            continue
        clause, marked = read
        if (hebrew and marked) or not names.isdisjoint(clause[1] | clause[2]):
            out.append(clause)
    return out
