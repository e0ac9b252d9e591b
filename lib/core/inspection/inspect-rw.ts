import type { RedlockContext } from '../context.js';
import { poll } from '../nodes/poll.js';
import { holderOf } from '../operations/inspect.js';
import { rwKeys } from '../rwlock/rw-keys.js';
import { INSPECT_RW_SCRIPT } from '../scripts/inspect-rw.script.js';
import { READERS_MARK } from '../scripts/rw-lock.script.js';
import type {
  ReaderInspection,
  ReadWriteInspection,
  ReadWriteNodeInspection,
} from './inspect-options.js';
import { Counts } from './counts.js';

/** One node's reply to the read/write inspect script. */
type Reply = [
  string | null,
  number,
  (string | number)[],
  string | null,
  number,
];

/**
 * A read/write lock as the nodes hold it: per node the writer or the
 * readers (each with its lease left on that node's clock) and a waiting
 * writer's intent; over the nodes, which side a quorum holds, how many
 * readers a quorum holds, and whether a writer's intent lives on a quorum.
 * Never a lock's value: each is told as this instance's or another's.
 */
export async function inspectReadWrite(
  ctx: RedlockContext,
  resource: string,
  timeoutMs: number,
): Promise<ReadWriteInspection> {
  const key = ctx.config.keyOf(resource);
  const ballots = await poll(
    ctx.nodes,
    {
      script: INSPECT_RW_SCRIPT,
      keys: rwKeys(ctx.config.metaPrefix, [key]),
      args: [],
    },
    () => 'granted',
    timeoutMs,
    () => false,
    { limitMs: timeoutMs },
  );
  const writers = new Counts();
  const readers = new Counts();
  const intents = new Counts();
  const nodes = ballots.map((ballot): ReadWriteNodeInspection => {
    if (ballot.outcome !== 'granted')
      return {
        node: ballot.node,
        up: false,
        error: ballot.error ?? ballot.outcome,
      };
    const [value, pttl, live, intent, intentTtl] = ballot.reply as Reply;
    const seen: ReaderInspection[] = [];
    for (let i = 0; i < live.length; i += 2) {
      const reader = String(live[i]);
      readers.add(reader);
      seen.push({ holder: holderOf(ctx, reader), ttlMs: Number(live[i + 1]) });
    }
    seen.sort((a, b) => a.ttlMs - b.ttlMs);
    if (intent !== null) intents.add(intent);
    const waiting =
      intent === null
        ? {}
        : {
            writerWaiting: {
              holder: holderOf(ctx, intent),
              ttlMs: Number(intentTtl),
            },
          };
    if (value === null)
      return { node: ballot.node, up: true, exists: false, ...waiting };
    // A writer's value, or a mark: the readers', or another shape's.
    const writer = value.startsWith('~') ? undefined : value;
    if (writer !== undefined) writers.add(writer);
    return {
      node: ballot.node,
      up: true,
      exists: true,
      ttlMs: Number(pttl),
      ...(writer !== undefined
        ? { writer: holderOf(ctx, writer) }
        : value === READERS_MARK
          ? { readers: seen }
          : {}),
      ...waiting,
    };
  });
  const writer = writers.atLeast(ctx.quorum)[0];
  const held = readers.atLeast(ctx.quorum);
  const intent = intents.atLeast(ctx.quorum)[0];
  const here = held.filter((v) => holderOf(ctx, v) === 'this-instance');
  return {
    resource,
    key,
    held: writer !== undefined || held.length > 0,
    ...(writer !== undefined
      ? { mode: 'write' as const, writer: holderOf(ctx, writer) }
      : held.length > 0
        ? { mode: 'read' as const }
        : {}),
    readers: held.length,
    readersHere: here.length,
    ...(intent === undefined ? {} : { writerWaiting: holderOf(ctx, intent) }),
    nodes,
  };
}
