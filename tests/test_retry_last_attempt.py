"""A retry loop never starts an attempt that can only time out: with less than
``RetryPolicy.min_attempt`` left it stops and raises the real error of the attempt
before (found by the round-3 review: a last attempt started with 1 ms left reported
``timeout`` instead of the upstream's 404)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from streamcite.core.errors import UpstreamError
from streamcite.enrich._http import RetryPolicy, with_retries


async def test_the_real_error_is_raised_not_a_timeout_of_a_hopeless_last_attempt() -> None:
    attempts: list[float] = []

    async def not_there_yet(budget: float) -> None:
        attempts.append(budget)
        # At once, not after a sleep: on a loaded machine a sleep can outlast the
        # attempt's budget and turn the 404 into a timeout. The backoff spends the time.
        raise UpstreamError("HTTP 404: not there yet", code="not_found", retryable=True)

    policy = RetryPolicy(deadline=0.5, request_timeout=5.0, backoff_base=0.02, backoff_max=0.02)
    with pytest.raises(UpstreamError) as info:
        await with_retries(not_there_yet, policy, what="sources")
    assert info.value.code == "not_found", info.value.message
    assert len(attempts) >= 2
    # No attempt started with less than min_attempt left, as far as the retry loop could
    # know: it decides before the backoff sleep, and a loaded machine stretches a sleep.
    # Checked against the attempts' own times (a budget is the deadline minus the
    # attempt's start): each has at least min_attempt + the shortest backoff (half its
    # step) - the time since the previous attempt started (that sleep and the decision).
    shortest = policy.backoff_base / 2
    for before, after in itertools.pairwise(attempts):
        assert after >= policy.min_attempt + shortest - (before - after) - 1e-6, attempts


async def test_a_backoff_that_overslept_starts_no_hopeless_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop decides to retry before its backoff sleep; a busy loop can wake it late
    with less than ``min_attempt`` left. It then raises the real error, starts nothing."""
    real_sleep = asyncio.sleep
    budgets: list[float] = []

    async def overslept(delay: float, result: object = None) -> object:
        # Asked for ~0.1 s, woken 0.8 s late: what a loaded machine does to a sleep.
        return await real_sleep(delay + 0.8, result)

    async def not_there_yet(budget: float) -> None:
        budgets.append(budget)
        raise UpstreamError("HTTP 404: not there yet", code="not_found", retryable=True)

    policy = RetryPolicy(
        deadline=1.0, request_timeout=5.0, backoff_base=0.1, backoff_max=0.1, min_attempt=0.3
    )
    monkeypatch.setattr(asyncio, "sleep", overslept)
    with pytest.raises(UpstreamError) as info:
        await with_retries(not_there_yet, policy, what="sources")
    assert info.value.code == "not_found", info.value.message
    assert "after 1 attempt(s)" in info.value.message
    assert len(budgets) == 1, budgets  # the old loop started a second with < 0.3 s left


def test_min_attempt_is_clipped_to_the_request_timeout() -> None:
    policy = RetryPolicy(deadline=1.0, request_timeout=0.05)
    assert min(policy.min_attempt, policy.request_timeout) == 0.05
