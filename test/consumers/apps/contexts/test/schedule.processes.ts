import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

/**
 * Replicas as separate OS processes (the compiled apps under dist/), with
 * their output kept for the assertions on what they log.
 */
export const DIST = join(__dirname, '..', 'dist', 'src');

export interface Replica {
  readonly pid: number;
  /** stdout and stderr, as printed so far. */
  output(): string;
  /** Resolves once the output matches, rejects after `timeoutMs` or on exit. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<void>;
  /**
   * SIGTERM (unless `signal` is false: it is stopping by itself), then
   * SIGKILL after `graceMs`: how it ended.
   */
  stop(graceMs?: number, signal?: boolean): Promise<Exit>;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** It had to be killed: it did not exit by itself after SIGTERM. */
  killed: boolean;
}

const started = new Set<Replica>();

export function startReplica(
  script: string,
  env: Record<string, string>,
): Replica {
  const child: ChildProcess = spawn(process.execPath, [join(DIST, script)], {
    // NO_COLOR: plain `ERROR [Context]` lines to match.
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const listeners = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    text += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  let exit: Exit | undefined;
  const exited = new Promise<Exit>((resolve) =>
    // 'close': after the last output, too.
    child.once('close', (code, signal) => {
      exit = { code, signal, killed: signal === 'SIGKILL' };
      resolve(exit);
      for (const listener of listeners) listener();
    }),
  );

  const replica: Replica = {
    pid: child.pid!,
    output: () => text,
    waitFor: (pattern, timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        const done = (error?: Error) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (error) reject(error);
          else resolve();
        };
        const check = () => {
          if (pattern.test(text)) done();
          else if (exit)
            done(
              new Error(`${script} exited before ${pattern}:\n${tail(text)}`),
            );
        };
        const timer = setTimeout(
          () =>
            done(
              new Error(
                `${script} (pid ${child.pid}) did not print ${pattern} within ${timeoutMs} ms:\n${tail(text)}`,
              ),
            ),
          timeoutMs,
        );
        listeners.add(check);
        check();
      }),
    stop: async (graceMs = 10_000, signal = true) => {
      started.delete(replica);
      if (!exit && signal) child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      });
      const first = await Promise.race([exited, late]);
      clearTimeout(timer);
      if (first) return first;
      child.kill('SIGKILL');
      return exited;
    },
  };
  started.add(replica);
  return replica;
}

/** Stops every replica still running (afterAll, and after a failed test). */
export async function stopAll(): Promise<void> {
  await Promise.all([...started].map((replica) => replica.stop(5_000)));
}

/** Polls `probe` until it returns a value other than undefined; bounded. */
export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Ports nothing listens on: lock nodes that are down. */
export async function closedPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i++) {
    const server = createServer();
    await new Promise<void>((resolve) =>
      server.listen(0, '127.0.0.1', resolve),
    );
    const address = server.address();
    ports.push(typeof address === 'object' && address ? address.port : 0);
    await new Promise((resolve) => server.close(resolve));
  }
  return ports;
}

/** Nest's ConsoleLogger lines at `level` (ERROR, WARN, ...). */
export function linesAt(output: string, level: string): string[] {
  const line = new RegExp(`^\\[Nest\\] \\d+ .*\\s${level} \\[`);
  return output.split('\n').filter((text) => line.test(text));
}

function tail(text: string, lines = 30): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}
