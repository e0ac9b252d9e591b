import { Matches } from 'class-validator';

/** A SKU: letters, digits, `.`, `_`, `-`; 1 to 64 characters (it becomes part of a Redis key). */
export const SKU_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

export class SkuParamDto {
  @Matches(SKU_PATTERN, {
    message: 'sku must be 1-64 letters, digits, ".", "_" or "-"',
  })
  sku!: string;
}
