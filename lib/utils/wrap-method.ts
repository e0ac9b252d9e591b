/**
 * Wraps a method in a Proxy whose `apply` runs `invoke` instead. The Proxy
 * keeps the original's `name`, `length` and properties; its own Reflect
 * metadata (route path, HTTP code, Swagger… stored by decorators written
 * below the wrapping one) is copied over, since reflect-metadata keys
 * metadata by object identity. Decorators written above store on the Proxy.
 */
export function wrapMethod<F extends (...args: any[]) => unknown>(
  original: F,
  invoke: (original: F, thisArg: unknown, args: unknown[]) => unknown,
): F {
  const proxy = new Proxy(original, {
    apply: (target, thisArg, args: unknown[]) => invoke(target, thisArg, args),
  });
  copyOwnMetadata(original, proxy);
  return proxy;
}

/** Copies every own Reflect metadata entry of `from` onto `to`. */
export function copyOwnMetadata(from: object, to: object): void {
  for (const key of Reflect.getOwnMetadataKeys(from))
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from), to);
}
