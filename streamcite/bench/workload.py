"""Workloads: what each benchmark request asks.

* questions, one per line, or JSON Lines with ``"question"`` (:func:`load_questions`);
* prompts from a JSON Lines file (:func:`load_prompts`): per line a question, a whole
  request body (``"messages"`` and any other body keys such as ``max_tokens``), or a
  ShareGPT-style conversation (``"conversations": [{"from": "human", "value": …}, …]``,
  sent up to its last human turn); a ``.json`` file holding an array of such objects
  (the ShareGPT dumps) works too;
* synthetic prompts whose length follows a normal distribution
  (:func:`synthetic_prompts`), for sweeps over input length.

Every prompt becomes one request body (:meth:`Prompt.body`); ``--extra-body`` keys are
merged into each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

__all__ = ["Prompt", "load_prompts", "load_questions", "synthetic_prompts"]

MAX_PROMPTS = 100_000
"""Most prompts read from one file (a bigger file is cut, not loaded whole)."""

_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant"}
_ROLES.update({"chatgpt": "assistant", "bing": "assistant", "bard": "assistant"})
_ROLES["system"] = "system"

# Plain, common words: synthetic prompts read like text and tokenize like text.
_TEXT = (
    "the policy of remote work allows employees to work from home up to two days per "
    "week when their manager agrees and the team keeps its meetings travel expenses are "
    "paid back within thirty days on receipt of the invoices security rules apply to "
    "laptops phones and documents taken outside the office"
)
_WORDS = _TEXT.split(" ")


@dataclass(slots=True, frozen=True)
class Prompt:
    """One request of a workload: its messages and any other body keys."""

    messages: tuple[Mapping[str, Any], ...]
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Other keys of the request body from the workload file (``max_tokens``, …)."""

    @classmethod
    def question(cls, text: str) -> Prompt:
        return cls(({"role": "user", "content": text},))

    @property
    def text(self) -> str:
        """The text of every message, joined (what a tokenizer counts as input)."""
        parts: list[str] = []
        for m in self.messages:
            content = m.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        return "\n".join(parts)

    def body(self, model: str, extra_body: Mapping[str, Any]) -> dict[str, Any]:
        """The streaming request body: model, messages, usage requested, then the
        prompt's own keys, then ``extra_body`` (which wins)."""
        return {
            "model": model,
            "messages": [dict(m) for m in self.messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            **self.extra,
            **extra_body,
        }


def load_questions(path: str | Path) -> list[str]:
    """Questions from a file: one per line, or JSON Lines objects with ``"question"``.

    Blank lines and lines starting with ``#`` are skipped.
    """
    out: list[str] = []
    for prompt in load_prompts(path):
        if len(prompt.messages) != 1 or prompt.extra:
            raise ValueError(f"{path}: holds request bodies, not questions (use load_prompts)")
        out.append(prompt.text)
    return out


def load_prompts(path: str | Path, *, limit: int = MAX_PROMPTS) -> list[Prompt]:
    """Prompts from a text / JSON Lines file, or a JSON array (see the module doc)."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    out: list[Prompt] = []
    if text.lstrip().startswith("["):
        try:
            items = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON: {exc}") from exc
        for n, obj in enumerate(items[:limit], 1):
            out.append(_prompt(obj, f"{path}[{n - 1}]"))
    else:
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if len(out) >= limit:
                break
            if line.startswith("{"):
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{n}: not valid JSON: {exc}") from exc
                out.append(_prompt(obj, f"{path}:{n}"))
            else:
                out.append(Prompt.question(line))
    if not out:
        raise ValueError(f"{path}: no questions")
    return out


def _prompt(obj: Any, where: str) -> Prompt:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object")
    if "question" in obj:
        q = obj["question"]
        if not isinstance(q, str) or not q.strip():
            raise ValueError(f'{where}: a JSON line needs a non-empty "question" string')
        return Prompt.question(q.strip())
    if "messages" in obj:
        messages = obj["messages"]
        if not isinstance(messages, list) or not messages:
            raise ValueError(f'{where}: "messages" must be a non-empty array')
        if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
            raise ValueError(f'{where}: every message needs a "role"')
        extra = {k: v for k, v in obj.items() if k not in ("messages", "model", "stream")}
        return Prompt(tuple(messages), extra)
    if "conversations" in obj:
        return _sharegpt(obj["conversations"], where)
    raise ValueError(
        f'{where}: a JSON line needs "question", "messages" (a request body) or '
        '"conversations" (ShareGPT)'
    )


def _sharegpt(turns: Any, where: str) -> Prompt:
    if not isinstance(turns, list):
        raise ValueError(f'{where}: "conversations" must be an array')
    messages: list[dict[str, Any]] = []
    for turn in turns:
        if not isinstance(turn, dict):
            raise ValueError(f"{where}: a conversation turn must be an object")
        role = _ROLES.get(str(turn.get("from", turn.get("role", ""))).lower())
        value = turn.get("value", turn.get("content"))
        if role is None or not isinstance(value, str):
            raise ValueError(f'{where}: a turn needs "from" (human/gpt/system) and "value"')
        messages.append({"role": role, "content": value})
    while messages and messages[-1]["role"] != "user":
        messages.pop()  # the recorded answer is not sent
    if not messages:
        raise ValueError(f"{where}: the conversation has no human turn")
    return Prompt(tuple(messages))


def synthetic_prompts(
    count: int, mean_words: float, stddev_words: float = 0.0, *, seed: int = 0
) -> list[Prompt]:
    """``count`` prompts whose lengths (in words) are drawn from a normal distribution
    (at least 1 word each), from a fixed vocabulary; the same seed gives the same
    prompts. Each starts with a distinct number so no two are identical."""
    if count < 1 or count > MAX_PROMPTS:
        raise ValueError(f"count must be between 1 and {MAX_PROMPTS:,}")
    if not mean_words >= 1 or stddev_words < 0:
        raise ValueError("mean length must be >= 1 word and the deviation >= 0")
    rng = np.random.default_rng(seed)
    lengths = np.maximum(1, np.rint(rng.normal(mean_words, stddev_words, count))).astype(int)
    words = np.asarray(_WORDS)
    out: list[Prompt] = []
    for i, n in enumerate(lengths):
        body = " ".join(words[rng.integers(0, words.size, int(n) - 1)].tolist())
        out.append(Prompt.question(f"{i} {body}".strip()))
    return out


def as_prompts(items: Sequence[str | Prompt]) -> list[Prompt]:
    """Questions and prompts alike, as prompts."""
    return [p if isinstance(p, Prompt) else Prompt.question(p) for p in items]
