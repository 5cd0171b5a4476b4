"""Per-language lexical analysis for retrieval (English, French, Italian, Hebrew).

Documents are analysed in their own language (front matter ``language``, else detected)
and questions in the language they are written in:

- folding: case, accents, Hebrew points, Hebrew final letters (``ם`` → ``מ``);
- stopwords per language, including the words that ask rather than say what is asked
  about (``how``, ``quelles``, ``qual``, ``האם``, ``rules``…);
- *light* words, kept at a quarter of their weight: verbs and nouns that carry the
  relation, not the topic (``pay``, ``rate``, ``allowed``, ``מקבלים``…);
- a light stemmer per language (suffixes; it only has to make inflected and derived
  forms meet: ``restauration``/``restaurant``, ``autorizza``/``autorizzazione``);
- Hebrew: each word is also indexed without up to three one-letter prefixes
  (ו ה ב ל מ ש כ), without plural or construct endings, and with internal vowel letters
  dropped (``מדווחים`` / ``לדווח`` / ``דיווח`` meet at ``דוח``);
- a small synonym table (:data:`SYNONYMS`): the words people ask with mapped to the
  words the documents use, question side only;
- clauses: ``…, and which …`` starts a new part of the question.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "LIGHT_WEIGHT",
    "SYNONYMS",
    "QueryTerm",
    "analyze_query",
    "detect_language",
    "fold",
    "index_terms",
    "stem",
]

LIGHT_WEIGHT = 0.25
"""Weight of a light word relative to a content word of the same IDF."""

_FINALS = str.maketrans({"ך": "כ", "ם": "מ", "ן": "נ", "ף": "פ", "ץ": "צ"})
_WORD = re.compile(r"[^\W_]+")
_HE_PREFIXES = frozenset("והבלמשכ")


def fold(text: str) -> str:
    """Lower-case ``text``; remove accents and Hebrew points; Hebrew final letters made plain."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return plain.translate(_FINALS)


def _words(text: str) -> frozenset[str]:
    return frozenset(fold(w) for w in text.split())


_STOP: dict[str, frozenset[str]] = {
    "en": _words(
        "a an the and or but if of to in on at by for with from as is are was were be been being "
        "do does did have has had i you he she it we they me my your our their its this that these "
        "those there here what which who whom whose when where why how can could may might must "
        "shall should will would not no nor so than too very just about into over under up down out "
        "any all each every some such only own same other more most much many also per please tell "
        "know am us them him her his hers ours yours theirs let don s t "
        # asking, not saying what is asked about
        "apply applies rule rules regarding concerning say says explain need needs want use used "
        "using happen happens take spend"
    ),
    "fr": _words(
        "le la les l un une des du de d et ou mais donc or ni car a au aux en dans par pour sur "
        "avec sans sous chez ce cet cette ces c qui que quoi qu dont est sont etre etait ai as "
        "avons avez ont il elle ils elles on nous vous je j tu me m te t se s y ne n pas plus moins "
        "tres son sa ses leur leurs mon ma mes ton ta tes notre nos votre vos quel quelle quels "
        "quelles comment combien pourquoi quand ou peut peuvent puis puisse "
        # asking
        "regle regles faut fonctionne passe faire utiliser concernant fourni fournis dois doit"
    ),
    "it": _words(
        "il lo la i gli le l un uno una di a da in con su per tra fra e ed o ma che chi cui non "
        "del dello della dei degli delle al allo alla ai agli alle dal dallo dalla dai dagli dalle "
        "nel nello nella nei negli nelle sul sullo sulla sui sugli sulle dell nell all dall sull "
        "si ci mi ti vi ne sono sei siamo siete essere ha hanno ho hai come quanto quanti quante "
        "quale quali qual quando dove perche cosa questo questa questi queste quello quella posso "
        "puo possono sta mio mia miei mie entro "
        # asking
        "devo deve regola regole prevede funziona"
    ),
    "he": _words(
        "של את על עם אל גם לא כן אם או כי זה זו זאת אלה הוא היא הם הן אני אתה אנחנו אתם "
        "מה מי איך כמה למה מתי איפה יש אין היה היו יהיה כל רק עוד "
        "האם איזה איזו אילו הכללים כללים"
    ),
}

