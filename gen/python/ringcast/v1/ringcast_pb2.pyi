from ...buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
ON_UNSERVABLE_RESYNC_TERMINAL: OnUnservable
ON_UNSERVABLE_SNAPSHOT_INLINE: OnUnservable
ON_UNSERVABLE_UNSPECIFIED: OnUnservable
REASON_COMMIT_MISMATCH: Reason
REASON_CURSOR_AHEAD: Reason
REASON_CURSOR_TOO_OLD: Reason
REASON_EPOCH_MISMATCH: Reason
REASON_FACT_OUT_OF_RANGE: Reason
REASON_MALFORMED_CURSOR: Reason
REASON_SUBSCRIBER_LAGGING: Reason
REASON_UNSPECIFIED: Reason
SERVER_STATE_DRAINING: ServerState
SERVER_STATE_SERVING: ServerState
SERVER_STATE_UNSPECIFIED: ServerState
SNAPSHOT_LATEST_PER_KEY: Snapshot
SNAPSHOT_RETAINED: Snapshot
SNAPSHOT_UNSPECIFIED: Snapshot

class CaughtUp(_message.Message):
    __slots__ = ["head_seq", "heartbeat_interval", "snapshot_evicted_keys"]
    HEAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_EVICTED_KEYS_FIELD_NUMBER: _ClassVar[int]
    head_seq: int
    heartbeat_interval: _duration_pb2.Duration
    snapshot_evicted_keys: int
    def __init__(self, head_seq: _Optional[int] = ..., heartbeat_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., snapshot_evicted_keys: _Optional[int] = ...) -> None: ...

class Commit(_message.Message):
    __slots__ = ["fact_count", "facts", "traceparent"]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    FACT_COUNT_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    fact_count: int
    facts: _containers.RepeatedCompositeFieldContainer[Fact]
    traceparent: str
    def __init__(self, facts: _Optional[_Iterable[_Union[Fact, _Mapping]]] = ..., fact_count: _Optional[int] = ..., traceparent: _Optional[str] = ...) -> None: ...

class Fact(_message.Message):
    __slots__ = ["binary_data", "content_type", "data", "index", "key", "topic", "type"]
    BINARY_DATA_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    binary_data: bytes
    content_type: str
    data: _struct_pb2.Struct
    index: int
    key: str
    topic: str
    type: str
    def __init__(self, index: _Optional[int] = ..., topic: _Optional[str] = ..., type: _Optional[str] = ..., key: _Optional[str] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., binary_data: _Optional[bytes] = ..., content_type: _Optional[str] = ...) -> None: ...

class Gap(_message.Message):
    __slots__ = ["head_seq", "oldest_seq", "reason", "requested_seq"]
    HEAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    OLDEST_SEQ_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_SEQ_FIELD_NUMBER: _ClassVar[int]
    head_seq: int
    oldest_seq: int
    reason: Reason
    requested_seq: int
    def __init__(self, reason: _Optional[_Union[Reason, str]] = ..., requested_seq: _Optional[int] = ..., oldest_seq: _Optional[int] = ..., head_seq: _Optional[int] = ...) -> None: ...

