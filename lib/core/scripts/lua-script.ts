import { createHash } from 'node:crypto';
import { Command, type ChainableCommander, type Redis } from 'ioredis';

/**
 * A named Lua script with its SHA1 computed once, so nodes run it by
 * `EVALSHA` and only send the source when a node answers `NOSCRIPT` (after a
 * restart or `SCRIPT FLUSH`).
 */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
  /**
   * For a script that reaches its lock keys' meta keys (wait queue, place
   * expiries, grant note): which, and where it finds the meta prefix. Such
   * a script is sent with those keys declared after its own, on every node
   * kind (see `declareMetaKeys` and `DECLARED_KEYS_LUA`).
   */
  readonly metaKeys?: MetaKeysRule;
  /**
   * The variant a Redis Cluster node runs, when it differs: a release
   * announces on the key's shard (`SPUBLISH`), a single server on a plain
   * channel.
   */
  readonly forCluster?: LuaScript;
}

/** Where a script that declares meta keys finds what it needs to name them. */
export interface MetaKeysRule {
  /**
   * The meta keys of each lock key it may touch: `q:` its wait queue, `t:`
   * the places' expiries, `g:` the grant note (see WAIT_QUEUE_LUA).
   */
  readonly kinds: readonly ('q:' | 't:' | 'g:')[];
  /** The index (from 0) of the meta prefix in the script's arguments. */
  readonly prefixArg: number;
  /**
   * The index of the argument that is `1` when the keys are the lock keys
   * followed by as many fencing counters (which have no meta keys).
   */
  readonly fencingArg?: number;
}

/** One run of a script in a pipeline. */
export interface ScriptCall {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
}

/**
 * Builds a {@link LuaScript}, hashing its source once at module load.
 * `declared`: for a script that reaches meta keys, where it finds the meta
 * prefix, and (`clusterSource`) its Redis Cluster variant if it differs;
 * both are then run with the meta keys declared (see `DECLARED_KEYS_LUA`).
 * A script that declares all its keys itself may still give a
 * `clusterSource` alone.
 */
export function defineScript(
  name: string,
  source: string,
  declared?:
    | (MetaKeysRule & { readonly clusterSource?: string })
    | { readonly clusterSource: string },
): LuaScript {
  if (declared === undefined) return hashed(name, source);
  if (!('kinds' in declared)) {
    // Declares every key itself; only its Cluster variant differs.
    const script = hashed(name, source);
    if (declared.clusterSource === source) return script;
    return { ...script, forCluster: hashed(name, declared.clusterSource) };
  }
  const { clusterSource, ...metaKeys } = declared;
  const script = hashed(name, DECLARED_KEYS_LUA + source, metaKeys);
  if (clusterSource === undefined || clusterSource === source) return script;
  return {
    ...script,
    forCluster: hashed(name, DECLARED_KEYS_LUA + clusterSource, metaKeys),
  };
}

function hashed(
  name: string,
  source: string,
  metaKeys?: MetaKeysRule,
): LuaScript {
  const sha = createHash('sha1').update(source).digest('hex');
  return metaKeys ? { name, source, sha, metaKeys } : { name, source, sha };
}

/**
 * The start of a script that reaches meta keys. Managed and compatible
 * servers (ElastiCache Serverless, Dragonfly, Upstash, Alibaba's cluster
 * proxy) refuse a script that touches a key it did not declare, and a
 * Cluster routes a script by the keys it declares: during a slot migration
 * it runs one only where all of them are (or asks the client to try
 * again), and a key reached without being declared could be written on
 * the node the slot is leaving, where the migration would then fail on
 * it. So the client declares the meta keys too, on every node kind (see
 * `declareMetaKeys`), and sends, last in ARGV, how many keys the script
 * itself reads; the rest are taken off here, and the script names them from
 * the meta prefix, as the client did.
 */
const DECLARED_KEYS_LUA = `
local declared = tonumber(table.remove(ARGV))
while #KEYS > declared do table.remove(KEYS) end
`;

/** True for the error a node answers when it does not know a script's SHA. */
export function isNoScriptError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Per client, the scripts whose source is on its way after a NOSCRIPT: the
 * `EVAL` that sends it, which loads the script as it runs.
 */
