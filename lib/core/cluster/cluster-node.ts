import type { Cluster, Redis } from 'ioredis';
import { RedlockNode, runIdOf, uptimeOf } from '../nodes/redlock-node.js';
import {
  runScript,
  runScriptPipeline,
  type LuaScript,
  type ScriptCall,
} from '../scripts/lua-script.js';
import { declareMetaKeys } from '../scripts/declared-keys.js';
import { acquireAcrossSlots } from './acquire-across-slots.js';
import { groupBySlot, keysOf, slotOf } from './key-slot.js';
import { SLOT_RULES, slotRuleOf } from './slot-rules.js';

/**
 * A Redis Cluster as one node of the quorum: its masters together hold the
 * node's keys, each resource's keys in one slot (see `taggedKey`). A script
 * whose keys span slots runs once per slot, all at once, and its replies
 * are merged into one vote; a multi-resource acquire refused in one slot
 * takes back what the others granted before it answers, so a refusal
 * leaves no key, as on a single server. Pipelines (the watchdog's
 * extensions) leave one per shard. Release wake-ups use the cluster's
 * sharded pub/sub (see `ShardSubscriber`).
 */
export class ClusterNode extends RedlockNode {
  constructor(
    readonly cluster: Cluster,
    name: string,
    owned: boolean,
  ) {
    // The calls every node makes alike (status, events, evalsha, pipeline,
    // info, time) a Cluster answers as a client does, routed by key.
    super(cluster as unknown as Redis, name, owned);
  }

  override run(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    if (keys.length === 1 || script.name === 'inspect')
      return this.send(script, keys, args);
    if (script.name === 'acquire')
      return acquireAcrossSlots(script, keys, args, this.send);
    const rule = slotRuleOf(script);
    const columns = rule.columns(args);
    const groups = groupBySlot(keys, columns);
    if (groups.length === 1) return this.send(script, keys, args);
    if (rule.oneSlot)
      return Promise.reject(
        new Error(
          `the ${script.name} script needs every resource in one hash slot: tag them alike ({tag})`,
        ),
      );
    return Promise.all(
      groups.map((group) =>
        this.send(
          script,
          keysOf(keys, columns, group),
          rule.argsFor?.(args, group) ?? args,
        ),
      ),
    ).then((replies) => rule.merge(replies, groups));
  }

