import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import { redlockModule } from '../shared/redis';
import { BusyFilter } from './busy.filter';
import { GraphqlStockService, StockResolver } from './stock.resolver';

const apollo = () =>
  GraphQLModule.forRoot<ApolloDriverConfig>({
    driver: ApolloDriver,
    autoSchemaFile: true,
  });

/** GraphQL with Apollo (on Express). */
@Module({
  imports: [redlockModule(), apollo()],
  providers: [StockResolver, GraphqlStockService],
})
export class ApolloAppModule {}

/** The same with the user's own global filter for lock conflicts. */
@Module({
  imports: [redlockModule(), apollo()],
  providers: [
    StockResolver,
    GraphqlStockService,
    { provide: APP_FILTER, useClass: BusyFilter },
  ],
})
export class ApolloUserFilterAppModule {}
