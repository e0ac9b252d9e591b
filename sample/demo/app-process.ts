import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** The sample app running in its own Node process. */
export interface AppProcess {
  baseUrl: string;
  stop(): Promise<void>;
}

/** Boots `sample/dist/src/main.js` on a free loopback port and waits until it answers. */
export async function startApp(
  entry: string,
  env: Record<string, string>,
): Promise<AppProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const baseUrl = `http://127.0.0.1:${port}`;
  const app: AppProcess = { baseUrl, stop: () => stopChild(child) };

  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`the sample app exited during startup:\n${output}`);
    try {
      const res = await fetch(`${baseUrl}/stats`);
      if (res.ok) {
        // From here on, only errors are worth showing.
        child.stdout?.off('data', collect);
        child.stdout?.resume();
        return app;
      }
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  await app.stop();
  throw new Error(`the sample app did not start within 20 s:\n${output}`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