  /** One script call on the keys of one slot (see `declareMetaKeys`). */
  private readonly send = (
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> => {
    const call = declareMetaKeys(script, keys, args);
    return runScript(
      this.client,
      script.forCluster ?? script,
      call.keys,
      call.args,
    );
  };

  /**
   * One pipeline per shard: calls are grouped by the master that owns
   * their slot (the cluster's current view), each group sent at once. A
   * call whose keys span slots (recreating a multi-resource lock) is split
   * by its script's `SlotRule` and its replies merged.
   */
  override async runPipeline(
    script: LuaScript,
    calls: readonly ScriptCall[],
  ): Promise<unknown[]> {
    const rule = SLOT_RULES.get(script.name);
    const parts: (ScriptCall & { call: number })[] = [];
    const groupsOf: (number[][] | undefined)[] = [];
    calls.forEach((call, i) => {
      const columns = rule?.columns(call.args) ?? 1;
      const groups =
        rule && call.keys.length > 1
          ? groupBySlot(call.keys, columns)
          : undefined;
      if (!groups || groups.length === 1) {
        parts.push({
          call: i,
          ...declareMetaKeys(script, call.keys, call.args),
        });
        return;
      }
      groupsOf[i] = groups;
      for (const group of groups)
        parts.push({
          call: i,
          ...declareMetaKeys(
            script,
            keysOf(call.keys, columns, group),
            rule?.argsFor?.(call.args, group) ?? call.args,
          ),
        });
    });
    const variant = script.forCluster ?? script;
    const byShard = new Map<string, number[]>();
    parts.forEach((part, p) => {
      const owner = this.cluster.slots[slotOf(part.keys[0])]?.[0] ?? '';
      const list = byShard.get(owner);
      if (list) list.push(p);
      else byShard.set(owner, [p]);
    });
    const replies = new Array<unknown>(parts.length);
    await Promise.all(
      [...byShard.values()].map(async (indexes) => {
        const answers = await runScriptPipeline(
          () => this.cluster.pipeline(),
          variant,
          indexes.map((p) => parts[p]),
        ).catch((error: unknown) => indexes.map(() => error));
        indexes.forEach((p, k) => (replies[p] = answers[k]));
      }),
    );
    const results = new Array<unknown>(calls.length);
    const pending = new Map<number, unknown[]>();
    parts.forEach((part, p) => {
      if (!groupsOf[part.call]) results[part.call] = replies[p];
      else
        pending.set(part.call, [...(pending.get(part.call) ?? []), replies[p]]);
    });
    for (const [i, answers] of pending) {
      const error = answers.find((a) => a instanceof Error);
      results[i] = error ?? rule?.merge(answers, groupsOf[i] ?? []);
    }
    return results;
  }

  /**
   * The cluster's own `ready` and `close`, those of each of its
   * connections (a master that restarted reconnects alone), and a new
   * view of its slots as `onReady` (a failover: the connection of the
   * master that died closed, and no other may reconnect).
   */
  override watchConnection(
    onReady: () => void,
    onClose: () => void,
  ): () => void {
    const watch = (redis: Redis) => {
      redis.on('ready', onReady);
      redis.on('close', onClose);
    };
    const stopWatching = super.watchConnection(onReady, onClose);
    for (const redis of this.cluster.nodes('all')) watch(redis);
    this.cluster.on('+node', watch);
    this.cluster.on('refresh', onReady);
    return () => {
      stopWatching();
      this.cluster.off('+node', watch);
      this.cluster.off('refresh', onReady);
      for (const redis of this.cluster.nodes('all')) {
        redis.off('ready', onReady);
        redis.off('close', onClose);
      }
    };
  }

  /** The masters (one per shard), as the cluster sees them now. */
  masters(): Redis[] {
    return this.cluster.nodes('master');
  }

  override async ping(): Promise<unknown> {
    const masters = this.masters();
    if (!masters.length) throw new Error('no master known (cluster not ready)');
    const down: string[] = [];
    await Promise.all(
      masters.map((m) =>
        m.ping().catch((error: Error) => {
          down.push(`${shardName(m)}: ${error.message}`);
        }),
      ),
    );
    if (down.length) throw new Error(`shard ${down.join('; shard ')}`);
    return masters.map(shardName);
  }

  /**
   * The uptime of every master of the slot map, by `host:port`: all must
   * answer, as one whose connection is not back yet may be the one that
   * restarted.
   */
  override async uptimes(): Promise<Map<string, number>> {
    const owners = new Set(this.cluster.slots.map((nodes) => nodes[0]));
    if (!owners.size) throw new Error('no slot map yet (cluster not ready)');
    const byName = new Map(
      this.cluster.nodes('all').map((n) => [shardName(n), n]),
    );
    const uptimes = await Promise.all(
      [...owners].map(async (owner) => {
        const master = byName.get(owner);
        if (!master) {
          // ioredis drops a node's connection when it goes down, and makes
          // it again only when the slots are read again (the 'refresh' that
          // follows checks again: see `watchConnection`).
          this.cluster.refreshSlotsCache();
          throw new Error(`no connection to master ${owner} yet`);
        }
        return [owner, uptimeOf(await master.info('server'))] as const;
      }),
    );
    return new Map(uptimes);
  }

  /** The master that owns `key`'s slot (the cluster's current view). */
  override shardOf(key: string): string {
    return this.cluster.slots[slotOf(key)]?.[0] ?? '';
  }

  /** The run id of the master of slot 0: two entries naming one cluster share it. */
  override async runId(): Promise<string | undefined> {
    const owner = this.cluster.slots[0]?.[0];
    const master = this.masters().find((m) => shardName(m) === owner);
    if (!master) return undefined;
    return runIdOf(await master.info('server'));
  }
}

/** `host:port` of a master: how the cluster names its nodes. */
export function shardName(client: Redis): string {
  return `${client.options.host}:${client.options.port}`;
}
