import { ConflictException, Injectable } from '@nestjs/common';
import {
  Args,
  Field,
  InputType,
  Mutation,
  ObjectType,
  Query,
  Resolver,
} from '@nestjs/graphql';
import { Locked } from 'nestjs-redlock';
import { critical } from '../shared/overlap';

@ObjectType()
export class Reservation {
  @Field()
  sku!: string;

  @Field()
  reserved!: boolean;
}

@InputType()
export class ReserveInput {
  @Field({ nullable: true })
  sku?: string;
}

/** Reserves stock under a lock per SKU; `critical` records any overlap. */
@Injectable()
export class GraphqlStockService {
  /** Waits its turn (the module's waitTimeout). */
  @Locked('sku:<sku>')
  reserve(sku: string): Promise<Reservation> {
    return critical(`sku:${sku}`, 20, () => ({ sku, reserved: true }));
  }

  /** One attempt: a held lock is a conflict at once. */
  @Locked('sku:<sku>', { waitTimeout: 0 })
  reserveNow(sku: string): Promise<Reservation> {
    return critical(`sku:${sku}`, 20, () => ({ sku, reserved: true }));
  }

  /** No `sku` in the input, no key. */
  @Locked('sku:<input.sku>', { waitTimeout: 0 })
  reserveInput(input: ReserveInput): Promise<Reservation> {
    return critical(`sku:${input.sku}`, 5, () => ({
      sku: input.sku ?? '',
      reserved: true,
    }));
  }
}

/** Code-first: the same resolver under Apollo and Mercurius. */
@Resolver(() => Reservation)
export class StockResolver {
  constructor(private readonly stock: GraphqlStockService) {}

  @Query(() => String)
  ping(): string {
    return 'pong';
  }

  @Mutation(() => Reservation)
  reserve(@Args('sku') sku: string) {
    return this.stock.reserve(sku);
  }

  @Mutation(() => Reservation)
  reserveNow(@Args('sku') sku: string) {
    return this.stock.reserveNow(sku);
  }

  @Mutation(() => Reservation)
  reserveInput(@Args('input') input: ReserveInput) {
    return this.stock.reserveInput(input);
  }

  /** An ordinary resolver error: the HTTP status the server gives one. */
  @Mutation(() => Reservation)
  refuse(): Reservation {
    throw new ConflictException('refused');
  }

  /** An unexpected error: the server's answer to an unknown error. */
  @Mutation(() => Reservation)
  fail(): Reservation {
    throw new Error('unexpected');
  }
}
