/** A proxy in this process adding `oneWayMs` each way to the Redis node on `targetPort`. */
export declare function listenDelayed(
  targetPort: number,
  oneWayMs: number,
): Promise<{ url: string; close: () => Promise<void> }>;

/** Delaying proxies, one per target port, in a child process of their own. */
export declare function startFarNodes(
  targetPorts: number[],
  oneWayMs: number,
): Promise<{ urls: string[]; stop: () => Promise<void> }>;
