// Decodes SubscribeEvents responses as a ringcast server sent them, with
// the TypeScript client's default codecs: the generated schema and
// @bufbuild/protobuf's fromBinary (Connect, gRPC and gRPC-Web in binary)
// and fromJsonString (Connect JSON, and the data of an SSE event), each
// with its default options, as @connectrpc/connect and an EventSource
// consumer use them; an SSE event's seq and instanceEpoch are taken from
// its id, as docs/sse.md tells a reader to (test/sse-message.ts). For each
// item it writes the message as proto JSON (toJson), or the error.
// server/internal/face/rpc's TestPublishDecodesWithTSClient runs
//
//	node --import tsx scripts/decode-faces.ts IN.json OUT.json
//
// where IN.json is [{"face": "proto" | "json" | "sse", "data": "…", "id": "…"}]
// (proto data in base64; id only for sse) and OUT.json gets
// [{"ok", "json"} | {"ok", "error"}].
import { readFileSync, writeFileSync } from "node:fs";
import { fromBinary, fromJsonString, toJson, type JsonValue } from "@bufbuild/protobuf";

import { SubscribeEventsResponseSchema } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";
import { sseMessage } from "../test/sse-message.js";

interface Item {
  face: "proto" | "json" | "sse";
  data: string;
  id?: string;
}

type Result = { ok: true; json: JsonValue } | { ok: false; error: string };

function decode(item: Item): Result {
  try {
    const msg =
      item.face === "proto"
        ? fromBinary(SubscribeEventsResponseSchema, new Uint8Array(Buffer.from(item.data, "base64")))
        : item.face === "sse"
          ? sseMessage(item.data, item.id ?? "")
          : fromJsonString(SubscribeEventsResponseSchema, item.data);
    return { ok: true, json: toJson(SubscribeEventsResponseSchema, msg) };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}

const [inPath, outPath] = process.argv.slice(2);
if (inPath === undefined || outPath === undefined) {
  console.error("usage: node --import tsx scripts/decode-faces.ts IN.json OUT.json");
  process.exit(2);
}
const items = JSON.parse(readFileSync(inPath, "utf8")) as Item[];
writeFileSync(outPath, JSON.stringify(items.map(decode)));
