import type { Redis } from 'ioredis';
import type { NodeVote } from '../../errors/node-vote.js';
import { declareMetaKeys } from '../scripts/declared-keys.js';
import {
  runScript,
  runScriptPipeline,
  type LuaScript,
  type ScriptCall,
} from '../scripts/lua-script.js';
import { closeClient } from './close-client.js';

/**
 * One Redis master as the algorithm sees it: a client, a printable name
 * (`host:port`, never credentials) and whether the library owns the client.
 */
export class RedlockNode {
  constructor(
    readonly client: Redis,
    readonly name: string,
    /** True when the library closes the client: it created it, or was given it with `closeClients`. */
    readonly owned: boolean,
  ) {
    // The library listens to the errors of the clients it owns only: on a
    // borrowed client, a listener would silence ioredis's own report of
    // them, which its owner may rely on.
    if (owned) {
      client.on('error', (error: Error) => {
        this.connectionError = error.message;
      });
      client.on('ready', () => {
        this.connectionError = undefined;
        this.quietSince = undefined;
      });
      client.on('close', () => {
        this.quietSince = undefined;
      });
    }
  }

  /** Why the connection last failed, until it is ready again (owned clients only). */
  private connectionError?: string;

  /**
   * The vote of this node when a request got no answer: the connection's
   * failure while it is down (ioredis holds requests while it reconnects,
   * so they time out before they fail); else a `timeout` once the node
   * timeout passed, or `pending` when the other nodes decided sooner.
   */
  unanswered(timedOut: boolean): NodeVote {
    if (this.connectionError !== undefined && this.client.status !== 'ready')
      return { node: this.name, outcome: 'error', error: this.connectionError };
    return { node: this.name, outcome: timedOut ? 'timeout' : 'pending' };
  }

  /**
   * What to report for a request that failed with `error`: while the
   * client is not connected, the connection's own failure (`connect
   * ECONNREFUSED`, `ETIMEDOUT`, `WRONGPASS`), where ioredis's rejection
   * would only say that it gave up on the request.
   */
  describeFailure(error: unknown): string {
    if (this.connectionError !== undefined && this.client.status !== 'ready')
      return this.connectionError;
    return error instanceof Error ? error.message : String(error);
  }

  /**
   * When this node last answered a request of a poll, successfully or with
   * an error reply, as a number from `answerSequence` (later answers of any
   * node have higher numbers): a node that answers is alive, even when a
   * burst keeps it busy past the node timeout (see `poll`). A counter rather
   * than a clock reading, as it is written for every answer of every node.
   */
  lastAnswer = 0;

  /**
   * When the oldest request this node has not answered was sent (the
   * start of its poll, `performance.now()`), on a ready connection; unset
   * once the node answers or the connection closes. Kept for the clients
   * the library owns only (see `reconnectIfStalled`).
   */
  quietSince: number | undefined = undefined;

  /** When the latest request this node answered was sent (the start of its poll). */
  answeredSentAt = -Infinity;

  /** @internal A poll started at `at` sent this node a request. */
  sent(at: number): void {
    if (
      this.owned &&
      this.quietSince === undefined &&
      this.client.status === 'ready'
    )
      this.quietSince = at;
  }

  /** @internal The node answered a request sent at `sentAt` (a reply, or an error reply). */
  answered(sentAt: number): void {
    this.quietSince = undefined;
    if (sentAt > this.answeredSentAt) this.answeredSentAt = sentAt;
  }

  /**
   * Drops a stalled connection so that ioredis opens a new one at once
   * (see `reconnectIfStalled`): clients the library owns only, never a
   * borrowed one, and never a Cluster (it has no `stream` of its own; its
   * connections are ioredis's to manage). Returns whether it did.
   */
  reconnect(): boolean {
    const stream = this.client.stream;
    if (!this.owned || this.client.status !== 'ready' || !stream) return false;
    this.quietSince = undefined;
    // Reset, not closed: a closed socket's kernel keeps retransmitting
    // what was never delivered, and after the heal an old lock request
    // would land on the node with the release that followed it lost (a
    // stale key for a lease). A reset throws unsent requests away (TCP
    // only; a TLS socket is closed). ioredis sees the socket close, as on
    // a network error, and reconnects by its retryStrategy.
    try {
      stream.resetAndDestroy();
    } catch {
      stream.destroy();
    }
    return true;
  }

  /** Writes of this tick: the first sent, or the socket corked for the rest. */
  private tick?: 'first' | Redis['stream'];

