"""Claim splitting: one sentence = one claim, as Google's grounding check does.

Rule-based and multilingual (English, French, Italian, Hebrew; the rules are
script-aware, not language lists alone):

- a sentence ends at ``.``, ``!``, ``?``, ``…``, ``׃`` (Hebrew sof pasuq), ``؟``
  or CJK ``。！？``, together with the closing quotes, brackets and footnote
  markers (``[1]``, ``[1, 2]``) that follow it, when whitespace (or the end) comes
  next and the next word does not start in lower case;
- a period does not end a sentence after a title (``Dr.``, ``M.``, ``Mme.``,
  ``Sig.``, ``Mons.``), an initial (``J. R. R.``), an abbreviation that is never
  final (``e.g.``, ``p. es.``, ``p. ex.``, ``cf.``) or a reference abbreviation
  followed by a number (``p. 12``, ``art. 3``, ``n. 5``, ``Jan. 5``), a dotted
  acronym (``U.S.``, ``U.K.``) unless the text ends there; ``etc.`` ends
  one only when a capital follows;
- line structure counts: a blank line, a list item (``-``, ``*``, ``•``, ``1.``,
  ``a)``), a heading (``#``) or a table row always starts a new claim, and the
  list marker or ``#`` is not part of the claim; a single line break inside a
  paragraph is a soft wrap.

Offsets are character offsets into the text (end exclusive) and never include the
whitespace between sentences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from streamcite.core.markers import strip_markers
from streamcite.grounding.words import fold

__all__ = ["Sentence", "needs_grounding", "split_sentences", "without_markers"]


@dataclass(slots=True, frozen=True)
class Sentence:
    """One sentence of a text: ``text == source[start:end]`` (character offsets)."""

    start: int
    end: int
    text: str
    heading: bool = False
    """A Markdown heading or a table row: never a claim that needs a check."""


def _folded_words(words: str) -> frozenset[str]:
    return frozenset(fold(w) for w in words.split())


# Titles before a name: the period never ends the sentence (matched case-sensitively
# on the first letter, so "me." in English still ends one).
_TITLES = _folded_words(
    """mr mrs ms messrs dr prof sr st rev hon gen col capt cpt lt sgt gov sen rep
    pres mt ft mons msgr mgr card sig sigg sig.ra sig.na dott dott.ssa prof.ssa avv ing arch
    rag geom gent gent.mo egr spett m mm mme mlle me pr ste fr s ss sto sta"""
)
# Abbreviations that never end a sentence.
_NEVER_FINAL = _folded_words(
    """e.g i.e eg ie cf cfr vs viz es ex p.es p.ex a.c d.c c.-a-d c.-à-d op
    ibid ivi loc c.d ca approx ad"""
)
# Reference abbreviations: not final when a number follows (p. 12, art. 3, Jan. 5).
_BEFORE_NUMBER = _folded_words(
    """no nr n nn p pp pag pagg art artt fig figs vol voll cap capp par sez chap ch
    sec ed ep sq tab all c jan feb mar apr jun jul aug sep sept oct nov dec gen mag giu
    lug ago set ott dic janv févr avr juil déc"""
)

_TERMINATOR_RE = re.compile(
    # One character class first, so the regex engine can scan for it quickly.
    r"[.!?…׃؟。！？]+"
    # closing quotes/brackets, then footnote markers like [1] or [1, 2]
    r"(?:[\"'”’»›)\]」』*_]*)"
    r"(?:[ \t]?\[\^?\d{1,4}(?:\s*[,;–-]\s*\d{1,4})*\])*"
    # superscript footnote markers: "week.¹ Badges", "week.⁽¹⁾ Badges", "week.^1 Badges"
    # end a sentence after the marker
    r"(?:[⁰¹²³⁴⁵⁶⁷⁸⁹]+|⁽[⁰¹²³⁴⁵⁶⁷⁸⁹]+⁾|\^\d{1,3})*"
)
_LIST_MARKER_RE = re.compile(
    r"[ \t]*(?:[-*+•‣◦▪]|\d{1,3}[.)]|[a-z][.)]|[A-Z]\)|[ivx]{1,5}[.)]|[IVX]{2,5}[.)])[ \t]+"
)
_HEADING_RE = re.compile(r"[ \t]*#{1,6}[ \t]+")
_DOTTED_ACRONYM_RE = re.compile(r"(?:[A-Z]\.)+[A-Z]")
_INLINE_NUMBER_RE = re.compile(r"(?:\d{1,3}|[a-z]|[ivx]{2,4})[.)]")
_LIST_OPENING_RE = re.compile(r"[:：]\s+((?:\d{1,3}|[a-z]|[ivx]{2,4})[.)])$")
# A lower-case enumerator opening the next item of an inline list ("… room. ii. Sign"):
# the sentence ends before it although the next word starts in lower case.
_LOWER_ITEM_RE = re.compile(r"[ \t]+(?:[a-z]|[ivx]{2,4})[.)][ \t]")
_OPENERS = "\"'“‘«‹([¿¡*_>"


_SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
# A superscript footnote marker ("week.¹", "office²,", "rule⁽³⁾", "week.^1", Markdown's
# "[^1]"): after punctuation or a word of three letters or more, so that an exponent
# ("10³", "m²", "km²", "x^2") stays a number of the claim.
_SUPERSCRIPT_MARKER_RE = re.compile(
    r"(?<![ \t])[ \t]*\[\^[^\]\s]{1,20}\]"  # (from the first blank only: linear)
    r"|(?:(?<=[^\W\d_]{3})|(?<=[.,;:!?)\]\"'”’»]))"
    rf"(?:[{_SUPERSCRIPTS}]+|⁽[{_SUPERSCRIPTS}]+⁾|\^\d{{1,3}}(?![\d.,]?\d))"
    rf"(?:[,˒](?:[{_SUPERSCRIPTS}]+|\^\d{{1,3}}))*"
)


def without_markers(text: str) -> str:
    """The text without footnote markers (for scoring, never for offsets): ``[n]``
    (:func:`streamcite.core.markers.strip_markers`, its offset map dropped) and
    superscript ones (``¹``, ``⁽¹⁾``, ``^1``, ``[^1]``), which would otherwise be read as
    numbers of the claim ("week.¹" against a fact "… per week." vetoed it)."""
    if "[" in text:
        text = strip_markers(text)[0]
    if "^" in text or not text.isascii():
        text = _SUPERSCRIPT_MARKER_RE.sub("", text)
    return text


@dataclass(slots=True)
class _Segment:
    start: int
    end: int
    heading: bool


def _segments(text: str) -> list[_Segment]:
    """Paragraphs, list items, headings and table rows, as character ranges."""
    out: list[_Segment] = []
    open_seg: _Segment | None = None
    pos = 0
    n = len(text)
    while pos <= n:
        nl = text.find("\n", pos)
        line_end = n if nl == -1 else nl
        line = text[pos:line_end]
        stripped = line.strip()
        if not stripped:
            open_seg = None
        else:
            heading = _HEADING_RE.match(line)
            marker = None if heading else _LIST_MARKER_RE.match(line)
            table_row = stripped.startswith("|")
            if heading or table_row:
                content = pos + (heading.end() if heading else 0)
                out.append(_Segment(content, line_end, True))
                open_seg = None
            elif marker or open_seg is None:
                # A numbered marker like "1." only counts at the start of a line with
                # text after it; the text may itself be a sentence ending a paragraph.
                content = pos + (marker.end() if marker else 0)
                open_seg = _Segment(content, line_end, False)
                out.append(open_seg)
            else:
                open_seg.end = line_end  # soft wrap: same paragraph
        if nl == -1:
            break
        pos = nl + 1
    return out


def _prev_word(text: str, seg_start: int, term_start: int) -> str:
    k = term_start
    while k > seg_start and not text[k - 1].isspace():
        k -= 1
    return text[k:term_start].lstrip(_OPENERS)


def _next_char(text: str, pos: int, seg_end: int) -> str:
    k = pos
    while k < seg_end and (text[k].isspace() or text[k] in _OPENERS):
        k += 1
    return text[k] if k < seg_end else ""


def _is_boundary(text: str, seg_start: int, seg_end: int, m: re.Match[str]) -> bool:
    term = m.group(0)
    end = m.end()
    cjk = term[0] in "。！？"
    if end < seg_end and not text[end].isspace() and not cjk:
        return False  # 3.14, example.com, "a.b"
    nxt = _next_char(text, end, seg_end)
    if not nxt:
        return True
    if nxt.islower():
        # A lower-case continuation ("e.g. the", "Yahoo! is") unless an item opens there.
        return _LOWER_ITEM_RE.match(text, end, seg_end) is not None
    if term[0] != "." or term.startswith(".."):
        return True
    prev = _prev_word(text, seg_start, m.start())
    # An elided article is not part of the abbreviation: "l'art. 4", "dell'art. 3".
    prev = prev[max(prev.rfind("'"), prev.rfind("’")) + 1 :]
    if not prev:
        return True
    low = fold(prev)
    if prev[0].isupper() and low in _TITLES:
        return False
    if low in _NEVER_FINAL:
        return False
    if low in _BEFORE_NUMBER and nxt.isdigit():
        return False
    # A single capital letter is an initial (J. R. R. Tolkien, M. Dupont); a dotted
    # acronym (U.S., U.K., E.U.) mostly comes before a capitalised noun ("the U.S. Army"):
    # gluing two claims checks both, splitting one leaves a claim "The U.S." of no words.
    return not ((len(prev) == 1 and prev.isupper()) or _DOTTED_ACRONYM_RE.fullmatch(prev))


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_sentences(text: str) -> list[Sentence]:
    """The sentences of ``text`` with character offsets (end exclusive, no surrounding space)."""
    out: list[Sentence] = []
    for seg in _segments(text):
        start = seg.start
        if not seg.heading:
            for m in _TERMINATOR_RE.finditer(text, seg.start, seg.end):
                if m.end() <= start or not _is_boundary(text, seg.start, seg.end, m):
                    continue
                s, e = _trim(text, start, m.end())
                if _INLINE_NUMBER_RE.fullmatch(text, s, e):
                    continue  # "… app. 2. Click save.": "2." opens the next item
                item = _LIST_OPENING_RE.search(text, s, e)
                # "Steps: 1. Open …": the list opens after the colon; "The option is: b."
                # at the end of the text is the claim's answer, not a list.
                rest = text[m.end() : seg.end]
                if item is not None and rest and not rest.isspace():
                    out.append(Sentence(s, item.start() + 1, text[s : item.start() + 1]))
                    start = item.end() - len(item.group(1))
                    continue
                if s < e:
                    out.append(Sentence(s, e, text[s:e]))
                start = m.end()
        s, e = _trim(text, start, seg.end)
        if s < e:
            out.append(Sentence(s, e, text[s:e], seg.heading))
    return out


# ---------------------------------------------------------------- claims to check

_QUESTION_END_RE = re.compile(r"[?？؟][\"'”’»›)\]*_\s]*$")
_HAS_WORD_RE = re.compile(r"[^\W_]")

# Sentences that start like this are conversational, not factual (folded text).
_FILLER_START = tuple(
    fold(s)
    for s in (
        # English
        "i hope this helps", "i hope that helps", "hope this helps", "hope that helps",
        "i hope this answers", "i hope this information", "let me know", "please let me know",
        "feel free to", "don't hesitate", "do not hesitate", "is there anything else",
        "if you have any other question", "if you have any further question",
        "if you have any more question", "if you have other question", "if you need more",
        "if you need further", "if you need any", "i'm happy to help", "i am happy to help",
        "i'd be happy to", "i would be happy to", "happy to help", "glad to help",
        "great question", "good question", "thanks for asking", "thank you for asking",
        "here is a summary", "here's a summary", "here is what i found", "here's what i found",
        "as an ai",
        # statements about the search itself, not about the world
        "i found no source", "i found no document", "i could not find", "i couldn't find",
        "i did not find", "i didn't find", "no source found", "non ho trovato",
        "non sono riuscito a trovare", "je n'ai trouvé aucun", "je n'ai pas trouvé",
        "לא מצאתי",
        # Italian
        "spero che questo", "spero che questa", "spero di esserti", "spero di esserle",
        "spero che ti sia", "spero che le sia", "spero sia utile", "fammi sapere",
        "fatemi sapere", "mi faccia sapere", "non esitare", "non esiti", "se hai altre domande",
        "se ha altre domande", "se hai bisogno", "se ha bisogno", "c'è altro", "posso aiutarti",
        "posso aiutarla", "ottima domanda", "bella domanda", "ecco un riepilogo",
        "ecco una sintesi", "ecco cosa ho trovato",
        # French
        "j'espère que cela", "j'espère que ceci", "j'espère que ça", "j'espère avoir",
        "n'hésitez pas", "n'hésite pas", "si vous avez d'autres questions",
        "si vous avez des questions", "si tu as d'autres questions", "je reste à votre disposition",
        "je reste à ta disposition", "puis-je vous aider", "puis-je t'aider",
        "bonne question", "excellente question", "voici un résumé", "voici une synthèse",
        "voici ce que j'ai trouvé",
        # Hebrew
        "אני מקווה ש", "מקווה שזה", "מקווה שהמידע", "אל תהסס", "אל תהססי", "אל תהססו",
        "אם יש לך שאלות", "אם יש לך עוד שאלות", "אם יש לכם שאלות", "אשמח לעזור",
        "שאלה טובה", "שאלה מצוינת", "הנה סיכום",
    )
)  # fmt: skip
# Whole sentences made only of these words are pleasantries.
_PLEASANTRY_WORDS = _folded_words(
    """sure certainly of course absolutely okay ok alright right yes no problem thanks
    thank you welcome you're hello hi hey great happy to help glad indeed
    certo certamente sicuro assolutamente grazie prego ciao salve buongiorno volentieri sì si
    ecco bene perfetto d'accordo
    bien sûr certainement absolument merci bonjour salut avec plaisir oui parfait d'accord
    voilà entendu
    בטח בהחלט כמובן תודה בשמחה שלום כן בסדר מצוין"""
)
_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
# The filler openings by first character: ``startswith`` then compares a sentence with
# the few that could match, not with all ~130 (a few µs a sentence).
_FILLER_BY_FIRST: dict[str, tuple[str, ...]] = {}
for _start in _FILLER_START:
    _FILLER_BY_FIRST[_start[:1]] = (*_FILLER_BY_FIRST.get(_start[:1], ()), _start)
_QUESTION_MARKS = ("?", "？", "؟")


def needs_grounding(sentence: str) -> bool:
    """Whether a sentence makes a checkable claim (not a question, filler or heading text).

    Questions, sentences that introduce a list (ending with ``:``), pleasantries
    ("Sure!", "Certo.", "בשמחה!") and conversational filler ("I hope this helps",
    "N'hésitez pas…", "Fammi sapere…", "אל תהסס…") need no check. Sentences made
    only of function words are decided by the checker, which knows the stopwords.
    """
    text = without_markers(sentence).strip().strip("*_`> ")
    if not _HAS_WORD_RE.search(text):
        return False
    # (the regex tries every position: most sentences hold no question mark at all)
    if any(q in text for q in _QUESTION_MARKS) and _QUESTION_END_RE.search(text):
        return False
    if text.rstrip("*_ ").endswith((":", "：")):
        return False
    folded = fold(text).lstrip("\"'«“([ ")
    if folded.startswith(_FILLER_BY_FIRST.get(folded[:1], ())):
        return False
    first = _WORD_RE.search(folded)
    if first is not None and first.group() not in _PLEASANTRY_WORDS:
        return True  # most claims: decided by their first word, no list of all words
    words = _WORD_RE.findall(folded)
    return not all(w in _PLEASANTRY_WORDS for w in words)
