import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { show } from '../util/validate.js';

/**
 * Validates the resources of one lock and returns them sorted and without
 * duplicates (a canonical form: the same set always maps to the same keys).
 */
export function normalizeResources(
  resources: unknown,
  field = 'resources',
): string[] {
  // One resource, the common call: no set to build, nothing to sort.
  if (typeof resources === 'string' && resources.length > 0) return [resources];
  const list = typeof resources === 'string' ? [resources] : resources;
  if (!Array.isArray(list)) {
    throw new RedlockConfigError(
      field,
      `must be a non-empty string or a non-empty array of them, got ${show(resources)}`,
    );
  }
  if (list.length === 0) {
    throw new RedlockConfigError(
      field,
      'must name at least one resource, got an empty array',
    );
  }
  list.forEach((resource: unknown, i) => {
    if (typeof resource !== 'string' || resource.length === 0) {
      const at = typeof resources === 'string' ? field : `${field}[${i}]`;
      throw new RedlockConfigError(
        at,
        `must be a non-empty string, got ${show(resource)}`,
      );
    }
  });
  return [...new Set(list as string[])].sort();
}