  /** Requests waiting in the corked socket for the next write. */
  private corked = 0;

  /**
   * Runs a script by SHA, sending its source only if the node answers
   * NOSCRIPT, with every key it may touch declared (`declareMetaKeys`).
   * Requests to this node made in the same tick (many callers acquiring or
   * releasing at once) leave in few socket writes (see `coalesceWrites`).
   */
  run(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    this.coalesceWrites();
    if (script.metaKeys === undefined)
      return runScript(this.client, script, keys, args);
    const call = declareMetaKeys(script, keys, args);
    return runScript(this.client, script, call.keys, call.args);
  }

  /**
   * Batches the requests of one tick to this node into few socket writes
   * (ioredis writes each command at once, one system call each). The first
   * request of a tick leaves at once, so a lone sequential request never
   * waits; a second one in the same tick corks the socket, and the rest
   * leave `WRITE_BATCH` at a time, the last of them at `nextTick`. Why not
   * ioredis's auto-pipelining or corking every write: docs/performance.md,
   * "Why the code is shaped this way".
   */
  private coalesceWrites(): void {
    if (this.tick === undefined) {
      this.tick = 'first';
      endOfTick.push(this);
      if (endOfTick.length === 1) process.nextTick(flushTick);
      return;
    }
    if (this.tick !== 'first') {
      // A full batch leaves before this request joins the next one.
      if (this.corked === WRITE_BATCH) {
        this.tick.uncork();
        this.tick.cork();
        this.corked = 0;
      }
      this.corked++;
      return;
    }
    const stream = this.client.stream;
    if (this.client.status !== 'ready' || !stream?.writable) return;
    stream.cork();
    this.tick = stream;
    this.corked = 1;
  }

  /** @internal Ends this node's tick: sends what was corked. */
  endTick(): void {
    if (this.tick !== 'first') this.tick?.uncork();
    this.tick = undefined;
  }

  /**
   * Runs a script once per call, all calls in one pipeline (see
   * `runScriptPipeline`). Resolves with each call's reply, or its error.
   */
  runPipeline(
    script: LuaScript,
    calls: readonly ScriptCall[],
  ): Promise<unknown[]> {
    return runScriptPipeline(
      () => this.client.pipeline(),
      script,
      script.metaKeys === undefined
        ? calls
        : calls.map(({ keys, args }) => declareMetaKeys(script, keys, args)),
    );
  }

  /**
   * Calls `onReady` each time the node's connection is ready, and
   * `onClose` each time it closes (on a Cluster: any of its connections).
   * Returns the function that stops.
   */
  watchConnection(onReady: () => void, onClose: () => void): () => void {
    this.client.on('ready', onReady);
    this.client.on('close', onClose);
    return () => {
      this.client.off('ready', onReady);
      this.client.off('close', onClose);
    };
  }

  /** PINGs the node; a Cluster PINGs each of its masters. */
  ping(): Promise<unknown> {
    return this.client.ping();
  }

  /**
   * How long the server has been up (`INFO server`), in whole seconds, by
   * shard: one entry, `''`, for a server (see `shardOf`).
   */
  async uptimes(): Promise<Map<string, number>> {
    return new Map([['', uptimeOf(await this.client.info('server'))]]);
  }

  /** The shard of `uptimes()` that holds `key`: `''` for a server. */
  shardOf(_key: string): string {
    return '';
  }

  /** The server's `run_id`: one server reached under two names shares it. */
  async runId(): Promise<string | undefined> {
    return runIdOf(await this.client.info('server'));
  }

  /** Closes the client if the library owns it; borrowed clients are left to their owner. */
  async close(): Promise<void> {
    if (this.owned) await closeClient(this.client);
  }
}

/**
 * The most requests one write to a node carries within a tick: the node
 * starts on them while the client prepares the rest. With one write per
 * tick, client and node took turns (docs/performance.md).
 */
export const WRITE_BATCH = 16;

/** Nodes that sent a request this tick (one `nextTick` ends the tick for all). */
const endOfTick: RedlockNode[] = [];
function flushTick(): void {
  for (const node of endOfTick.splice(0)) node.endTick();
}

/** `uptime_in_seconds` of an `INFO server` reply (NaN when absent). */
export function uptimeOf(info: string): number {
  return Number(/uptime_in_seconds:(\d+)/.exec(info)?.[1]);
}

/** `run_id` of an `INFO server` reply. */
export function runIdOf(info: string): string | undefined {
  return /run_id:(\w+)/.exec(info)?.[1];
}
