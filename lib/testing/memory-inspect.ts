import {
  inspectOptions,
  type InspectOptions,
  type ReadWriteInspection,
  type SemaphoreInspection,
} from '../core/inspection/inspect-options.js';
import type { Lock } from '../core/lock.js';
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

/** See `Redlock.inspect` (options checked as the real lock checks them). */
export function inspectMemory(
  m: MemoryInspected,
  resource: string,
  options: number | InspectOptions | undefined,
): LockInspection | SemaphoreInspection | ReadWriteInspection {
  const checked = inspectOptions(options);
  if (checked.permits !== undefined)
    return inspectSemaphore(m, resource, checked.permits);
  if (checked.mode !== undefined) return inspectReadWrite(m, resource);
  return inspectMutex(m, resource);
}

/** See `InMemoryRedlock.holdersOf`: a mutex's or writer's lock, the readers, or a semaphore's permit holders. */
export function holdersIn(m: MemoryInspected, resource: string): Lock[] {
  const key = m.keyOf(resource);
  const holder = m.store.holder(key, m.now);
  if (holder) return [holder];
  const readers = m.store.readersOf(key, m.now);
  if (readers.length > 0) return readers;
  const slot = permitResource(resource, 0).slice(0, -1);
  return m.store.holdersWhere(
    (name) => name.startsWith(slot) && /^\d+$/.test(name.slice(slot.length)),
    m.now,
  );
}
