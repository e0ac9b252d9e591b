/**
 * The Lua of the declared-keys test mode (`npm run test:declared`, see
 * declared-keys-check.ts): a prologue put before a script's source that
 * makes the script fail on any key it reaches without having declared it in
 * KEYS, as ElastiCache Serverless, Dragonfly (by default), Upstash and
 * Alibaba's cluster proxy refuse such scripts.
 *
 * The prologue shadows `redis` with a local table whose `call` and `pcall`
 * check the command's key arguments against the keys the script was sent
 * with (read before the script's own code runs, so before a Cluster
 * variant takes its declared meta keys off KEYS: the server judges by what
 * the EVAL declared, not by what the script leaves in KEYS). Everything
 * else of `redis` is reached through the real table. A local, not an
 * assignment to `redis.call`: Redis 7 makes the `redis` table read-only,
 * and every function of the script is defined after the prologue, in its
 * scope, so it sees the local.
 */

/**
 * Where a command's keys are among its arguments (1 = the first argument
 * after the name): `[first, last, step]`, `last` -1 for "to the last
 * argument"; `[0, 0, 0]` for a command that takes no key (a channel is not
 * a key). A command missing here fails the script loudly when the server
 * knows it (the table must then grow); one the server does not know goes to
 * the server, which refuses it as it would without the check.
 */
export const KEY_SPANS: Readonly<
  Record<string, readonly [number, number, number]>
> = {
  // Called by the library's scripts.
  GET: [1, 1, 1],
  SET: [1, 1, 1],
  DEL: [1, -1, 1],
  EXISTS: [1, -1, 1],
  PEXPIRE: [1, 1, 1],
  PTTL: [1, 1, 1],
  ZADD: [1, 1, 1],
  ZREM: [1, 1, 1],
  ZRANGE: [1, 1, 1],
  ZRANGEBYSCORE: [1, 1, 1],
  ZREMRANGEBYSCORE: [1, 1, 1],
  ZSCORE: [1, 1, 1],
  ZCARD: [1, 1, 1],
  TIME: [0, 0, 0],
  PUBLISH: [0, 0, 0],
  SPUBLISH: [0, 0, 0],
  // Usual in a FencedStore's guarded writes (commands of the caller's
  // choosing, one key each), and other common one-key commands.
  SETNX: [1, 1, 1],
  SETEX: [1, 1, 1],
  PSETEX: [1, 1, 1],
  GETSET: [1, 1, 1],
  GETDEL: [1, 1, 1],
  GETEX: [1, 1, 1],
  APPEND: [1, 1, 1],
  STRLEN: [1, 1, 1],
  INCR: [1, 1, 1],
  INCRBY: [1, 1, 1],
  INCRBYFLOAT: [1, 1, 1],
  DECR: [1, 1, 1],
  DECRBY: [1, 1, 1],
  UNLINK: [1, -1, 1],
  TOUCH: [1, -1, 1],
  MGET: [1, -1, 1],
  MSET: [1, -1, 2],
  MSETNX: [1, -1, 2],
  EXPIRE: [1, 1, 1],
  EXPIREAT: [1, 1, 1],
  PEXPIREAT: [1, 1, 1],
  PERSIST: [1, 1, 1],
  TTL: [1, 1, 1],
  TYPE: [1, 1, 1],
  HGET: [1, 1, 1],
  HSET: [1, 1, 1],
  HSETNX: [1, 1, 1],
  HMSET: [1, 1, 1],
  HMGET: [1, 1, 1],
  HDEL: [1, 1, 1],
  HINCRBY: [1, 1, 1],
  HINCRBYFLOAT: [1, 1, 1],
  HGETALL: [1, 1, 1],
  HLEN: [1, 1, 1],
  HEXISTS: [1, 1, 1],
  LPUSH: [1, 1, 1],
  RPUSH: [1, 1, 1],
  LPOP: [1, 1, 1],
  RPOP: [1, 1, 1],
  LLEN: [1, 1, 1],
  LRANGE: [1, 1, 1],
  LINDEX: [1, 1, 1],
  LSET: [1, 1, 1],
  LREM: [1, 1, 1],
  LTRIM: [1, 1, 1],
  SADD: [1, 1, 1],
  SREM: [1, 1, 1],
  SISMEMBER: [1, 1, 1],
  SMEMBERS: [1, 1, 1],
  SCARD: [1, 1, 1],
  ZINCRBY: [1, 1, 1],
  ZRANK: [1, 1, 1],
  ZCOUNT: [1, 1, 1],
  ZREVRANGE: [1, 1, 1],
  ZREMRANGEBYRANK: [1, 1, 1],
  XADD: [1, 1, 1],
  RENAME: [1, 2, 1],
  INFO: [0, 0, 0],
  PING: [0, 0, 0],
  ECHO: [0, 0, 0],
};

/** The error code a refused script answers with (the reply's first word). */
export const UNDECLARED = 'UNDECLARED';

/**
 * The prologue for the script named `name` (named in the error): Lua that
 * must come first in the script.
 */
export function declaredKeysPrologue(name: string): string {
  if (!/^[\w ():-]+$/.test(name))
    throw new Error(
      `script name ${JSON.stringify(name)}: letters, digits, spaces, ( ) : - only`,
    );
  const spans = Object.entries(KEY_SPANS)
    .map(([command, [a, b, c]]) => `${command}={${a},${b},${c}}`)
    .join(',');
  return `
local __dk_real = redis
local __dk_declared, __dk_keys = {}, {}
for __dk_i = 1, #KEYS do
  __dk_declared[KEYS[__dk_i]] = true
  __dk_keys[__dk_i] = KEYS[__dk_i]
end
local __dk_spans = {${spans}}
local function __dk_check(...)
  local args = {...}
  local n = select('#', ...)
  local command = string.upper(tostring(args[1]))
  local span = __dk_spans[command]
  if not span then
    if __dk_real.call('COMMAND', 'INFO', command)[1] then
      error(__dk_real.error_reply('${UNDECLARED} script "${name}": command ' ..
        command .. ' is not in the key table of test/utils/declared-keys-lua.ts'))
    end
    return
  end
  if span[1] == 0 then return end
  local last = span[2]
  if last < 0 then last = n - 1 end
  for j = span[1], last, span[3] do
    local key = args[j + 1]
    if key ~= nil and not __dk_declared[tostring(key)] then
      error(__dk_real.error_reply('${UNDECLARED} script "${name}": ' ..
        command .. ' on key "' .. tostring(key) ..
        '", not among its KEYS [' .. table.concat(__dk_keys, ', ') .. ']'))
    end
  end
end
local redis = setmetatable({
  call = function(...) __dk_check(...) return __dk_real.call(...) end,
  pcall = function(...) __dk_check(...) return __dk_real.pcall(...) end,
}, { __index = __dk_real })
`;
}

/**
 * `source` with the prologue first (after a `#!` flags line, which must
 * stay the script's first line).
 */
export function withDeclaredKeysCheck(name: string, source: string): string {
  if (source.startsWith('#!')) {
    const eol = source.indexOf('\n');
    return (
      source.slice(0, eol + 1) +
      declaredKeysPrologue(name) +
      source.slice(eol + 1)
    );
  }
  return declaredKeysPrologue(name) + source;
}
