import type {
  InspectOptions,
  ReadWriteInspection,
  SemaphoreInspection,
} from '../core/inspection/inspect-options.js';
import type { LockInspection } from '../core/operations/inspect.js';
import { permitResource } from '../core/permits/permit-slots.js';
import { NODE } from './in-memory-options.js';
import type { MemoryStore } from './memory-store.js';

/** What the in-memory inspection reads: the store, names, the time. */
export interface MemoryInspected {
  readonly store: MemoryStore;
  keyOf(resource: string): string;
  readonly now: number;
}

/** `inspect(resource)` of a mutex: one node, `memory`, where every lock is this instance's. */
export function inspectMutex(
  m: MemoryInspected,
  resource: string,
): LockInspection {
  const key = m.keyOf(resource);
  const view = m.store.view(key, m.now);
  const holder = view.exists ? ('this-instance' as const) : undefined;
  const nodes = [{ node: NODE, up: true, ...view }];
  return { resource, key, held: !!holder, holder, nodes };
}

/** `inspect(resource, { permits })`: each permit slot as a mutex's key. */
export function inspectSemaphore(
  m: MemoryInspected,
  resource: string,
  permits: number,
): SemaphoreInspection {
  const slots = Array.from({ length: permits }, (_, i) =>
    inspectMutex(m, permitResource(resource, i)),
  );
  const held = slots.filter((slot) => slot.held).length;
  const fencingToken = m.store.view(m.keyOf(resource), m.now).fencingToken;
  return {
    resource,
    key: m.keyOf(resource),
    permits,
    inUse: held > 0 ? permits : undefined,
    held,
    heldHere: held,
    slots,
    nodes: [
      {
        node: NODE,
        up: true,
        permits: held > 0 ? permits : undefined,
        holders: held,
        ...(fencingToken === undefined ? {} : { fencingToken }),
      },
    ],
  };
}

/** `inspect(resource, { mode })`: the writer, or the readers and their leases, and a waiting writer. */
export function inspectReadWrite(
  m: MemoryInspected,
  resource: string,
): ReadWriteInspection {
  const key = m.keyOf(resource);
  const writer = m.store.holder(key, m.now)
    ? ('this-instance' as const)
    : undefined;
  const leases = m.store.readerLeases(key, m.now);
  const waiting = m.store.hasIntent(key)
    ? ('this-instance' as const)
    : undefined;
  const view = m.store.view(key, m.now);
  return {
    resource,
    key,
    held: writer !== undefined || leases.length > 0,
    mode: writer ? 'write' : leases.length > 0 ? 'read' : undefined,
    writer,
    readers: leases.length,
    readersHere: leases.length,
    writerWaiting: waiting,
    nodes: [
      {
        node: NODE,
        up: true,
        exists: view.exists,
        ttlMs: view.ttlMs,
        writer,
        readers: leases.map((ttlMs) => ({
          holder: 'this-instance' as const,
          ttlMs,
        })),
        // Its life left is not kept here: the intent stands until the
        // writer holds or gives up.
        writerWaiting: waiting && { holder: waiting, ttlMs: 0 },
      },
    ],
  };
}

/** The shape `options` ask to read. */
export function inspectedShape(
  options: number | InspectOptions | undefined,
): 'mutex' | 'permits' | 'mode' {
  if (typeof options !== 'object' || options === null) return 'mutex';
  if (options.permits !== undefined) return 'permits';
  return options.mode !== undefined ? 'mode' : 'mutex';
}
