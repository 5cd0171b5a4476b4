"""Write dev.jsonl and heldout.jsonl from synonym_items.py and role_items.py.

    python benchmarks/data/paraphrase_roles/build.py

One JSON object a line: ``lang``, ``cls`` (``synonym`` or ``role``), ``split`` (``dev``
or ``heldout``), ``fact_id``, ``facts`` (the item's fact and, second, another item's
fact of the same language and class as a distractor), ``claim``, ``label`` (True:
supported), ``kind`` (``paraphrase``, ``meaning_swap``, ``own_role``, ``role_swap``).
The split is by fact: both claims of a fact are on the same side.
"""

from __future__ import annotations

import json
from pathlib import Path

import role_items
import synonym_items

HERE = Path(__file__).resolve().parent
DEV = 8
"""The first DEV items of each language and class are the dev split."""

_COPULA = {
    "en": "{name} is {role} of the association. On Monday, {first} {event}.",
    "fr": "{name} est {role} de l'association. Lundi, {first} {event}.",
    "it": "{name} è {role} dell'associazione. Lunedì {first} {event}.",
    "he": "{name} הוא {role} של העמותה. ביום שני {first} {event}.",
}
_SPEAKER = {
    "en": "{name2}, {other}, said that {name}, {role}, {event}.",
    "fr": "{name2}, {other}, a déclaré {que}{name}, {role}, {event}.",
    "it": "{name2}, {other}, ha detto che {name}, {role}, {event}.",
    "he": "{name2}, {other}, אמר כי {name}, {role}, {event}.",
}


def _role_fact(lang: str, i: int, row: role_items.Row) -> str:
    name, role, other, event, name2 = row
    if i % 3 == 0:
        return f"{name}, {role}, {event}."
    if i % 3 == 1:
        return _COPULA[lang].format(name=name, role=role, first=name.split()[0], event=event)
    que = "qu'" if name[0].lower() in "aeiouéèêh" else "que "
    return _SPEAKER[lang].format(
        name=name, role=role, other=other, event=event, name2=name2, que=que
    )


def rows() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for lang in ("en", "fr", "it", "he"):
        syn: list[synonym_items.Item] = getattr(synonym_items, lang.upper())
        for i, (fact, para, control) in enumerate(syn):
            split = "dev" if i < DEV else "heldout"
            # The distractor comes from the same split (the next item, cyclically).
            lo, hi = (0, DEV) if i < DEV else (DEV, len(syn))
            other = syn[lo + (i - lo + 1) % (hi - lo)][0]
            for claim, label, kind in (
                (para, True, "paraphrase"),
                (control, False, "meaning_swap"),
            ):
                out.append(
                    {
                        "lang": lang,
                        "cls": "synonym",
                        "split": split,
                        "fact_id": f"{lang}-syn-{i:02d}",
                        "facts": [fact, other],
                        "claim": claim,
                        "label": label,
                        "kind": kind,
                    }
                )
        roles: list[role_items.Row] = getattr(role_items, lang.upper())
        facts = [_role_fact(lang, i, r) for i, r in enumerate(roles)]
        for i, (name, role, other_role, event, _) in enumerate(roles):
            split = "dev" if i < DEV else "heldout"
            lo, hi = (0, DEV) if i < DEV else (DEV, len(roles))
            other = facts[lo + (i - lo + 1) % (hi - lo)]
            for r, label, kind in ((role, True, "own_role"), (other_role, False, "role_swap")):
                out.append(
                    {
                        "lang": lang,
                        "cls": "role",
                        "split": split,
                        "fact_id": f"{lang}-role-{i:02d}",
                        "facts": [facts[i], other],
                        "claim": f"{name}, {r}, {event}.",
                        "label": label,
                        "kind": kind,
                    }
                )
    return out


def main() -> None:
    data = rows()
    for split in ("dev", "heldout"):
        with (HERE / f"{split}.jsonl").open("w", encoding="utf-8") as fh:
            for row in data:
                if row["split"] == split:
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
