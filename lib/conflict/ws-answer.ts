import type { ArgumentsHost } from '@nestjs/common';
import type { LockConflict } from './lock-conflict.js';

/**
 * WebSockets: the `exception` event Nest's gateways send for their own
 * errors, with the conflict's fields; and, when the client asked for an
 * acknowledgement (socket.io passes its callback after the data), the same
 * payload as the reply, so the client does not wait for it in vain.
 */
export function answerWs(conflict: LockConflict, host: ArgumentsHost): void {
  const payload = { status: 'error', ...conflict };
  const client = host.switchToWs().getClient<WsClient>();
  if (
    typeof client.readyState === 'number' &&
    typeof client.send === 'function'
  )
    // A plain WebSocket (the `ws` adapter): its `emit` is local only.
    client.send(JSON.stringify({ event: 'exception', data: payload }));
  else client.emit?.('exception', payload);
  const ack: unknown = host.getArgByIndex(2);
  if (typeof ack === 'function') (ack as (reply: unknown) => void)(payload);
}

interface WsClient {
  readonly readyState?: unknown;
  send?(data: string): void;
  emit?(event: string, payload: unknown): void;
}
