import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { redlockModule } from '../shared/redis';
import { BusyFilter } from './busy.filter';
import { GraphqlStockService, StockResolver } from './stock.resolver';

const mercurius = () =>
  GraphQLModule.forRoot<MercuriusDriverConfig>({
    driver: MercuriusDriver,
    autoSchemaFile: true,
    graphiql: false,
  });

/** GraphQL with Mercurius (on Fastify). */
@Module({
  imports: [redlockModule(), mercurius()],
  providers: [StockResolver, GraphqlStockService],
})
export class MercuriusAppModule {}

/** The same with the user's own global filter for lock conflicts. */
@Module({
  imports: [redlockModule(), mercurius()],
  providers: [
    StockResolver,
    GraphqlStockService,
    { provide: APP_FILTER, useClass: BusyFilter },
  ],
})
export class MercuriusUserFilterAppModule {}
