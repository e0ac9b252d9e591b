import type { LockConflict } from './lock-conflict.js';

/**
 * The error a GraphQL resolver fails with. graphql-js takes `extensions`
 * from the error a resolver throws (Apollo and Mercurius both show them),
 * so no dependency on `graphql` is needed. The stack is the message line
 * alone: servers outside production copy it into the response, and code
 * locations are not for clients.
 */
export class GraphQLLockConflict extends Error {
  readonly extensions: Omit<LockConflict, 'message'>;

  constructor({ message, ...extensions }: LockConflict) {
    super(message);
    this.name = extensions.name;
    this.extensions = extensions;
    this.stack = `${this.name}: ${message}`;
  }
}

/** See {@link GraphQLLockConflict}: the filter's return value is what the resolver fails with. */
export function answerGraphQL(conflict: LockConflict): GraphQLLockConflict {
  return new GraphQLLockConflict(conflict);
}