class GetPublishOutcomeRequest(_message.Message):
    __slots__ = ["idempotency_key"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    def __init__(self, idempotency_key: _Optional[str] = ...) -> None: ...

class GetPublishOutcomeResponse(_message.Message):
    __slots__ = ["applied", "receipt", "remembered_since"]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    REMEMBERED_SINCE_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    receipt: PublishResponse
    remembered_since: _timestamp_pb2.Timestamp
    def __init__(self, applied: bool = ..., receipt: _Optional[_Union[PublishResponse, _Mapping]] = ..., remembered_since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetServerStatusRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetServerStatusResponse(_message.Message):
    __slots__ = ["status", "subscribers"]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBERS_FIELD_NUMBER: _ClassVar[int]
    status: ServerStatus
    subscribers: int
    def __init__(self, status: _Optional[_Union[ServerStatus, _Mapping]] = ..., subscribers: _Optional[int] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ["head_seq", "oldest_seq"]
    HEAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    OLDEST_SEQ_FIELD_NUMBER: _ClassVar[int]
    head_seq: int
    oldest_seq: int
    def __init__(self, head_seq: _Optional[int] = ..., oldest_seq: _Optional[int] = ...) -> None: ...

class Limits(_message.Message):
    __slots__ = ["dedupe_window", "heartbeat_interval", "lease", "max_data_depth", "max_fact_bytes", "max_facts_per_commit", "max_request_bytes", "max_ring_bytes", "max_state_bytes", "max_state_keys", "max_topics", "store"]
    DEDUPE_WINDOW_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    MAX_DATA_DEPTH_FIELD_NUMBER: _ClassVar[int]
    MAX_FACTS_PER_COMMIT_FIELD_NUMBER: _ClassVar[int]
    MAX_FACT_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_REQUEST_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_RING_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_STATE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_STATE_KEYS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOPICS_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    dedupe_window: _duration_pb2.Duration
    heartbeat_interval: _duration_pb2.Duration
    lease: _duration_pb2.Duration
    max_data_depth: int
    max_fact_bytes: int
    max_facts_per_commit: int
    max_request_bytes: int
    max_ring_bytes: int
    max_state_bytes: int
    max_state_keys: int
    max_topics: int
    store: StoreLimits
    def __init__(self, max_facts_per_commit: _Optional[int] = ..., max_topics: _Optional[int] = ..., max_request_bytes: _Optional[int] = ..., heartbeat_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., lease: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_state_keys: _Optional[int] = ..., dedupe_window: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_fact_bytes: _Optional[int] = ..., max_data_depth: _Optional[int] = ..., max_ring_bytes: _Optional[int] = ..., max_state_bytes: _Optional[int] = ..., store: _Optional[_Union[StoreLimits, _Mapping]] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class PublishBatchRequest(_message.Message):
    __slots__ = ["commits"]
    COMMITS_FIELD_NUMBER: _ClassVar[int]
    commits: _containers.RepeatedCompositeFieldContainer[PublishRequest]
    def __init__(self, commits: _Optional[_Iterable[_Union[PublishRequest, _Mapping]]] = ...) -> None: ...

class PublishBatchResponse(_message.Message):
    __slots__ = ["receipts"]
    RECEIPTS_FIELD_NUMBER: _ClassVar[int]
    receipts: _containers.RepeatedCompositeFieldContainer[PublishResponse]
    def __init__(self, receipts: _Optional[_Iterable[_Union[PublishResponse, _Mapping]]] = ...) -> None: ...

class PublishRequest(_message.Message):
    __slots__ = ["facts", "idempotency_key"]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    facts: _containers.RepeatedCompositeFieldContainer[Fact]
    idempotency_key: str
    def __init__(self, facts: _Optional[_Iterable[_Union[Fact, _Mapping]]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class PublishResponse(_message.Message):
    __slots__ = ["duplicate", "event_time", "instance_epoch", "seq"]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    duplicate: bool
    event_time: _timestamp_pb2.Timestamp
    instance_epoch: int
    seq: int
    def __init__(self, seq: _Optional[int] = ..., instance_epoch: _Optional[int] = ..., event_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., duplicate: bool = ...) -> None: ...

class ResyncRequired(_message.Message):
    __slots__ = ["head_seq", "oldest_seq", "reason", "requested_seq"]
    HEAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    OLDEST_SEQ_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_SEQ_FIELD_NUMBER: _ClassVar[int]
    head_seq: int
    oldest_seq: int
    reason: Reason
    requested_seq: int
    def __init__(self, reason: _Optional[_Union[Reason, str]] = ..., requested_seq: _Optional[int] = ..., oldest_seq: _Optional[int] = ..., head_seq: _Optional[int] = ...) -> None: ...

class ServerStatus(_message.Message):
    __slots__ = ["boot_time", "head_seq", "instance_epoch", "limits", "oldest_seq", "ring_bytes", "server_version", "state", "window"]
    BOOT_TIME_FIELD_NUMBER: _ClassVar[int]
    HEAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    OLDEST_SEQ_FIELD_NUMBER: _ClassVar[int]
    RING_BYTES_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    boot_time: _timestamp_pb2.Timestamp
    head_seq: int
    instance_epoch: int
    limits: Limits
    oldest_seq: int
    ring_bytes: int
    server_version: str
    state: ServerState
    window: int
    def __init__(self, instance_epoch: _Optional[int] = ..., boot_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., server_version: _Optional[str] = ..., state: _Optional[_Union[ServerState, str]] = ..., window: _Optional[int] = ..., head_seq: _Optional[int] = ..., oldest_seq: _Optional[int] = ..., limits: _Optional[_Union[Limits, _Mapping]] = ..., ring_bytes: _Optional[int] = ...) -> None: ...

class StoreLimits(_message.Message):
    __slots__ = ["max_age", "max_bytes", "max_commits"]
    MAX_AGE_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_COMMITS_FIELD_NUMBER: _ClassVar[int]
    max_age: _duration_pb2.Duration
    max_bytes: int
    max_commits: int
    def __init__(self, max_bytes: _Optional[int] = ..., max_age: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_commits: _Optional[int] = ...) -> None: ...

class SubscribeEventsRequest(_message.Message):
    __slots__ = ["end_at_head", "instance_epoch", "on_unservable", "since_fact", "since_fingerprint", "since_seq", "since_time", "snapshot", "topics", "until_seq"]
    END_AT_HEAD_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ON_UNSERVABLE_FIELD_NUMBER: _ClassVar[int]
    SINCE_FACT_FIELD_NUMBER: _ClassVar[int]
    SINCE_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    SINCE_SEQ_FIELD_NUMBER: _ClassVar[int]
    SINCE_TIME_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    UNTIL_SEQ_FIELD_NUMBER: _ClassVar[int]
    end_at_head: bool
    instance_epoch: int
    on_unservable: OnUnservable
    since_fact: int
    since_fingerprint: int
    since_seq: int
    since_time: _timestamp_pb2.Timestamp
    snapshot: Snapshot
    topics: _containers.RepeatedScalarFieldContainer[str]
    until_seq: int
    def __init__(self, since_seq: _Optional[int] = ..., instance_epoch: _Optional[int] = ..., since_fact: _Optional[int] = ..., topics: _Optional[_Iterable[str]] = ..., snapshot: _Optional[_Union[Snapshot, str]] = ..., on_unservable: _Optional[_Union[OnUnservable, str]] = ..., until_seq: _Optional[int] = ..., end_at_head: bool = ..., since_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., since_fingerprint: _Optional[int] = ...) -> None: ...

class SubscribeEventsResponse(_message.Message):
    __slots__ = ["caught_up", "commit", "event_time", "fingerprint", "gap", "heartbeat", "instance_epoch", "progress", "resync_required", "seq", "server_status"]
    CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    GAP_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RESYNC_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SERVER_STATUS_FIELD_NUMBER: _ClassVar[int]
    caught_up: CaughtUp
    commit: Commit
    event_time: _timestamp_pb2.Timestamp
    fingerprint: int
    gap: Gap
    heartbeat: Heartbeat
    instance_epoch: int
    progress: Progress
    resync_required: ResyncRequired
    seq: int
    server_status: ServerStatus
    def __init__(self, seq: _Optional[int] = ..., instance_epoch: _Optional[int] = ..., event_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., fingerprint: _Optional[int] = ..., server_status: _Optional[_Union[ServerStatus, _Mapping]] = ..., commit: _Optional[_Union[Commit, _Mapping]] = ..., progress: _Optional[_Union[Progress, _Mapping]] = ..., caught_up: _Optional[_Union[CaughtUp, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., gap: _Optional[_Union[Gap, _Mapping]] = ..., resync_required: _Optional[_Union[ResyncRequired, _Mapping]] = ...) -> None: ...

class Snapshot(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class OnUnservable(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Reason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ServerState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
