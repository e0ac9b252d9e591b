import { IsInt, IsString, Matches, Max, Min } from 'class-validator';
import { SKU_PATTERN } from '../../stock/dto/sku-param.dto.js';

export class OrderItemDto {
  @IsString()
  @Matches(SKU_PATTERN, {
    message: 'sku must be 1-64 letters, digits, ".", "_" or "-"',
  })
  sku!: string;

  @IsInt()
  @Min(1)
  @Max(1000)
  qty!: number;
}
