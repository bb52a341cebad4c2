// sseMessage rebuilds the SubscribeEventsResponse an SSE event of GET
// /events carries, as docs/sse.md ("The data line") tells a reader to: the
// data parsed by the generated schema (strictly: an unknown field throws)
// and, for a positioned event, whose data leaves out seq, instanceEpoch
// and fingerprint, all taken from its id (<epoch>-<seq>[-<fingerprint>]). With EventSource the id is
// MessageEvent.lastEventId, which on an event without an id repeats the
// last id seen; such events (caught-up, gap) keep instanceEpoch in their
// data, and so are told apart by it.
import { fromJsonString } from "@bufbuild/protobuf";
import { type SubscribeEventsResponse, SubscribeEventsResponseSchema } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";

const sseIdPattern = /^([0-9a-f]{16})-([1-9][0-9]{0,19})(?:-([0-9a-f]{8}))?$/;

export function sseMessage(data: string, lastEventId: string): SubscribeEventsResponse {
  const msg = fromJsonString(SubscribeEventsResponseSchema, data);
  if (msg.instanceEpoch !== 0n) {
    if (msg.seq !== 0n) throw new Error(`SSE data repeats its id's position: ${data}`);
    return msg;
  }
  const m = sseIdPattern.exec(lastEventId);
  if (m === null) throw new Error(`SSE data without instanceEpoch, and ${JSON.stringify(lastEventId)} is not an event id`);
  msg.instanceEpoch = BigInt(`0x${m[1]!}`);
  msg.seq = BigInt(m[2]!);
  msg.fingerprint = m[3] !== undefined ? parseInt(m[3], 16) : 0;
  return msg;
}
