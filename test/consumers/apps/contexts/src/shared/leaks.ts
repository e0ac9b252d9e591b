import { nodeAddresses } from './redis';

/**
 * The Redis node addresses (`host:port` of REDIS_URLS, or any
 * `127.0.0.1:<port>`) found in what a client received: bodies, headers,
 * GraphQL errors, RPC errors, WebSocket payloads. Node addresses belong in
 * the server's logs, never in an answer.
 */
export function nodeAddressesIn(received: unknown): string[] {
  const text =
    typeof received === 'string' ? received : (JSON.stringify(received) ?? '');
  const found = new Set<string>();
  for (const address of nodeAddresses())
    if (text.includes(address)) found.add(address);
  for (const match of text.matchAll(/127\.0\.0\.1:\d+/g)) found.add(match[0]);
  return [...found];
}

/**
 * Stack frames (`    at f (file:1:2)`) in what a client received: every
 * string in it (a parsed JSON body, headers), split into lines, so that a
 * frame inside a JSON array (Apollo's `extensions.stacktrace`) counts too.
 */
export function stackFramesIn(received: unknown): string[] {
  const frames: string[] = [];
  const visit = (value: unknown): void => {
    if (typeof value === 'string')
      for (const line of value.split('\n'))
        if (/^\s+at /.test(line)) frames.push(line);
    if (Array.isArray(value)) value.forEach(visit);
    else if (typeof value === 'object' && value !== null)
      Object.values(value).forEach(visit);
  };
  visit(received);
  return frames;
}
