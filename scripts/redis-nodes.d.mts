import type { Redis } from 'ioredis';

/** A free TCP port on loopback, found by binding port 0. */
export declare function freePort(): Promise<number>;

/**
 * True where servers are started through `setpriv --pdeathsig KILL`
 * (Linux): the kernel kills them if the process that started them dies.
 */
export declare const SERVERS_DIE_WITH_PARENT: boolean;

/** The server binary: REDLOCK_SERVER, else `redis-server` on PATH. */
export declare const SERVER_BINARY: string;

/**
 * REDLOCK_TEST_PROTOCOL (2 or 3), set as ioredis's default `protocol` in
 * this module instance of ioredis when the module loads; undefined when unset.
 */
export declare const TEST_PROTOCOL: 2 | 3 | undefined;

/** One real `redis-server` process on 127.0.0.1, persistence off. */
export declare class RedisServer {
  readonly port: number;
  private constructor(port: number);
  /** Starts a server on a free port. */
  static start(): Promise<RedisServer>;
  readonly pid: number | undefined;
  readonly url: string;
  /** SIGKILL: a crash, nothing persisted. */
  kill(): Promise<void>;
  /** SIGSTOP: sockets stay open, nothing is answered. */
  freeze(): void;
  /** SIGCONT. */
  thaw(): void;
  /** Starts again on the same port, empty. */
  restart(): Promise<void>;
  /** Stops for good and removes its directory. */
  stop(): Promise<void>;
  /** A fresh client; the caller closes it. */
  client(): Redis;
}

/** Starts `count` servers in parallel. */
export declare function startServers(count: number): Promise<RedisServer[]>;

/** Every key on a server matching `pattern`, found with SCAN. */
export declare function scanKeys(
  client: Redis,
  pattern: string,
): Promise<string[]>;
