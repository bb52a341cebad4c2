// Publishing commits: PublishBatch, several commits in one request.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createClient, type CallOptions, type Transport } from "@connectrpc/connect";

import { EventService, type PublishRequestSchema, type PublishResponse } from "../../../gen/ts/ringcast/v1/ringcast_pb.js";

/** CommitInit is one commit to publish: its facts and an optional idempotency key. */
export type CommitInit = MessageInitShape<typeof PublishRequestSchema>;

/**
 * publishBatch appends commits in one PublishBatch request, in order, and
 * resolves to one receipt per commit, in the same order. Each commit is
 * validated and deduplicated (by its idempotencyKey) on its own; the server
 * checks every commit first and appends all of them or, on any error, none
 * (the promise rejects with a ConnectError, e.g. InvalidArgument with the
 * violations in its details, or Unavailable while the server drains).
 */
export async function publishBatch(transport: Transport, commits: CommitInit[], options?: CallOptions): Promise<PublishResponse[]> {
  const res = await createClient(EventService, transport).publishBatch({ commits }, options);
  return res.receipts;
}
