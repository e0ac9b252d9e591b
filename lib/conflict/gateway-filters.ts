import type { DiscoveryService } from '@nestjs/core';
import type { ExceptionFilter } from '@nestjs/common';

/** Nest's metadata keys: a gateway class, and the filters of a class or method. */
const GATEWAY = 'websockets:is_gateway';
const FILTERS = '__exceptionFilters__';

/**
 * Binds `filter` to every WebSocket gateway of the app, as
 * `@UseFilters(filter)` on its class would: Nest applies no global filter
 * to gateways. Put first, so that filters the gateway binds itself (tried
 * last bound first) come before it. Runs while providers are created,
 * before Nest connects the gateways; a gateway that has one already (a
 * second lock set) is left alone.
 */
export function bindToGateways(
  discovery: DiscoveryService,
  filter: ExceptionFilter,
): void {
  for (const wrapper of discovery.getProviders()) {
    const type: unknown = wrapper.metatype;
    if (typeof type !== 'function' || !Reflect.getMetadata(GATEWAY, type))
      continue;
    const bound: unknown = Reflect.getMetadata(FILTERS, type);
    const filters = Array.isArray(bound) ? bound : [];
    if (filters.some((f) => f?.constructor === filter.constructor)) continue;
    Reflect.defineMetadata(FILTERS, [filter, ...filters], type);
  }
}
