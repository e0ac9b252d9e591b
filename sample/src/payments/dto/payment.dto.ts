import {
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
} from 'class-validator';

/** The body of `POST /payments`. */
export class PaymentDto {
  @IsString()
  @Matches(/^[A-Za-z0-9._-]{1,64}$/, {
    message: 'orderId must be 1-64 letters, digits, ".", "_" or "-"',
  })
  orderId!: string;

  /** In cents. */
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  amount!: number;
}

/** `?limit=off` calls the provider without the semaphore (for comparison). */
export class PaymentQueryDto {
  @IsOptional()
  @IsIn(['on', 'off'])
  limit?: 'on' | 'off';
}
