"""Publishing commits (Publish, PublishBatch), retried safely under one
idempotency key, and reading what became of one (GetPublishOutcome)."""

from __future__ import annotations

import datetime as _dt
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from google.protobuf import struct_pb2

from . import _defaults
from ._gen.ringcast.v1 import ringcast_pb2 as pb
from .backoff import Backoff, retry_after_ms
from .connect import Transport
from .errors import PERMANENT_CODES, ConnectError

#: A fact to publish: a pb.Fact, or a mapping with topic, type and optionally
#: key, data (a dict: structured), binary_data (bytes) and content_type.
FactInit = Union[pb.Fact, Mapping[str, Any]]


def to_fact(f: FactInit) -> pb.Fact:
    """A pb.Fact from a FactInit."""
    if isinstance(f, pb.Fact):
        return f
    unknown = set(f) - {"topic", "type", "key", "data", "binary_data", "content_type"}
    if unknown:
        raise ValueError(f"ringcast: a fact has no field {sorted(unknown)[0]!r}")
    out = pb.Fact(topic=f.get("topic", ""), type=f.get("type", ""), key=f.get("key", ""),
                  content_type=f.get("content_type", ""))
    if f.get("data") is not None and f.get("binary_data") is not None:
        raise ValueError("ringcast: a fact carries data or binary_data, not both")
    if f.get("data") is not None:
        s = struct_pb2.Struct()
        s.update(f["data"])
        out.data.CopyFrom(s)
    elif f.get("binary_data") is not None:
        out.binary_data = bytes(f["binary_data"])
    return out


def random_key() -> str:
    """A random idempotency key: "rc-" and 32 hex digits (128 bits), as the other clients make them."""
    return _defaults.PUBLISH_IDEMPOTENCY_KEY_PREFIX + secrets.token_hex(_defaults.PUBLISH_IDEMPOTENCY_KEY_RANDOM_BYTES)


def publish_batch(t: Transport, commits: Sequence[pb.PublishRequest], *, headers: Mapping[str, str] | None = None,
                  timeout_s: float | None = None) -> list[pb.PublishResponse]:
    """Appends commits in one PublishBatch request, in order: one receipt per
    commit. The server checks every commit first and appends all of them or,
    on any error, none (a ConnectError, e.g. invalid_argument)."""
    res = t.unary("PublishBatch", pb.PublishBatchRequest(commits=list(commits)), pb.PublishBatchResponse,
                  headers=headers, timeout_s=timeout_s)
    return list(res.receipts)


@dataclass(frozen=True)
class PublishOutcome:
    """What became of a publish with an idempotency key."""

    #: A commit with the key was appended.
    applied: bool
    #: That commit's original receipt (duplicate False), when applied.
    receipt: pb.PublishResponse | None
    #: Since when the server remembers keys: applied False promises only that
    #: no commit with the key was appended at or after it. None: not said.
    remembered_since: _dt.datetime | None


def outcome(t: Transport, idempotency_key: str, *, headers: Mapping[str, str] | None = None,
            timeout_s: float | None = None) -> PublishOutcome:
    """Reads what became of the publish sent with idempotency_key, without
    writing (GetPublishOutcome, NO_SIDE_EFFECTS). An empty key raises an
    invalid_argument ConnectError without a request."""
    if not idempotency_key:
        raise ConnectError("invalid_argument", "an outcome is read by an idempotency key; the key is empty")
    res = t.unary("GetPublishOutcome", pb.GetPublishOutcomeRequest(idempotency_key=idempotency_key),
                  pb.GetPublishOutcomeResponse, headers=headers, timeout_s=timeout_s)
    since = None
    if res.HasField("remembered_since"):
        since = res.remembered_since.ToDatetime().replace(tzinfo=_dt.timezone.utc)
    return PublishOutcome(applied=res.applied, receipt=res.receipt if res.applied and res.HasField("receipt") else None,
                          remembered_since=since)


def publish(
    t: Transport,
    facts: Iterable[FactInit],
    *,
    idempotency_key: str | None = None,
    attempts: int | None = None,
    backoff: Backoff | None = None,
    headers: Mapping[str, str] | None = None,
    confirm_by_outcome: bool = False,
    timeout_s: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> pb.PublishResponse:
    """Appends one commit and retries it safely: every attempt carries the
    same idempotency key (idempotency_key, or a random one per call), so a
    retry after a lost receipt returns the original receipt with duplicate
    set instead of appending again. Transient failures (every code outside
    PERMANENT_CODES, network errors) are retried after the backoff delay,
    at least a resource_exhausted refusal's Retry-After, up to attempts
    requests (default 5); a permanent code raises at once.

    A key is its publisher's and names one commit: sending it again with
    other facts raises an already_exists ConnectError (is_key_reused), at
    once, never retried; a retry must send the same facts, a new commit
    needs a new key. A key with a control character or whitespace at either
    end is invalid_argument; the generated ones are always valid.

    confirm_by_outcome: before each retry, read the commit's outcome by its
    key; applied: return that original receipt with duplicate set and
    publish no more; not applied, or the read failed: retry the publish.
    Outcome reads do not count against attempts.
    """
    key = idempotency_key if idempotency_key is not None else random_key()
    n = max(1, int(attempts if attempts is not None else _defaults.PUBLISH_ATTEMPTS))
    b = (backoff or Backoff()).resolve()
    commit = pb.PublishRequest(facts=[to_fact(f) for f in facts], idempotency_key=key)
    last: ConnectError | None = None
    for attempt in range(n):
        if attempt > 0:
            sleep(max(b.delay_ms(attempt - 1), retry_after_ms(last)) / 1000)
            if confirm_by_outcome:
                confirmed = _confirm(t, key, headers, timeout_s)
                if confirmed is not None:
                    return confirmed
        try:
            receipts = publish_batch(t, [commit], headers=headers, timeout_s=timeout_s)
        except ConnectError as e:
            last = e
            if e.code in PERMANENT_CODES:
                raise
            continue
        if len(receipts) != 1:
            raise ConnectError("internal", f"{len(receipts)} receipts for one commit")
        return receipts[0]
    assert last is not None
    raise last


def _confirm(t: Transport, key: str, headers: Mapping[str, str] | None, timeout_s: float | None) -> pb.PublishResponse | None:
    try:
        o = outcome(t, key, headers=headers, timeout_s=timeout_s)
    except ConnectError:
        return None
    if not o.applied or o.receipt is None:
        return None
    r = pb.PublishResponse()
    r.CopyFrom(o.receipt)
    r.duplicate = True
    return r