# Light words: what a question asks about a topic, not the topic (weight LIGHT_WEIGHT).
_LIGHT_WORDS: dict[str, frozenset[str]] = {
    "en": _words(
        "pay pays paid get gets give gives receive choose pick select allow allowed permitted "
        "possible required require make makes keep reimbursed reimburse "
        # quantity words: what is asked about the topic
        "rate amount cost costs price length number size"
    ),
    "fr": _words(
        "payer paie paye obtenir recevoir recoit choisir possible autorise autorisee montant "
        "taux prix cout"
    ),
    "it": _words(
        "pagare paga pagato ricevere ricevo scegliere possibile consentito chiedo chiedere "
        "richiedere importo tasso costo prezzo"
    ),
    "he": _words(
        "צריך אפשר מותר משלם לשלם משלמים מקבלים מקבל לקבל בוחרים לבחור בוחר עושים לעשות "
        "אורך מספר גודל סכום"
    ),
}

SYNONYMS: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "fly": ("flight",),
        "flies": ("flight",),
        "plane": ("flight",),
        "doctor": ("medical",),
        "ill": ("sick",),
        "sick": ("ill",),
        "lose": ("lost",),
        "remote": ("home",),
        "remotely": ("home",),
        "two-factor": ("multi-factor",),
    },
    "fr": {
        "dejeuner": ("restaurant",),
        "manger": ("restaurant",),
        "caracteres": ("typographie",),
    },
    "it": {},
    "he": {},
}
"""Question word → document words (before stemming), per language. Kept small on purpose:
each entry is a word people ask with that the documents of this kind say otherwise."""

# Phrases that mean one thing: any alternative (a set of words all present) covers them.
_PHRASES: dict[str, list[tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]]] = {
    "en": [
        (("work", "from", "home"), (("remote",),)),
        (("working", "from", "home"), (("remote",),)),
        (("outside", "the", "office"), (("remote",), ("home",))),
    ],
    "fr": [],
    "it": [],
    "he": [],
}

_CLAUSE_JOINERS = _words("and et e")
_QUESTION_WORDS = _words(
    "what which who how when where why can do does is are quel quelle quels quelles comment "
    "combien quand ou qui que qual quale quali come quanto quanti quante quando dove chi cosa"
)
_HE_CLAUSE = _words("ומה ומי ואיך וכמה ומתי ואיזה ואילו והאם")


# --------------------------------------------------------------------------- stemming


def _collapse(w: str) -> str:
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
        return w[:-1]
    return w


_EN_SUFFIXES = (
    ("abilities", ""), ("ability", ""), ("ications", "y"), ("ication", "y"), ("ations", "ate"),
    ("ation", "ate"), ("ements", ""), ("ement", ""), ("ments", ""), ("ment", ""), ("ities", ""),
    ("ity", ""), ("ness", ""), ("ings", ""), ("ing", ""), ("able", ""), ("ible", ""),
    ("ies", "y"), ("ied", "y"), ("ers", ""), ("er", ""), ("ed", ""), ("ly", ""), ("es", ""),
)  # fmt: skip


@lru_cache(maxsize=65536)
def _stem_en(w: str) -> str:
    if len(w) <= 3:
        return w[:-1] + "i" if len(w) == 3 and w.endswith("y") else w  # "day" = "days"
    for suffix, repl in _EN_SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= (4 if suffix == "er" else 3):
            w = w[: -len(suffix)] + repl
            break
    else:
        if w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
            w = w[:-1]
    w = _collapse(w)
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 2 and w.endswith("y"):
        w = w[:-1] + "i"
    return w


