import { request } from 'node:http';

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body as JSON, or undefined when it is not JSON. */
  body: any;
}

/**
 * One HTTP request on its own connection (no keep-alive agent: nothing is
 * left open when the test ends), JSON in and out.
 */
export function http(
  url: string,
  options: {
    method?: string;
    body?: unknown;
    headers?: Record<string, string>;
  } = {},
): Promise<HttpAnswer> {
  const payload =
    options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        agent: false,
        headers: {
          ...(payload !== undefined && {
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(payload)),
          }),
          ...options.headers,
        },
        timeout: 20_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            body,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () =>
      req.destroy(new Error(`${url}: no answer in 20 s`)),
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The URL of an app listening on 127.0.0.1 (`app.getUrl()` may say `[::1]`). */
export function urlOf(server: { address(): unknown }): string {
  const address = server.address() as { port: number };
  return `http://127.0.0.1:${address.port}`;
}
