import { createHash } from 'node:crypto';

/**
 * A named Lua script with its SHA1 computed once, so nodes run it by
 * `EVALSHA` and only send the source when a node answers `NOSCRIPT` (after a
 * restart or `SCRIPT FLUSH`).
 */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

/** Builds a {@link LuaScript}, hashing its source once at module load. */
export function defineScript(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}