_FR_SUFFIXES = (
    "issement", "atric", "ateur", "ation", "ment", "ique", "able", "anc", "enc", "eus",
    "eur", "ant", "ag", "it", "er", "ir",
)  # fmt: skip


@lru_cache(maxsize=65536)
def _stem_fr(w: str) -> str:
    if len(w) <= 3:
        return w
    if len(w) > 4 and w[-1] in "sx":
        w = w[:-1]
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    for suffix in _FR_SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return _collapse(w[: -len(suffix)])  # "equipement" -> "equipe", not "equip"
    while len(w) > 3 and w[-1] == "e":
        w = w[:-1]
    return _collapse(w)


_IT_SUFFIXES = (
    "azione", "azioni", "amento", "amenti", "imento", "imenti", "mente", "abile", "abili",
    "ibile", "ibili", "ativo", "ativa", "ativi", "ative", "iche", "ichi", "ico", "ica", "ici",
    "ale", "ali", "ata", "ate", "ati", "ato", "ita", "ite", "iti", "ito", "are", "ere", "ire",
    "ano", "ono", "a", "e", "i", "o",
)  # fmt: skip


@lru_cache(maxsize=65536)
def _stem_it(w: str) -> str:
    if len(w) <= 3:
        return w
    for suffix in _IT_SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


@lru_cache(maxsize=65536)
def _hebrew_forms(word: str) -> tuple[str, ...]:
    """The word, without up to three one-letter prefixes, without plural/construct endings,
    and without internal vowel letters (folded text: no final letters)."""
    bases = [word]
    stem_ = word
    for _ in range(3):
        if len(stem_) >= 4 and stem_[0] in _HE_PREFIXES:
            stem_ = stem_[1:]
            bases.append(stem_)
        else:
            break
    forms = dict.fromkeys(bases)
    for form in bases:
        bare = form
        if len(bare) >= 5 and bare.endswith(("ימ", "ות")):
            bare = bare[:-2]
        if len(bare) >= 4 and bare[-1] in "התאי":
            bare = bare[:-1]
        forms[bare] = None
        inner = bare[0] + bare[1:-1].replace("י", "").replace("וו", "ו") + bare[-1]
        if len(inner) >= 3:
            forms[inner] = None
    return tuple(forms)


def stem(word: str, lang: str) -> str:
    """The stem of a folded Latin-script word in ``lang`` (``en``, ``fr``, ``it``)."""
    if lang == "fr":
        return _stem_fr(word)
    if lang == "it":
        return _stem_it(word)
    return _stem_en(word)


def _is_hebrew(word: str) -> bool:
    return "\u0590" <= word[0] <= "\u05ff"


def _forms(word: str, lang: str) -> tuple[str, ...]:
    if word.isdigit():
        return (word,)
    if _is_hebrew(word):
        return _hebrew_forms(word)
    return (stem(word, lang),)


def _lang(lang: str | None) -> str:
    return lang if lang in _STOP else "en"


def _is_stop(word: str, lang: str) -> bool:
    stops = _STOP["he"] if _is_hebrew(word) else _STOP[lang]
    if word in stops:
        return True
    return _is_hebrew(word) and len(word) > 2 and word[0] in _HE_PREFIXES and word[1:] in stops


def _tokens(text: str) -> list[str]:
    # Hyphenated words stay one word for the synonym table ("two-factor"), and are
    # split for indexing.
    return re.findall(r"[^\W_]+(?:-[^\W_]+)*|[?;]", fold(text))


def index_terms(text: str, lang: str | None) -> list[str]:
    """The index terms of a document text in ``lang`` (every Hebrew form included)."""
    lang = _lang(lang)
    out: list[str] = []
    for word in _WORD.findall(fold(text)):
        if len(word) < 2 and not word.isdigit():
            continue
        if _is_stop(word, lang):
            continue
        out.extend(_forms(word, lang))
    return out


