"""Word lists and per-word rules of the offline grounding checker.

English, French, Italian and Hebrew (other Latin-script languages get the generic
rules): folding (case, accents, Hebrew points and final letters), stopwords, negation
cues, number words, months, elisions, language detection and a light stemmer per
language (suffixes; Hebrew proclitics and plural endings). Tokenising and the memo
tables that use them are in :mod:`streamcite.grounding.tokens`. No model weights.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

__all__ = ["LANGUAGES", "detect_language", "fold", "is_stopword", "stem"]

LANGUAGES = ("en", "fr", "it", "he")
"""Languages with their own stopwords, stemmer, number words and negation cues."""

# --------------------------------------------------------------------------- folding

_HEBREW_FINALS = str.maketrans({"ך": "כ", "ם": "מ", "ן": "נ", "ף": "פ", "ץ": "צ"})
# Typographic apostrophes and Hebrew geresh/gershayim become ASCII so one regex
# handles them; dashes become spaces.
_PUNCT_FOLD = str.maketrans(
    {
        "’": "'",
        "‘": "'",
        "ʼ": "'",
        "׳": "'",
        "״": '"',
        "‐": " ",
        "‑": " ",
        "–": " ",
        "—": " ",
        "־": " ",
    }
)
# Combining marks left by NFKD (Latin accents) and Hebrew points/cantillation.
_MARKS_RE = re.compile("[\u0300-\u036f\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7]")


def fold(text: str) -> str:
    """Lower-case, accent-free, Hebrew-point-free text with Hebrew final letters normalised.

    The length may change (NFKD): use it for matching, never for offsets.
    """
    if text.isascii():
        return text.lower()  # nothing else to fold, and O(1) to know
    text = unicodedata.normalize("NFKD", text.translate(_PUNCT_FOLD))
    return _MARKS_RE.sub("", text).lower().translate(_HEBREW_FINALS)


# ------------------------------------------------------------------------- word lists


def _folded(words: str) -> frozenset[str]:
    return frozenset(fold(w) for w in words.split())


_STOP: dict[str, frozenset[str]] = {
    "en": _folded(
        """a an the and or but if then else of at by for with about against between into
        through during before after above below to from up down in out on off over under
        again further once here there when where why how all any both each few more most
        other some such only own same so than too very can will just should now i me my
        myself we our ours ourselves you your yours yourself yourselves he him his himself
        she her hers herself it its itself they them their theirs themselves what which who
        whom whose this that these those am is are was were be been being have has had
        having do does did doing would could might must shall may also as until while
        because not no nor never none s t d ll re ve m o y yes well still even yet however
        thus therefore although though whether either neither upon per via within without
        among across around along onto toward towards since least"""
    ),
    "fr": _folded(
        """le la les l un une des du de d au aux à a et ou mais donc or ni car que qu qui
        quoi dont où ce cet cette ces c il ils elle elles on nous vous je j tu me m te t se
        s lui leur leurs son sa ses mon ma mes ton ta tes notre nos votre vos en y dans par
        pour sur avec sous chez entre vers est sont été être était étaient étant a ont avait
        avaient avoir eu fut sera seront serait plus très aussi comme si tout tous toute
        toutes ne pas n jusqu lorsqu puisqu quand sans alors ainsi cela ceci ça là ici déjà
        encore même autres autre"""
    ),
    "it": _folded(
        """il lo la i gli le l un uno una un' di a da in con su per tra fra del dello della
        dei degli delle al allo alla ai agli alle dal dallo dalla dai dagli dalle nel nello
        nella nei negli nelle sul sullo sulla sui sugli sulle dell nell all dall sull quell
        col coi e ed o od ma che chi cui non come dove quando perché anche più se si ci vi ne
        è sono era erano essere stato stata stati state sia siano ha hanno aveva avevano
        avere questo questa questi queste quello quella quelli quelle suo sua suoi sue loro
        mio mia miei mie tuo tua nostro nostra nostri nostre vostro vostra io tu lui lei noi
        voi esso essa essi esse molto tutto tutti tutte tutta ogni già ancora poi qui lì
        però quindi cioè mentre oppure né senza c"""
    ),
    "he": _folded(
        """של את על עם אל כי גם או אם זה זו זאת הוא היא הם הן אני אתה את אנחנו אתם אתן
        היה הייתה היו להיות יהיה תהיה כל כמו אשר רק עוד מאוד כבר בין אחרי לפני לא אין ידי עד מן
        אך אבל כן לכן איך מה מי למה איפה כאשר שם פה כאן הזה הזאת האלה אלה אותו אותה אותם
        לו לה להם בו בה בהם ממנו שלו שלה שלהם שלנו שלי אף שום יותר פחות"""
    ),
}
_STOP_ANY = frozenset().union(*_STOP.values())

# Negation cues, checked on folded tokens before stemming.
_NEG: dict[str, frozenset[str]] = {
    "en": _folded("not no never none nobody nothing neither nor without cannot"),
    "fr": _folded("ne pas jamais aucun aucune rien sans ni guère nullement"),
    "it": _folded("non mai nessuno nessuna nessun niente nulla senza"),
    "he": _folded("לא אין אינו אינה אינם אינן בלי ללא מעולם שום"),
}
_NEG_ANY = frozenset().union(*_NEG.values())

# Number words from two up ("one"/"un"/"uno" are articles or pronouns too often).
_NUMBER_WORDS: dict[str, dict[str, int]] = {
    "en": {
        "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
        "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
        "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
        "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
        "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000, "dozen": 12,
    },
    "fr": {
        "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "six": 6, "sept": 7, "huit": 8,
        "dix": 10, "onze": 11, "douze": 12, "treize": 13, "quatorze": 14, "quinze": 15,
        "seize": 16, "vingt": 20, "trente": 30, "quarante": 40, "cinquante": 50,
        "soixante": 60, "cent": 100, "mille": 1000,
    },
    "it": {
        "due": 2, "tre": 3, "quattro": 4, "cinque": 5, "sette": 7, "otto": 8, "nove": 9,
        "dieci": 10, "undici": 11, "dodici": 12, "tredici": 13, "quattordici": 14,
        "quindici": 15, "sedici": 16, "diciassette": 17, "diciotto": 18, "diciannove": 19,
        "venti": 20, "trenta": 30, "quaranta": 40, "cinquanta": 50, "sessanta": 60,
        "settanta": 70, "ottanta": 80, "novanta": 90, "cento": 100, "mille": 1000,
    },
    "he": {
        fold(k): v
        for k, v in {
            "שניים": 2, "שתיים": 2, "שני": 2, "שתי": 2, "שלושה": 3, "שלוש": 3,
            "ארבעה": 4, "ארבע": 4, "חמישה": 5, "חמש": 5, "שישה": 6, "שבעה": 7,
            "שבע": 7, "שמונה": 8, "תשעה": 9, "תשע": 9, "עשרה": 10, "עשר": 10,
            "עשרים": 20, "שלושים": 30, "ארבעים": 40, "חמישים": 50, "מאה": 100,
            "אלף": 1000,
        }.items()
    },
}  # fmt: skip


# Ordinals ("sixth" = "6th"): keys ``#oN``, checked like numbers ("the sixth penalty"
# is not "the first penalty"). Italian "prima"/"secondo" and French "second" are left
# out: they are also "before", "according to" and a unit of time.
_ORDINAL_WORDS: dict[str, dict[str, int]] = {
    "en": {
        w: i + 1
        for i, w in enumerate(
            str.split(
                "first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
                "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth "
                "nineteenth twentieth"
            )
        )
    },
    "fr": {
        fold(w): i + 1
        for i, w in enumerate(
            str.split(
                "premier deuxième troisième quatrième cinquième sixième septième huitième "
                "neuvième dixième onzième douzième"
            )
        )
    },
    "it": {
        w: i + 3
        for i, w in enumerate(str.split("terzo quarto quinto sesto settimo ottavo nono decimo"))
    },
}
_ORDINAL_WORDS["en"]["twelth"] = 12
_ORDINAL_WORDS["fr"]["premiere"] = 1
_ORDINAL_SUFFIX_RE = re.compile(r"(\d+)(?:st|nd|rd|th|er|re|e|eme|o|a|ª|º)")


def _months(spec: str) -> dict[str, int]:
    """``"january jan|february feb|..."`` -> {folded name: month number}."""
    return {fold(name): i + 1 for i, names in enumerate(spec.split("|")) for name in names.split()}


# Months. Left out where the word is too often something else: English "march" and
# "may" (verbs), Italian "ago" (needle) and "mar" (sea), "set" and "gen".
_MONTHS: dict[str, dict[str, int]] = {
    "en": _months(
        "january jan|february feb||april apr||june jun|july jul|august aug|"
        "september sep sept|october oct|november nov|december dec"
    ),
    "fr": _months(
        "janvier janv|février févr|mars|avril avr|mai|juin|juillet juil|août|"
        "septembre sept|octobre oct|novembre nov|décembre déc"
    ),
    "it": _months(
        "gennaio|febbraio feb|marzo|aprile apr|maggio mag|giugno giu|luglio lug|agosto|"
        "settembre|ottobre ott|novembre nov|dicembre dic"
    ),
    "he": _months("ינואר|פברואר|מרץ|אפריל|מאי|יוני|יולי|אוגוסט|ספטמבר|אוקטובר|נובמבר|דצמבר"),
}

_ELISIONS = {
    "fr": _folded("l d j m n s t c qu jusqu lorsqu puisqu quoiqu presqu"),
    "it": _folded("l d dell nell all dall sull coll quell un c v m t s gl bell sant tutt quest"),
}
_ELISIONS_ANY = frozenset().union(*_ELISIONS.values())
_EN_CONTRACTION_TAILS = frozenset({"s", "re", "ve", "ll", "d", "m"})

# --------------------------------------------------------------------------- language


_HEBREW_RE = re.compile("[\u05d0-\u05ea]")
_LATIN_WORD_RE = re.compile(r"[a-zà-ÿ]+")
_LANG_CUES: dict[str, frozenset[str]] = {
    "en": _folded("the and of is was are to with that this it for from by have has"),
    "fr": _folded("le les des est et une du dans pour pas au aux qui sur avec ce cette sont été"),
    "it": _folded(
        "il gli della delle degli dell nell che di per una non sono nel nella del alla con è "
        "anche ha hanno"
    ),
}


def detect_language(text: str) -> str:
    """``he``, ``en``, ``fr``, ``it`` or ``und`` from script and stopword cues."""
    sample = text[:4000]
    hebrew = len(_HEBREW_RE.findall(sample))
    # Letters are counted only when there is Hebrew to weigh (a pass per character).
    if hebrew and hebrew / max(1, sum(1 for c in sample if c.isalpha())) > 0.3:
        return "he"
    words = Counter(_LATIN_WORD_RE.findall(sample.lower()))
    if not words:
        return "und"
    best, best_hits = "und", 0
    for lang, cues in _LANG_CUES.items():
        hits = sum(words[w] for w in cues)
        if hits > best_hits:
            best, best_hits = lang, hits
    return best


def _lang_key(lang: str) -> str:
    return lang if lang in _STOP else "und"


def is_stopword(word: str, lang: str) -> bool:
    """``word`` (folded) is a function word of ``lang`` (any known language for ``und``)."""
    stops = _STOP.get(lang, _STOP_ANY)
    return word in stops


# ------------------------------------------------------------------------- stemming

_VOWELS = frozenset("aeiouy")


def _stem_en(w: str) -> str:
    if len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            base = w[: -len(suffix)]
            if not any(c in _VOWELS for c in base):
                break
            w = base
            if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]
            break
    if w.endswith("ly") and len(w) > 5:
        w = w[:-2]
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    if w.endswith("y") and len(w) > 3:
        w = w[:-1] + "i"
    return w


def _stem_fr(w: str) -> str:
    if len(w) <= 3:
        return w
    if w[-1] in "sx" and len(w) > 4:
        w = w[:-1]
    if w.endswith("ement") and len(w) > 7:
        w = w[:-5]
    elif w.endswith("ment") and len(w) > 6:
        w = w[:-4]
    if w.endswith("ee") and len(w) > 4:
        w = w[:-2]
    elif w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def _stem_it(w: str) -> str:
    if len(w) <= 3:
        return w
    if w.endswith(("zione", "zioni")):
        return w[:-1]
    if w.endswith(("che", "chi", "ghe", "ghi")) and len(w) > 4:
        return w[:-2]
    if w[-1] in "aeio":
        return w[:-1]
    return w


_HE_PROCLITICS = frozenset(fold("ו ה ב ל מ ש כ"))


def _stem_he(w: str) -> str:
    # Strip up to three one-letter proclitics (ו, ה, ב, ל, מ, ש, כ) while three
    # letters remain: applied alike to claims and facts, so over-stripping is
    # consistent on both sides.
    for _ in range(3):
        if len(w) > 3 and w[0] in _HE_PROCLITICS:
            w = w[1:]
        else:
            break
    if len(w) > 4 and w.endswith((fold("ים"), fold("ות"))):
        w = w[:-2]
    elif len(w) > 3 and w.endswith(fold("ה")):
        w = w[:-1]
    return w


def _stem_und(w: str) -> str:
    if len(w) > 4 and w[-1] == "s" and w[-2] != "s":
        return w[:-1]
    return w


_STEMMERS = {"en": _stem_en, "fr": _stem_fr, "it": _stem_it, "he": _stem_he, "und": _stem_und}


def stem(word: str, lang: str) -> str:
    """Light stem of a folded word (suffixes; Hebrew also proclitics)."""
    if _HEBREW_RE.match(word):
        return _stem_he(word)
    return _STEMMERS.get(lang, _stem_und)(word)