const loading = new WeakMap<Redis, Map<string, Promise<unknown>>>();

/**
 * Sends `EVALSHA <sha>` or `EVAL <source>` with its keys and arguments as
 * the client's own command methods would (the client's `keyPrefix`, which a
 * `FencedStore`'s client may have, replies as strings, its friendly error
 * stacks), but without their generic wrapper, whose rest parameters and
 * callback handling V8 compiled apart from the lock path on every cold
 * start (docs/performance.md).
 */
function sendScript(
  client: Redis,
  command: 'evalsha' | 'eval',
  shaOrSource: string,
  keys: readonly string[],
  args: readonly (string | number | Buffer)[],
): Promise<unknown> {
  const { keyPrefix, showFriendlyErrorStack } = client.options;
  return client.sendCommand(
    // Command flattens the key and argument arrays into a new one (`flat()`,
    // native even before V8 optimises this path); it never writes to them.
    new Command(
      command,
      [
        shaOrSource,
        keys.length,
        keys as string[],
        args as (string | number | Buffer)[],
      ],
      // The options in the order ioredis's own methods write them: the
      // Command constructor sees one object shape (docs/performance.md).
      {
        errorStack: showFriendlyErrorStack ? new Error() : undefined,
        keyPrefix,
        replyEncoding: 'utf8',
      },
    ),
  ) as Promise<unknown>;
}

/**
 * Runs a script by SHA, sending its source only if the node answers
 * NOSCRIPT. After a node restarts empty, a burst of requests all meet
 * NOSCRIPT at once: the first sends the source (`EVAL`), and the others
 * wait for it and run by SHA again, instead of each sending the source
 * (a few KB, hashed by the node on every `EVAL`). A request that meets
 * NOSCRIPT a second time (the script was flushed again, `again`) sends the
 * source itself.
 */
export function runScript(
  client: Redis,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number | Buffer)[],
  again = false,
): Promise<unknown> {
  // Not an async function: this runs for every node of every request, and
  // it showed in the client's CPU.
  return sendScript(client, 'evalsha', script.sha, keys, args).catch(
    (error: unknown) => {
      if (!isNoScriptError(error)) throw error;
      const pending = again ? undefined : loading.get(client)?.get(script.sha);
      if (pending) {
        const retry = () => runScript(client, script, keys, args, true);
        return pending.then(retry, retry);
      }
      const sent = sendScript(client, 'eval', script.source, keys, args);
      let scripts = loading.get(client);
      if (!scripts) loading.set(client, (scripts = new Map()));
      scripts.set(script.sha, sent);
      const done = () => {
        if (scripts.get(script.sha) === sent) scripts.delete(script.sha);
      };
      sent.then(done, done);
      return sent;
    },
  );
}

/**
 * Runs a script once per call, all calls in one pipeline (one write, one
 * round trip). Calls answered NOSCRIPT go again by SHA in a second
 * pipeline that loads the source first: the source crosses once, not
 * once per call (a watchdog tick with thousands of locks makes several).
 * Resolves with each call's reply, or its error.
 */
export async function runScriptPipeline(
  newPipeline: () => ChainableCommander,
  script: LuaScript,
  calls: readonly ScriptCall[],
): Promise<unknown[]> {
  const pipeline = newPipeline();
  for (const { keys, args } of calls)
    pipeline.evalsha(script.sha, keys.length, ...keys, ...args);
  const results = (await pipeline.exec()) ?? [];
  const missing = results
    .map(([error], i) => (isNoScriptError(error) ? i : -1))
    .filter((i) => i >= 0);
  if (missing.length) {
    // A pipeline runs in order on one connection: loaded before use.
    const again = newPipeline().script('LOAD', script.source);
    for (const i of missing) {
      const { keys, args } = calls[i];
      again.evalsha(script.sha, keys.length, ...keys, ...args);
    }
    const [load, ...retried] = (await again.exec()) ?? [];
    // A load that failed says more than the NOSCRIPT that follows it.
    missing.forEach((i, j) => (results[i] = load?.[0] ? load : retried[j]));
  }
  return results.map(([error, reply]) => error ?? reply);
}
