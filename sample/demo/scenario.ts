import type { OrderLine } from './burst.js';

/**
 * The flash sale: one hot SKU and two others, far more demand than stock.
 * Every SKU also gets many single-unit orders, so a correct run always
 * sells out exactly: once a unit order of a SKU is refused, that SKU is at 0.
 */
export const SEED: ReadonlyMap<string, number> = new Map([
  ['widget', 50],
  ['gadget', 20],
  ['gizmo', 20],
]);

/** `count` orders, half of them for the hot SKU, a fifth spanning several SKUs. */
export function buildOrders(count: number): OrderLine[][] {
  const mix: OrderLine[][] = [
    [{ sku: 'widget', qty: 1 }],
    [{ sku: 'widget', qty: 1 }],
    [{ sku: 'widget', qty: 1 }],
    [{ sku: 'widget', qty: 1 }],
    [{ sku: 'widget', qty: 1 }],
    [{ sku: 'gadget', qty: 1 }],
    [{ sku: 'gizmo', qty: 1 }],
    [
      { sku: 'widget', qty: 1 },
      { sku: 'gadget', qty: 1 },
    ],
    [
      { sku: 'gizmo', qty: 1 },
      { sku: 'widget', qty: 1 },
    ],
    [
      { sku: 'gadget', qty: 1 },
      { sku: 'gizmo', qty: 1 },
      { sku: 'widget', qty: 1 },
    ],
  ];
  return Array.from({ length: count }, (_, i) => mix[i % mix.length]);
}
