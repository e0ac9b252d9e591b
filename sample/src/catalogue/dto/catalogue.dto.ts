import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  IsArray,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { SKU_PATTERN } from '../../stock/dto/sku-param.dto.js';

/** One item of `PUT /catalogue`. */
export class CatalogueItemDto {
  @IsString()
  @Matches(SKU_PATTERN, {
    message: 'sku must be 1-64 letters, digits, ".", "_" or "-"',
  })
  sku!: string;

  /** In cents. */
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  price!: number;
}

/** The body of `PUT /catalogue`. */
export class ReplaceCatalogueDto {
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => CatalogueItemDto)
  items!: CatalogueItemDto[];
}

/** The body of `POST /catalogue/reprice`. */
export class RepriceDto {
  /** -90 (a 90 % cut) to +1000. */
  @IsInt()
  @Min(-90)
  @Max(1000)
  percent!: number;
}

/** `?locking=off` reads or reprices without the lock (for comparison). */
export class CatalogueQueryDto {
  @IsOptional()
  @IsIn(['on', 'off'])
  locking?: 'on' | 'off';
}
