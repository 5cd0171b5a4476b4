"""Okapi BM25 over the facts, to pick the few candidates each claim is aligned with."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

import numpy as np

from streamcite.grounding.facts import Facts

__all__ = ["BM25"]


class BM25:
    """Okapi BM25 of the facts for the claims' terms, as a dense (terms × facts) matrix.

    Only terms that occur in some claim get a row. The term counts of all facts come
    from one pass over the facts' token ids (:class:`Facts`): a lookup table maps key
    ids to rows, and one ``bincount`` counts (row, fact) pairs.
    """

    __slots__ = ("matrix", "vocab")

    def __init__(self, facts: Facts, terms: set[str], k1: float = 1.2, b: float = 0.75):
        self.vocab = {t: i for i, t in enumerate(terms)}
        n = len(facts)
        token_ids = facts.ids  # first: reading the codes may learn tokens (new key ids)
        ids = facts.table.ids
        row_of = np.full(len(facts.table.names), -1, dtype=np.int32)  # int32: fewer fresh pages
        # Each term's key id (-1: a term no fact has) in one C-level pass, then one scatter.
        key_ids = np.fromiter(map(ids.get, self.vocab, repeat(-1)), np.int64, len(self.vocab))
        known = (key_ids >= 0) & (key_ids < len(row_of))
        row_of[key_ids[known]] = np.flatnonzero(known)
        rows_of_tokens = row_of[token_ids]
        hit = rows_of_tokens >= 0
        pair = rows_of_tokens[hit].astype(np.int64) * n + facts.owner[hit]
        counts = np.bincount(pair, minlength=len(self.vocab) * n).reshape(len(self.vocab), n)
        tf = counts.astype(np.float32)
        df = np.count_nonzero(counts, axis=1).astype(np.float32)
        del counts  # its memory is reused below (fresh pages of large arrays cost page faults)
        idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
        lengths = facts.lengths.astype(np.float32)
        avg = float(lengths.mean()) if n else 0.0
        norm = k1 * (1.0 - b + b * lengths / (avg or 1.0))
        # Dense: a zero count scores 0 (idf > 0, norm > 0); the float32 operations on each
        # (term, fact) are those of the sparse formula, so the scores are the same bits:
        # idf * tf * (k1 + 1) / (tf + norm), in that order, computed in place in tf (one
        # (terms x facts) temporary instead of four).
        denominator = tf + norm[None, :]
        np.multiply(tf, idf[:, None], out=tf)
        np.multiply(tf, k1 + 1.0, out=tf)
        np.divide(tf, denominator, out=tf)
        self.matrix = tf

    def top_many(self, claims: Sequence[Sequence[str]], k: int) -> list[list[int]]:
        """For each claim (its terms), the ``k`` best facts with a positive score, best first.

        One gather, one segmented sum and one sort for all claims: no per-claim numpy calls.
        """
        n_facts = self.matrix.shape[1]
        ids: list[int] = []
        starts: list[int] = []
        has_terms: list[bool] = []
        vocab = self.vocab
        for terms in claims:
            try:  # a claim's terms are all in the vocabulary when it was built from them
                mine = list(map(vocab.__getitem__, terms))
            except KeyError:
                mine = [vocab[t] for t in terms if t in vocab]
            has_terms.append(bool(mine))
            starts.append(len(ids))
            ids.extend(mine or [0])  # placeholder row keeps reduceat's segments aligned
        if not ids or not n_facts:
            return [[] for _ in claims]
        scores = np.add.reduceat(self.matrix[ids], starts, axis=0)
        k = min(k, n_facts)
        if k < n_facts:
            best = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        else:
            best = np.tile(np.arange(n_facts), (len(claims), 1))
        vals = np.take_along_axis(scores, best, axis=1)
        order = np.argsort(-vals, axis=1, kind="stable")
        cols = np.take_along_axis(best, order, axis=1).tolist()
        ranked = np.take_along_axis(vals, order, axis=1).tolist()
        return [
            [c for c, v in zip(row_cols, row_vals, strict=True) if v > 0] if ok else []
            for row_cols, row_vals, ok in zip(cols, ranked, has_terms, strict=True)
        ]
