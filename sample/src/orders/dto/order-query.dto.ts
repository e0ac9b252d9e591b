import { IsIn, IsOptional } from 'class-validator';

/** `?locking=off` runs the order without the lock (for comparison); `on` forces it. */
export class OrderQueryDto {
  @IsOptional()
  @IsIn(['on', 'off'])
  locking?: 'on' | 'off';
}
