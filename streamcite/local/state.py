"""What every handler of the local backend shares: corpus, answers, store, settings.

The state hangs on the aiohttp application under :data:`STATE`; handlers reach it
with ``request.app[STATE]``.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from aiohttp import web

from streamcite.local.answerer import Answer, Answerer
from streamcite.local.config import DEFAULT_ORGANIZATION_ID, BackendConfig
from streamcite.local.corpus import Corpus, load_corpus
from streamcite.local.faults import FaultSpec
from streamcite.local.hostcheck import HostCheck
from streamcite.local.store import AnswerStore, answer_nbytes
from streamcite.logs import get_logger

__all__ = ["STATE", "BackendState", "root_url"]

_CACHE_ANSWERS = 256
"""Most answers the cache of recent answers holds, whatever their size."""


class BackendState:
    """Everything the handlers share: corpus, answerer, store, settings."""

    def __init__(self, config: BackendConfig, corpus: Corpus | None):
        self.config = config
        self.corpus = (
            corpus
            if corpus is not None
            else load_corpus(config.corpus_dir, strict=config.corpus_strict)
        )
        self.answerer = Answerer(self.corpus)
        self.store = AnswerStore(config.store_size, config.store_ttl, max_bytes=config.store_bytes)
        self.server_faults = FaultSpec.parse(config.faults)
        self.closing = asyncio.Event()
        self.organization_id = config.wikit_org_id or DEFAULT_ORGANIZATION_ID
        self._answers: OrderedDict[str, tuple[Answer, int]] = OrderedDict()
        self._answers_bytes = 0
        self.public_url = config.public_url
        self.host_check = HostCheck.from_config(config.allowed_hosts, config.allowed_origins)
        self.log = get_logger("streamcite.local")

    def answer(self, question: str) -> Answer:
        """Answers are pure functions of the question: keep the recent ones."""
        cached = self._answers.get(question)
        if cached is not None:
            self._answers.move_to_end(question)
            return cached[0]
        answer = self.answerer.answer(question)
        size = answer_nbytes(answer)
        limit = self.config.answer_cache_bytes
        if size <= limit // 4:  # a huge answer is served, not kept
            self._answers[question] = (answer, size)
            self._answers_bytes += size
            while self._answers_bytes > limit or len(self._answers) > _CACHE_ANSWERS:
                _, (_, dropped) = self._answers.popitem(last=False)
                self._answers_bytes -= dropped
        return answer

    @property
    def cached_answer_bytes(self) -> int:
        """Bytes the cache of recent answers holds now (measured per answer)."""
        return self._answers_bytes


STATE = web.AppKey("streamcite_local_state", BackendState)
"""The application key of the backend's :class:`BackendState`."""


def root_url(request: web.Request) -> str:
    """Where citation and document URLs point: the configured public URL, else the
    address the client reached (the socket's), never the client-supplied ``Host``."""
    public = request.app[STATE].public_url
    if public:
        return public.rstrip("/")
    sock = request.transport.get_extra_info("sockname") if request.transport else None
    if isinstance(sock, tuple) and len(sock) >= 2:
        host = str(sock[0])
        return f"http://[{host}]:{sock[1]}" if ":" in host else f"http://{host}:{sock[1]}"
    return "http://127.0.0.1"