@dataclass(slots=True, frozen=True)
class QueryTerm:
    """One thing the question asks about: covered when any alternative is all present."""

    word: str
    """The word (or phrase) as asked, folded."""
    alternatives: tuple[frozenset[str], ...]
    """Sets of index terms; the first is the word itself."""
    light: bool = False
    clause: int = 0
    """Which part of a ``…, and …`` question the term belongs to (0 = the first)."""


def _synonyms(word: str, lang: str) -> Iterator[frozenset[str]]:
    for other in SYNONYMS.get(lang, {}).get(word, ()):
        yield frozenset(t for w in other.split("-") for t in _forms(w, lang))


def analyze_query(text: str, lang: str | None) -> list[QueryTerm]:
    """The terms of a question in ``lang``, in order, one per distinct word or phrase."""
    lang = _lang(lang)
    tokens = _tokens(text)
    terms: dict[str, QueryTerm] = {}
    clause = 0
    i = 0
    while i < len(tokens):
        word = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if word in ("?", ";") or (word in _CLAUSE_JOINERS and nxt in _QUESTION_WORDS):
            clause += 1 if terms and any(t.clause == clause for t in terms.values()) else 0
            i += 1
            continue
        if word in _HE_CLAUSE and terms:
            clause += 1
            i += 1
            continue
        phrase = _phrase_at(tokens, i, lang)
        if phrase is not None:
            words, phrase_alts = phrase
            base = frozenset(t for w in words if not _is_stop(w, lang) for t in _forms(w, lang))
            extra = tuple(frozenset(t for w in a for t in _forms(w, lang)) for a in phrase_alts)
            key = " ".join(words)
            terms.setdefault(key, QueryTerm(key, (base, *extra), False, clause))
            i += len(words)
            continue
        i += 1
        if "-" in word and word in SYNONYMS.get(lang, {}):
            base = frozenset(t for w in word.split("-") for t in _forms(w, lang))
            alts: tuple[frozenset[str], ...] = (base, *_synonyms(word, lang))
            terms.setdefault(word, QueryTerm(word, alts, False, clause))
            continue
        for part in word.split("-"):
            if (len(part) < 2 and not part.isdigit()) or _is_stop(part, lang) or part in terms:
                continue
            own_forms = _forms(part, lang)
            own = tuple(frozenset((f,)) for f in own_forms)
            light = (
                any(f in _LIGHT_WORDS["he"] for f in own_forms)
                if _is_hebrew(part)
                else (part in _LIGHT_WORDS[lang])
            )
            terms[part] = QueryTerm(part, own + tuple(_synonyms(part, lang)), light, clause)
    return list(terms.values())


def _phrase_at(
    tokens: list[str], i: int, lang: str
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]] | None:
    for words, alts in _PHRASES.get(lang, ()):
        if tuple(tokens[i : i + len(words)]) == words:
            return words, alts
    return None


# --------------------------------------------------------------------------- language

_HINTS: dict[str, frozenset[str]] = {
    "en": _words(
        "the is are what how which who when where can do does my i of and to for with should"
    ),
    "fr": _words(
        "le les est sont quel quelle quels quelles comment combien je de et du des que pour une "
        "au aux est-ce ou qu puis-je peut-on faut-il se-t-il a-t-il y"
    ),
    "it": _words(
        "il lo gli sono qual quale quali come quanti quante quanto posso di e si del della per "
        "che non ho cosa dove chi viene devo alla dei delle al"
    ),
}


def detect_language(text: str) -> str:
    """``he`` for Hebrew script, else the language among en/fr/it with most hint words."""
    if any("\u0590" <= ch <= "\u05ff" for ch in text):
        return "he"
    folded = fold(text)
    words = re.findall(r"[^\W_]+(?:-[^\W_]+)*", folded)
    best, best_hits = "en", 0
    for lang, hints in _HINTS.items():
        hits = sum(w in hints for w in words) + sum(
            p in hints for w in words if "-" in w for p in w.split("-")
        )
        if hits > best_hits:
            best, best_hits = lang, hits
    return best
