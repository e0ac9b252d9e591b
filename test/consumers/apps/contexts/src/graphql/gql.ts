import { http, type HttpAnswer } from '../shared/http';

/** A GraphQL request over HTTP, as any client sends it. */
export function gql(
  url: string,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<HttpAnswer> {
  return http(`${url}/graphql`, { method: 'POST', body: { query, variables } });
}

export const RESERVE =
  'mutation ($sku: String!) { reserve(sku: $sku) { sku reserved } }';
export const RESERVE_NOW =
  'mutation ($sku: String!) { reserveNow(sku: $sku) { sku reserved } }';
export const RESERVE_INPUT =
  'mutation ($input: ReserveInput!) { reserveInput(input: $input) { sku reserved } }';
export const REFUSE = 'mutation { refuse { sku reserved } }';
export const FAIL = 'mutation { fail { sku reserved } }';
