// The client's names of reasons, options and signals against the proto's
// descriptors (src/names.ts): a name that drifts from the proto fails here.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import type { DescEnum } from "@bufbuild/protobuf";
import { createRouterTransport } from "@connectrpc/connect";

import {
  EventService,
  OnUnservableSchema,
  ReasonSchema,
  SnapshotSchema,
  SubscribeEventsResponseSchema,
  type Reason,
  type SubscribeEventsRequest,
} from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import { onUnservableValue, snapshotValue } from "../src/names.js";
import { reasonName, subscribe, type ConnectionEvent, type OnUnservableName, type SnapshotName } from "../src/index.js";

/** The proto names of an enum's values less the enum's prefix (the zero value's name less UNSPECIFIED), by number. */
function shortNames(d: DescEnum): Map<number, string> {
  const zero = d.value[0];
  assert.ok(zero !== undefined && zero.name.endsWith("_UNSPECIFIED"), `${d.name}: zero value ${zero?.name}`);
  const prefix = zero.name.slice(0, -"UNSPECIFIED".length);
  return new Map(
    d.values.map((v) => {
      assert.ok(v.name.startsWith(prefix) && v.name.length > prefix.length, `${d.name}.${v.name} does not start with ${prefix}`);
      return [v.number, v.name.slice(prefix.length)];
    }),
  );
}

/** The option names of an enum: every value but the zero value, in lower case. */
function optionNames(d: DescEnum): Map<number, string> {
  return new Map([...shortNames(d)].filter(([n]) => n !== 0).map(([n, name]) => [n, name.toLowerCase()]));
}

describe("names from the proto", () => {
  it("reasonName is the proto name less REASON_", () => {
    for (const [n, name] of shortNames(ReasonSchema)) {
      assert.equal(reasonName(n), name);
    }
    assert.equal(reasonName(99 as Reason), "REASON_99");
  });

  // Every option name, listed: a value added to the proto fails the typecheck here.
  const snapshots: Record<SnapshotName, true> = { retained: true, latest_per_key: true };
  const onUnservables: Record<OnUnservableName, true> = { resync_terminal: true, snapshot_inline: true };
  for (const [d, listed, value] of [
    [SnapshotSchema, snapshots, snapshotValue],
    [OnUnservableSchema, onUnservables, onUnservableValue],
  ] as [DescEnum, object, (s: string | number | undefined) => number][]) {
    it(`${d.name} names are the proto names less the prefix, in lower case`, () => {
      const names = optionNames(d);
      assert.deepEqual(Object.keys(listed).sort(), [...names.values()].sort());
      for (const [n, name] of names) {
        assert.equal(value(name), n);
        assert.equal(value(n), n);
      }
      assert.equal(value(undefined), 0);
    });
  }

  it("the caught-up signal is named after the response's oneof field, and options reach the request", async () => {
    const field = SubscribeEventsResponseSchema.fields.find((f) => f.message?.typeName === "ringcast.v1.CaughtUp");
    assert.ok(field?.oneof?.name === "event", "CaughtUp is a member of the event oneof");
    const requests: SubscribeEventsRequest[] = [];
    const transport = createRouterTransport(({ service }) => {
      service(EventService, {
        async *subscribeEvents(req) {
          requests.push(req);
          yield { instanceEpoch: 7n, event: { case: "caughtUp", value: { headSeq: 0n } } };
        },
        publish() {
          throw new Error("not in this test");
        },
        getServerStatus() {
          throw new Error("not in this test");
        },
      });
    });
    const states: ConnectionEvent["state"][] = [];
    const kinds: string[] = [];
    const sub = subscribe(transport, {
      snapshot: "latest_per_key",
      onUnservable: "snapshot_inline",
      endAtHead: true,
      onConnection: (e) => states.push(e.state),
    });
    for await (const item of sub) kinds.push(item.kind);
    assert.deepEqual(kinds, [field.name]);
    assert.ok(states.includes(field.name as ConnectionEvent["state"]), `states ${states.join(", ")}`);
    assert.equal(requests.length, 1);
    assert.equal(requests[0]?.snapshot, SnapshotSchema.values.find((v) => v.name === "SNAPSHOT_LATEST_PER_KEY")?.number);
    assert.equal(requests[0]?.onUnservable, OnUnservableSchema.values.find((v) => v.name === "ON_UNSERVABLE_SNAPSHOT_INLINE")?.number);
  });
});
