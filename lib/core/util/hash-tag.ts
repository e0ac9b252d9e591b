import { createHash } from 'node:crypto';

/**
 * The lock key of a resource when keys carry hash tags (a Redis Cluster
 * among the nodes, or `hashTags: true`): every key the library keeps for a
 * resource (the lock, its wait queue, grant note and fencing counter, all
 * of which contain the lock key) then hashes to one slot, so one script
 * reaches them all.
 *
 * - A resource without braces is wrapped whole: `order:42` is
 *   `lock:{order:42}`.
 * - A resource with braces keeps them after a tag of its own:
 *   `{user:7}:cart` is `lock:{user:7}{user:7}:cart` (its own hash tag, as
 *   Redis would read it, so resources sharing a tag share a slot), and one
 *   without a readable tag (`a}b`) gets a digest: `lock:{h:<digest>}a}b`.
 *
 * The two forms never meet: a wrapped key ends at its only `}`, the other
 * form has more braces after it; and the tag ends at the first `}`, so the
 * key gives the resource back.
 */
export function taggedKey(prefix: string, resource: string): string {
  if (!resource.includes('{') && !resource.includes('}'))
    return `${prefix}{${resource}}`;
  return `${prefix}{${ownTag(resource) ?? digestTag(resource)}}${resource}`;
}

/**
 * The hash tag Redis reads in a key: the text between its first `{` and
 * the first `}` after it, when that text is not empty.
 */
export function ownTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

function digestTag(resource: string): string {
  return (
    'h:' + createHash('sha1').update(resource).digest('base64url').slice(0, 16)
  );
}

/** Whether a prefix would break the tags (a brace in it comes first). */
export function breaksTags(prefix: string): boolean {
  return prefix.includes('{') || prefix.includes('}');
}
