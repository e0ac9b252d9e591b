import type { Redis } from 'ioredis';

/** How a node is cut off (see netns-nodes.mjs). */
export type PartitionMode = 'blackhole' | 'down';

/**
 * Why network namespaces cannot be used here (not root, no iproute2, no
 * redis-server, not Linux), or undefined when they can. Probes once per
 * process by creating and deleting a namespace.
 */
export declare function netnsUnavailable(): string | undefined;

/** One redis-server in a namespace of its own. */
export declare class NetnsNode {
  private constructor();
  readonly index: number;
  /** The namespace's name. */
  readonly ns: string;
  /** The node's address, 10.B.<index+1>.2. */
  readonly host: string;
  readonly port: number;
  readonly url: string;
  /** The server's pid (while it runs). */
  readonly pid: number | undefined;
  /** How it is cut off now, if it is. */
  readonly partitioned: PartitionMode | undefined;
  /** SIGSTOP of the server: sockets stay open, nothing is answered. */
  freeze(): void;
  /** SIGCONT. */
  thaw(): void;
  /** A fresh client (the caller closes it). */
  client(): Redis;
}

/**
 * `count` redis-server nodes, each in its own network namespace behind a
 * router namespace; one set per process at a time.
 */
export declare class NetnsNodes {
  private constructor();
  /**
   * Starts `count` nodes; rejects with the reason when namespaces are not
   * available, and removes whatever it made on any failure.
   */
  static start(count: number): Promise<NetnsNodes>;
  readonly nodes: readonly NetnsNode[];
  readonly urls: string[];
  /**
   * Cuts node `i` off: `'blackhole'` loses every packet both ways
   * (neither end is told), `'down'` takes its interface down.
   */
  partition(i: number, mode: PartitionMode): void;
  /** Puts node `i` back on the network. */
  heal(i: number): void;
  /** Heals every node that is cut off. */
  healAll(): void;
  /** Stops every server by pid; deletes the namespaces, veths and route. */
  stop(): Promise<void>;
}
